//! In-process copies of partitions for stores shared by many processes: the records of a
//! partition with their term counts and vectors, answering full-text and vector search,
//! rescoring fields and reads by id, at a known version of the partition.
//!
//! The backend defines the version `V` and keeps copies coherent: every transaction that
//! changes a partition also advances its version and logs the ids it changed, in the same
//! transaction; before a copy answers, the backend reads the version (one round trip) and,
//! when the copy is behind, catches it up by reading again the records logged since (or
//! reloads it when the log no longer reaches back). Its own writes are applied in place when
//! they directly follow the copy's version ([`Copies::apply`]). A copy confirmed less than a
//! window ago may answer without asking ([`Copies::recent`]): that window is the staleness
//! bound across processes. Expired records stay in a copy until it is reloaded and are
//! skipped by every read (expiry is judged by the store's clock, as on every read path).
//!
//! Scoring is the engine's: BM25 by [`Bm25::rank_counts`] from each record's
//! [`term_counts`], vectors quantised to `i8` and compared by their exact integer dot
//! products ([`QueryI8`], as SQLite's copies do); a user-filtered search reads only that
//! user's records, and one filtered by the user alone takes the user's kept statistics and
//! the postings' rows. Records are held shared: a read by id hands out the copy's own.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, RwLock, atomic::AtomicU64},
    time::{Duration, Instant},
};

use muisti_core::{
    Filter, IdMap, IdSet, Memory, MemoryId, Partition, RankFields, ReadRun, Scored, Timestamp,
    quant::{QueryI8, quantize_into},
    text::{Bm25, CorpusStats, TermCounts, search_terms, term_counts, top_scored},
};

/// The records holding one term, with its counts in each (text, context).
type Posting = IdMap<(u32, u32)>;

/// One record in a copy: the record, its terms (by the copy's term number, sorted) with
/// their counts in the indexed text and the context, its length in terms, its vector
/// (quantised, with its scale).
struct Row {
    memory: Arc<Memory>,
    terms: Vec<(u32, u32, u32)>,
    len: u32,
    vector: Option<(Vec<i8>, f32)>,
    /// [`Row::estimate`], made once when the row is.
    bytes: usize,
}

impl Row {
    /// An estimate of the heap the row takes in a copy, with its share of the copy's
    /// indexes (key, user, postings).
    fn estimate(&self) -> usize {
        let m = &self.memory;
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let content = match &m.content {
            serde_json::Value::String(s) => s.len(),
            other => other.to_string().len(),
        };
        std::mem::size_of::<Self>()
            + content
            + text(&m.context)
            + 2 * m.key.as_str().len()
            + text(&m.owner.user_id)
            + text(&m.owner.agent_id)
            + text(&m.owner.session_id)
            + m.tags.iter().map(|t| t.len() + 24).sum::<usize>()
            + m.metadata.len() * 64
            + m.content_hash.len()
            + text(&m.embedding_model)
            // Each term: its entry in the row and in the postings.
            + self.terms.len() * (12 + 48)
            + self.vector.as_ref().map_or(0, |(v, _)| v.len() + 4)
            // The key, user and id index entries.
            + 96
    }

    /// The counts of a term (by number) in the indexed text and the context.
    fn counts(&self, term: u32) -> (u32, u32) {
        match self.terms.binary_search_by_key(&term, |t| t.0) {
            Ok(i) => (self.terms[i].1, self.terms[i].2),
            Err(_) => (0, 0),
        }
    }
}

/// One user's records in a copy, with their statistics: a search filtered by the user
/// alone needs no scan for its corpus statistics.
#[derive(Default)]
struct UserRows {
    ids: IdSet,
    total_len: u64,
    expiring: usize,
}

/// A partition's records as of version `version` of the partition.
pub struct Copy<V> {
    version: V,
    rows: IdMap<Row>,
    /// Key → id of the record there.
    by_key: HashMap<String, MemoryId>,
    /// User → the user's records: a user-filtered search reads only those.
    by_user: HashMap<String, UserRows>,
    /// Session → its records: a conversation's records are listed without a scan.
    by_session: HashMap<String, IdSet>,
    /// Term → its number in this copy (rows keep numbers: a search hashes its own terms
    /// once, not once per row).
    term_numbers: HashMap<String, u32>,
    /// Per term number, the records holding it with their counts: an unfiltered search
    /// reads the records holding a query term, not every record.
    postings: Vec<Posting>,
    /// The rows' lengths summed, and how many rows can expire: with neither a filter nor
    /// anything that expires, these are the corpus statistics without a scan.
    total_len: u64,
    expiring: usize,
    /// The rows' estimated bytes ([`Row::estimate`]), summed.
    bytes: usize,
}

