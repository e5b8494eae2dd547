//! An in-memory copy of each partition: for every live record the fields a filter and
//! recall's rescoring read, its vector and its full-text terms. Nearest-neighbour search,
//! BM25 (with the partition's own statistics, whatever the filter) and the rescoring fields
//! are answered from it; the database stays the durable copy.
//!
//! A copy holds a whole partition, or one user's rows of it: a query filtered by a user
//! whose partition is not loaded loads only that user's rows (an indexed read of
//! milliseconds, where a partition of a million rows takes seconds), so the first recall
//! after a restart does not wait for the whole partition. A copy of every row is loaded for
//! a query that names no user, and then replaces the partition's one-user copies. Copies
//! live within a memory budget (least recently used dropped first).
//!
//! Consistency: this process's writes and access counts are applied to the copies that hold
//! their records as they are committed (while the writer connection is held, so in commit
//! order); a load takes its snapshot while holding the writer connection and records what is
//! committed after it, applied before the copy is used. Deletes are applied in place too;
//! commits by other connections or processes show in `PRAGMA data_version` and drop
//! everything.

use std::{
    collections::HashMap,
    sync::{
        Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock, RwLockReadGuard,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
};

use hnsw_rs::prelude::{DistDot, Hnsw};

use muisti_core::{
    Category, Filter, Filterable, IdMap, MemoryId, MemoryScope, Owner, Partition, RankFields,
    Scored, Tenant, Timestamp,
    quant::{QueryI8, quantize_into},
    text::{self, CONTEXT_WEIGHT},
};
use serde_json::{Map, Value};

use crate::records::{RecordCache, filter_fields_bytes};

/// The hash maps of a copy's index, keyed by terms, users, sessions and term ids: foldhash
/// (seeded per process, as [`muisti_core::IdMap`]) rather than the standard SipHash, which
/// with the growing of a row's term counts was nearly half the cost of adding a row
/// (docs/benchmarks.md).
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// One partition in memory: for each record the fields filters and rescoring read, its
/// vector (stored contiguously) and its full-text terms. Rows are indexed by id and by user.
#[derive(Default)]
pub(crate) struct PartitionCache {
    rows: Vec<CachedRow>,
    /// Id → row.
    index: IdMap<u32>,
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
    term_ids: FastMap<String, u32>,
    /// Per row, its distinct terms with their weighted frequencies, sorted by term id: row
    /// `i` at `term_start[i]..term_start[i + 1]`. A forward index: a query that names no
    /// user scans the rows its filter allows, not every posting of a common term (a
    /// user-filtered one reads the user's postings, [`UserRows`]).
    terms: Vec<(u32, f32)>,
    term_start: Vec<u32>,
    by_user: FastMap<String, UserRows>,
    /// The rows not replaced or deleted: BM25's statistics when a query's filter names no
    /// user.
    totals: Totals,
    /// Per session, its rows (any user's): a list of one session's records is answered
    /// from them (recall's look-up of a turn's next one).
    by_session: FastMap<String, Vec<u32>>,
    /// From how many vectors (in the partition and in a query's scope) nearest-neighbour
    /// search uses an HNSW graph instead of an exact scan; 0 never.
    ann_threshold: usize,
    /// Rows replaced by a later write of this process (kept as never-live, scrubbed).
    dead: usize,
    /// The heap bytes of the rows' strings, tags and metadata, and of the terms' names.
    heap: usize,
}

/// One user's rows in a copy, and their inverted index: a user-filtered full-text query
/// visits the rows holding its terms, not every row of the user.
#[derive(Default)]
struct UserRows {
    rows: Vec<u32>,
    /// Term id → the positions in `rows` of the user's rows holding it (ascending), with its
    /// weighted frequency there.
    postings: FastMap<u32, Vec<(u32, f32)>>,
    /// Those of its rows not replaced or deleted.
    totals: Totals,
}

/// Rows not replaced or deleted (of a copy, or of one user in it): how many, their total
/// length in terms, and how many of them expire. While none expires, they are exactly the
/// live rows, so a query whose filter asks nothing else takes BM25's statistics from here
/// instead of visiting every row.
#[derive(Clone, Copy, Default)]
struct Totals {
    rows: usize,
    length: usize,
    expiring: usize,
}

impl Totals {
    /// Counts a row in (`sign` 1) or out (-1).
    fn count(&mut self, length: u32, expires: bool, sign: isize) {
        self.rows = self.rows.wrapping_add_signed(sign);
        self.length = self.length.wrapping_add_signed(sign * length as isize);
        if expires {
            self.expiring = self.expiring.wrapping_add_signed(sign);
        }
    }
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
    /// The copy's bytes (estimated) without the graph, and the graph's once built.
    bytes: AtomicUsize,
    graph_bytes: AtomicUsize,
    /// The cache's budget: a graph is built only if the copy with it fits.
    budget: usize,
    /// Whether the cache keeps this copy (only kept copies build a graph).
    kept: AtomicBool,
    /// When it was last looked up (the cache's clock).
    last_used: AtomicU64,
    /// The cache's flag that a copy grew.
    grown: Arc<AtomicBool>,
}

/// A record as a write of this process left it, to apply to a loaded copy after the commit.
#[derive(Clone)]
pub(crate) struct Fresh {
    pub(crate) partition: Partition,
    pub(crate) row: CachedRow,
    pub(crate) vector: Option<Vec<f32>>,
    pub(crate) terms: String,
    pub(crate) context_terms: Option<String>,
    /// The user of the live record it replaced, if it replaced one (one-user copies of that
    /// user hold the old row).
    pub(crate) replaced_user: Option<Option<String>>,
    /// The record as written: the decoded records' cache keeps it.
    pub(crate) memory: Arc<muisti_core::Memory>,
}

impl Fresh {
    /// Whether a copy of these rows holds the record, or held the one it replaced.
    fn concerns(&self, rows: &Rows) -> bool {
        rows.holds(self.row.owner.user_id.as_deref())
            || self
                .replaced_user
                .as_ref()
                .is_some_and(|u| rows.holds(u.as_deref()))
    }

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
                time: RankFields::time_of(m.valid_from, m.created_at),
                importance: m.importance,
                expires_at: m.expires_at.map(Timestamp::as_millis),
                access_count: m.access_count.into(),
            },
            vector: vector.map(<[f32]>::to_vec),
            terms,
            context_terms,
            memory: Arc::new(m.clone()),
            replaced_user: None,
        }
    }
}

