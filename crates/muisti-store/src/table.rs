//! One partition's records held in memory: the shared core of the in-process and file
//! stores.

use std::collections::{BTreeMap, HashMap};

use std::sync::{Arc, OnceLock};

use muisti_core::{
    Filter, Key, Limits, ListQuery, Memory, MemoryId, Page, Put, Record, Result, Scored,
    StoredVector, TextQuery, Timestamp, UpdateRequest, VectorChange, WriteStatus, Written,
    text::{Bm25, CONTEXT_WEIGHT, InvertedIndex},
};

/// The records of one partition, indexed by id (ordered) and by key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    by_id: BTreeMap<MemoryId, Memory>,
    by_key: HashMap<Key, MemoryId>,
    /// Vectors by record, with the model that made each.
    vectors: HashMap<MemoryId, (String, Vec<f32>)>,
    /// The full-text index, built on the first search after a change.
    lexical: OnceLock<Arc<InvertedIndex>>,
}

impl Table {
    pub(crate) fn from_records(records: Vec<Memory>, vectors: Vec<StoredVector>) -> Self {
        let mut t = Table::default();
        for m in records {
            t.insert(m);
        }
        for v in vectors {
            if t.by_id.contains_key(&v.id) {
                t.vectors.insert(v.id, (v.model, v.vector));
            }
        }
        t
    }

