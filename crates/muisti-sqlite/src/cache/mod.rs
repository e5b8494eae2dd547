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

mod caches;
mod part;

pub(crate) use caches::{Done, LoadTicket, PartitionCaches, Rows};
use part::{Scope, Scores, rest_of};

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
    /// Whether each user's rows get their own inverted index ([`UserRows::postings`]): in
    /// a copy of many users a user's query then visits only that user's rows holding its
    /// terms; in one user's copy the forward index already is that user's, and building
    /// postings was half of a first load's work (one list per distinct term).
    user_postings: bool,
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
    /// The heap bytes of the rows' strings, tags and metadata (and of the sessions' names).
    heap: usize,
    /// The heap bytes of the terms' names and of the users' postings.
    text_heap: usize,
    /// A row's terms while [`PartitionCache::push_as`] sums their repeats.
    scratch: Vec<(u32, f32)>,
}

/// One user's rows in a copy, and their inverted index: a user-filtered full-text query
/// visits the rows holding its terms, not every row of the user.
#[derive(Default)]
struct UserRows {
    rows: Vec<u32>,
    /// Term id → the positions in `rows` of the user's rows holding it (ascending), with its
    /// weighted frequency there; empty in a one-user copy
    /// ([`PartitionCache::user_postings`]).
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

/// The bytes of in-memory copies (estimated), by what they are for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyMemory {
    /// The rows' fields (filters and rescoring), the index by id and by session.
    pub rows: usize,
    /// The quantised vectors and their scales.
    pub vectors: usize,
    /// The full-text terms: the forward index, the terms' ids and the users' postings.
    pub text: usize,
}

impl CopyMemory {
    /// All of them.
    pub fn total(&self) -> usize {
        self.rows + self.vectors + self.text
    }
}