/// The fixed bytes of a user's [`UserRows`] and of one term's postings in it (estimated).
const USER_ROWS_BYTES: usize = 96;
const POSTINGS_KEY_BYTES: usize = 48;

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
    /// [`RankFields::time`].
    pub(crate) time: Timestamp,
    pub(crate) importance: f32,
    pub(crate) expires_at: Option<i64>,
    /// The stored count plus the accesses this process committed since the load.
    pub(crate) access_count: AtomicU64,
}

impl Clone for CachedRow {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            owner: self.owner.clone(),
            category: self.category.clone(),
            scope: self.scope,
            tags: self.tags.clone(),
            metadata: self.metadata.clone(),
            content_hash: self.content_hash.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            time: self.time,
            importance: self.importance,
            expires_at: self.expires_at,
            access_count: self.access_count.load(Ordering::Relaxed).into(),
        }
    }
}

impl CachedRow {
    /// The bytes its strings, tags and metadata hold on the heap (estimated).
    fn heap_bytes(&self) -> usize {
        filter_fields_bytes(self)
    }
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

    /// Makes the row of `id`, if any, a never-live row with its fields, terms and vector
    /// cleared (a replaced or deleted record); `true` if there was a live one.
    fn kill(&mut self, id: &MemoryId) -> bool {
        let Some(&i) = self.index.get(id) else {
            return false;
        };
        let i = i as usize;
        let old = &mut self.rows[i];
        if old.expires_at == Some(i64::MIN) {
            return false;
        }
        let (length, expires) = (self.lengths[i], old.expires_at.is_some());
        self.totals.count(length, expires, -1);
        if let Some(user) = old
            .owner
            .user_id
            .as_ref()
            .and_then(|u| self.by_user.get_mut(u))
        {
            user.totals.count(length, expires, -1);
        }
        self.heap = self.heap.saturating_sub(old.heap_bytes());
        old.expires_at = Some(i64::MIN);
        old.tags.clear();
        old.metadata.clear();
        old.content_hash.clear();
        self.heap += old.heap_bytes();
        if let Some(slot) = self.vector_of[i] {
            let slot = slot as usize;
            self.data[slot * self.dim..(slot + 1) * self.dim].fill(0);
        }
        let (start, end) = (self.term_start[i] as usize, self.term_start[i + 1] as usize);
        self.terms[start..end].iter_mut().for_each(|t| t.1 = 0.0);
        self.dead += 1;
        true
    }