impl<V> Copy<V> {
    /// A copy of `records` (with their vectors) at `version`.
    pub fn new(version: V, records: impl IntoIterator<Item = (Memory, Option<Vec<f32>>)>) -> Self {
        let mut copy = Self {
            version,
            rows: IdMap::default(),
            by_key: HashMap::new(),
            by_user: HashMap::new(),
            by_session: HashMap::new(),
            term_numbers: HashMap::new(),
            postings: Vec::new(),
            total_len: 0,
            expiring: 0,
            bytes: 0,
        };
        for (m, v) in records {
            let row = copy.row(m, v.as_deref());
            copy.insert(row);
        }
        copy
    }

    /// A row of `memory`, its terms numbered (new terms get new numbers), its vector
    /// quantised.
    fn row(&mut self, memory: Memory, vector: Option<&[f32]>) -> Row {
        let (counts, len) = term_counts(&memory.index_text(), memory.context.as_deref());
        let mut terms: Vec<(u32, u32, u32)> = counts
            .into_iter()
            .map(|(t, (tf, ctx))| {
                let next = self.term_numbers.len() as u32;
                (*self.term_numbers.entry(t).or_insert(next), tf, ctx)
            })
            .collect();
        terms.sort_unstable();
        let vector = vector.map(|v| {
            let mut q = Vec::with_capacity(v.len());
            let scale = quantize_into(v, &mut q);
            (q, scale)
        });
        let mut row = Row {
            memory: Arc::new(memory),
            terms,
            len,
            vector,
            bytes: 0,
        };
        row.bytes = row.estimate();
        row
    }

    /// Adds a row, replacing the row of the same id and the row at the same key.
    fn insert(&mut self, row: Row) {
        let id = row.memory.id;
        self.remove(id);
        if let Some(&other) = self.by_key.get(row.memory.key.as_str()) {
            self.remove(other);
        }
        self.by_key.insert(row.memory.key.as_str().to_owned(), id);
        if let Some(user) = &row.memory.owner.user_id {
            let owned = self.by_user.entry(user.clone()).or_default();
            owned.ids.insert(id);
            owned.total_len += u64::from(row.len);
            owned.expiring += usize::from(row.memory.expires_at.is_some());
        }
        if let Some(session) = &row.memory.owner.session_id {
            self.by_session
                .entry(session.clone())
                .or_default()
                .insert(id);
        }
        for &(n, tf, ctx) in &row.terms {
            let n = n as usize;
            if self.postings.len() <= n {
                self.postings.resize_with(n + 1, Posting::default);
            }
            self.postings[n].insert(id, (tf, ctx));
        }
        self.total_len += u64::from(row.len);
        self.expiring += usize::from(row.memory.expires_at.is_some());
        self.bytes += row.bytes;
        self.rows.insert(id, row);
    }

    /// The version the copy holds.
    pub fn version(&self) -> &V {
        &self.version
    }

    /// Moves the copy to a later version, after its changes were applied.
    pub fn caught_up(&mut self, version: V) {
        self.version = version;
    }

    /// Records a write of `memory` with its vector (or none).
    pub fn upsert(&mut self, memory: Memory, vector: Option<&[f32]>) {
        let row = self.row(memory, vector);
        self.insert(row);
    }