    /// Every stored vector, of live and expired records alike.
    pub(crate) fn all_vectors(&self) -> impl Iterator<Item = StoredVector> + '_ {
        self.vectors
            .iter()
            .map(|(id, (model, vector))| StoredVector {
                id: *id,
                model: model.clone(),
                vector: vector.clone(),
            })
    }

    /// The vectors of live records that pass `filter`, in id order.
    pub(crate) fn vectors(&self, filter: &Filter, now: Timestamp) -> Vec<StoredVector> {
        self.by_id
            .values()
            .filter(|m| !m.is_expired(now) && filter.matches(m))
            .filter_map(|m| {
                self.vectors.get(&m.id).map(|(model, vector)| StoredVector {
                    id: m.id,
                    model: model.clone(),
                    vector: vector.clone(),
                })
            })
            .collect()
    }

    pub(crate) fn records(&self) -> impl Iterator<Item = &Memory> {
        self.by_id.values()
    }

    pub(crate) fn is_empty(&self, now: Timestamp) -> bool {
        self.by_id.values().all(|m| m.is_expired(now))
    }

    /// BM25 over the live records that pass the query's filter, through the inverted index.
    pub(crate) fn text_search(&self, query: &TextQuery, now: Timestamp) -> Vec<Scored> {
        let index = self.lexical.get_or_init(|| {
            let texts: Vec<(MemoryId, std::borrow::Cow<'_, str>, Option<&str>)> = self
                .by_id
                .values()
                .map(|m| (m.id, m.index_text(), m.context.as_deref()))
                .collect();
            Arc::new(InvertedIndex::build(
                CONTEXT_WEIGHT,
                texts.iter().map(|(id, t, c)| (*id, t.as_ref(), *c)),
            ))
        });
        index.search(&Bm25::default(), &query.query, query.limit, |id| {
            self.by_id
                .get(&id)
                .is_some_and(|m| !m.is_expired(now) && query.filter.matches(m))
        })
    }

    /// Drops the full-text index after a change.
    fn changed(&mut self) {
        self.lexical = OnceLock::new();
    }

    fn insert(&mut self, m: Memory) {
        self.changed();
        if let Some(old) = self.by_key.insert(m.key.clone(), m.id)
            && old != m.id
        {
            self.by_id.remove(&old);
            self.vectors.remove(&old);
        }
        self.by_id.insert(m.id, m);
    }

    /// Applies a validated write. An expired record at the key counts as absent.
    pub(crate) fn put(&mut self, mut put: Put, now: Timestamp) -> Written {
        let vector = put.embedding.take();
        let existing = put
            .key
            .as_ref()
            .and_then(|k| self.get_by_key(k, now))
            .cloned();
        let memory = put.apply(existing.as_ref(), now);
        let status = if existing.is_some() {
            WriteStatus::Updated
        } else {
            WriteStatus::Created
        };
        match (vector, &memory.embedding_model) {
            (Some(v), Some(model)) => {
                self.vectors.insert(memory.id, (model.clone(), v));
            }
            _ => {
                self.vectors.remove(&memory.id);
            }
        }
        self.insert(memory.clone());
        Written { memory, status }
    }

    /// Writes a whole record as it is (see [`Store::import`](muisti_core::Store::import)):
    /// a record here with the same id is replaced, one at the same key with another id
    /// removed; returns that one's id.
    pub(crate) fn import(&mut self, record: Record) -> Option<MemoryId> {
        let Record { memory, vector } = record;
        if let Some(old) = self.by_id.remove(&memory.id)
            && self.by_key.get(&old.key) == Some(&old.id)
        {
            self.by_key.remove(&old.key);
        }
        let displaced = self
            .by_key
            .get(&memory.key)
            .copied()
            .filter(|id| *id != memory.id);
        match (vector, &memory.embedding_model) {
            (Some(v), Some(model)) => {
                self.vectors.insert(memory.id, (model.clone(), v));
            }
            _ => {
                self.vectors.remove(&memory.id);
            }
        }
        self.insert(memory);
        displaced
    }

    /// Applies an update to the live record with `id` (the caller found it here), by
    /// [`UpdateRequest::apply`]. Nothing changes on error.
    pub(crate) fn update(
        &mut self,
        id: MemoryId,
        req: &UpdateRequest,
        now: Timestamp,
        limits: &Limits,
    ) -> Result<Memory> {
        let existing = self.get_by_id(id, now).filter(|m| req.at.addresses(m));
        let (memory, vector) = req.apply(existing, now, limits)?;
        match vector {
            VectorChange::Keep => {}
            VectorChange::Drop => {
                self.vectors.remove(&memory.id);
            }
            VectorChange::Set(v) => {
                let model = memory.embedding_model.clone().unwrap_or_default();
                self.vectors.insert(memory.id, (model, v));
            }
        }
        self.insert(memory.clone());
        Ok(memory)
    }

    pub(crate) fn get_by_key(&self, key: &Key, now: Timestamp) -> Option<&Memory> {
        self.by_key
            .get(key)
            .and_then(|id| self.by_id.get(id))
            .filter(|m| !m.is_expired(now))
    }

    /// The id at `key`, live or expired.
    pub(crate) fn id_of(&self, key: &Key) -> Option<MemoryId> {
        self.by_key.get(key).copied()
    }

    pub(crate) fn get_by_id(&self, id: MemoryId, now: Timestamp) -> Option<&Memory> {
        self.by_id.get(&id).filter(|m| !m.is_expired(now))
    }

    /// Removes the record; returns it if it was live.
    pub(crate) fn remove_id(&mut self, id: MemoryId, now: Timestamp) -> Option<Memory> {
        let m = self.by_id.remove(&id)?;
        self.changed();
        self.by_key.remove(&m.key);
        self.vectors.remove(&id);
        (!m.is_expired(now)).then_some(m)
    }

    pub(crate) fn list(&self, q: &ListQuery, now: Timestamp) -> Page {
        let size = q.page_size();
        let range = match q.after {
            Some(after) => self
                .by_id
                .range((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded)),
            None => self.by_id.range(..),
        };
        let items: Vec<Memory> = range
            .map(|(_, m)| m)
            .filter(|m| !m.is_expired(now) && q.filter.matches(m))
            .take(size + 1)
            .cloned()
            .collect();
        Page::from_sorted(items, size)
    }

    pub(crate) fn count(&self, filter: &Filter, now: Timestamp) -> u64 {
        self.by_id
            .values()
            .filter(|m| !m.is_expired(now) && filter.matches(m))
            .count() as u64
    }

    pub(crate) fn live_len(&self, now: Timestamp) -> u64 {
        self.count(&Filter::default(), now)
    }

    /// Sets the vectors of the given ids present and live here; returns how many.
    pub(crate) fn set_vectors(&mut self, vectors: &[StoredVector], now: Timestamp) -> u64 {
        let mut n = 0;
        for v in vectors {
            if let Some(m) = self.by_id.get_mut(&v.id)
                && !m.is_expired(now)
            {
                m.embedding_model = Some(v.model.clone());
                self.vectors
                    .insert(v.id, (v.model.clone(), v.vector.clone()));
                n += 1;
            }
        }
        n
    }

    /// Counts an access on each given id present here; returns whether any was.
    pub(crate) fn touch(&mut self, ids: &[MemoryId], at: Timestamp) -> bool {
        let mut any = false;
        for id in ids {
            if let Some(m) = self.by_id.get_mut(id)
                && !m.is_expired(at)
            {
                m.access_count += 1;
                m.last_accessed_at = Some(at);
                any = true;
            }
        }
        any
    }

    /// Whether any record here has expired at `now`.
    pub(crate) fn any_expired(&self, now: Timestamp) -> bool {
        self.by_id.values().any(|m| m.is_expired(now))
    }

    /// How many records [`Table::purge`] would drop now.
    pub(crate) fn count_expired(&self, now: Timestamp) -> u64 {
        self.by_id.values().filter(|m| m.is_expired(now)).count() as u64
    }

    /// Drops expired records; returns their ids.
    pub(crate) fn purge(&mut self, now: Timestamp) -> Vec<MemoryId> {
        let expired: Vec<MemoryId> = self
            .by_id
            .values()
            .filter(|m| m.is_expired(now))
            .map(|m| m.id)
            .collect();
        if !expired.is_empty() {
            self.changed();
        }
        for id in &expired {
            if let Some(m) = self.by_id.remove(id) {
                self.by_key.remove(&m.key);
            }
            self.vectors.remove(id);
        }
        expired
    }
}
