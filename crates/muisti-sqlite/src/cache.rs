//! An in-memory copy of each partition: for every live record the fields a filter and
//! recall's rescoring read, its vector and its full-text terms. Nearest-neighbour search,
//! BM25 (with the partition's own statistics, whatever the filter) and the rescoring fields
//! are answered from it; the database stays the durable copy.
//!
//! Consistency: this process's writes invalidate the partitions they touch (after commit),
//! and its access counts are added to the copy as they are committed; commits by other
//! connections or processes show in `PRAGMA data_version` and invalidate everything. A load
//! that raced an invalidation or an access count is not kept (generation check).

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use hnsw_rs::prelude::{DistDot, Hnsw};

use muisti_core::{
    Category, Filter, Filterable, MemoryId, MemoryScope, Owner, Partition, RankFields, Scored,
    Tenant, Timestamp,
    text::{self, CONTEXT_WEIGHT},
};
use serde_json::{Map, Value};

/// One partition in memory: for each record the fields filters and rescoring read, its
/// vector (stored contiguously) and its full-text terms. Rows are indexed by id and by user.
#[derive(Default)]
pub(crate) struct PartitionCache {
    rows: Vec<CachedRow>,
    /// Id → row.
    index: HashMap<MemoryId, u32>,
    dim: usize,
    /// Vectors quantised to `i8` (`dim` values each, in the order of `vector_of`): a quarter
    /// of the memory of `f32`, with `scales` to undo the quantisation.
    data: Vec<i8>,
    /// Per vector, `max |x| / 127`.
    scales: Vec<f32>,
    /// Per row, the index of its vector in `data`, if it has one.
    vector_of: Vec<Option<u32>>,
    /// Per row, its number of terms (content and context).
    lengths: Vec<u32>,
    /// Term → id.
    term_ids: HashMap<String, u32>,
    /// Per row, its distinct terms with their weighted frequencies, sorted by term id: row
    /// `i` at `term_start[i]..term_start[i + 1]`. A forward index: a query scans the rows its
    /// filter allows (a user's, typically), not every posting of a common term.
    terms: Vec<(u32, f32)>,
    term_start: Vec<u32>,
    by_user: HashMap<String, Vec<u32>>,
    /// From how many vectors (in the partition and in a query's scope) nearest-neighbour
    /// search uses an HNSW graph instead of an exact scan; 0 never.
    ann_threshold: usize,
    /// Rows replaced by a later write of this process (kept as never-live, scrubbed).
    dead: usize,
}

/// A partition's copy as the cache holds it: the rows behind a lock (this process's writes
/// are applied to them in place) and the HNSW graph over the rows the copy had when the graph
/// was built (rows added since are scanned exactly).
pub(crate) struct Part {
    data: RwLock<PartitionCache>,
    /// The graph, once built (in the background), and how many rows it covers.
    ann: OnceLock<(Hnsw<'static, f32, DistDot>, usize)>,
    ann_started: AtomicBool,
    /// Searches the graph answered.
    ann_searches: AtomicU64,
}

/// A record as a write of this process left it, to apply to a loaded copy after the commit.
pub(crate) struct Fresh {
    pub(crate) partition: Partition,
    pub(crate) row: CachedRow,
    pub(crate) vector: Option<Vec<f32>>,
    pub(crate) terms: String,
    pub(crate) context_terms: Option<String>,
}

impl Fresh {
    /// The copy's view of `m`, stored with `vector` and these full-text terms.
    pub(crate) fn of(
        m: &muisti_core::Memory,
        vector: Option<&[f32]>,
        terms: String,
        context_terms: Option<String>,
    ) -> Self {
        Self {
            partition: m.partition.clone(),
            row: CachedRow {
                id: m.id,
                owner: m.owner.clone(),
                category: m.category.clone(),
                scope: m.scope,
                tags: m.tags.clone(),
                metadata: m.metadata.clone(),
                content_hash: m.content_hash.clone(),
                created_at: m.created_at,
                updated_at: m.updated_at,
                importance: m.importance,
                expires_at: m.expires_at.map(Timestamp::as_millis),
                access_count: m.access_count.into(),
            },
            vector: vector.map(<[f32]>::to_vec),
            terms,
            context_terms,
        }
    }
}

/// The default [`PartitionCache`] ANN threshold.
pub(crate) const ANN_THRESHOLD: usize = 20_000;

/// What the copy keeps of a record besides its vector and terms.
pub(crate) struct CachedRow {
    pub(crate) id: MemoryId,
    pub(crate) owner: Owner,
    pub(crate) category: Category,
    pub(crate) scope: MemoryScope,
    pub(crate) tags: Vec<String>,
    pub(crate) metadata: Map<String, Value>,
    pub(crate) content_hash: String,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    pub(crate) importance: f32,
    pub(crate) expires_at: Option<i64>,
    /// The stored count plus the accesses this process committed since the load.
    pub(crate) access_count: AtomicU64,
}

impl Filterable for CachedRow {
    fn owner(&self) -> &Owner {
        &self.owner
    }
    fn category(&self) -> &Category {
        &self.category
    }
    fn scope(&self) -> MemoryScope {
        self.scope
    }
    fn tags(&self) -> &[String] {
        &self.tags
    }
    fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn content_hash(&self) -> &str {
        &self.content_hash
    }
}

impl PartitionCache {
    /// An empty copy that switches to an HNSW graph from `ann_threshold` vectors (0: never).
    pub(crate) fn new(ann_threshold: usize) -> Self {
        Self {
            ann_threshold,
            ..Self::default()
        }
    }

