//! Memory over its life (seed 002's `MemoryLifecycleManager`), in the engine over the store
//! contract: expire, prune a user to a cap by the seed's relevance score, consolidate exact
//! duplicates, promote what is used, and statistics. Every job works one record at a time
//! through atomic store steps and is idempotent, so a job killed at any point finishes on
//! its next run with nothing lost or counted twice; a job on a user holds a lease, so two
//! servers never run it on the same user at once; a dry run reports and changes nothing.
//!
//! [`archive`] moves cold memories to an object store and back; [`cluster`] groups a user's
//! memories by topic.
//!
//! # The seed's example
//!
//! Seed 002 stores three memories of `user_123`, recalls, reads the statistics and runs
//! `runMaintenance('user_123')` (expire, consolidate, promote, prune to 1,000):
//!
//! ```
//! use muisti::{Engine, Namespace, Put, lifecycle::MaintenanceOptions};
//! # fn main() -> muisti::Result<()> {
//! let memory = Engine::open("mem://")?;
//! let ns = Namespace::new("default")?;
//! for (content, tags, importance) in [
//!     ("User prefers dark mode for all applications", ["preferences", "ui"], 0.8),
//!     ("User's favorite programming language is PHP", ["preferences", "programming"], 0.7),
//!     ("User asked about implementing authentication in Laravel", ["history", "technical"], 0.5),
//! ] {
//!     let mut put = Put::new(memory.partition(&ns), None, content);
//!     put.owner.user_id = Some("user_123".into());
//!     put.tags = tags.map(String::from).to_vec();
//!     put.importance = Some(importance);
//!     memory.remember(put)?;
//! }
//! let hits = memory.search(
//!     &ns,
//!     "What are the user's programming preferences?",
//!     3,
//!     muisti::Filter { user_id: Some("user_123".into()), ..Default::default() },
//! )?;
//! // Both preferences first ("programming" matches PHP's words, and "applications" by
//! // meaning), the history last.
//! assert!(hits[2].memory.text().contains("Laravel"));
//!
//! let stats = memory.lifecycle().memory_stats(&ns, Some("user_123"))?;
//! assert_eq!(stats.total, 3);
//! assert!((stats.avg_importance - 0.6667).abs() < 0.01);
//!
//! let report = memory.lifecycle().run_maintenance(&MaintenanceOptions {
//!     user_id: Some("user_123".into()),
//!     max_memories: Some(1000),
//!     ..MaintenanceOptions::default()
//! })?;
//! assert_eq!((report.consolidated, report.pruned), (0, 0));
//! assert_eq!(report.users, 1);
//! # Ok(())
//! # }
//! ```

pub mod archive;
pub mod cluster;

use std::collections::{BTreeMap, HashMap, HashSet};

use muisti_core::{
    Filter, Locator, Memory, MemoryId, MemoryScope, MemoryState, Namespace, Patch, Result,
    Timestamp, UpdateRequest, content_hash, list_all,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::info_span;

use muisti_lang::conflict::near_duplicates;

use crate::core::Core;

/// A batch of updates written: each memory written with its index, and the first failure.
type UpdatesWritten = (Vec<(usize, Memory)>, Option<muisti_core::Error>);
use crate::recall;

/// A maintenance job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Job {
    /// Delete expired memories (every tenant) and episodic ones past their retention.
    Expire,
    /// Delete a user's least relevant memories beyond a cap.
    Prune,
    /// Fold a user's exact duplicates into the oldest.
    Consolidate,
    /// Raise the importance of a user's memories as they are recalled.
    Promote,
    /// Move a user's cold memories to the archive (only when named: it moves data).
    Archive,
    /// Group a user's memories by topic (k-means over their vectors).
    Cluster,
}

impl Job {
    /// Every job, in the order a run takes them (the seed's `runMaintenance` order, then
    /// archive and cluster).
    pub const ALL: [Job; 6] = [
        Job::Expire,
        Job::Consolidate,
        Job::Promote,
        Job::Prune,
        Job::Archive,
        Job::Cluster,
    ];