    /// Replaces the row of `fresh`'s id, if any, by `fresh` (added at the end). The old row
    /// stays as a never-live row with its fields and vector cleared.
    fn replace(&mut self, fresh: Fresh) {
        self.kill(&fresh.row.id);
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
        self.heap += row.heap_bytes();
        if let Some(session) = &row.owner.session_id {
            self.by_session
                .entry(session.clone())
                .or_insert_with(|| {
                    self.heap += session.len() + 48;
                    Vec::new()
                })
                .push(i);
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
        let mut tf: FastMap<&str, f32> = FastMap::with_capacity_and_hasher(64, Default::default());
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
                let id = *self.term_ids.entry(t.to_owned()).or_insert_with(|| {
                    self.heap += t.len();
                    next
                });
                (id, f)
            })
            .collect();
        own.sort_unstable_by_key(|(t, _)| *t);
        let expires = self.rows[i as usize].expires_at.is_some();
        self.totals.count(len, expires, 1);
        if let Some(u) = &self.rows[i as usize].owner.user_id {
            let user = self.by_user.entry(u.clone()).or_insert_with(|| {
                self.heap += u.len() + 48 + USER_ROWS_BYTES;
                UserRows::default()
            });
            let position = user.rows.len() as u32;
            user.rows.push(i);
            user.totals.count(len, expires, 1);
            for &(t, f) in &own {
                let list = user.postings.entry(t).or_insert_with(|| {
                    self.heap += POSTINGS_KEY_BYTES;
                    Vec::new()
                });
                list.push((position, f));
                self.heap += size_of::<(u32, f32)>();
            }
        }
        self.terms.extend(own);
        self.term_start.push(self.terms.len() as u32);
    }

    /// The bytes the copy holds (estimated from its lengths and capacities).
    pub(crate) fn bytes(&self) -> usize {
        use std::mem::size_of;
        self.rows.capacity() * size_of::<CachedRow>()
            + self.index.capacity() * (size_of::<(MemoryId, u32)>() + 1)
            + self.data.capacity()
            + self.scales.capacity() * size_of::<f32>()
            + self.vector_of.capacity() * size_of::<Option<u32>>()
            + self.lengths.capacity() * size_of::<u32>()
            + self.term_ids.capacity() * (size_of::<(String, u32)>() + 1)
            + self.terms.capacity() * size_of::<(u32, f32)>()
            + self.term_start.capacity() * size_of::<u32>()
            + self.by_user.capacity() * (size_of::<(String, UserRows)>() + 1)
            + self.by_session.capacity() * (size_of::<(String, Vec<u32>)>() + 1)
            + self.rows.len() * 2 * size_of::<u32>()
            + self.heap
    }

    /// The bytes an HNSW graph over this copy would hold (estimated: a copy of each vector
    /// in `f32` and about 40 links of its layers).
    fn graph_bytes(&self) -> usize {
        self.scales.len() * (self.dim * size_of::<f32>() + 40 * 24 + 64)
    }

    /// Whether row `i` is live at `now` and passes `filter` (`None`: no condition).
    fn live(&self, i: usize, filter: Option<&Filter>, now: i64) -> bool {
        let r = &self.rows[i];
        r.expires_at.is_none_or(|t| t > now) && filter.is_none_or(|f| f.matches(r))
    }

    /// `None` if the copy does not hold `id`, else its rescoring fields if it is live.
    fn rank_field(&self, id: &MemoryId, now: Timestamp) -> Option<Option<RankFields>> {
        let r = &self.rows[*self.index.get(id)? as usize];
        Some(
            r.expires_at
                .is_none_or(|t| t > now.as_millis())
                .then(|| RankFields {
                    id: r.id,
                    updated_at: r.updated_at,
                    access_count: r.access_count.load(Ordering::Relaxed),
                    importance: r.importance,
                    time: r.time,
                }),
        )
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
    fn scope(&self, filter: &Filter) -> Scope<'_> {
        match &filter.user_id {
            Some(u) => Scope::Rows(self.by_user.get(u).map_or(&[][..], |r| &r.rows).iter()),
            None => Scope::All(0..self.rows.len()),
        }
    }

    /// The exactly scored rows among `rows` that pass `filter` (with its user already
    /// applied by the caller's choice of rows) and are live at `now`: see [`scored`].
    ///
    /// [`scored`]: PartitionCache::scored
    fn scan(&self, rows: Scope<'_>, filter: &Filter, q: &QueryI8, now: i64, out: &mut Scores) {
        let rest = rest_of(filter);
        if self.all_live(filter, rest.as_deref()) {
            self.scored(rows, q, out);
        } else {
            self.scored(rows.filter(|&i| self.live(i, rest.as_deref(), now)), q, out);
        }
    }

    /// Whether every row of the filter's scope is live and passes it: it asks for nothing
    /// but the user, and none of those rows is replaced, deleted or expiring.
    fn all_live(&self, filter: &Filter, rest: Option<&Filter>) -> bool {
        let totals = self.totals_of(filter);
        rest.is_none() && totals.expiring == 0 && totals.rows == self.scope_len(filter)
    }

    /// The counts of the filter's scope (the user's rows, or all).
    fn totals_of(&self, filter: &Filter) -> Totals {
        match &filter.user_id {
            Some(u) => self
                .by_user
                .get(u)
                .map_or_else(Totals::default, |u| u.totals),
            None => self.totals,
        }
    }

    /// Those of `rows` that have a vector, scored against the query, added to `out`.
    fn scored(&self, rows: impl Iterator<Item = usize>, q: &QueryI8, out: &mut Scores) {
        let from = out.rows.len();
        out.rows
            .extend(rows.filter_map(|i| Some((i, self.vector_of[i]? as usize))));
        let slotted = &out.rows[from..];
        let mut dots = Vec::with_capacity(slotted.len());
        q.dots(
            slotted
                .iter()
                .map(|&(_, slot)| &self.data[slot * self.dim..(slot + 1) * self.dim]),
            &mut dots,
        );
        out.scores.extend(
            slotted
                .iter()
                .zip(dots)
                .map(|(&(_, slot), dot)| q.scale(self.scales[slot]) * dot as f32),
        );
    }

    /// The best `limit` of `scored`, best first (as [`text::top_scored`] keeps them).
    fn best(&self, scored: &Scores, limit: usize) -> Vec<Scored> {
        text::top_of(&scored.scores, |j| self.rows[scored.rows[j].0].id, limit)
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
        let mut scored = Scores::default();
        self.scan(self.scope(filter), filter, &q, now, &mut scored);
        self.best(&scored, limit)
    }

    /// How many rows a filter can match at most (the user's, or all).
    fn scope_len(&self, filter: &Filter) -> usize {
        match &filter.user_id {
            Some(u) => self.by_user.get(u).map_or(0, |r| r.rows.len()),
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
        let keep = |i: &usize| self.live(*i, Some(filter), now);
        let found = ann.search_filter(query, k, k.max(64), Some(&keep));
        let q = QueryI8::new(query);
        let mut scored = Scores::default();
        self.scored(found.iter().map(|n| n.d_id), &q, &mut scored);
        if scored.scores.len() < limit {
            return None;
        }
        // The rows added since the graph was built (a user's rows are in ascending order).
        let added = match self.scope(filter) {
            Scope::Rows(rows) => {
                let first = rows.as_slice().partition_point(|&i| (i as usize) < covered);
                Scope::Rows(rows.as_slice()[first..].iter())
            }
            Scope::All(rows) => Scope::All(covered.max(rows.start)..rows.end),
        };
        self.scan(added, filter, &q, now, &mut scored);
        Some(self.best(&scored, limit))
    }

    /// The ids of the first `take` live records (in id order) after `after` that pass a
    /// filter naming a session: the page [`Store::list`](muisti_core::Store::list) reads
    /// for it, from the session's rows.
    fn session_page(
        &self,
        filter: &Filter,
        session: &str,
        after: Option<MemoryId>,
        take: usize,
        now: i64,
    ) -> Vec<MemoryId> {
        let mut ids: Vec<MemoryId> = self
            .by_session
            .get(session)
            .into_iter()
            .flatten()
            .map(|&i| i as usize)
            .filter(|&i| {
                after.is_none_or(|a| self.rows[i].id > a) && self.live(i, Some(filter), now)
            })
            .map(|i| self.rows[i].id)
            .collect();
        ids.sort_unstable();
        ids.truncate(take);
        ids
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
        let rest = rest_of(filter);
        let rest = rest.as_deref();
        let totals = self.totals_of(filter);
        let (n_docs, total_len) = if totals.expiring == 0 && rest.is_none() {
            (totals.rows, totals.length)
        } else {
            self.scope(filter)
                .filter(|&i| self.live(i, rest, now))
                .fold((0, 0), |(n, len), i| {
                    (n + 1, len + self.lengths[i] as usize)
                })
        };
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
        let avgdl = total_len as f32 / n_docs as f32;
        let live = |i: usize| self.live(i, rest, now);
        if let Some(user) = filter.user_id.as_ref().and_then(|u| self.by_user.get(u)) {
            return self.bm25_postings(user, &wanted, width, live, (n_docs, avgdl), limit);
        }
        let mut df = vec![0usize; width];
        // Each row's own terms, a binary search per query term: the matching rows, and
        // their term frequencies `width` at a time.
        let mut matched: Vec<usize> = Vec::new();
        let mut tfs: Vec<f32> = Vec::new();
        for i in self.scope(filter) {
            if !live(i) {
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
        let scores: Vec<f32> = matched
            .iter()
            .zip(tfs.chunks_exact(width))
            .map(|(&i, f)| bm25.score(&idf, f, self.lengths[i] as usize, avgdl))
            .collect();
        text::Bm25::finish_scores(scores, |j| self.rows[matched[j]].id, &idf, limit)
    }

    /// BM25 over one user's postings of the query's `wanted` terms (id, position among the
    /// query's terms, of `width`), term at a time into one accumulator per row of the user:
    /// first each term's document frequency among the rows `live` accepts (asked once a
    /// row), then, with the idf known, the scores. A term's part is added in query order, as
    /// [`Bm25::score`](text::Bm25::score) adds them, so the scores are the same numbers.
    fn bm25_postings(
        &self,
        user: &UserRows,
        wanted: &[(u32, usize)],
        width: usize,
        live: impl Fn(usize) -> bool,
        (n_docs, avgdl): (usize, f32),
        limit: usize,
    ) -> Vec<Scored> {
        let mut df = vec![0usize; width];
        let lists: Vec<(&[(u32, f32)], usize)> = wanted
            .iter()
            .filter_map(|&(id, k)| Some((user.postings.get(&id)?.as_slice(), k)))
            .collect();
        // Per position in the user's rows: 0 not seen yet, -1 not live, else its score so
        // far (1 while the frequencies are counted).
        const DEAD: f32 = -1.0;
        let mut acc = vec![0.0f32; user.rows.len()];
        let mut seen: Vec<u32> = Vec::new();
        for &(list, k) in &lists {
            for &(p, _) in list {
                let a = &mut acc[p as usize];
                if *a == 0.0 {
                    *a = if live(user.rows[p as usize] as usize) {
                        seen.push(p);
                        1.0
                    } else {
                        DEAD
                    };
                }
                if *a > 0.0 {
                    df[k] += 1;
                }
            }
        }
        let idf: Vec<f32> = df.iter().map(|&d| text::idf(n_docs, d)).collect();
        for &p in &seen {
            acc[p as usize] = 0.0;
        }
        let bm25 = text::Bm25::default();
        // (A row not live adds up too, but is not among those seen.)
        for &(list, k) in &lists {
            for &(p, f) in list {
                let len = self.lengths[user.rows[p as usize] as usize] as usize;
                acc[p as usize] += bm25.term(idf[k], f, bm25.norm(len, avgdl));
            }
        }
        let scores: Vec<f32> = seen.iter().map(|&p| acc[p as usize]).collect();
        let row = |j: usize| user.rows[seen[j] as usize] as usize;
        text::Bm25::finish_scores(scores, |j| self.rows[row(j)].id, &idf, limit)
    }
}

impl Part {
    fn new(cache: PartitionCache, budget: usize, grown: &Arc<AtomicBool>) -> Self {
        Self {
            bytes: AtomicUsize::new(cache.bytes()),
            data: RwLock::new(cache),
            ann: OnceLock::new(),
            ann_started: AtomicBool::new(false),
            ann_searches: AtomicU64::new(0),
            graph_bytes: AtomicUsize::new(0),
            budget,
            kept: AtomicBool::new(false),
            last_used: AtomicU64::new(0),
            grown: Arc::clone(grown),
        }
    }

    /// Its bytes per row (estimated, graph excluded).
    pub(crate) fn bytes_per_row(&self) -> usize {
        self.bytes.load(Ordering::Relaxed) / self.read().rows.len().max(1)
    }

    /// Marks it used at `tick`.
    fn used(&self, tick: u64) {
        self.last_used.fetch_max(tick, Ordering::Relaxed);
    }

    /// Its bytes (estimated), graph included.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed) + self.graph_bytes.load(Ordering::Relaxed)
    }

    fn read(&self) -> RwLockReadGuard<'_, PartitionCache> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the HNSW graph is built.
    pub(crate) fn ann_ready(&self) -> bool {
        self.ann.get().is_some()
    }

    /// Whether the HNSW graph is being built.
    pub(crate) fn ann_building(&self) -> bool {
        self.ann_started.load(Ordering::Relaxed) && !self.ann_ready()
    }

    /// How many searches the graph answered.
    pub(crate) fn ann_searches(&self) -> u64 {
        self.ann_searches.load(Ordering::Relaxed)
    }

    /// The ids of the first `take` live records after `after` that pass `filter` (which
    /// names `session`), in id order.
    pub(crate) fn session_page(
        &self,
        filter: &Filter,
        session: &str,
        after: Option<MemoryId>,
        take: usize,
        now: Timestamp,
    ) -> Vec<MemoryId> {
        self.read()
            .session_page(filter, session, after, take, now.as_millis())
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
                // Only a copy the cache keeps gets a graph, and only if both fit the budget.
                None if self.kept.load(Ordering::Relaxed)
                    && self.bytes() + data.graph_bytes() <= self.budget
                    && !self.ann_started.swap(true, Ordering::AcqRel) =>
                {
                    let me = Arc::clone(self);
                    let _ =
                        std::thread::Builder::new()
                            .name("muisti-ann".into())
                            .spawn(move || {
                                // The vectors are copied under the lock; the graph is built
                                // without it, so writes are not held up.
                                let (input, covered, graph_bytes) = {
                                    let data = me.read();
                                    (data.ann_input(), data.rows.len(), data.graph_bytes())
                                };
                                if me.ann.set((build_ann(&input), covered)).is_ok() {
                                    me.graph_bytes.store(graph_bytes, Ordering::Relaxed);
                                    me.grown.store(true, Ordering::Relaxed);
                                }
                            });
                }
                None => {}
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
        self.bytes.store(data.bytes(), Ordering::Relaxed);
        data.dead <= 1_000.max(data.rows.len() / 4)
    }

    /// Applies this process's committed delete of `id`; `false` if the copy has so many
    /// dead rows that it should be loaded afresh instead.
    fn kill(&self, id: &MemoryId) -> bool {
        let mut data = self.data.write().unwrap_or_else(|p| p.into_inner());
        data.kill(id);
        self.bytes.store(data.bytes(), Ordering::Relaxed);
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

/// Rows scored against a query vector: each row with its vector's slot, and its score.
#[derive(Default)]
struct Scores {
    rows: Vec<(usize, usize)>,
    scores: Vec<f32>,
}

/// The rows a filter can match ([`PartitionCache::scope`]).
enum Scope<'a> {
    /// One user's.
    Rows(std::slice::Iter<'a, u32>),
    /// Every row.
    All(std::ops::Range<usize>),
}

impl Iterator for Scope<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Scope::Rows(rows) => rows.next().map(|&i| i as usize),
            Scope::All(rows) => rows.next(),
        }
    }
}

