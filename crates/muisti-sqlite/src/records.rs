//! Decoded records by id: recall reads the same memories again and again (its hits, the
//! seeds of its neighbourhood look-ups), and a point read from SQLite with its decoding costs
//! several microseconds a record where a copy from memory costs a fraction of one.
//!
//! Consistency is the in-memory copies' (see the `cache` module): the hooks that keep the
//! copies in step with this process's writes keep this cache in step too (a written or
//! deleted record is forgotten, an access is counted in place, anything wholesale clears
//! it), all while the writer connection is held, so in commit order; a commit by another
//! process, seen in `PRAGMA data_version`, clears it. A read fills the cache only with the
//! records no change was applied to while it read (a generation counter, and the generation
//! of each record's last change), so a record read before a write committed is never kept
//! after it.

use std::sync::{Arc, Mutex, MutexGuard};

use muisti_core::{Filterable, IdMap, Memory, MemoryId, Tenant, Timestamp};
use serde_json::Value;

/// The records cache: decoded records within a memory budget.
pub(crate) struct RecordCache {
    inner: Mutex<Inner>,
    budget: usize,
}

#[derive(Default)]
struct Inner {
    /// Shared with the reads that returned them (a read hands out the record itself, not a
    /// copy; an access counted later copies it if a read still holds it).
    records: IdMap<Arc<Memory>>,
    /// Their bytes (estimated).
    bytes: usize,
    /// Incremented by every change applied.
    generation: u64,
    /// The generation of each record's last change since `floor`: a read that started
    /// before it does not fill the cache with that record (it may predate the change).
    changed: IdMap<u64>,
    /// Reads that started before this generation fill nothing (everything was cleared, or
    /// `changed` was emptied to bound it).
    floor: u64,
}

impl Inner {
    /// Keeps `m`, in place of what was kept under its id.
    fn insert(&mut self, m: Arc<Memory>) {
        let bytes = bytes_of(&m);
        if let Some(old) = self.records.insert(m.id, m) {
            self.bytes = self.bytes.saturating_sub(bytes_of(&old));
        }
        self.bytes += bytes;
    }

    /// Over `budget`, drops arbitrary records until a quarter of it is free.
    fn enforce(&mut self, budget: usize) {
        if self.bytes > budget {
            let keep = budget / 4 * 3;
            let Inner { records, bytes, .. } = self;
            records.retain(|_, m| {
                if *bytes <= keep {
                    return true;
                }
                *bytes = bytes.saturating_sub(bytes_of(m));
                false
            });
        }
    }
}

/// How many changed ids [`Inner::changed`] remembers before it is emptied (and reads under
/// way then fill nothing).
const CHANGED_MAX: usize = 65_536;

impl Inner {
    /// Marks these records changed at a new generation.
    fn changed(&mut self, ids: &[MemoryId]) {
        self.generation += 1;
        if self.changed.len() >= CHANGED_MAX {
            self.changed.clear();
            self.floor = self.generation;
        }
        let generation = self.generation;
        self.changed.extend(ids.iter().map(|id| (*id, generation)));
    }
}

/// What a look-up found: per id asked, the cached record if it is one of the tenant's and
/// live; and the generation to [`RecordCache::fill`] the others at.
pub(crate) struct Found {
    pub(crate) records: Vec<Option<Arc<Memory>>>,
    pub(crate) generation: u64,
}

impl RecordCache {
    /// A cache of at most `budget` bytes (estimated); 0 keeps nothing.
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            inner: Mutex::default(),
            budget,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached records of these ids that are the tenant's and live at `now` (a record
    /// expired since it was cached is left to the database, which answers for it).
    pub(crate) fn get(&self, tenant: &Tenant, ids: &[MemoryId], now: Timestamp) -> Found {
        let inner = self.lock();
        let records = ids
            .iter()
            .map(|id| {
                inner
                    .records
                    .get(id)
                    .filter(|m| m.partition.tenant == *tenant && !m.is_expired(now))
                    .cloned()
            })
            .collect();
        Found {
            records,
            generation: inner.generation,
        }
    }

    /// Keeps these records, read from the database by a read that started at `generation`,
    /// except those changed since (the read may predate the change). Over the budget,
    /// arbitrary records are dropped until a quarter of it is free.
    pub(crate) fn fill(&self, generation: u64, records: &[Arc<Memory>]) {
        if self.budget == 0 || records.is_empty() {
            return;
        }
        let mut inner = self.lock();
        if generation < inner.floor {
            return;
        }
        for m in records {
            if inner.changed.get(&m.id).is_some_and(|g| *g > generation) {
                continue;
            }
            inner.insert(Arc::clone(m));
        }
        inner.enforce(self.budget);
    }