    /// Records a delete.
    pub fn remove(&mut self, id: MemoryId) {
        let Some(row) = self.rows.remove(&id) else {
            return;
        };
        self.by_key.remove(row.memory.key.as_str());
        if let Some(user) = &row.memory.owner.user_id
            && let Some(owned) = self.by_user.get_mut(user)
        {
            owned.ids.remove(&id);
            owned.total_len -= u64::from(row.len);
            owned.expiring -= usize::from(row.memory.expires_at.is_some());
            if owned.ids.is_empty() {
                self.by_user.remove(user);
            }
        }
        if let Some(session) = &row.memory.owner.session_id
            && let Some(ids) = self.by_session.get_mut(session)
        {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_session.remove(session);
            }
        }
        for &(n, _, _) in &row.terms {
            if let Some(posting) = self.postings.get_mut(n as usize) {
                posting.remove(&id);
            }
        }
        self.total_len -= u64::from(row.len);
        self.expiring -= usize::from(row.memory.expires_at.is_some());
        self.bytes -= row.bytes;
    }

    /// Counts `n` more accesses of the record with `id`, the last at `at` (what a store's
    /// `touch` did, applied without reading the record again).
    pub fn count_access(&mut self, id: MemoryId, n: u64, at: Timestamp) {
        if let Some(row) = self.rows.get_mut(&id) {
            let m = Arc::make_mut(&mut row.memory);
            m.access_count = m.access_count.saturating_add(n);
            m.last_accessed_at = Some(m.last_accessed_at.map_or(at, |t| t.max(at)));
        }
    }

    /// Records new access statistics of a record (nothing else changed).
    pub fn touched(&mut self, memory: &Memory) {
        if let Some(row) = self.rows.get_mut(&memory.id) {
            // Readers holding the record keep theirs: this copies it once when one does.
            let m = Arc::make_mut(&mut row.memory);
            m.access_count = memory.access_count;
            m.last_accessed_at = memory.last_accessed_at;
        }
    }

    /// The live rows that pass `filter`: of its user's or its session's records when it
    /// names one, else of every record.
    fn live<'a>(&'a self, filter: &'a Filter, now: Timestamp) -> impl Iterator<Item = &'a Row> {
        let indexed = match (&filter.user_id, &filter.session_id) {
            (Some(user), _) => Some(self.by_user.get(user).map(|u| &u.ids)),
            (None, Some(session)) => Some(self.by_session.get(session)),
            (None, None) => None,
        };
        let scope: Box<dyn Iterator<Item = &'a Row>> = match indexed {
            Some(ids) => Box::new(ids.into_iter().flatten().filter_map(|id| self.rows.get(id))),
            None => Box::new(self.rows.values()),
        };
        scope.filter(move |r| !r.memory.is_expired(now) && filter.matches(r.memory.as_ref()))
    }

    /// The live records that pass `filter` with an id after `after`, in id order, at most
    /// `limit` of them: a page of [`muisti_core::Store::list`] (ask for one more than the
    /// page to know whether there is a next).
    pub fn list(
        &self,
        filter: &Filter,
        after: Option<MemoryId>,
        limit: usize,
        now: Timestamp,
    ) -> Vec<Memory> {
        let mut rows: Vec<&Row> = self
            .live(filter, now)
            .filter(|r| after.is_none_or(|a| r.memory.id > a))
            .collect();
        if rows.len() > limit {
            rows.select_nth_unstable_by_key(limit, |r| r.memory.id);
            rows.truncate(limit);
        }
        rows.sort_unstable_by_key(|r| r.memory.id);
        rows.into_iter().map(|r| Memory::clone(&r.memory)).collect()
    }

    /// How many live records pass `filter`.
    pub fn count(&self, filter: &Filter, now: Timestamp) -> usize {
        self.live(filter, now).count()
    }

    /// BM25 over the live rows that pass `filter`, with their statistics: the same
    /// definition ([`Bm25::rank_counts`]) as the SQL backends use.
    pub fn text_search(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        // A misspelled word is corrected to the searched rows' own words only.
        let holds = |t: &str| {
            let posting = self
                .term_numbers
                .get(t)
                .and_then(|&n| self.postings.get(n as usize));
            posting.is_some_and(|p| {
                p.keys().any(|id| {
                    self.rows.get(id).is_some_and(|r| {
                        !r.memory.is_expired(now) && filter.matches(r.memory.as_ref())
                    })
                })
            })
        };
        let terms = search_terms(query, holds);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        // A term no row holds counts 0 everywhere.
        let numbers: Vec<Option<u32>> = terms
            .iter()
            .map(|t| self.term_numbers.get(t).copied())
            .collect();
        // Every row counts, or every row of one user: the statistics are kept, the
        // candidates are the postings' rows (of that user).
        let user_only = filter.user_id.as_ref().filter(|_| {
            *filter
                == Filter {
                    user_id: filter.user_id.clone(),
                    ..Filter::default()
                }
        });
        let kept = match user_only {
            Some(user) => match self.by_user.get(user) {
                Some(u) if u.expiring == 0 => Some((u.ids.len() as u64, u.total_len, Some(user))),
                Some(_) => None,
                None => return Vec::new(),
            },
            None if *filter == Filter::default() && self.expiring == 0 => {
                Some((self.rows.len() as u64, self.total_len, None))
            }
            None => None,
        };
        if let Some((docs, total_len, user)) = kept {
            let stats = CorpusStats { docs, total_len };
            let postings: Vec<(usize, &Posting)> = numbers
                .iter()
                .enumerate()
                .filter_map(|(k, n)| Some((k, self.postings.get((*n)? as usize)?)))
                .collect();
            let most = postings.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
            let mut by_id: IdMap<TermCounts> =
                IdMap::with_capacity_and_hasher(most, Default::default());
            for (k, posting) in postings {
                for (id, &(tf, ctx)) in posting {
                    let Some(row) = self.rows.get(id) else {
                        continue;
                    };
                    if user.is_some() && row.memory.owner.user_id.as_ref() != user {
                        continue;
                    }
                    let c = by_id.entry(*id).or_insert_with(|| TermCounts {
                        id: *id,
                        len: row.len,
                        content: vec![0; terms.len()],
                        context: vec![0; terms.len()],
                    });
                    c.content[k] = tf;
                    c.context[k] = ctx;
                }
            }
            return Bm25::default().rank_counts(by_id.into_values(), &terms, stats, limit);
        }
        let mut stats = CorpusStats {
            docs: 0,
            total_len: 0,
        };
        let mut candidates = Vec::new();
        for row in self.live(filter, now) {
            stats.docs += 1;
            stats.total_len += u64::from(row.len);
            let counts: Vec<(u32, u32)> = numbers
                .iter()
                .map(|n| n.map_or((0, 0), |n| row.counts(n)))
                .collect();
            if counts.iter().any(|&(a, b)| a + b > 0) {
                candidates.push(TermCounts {
                    id: row.memory.id,
                    len: row.len,
                    content: counts.iter().map(|c| c.0).collect(),
                    context: counts.iter().map(|c| c.1).collect(),
                });
            }
        }
        Bm25::default().rank_counts(candidates, &terms, stats, limit)
    }

    /// The nearest vectors of the live rows that pass `filter` (of the query's length), by
    /// their quantised dot products with the query, best first.
    pub fn vector_search(
        &self,
        vector: &[f32],
        filter: &Filter,
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        if limit == 0 || vector.is_empty() {
            return Vec::new();
        }
        let q = QueryI8::new(vector);
        let rows: Vec<(MemoryId, &[i8], f32)> = self
            .live(filter, now)
            .filter_map(|r| {
                let (v, scale) = r.vector.as_ref()?;
                (v.len() == vector.len()).then_some((r.memory.id, v.as_slice(), *scale))
            })
            .collect();
        let mut dots = Vec::with_capacity(rows.len());
        q.dots(rows.iter().map(|(_, v, _)| *v), &mut dots);
        let mut scored: Vec<Scored> = rows
            .iter()
            .zip(dots)
            .map(|((id, _, scale), dot)| Scored {
                id: *id,
                score: q.scale(*scale) * dot as f32,
            })
            .collect();
        top_scored(&mut scored, limit);
        scored
    }

    /// The rescoring fields of the live records with these ids, in the order given.
    pub fn rank_fields(&self, ids: &[MemoryId], now: Timestamp) -> Vec<RankFields> {
        ids.iter()
            .filter_map(|id| self.rows.get(id))
            .filter(|r| !r.memory.is_expired(now))
            .map(|r| RankFields::of(&r.memory))
            .collect()
    }

    /// The live record with this id.
    pub fn get(&self, id: &MemoryId, now: Timestamp) -> Option<Memory> {
        self.get_shared(id, now).map(|m| Memory::clone(&m))
    }

    /// The live record with this id, as the copy holds it (never changed once handed out).
    pub fn get_shared(&self, id: &MemoryId, now: Timestamp) -> Option<Arc<Memory>> {
        self.rows
            .get(id)
            .filter(|r| !r.memory.is_expired(now))
            .map(|r| Arc::clone(&r.memory))
    }

    /// The records held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// An estimate of the memory the copy takes, in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// How long a partition found too large for a copy is searched in the database before it is