    /// The vector of row `i`, if it has one.
    fn vector(&self, i: usize) -> Option<(usize, &[i8])> {
        let slot = self.vector_of[i]? as usize;
        Some((slot, &self.data[slot * self.dim..(slot + 1) * self.dim]))
    }

    /// The normalised vectors of every row (with the row index), for the graph.
    fn ann_input(&self) -> Vec<(Vec<f32>, usize)> {
        (0..self.rows.len())
            .filter_map(|i| {
                let (slot, v) = self.vector(i)?;
                let mut f: Vec<f32> = v
                    .iter()
                    .map(|x| f32::from(*x) * self.scales[slot])
                    .collect();
                text::normalize(&mut f);
                Some((f, i))
            })
            .collect()
    }

    /// Replaces the row of `fresh`'s id, if any, by `fresh` (added at the end). The old row
    /// stays as a never-live row with its fields and vector cleared.
    fn replace(&mut self, fresh: Fresh) {
        if let Some(&i) = self.index.get(&fresh.row.id) {
            let i = i as usize;
            let old = &mut self.rows[i];
            old.expires_at = Some(i64::MIN);
            old.tags.clear();
            old.metadata.clear();
            old.content_hash.clear();
            if let Some(slot) = self.vector_of[i] {
                let slot = slot as usize;
                self.data[slot * self.dim..(slot + 1) * self.dim].fill(0);
            }
            self.dead += 1;
        }
        self.push(
            fresh.row,
            fresh.vector.as_deref(),
            &fresh.terms,
            fresh.context_terms.as_deref(),
        );
    }

    /// Adds a row with its vector (one of another length than the first is left out: it
    /// cannot match a query of the partition's model) and its full-text terms (space
    /// separated, as the full-text table stores them).
    pub(crate) fn push(
        &mut self,
        row: CachedRow,
        vector: Option<&[f32]>,
        terms: &str,
        context_terms: Option<&str>,
    ) {
        let i = self.rows.len() as u32;
        self.index.insert(row.id, i);
        if let Some(u) = &row.owner.user_id {
            self.by_user.entry(u.clone()).or_default().push(i);
        }
        self.rows.push(row);
        let mut slot = None;
        if let Some(v) = vector {
            if self.scales.is_empty() {
                self.dim = v.len();
            }
            if v.len() == self.dim && self.dim > 0 {
                slot = Some(self.scales.len() as u32);
                let scale = quantize_into(v, &mut self.data);
                self.scales.push(scale);
            }
        }
        self.vector_of.push(slot);
        let mut tf: HashMap<&str, f32> = HashMap::new();
        let mut len = 0;
        for (field, weight) in [(terms, 1.0), (context_terms.unwrap_or(""), CONTEXT_WEIGHT)] {
            for t in field.split(' ').filter(|t| !t.is_empty()) {
                len += 1;
                *tf.entry(t).or_default() += weight;
            }
        }
        self.lengths.push(len);
        if self.term_start.is_empty() {
            self.term_start.push(0);
        }
        let mut own: Vec<(u32, f32)> = tf
            .into_iter()
            .map(|(t, f)| {
                let next = self.term_ids.len() as u32;
                (*self.term_ids.entry(t.to_owned()).or_insert(next), f)
            })
            .collect();
        own.sort_unstable_by_key(|(t, _)| *t);
        self.terms.extend(own);
        self.term_start.push(self.terms.len() as u32);
    }

