//! Topics (seed 002's k-means clustering by topic with cluster-based retrieval): a user's
//! memories of a namespace grouped by spherical k-means over their vectors.
//!
//! * **k** is chosen by a stated rule ([`choose_k`]): among 2 to
//!   min([`MAX_K`], ⌈√(n/2)⌉), the k whose clustering has the highest mean silhouette (cosine
//!   distance) on a fixed sample of at most [`SILHOUETTE_SAMPLE`] memories; the smaller k on a
//!   tie. Fewer than [`MIN_MEMORIES`] memories are not clustered.
//! * **Seeding** is k-means++ from a generator seeded by the user and namespace, so a rerun on
//!   the same memories gives the same clusters.
//! * **Labels** are each cluster's top terms by class-based TF-IDF (a word's share in the
//!   cluster against how many clusters use it); stop words and words under three letters
//!   are left out.
//! * **Stored** as one record per user and namespace in the engine's own namespace
//!   [`CLUSTERS_NAMESPACE`]: the centroids, labels and sizes, the model of the vectors and how
//!   many memories it was fitted on. Membership is not stored: a memory belongs to the
//!   cluster of its nearest centroid, computed when asked, so memories written after the
//!   clustering join a cluster at once (incremental), and the `cluster` job refits only when
//!   the user's memories have grown or shrunk by a fifth ([`REFIT_CHANGE`]) or the model
//!   changed.

pub use crate::records::{CLUSTERS_NAMESPACE, Cluster, Clustering, TOPICS_SILHOUETTE};
use std::collections::{BTreeMap, HashMap, HashSet};

use muisti_core::{
    Error, Filter, Key, Locator, Memory, MemoryId, Namespace, Owner, Put, Result, content_hash,
};

use super::MaintenanceOptions;

/// The most clusters a user's memories are split into.
pub const MAX_K: usize = 10;

/// The fewest memories that are clustered.
pub const MIN_MEMORIES: usize = 8;

/// How many memories the silhouette that chooses k is computed on, at most.
pub const SILHOUETTE_SAMPLE: usize = 300;

/// How many memories k-means is fitted on, at most (the rest are assigned to the fitted
/// centroids).
pub const FIT_SAMPLE: usize = 4_000;

/// The change in a user's memory count (a share of the count fitted on) past which the
/// `cluster` job fits again.
pub const REFIT_CHANGE: f64 = 0.2;

/// Terms in a cluster's label.
const LABEL_TERMS: usize = 3;

/// k-means iterations at most.
const ITERATIONS: usize = 20;

impl Clustering {
    /// The cluster whose centroid is nearest `vector` (`None` for a vector of another
    /// length).
    pub fn nearest(&self, vector: &[f32]) -> Option<u32> {
        let mut best: Option<(f32, u32)> = None;
        for c in &self.clusters {
            if c.centroid.len() != vector.len() {
                continue;
            }
            let s = dot(&c.centroid, vector);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, c.id));
            }
        }
        best.map(|(_, id)| id)
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > f32::EPSILON {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// A small deterministic generator (splitmix64): the same seed, the same clusters.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` of `0..len` without repeats, in order (all when `n >= len`).
    fn sample(&mut self, len: usize, n: usize) -> Vec<usize> {
        if n >= len {
            return (0..len).collect();
        }
        let mut all: Vec<usize> = (0..len).collect();
        for i in 0..n {
            let j = i + (self.next() % (len - i) as u64) as usize;
            all.swap(i, j);
        }
        let mut picked = all[..n].to_vec();
        picked.sort_unstable();
        picked
    }
}