/// What is left of `filter` to check on the rows [`PartitionCache::scope`] yields: `None`
/// when it asks for nothing but the user (then only liveness is checked).
fn rest_of(filter: &Filter) -> Option<std::borrow::Cow<'_, Filter>> {
    let rest = if filter.user_id.is_some() {
        std::borrow::Cow::Owned(Filter {
            user_id: None,
            ..filter.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(filter)
    };
    (*rest != Filter::default()).then_some(rest)
}

/// Which rows of a partition a copy holds: all of them, or one user's (enough for every query
/// that filters by that user, and read in milliseconds where a large partition takes
/// seconds).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Rows {
    All,
    User(String),
}

impl Rows {
    /// The copy a query with this user filter reads (when no copy of every row is loaded).
    fn for_user(user: Option<&str>) -> Self {
        user.map_or(Rows::All, |u| Rows::User(u.to_owned()))
    }

    /// Whether a record of this user belongs in such a copy.
    fn holds(&self, user: Option<&str>) -> bool {
        match self {
            Rows::All => true,
            Rows::User(u) => user == Some(u.as_str()),
        }
    }
}

type Key = (Partition, Rows);

/// What a copy being loaded missed: this process's writes and accesses committed after the
/// load's snapshot, applied to the copy before anyone reads it.
enum Missed {
    Write(Box<Fresh>),
    Access(Vec<MemoryId>),
    Delete(MemoryId),
}