    /// Keeps these records as a commit of this process wrote them (they replace what was
    /// cached, and reads under way, which may have read the rows before the commit, fill
    /// nothing for them). Over the budget, as [`RecordCache::fill`].
    pub(crate) fn keep<'a>(&self, written: impl Iterator<Item = &'a Memory> + Clone) {
        let mut inner = self.lock();
        let ids: Vec<MemoryId> = written.clone().map(|m| m.id).collect();
        inner.changed(&ids);
        if self.budget == 0 {
            for id in &ids {
                if let Some(old) = inner.records.remove(id) {
                    inner.bytes = inner.bytes.saturating_sub(bytes_of(&old));
                }
            }
            return;
        }
        for m in written {
            inner.insert(Arc::new(m.clone()));
        }
        inner.enforce(self.budget);
    }

    /// Forgets these records (deleted by a commit of this process).
    pub(crate) fn forget(&self, ids: &[MemoryId]) {
        let mut inner = self.lock();
        inner.changed(ids);
        for id in ids {
            if let Some(old) = inner.records.remove(id) {
                inner.bytes = inner.bytes.saturating_sub(bytes_of(&old));
            }
        }
    }

    /// Counts an access at `at` on each of these records of the tenant, as the store's
    /// `touch` does: on the records live at `at`, one more access, accessed last at `at`.
    pub(crate) fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) {
        let mut inner = self.lock();
        inner.changed(ids);
        for id in ids {
            if let Some(m) = inner.records.get_mut(id)
                && m.partition.tenant == *tenant
                && !m.is_expired(at)
            {
                let m = Arc::make_mut(m);
                m.access_count += 1;
                m.last_accessed_at = Some(at);
            }
        }
    }

    /// The bytes the records kept hold (estimated), and the budget they are kept within.
    pub(crate) fn bytes(&self) -> (usize, usize) {
        (self.lock().bytes, self.budget)
    }

    /// Forgets everything (a change too wide to follow record by record, or another
    /// process's commit).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.floor = inner.generation;
        inner.changed.clear();
        inner.records.clear();
        inner.bytes = 0;
    }
}

/// The bytes a cached record holds (estimated: its strings and JSON, and a fixed part).
fn bytes_of(m: &Memory) -> usize {
    const FIXED: usize = 512;
    FIXED
        + json_bytes(&m.content)
        + m.context.as_ref().map_or(0, String::len)
        + m.key.as_str().len()
        + m.embedding_model.as_ref().map_or(0, String::len)
        + filter_fields_bytes(m)
}

/// The heap bytes of the fields a filter reads (owner, tags, metadata, content hash),
/// estimated: the one estimate of a decoded record and of a copy's row.
pub(crate) fn filter_fields_bytes(f: &impl Filterable) -> usize {
    let o = f.owner();
    [&o.user_id, &o.agent_id, &o.session_id]
        .into_iter()
        .flatten()
        .map(String::len)
        .sum::<usize>()
        + f.tags().iter().map(|t| t.len() + 24).sum::<usize>()
        + f.content_hash().len()
        + f.metadata()
            .iter()
            .map(|(k, v)| k.len() + json_bytes(v) + 48)
            .sum::<usize>()
}

/// The heap bytes of a JSON value (estimated).
fn json_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(|x| json_bytes(x) + 32).sum(),
        Value::Object(o) => o.iter().map(|(k, x)| k.len() + json_bytes(x) + 48).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use muisti_core::{Namespace, Partition, Put};

    use super::*;

    fn memory(text: &str) -> Memory {
        Put::new(Partition::of(Namespace::default_ns()), None, text)
            .apply(None, Timestamp::from_millis(1))
    }

    fn cached(cache: &RecordCache, m: &Memory) -> bool {
        cache
            .get(&m.partition.tenant, &[m.id], Timestamp::from_millis(2))
            .records[0]
            .is_some()
    }

    /// A read that started before a record changed does not keep that record (it may have
    /// read it before the change), but keeps the others; after a clear it keeps nothing.
    #[test]
    fn a_read_keeps_only_the_records_unchanged_since_it_started() {
        let cache = RecordCache::new(1 << 20);
        let (a, b) = (memory("a"), memory("b"));
        let started = cache.get(
            &a.partition.tenant,
            &[a.id, b.id],
            Timestamp::from_millis(2),
        );
        cache.forget(&[a.id]);
        cache.fill(
            started.generation,
            &[Arc::new(a.clone()), Arc::new(b.clone())],
        );
        assert!(!cached(&cache, &a), "changed while read");
        assert!(cached(&cache, &b));
        let after = cache.get(&a.partition.tenant, &[a.id], Timestamp::from_millis(2));
        cache.fill(after.generation, &[Arc::new(a.clone())]);
        assert!(cached(&cache, &a), "read after the change");
        cache.touch(&a.partition.tenant, &[a.id], Timestamp::from_millis(3));
        let found = cache.get(&a.partition.tenant, &[a.id], Timestamp::from_millis(3));
        assert_eq!(found.records[0].as_ref().map(|m| m.access_count), Some(1));
        let before_clear = found.generation;
        cache.clear();
        cache.fill(before_clear, &[Arc::new(a.clone()), Arc::new(b.clone())]);
        assert!(!cached(&cache, &a) && !cached(&cache, &b), "cleared since");
    }

    /// Over its budget the cache drops records until a quarter of it is free.
    #[test]
    fn the_cache_stays_within_its_budget() {
        let records: Vec<Memory> = (0..100).map(|i| memory(&format!("note {i}"))).collect();
        let per = bytes_of(&records[0]);
        let cache = RecordCache::new(per * 10);
        let generation = cache
            .get(&records[0].partition.tenant, &[], Timestamp::from_millis(2))
            .generation;
        let shared: Vec<Arc<Memory>> = records.iter().cloned().map(Arc::new).collect();
        cache.fill(generation, &shared);
        let kept = records.iter().filter(|m| cached(&cache, m)).count();
        assert!((1..=10).contains(&kept), "{kept} kept");
        assert!(cache.lock().bytes <= per * 10);
    }
}