/// Spherical k-means (cosine) of unit vectors with k-means++ seeding: the centroids (unit
/// length) and each vector's cluster.
pub fn kmeans(vectors: &[&[f32]], k: usize, seed: u64) -> (Vec<Vec<f32>>, Vec<usize>) {
    let n = vectors.len();
    if n == 0 || k == 0 {
        return (Vec::new(), Vec::new());
    }
    let k = k.min(n);
    let mut rng = Rng(seed);
    // k-means++: each next seed drawn with probability proportional to its distance from the
    // nearest seed so far (cosine distance 1 - dot).
    let mut centroids: Vec<Vec<f32>> = vec![vectors[(rng.next() % n as u64) as usize].to_vec()];
    let mut nearest: Vec<f32> = vectors
        .iter()
        .map(|v| (1.0 - dot(v, &centroids[0])).max(0.0))
        .collect();
    while centroids.len() < k {
        let total: f64 = nearest.iter().map(|d| f64::from(*d)).sum();
        let pick = if total <= f64::EPSILON {
            (rng.next() % n as u64) as usize
        } else {
            let mut target = rng.unit() * total;
            let mut chosen = n - 1;
            for (i, d) in nearest.iter().enumerate() {
                target -= f64::from(*d);
                if target <= 0.0 {
                    chosen = i;
                    break;
                }
            }
            chosen
        };
        let c = vectors[pick].to_vec();
        for (i, v) in vectors.iter().enumerate() {
            nearest[i] = nearest[i].min((1.0 - dot(v, &c)).max(0.0));
        }
        centroids.push(c);
    }
    let mut assigned = vec![usize::MAX; n];
    for _ in 0..ITERATIONS {
        let mut changed = false;
        for (i, v) in vectors.iter().enumerate() {
            let best = closest(&centroids, v);
            if assigned[i] != best {
                assigned[i] = best;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        let dims = vectors[0].len();
        let mut sums = vec![vec![0.0f32; dims]; k];
        let mut counts = vec![0usize; k];
        for (v, &c) in vectors.iter().zip(&assigned) {
            counts[c] += 1;
            for (s, x) in sums[c].iter_mut().zip(v.iter()) {
                *s += x;
            }
        }
        for (c, (mut sum, count)) in sums.into_iter().zip(counts).enumerate() {
            // An emptied cluster keeps its centroid.
            if count > 0 {
                normalize(&mut sum);
                centroids[c] = sum;
            }
        }
    }
    (centroids, assigned)
}

fn closest(centroids: &[Vec<f32>], v: &[f32]) -> usize {
    let mut best = (f32::MIN, 0);
    for (c, centroid) in centroids.iter().enumerate() {
        let s = dot(centroid, v);
        if s > best.0 {
            best = (s, c);
        }
    }
    best.1
}

/// The mean silhouette of an assignment (cosine distance), over the vectors given.
pub fn silhouette(vectors: &[&[f32]], assigned: &[usize], k: usize) -> f32 {
    let n = vectors.len();
    if n < 2 || k < 2 {
        return 0.0;
    }
    let mut total = 0.0f64;
    for i in 0..n {
        let mut sums = vec![0.0f64; k];
        let mut counts = vec![0usize; k];
        for j in 0..n {
            if i != j {
                sums[assigned[j]] += f64::from(1.0 - dot(vectors[i], vectors[j]));
                counts[assigned[j]] += 1;
            }
        }
        let own = assigned[i];
        if counts[own] == 0 {
            continue; // a cluster of one scores 0
        }
        let a = sums[own] / counts[own] as f64;
        let b = (0..k)
            .filter(|&c| c != own && counts[c] > 0)
            .map(|c| sums[c] / counts[c] as f64)
            .fold(f64::INFINITY, f64::min);
        if b.is_finite() {
            let s = (b - a) / a.max(b).max(f64::EPSILON);
            total += s;
        }
    }
    (total / n as f64) as f32
}

/// The rule that chooses k for `vectors` (see the module's rustdoc): the chosen k, its
/// silhouette, the centroids fitted on every vector and each one's cluster.
pub fn choose_k(vectors: &[&[f32]], seed: u64) -> (usize, f32, Vec<Vec<f32>>, Vec<usize>) {
    let n = vectors.len();
    let most = MAX_K.min(((n as f64 / 2.0).sqrt().ceil() as usize).max(2));
    let mut rng = Rng(seed ^ 0x5A5A_5A5A);
    let sample: Vec<&[f32]> = rng
        .sample(n, SILHOUETTE_SAMPLE)
        .into_iter()
        .map(|i| vectors[i])
        .collect();
    let fit: Vec<usize> = rng.sample(n, FIT_SAMPLE);
    let fit_vectors: Vec<&[f32]> = fit.iter().map(|&i| vectors[i]).collect();
    let mut best: Option<(usize, f32, Vec<Vec<f32>>)> = None;
    for k in 2..=most {
        let (centroids, _) = kmeans(&fit_vectors, k, seed.wrapping_add(k as u64));
        let on_sample: Vec<usize> = sample.iter().map(|v| closest(&centroids, v)).collect();
        let s = silhouette(&sample, &on_sample, centroids.len());
        if best.as_ref().is_none_or(|(_, b, _)| s > *b) {
            best = Some((k, s, centroids));
        }
    }
    let (k, s, centroids) = best.unwrap_or((1, 0.0, Vec::new()));
    let assigned = vectors.iter().map(|v| closest(&centroids, v)).collect();
    (k, s, centroids, assigned)
}

/// Each cluster's top terms by class-based TF-IDF over the members' texts.
pub fn label_terms(texts: &[String], assigned: &[usize], k: usize) -> Vec<Vec<String>> {
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            .filter(|w| {
                w.chars().count() >= 3
                    && w.chars().any(char::is_alphabetic)
                    && !muisti_core::text::is_stop_word(w)
            })
            .collect()
    };
    let mut tf: Vec<HashMap<String, f64>> = vec![HashMap::new(); k];
    for (t, &c) in texts.iter().zip(assigned) {
        if c < k {
            for w in words(t) {
                *tf[c].entry(w).or_default() += 1.0;
            }
        }
    }
    let mut used_by: HashMap<&str, usize> = HashMap::new();
    for counts in &tf {
        for w in counts.keys() {
            *used_by.entry(w.as_str()).or_default() += 1;
        }
    }
    tf.iter()
        .map(|counts| {
            let total: f64 = counts.values().sum::<f64>().max(1.0);
            let mut scored: Vec<(f64, &str)> = counts
                .iter()
                .map(|(w, n)| {
                    let spread = used_by.get(w.as_str()).copied().unwrap_or(1) as f64;
                    (n / total * (1.0 + k as f64 / spread).ln(), w.as_str())
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            scored
                .into_iter()
                .take(LABEL_TERMS)
                .map(|(_, w)| w.to_owned())
                .collect()
        })
        .collect()
}

/// The hash that names a user's clustering of a namespace: its key, and the seed of its
/// k-means.
fn user_hash(namespace: &Namespace, user: Option<&str>) -> String {
    content_hash(&format!("{namespace}\u{0}{}", user.unwrap_or("")))
}

/// The key of a user's clustering of a namespace.
fn clustering_key(namespace: &Namespace, user: Option<&str>) -> Result<Key> {
    Key::new(&user_hash(namespace, user)[..32])
}

impl Clustering {
    /// Not found for a cluster this clustering does not have.
    fn check(&self, cluster: u32) -> Result<()> {
        if self.clusters.iter().any(|c| c.id == cluster) {
            return Ok(());
        }
        Err(Error::NotFound(format!(
            "cluster {cluster} (the user's clusters are 0 to {})",
            self.clusters.len().saturating_sub(1)
        )))
    }
}

impl super::Lifecycle<'_> {
    /// Fits a user's memories of one namespace (`memories`: what the jobs keep, of one
    /// user) into topics and stores the clustering, unless the stored one is still fresh
    /// (same model, count within [`REFIT_CHANGE`]). Whether it fitted (a dry run: whether it
    /// would).
    pub(crate) fn cluster_user(
        &self,
        memories: &[Memory],
        options: &MaintenanceOptions,
    ) -> Result<bool> {
        let (Some(first), Some(embedder)) = (memories.first(), &self.core.embedder) else {
            return Ok(false);
        };
        let (namespace, user) = (&first.partition.namespace, first.owner.user_id.clone());
        let kept: HashSet<MemoryId> = memories.iter().map(|m| m.id).collect();
        let model = embedder.id().to_owned();
        let vectors: Vec<(MemoryId, Vec<f32>)> = self
            .core
            .store
            .vectors(
                &first.partition,
                &Filter {
                    user_id: user.clone(),
                    ..Filter::default()
                },
            )?
            .into_iter()
            .filter(|v| kept.contains(&v.id) && v.model == model)
            .map(|v| (v.id, v.vector))
            .collect();
        if vectors.len() < MIN_MEMORIES {
            return Ok(false);
        }
        if let Some(old) = self.clustering(namespace, user.as_deref())? {
            let change =
                (vectors.len() as f64 - old.memories as f64).abs() / (old.memories.max(1) as f64);
            if old.model == model && change < REFIT_CHANGE {
                return Ok(false);
            }
        }
        if options.dry_run {
            return Ok(true);
        }
        let _span = tracing::info_span!("memory.cluster", memories = vectors.len()).entered();
        let seed =
            u64::from_str_radix(&user_hash(namespace, user.as_deref())[..16], 16).unwrap_or(0);
        let refs: Vec<&[f32]> = vectors.iter().map(|(_, v)| v.as_slice()).collect();
        let (_, silhouette, centroids, assigned) = choose_k(&refs, seed);
        let text_of: HashMap<MemoryId, String> = memories
            .iter()
            .map(|m| (m.id, m.text().into_owned()))
            .collect();
        let texts: Vec<String> = vectors
            .iter()
            .map(|(id, _)| text_of.get(id).cloned().unwrap_or_default())
            .collect();
        let terms = label_terms(&texts, &assigned, centroids.len());
        let mut sizes = vec![0u64; centroids.len()];
        for &c in &assigned {
            sizes[c] += 1;
        }
        let clusters = centroids
            .into_iter()
            .zip(terms)
            .zip(sizes)
            .enumerate()
            .map(|(i, ((centroid, terms), size))| Cluster {
                id: i as u32,
                label: terms.join(", "),
                terms,
                size,
                centroid,
            })
            .collect();
        let clustering = Clustering {
            namespace: namespace.clone(),
            user_id: user.clone(),
            clusters,
            silhouette,
            memories: vectors.len() as u64,
            model,
            computed_at: self.core.clock.now(),
        };
        let content = crate::records::CLUSTERS.encode(&clustering)?;
        let mut put = Put::new(
            self.core.own_partition(CLUSTERS_NAMESPACE),
            Some(clustering_key(namespace, user.as_deref())?),
            content,
        );
        put.owner = Owner {
            user_id: user,
            ..Owner::default()
        };
        self.core.store.put(put)?;
        Ok(true)
    }

    /// A user's stored clustering of a namespace (none before the `cluster` job ran for
    /// them).
    pub fn clustering(
        &self,
        namespace: &Namespace,
        user: Option<&str>,
    ) -> Result<Option<Clustering>> {
        let at = Locator::Key {
            partition: self.core.own_partition(CLUSTERS_NAMESPACE),
            key: clustering_key(namespace, user)?,
        };
        self.core
            .store
            .get(&at)?
            .map(|m| crate::records::CLUSTERS.decode(&m))
            .transpose()
    }

    /// [`Lifecycle::clustering`](super::Lifecycle::clustering), not found when there is none yet.
    fn clustering_or_not_found(
        &self,
        namespace: &Namespace,
        user: Option<&str>,
    ) -> Result<Clustering> {
        self.clustering(namespace, user)?.ok_or_else(|| {
            Error::NotFound(format!(
                "clusters of {namespace} for this user (run the cluster job first)"
            ))
        })
    }

    /// A user's memories of a namespace by cluster now (each memory with a vector of the
    /// clustering's model in the cluster of its nearest centroid; memories written since the
    /// fit included), with the clustering. Not found when the user has no clustering.
    pub fn cluster_members(
        &self,
        namespace: &Namespace,
        user: Option<&str>,
    ) -> Result<(Clustering, BTreeMap<u32, Vec<MemoryId>>)> {
        let clustering = self.clustering_or_not_found(namespace, user)?;
        let mut members: BTreeMap<u32, Vec<MemoryId>> = BTreeMap::new();
        for v in self.core.store.vectors(
            &self.core.partition(namespace),
            &Filter {
                user_id: user.map(str::to_owned),
                ..Filter::default()
            },
        )? {
            if v.model == clustering.model
                && let Some(c) = clustering.nearest(&v.vector)
            {
                members.entry(c).or_default().push(v.id);
            }
        }
        for ids in members.values_mut() {
            ids.sort_unstable();
        }
        Ok((clustering, members))
    }

    /// The ids of one cluster's memories now (see [`Lifecycle::cluster_members`](super::Lifecycle::cluster_members)); not found for
    /// a cluster the clustering does not have.
    pub fn cluster_ids(
        &self,
        namespace: &Namespace,
        user: Option<&str>,
        cluster: u32,
    ) -> Result<Vec<MemoryId>> {
        let (clustering, mut members) = self.cluster_members(namespace, user)?;
        clustering.check(cluster)?;
        Ok(members.remove(&cluster).unwrap_or_default())
    }
}

impl super::Lifecycle<'_> {
    /// Deletes a user's clustering of a namespace (their memories were forgotten).
    pub(crate) fn forget_clustering(&self, namespace: &Namespace, user: &str) -> Result<bool> {
        self.core.store.delete(&Locator::Key {
            partition: self.core.own_partition(CLUSTERS_NAMESPACE),
            key: clustering_key(namespace, Some(user))?,
        })
    }

    /// Deletes every clustering of a namespace (it was emptied).
    pub(crate) fn forget_clusterings_of(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.core.own_partition(CLUSTERS_NAMESPACE);
        let mut deleted = 0;
        for record in
            muisti_core::list_all(self.core.store.as_ref(), &partition, &Filter::default())?
        {
            let of_namespace = record
                .content
                .get("namespace")
                .and_then(serde_json::Value::as_str)
                == Some(namespace.as_str());
            if of_namespace {
                deleted += u64::from(self.core.store.delete(&Locator::Id {
                    tenant: self.core.tenant.clone(),
                    id: record.id,
                })?);
            }
        }
        Ok(deleted)
    }
}

impl super::Lifecycle<'_> {
    /// Recall's candidates within one cluster of the filter's user: the members the filter
    /// admits, ranked among themselves.
    pub(crate) fn cluster_candidates(
        &self,
        partition: &muisti_core::Partition,
        req: &crate::RecallRequest,
        cluster: u32,
        query_vector: Option<&[f32]>,
        limit: usize,
    ) -> Result<crate::recall::Candidates> {
        let Some(user) = req.filter.user_id.as_deref() else {
            return Err(Error::conflicting(
                "cluster",
                "clusters are a user's: recall within one names the user_id",
            ));
        };
        let clustering = self.clustering_or_not_found(&partition.namespace, Some(user))?;
        clustering.check(cluster)?;
        let vectors: Vec<muisti_core::StoredVector> = self
            .core
            .store
            .vectors(partition, &req.filter)?
            .into_iter()
            .filter(|v| {
                v.model == clustering.model && clustering.nearest(&v.vector) == Some(cluster)
            })
            .collect();
        let ids: Vec<MemoryId> = vectors.iter().map(|v| v.id).collect();
        let records: Vec<Memory> = self
            .core
            .store
            .get_many(&self.core.tenant, &ids)?
            .into_iter()
            .filter(|m| m.partition == *partition && req.filter.matches(m))
            .collect();
        let mut found = crate::recall::Candidates::rank(
            records,
            vectors.iter().map(|v| (v.id, v.vector.as_slice())),
            &req.query,
            query_vector,
            req.mode != crate::RecallMode::Vector,
            limit,
        );
        // The store's records are read again for the hits; only archived ones are kept here.
        found.records.clear();
        Ok(found)
    }
}
