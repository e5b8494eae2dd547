//! Decoded records by id: recall reads the same memories again and again (its hits, the
//! seeds of its neighbourhood look-ups), and a point read from SQLite with its decoding costs
//! several microseconds a record where a copy from memory costs a fraction of one.
//!
//! Consistency is the in-memory copies' (see the `cache` module): the hooks that keep the
//! copies in step with this process's writes keep this cache in step too (a written or
//! deleted record is forgotten, an access is counted in place, anything wholesale clears
//! it), all while the writer connection is held, so in commit order; a commit by another
//! process, seen in `PRAGMA data_version`, clears it. A read fills the cache only if no
//! change was applied while it read (a generation counter), so a record read before a write
//! committed is never kept after it.

use std::{
    collections::HashMap,
    sync::{Mutex, MutexGuard},
};

use muisti_core::{Memory, MemoryId, Tenant, Timestamp};
use serde_json::Value;

/// The records cache: decoded records within a memory budget.
pub(crate) struct RecordCache {
    inner: Mutex<Inner>,
    budget: usize,
}

#[derive(Default)]
struct Inner {
    records: HashMap<MemoryId, Memory>,
    /// Their bytes (estimated).
    bytes: usize,
    /// Incremented by every change applied: a read that started at another generation does
    /// not fill the cache.
    generation: u64,
}

/// What a look-up found: per id asked, the cached record if it is one of the tenant's and
/// live; and the generation to [`RecordCache::fill`] the others at.
pub(crate) struct Found {
    pub(crate) records: Vec<Option<Memory>>,
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
    /// unless a change was applied since (the read may predate it). Over the budget,
    /// arbitrary records are dropped until a quarter of it is free.
    pub(crate) fn fill(&self, generation: u64, records: &[Memory]) {
        if self.budget == 0 || records.is_empty() {
            return;
        }
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        for m in records {
            let bytes = bytes_of(m);
            if let Some(old) = inner.records.insert(m.id, m.clone()) {
                inner.bytes = inner.bytes.saturating_sub(bytes_of(&old));
            }
            inner.bytes += bytes;
        }
        if inner.bytes > self.budget {
            let keep = self.budget / 4 * 3;
            let Inner { records, bytes, .. } = &mut *inner;
            records.retain(|_, m| {
                if *bytes <= keep {
                    return true;
                }
                *bytes = bytes.saturating_sub(bytes_of(m));
                false
            });
        }
    }

    /// Forgets these records (written or deleted by a commit of this process).
    pub(crate) fn forget(&self, ids: impl IntoIterator<Item = MemoryId>) {
        let mut inner = self.lock();
        inner.generation += 1;
        for id in ids {
            if let Some(old) = inner.records.remove(&id) {
                inner.bytes = inner.bytes.saturating_sub(bytes_of(&old));
            }
        }
    }

    /// Counts an access at `at` on each of these records of the tenant, as the store's
    /// `touch` does: on the records live at `at`, one more access, accessed last at `at`.
    pub(crate) fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) {
        let mut inner = self.lock();
        inner.generation += 1;
        for id in ids {
            if let Some(m) = inner.records.get_mut(id)
                && m.partition.tenant == *tenant
                && !m.is_expired(at)
            {
                m.access_count += 1;
                m.last_accessed_at = Some(at);
            }
        }
    }

    /// Forgets everything (a change too wide to follow record by record, or another
    /// process's commit).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.records.clear();
        inner.bytes = 0;
    }
}

/// The bytes a cached record holds (estimated: its strings and JSON, and a fixed part).
fn bytes_of(m: &Memory) -> usize {
    const FIXED: usize = 512;
    let o = &m.owner;
    FIXED
        + json_bytes(&m.content)
        + m.context.as_ref().map_or(0, String::len)
        + m.key.as_str().len()
        + [&o.user_id, &o.agent_id, &o.session_id]
            .into_iter()
            .flatten()
            .map(String::len)
            .sum::<usize>()
        + m.tags.iter().map(|t| t.len() + 24).sum::<usize>()
        + m.metadata
            .iter()
            .map(|(k, v)| k.len() + json_bytes(v) + 48)
            .sum::<usize>()
        + m.content_hash.len()
        + m.embedding_model.as_ref().map_or(0, String::len)
}

/// The heap bytes of a JSON value (estimated).
pub(crate) fn json_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(|x| json_bytes(x) + 32).sum(),
        Value::Object(o) => o.iter().map(|(k, x)| k.len() + json_bytes(x) + 48).sum(),
        _ => 0,
    }
}