    /// The jobs a run with none named takes (the seed's `runMaintenance`): archive, which
    /// moves data, and cluster, which fits every user's topics, run only when named.
    pub const DEFAULT: [Job; 4] = [Job::Expire, Job::Consolidate, Job::Promote, Job::Prune];

    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Job::Expire => "expire",
            Job::Prune => "prune",
            Job::Consolidate => "consolidate",
            Job::Promote => "promote",
            Job::Archive => "archive",
            Job::Cluster => "cluster",
        }
    }
}

impl std::str::FromStr for Job {
    type Err = muisti_core::Error;

    fn from_str(s: &str) -> Result<Self> {
        Job::ALL
            .into_iter()
            .find(|j| j.as_str() == s.trim())
            .ok_or_else(|| {
                muisti_core::Error::invalid(
                    "job",
                    format!(
                        "{s:?} is not one of expire, prune, consolidate, promote, archive, cluster"
                    ),
                )
            })
    }
}

/// What a maintenance run does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MaintenanceOptions {
    /// The user whose memories the per-user jobs keep (none: every user of the namespaces).
    pub user_id: Option<String>,
    /// The namespace (none: every namespace of the tenant but the engine's own).
    pub namespace: Option<Namespace>,
    /// The jobs (empty: [`Job::DEFAULT`]; prune only with a cap).
    pub jobs: Vec<Job>,
    /// Prune's cap: memories a user keeps per namespace (none: prune does nothing).
    pub max_memories: Option<u64>,
    /// Prune deletes only memories of importance below this (default 0.5; above 1 lets it
    /// delete any).
    pub min_importance: f32,
    /// Promote raises a memory's importance by 0.1 each time it has been recalled this
    /// many more times (default 10, the seed's threshold).
    pub promote_after: u64,
    /// Report what would change, change nothing.
    pub dry_run: bool,
    /// How long a run's hold on a user lasts if the run dies (a run that ends lets go at
    /// once): until then another run skips the user (default a minute).
    pub lease: std::time::Duration,
    /// Consolidation folds near-duplicates too: memories stating the same fact in other
    /// words ([`near_duplicates`]: the same words once their form is set aside). On by
    /// default: it judged 75 pairs duplicates on the two labelled sets, all rightly
    /// (`muisti bench duplicates`: precision 1.000 at recall 0.545 on the set that guided
    /// it, 1.000 at 0.156 on the set held out).
    pub near_duplicates: bool,
    /// Archive moves memories not written or recalled for this long (default 90 days).
    pub archive_after: std::time::Duration,
    /// Archive moves only memories recalled at most this many times (default 2).
    pub archive_max_access: u64,
    /// How old an archive object no record names must be before a run deletes it (default
    /// 15 minutes, at least the lease: the object store's clock may differ from this one).
    pub archive_grace: std::time::Duration,
}

impl Default for MaintenanceOptions {
    fn default() -> Self {
        Self {
            user_id: None,
            namespace: None,
            jobs: Vec::new(),
            max_memories: None,
            min_importance: DEFAULT_MIN_IMPORTANCE,
            promote_after: DEFAULT_PROMOTE_AFTER,
            dry_run: false,
            lease: DEFAULT_LEASE,
            near_duplicates: true,
            archive_after: DEFAULT_ARCHIVE_AFTER,
            archive_max_access: DEFAULT_ARCHIVE_MAX_ACCESS,
            archive_grace: DEFAULT_ARCHIVE_GRACE,
        }
    }
}