/// A copy being loaded.
struct Loading {
    ticket: u64,
    /// Whether the load's snapshot is being taken or taken: only then are changes recorded
    /// (the ones before are in the snapshot).
    armed: bool,
    missed: Vec<Missed>,
    done: Arc<Done>,
    /// The bytes held for it in the budget while it loads (background loads).
    reserved: usize,
}

/// A load's outcome, for the callers that wait for it instead of loading the same rows.
#[derive(Default)]
pub(crate) struct Done {
    /// `None` while loading; then the copy, or `None` if the load failed or was cancelled.
    slot: Mutex<Option<Option<Arc<Part>>>>,
    ready: Condvar,
}

impl Done {
    fn set(&self, part: Option<Arc<Part>>) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(part);
        self.ready.notify_all();
    }

    /// The loaded copy, or `None` if the load failed or was cancelled (then load again).
    pub(crate) fn wait(&self) -> Option<Arc<Part>> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(out) = slot.as_ref() {
                return out.clone();
            }
            slot = self.ready.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[derive(Default)]
struct State {
    /// `PRAGMA data_version` of the writer connection when the cache was last validated.
    data_version: Option<i64>,
    parts: HashMap<Key, Arc<Part>>,
    loading: HashMap<Key, Loading>,
    next_ticket: u64,
    /// Partitions whose copy of every row was asked for in the background (once until
    /// their copies are dropped).
    warming: std::collections::HashSet<Partition>,
}