/// counted again.
const TOO_LARGE_FOR: Duration = Duration::from_secs(60);

/// The copies of one store handle, least recently used dropped first past a memory budget.
pub struct Copies<V> {
    inner: Mutex<Held<V>>,
    budget: usize,
    /// Partitions found larger than the budget, and when: searched in the database for a
    /// while ([`TOO_LARGE_FOR`]) before they are counted again.
    too_large: Mutex<HashMap<Partition, Instant>>,
    /// Copies loaded whole (the backend counts them).
    pub loads: AtomicU64,
    /// Copies caught up from a change log (the backend counts them).
    pub catch_ups: AtomicU64,
}

/// A copy shared between readers and the writer that catches it up.
pub type Shared<V> = Arc<RwLock<Copy<V>>>;

/// A held copy: the copy, its last use (a tick), and when its version was last confirmed:
/// the instant and the read run ([`ReadRun`]) it was confirmed in (`None`: to be checked
/// before its next use).
type Entry<V> = (Shared<V>, u64, Option<Confirmed>);

/// When a copy's version was last found current.
#[derive(Clone, Copy)]
struct Confirmed {
    at: Instant,
    run: Option<u64>,
}

impl Confirmed {
    fn now() -> Self {
        Self {
            at: Instant::now(),
            run: ReadRun::current(),
        }
    }