impl MaintenanceOptions {
    /// The options' rules, checked before a run starts (the one check the engine and the
    /// API make): a valid user, a floor of 0 or more, promotions 1 or more recalls apart, a
    /// lease of some time.
    pub fn validate(&self) -> Result<()> {
        if let Some(user) = &self.user_id {
            muisti_core::check_owner_field("user_id", &Some(user.clone()))?;
        }
        if !self.min_importance.is_finite() || self.min_importance < 0.0 {
            return Err(muisti_core::Error::invalid(
                "min_importance",
                "a number, 0 or more",
            ));
        }
        if self.lease.is_zero() {
            return Err(muisti_core::Error::invalid(
                "lease",
                "how long a dead run holds a user: more than 0",
            ));
        }
        if self.promote_after == 0 {
            return Err(muisti_core::Error::invalid(
                "promote_after",
                "accesses between promotions: 1 or more",
            ));
        }
        Ok(())
    }
}

/// `days` as a duration (the archive's age is given in days on every face).
pub fn days(days: u32) -> std::time::Duration {
    std::time::Duration::from_secs(u64::from(days) * 24 * 3600)
}

/// Archive's default age: memories not written or recalled for 90 days.
pub const DEFAULT_ARCHIVE_AFTER: std::time::Duration =
    std::time::Duration::from_secs(90 * 24 * 3600);

/// How old an orphan archive object must be before a run deletes it, by default.
pub const DEFAULT_ARCHIVE_GRACE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Archive's default access ceiling: memories recalled at most twice.
pub const DEFAULT_ARCHIVE_MAX_ACCESS: u64 = 2;

/// Prune's default importance floor: memories at or above it are never pruned.
pub const DEFAULT_MIN_IMPORTANCE: f32 = 0.5;

/// Promote's default threshold (the seed's).
pub const DEFAULT_PROMOTE_AFTER: u64 = 10;

/// How much a promotion raises importance, and the importance it stops below (the seed's).
const PROMOTE_STEP: f32 = 0.1;
const PROMOTE_BELOW: f32 = 0.9;

/// The seed's relevance weights with no query (semantic similarity 0): recency 0.2, access
/// frequency 0.15, importance 0.15.
const PRUNE_WEIGHTS: (f32, f32, f32) = (0.2, 0.15, 0.15);

/// How long a run's hold on a user lasts by default if the run dies.
pub const DEFAULT_LEASE: std::time::Duration = std::time::Duration::from_secs(60);

/// What a run did (or, dry, would do).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MaintenanceReport {
    /// Expired memories deleted (not counted in a dry run).
    pub expired: u64,
    /// Episodic memories past the retention deleted (not counted in a dry run).
    pub episodic: u64,
    /// Memories pruned.
    pub pruned: u64,
    /// Duplicates folded into the memory they repeat.
    pub consolidated: u64,
    /// Memories whose importance was raised.
    pub promoted: u64,
    /// Memories moved to the archive.
    pub archived: u64,
    /// Archive objects no record named, deleted (left by a run or a restore that died).
    pub swept: u64,
    /// Users whose memories were grouped by topic.
    pub clustered: u64,
    /// Users whose memories were looked at.
    pub users: u64,
    /// Users skipped because another process held their job's lease.
    pub busy: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// A user's (or a tenant's) memories in numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryStats {
    /// Memories.
    pub total: u64,
    /// By scope.
    pub by_scope: BTreeMap<String, u64>,
    /// By category.
    pub by_category: BTreeMap<String, u64>,
    /// By state.
    pub by_state: BTreeMap<String, u64>,
    /// Average importance.
    pub avg_importance: f64,
    /// Average access count.
    pub avg_access: f64,
    /// The highest access count.
    pub max_access: u64,
    /// Memories with an expiry.
    pub with_expiry: u64,
    /// Memories written per day (UTC, `YYYY-MM-DD`).
    pub growth_per_day: BTreeMap<String, u64>,
    /// The most recalled memories, most first (at most 10): id and access count.
    pub most_accessed: Vec<(MemoryId, u64)>,
    /// When the oldest was written.
    pub oldest: Option<Timestamp>,
    /// When the newest was written.
    pub newest: Option<Timestamp>,
    /// Bytes of content and context.
    pub bytes: u64,
}