impl State {
    /// Whether no copy is kept or loading (then writes and accesses concern none).
    fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.loading.is_empty()
    }

    /// Drops every copy and cancels every load that `drop` selects.
    fn drop_where(&mut self, drop: impl Fn(&Key) -> bool) {
        self.parts.retain(|k, _| !drop(k));
        self.warming.retain(|p| !drop(&(p.clone(), Rows::All)));
        self.loading.retain(|k, l| {
            let keep = !drop(k);
            if !keep {
                l.done.set(None);
            }
            keep
        });
    }
}

/// The default cache budget: 2 GiB.
pub(crate) const CACHE_BUDGET: usize = 2 << 30;

/// The share of the budget the decoded records get on top of it (one 32nd: 64 MiB of the
/// default budget, a hundred thousand conversation turns or so).
const RECORDS_SHARE: usize = 32;

/// The in-memory copies, within a memory budget: the least recently used copies are dropped
/// to make room, a copy larger than the whole budget answers the query that loaded it and is
/// not kept, and a graph is built only where it fits.
pub(crate) struct PartitionCaches {
    state: Mutex<State>,
    /// Decoded records, kept in step by the same hooks as the copies.
    records: RecordCache,
    budget: usize,
    /// Set when a copy grew (its graph was built): the budget is enforced on the next look-up.
    grown: Arc<AtomicBool>,
    clock: AtomicU64,
}

/// What [`PartitionCaches::lookup`] found.
pub(crate) enum Lookup<'a> {
    /// A loaded copy that answers the query.
    Ready(Arc<Part>),
    /// Another caller is loading it.
    Wait(Arc<Done>),
    /// The caller loads it: [`LoadTicket::arm`] while holding the writer connection, then
    /// take the snapshot, load, [`LoadTicket::finish`].
    Load(LoadTicket<'a>),
}

/// A load in progress; dropped unfinished (an error), it is abandoned.
pub(crate) struct LoadTicket<'a> {
    caches: &'a PartitionCaches,
    key: Key,
    ticket: u64,
    done: Arc<Done>,
    finished: bool,
}