    fn live(&self, i: usize, filter: &Filter, now: i64) -> bool {
        let r = &self.rows[i];
        r.expires_at.is_none_or(|t| t > now) && filter.matches(r)
    }

    /// The rescoring fields of the live rows with these ids, in the order given.
    pub(crate) fn rank_fields(&self, ids: &[MemoryId], now: Timestamp) -> Vec<RankFields> {
        let now = now.as_millis();
        ids.iter()
            .filter_map(|id| {
                let r = &self.rows[*self.index.get(id)? as usize];
                r.expires_at.is_none_or(|t| t > now).then(|| RankFields {
                    id: r.id,
                    updated_at: r.updated_at,
                    access_count: r.access_count.load(Ordering::Relaxed),
                    importance: r.importance,
                })
            })
            .collect()
    }

    /// Adds one access to each of these ids that is in this partition.
    fn count_access(&self, ids: &[MemoryId]) {
        for id in ids {
            if let Some(&i) = self.index.get(id) {
                self.rows[i as usize]
                    .access_count
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The rows a filter can match: the user's, or all. Check them against [`rest_of`] the
    /// filter: the user need not be compared again.
    fn scope(&self, filter: &Filter) -> Box<dyn Iterator<Item = usize> + '_> {
        match &filter.user_id {
            Some(u) => Box::new(
                self.by_user
                    .get(u)
                    .into_iter()
                    .flatten()
                    .map(|&i| i as usize),
            ),
            None => Box::new(0..self.rows.len()),
        }
    }

    /// The exactly scored rows among `rows` that pass `filter` (with its user already
    /// applied by the caller's choice of rows) and are live at `now`.
    fn scan(
        &self,
        rows: impl Iterator<Item = usize>,
        rest: &Filter,
        q: &QueryI8,
        now: i64,
    ) -> Vec<Scored> {
        rows.filter(|&i| self.live(i, rest, now))
            .filter_map(|i| self.score(i, q))
            .collect()
    }

    /// Row `i` scored against the query, if it has a vector.
    fn score(&self, i: usize, q: &QueryI8) -> Option<Scored> {
        let (slot, v) = self.vector(i)?;
        Some(Scored {
            id: self.rows[i].id,
            score: q.dot(v, self.scales[slot]),
        })
    }

    /// Whether a query over `filter` is large enough for the graph.
    fn wants_ann(&self, filter: &Filter) -> bool {
        self.ann_threshold > 0
            && self.scales.len() >= self.ann_threshold
            && self.scope_len(filter) >= self.ann_threshold
    }

    /// Nearest by exact scan of the rows in the filter's scope.
    fn nearest_exact(&self, filter: &Filter, query: &[f32], limit: usize, now: i64) -> Vec<Scored> {
        let q = QueryI8::new(query);
        let rest = rest_of(filter);
        let mut scored = self.scan(self.scope(filter), &rest, &q, now);
        text::top_scored(&mut scored, limit);
        scored
    }

    /// How many rows a filter can match at most (the user's, or all).
    fn scope_len(&self, filter: &Filter) -> usize {
        match &filter.user_id {
            Some(u) => self.by_user.get(u).map_or(0, Vec::len),
            None => self.rows.len(),
        }
    }

    /// Nearest through the graph (which covers rows below `covered`): candidates that pass
    /// the filter, rescored like the exact scan, plus the rows added since, scanned; `None`
    /// when too few pass (the caller then scans).
    fn nearest_ann(
        &self,
        ann: &Hnsw<'static, f32, DistDot>,
        covered: usize,
        filter: &Filter,
        query: &[f32],
        limit: usize,
        now: i64,
    ) -> Option<Vec<Scored>> {
        let k = limit * 2;
        let keep = |i: &usize| self.live(*i, filter, now);
        let found = ann.search_filter(query, k, k.max(64), Some(&keep));
        let q = QueryI8::new(query);
        let mut scored: Vec<Scored> = found
            .iter()
            .filter_map(|n| self.score(n.d_id, &q))
            .collect();
        if scored.len() < limit {
            return None;
        }
        let rest = rest_of(filter);
        scored.extend(self.scan(self.scope(filter).filter(|&i| i >= covered), &rest, &q, now));
        text::top_scored(&mut scored, limit);
        Some(scored)
    }

    /// BM25 over the rows that pass the filter, scored exactly as
    /// [`Bm25::rank`](muisti_core::text::Bm25::rank) does, with the statistics of those rows.
    pub(crate) fn bm25(
        &self,
        filter: &Filter,
        terms: &[String],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        let now = now.as_millis();
        let (mut n_docs, mut total_len) = (0usize, 0usize);
        let rest = rest_of(filter);
        for i in self.scope(filter) {
            if self.live(i, &rest, now) {
                n_docs += 1;
                total_len += self.lengths[i] as usize;
            }
        }
        if n_docs == 0 || terms.is_empty() {
            return Vec::new();
        }
        // Query terms the partition has, with their position among the query's terms.
        let wanted: Vec<(u32, usize)> = terms
            .iter()
            .enumerate()
            .filter_map(|(k, t)| self.term_ids.get(t).map(|&id| (id, k)))
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let width = terms.len();
        let mut df = vec![0usize; width];
        // The matching rows, and their term frequencies `width` at a time.
        let mut matched: Vec<usize> = Vec::new();
        let mut tfs: Vec<f32> = Vec::new();
        for i in self.scope(filter) {
            if !self.live(i, &rest, now) {
                continue;
            }
            let own = &self.terms[self.term_start[i] as usize..self.term_start[i + 1] as usize];
            let mut found = false;
            for &(id, k) in &wanted {
                if let Ok(j) = own.binary_search_by_key(&id, |(t, _)| *t) {
                    if !found {
                        found = true;
                        matched.push(i);
                        tfs.resize(tfs.len() + width, 0.0);
                    }
                    df[k] += 1;
                    let base = tfs.len() - width;
                    tfs[base + k] = own[j].1;
                }
            }
        }
        let idf: Vec<f32> = df.iter().map(|&d| text::idf(n_docs, d)).collect();
        let bm25 = text::Bm25::default();
        let avgdl = total_len as f32 / n_docs as f32;
        let mut scored: Vec<Scored> = matched
            .iter()
            .zip(tfs.chunks_exact(width))
            .map(|(&i, f)| Scored {
                id: self.rows[i].id,
                score: bm25.score(&idf, f, self.lengths[i] as usize, avgdl),
            })
            .collect();
        text::top_scored(&mut scored, limit);
        scored
    }
}

impl Part {
    pub(crate) fn new(cache: PartitionCache) -> Self {
        Self {
            data: RwLock::new(cache),
            ann: OnceLock::new(),
            ann_started: AtomicBool::new(false),
            ann_searches: AtomicU64::new(0),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, PartitionCache> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the HNSW graph is built.
    pub(crate) fn ann_ready(&self) -> bool {
        self.ann.get().is_some()
    }

    /// How many searches the graph answered.
    pub(crate) fn ann_searches(&self) -> u64 {
        self.ann_searches.load(Ordering::Relaxed)
    }

    /// See [`PartitionCache::rank_fields`].
    pub(crate) fn rank_fields(&self, ids: &[MemoryId], now: Timestamp) -> Vec<RankFields> {
        self.read().rank_fields(ids, now)
    }

    /// See [`PartitionCache::bm25`].
    pub(crate) fn bm25(
        &self,
        filter: &Filter,
        terms: &[String],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        self.read().bm25(filter, terms, limit, now)
    }

    /// Nearest rows that pass a filter and are live at `now`. Exact while the rows in scope
    /// are fewer than the ANN threshold; above it, through the HNSW graph once built (the
    /// first such query starts building it in the background and is answered exactly
    /// meanwhile; rows added after the build are scanned exactly).
    pub(crate) fn nearest(
        self: &Arc<Self>,
        filter: &Filter,
        query: &[f32],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        let data = self.read();
        if query.len() != data.dim {
            return Vec::new();
        }
        let now = now.as_millis();
        if data.wants_ann(filter) {
            match self.ann.get() {
                Some((graph, covered)) => {
                    if let Some(found) =
                        data.nearest_ann(graph, *covered, filter, query, limit, now)
                    {
                        self.ann_searches.fetch_add(1, Ordering::Relaxed);
                        return found;
                    }
                }
                None => {
                    if !self.ann_started.swap(true, Ordering::AcqRel) {
                        let me = Arc::clone(self);
                        let _ = std::thread::Builder::new().name("muisti-ann".into()).spawn(
                            move || {
                                // The vectors are copied under the lock; the graph is built
                                // without it, so writes are not held up.
                                let (input, covered) = {
                                    let data = me.read();
                                    (data.ann_input(), data.rows.len())
                                };
                                let _ = me.ann.set((build_ann(&input), covered));
                            },
                        );
                    }
                }
            }
        }
        data.nearest_exact(filter, query, limit, now)
    }

    /// Applies this process's committed writes; `false` if the copy has so many replaced
    /// rows that it should be loaded afresh instead.
    fn apply(&self, fresh: Vec<Fresh>) -> bool {
        let mut data = self.data.write().unwrap_or_else(|p| p.into_inner());
        for f in fresh {
            data.replace(f);
        }
        data.dead <= 1_000.max(data.rows.len() / 4)
    }
}

/// An HNSW graph over these vectors (ids are row indexes).
fn build_ann(vectors: &[(Vec<f32>, usize)]) -> Hnsw<'static, f32, DistDot> {
    let hnsw = Hnsw::<f32, DistDot>::new(16, vectors.len().max(1), 16, 100, DistDot {});
    let refs: Vec<(&Vec<f32>, usize)> = vectors.iter().map(|(v, i)| (v, *i)).collect();
    hnsw.parallel_insert(&refs);
    let mut hnsw = hnsw;
    hnsw.set_searching_mode(true);
    hnsw
}

/// Appends `v` quantised to `i8` (symmetric, by its largest magnitude) to `out`; returns the
/// scale that undoes it.
fn quantize_into(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    out.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// A query vector quantised like the stored ones, so each comparison is an integer dot
/// product (several times faster than converting every stored `i8` to `f32`).
struct QueryI8 {
    v: Vec<i8>,
    scale: f32,
}

impl QueryI8 {
    fn new(q: &[f32]) -> Self {
        let mut v = Vec::with_capacity(q.len());
        let scale = quantize_into(q, &mut v);
        Self { v, scale }
    }

    /// The dot product with a stored vector of scale `scale`.
    fn dot(&self, v: &[i8], scale: f32) -> f32 {
        self.scale * scale * dot_i8(&self.v, v) as f32
    }
}

/// `Σ q[i] × v[i]` in `i32` with eight accumulators, so the compiler vectorises it.
fn dot_i8(q: &[i8], v: &[i8]) -> i32 {
    let (qc, qt) = q.as_chunks::<8>();
    let (vc, vt) = v.as_chunks::<8>();
    let mut acc = [0i32; 8];
    for (a, b) in qc.iter().zip(vc) {
        for l in 0..8 {
            acc[l] += i32::from(a[l]) * i32::from(b[l]);
        }
    }
    let tail: i32 = qt
        .iter()
        .zip(vt)
        .map(|(a, b)| i32::from(*a) * i32::from(*b))
        .sum();
    acc.iter().sum::<i32>() + tail
}

/// What is left of `filter` to check on the rows [`PartitionCache::scope`] yields.
fn rest_of(filter: &Filter) -> std::borrow::Cow<'_, Filter> {
    if filter.user_id.is_some() {
        std::borrow::Cow::Owned(Filter {
            user_id: None,
            ..filter.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(filter)
    }
}

#[derive(Default)]
struct State {
    /// `PRAGMA data_version` of the writer connection when the cache was last validated.
    data_version: Option<i64>,
    generation: u64,
    parts: HashMap<Partition, Arc<Part>>,
}

/// The cache.
#[derive(Default)]
pub(crate) struct PartitionCaches {
    state: Mutex<State>,
}

impl PartitionCaches {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets one partition (after this process wrote to it).
    pub(crate) fn invalidate(&self, p: &Partition) {
        let mut s = self.lock();
        s.generation += 1;
        s.parts.remove(p);
    }

    /// Forgets everything.
    pub(crate) fn invalidate_all(&self) {
        let mut s = self.lock();
        s.generation += 1;
        s.parts.clear();
    }

    /// Adds one access to each id in the tenant's loaded copies (after the accesses were
    /// committed); a copy being loaded meanwhile is not kept, as it may have read the
    /// counts before the commit.
    pub(crate) fn count_access(&self, tenant: &Tenant, ids: &[MemoryId]) {
        let mut s = self.lock();
        s.generation += 1;
        for part in s
            .parts
            .iter()
            .filter(|(p, _)| &p.tenant == tenant)
            .map(|(_, c)| c)
        {
            part.read().count_access(ids);
        }
    }

    /// Applies committed writes of this process to the loaded copies of their partitions
    /// (a copy being loaded meanwhile is not kept: it may have missed them). Call while the
    /// writer connection is still held, so copies see writes in commit order.
    pub(crate) fn apply(&self, fresh: Vec<Fresh>) {
        let mut s = self.lock();
        s.generation += 1;
        let mut by_part: HashMap<Partition, Vec<Fresh>> = HashMap::new();
        for f in fresh {
            by_part.entry(f.partition.clone()).or_default().push(f);
        }
        for (p, fresh) in by_part {
            if let Some(part) = s.parts.get(&p)
                && !part.apply(fresh)
            {
                s.parts.remove(&p);
            }
        }
    }

    /// The partition's copy, if loaded.
    pub(crate) fn peek(&self, p: &Partition) -> Option<Arc<Part>> {
        self.lock().parts.get(p).cloned()
    }

    /// The partition's vectors, loaded with `load` unless cached and still valid for
    /// `data_version` (`None`: not checked this time).
    pub(crate) fn get(
        &self,
        p: &Partition,
        data_version: Option<i64>,
        load: impl FnOnce() -> muisti_core::Result<PartitionCache>,
    ) -> muisti_core::Result<Arc<Part>> {
        let generation = {
            let mut s = self.lock();
            if let Some(v) = data_version
                && s.data_version != Some(v)
            {
                s.data_version = Some(v);
                s.generation += 1;
                s.parts.clear();
            }
            if let Some(part) = s.parts.get(p) {
                return Ok(Arc::clone(part));
            }
            s.generation
        };
        let part = Arc::new(Part::new(load()?));
        let mut s = self.lock();
        if s.generation == generation {
            s.parts.insert(p.clone(), Arc::clone(&part));
        }
        Ok(part)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect();
        text::normalize(&mut v);
        v
    }

    #[test]
    fn quantised_dot_products_match_the_float_ones() {
        for dim in [256, 384, 13] {
            let q = unit(1, dim);
            let query = QueryI8::new(&q);
            for seed in 2..50 {
                let v = unit(seed, dim);
                let mut stored = Vec::new();
                let scale = quantize_into(&v, &mut stored);
                let exact: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
                let approx = query.dot(&stored, scale);
                assert!((exact - approx).abs() < 0.01, "{dim}: {exact} vs {approx}");
            }
        }
    }

    #[test]
    fn integer_dot_product_covers_the_tail() {
        let a: Vec<i8> = (0..11).map(|i| i as i8 - 5).collect();
        let b: Vec<i8> = (0..11).map(|i| 3 - i as i8).collect();
        let expected: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        assert_eq!(dot_i8(&a, &b), expected);
        assert_eq!(dot_i8(&[127; 16], &[-127; 16]), -127 * 127 * 16);
    }
}