/// Whether a memory is a user's to prune, consolidate or promote: their keyless memory of
/// a scope that lives on (long-term or episodic), live. Declarative entries, key-value
/// state and conversations' working memory are never touched.
fn kept_by_jobs(m: &Memory) -> bool {
    matches!(m.scope, MemoryScope::LongTerm | MemoryScope::Episodic)
        && m.writer_key().is_none()
        && m.state == MemoryState::Active
}

/// The seed's relevance of a memory with no query: recency, access and importance weighted
/// 0.2, 0.15 and 0.15, each signal as recall computes it.
pub fn standing(m: &Memory, now: Timestamp, half_life: std::time::Duration) -> f32 {
    let (w_recency, w_access, w_importance) = PRUNE_WEIGHTS;
    w_recency * recall::recency(m.updated_at, now, half_life)
        + w_access * recall::access(m.access_count)
        + w_importance * m.importance.clamp(0.0, 1.0)
}

/// The lifecycle of memories ([`Engine::lifecycle`](crate::Engine::lifecycle)): the
/// maintenance jobs (consolidation, promotion, pruning, archiving, topics), archived memories
/// read back and restored, and each user's topics. A handle over what the engine's parts
/// share and the archive; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Lifecycle<'a> {
    pub(crate) core: &'a Core,
    pub(crate) archive: Option<&'a archive::Archive>,
}

