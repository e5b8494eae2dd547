//! In-process copies of partitions, kept coherent with Redis by a generation counter.
//!
//! Every transaction that changes a partition's records also `INCR`s the partition's
//! generation key, in the same `MULTI`, so a generation names one state of the partition.
//! A copy remembers the generation it holds. Before a search answers from a copy, the store
//! reads the generation (one `GET`): equal, the copy is exactly what Redis holds (no write
//! from any process has committed since); different, the copy is dropped and reloaded. A
//! load reads the generation before and after reading the records, and keeps the copy only
//! if both agree. So a search never answers from a state older than the last write committed
//! before it started, at the cost of one round trip.
//!
//! This process's own writes are applied to a copy in place when the generation their
//! transaction produced is the copy's plus one (no other write came between); otherwise the
//! copy is dropped.
//!
//! `staleness_ms` (default 1) lets a copy whose generation was confirmed less than that long
//! ago answer without asking again, so the several reads of one recall (full text, vectors,
//! rescoring fields, records) cost one round trip, not four. A write committed by another
//! process is then seen by every read that starts at least that long after it; this
//! process's own writes are seen at once. `staleness_ms=0` checks on every read. Expired
//! records stay in a copy until it is reloaded and are skipped by
//! every read (expiry is judged by the store's clock, as on every read path).

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use muisti_core::{
    Filter, Memory, MemoryId, Partition, RankFields, Scored, Timestamp,
    text::{Bm25, CorpusStats, TermCounts, nearest, query_terms, term_counts},
};

/// One record in a copy: the record, its terms with their counts in the indexed text and the
/// context, its length in terms, its vector.
struct Row {
    memory: Memory,
    terms: HashMap<String, (u32, u32)>,
    len: u32,
    vector: Option<Vec<f32>>,
}

impl Row {
    fn new(memory: Memory, vector: Option<Vec<f32>>) -> Self {
        let (terms, len) = term_counts(&memory.index_text(), memory.context.as_deref());
        Self {
            memory,
            terms,
            len,
            vector,
        }
    }
}

/// A partition's records as of generation `generation`.
pub(crate) struct Copy {
    generation: i64,
    rows: HashMap<MemoryId, Row>,
    /// Key → id of the record there.
    by_key: HashMap<String, MemoryId>,
    /// User → the user's records: a user-filtered search reads only those.
    by_user: HashMap<String, HashSet<MemoryId>>,
}

