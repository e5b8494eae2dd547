//! The in-process store.

use std::{
    collections::HashMap,
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, Record, Result, Scored, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, Written,
};

use crate::table::Table;

/// Keeps everything in the process: for tests and scratch data. Lost when the process ends.
pub struct MemStore {
    inner: RwLock<Inner>,
    limits: Limits,
    writes: AtomicU64,
    clock: Arc<dyn Clock>,
}

impl Default for MemStore {
    fn default() -> Self {
        Self {
            inner: RwLock::default(),
            limits: Limits::default(),
            writes: AtomicU64::new(0),
            clock: Arc::new(SystemClock),
        }
    }
}

#[derive(Default)]
struct Inner {
    tables: HashMap<Partition, Table>,
    ids: HashMap<MemoryId, Partition>,
}

/// Expired records are purged every this many writes.
const PURGE_EVERY: u64 = 1024;

impl MemStore {
    /// An empty store with default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty store enforcing `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Reads the time from `clock` (expiry, timestamps of writes).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    fn after_write(&self) {
        if self.writes.fetch_add(1, Ordering::Relaxed) % PURGE_EVERY == PURGE_EVERY - 1 {
            self.write().purge(self.now());
        }
    }
}

impl Inner {
    fn put(&mut self, put: Put, now: Timestamp) -> Written {
        let partition = put.partition.clone();
        let table = self.tables.entry(partition.clone()).or_default();
        let previous = put.key.as_ref().and_then(|k| table.id_of(k));
        let written = table.put(put, now);
        if let Some(old) = previous.filter(|old| *old != written.memory.id) {
            self.ids.remove(&old);
        }
        self.ids.insert(written.memory.id, partition);
        written
    }

    fn import(&mut self, record: Record) {
        let partition = record.memory.partition.clone();
        let id = record.memory.id;
        if let Some(elsewhere) = self
            .ids
            .get(&id)
            .filter(|p| p.tenant == partition.tenant && **p != partition)
            .cloned()
            && let Some(t) = self.tables.get_mut(&elsewhere)
        {
            t.remove_id(id, Timestamp::from_millis(0));
        }
        if let Some(displaced) = self
            .tables
            .entry(partition.clone())
            .or_default()
            .import(record)
        {
            self.ids.remove(&displaced);
        }
        self.ids.insert(id, partition);
    }

    fn purge(&mut self, now: Timestamp) -> u64 {
        let mut n = 0;
        for table in self.tables.values_mut() {
            for id in table.purge(now) {
                self.ids.remove(&id);
                n += 1;
            }
        }
        n
    }

    fn find(&self, at: &Locator, now: Timestamp) -> Option<&Memory> {
        match at {
            Locator::Key { partition, key } => self.tables.get(partition)?.get_by_key(key, now),
            Locator::Id { tenant, id } => {
                let p = self.ids.get(id).filter(|p| &p.tenant == tenant)?;
                self.tables.get(p)?.get_by_id(*id, now)
            }
        }
    }
}

impl Store for MemStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "mem",
            location: "mem://".into(),
            capabilities: Capabilities {
                native_text: false,
                native_vector: false,
                persistent: false,
                multi_process: false,
            },
        }
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn put(&self, put: Put) -> Result<Written> {
        put.validate(&self.limits)?;
        let w = self.write().put(put, self.now());
        self.after_write();
        Ok(w)
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        let mut inner = self.write();
        Ok(puts.into_iter().map(|p| inner.put(p, now)).collect())
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let records = Record::admit(records, &self.limits, self.now())?;
        let n = records.len() as u64;
        let mut inner = self.write();
        for r in records {
            inner.import(r);
        }
        Ok(n)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        let mut inner = self.write();
        let found = inner
            .find(&req.at, now)
            .map(|m| (m.partition.clone(), m.id));
        let Some((partition, id)) = found else {
            return req.apply(None, now, &self.limits).map(|(m, _)| m);
        };
        let table = inner
            .tables
            .get_mut(&partition)
            .ok_or_else(|| Error::NotFound(format!("memory {id}")))?;
        table.update(id, req, now, &self.limits)
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        Ok(self.read().find(at, self.now()).cloned())
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let inner = self.read();
        Ok(inner
            .tables
            .get(&query.partition)
            .map(|t| t.list(query, self.now()))
            .unwrap_or_default())
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        let inner = self.read();
        Ok(inner
            .tables
            .get(partition)
            .map_or(0, |t| t.count(filter, self.now())))
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now();
        let mut inner = self.write();
        let Some((partition, id)) = inner.find(at, now).map(|m| (m.partition.clone(), m.id)) else {
            return Ok(false);
        };
        inner.ids.remove(&id);
        Ok(inner
            .tables
            .get_mut(&partition)
            .and_then(|t| t.remove_id(id, now))
            .is_some())
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let now = self.now();
        let mut inner = self.write();
        let Some(table) = inner.tables.remove(partition) else {
            return Ok(0);
        };
        let live = table.live_len(now);
        for m in table.records() {
            inner.ids.remove(&m.id);
        }
        Ok(live)
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let now = self.now();
        let inner = self.read();
        let mut out: Vec<Namespace> = inner
            .tables
            .iter()
            .filter(|(p, t)| &p.tenant == tenant && !t.is_empty(now))
            .map(|(p, _)| p.namespace.clone())
            .collect();
        out.sort();
        Ok(out)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        let mut inner = self.write();
        let Inner { tables, ids: index } = &mut *inner;
        for id in ids {
            if let Some(p) = index.get(id).filter(|p| &p.tenant == tenant)
                && let Some(t) = tables.get_mut(p)
            {
                t.touch(std::slice::from_ref(id), at);
            }
        }
        Ok(())
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        let inner = self.read();
        Ok(inner
            .tables
            .get(partition)
            .map(|t| t.vectors(filter, self.now()))
            .unwrap_or_default())
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let inner = self.read();
        Ok(inner
            .tables
            .get(&query.partition)
            .map(|t| t.text_search(query, self.now()))
            .unwrap_or_default())
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let now = self.now();
        let inner = self.read();
        let mut out: Vec<Tenant> = inner
            .tables
            .iter()
            .filter(|(_, t)| !t.is_empty(now))
            .map(|(p, _)| p.tenant.clone())
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        let now = self.now();
        let mut inner = self.write();
        let Inner { tables, ids } = &mut *inner;
        let mut n = 0;
        for v in vectors {
            if let Some(p) = ids.get(&v.id).filter(|p| &p.tenant == tenant)
                && let Some(t) = tables.get_mut(p)
            {
                n += t.set_vectors(std::slice::from_ref(v), now);
            }
        }
        Ok(n)
    }

    fn purge_expired(&self) -> Result<u64> {
        Ok(self.write().purge(self.now()))
    }

    fn count_expired(&self) -> Result<u64> {
        let now = self.now();
        Ok(self
            .read()
            .tables
            .values()
            .map(|t| t.count_expired(now))
            .sum())
    }

    fn health_check(&self) -> Health {
        Health {
            ok: true,
            detail: "in-process".into(),
        }
    }
}