impl Lifecycle<'_> {
    /// Runs maintenance (the seed's `runMaintenance`): expire, consolidate, promote and
    /// prune, as `options` say, user by user.
    pub fn run_maintenance(&self, options: &MaintenanceOptions) -> Result<MaintenanceReport> {
        self.run_maintenance_with(options, &mut |_, _| {})
    }

    /// [`Lifecycle::run_maintenance`], telling `progress` how many of the users (per
    /// namespace) it has done of how many, after each.
    pub fn run_maintenance_with(
        &self,
        options: &MaintenanceOptions,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<MaintenanceReport> {
        let _span = info_span!("memory.run_maintenance", dry_run = options.dry_run).entered();
        options.validate()?;
        let jobs: Vec<Job> = if options.jobs.is_empty() {
            Job::DEFAULT.to_vec()
        } else {
            Job::ALL
                .into_iter()
                .filter(|j| options.jobs.contains(j))
                .collect()
        };
        let mut report = MaintenanceReport {
            dry_run: options.dry_run,
            ..MaintenanceReport::default()
        };
        if jobs.contains(&Job::Expire) {
            if options.dry_run {
                // What the run would delete: the records waiting for the store's purge and
                // the episodic memories past the retention.
                report.expired = self.core.store.count_expired()?;
                report.episodic = self.core.count_past_retention()?;
            } else {
                let done = self.core.maintain()?;
                report.expired = done.expired;
                report.episodic = done.episodic;
            }
        }
        let per_user: Vec<Job> = jobs.iter().copied().filter(|j| *j != Job::Expire).collect();
        if !per_user.is_empty() {
            self.maintain_users(&per_user, options, &mut report, progress)?;
        }
        for job in jobs {
            let count = match job {
                Job::Expire => report.expired + report.episodic,
                Job::Consolidate => report.consolidated,
                Job::Promote => report.promoted,
                Job::Prune => report.pruned,
                Job::Archive => report.archived,
                Job::Cluster => report.clustered,
            };
            self.core.emit(muisti_core::Event::Maintained {
                tenant: self.core.tenant.clone(),
                job: job.as_str(),
                count,
                dry_run: options.dry_run,
            });
        }
        Ok(report)
    }

    /// The per-user jobs over the namespaces `options` names.
    fn maintain_users(
        &self,
        per_user: &[Job],
        options: &MaintenanceOptions,
        report: &mut MaintenanceReport,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<()> {
        let namespaces = match &options.namespace {
            Some(ns) => vec![ns.clone()],
            None => self
                .core
                .store
                .namespaces(&self.core.tenant)?
                .into_iter()
                .filter(|ns| !ns.is_reserved())
                .collect(),
        };
        let holder = MemoryId::generate().to_string();
        // Each namespace's users first (their ids only), so progress knows the total.
        let mut work = Vec::new();
        for ns in &namespaces {
            let partition = self.core.partition(ns);
            let users = self.ids_by_user(&partition, options.user_id.as_deref())?;
            work.push((ns, partition, users));
        }
        let total: u64 = work.iter().map(|(_, _, users)| users.len() as u64).sum();
        progress(0, total);
        for (ns, partition, users) in work {
            for (user, ids) in users {
                report.users += 1;
                progress(report.users.saturating_sub(1), total);
                let lease = format!(
                    "maintain.{}",
                    &content_hash(&format!("{ns}/{user:?}"))[..16]
                );
                if !options.dry_run && !self.core.acquire_lease(&lease, &holder, options.lease)? {
                    report.busy += 1;
                    continue;
                }
                // Read again under the lease, so what another run changed meanwhile is seen.
                let done = self
                    .core
                    .store
                    .get_many(&self.core.tenant, &ids)
                    .and_then(|fresh| {
                        let memories = fresh
                            .into_iter()
                            .filter(|m| {
                                m.partition == partition
                                    && m.owner.user_id == user
                                    && kept_by_jobs(m)
                            })
                            .collect();
                        self.maintain_user(memories, per_user, options, report)
                    });
                if !options.dry_run {
                    self.core.release_lease(&lease, &holder)?;
                }
                done?;
            }
            if per_user.contains(&Job::Archive) && !options.dry_run {
                report.swept += self.sweep_archive(ns, options.lease, options.archive_grace)?;
            }
        }
        progress(total, total);
        Ok(())
    }

    /// The ids of the memories the jobs keep in `partition`, by user (of one user, if
    /// given): one page of records in memory at a time.
    fn ids_by_user(
        &self,
        partition: &muisti_core::Partition,
        user: Option<&str>,
    ) -> Result<BTreeMap<Option<String>, Vec<MemoryId>>> {
        let mut by_user: BTreeMap<Option<String>, Vec<MemoryId>> = BTreeMap::new();
        let mut after = None;
        loop {
            let page = self.core.store.list(&muisti_core::ListQuery {
                partition: partition.clone(),
                filter: Filter {
                    user_id: user.map(str::to_owned),
                    ..Filter::default()
                },
                after,
                limit: 1_000,
            })?;
            for m in page.items.iter().filter(|m| kept_by_jobs(m)) {
                by_user
                    .entry(m.owner.user_id.clone())
                    .or_default()
                    .push(m.id);
            }
            match page.next {
                Some(next) if !page.items.is_empty() => after = Some(next),
                _ => break,
            }
        }
        Ok(by_user)
    }

    /// The per-user jobs on one user's memories of one namespace. What the folds and the
    /// pruning doom is deleted in one batch before the archive and cluster jobs (which
    /// take time the user's lease may not cover) or once the jobs are done, even when one
    /// failed: after every fold that records a duplicate was written, and with one
    /// transaction for the records and one for their histories rather than one each per
    /// job. A job's failure is the one returned.
    fn maintain_user(
        &self,
        memories: Vec<Memory>,
        jobs: &[Job],
        options: &MaintenanceOptions,
        report: &mut MaintenanceReport,
    ) -> Result<()> {
        let mut doomed = Vec::new();
        let done = self.run_jobs(memories, jobs, options, report, &mut doomed);
        let forgot = self.forget_doomed(&mut doomed, options);
        done.and(forgot)
    }

    /// Deletes what the jobs have doomed so far (nothing on a dry run).
    fn forget_doomed(
        &self,
        doomed: &mut Vec<MemoryId>,
        options: &MaintenanceOptions,
    ) -> Result<()> {
        let ids = std::mem::take(doomed);
        if !options.dry_run {
            self.core.forget_ids(&ids)?;
        }
        Ok(())
    }

    /// The jobs of [`Lifecycle::maintain_user`], adding to `doomed` what they delete.
    fn run_jobs(
        &self,
        mut memories: Vec<Memory>,
        jobs: &[Job],
        options: &MaintenanceOptions,
        report: &mut MaintenanceReport,
        doomed: &mut Vec<MemoryId>,
    ) -> Result<()> {
        for job in jobs {
            if matches!(job, Job::Archive | Job::Cluster) {
                self.forget_doomed(doomed, options)?;
            }
            match job {
                Job::Consolidate => {
                    let (n, left) = self.consolidate(memories, options.dry_run, doomed, |m| {
                        m.content_hash.clone()
                    })?;
                    report.consolidated += n;
                    memories = left;
                    if options.near_duplicates {
                        let (n, left) =
                            self.consolidate(memories, options.dry_run, doomed, |m| {
                                muisti_lang::conflict::near_duplicate_key(&m.text())
                            })?;
                        report.consolidated += n;
                        memories = left;
                    }
                }
                Job::Promote => {
                    report.promoted += self.promote(&mut memories, options)?;
                }
                Job::Prune => {
                    if let Some(cap) = options.max_memories {
                        report.pruned += self.prune(&mut memories, cap, options, doomed)?;
                    }
                }
                Job::Archive => {
                    report.archived += self.archive_cold(&mut memories, options)?;
                }
                Job::Cluster => {
                    report.clustered += u64::from(self.cluster_user(&memories, options)?);
                }
                Job::Expire => {}
            }
        }
        Ok(())
    }

    /// Folds duplicates into the oldest memory they repeat, within each group of the same
    /// `key` (the content hash for exact duplicates, [`near_duplicate_key`] for near ones,
    /// then each pair confirmed by [`near_duplicates`]): it takes their accesses, tags and
    /// metadata it lacks, and records them in `metadata.merged_from` in the same atomic
    /// update; then they are deleted. A duplicate already recorded is only deleted (the run
    /// before stopped in between). The user's folds are written as one batch of updates,
    /// and the duplicates whose folds were written added to `doomed` (a duplicate is
    /// deleted only once the memory it folded into records it). Returns how many were
    /// folded and the memories left.
    ///
    /// [`near_duplicate_key`]: muisti_lang::conflict::near_duplicate_key
    fn consolidate(
        &self,
        memories: Vec<Memory>,
        dry_run: bool,
        doomed: &mut Vec<MemoryId>,
        key: impl Fn(&Memory) -> String,
    ) -> Result<(u64, Vec<Memory>)> {
        let mut groups: HashMap<String, Vec<Memory>> = HashMap::new();
        let mut left = Vec::new();
        for m in memories {
            let k = key(&m);
            if k.is_empty() {
                left.push(m);
            } else {
                groups.entry(k).or_default().push(m);
            }
        }
        let mut folded = 0;
        // Each kept memory with the duplicates it takes in, and the duplicates it already
        // recorded.
        let mut folds: Vec<(Memory, Vec<Memory>)> = Vec::new();
        let mut recorded = Vec::new();
        for (_, mut group) in groups {
            group.sort_by_key(|m| (m.created_at, m.id));
            // The memories kept so far, oldest first; each next one folds into the first it
            // repeats, or is kept.
            let mut kept: Vec<(Memory, Vec<Memory>)> = Vec::new();
            for dup in group {
                let into = kept.iter().position(|(k, _)| {
                    dup.content_hash == k.content_hash
                        || near_duplicates(&k.text(), &dup.text(), None, f32::INFINITY)
                });
                let Some(i) = into else {
                    kept.push((dup, Vec::new()));
                    continue;
                };
                folded += 1;
                if merged_from(&kept[i].0).contains(&dup.id) {
                    recorded.push(dup.id);
                } else {
                    kept[i].1.push(dup);
                }
            }
            folds.extend(kept);
        }
        if !dry_run {
            let updates = folds
                .iter()
                .enumerate()
                .filter(|(_, (_, dups))| !dups.is_empty())
                .map(|(i, (kept, dups))| (i, self.fold(kept, dups)))
                .collect();
            let (written, failed) = self.write_updates(updates)?;
            doomed.extend(recorded);
            for (i, m) in written {
                doomed.extend(folds[i].1.iter().map(|d| d.id));
                folds[i].0 = m;
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        left.extend(folds.into_iter().map(|(k, _)| k));
        left.sort_by_key(|m| m.id);
        Ok((folded, left))
    }

    /// Writes `updates` (each with the index of the memory it changes) as one batch: the
    /// memories written, with their indexes, and the first failure, for the caller to
    /// return once it has used what was written.
    fn write_updates(&self, updates: Vec<(usize, UpdateRequest)>) -> Result<UpdatesWritten> {
        let (at, reqs): (Vec<usize>, Vec<UpdateRequest>) = updates.into_iter().unzip();
        let mut written = Vec::with_capacity(at.len());
        let mut failed = None;
        for (out, i) in self.core.store.update_many(&reqs)?.into_iter().zip(at) {
            match out {
                Ok(m) => written.push((i, m)),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        Ok((written, failed))
    }

    /// The conditional update that folds `dups` into `kept`, in order: each adds the tags
    /// (up to the limit) and metadata keys `kept` lacks, its record in `merged_from`, its
    /// accesses and its importance if higher.
    fn fold(&self, kept: &Memory, dups: &[Memory]) -> UpdateRequest {
        let mut tags = kept.tags.clone();
        let mut metadata = kept.metadata.clone();
        let (mut importance, mut accesses) = (kept.importance, 0u64);
        for dup in dups {
            for t in &dup.tags {
                if !tags.contains(t) && tags.len() < muisti_core::MAX_TAGS {
                    tags.push(t.clone());
                }
            }
            for (k, v) in &dup.metadata {
                metadata.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let record = json!({"id": dup.id, "access_count": dup.access_count,
                "created_at": dup.created_at});
            match metadata.get_mut(MERGED_FROM) {
                Some(Value::Array(all)) => all.push(record),
                _ => {
                    metadata.insert(MERGED_FROM.into(), Value::Array(vec![record]));
                }
            }
            importance = importance.max(dup.importance);
            accesses = accesses.saturating_add(dup.access_count);
        }
        let patch = Patch {
            tags: Some(tags),
            metadata: Some(metadata),
            importance: Some(importance),
            add_access: Some(accesses),
            ..Patch::default()
        };
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: kept.id,
        };
        UpdateRequest::new(at, patch).expecting(Some(kept.version))
    }

    /// Raises by 0.1 (to at most 1, and only below 0.9, as the seed) the importance of each
    /// memory recalled `promote_after` more times since its last promotion, which it
    /// records (`metadata.promoted_at_access`), so a rerun promotes nothing twice.
    fn promote(&self, memories: &mut [Memory], options: &MaintenanceOptions) -> Result<u64> {
        let mut promoted = 0;
        let mut updates = Vec::new();
        for (i, m) in memories.iter().enumerate() {
            let since = m
                .metadata
                .get(PROMOTED_AT)
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if m.access_count < since.saturating_add(options.promote_after)
                || m.importance >= PROMOTE_BELOW
            {
                continue;
            }
            promoted += 1;
            if options.dry_run {
                continue;
            }
            let mut metadata = m.metadata.clone();
            metadata.insert(PROMOTED_AT.into(), json!(m.access_count));
            let patch = Patch {
                importance: Some((m.importance + PROMOTE_STEP).min(1.0)),
                metadata: Some(metadata),
                ..Patch::default()
            };
            let locator = Locator::Id {
                tenant: self.core.tenant.clone(),
                id: m.id,
            };
            updates.push((
                i,
                UpdateRequest::new(locator, patch).expecting(Some(m.version)),
            ));
        }
        let (written, failed) = self.write_updates(updates)?;
        for (i, m) in written {
            memories[i] = m;
        }
        failed.map_or(Ok(promoted), Err)
    }

    /// Dooms the least relevant of a user's memories (the seed's score with no query; the
    /// oldest first on ties) until `cap` are left, only among those of importance below
    /// `min_importance`: they leave `memories` for `doomed`. Returns how many.
    fn prune(
        &self,
        memories: &mut Vec<Memory>,
        cap: u64,
        options: &MaintenanceOptions,
        doomed: &mut Vec<MemoryId>,
    ) -> Result<u64> {
        let excess = (memories.len() as u64).saturating_sub(cap);
        if excess == 0 {
            return Ok(0);
        }
        let now = self.core.clock.now();
        let half_life = self.core.recall.half_life;
        let mut candidates: Vec<(f32, Timestamp, MemoryId)> = memories
            .iter()
            .filter(|m| m.importance < options.min_importance)
            .map(|m| (standing(m, now, half_life), m.created_at, m.id))
            .collect();
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let pruned: Vec<MemoryId> = candidates
            .into_iter()
            .take(usize::try_from(excess).unwrap_or(usize::MAX))
            .map(|(_, _, id)| id)
            .collect();
        let gone: HashSet<MemoryId> = pruned.iter().copied().collect();
        memories.retain(|m| !gone.contains(&m.id));
        doomed.extend(pruned.iter().copied());
        Ok(pruned.len() as u64)
    }

    /// A user's memories of a namespace in numbers (all users' with none), every scope.
    pub fn memory_stats(
        &self,
        namespace: &Namespace,
        user_id: Option<&str>,
    ) -> Result<MemoryStats> {
        let filter = Filter {
            user_id: user_id.map(str::to_owned),
            ..Filter::default()
        };
        let mut s = MemoryStats::default();
        let (mut importance, mut access) = (0.0f64, 0.0f64);
        let mut accessed: Vec<(MemoryId, u64)> = Vec::new();
        for m in list_all(
            self.core.store.as_ref(),
            &self.core.partition(namespace),
            &filter,
        )? {
            s.total += 1;
            *s.by_scope.entry(m.scope.as_str().to_owned()).or_default() += 1;
            *s.by_category
                .entry(m.category.as_str().to_owned())
                .or_default() += 1;
            *s.by_state.entry(state_name(m.state)).or_default() += 1;
            importance += f64::from(m.importance);
            access += m.access_count as f64;
            s.max_access = s.max_access.max(m.access_count);
            s.with_expiry += u64::from(m.expires_at.is_some());
            let day = m
                .created_at
                .to_string()
                .chars()
                .take(10)
                .collect::<String>();
            *s.growth_per_day.entry(day).or_default() += 1;
            accessed.push((m.id, m.access_count));
            s.oldest = Some(s.oldest.map_or(m.created_at, |o| o.min(m.created_at)));
            s.newest = Some(s.newest.map_or(m.created_at, |n| n.max(m.created_at)));
            s.bytes += (m.text().len() + m.context.as_ref().map_or(0, String::len)) as u64;
        }
        if s.total > 0 {
            s.avg_importance = importance / s.total as f64;
            s.avg_access = access / s.total as f64;
        }
        accessed.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        accessed.retain(|(_, n)| *n > 0);
        accessed.truncate(10);
        s.most_accessed = accessed;
        Ok(s)
    }
}

/// Where a kept memory records the duplicates folded into it.
pub const MERGED_FROM: &str = "merged_from";

/// Where a promoted memory records its access count at the promotion.
pub const PROMOTED_AT: &str = "promoted_at_access";

/// The ids a memory records as folded into it.
fn merged_from(m: &Memory) -> Vec<MemoryId> {
    m.metadata
        .get(MERGED_FROM)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("id")?.as_str()?.parse().ok())
        .collect()
}

fn state_name(state: MemoryState) -> String {
    serde_json::to_value(state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}