impl Copy {
    /// A copy of `records` (with their vectors) at `generation`.
    pub(crate) fn new(
        generation: i64,
        records: impl IntoIterator<Item = (Memory, Option<Vec<f32>>)>,
    ) -> Self {
        let mut copy = Self {
            generation,
            rows: HashMap::new(),
            by_key: HashMap::new(),
            by_user: HashMap::new(),
        };
        for (m, v) in records {
            copy.insert(Row::new(m, v));
        }
        copy
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
            self.by_user.entry(user.clone()).or_default().insert(id);
        }
        self.rows.insert(id, row);
    }

    /// Records a write of `memory` with its vector (or none).
    pub(crate) fn upsert(&mut self, memory: Memory, vector: Option<&[f32]>) {
        self.insert(Row::new(memory, vector.map(<[f32]>::to_vec)));
    }

    /// Records a delete.
    pub(crate) fn remove(&mut self, id: MemoryId) {
        let Some(row) = self.rows.remove(&id) else {
            return;
        };
        self.by_key.remove(row.memory.key.as_str());
        if let Some(user) = &row.memory.owner.user_id
            && let Some(ids) = self.by_user.get_mut(user)
        {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_user.remove(user);
            }
        }
    }

    /// Records new access statistics of a record (nothing else changed).
    pub(crate) fn touched(&mut self, memory: &Memory) {
        if let Some(row) = self.rows.get_mut(&memory.id) {
            row.memory.access_count = memory.access_count;
            row.memory.last_accessed_at = memory.last_accessed_at;
        }
    }

    /// The live rows that pass `filter`.
    fn live<'a>(&'a self, filter: &'a Filter, now: Timestamp) -> impl Iterator<Item = &'a Row> {
        let scope: Box<dyn Iterator<Item = &'a Row>> = match &filter.user_id {
            Some(user) => Box::new(
                self.by_user
                    .get(user)
                    .into_iter()
                    .flatten()
                    .filter_map(|id| self.rows.get(id)),
            ),
            None => Box::new(self.rows.values()),
        };
        scope.filter(move |r| !r.memory.is_expired(now) && filter.matches(&r.memory))
    }

    /// BM25 over the live rows that pass `filter`, with their statistics: the same
    /// definition ([`Bm25::rank_counts`]) as the SQL backends use.
    pub(crate) fn text_search(
        &self,
        query: &str,
        filter: &Filter,
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        let terms = query_terms(query);
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        let mut stats = CorpusStats {
            docs: 0,
            total_len: 0,
        };
        let mut candidates = Vec::new();
        for row in self.live(filter, now) {
            stats.docs += 1;
            stats.total_len += u64::from(row.len);
            let counts: Vec<(u32, u32)> = terms
                .iter()
                .map(|t| row.terms.get(t).copied().unwrap_or_default())
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

    /// The nearest vectors of the live rows that pass `filter`.
    pub(crate) fn vector_search(
        &self,
        vector: &[f32],
        filter: &Filter,
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        nearest(
            self.live(filter, now)
                .filter_map(|r| Some((r.memory.id, r.vector.as_deref()?))),
            vector,
            limit,
        )
    }

    /// The rescoring fields of the live records with these ids, in the order given.
    pub(crate) fn rank_fields(&self, ids: &[MemoryId], now: Timestamp) -> Vec<RankFields> {
        ids.iter()
            .filter_map(|id| self.rows.get(id))
            .filter(|r| !r.memory.is_expired(now))
            .map(|r| RankFields::of(&r.memory))
            .collect()
    }

    /// The live record with this id.
    pub(crate) fn get(&self, id: &MemoryId, now: Timestamp) -> Option<Memory> {
        self.rows
            .get(id)
            .filter(|r| !r.memory.is_expired(now))
            .map(|r| r.memory.clone())
    }

    fn len(&self) -> usize {
        self.rows.len()
    }
}

/// The copies of one store handle, least recently used dropped first past `max_records`.
pub(crate) struct Copies {
    inner: Mutex<Held>,
    max_records: usize,
}

/// A held copy: the copy, its last use (a tick) and when its generation was last confirmed.
type Entry = (Arc<RwLock<Copy>>, u64, Instant);

#[derive(Default)]
struct Held {
    copies: HashMap<Partition, Entry>,
    /// Ticks of use, for least-recently-used eviction.
    clock: u64,
}

impl Copies {
    pub(crate) fn new(max_records: usize) -> Self {
        Self {
            inner: Mutex::new(Held::default()),
            max_records,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The copy of `p` if it holds `generation` (which was just read from Redis).
    pub(crate) fn at(&self, p: &Partition, generation: i64) -> Option<Arc<RwLock<Copy>>> {
        let mut held = self.held();
        held.clock += 1;
        let tick = held.clock;
        let (copy, used, confirmed) = held.copies.get_mut(p)?;
        let fresh = copy.read().unwrap_or_else(|e| e.into_inner()).generation == generation;
        if fresh {
            *used = tick;
            *confirmed = Instant::now();
            Some(Arc::clone(copy))
        } else {
            held.copies.remove(p);
            None
        }
    }

    /// The copy of `p` if its generation was confirmed less than `window` ago. (This
    /// process's writes since are in it: they are applied in place or drop it.)
    pub(crate) fn recent(&self, p: &Partition, window: Duration) -> Option<Arc<RwLock<Copy>>> {
        if window.is_zero() {
            return None;
        }
        let mut held = self.held();
        held.clock += 1;
        let tick = held.clock;
        let (copy, used, confirmed) = held.copies.get_mut(p)?;
        if confirmed.elapsed() < window {
            *used = tick;
            Some(Arc::clone(copy))
        } else {
            None
        }
    }

    /// Keeps `copy` for `p` (unless it is larger than the whole budget), dropping the least
    /// recently used copies until the rest fit.
    pub(crate) fn keep(&self, p: &Partition, copy: Copy) -> Arc<RwLock<Copy>> {
        let size = copy.len();
        let copy = Arc::new(RwLock::new(copy));
        if size > self.max_records {
            return copy;
        }
        let mut held = self.held();
        held.clock += 1;
        let tick = held.clock;
        held.copies.remove(p);
        let mut total: usize = held
            .copies
            .values()
            .map(|(c, _, _)| c.read().unwrap_or_else(|e| e.into_inner()).len())
            .sum();
        while total + size > self.max_records {
            let Some(oldest) = held
                .copies
                .iter()
                .min_by_key(|(_, (_, used, _))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((c, _, _)) = held.copies.remove(&oldest) {
                total -= c.read().unwrap_or_else(|e| e.into_inner()).len();
            }
        }
        held.copies
            .insert(p.clone(), (Arc::clone(&copy), tick, Instant::now()));
        copy
    }

    /// Applies this process's write to `p`'s copy: `generation` is what its transaction's
    /// `INCR` returned. Applied when the copy held the generation before it; left alone when
    /// the copy already holds it or a later one (loaded after the commit); else dropped.
    pub(crate) fn apply(&self, p: &Partition, generation: i64, edit: impl FnOnce(&mut Copy)) {
        let mut held = self.held();
        let Some((copy, _, _)) = held.copies.get(p) else {
            return;
        };
        let mut copy_w = copy.write().unwrap_or_else(|e| e.into_inner());
        if copy_w.generation + 1 == generation {
            edit(&mut copy_w);
            copy_w.generation = generation;
        } else if copy_w.generation < generation {
            drop(copy_w);
            held.copies.remove(p);
        }
    }

    /// Drops `p`'s copy.
    pub(crate) fn drop_copy(&self, p: &Partition) {
        self.held().copies.remove(p);
    }

    /// The copies held now, with their generations (to look records up by id).
    pub(crate) fn held_for(
        &self,
        tenant: &muisti_core::Tenant,
    ) -> Vec<(Partition, Arc<RwLock<Copy>>, i64)> {
        self.held()
            .copies
            .iter()
            .filter(|(p, _)| &p.tenant == tenant)
            .map(|(p, (c, _, _))| {
                let g = c.read().unwrap_or_else(|e| e.into_inner()).generation;
                (p.clone(), Arc::clone(c), g)
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

    #[test]
    fn a_copy_applies_only_the_next_generation() {
        let p = Partition::of(Namespace::default_ns());
        let copies = Copies::new(100);
        copies.keep(&p, Copy::new(3, [(record(&p, "a", "lisbon"), None)]));
        assert!(copies.at(&p, 3).is_some());
        copies.apply(&p, 4, |c| c.upsert(record(&p, "b", "porto"), None));
        let copy = copies.at(&p, 4).expect("held at 4");
        let hits = copy.read().expect("lock").text_search(
            "porto",
            &Filter::default(),
            5,
            Timestamp::from_millis(2),
        );
        assert_eq!(hits.len(), 1);
        // A generation skipped (another process wrote): the copy is dropped.
        copies.apply(&p, 6, |_| {});
        assert!(copies.at(&p, 6).is_none());
        assert!(copies.at(&p, 4).is_none());
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
        let copies = Copies::new(2);
        copies.keep(&a, Copy::new(1, [(record(&a, "k", "x"), None)]));
        copies.keep(&b, Copy::new(1, [(record(&b, "k", "x"), None)]));
        assert!(copies.at(&a, 1).is_some());
        copies.keep(&c, Copy::new(1, [(record(&c, "k", "x"), None)]));
        assert!(copies.at(&b, 1).is_none());
        assert!(copies.at(&a, 1).is_some());
        assert!(copies.at(&c, 1).is_some());
    }
}