    /// Whether a copy confirmed then may answer without asking: within `window`, or in the
    /// read run open now (whose first look stands for its later reads).
    fn holds(&self, window: Duration) -> bool {
        (!window.is_zero() && self.at.elapsed() < window)
            || self.run.is_some() && self.run == ReadRun::current()
    }
}

struct Held<V> {
    copies: HashMap<Partition, Entry<V>>,
    /// Ticks of use, for least-recently-used eviction.
    clock: u64,
    /// This process's writes so far ([`Copies::apply`], [`Copies::unconfirm_all`]): a read
    /// begun before a write it may not have seen confirms nothing ([`WriteMark`]).
    writes: u64,
}

/// How many of this process's writes had been applied to the copies when a reader began
/// reading a partition's version ([`Copies::mark`]). A write that commits after the read
/// began and finds no copy held (or a copy the reader then replaces) cannot mark that
/// copy; so a copy is confirmed or kept as current only when no write came between.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[must_use]
pub struct WriteMark(u64);

impl<V: Clone> Copies<V> {
    /// No copies; at most `budget` bytes held (estimated; 0: none kept).
    pub fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::new(Held {
                copies: HashMap::new(),
                clock: 0,
                writes: 0,
            }),
            budget,
            too_large: Mutex::new(HashMap::new()),
            loads: AtomicU64::new(0),
            catch_ups: AtomicU64::new(0),
        }
    }

    /// The most bytes the copies hold together (estimated).
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether a copy of `p` may be held: copies are kept at all (a budget above 0), and `p`
    /// was not found too large for them lately ([`Copies::fits`]).
    pub fn may_hold(&self, p: &Partition) -> bool {
        if self.budget == 0 {
            return false;
        }
        let mut known = self.too_large.lock().unwrap_or_else(|e| e.into_inner());
        match known.get(p) {
            Some(at) if at.elapsed() < TOO_LARGE_FOR => false,
            Some(_) => {
                known.remove(p);
                true
            }
            None => true,
        }
    }

    /// Whether a copy of `p`, which holds `records` records, fits the budget (by the bytes
    /// per record of the copies held); when it does not, `p` is noted as too large, so
    /// [`Copies::may_hold`] answers no for a while without counting again.
    pub fn fits(&self, p: &Partition, records: usize) -> bool {
        if records.saturating_mul(self.bytes_per_record()) <= self.budget {
            return true;
        }
        self.too_large
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(p.clone(), Instant::now());
        false
    }

    /// The live records of `ids` in `tenant`, in the order given: those the tenant's copies
    /// confirmed within `window` (or in this read run) hold, from them; the others from
    /// `read` (called once, with the ids no such copy holds, unless there are none). What
    /// neither has is left out.
    pub fn get_many_shared(
        &self,
        tenant: &muisti_core::Tenant,
        ids: &[MemoryId],
        window: Duration,
        now: Timestamp,
        read: impl FnOnce(&[MemoryId]) -> muisti_core::Result<Vec<Memory>>,
    ) -> muisti_core::Result<Vec<Arc<Memory>>> {
        let mut found: HashMap<MemoryId, Arc<Memory>> = HashMap::new();
        for (_, copy, _, recent) in self.held_for(tenant, window) {
            if recent {
                let copy = copy.read().unwrap_or_else(|e| e.into_inner());
                found.extend(
                    ids.iter()
                        .filter_map(|id| copy.get_shared(id, now))
                        .map(|m| (m.id, m)),
                );
            }
        }
        let missing: Vec<MemoryId> = ids
            .iter()
            .filter(|id| !found.contains_key(id))
            .copied()
            .collect();
        if !missing.is_empty() {
            found.extend(read(&missing)?.into_iter().map(|m| (m.id, Arc::new(m))));
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// The estimated bytes per record of the copies held (4 KiB when none are held): to
    /// judge before loading whether a partition would fit.
    pub fn bytes_per_record(&self) -> usize {
        let held = self.held_guard();
        let (bytes, records) = held.copies.values().fold((0, 0), |(b, r), (c, _, _)| {
            let c = c.read().unwrap_or_else(|e| e.into_inner());
            (b + c.bytes(), r + c.len())
        });
        bytes.checked_div(records).unwrap_or(4096)
    }

    fn held_guard(&self) -> std::sync::MutexGuard<'_, Held<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy of `p`, if one is held (whatever its version).
    pub fn held(&self, p: &Partition) -> Option<Shared<V>> {
        let mut held = self.held_guard();
        held.clock += 1;
        let tick = held.clock;
        let (copy, used, _) = held.copies.get_mut(p)?;
        *used = tick;
        Some(Arc::clone(copy))
    }

    /// The writes applied so far: taken before reading a partition's version, and given to
    /// [`Copies::confirmed`] or [`Copies::keep`] after.
    pub fn mark(&self) -> WriteMark {
        WriteMark(self.held_guard().writes)
    }

    /// Notes that `copy`, `p`'s copy, was found to hold the current version by a read
    /// begun at `since`; when this process wrote meanwhile, the read may predate the write,
    /// and the copy checks again before its next use. A copy that another reader replaced
    /// meanwhile is not `p`'s any more, and its confirmation confirms nothing.
    pub fn confirmed(&self, p: &Partition, copy: &Shared<V>, since: WriteMark) {
        let mut held = self.held_guard();
        let current = held.writes == since.0;
        if let Some((kept, _, confirmed)) = held.copies.get_mut(p)
            && Arc::ptr_eq(kept, copy)
        {
            *confirmed = current.then(Confirmed::now);
        }
    }

    /// The copy of `p` if its version was confirmed less than `window` ago, or in the read
    /// run open on this thread ([`ReadRun`]: one look at the others' commits a run). (This
    /// process's writes since are in it: [`Copies::apply`] applies them or makes the copy
    /// check first, as [`Copies::unconfirm_all`] does.)
    pub fn recent(&self, p: &Partition, window: Duration) -> Option<Shared<V>> {
        let mut held = self.held_guard();
        held.clock += 1;
        let tick = held.clock;
        let (copy, used, confirmed) = held.copies.get_mut(p)?;
        if confirmed.is_some_and(|c| c.holds(window)) {
            *used = tick;
            Some(Arc::clone(copy))
        } else {
            None
        }
    }

    /// Keeps `copy` for `p` (unless it is larger than the whole budget), dropping the least
    /// recently used copies until the rest fit. The copy was read by a read begun at
    /// `since`: confirmed current unless this process wrote meanwhile ([`Copies::confirmed`]).
    pub fn keep(&self, p: &Partition, copy: Copy<V>, since: WriteMark) -> Shared<V> {
        let size = copy.bytes();
        let copy = Arc::new(RwLock::new(copy));
        if size > self.budget {
            return copy;
        }
        let mut held = self.held_guard();
        held.clock += 1;
        let tick = held.clock;
        held.copies.remove(p);
        let mut total: usize = held
            .copies
            .values()
            .map(|(c, _, _)| c.read().unwrap_or_else(|e| e.into_inner()).bytes())
            .sum();
        while total + size > self.budget {
            let Some(oldest) = held
                .copies
                .iter()
                .min_by_key(|(_, (_, used, _))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((c, _, _)) = held.copies.remove(&oldest) {
                total -= c.read().unwrap_or_else(|e| e.into_inner()).bytes();
            }
        }
        let confirmed = (held.writes == since.0).then(Confirmed::now);
        held.copies
            .insert(p.clone(), (Arc::clone(&copy), tick, confirmed));
        copy
    }

    /// Applies this process's write to `p`'s copy: `follows` gives the copy's version after
    /// the write when the write directly follows the copy's version (nothing else changed
    /// the partition between); otherwise the copy must check its version before its next
    /// use (and catch up), so this process reads its own write even inside the window.
    pub fn apply(
        &self,
        p: &Partition,
        follows: impl FnOnce(&V) -> Option<V>,
        edit: impl FnOnce(&mut Copy<V>),
    ) {
        let Some(shared) = ({
            let mut held = self.held_guard();
            held.writes += 1;
            held.copies.get(p).map(|(c, _, _)| Arc::clone(c))
        }) else {
            return;
        };
        let mut copy = shared.write().unwrap_or_else(|e| e.into_inner());
        match follows(&copy.version) {
            Some(next) => {
                edit(&mut copy);
                copy.version = next;
            }
            None => {
                drop(copy);
                if let Some((held, _, confirmed)) = self.held_guard().copies.get_mut(p)
                    && Arc::ptr_eq(held, &shared)
                {
                    *confirmed = None;
                }
            }
        }
    }

    /// Makes every copy check its version before its next use: for a backend whose own
    /// writes are not applied in place, so that they are read at once.
    pub fn unconfirm_all(&self) {
        let mut held = self.held_guard();
        held.writes += 1;
        for (_, _, confirmed) in held.copies.values_mut() {
            *confirmed = None;
        }
    }

    /// Drops `p`'s copy.
    pub fn drop_copy(&self, p: &Partition) {
        self.held_guard().copies.remove(p);
    }

    /// The copies of a tenant's partitions held now, with their versions and whether each
    /// was confirmed less than `window` ago or in this thread's read run (to look records
    /// up by id).
    pub fn held_for(
        &self,
        tenant: &muisti_core::Tenant,
        window: Duration,
    ) -> Vec<(Partition, Shared<V>, V, bool)> {
        self.held_guard()
            .copies
            .iter()
            .filter(|(p, _)| &p.tenant == tenant)
            .map(|(p, (c, _, confirmed))| {
                let v = c.read().unwrap_or_else(|e| e.into_inner()).version.clone();
                let recent = confirmed.is_some_and(|c| c.holds(window));
                (p.clone(), Arc::clone(c), v, recent)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use muisti_core::{Namespace, Put};

    fn record(p: &Partition, key: &str, text: &str) -> Memory {
        Put::new(
            p.clone(),
            Some(muisti_core::Key::new(key).expect("key")),
            text,
        )
        .apply(None, Timestamp::from_millis(1))
    }

    fn version(copies: &Copies<i64>, p: &Partition) -> Option<i64> {
        copies.held(p).map(|c| *c.read().expect("lock").version())
    }

    fn next(new: i64) -> impl FnOnce(&i64) -> Option<i64> {
        move |have| (*have + 1 == new).then_some(new)
    }

    #[test]
    fn a_copy_applies_only_the_next_version() {
        let p = Partition::of(Namespace::default_ns());
        let copies = Copies::new(1 << 20);
        copies.keep(
            &p,
            Copy::new(3, [(record(&p, "a", "lisbon"), None)]),
            copies.mark(),
        );
        copies.apply(&p, next(4), |c| c.upsert(record(&p, "b", "porto"), None));
        assert_eq!(version(&copies, &p), Some(4));
        let copy = copies.held(&p).expect("held");
        let hits = copy.read().expect("lock").text_search(
            "porto",
            &Filter::default(),
            5,
            Timestamp::from_millis(2),
        );
        assert_eq!(hits.len(), 1);
        // A version skipped (another process wrote): left for the next read to catch up,
        // which it must do before answering, even inside a staleness window.
        let window = Duration::from_secs(60);
        assert!(copies.recent(&p, window).is_some());
        copies.apply(&p, next(6), |c| c.remove(hits[0].id));
        assert_eq!(version(&copies, &p), Some(4));
        assert!(copies.recent(&p, window).is_none());
        assert_eq!(copy.read().expect("lock").len(), 2);
    }

    /// A copy read before this process's write, which found no copy to apply to (or a
    /// copy the read then replaced), is kept but checked before its next use: the write
    /// is read at once, even inside a staleness window.
    #[test]
    fn a_copy_read_before_a_write_is_not_taken_as_current() {
        let p = Partition::of(Namespace::default_ns());
        let window = Duration::from_secs(60);
        let copies = Copies::new(1 << 20);
        let since = copies.mark();
        copies.apply(&p, next(4), |c| c.upsert(record(&p, "b", "porto"), None));
        copies.keep(&p, Copy::new(3, [(record(&p, "a", "lisbon"), None)]), since);
        assert!(copies.held(&p).is_some());
        assert!(copies.recent(&p, window).is_none());
        // Confirmed by a read begun after the write, it answers within the window.
        let kept = copies.held(&p).expect("held");
        copies.confirmed(&p, &kept, copies.mark());
        assert!(copies.recent(&p, window).is_some());
        // A backend that unconfirms on writes: a confirmation by a read begun before the
        // write does not stick either.
        let since = copies.mark();
        copies.unconfirm_all();
        copies.confirmed(&p, &kept, since);
        assert!(copies.recent(&p, window).is_none());
        // With no write between, reads confirm as before.
        let since = copies.mark();
        copies.keep(&p, Copy::new(4, [(record(&p, "a", "lisbon"), None)]), since);
        assert!(copies.recent(&p, window).is_some());
        // A copy replaced meanwhile (by another reader's keep) is not confirmed in its place:
        // the one kept stays as its reader left it.
        let since = copies.mark();
        copies.unconfirm_all();
        copies.keep(&p, Copy::new(3, [(record(&p, "a", "lisbon"), None)]), since);
        copies.confirmed(&p, &kept, copies.mark());
        assert!(copies.recent(&p, window).is_none());
    }

    /// Records by id come from a confirmed copy where it holds them and from the reader for
    /// the rest (asked once, for exactly those), in the order asked; a partition too large
    /// for the budget is not held again for a while, and no partition is with no budget.
    #[test]
    fn records_by_id_from_copies_then_the_reader_and_partitions_too_large() {
        let p = Partition::of(Namespace::default_ns());
        let copies = Copies::new(1 << 20);
        let held = record(&p, "a", "lisbon");
        copies.keep(&p, Copy::new(1, [(held.clone(), None)]), copies.mark());
        let other = record(&p, "b", "porto");
        let absent = MemoryId::generate();
        let asked = std::cell::RefCell::new(Vec::new());
        let got = copies
            .get_many_shared(
                &p.tenant,
                &[other.id, held.id, absent],
                Duration::from_secs(60),
                Timestamp::from_millis(2),
                |missing| {
                    asked.borrow_mut().extend_from_slice(missing);
                    Ok(vec![other.clone()])
                },
            )
            .expect("read");
        let ids: Vec<MemoryId> = got.iter().map(|m| m.id).collect();
        assert_eq!(ids, vec![other.id, held.id]);
        assert_eq!(*asked.borrow(), vec![other.id, absent]);
        assert!(copies.may_hold(&p));
        assert!(copies.fits(&p, 10));
        assert!(!copies.fits(&p, 1 << 30));
        assert!(!copies.may_hold(&p), "noted as too large");
        assert!(!Copies::<i64>::new(0).may_hold(&p), "no budget, no copies");
    }

    /// The unfiltered path (postings, kept statistics) and the scanning path score alike,
    /// after rows were replaced and removed too.
    #[test]
    fn postings_and_scan_score_alike() {
        let p = Partition::of(Namespace::default_ns());
        let texts = [
            "Alice moved to Lisbon last spring",
            "Bruno visited Lisbon and Porto",
            "Chen loves Porto in March",
            "Dana works at a bakery in Berlin",
            "Lisbon Lisbon Lisbon",
        ];
        let mut copy = Copy::new(
            0,
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (record(&p, &format!("k{i}"), t), None)),
        );
        copy.upsert(record(&p, "k3", "Dana moved to Porto"), None);
        let gone = copy.by_key["k1"];
        copy.remove(gone);
        let now = Timestamp::from_millis(2);
        let everything = Filter {
            created_after: Some(Timestamp::from_millis(0)),
            ..Filter::default()
        };
        for q in ["lisbon", "porto moved", "bakery", "nothing here"] {
            let fast = copy.text_search(q, &Filter::default(), 10, now);
            let scan = copy.text_search(q, &everything, 10, now);
            assert_eq!(fast, scan, "{q}");
        }
        assert!(
            !copy
                .text_search("porto", &Filter::default(), 10, now)
                .is_empty()
        );
    }

    #[test]
    fn a_write_at_a_key_replaces_the_row_there() {
        let p = Partition::of(Namespace::default_ns());
        let mut copy = Copy::new(0, [(record(&p, "a", "lisbon"), None)]);
        copy.upsert(record(&p, "a", "porto"), None);
        let now = Timestamp::from_millis(2);
        assert!(
            copy.text_search("lisbon", &Filter::default(), 5, now)
                .is_empty()
        );
        assert_eq!(copy.len(), 1);
    }

    #[test]
    fn the_least_recently_used_copy_goes_first() {
        let a = Partition::of(Namespace::new("a").expect("ns"));
        let b = Partition::of(Namespace::new("b").expect("ns"));
        let c = Partition::of(Namespace::new("c").expect("ns"));
        let one = |p: &Partition| Copy::new(1, [(record(p, "k", "x"), None)]);
        // Room for two such copies.
        let copies = Copies::new(one(&a).bytes() * 2);
        copies.keep(&a, one(&a), copies.mark());
        copies.keep(&b, one(&b), copies.mark());
        assert!(copies.held(&a).is_some());
        copies.keep(&c, one(&c), copies.mark());
        assert!(copies.held(&b).is_none());
        assert!(copies.held(&a).is_some());
        assert!(copies.held(&c).is_some());
    }
}