impl LoadTicket<'_> {
    /// The rows to load.
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// This load's entry, unless it was cancelled (dropped, or replaced by a later load).
    fn entry<'s>(&self, s: &'s mut State) -> Option<&'s mut Loading> {
        s.loading
            .get_mut(&self.key)
            .filter(|l| l.ticket == self.ticket)
    }

    /// Holds `bytes` of the budget for the copy while it loads: the copies kept meanwhile
    /// make room for it (least recently used first), so loading it does not take the cache
    /// past the budget.
    pub(crate) fn reserve(&self, bytes: usize) {
        let mut s = self.caches.lock();
        if let Some(l) = self.entry(&mut s) {
            l.reserved = bytes;
        }
        self.caches.enforce(&mut s);
    }

    /// Starts recording the changes the load misses. Call while no write of this process can
    /// commit (holding the writer connection), right before the load's snapshot is taken.
    pub(crate) fn arm(&self) {
        if let Some(l) = self.entry(&mut self.caches.lock()) {
            l.armed = true;
        }
    }

    /// The loaded copy with what it missed applied, kept if it was not cancelled meanwhile
    /// and fits the budget.
    pub(crate) fn finish(mut self, mut cache: PartitionCache) -> Arc<Part> {
        self.finished = true;
        let caches = self.caches;
        let mut s = caches.lock();
        if self.entry(&mut s).is_none() {
            // Cancelled: the copy answers the caller's query (its snapshot is older than
            // whatever cancelled it) and is not kept.
            return Arc::new(Part::new(cache, caches.budget, &caches.grown));
        }
        let Some(loading) = s.loading.remove(&self.key) else {
            unreachable!("checked above")
        };
        for m in loading.missed {
            match m {
                // Every write to the partition was recorded: the copy takes those of its
                // rows (a one-user copy also the records that moved to another user).
                Missed::Write(f) => {
                    if f.concerns(&self.key.1) {
                        cache.replace(*f);
                    }
                }
                Missed::Access(ids) => cache.count_access(&ids),
                Missed::Delete(id) => {
                    cache.kill(&id);
                }
            }
        }
        let part = Arc::new(Part::new(cache, caches.budget, &caches.grown));
        part.used(caches.tick());
        caches.keep(&mut s, self.key.clone(), &part);
        loading.done.set(Some(Arc::clone(&part)));
        part
    }
}

impl Drop for LoadTicket<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut s = self.caches.lock();
        if self.entry(&mut s).is_some() {
            s.loading.remove(&self.key);
        }
        self.done.set(None);
    }
}

impl PartitionCaches {
    /// Copies within `budget` bytes (estimated).
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            state: Mutex::default(),
            records: RecordCache::new(budget / RECORDS_SHARE),
            budget,
            grown: Arc::default(),
            clock: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `part` under `key` if it fits the budget, dropping the least recently used
    /// copies to make room; a copy of every row replaces the partition's one-user copies.
    fn keep(&self, s: &mut State, key: Key, part: &Arc<Part>) {
        if key.1 == Rows::All {
            s.parts.retain(|(p, _), _| p != &key.0);
        }
        if part.bytes() > self.budget {
            return;
        }
        part.kept.store(true, Ordering::Relaxed);
        s.parts.insert(key, Arc::clone(part));
        self.enforce(s);
    }

    /// Drops the least recently used copies until the rest fit the budget.
    fn enforce(&self, s: &mut State) {
        let mut total: usize = s.parts.values().map(|p| p.bytes()).sum::<usize>()
            + s.loading.values().map(|l| l.reserved).sum::<usize>();
        while total > self.budget {
            let Some(oldest) = s
                .parts
                .iter()
                .min_by_key(|(_, p)| p.last_used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(p) = s.parts.remove(&oldest) {
                p.kept.store(false, Ordering::Relaxed);
                total = total.saturating_sub(p.bytes());
            }
        }
    }

    /// The budget, in bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Whether the background load of `p`'s copy of every row is to start now (`false` if
    /// it was already asked for).
    pub(crate) fn start_warming(&self, p: &Partition) -> bool {
        self.lock().warming.insert(p.clone())
    }

    /// Whether the copy of every row of `p` is kept.
    pub(crate) fn holds_all(&self, p: &Partition) -> bool {
        self.lock().parts.contains_key(&(p.clone(), Rows::All))
    }

    /// The bytes the kept copies hold (estimated), graphs included.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().parts.values().map(|p| p.bytes()).sum()
    }

    /// Forgets one partition's copies (after this process deleted from it), and the
    /// decoded records.
    pub(crate) fn invalidate(&self, p: &Partition) {
        self.records.clear();
        self.lock().drop_where(|(q, _)| q == p);
    }

    /// Forgets everything.
    pub(crate) fn invalidate_all(&self) {
        self.records.clear();
        self.lock().drop_where(|_| true);
    }

    /// The decoded records, kept in step with this process's writes by the hooks here.
    pub(crate) fn records(&self) -> &RecordCache {
        &self.records
    }

    /// Forgets everything if another process wrote since `data_version` (`None`: not
    /// checked this time). The store checks once when it opens, before anything is kept, so
    /// that the writes of this process kept before its first read are not forgotten then.
    pub(crate) fn validate(&self, data_version: Option<i64>) {
        let mut s = self.lock();
        self.validate_locked(&mut s, data_version);
    }

    fn validate_locked(&self, s: &mut State, data_version: Option<i64>) {
        if let Some(v) = data_version
            && s.data_version != Some(v)
        {
            s.data_version = Some(v);
            s.drop_where(|_| true);
            self.records.clear();
        }
    }

    /// Adds one access at `at` to each id in the tenant's copies and decoded records. Call
    /// while the writer connection is still held (after the commit), so loads record exactly
    /// the accesses they missed.
    pub(crate) fn count_access(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) {
        self.records.touch(tenant, ids, at);
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        for (_, part) in s.parts.iter().filter(|((p, _), _)| &p.tenant == tenant) {
            part.read().count_access(ids);
        }
        for (_, l) in s
            .loading
            .iter_mut()
            .filter(|((p, _), l)| &p.tenant == tenant && l.armed)
        {
            l.missed.push(Missed::Access(ids.to_vec()));
        }
    }