impl std::ops::AddAssign for CopyMemory {
    fn add_assign(&mut self, o: Self) {
        self.rows += o.rows;
        self.vectors += o.vectors;
        self.text += o.text;
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

/// A row's vector as a load hands it to the copy.
#[derive(Clone, Copy)]
pub(crate) enum RowVector<'a> {
    /// As stored: the copy quantises it.
    Plain(&'a [f32]),
    /// Already quantised (the `i8` values' bytes), with its scale.
    Quantized(&'a [u8], f32),
}

impl RowVector<'_> {
    fn len(&self) -> usize {
        match self {
            RowVector::Plain(v) => v.len(),
            RowVector::Quantized(q, _) => q.len(),
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
            user_postings: true,
            ..Self::default()
        }
    }

    /// This (empty) copy as one user's: no per-user postings (see
    /// [`PartitionCache::user_postings`]).
    pub(crate) fn one_user(mut self) -> Self {
        self.user_postings = false;
        self
    }

    /// An empty copy as [`PartitionCache::new`] for about `rows` rows: a load that knows
    /// how many it reads sizes the lists once instead of growing them (each growth of a
    /// large list is a fresh allocation the system must zero).
    pub(crate) fn with_capacity(ann_threshold: usize, rows: usize) -> Self {
        let mut copy = Self::new(ann_threshold);
        copy.rows.reserve_exact(rows);
        copy.index.reserve(rows);
        copy.scales.reserve(rows);
        copy.vector_of.reserve(rows);
        copy.lengths.reserve(rows);
        copy.term_start.reserve(rows + 1);
        copy
    }

    /// How many rows it holds (never-live ones included).
    #[cfg(test)]
    pub(crate) fn rows_len(&self) -> usize {
        self.rows.len()
    }

    /// Each row's access count, in row order.
    #[cfg(test)]
    pub(crate) fn access_counts(&self) -> Vec<u64> {
        self.rows
            .iter()
            .map(|r| r.access_count.load(Ordering::Relaxed))
            .collect()
    }

    /// The last row's vector as the copy holds it (quantised, with its scale), if it has
    /// one.
    pub(crate) fn last_vector(&self) -> Option<(&[i8], f32)> {
        let (slot, v) = self.vector(self.rows.len().checked_sub(1)?)?;
        Some((v, self.scales[slot]))
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
        self.push_as(row, vector.map(RowVector::Plain), terms, context_terms);
    }

    /// [`PartitionCache::push`] with the vector as it comes: as stored, or already
    /// quantised (from a copy the store kept).
    pub(crate) fn push_as(
        &mut self,
        row: CachedRow,
        vector: Option<RowVector<'_>>,
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
            let len = v.len();
            if self.scales.is_empty() {
                // The rows it was sized for (`with_capacity`), each with a vector.
                self.dim = len;
                self.data.reserve(self.rows.capacity().saturating_mul(len));
            }
            if len == self.dim && self.dim > 0 {
                slot = Some(self.scales.len() as u32);
                let scale = match v {
                    RowVector::Plain(v) => quantize_into(v, &mut self.data),
                    RowVector::Quantized(q, scale) => {
                        self.data.extend(q.iter().map(|&b| i8::from_le_bytes([b])));
                        scale
                    }
                };
                self.scales.push(scale);
            }
        }
        self.vector_of.push(slot);
        if self.term_start.is_empty() {
            self.term_start.push(0);
        }
        // The row's terms by id in a list the copy reuses, sorted and their repeats summed
        // there, then appended: no map or list of its own per row (a load pushes a row in
        // a few microseconds, and each allocation there showed in its profile).
        let mut own = std::mem::take(&mut self.scratch);
        own.clear();
        let mut len = 0;
        for (field, weight) in [(terms, 1.0), (context_terms.unwrap_or(""), CONTEXT_WEIGHT)] {
            for t in field.split(' ').filter(|t| !t.is_empty()) {
                len += 1;
                let id = match self.term_ids.get(t) {
                    Some(&id) => id,
                    None => {
                        let id = self.term_ids.len() as u32;
                        self.term_ids.insert(t.to_owned(), id);
                        self.text_heap += t.len();
                        id
                    }
                };
                own.push((id, weight));
            }
        }
        self.lengths.push(len);
        own.sort_unstable_by_key(|(t, _)| *t);
        own.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        let expires = self.rows[i as usize].expires_at.is_some();
        self.totals.count(len, expires, 1);
        if let Some(u) = &self.rows[i as usize].owner.user_id {
            // Looked up before the key is cloned: a load pushes one user's rows in turn.
            let user = match self.by_user.get_mut(u) {
                Some(user) => user,
                None => {
                    self.text_heap += u.len() + 48 + USER_ROWS_BYTES;
                    self.by_user.entry(u.clone()).or_default()
                }
            };
            let position = user.rows.len() as u32;
            user.rows.push(i);
            user.totals.count(len, expires, 1);
            if self.user_postings {
                for &(t, f) in &own {
                    let list = user.postings.entry(t).or_insert_with(|| {
                        self.text_heap += POSTINGS_KEY_BYTES;
                        Vec::new()
                    });
                    list.push((position, f));
                    self.text_heap += size_of::<(u32, f32)>();
                }
            }
        }
        self.terms.extend_from_slice(&own);
        self.term_start.push(self.terms.len() as u32);
        self.scratch = own;
    }

    /// The bytes the copy holds (estimated from its lengths and capacities).
    pub(crate) fn bytes(&self) -> usize {
        self.memory().total()
    }

    /// The bytes the copy holds by what they are for (estimated from its lengths and
    /// capacities).
    pub(crate) fn memory(&self) -> CopyMemory {
        use std::mem::size_of;
        CopyMemory {
            rows: self.rows.capacity() * size_of::<CachedRow>()
                + self.index.capacity() * (size_of::<(MemoryId, u32)>() + 1)
                + self.by_session.capacity() * (size_of::<(String, Vec<u32>)>() + 1)
                + self.heap,
            vectors: self.data.capacity()
                + self.scales.capacity() * size_of::<f32>()
                + self.vector_of.capacity() * size_of::<Option<u32>>(),
            text: self.lengths.capacity() * size_of::<u32>()
                + self.term_ids.capacity() * (size_of::<(String, u32)>() + 1)
                + self.terms.capacity() * size_of::<(u32, f32)>()
                + self.term_start.capacity() * size_of::<u32>()
                + self.by_user.capacity() * (size_of::<(String, UserRows)>() + 1)
                // Each row's place in its user's rows and in its session's.
                + self.rows.len() * 2 * size_of::<u32>()
                + self.text_heap,
        }
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

    /// Whether a row live at `now` that passes `filter` holds `term`: the words a search
    /// may correct a misspelled query word to (the searched rows' own, never another
    /// user's). A search of the whole partition takes the partition's words as they are
    /// (a scan per word would cost more than the search).
    pub(crate) fn holds(&self, filter: &Filter, term: &str, now: Timestamp) -> bool {
        let Some(&id) = self.term_ids.get(term) else {
            return false;
        };
        if filter.user_id.is_none() {
            return true;
        }
        let now = now.as_millis();
        let rest = rest_of(filter);
        let rest = rest.as_deref();
        self.scope(filter).any(|i| {
            let own = &self.terms[self.term_start[i] as usize..self.term_start[i + 1] as usize];
            own.binary_search_by_key(&id, |(t, _)| *t).is_ok() && self.live(i, rest, now)
        })
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
        if let Some(user) = filter
            .user_id
            .as_ref()
            .filter(|_| self.user_postings)
            .and_then(|u| self.by_user.get(u))
        {
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

/// The default cache budget: 2 GiB.
pub(crate) const CACHE_BUDGET: usize = 2 << 30;

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