    /// Applies committed writes of this process to the copies that hold their records, and
    /// records them for the loads that missed them. Call while the writer connection is still
    /// held, so copies see writes in commit order.
    pub(crate) fn apply(&self, fresh: Vec<Fresh>) {
        self.records.keep(fresh.iter().map(|f| &*f.memory));
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        let mut by_key: HashMap<Key, Vec<Fresh>> = HashMap::new();
        for f in fresh {
            // The copy of every row, its user's, and the one of the user of the record it
            // replaced (its user changed).
            let users = [
                f.row.owner.user_id.clone(),
                f.replaced_user.clone().flatten(),
            ];
            let keys = std::iter::once(Rows::All)
                .chain(users.into_iter().flatten().map(Rows::User))
                .map(|rows| (f.partition.clone(), rows));
            for key in keys {
                if s.parts.contains_key(&key) && f.concerns(&key.1) {
                    by_key.entry(key).or_default().push(f.clone());
                }
            }
            for (_, l) in s
                .loading
                .iter_mut()
                .filter(|((p, _), l)| p == &f.partition && l.armed)
            {
                l.missed.push(Missed::Write(Box::new(f.clone())));
            }
        }
        for (key, fresh) in by_key {
            if let Some(part) = s.parts.get(&key)
                && !part.apply(fresh)
            {
                s.parts.remove(&key);
            }
        }
    }

    /// Applies a committed delete of this process to the copies that hold the record (the
    /// partition's and its user's), in place, and records it for the loads that missed it.
    /// Call while the writer connection is still held, as [`PartitionCaches::apply`].
    pub(crate) fn delete(&self, p: &Partition, id: MemoryId, user: Option<&str>) {
        self.records.forget(&[id]);
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        let keys = std::iter::once(Rows::All)
            .chain(user.map(|u| Rows::User(u.to_owned())))
            .map(|rows| (p.clone(), rows));
        for key in keys {
            if let Some(part) = s.parts.get(&key)
                && !part.kill(&id)
            {
                s.parts.remove(&key);
            }
        }
        for (_, l) in s.loading.iter_mut().filter(|((q, _), l)| q == p && l.armed) {
            l.missed.push(Missed::Delete(id));
        }
    }

    /// The partition's copies.
    pub(crate) fn peek(&self, p: &Partition) -> Vec<Arc<Part>> {
        self.lock()
            .parts
            .iter()
            .filter(|((q, _), _)| q == p)
            .map(|(_, part)| Arc::clone(part))
            .collect()
    }

    /// The rescoring fields of these ids from the partition's copies: per id, `None` if no
    /// copy holds it, else its fields if live.
    pub(crate) fn rank_fields(
        &self,
        p: &Partition,
        ids: &[MemoryId],
        now: Timestamp,
    ) -> Vec<Option<Option<RankFields>>> {
        // The copy of every row, or the one-user copies most recently used first (the
        // search that found these ids used one of them).
        let all = self.lock().parts.get(&(p.clone(), Rows::All)).cloned();
        let parts = match all {
            Some(all) => vec![all],
            None => {
                let mut parts = self.peek(p);
                parts.sort_by_key(|c| std::cmp::Reverse(c.last_used.load(Ordering::Relaxed)));
                parts
            }
        };
        ids.iter()
            .map(|id| parts.iter().find_map(|c| c.read().rank_field(id, now)))
            .collect()
    }

    /// The kept copy that answers a query over `p` filtered by `user`, if one is loaded
    /// (none is loaded for it), checking first as [`PartitionCaches::lookup`] does.
    pub(crate) fn loaded(
        &self,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Option<Arc<Part>> {
        self.kept(&mut self.lock(), p, user, data_version)
    }

    /// [`PartitionCaches::loaded`] on the locked state.
    fn kept(
        &self,
        s: &mut State,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Option<Arc<Part>> {
        self.validate_locked(s, data_version);
        if self.grown.swap(false, Ordering::Relaxed) {
            self.enforce(s);
        }
        let all = (p.clone(), Rows::All);
        let key = (p.clone(), Rows::for_user(user));
        [&all, &key].into_iter().find_map(|k| {
            let part = s.parts.get(k)?;
            part.used(self.tick());
            Some(Arc::clone(part))
        })
    }

    /// The copy that answers a query over `p` filtered by `user` (the partition's copy of
    /// every row when loaded, else the user's), checking first that no other process wrote
    /// since `data_version` (`None`: not checked this time).
    pub(crate) fn lookup(
        &self,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Lookup<'_> {
        let mut s = self.lock();
        if let Some(part) = self.kept(&mut s, p, user, data_version) {
            return Lookup::Ready(part);
        }
        let key = (p.clone(), Rows::for_user(user));
        if let Some(l) = s.loading.get(&key) {
            return Lookup::Wait(Arc::clone(&l.done));
        }
        s.next_ticket += 1;
        let ticket = s.next_ticket;
        let done = Arc::new(Done::default());
        s.loading.insert(
            key.clone(),
            Loading {
                ticket,
                armed: false,
                missed: Vec::new(),
                done: Arc::clone(&done),
                reserved: 0,
            },
        );
        Lookup::Load(LoadTicket {
            caches: self,
            key,
            ticket,
            done,
            finished: false,
        })
    }
}
