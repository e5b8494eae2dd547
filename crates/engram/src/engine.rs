//! The engine: one API over any store, with events and tracing.

use std::{collections::BTreeMap, sync::Arc};

use engram_core::{
    Error, Event, Filter, Hit, Key, ListQuery, Locator, Memory, MemoryId, Namespace, Observer,
    Page, Partition, Put, Result, SearchRequest, Store, StoreInfo, Tenant, Ttl, Written, list_all,
};
use serde::Serialize;
use serde_json::Value;
use tracing::{debug, info_span};

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    tenant: Tenant,
    observers: Vec<Arc<dyn Observer>>,
}

impl EngineBuilder {
    /// Confines the engine to `tenant` (default: `default`).
    pub fn tenant(mut self, tenant: Tenant) -> Self {
        self.tenant = tenant;
        self
    }

    /// Adds an observer of [`Event`]s.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The engine.
    pub fn build(self) -> Engine {
        Engine {
            store: self.store,
            tenant: self.tenant,
            observers: self.observers.into(),
        }
    }
}

/// Memory for agents over one store, confined to one tenant. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    store: Arc<dyn Store>,
    tenant: Tenant,
    observers: Arc<[Arc<dyn Observer>]>,
}

/// How much a namespace holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceStats {
    /// The namespace.
    pub namespace: Namespace,
    /// Live records in it.
    pub count: u64,
}

/// What [`Engine::stats`] reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// The store.
    pub store: StoreInfo,
    /// Whether it answered its health check.
    pub healthy: bool,
    /// The tenant the engine is confined to.
    pub tenant: Tenant,
    /// Per namespace.
    pub namespaces: Vec<NamespaceStats>,
    /// All records of the tenant.
    pub total: u64,
}

impl Engine {
    /// A builder over `store`.
    pub fn builder(store: Arc<dyn Store>) -> EngineBuilder {
        EngineBuilder {
            store,
            tenant: Tenant::default(),
            observers: Vec::new(),
        }
    }

    /// An engine over the store a URL names, in the default tenant.
    pub fn open(url: &str) -> Result<Self> {
        Ok(Self::builder(crate::open_store(url)?).build())
    }

    /// The same engine confined to another tenant.
    pub fn with_tenant(&self, tenant: Tenant) -> Self {
        Self {
            tenant,
            ..self.clone()
        }
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The tenant this engine is confined to.
    pub fn tenant(&self) -> &Tenant {
        &self.tenant
    }

    /// The partition of `namespace` in this engine's tenant.
    pub fn partition(&self, namespace: &Namespace) -> Partition {
        Partition::new(self.tenant.clone(), namespace.clone())
    }

    fn emit(&self, event: Event) {
        for o in self.observers.iter() {
            o.on_event(&event);
        }
    }

    fn at_key(&self, namespace: &Namespace, key: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.partition(namespace),
            key: Key::new(key)?,
        })
    }

    // ---- key-value contract ----

    /// The value at `key`, or `None`.
    pub fn kv_get(&self, namespace: &Namespace, key: &str) -> Result<Option<Value>> {
        Ok(self.get(&self.at_key(namespace, key)?)?.map(|m| m.content))
    }

    /// Stores `value` at `key`, replacing any value there; `ttl` of `None` never expires.
    pub fn kv_set(
        &self,
        namespace: &Namespace,
        key: &str,
        value: Value,
        ttl: Option<Ttl>,
    ) -> Result<Written> {
        let put = Put::new(self.partition(namespace), Some(Key::new(key)?), value).with_ttl(ttl);
        self.remember(put)
    }

    /// Deletes `key`; `true` if it existed.
    pub fn kv_forget(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        self.forget(&self.at_key(namespace, key)?)
    }

    /// Deletes everything in `namespace`; returns how many entries.
    pub fn kv_flush(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.flush", namespace = %namespace).entered();
        let n = self.store.flush(&partition)?;
        self.emit(Event::Forget {
            partition,
            key: None,
            count: n,
        });
        Ok(n)
    }

    /// Every live entry of `namespace`, by key.
    pub fn kv_all(&self, namespace: &Namespace) -> Result<BTreeMap<String, Value>> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.all", namespace = %namespace).entered();
        let all = list_all(&*self.store, &partition, &Filter::default())?;
        Ok(all
            .into_iter()
            .map(|m| (m.key.to_string(), m.content))
            .collect())
    }

    /// Whether `key` holds a live entry.
    pub fn kv_has(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        Ok(self.kv_get(namespace, key)?.is_some())
    }

    // ---- memory contract ----

    /// Writes a memory (the put's tenant is replaced by the engine's).
    pub fn remember(&self, mut put: Put) -> Result<Written> {
        put.partition.tenant = self.tenant.clone();
        let span = info_span!("memory.write", namespace = %put.partition.namespace);
        let _g = span.enter();
        let w = self.store.put(put)?;
        self.emit(Event::Write {
            partition: w.memory.partition.clone(),
            key: w.memory.key.clone(),
            bytes: w.memory.text().len(),
            status: w.status,
        });
        debug!(id = %w.memory.id, status = ?w.status, "written");
        Ok(w)
    }

    /// Writes many memories in one batch (one transaction where the store has them).
    pub fn remember_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        let puts: Vec<Put> = puts
            .into_iter()
            .map(|mut p| {
                p.partition.tenant = self.tenant.clone();
                p
            })
            .collect();
        let _span = info_span!("memory.write_many", count = puts.len()).entered();
        let written = self.store.put_many(puts)?;
        for w in &written {
            self.emit(Event::Write {
                partition: w.memory.partition.clone(),
                key: w.memory.key.clone(),
                bytes: w.memory.text().len(),
                status: w.status,
            });
        }
        Ok(written)
    }

    fn confine(&self, at: &Locator) -> Locator {
        match at {
            Locator::Key { partition, key } => Locator::Key {
                partition: self.partition(&partition.namespace),
                key: key.clone(),
            },
            Locator::Id { id, .. } => Locator::Id {
                tenant: self.tenant.clone(),
                id: *id,
            },
        }
    }

    /// The memory a locator addresses (its tenant is replaced by the engine's).
    pub fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let at = self.confine(at);
        let _span = info_span!("memory.read").entered();
        let found = self.store.get(&at)?;
        let (partition, key) = match (&at, &found) {
            (_, Some(m)) => (Some(m.partition.clone()), Some(m.key.clone())),
            (Locator::Key { partition, key }, None) => (Some(partition.clone()), Some(key.clone())),
            (Locator::Id { .. }, None) => (None, None),
        };
        self.emit(Event::Read {
            partition,
            key,
            found: found.is_some(),
        });
        Ok(found)
    }

    /// The memory with `id`.
    pub fn get_by_id(&self, id: MemoryId) -> Result<Option<Memory>> {
        self.get(&Locator::Id {
            tenant: self.tenant.clone(),
            id,
        })
    }

    /// One page of a namespace's memories (the query's tenant is replaced by the engine's).
    pub fn list(&self, mut query: ListQuery) -> Result<Page> {
        query.partition.tenant = self.tenant.clone();
        let _span = info_span!("memory.list", namespace = %query.partition.namespace).entered();
        self.store.list(&query)
    }

    /// Deletes the addressed memory; `true` if it existed.
    pub fn forget(&self, at: &Locator) -> Result<bool> {
        let at = self.confine(at);
        let _span = info_span!("memory.forget").entered();
        let target = self.store.get(&at)?;
        let deleted = self.store.delete(&at)?;
        if let Some(m) = target {
            self.emit(Event::Forget {
                partition: m.partition,
                key: Some(m.key),
                count: u64::from(deleted),
            });
        }
        Ok(deleted)
    }

    /// How many memories of a namespace match `filter`.
    pub fn count(&self, namespace: &Namespace, filter: &Filter) -> Result<u64> {
        self.store.count(&self.partition(namespace), filter)
    }

    /// The best `limit` memories of `namespace` for `query`, best first. Counts an access on
    /// each hit.
    pub fn search(
        &self,
        namespace: &Namespace,
        query: &str,
        limit: usize,
        filter: Filter,
    ) -> Result<Vec<Hit>> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.search", namespace = %namespace, limit).entered();
        let req = SearchRequest {
            partition: partition.clone(),
            query: query.to_owned(),
            limit,
            filter,
        };
        let (mode, hits) = self.store.search(&req)?;
        self.emit(Event::Search {
            partition,
            mode,
            limit,
            hits: hits.len(),
        });
        if !hits.is_empty() {
            let ids: Vec<MemoryId> = hits.iter().map(|h| h.memory.id).collect();
            self.store
                .touch(&self.tenant, &ids, engram_core::Timestamp::now())?;
        }
        Ok(hits)
    }

    /// Deletes expired memories now.
    pub fn purge_expired(&self) -> Result<u64> {
        self.store.purge_expired()
    }

    /// Per-namespace counts, the store and its health.
    pub fn stats(&self) -> Result<Stats> {
        let health = self.store.health_check();
        if !health.ok {
            return Err(Error::Unavailable {
                target: self.store.info().location,
                reason: health.detail,
            });
        }
        let mut namespaces = Vec::new();
        let mut total = 0;
        for ns in self.store.namespaces(&self.tenant)? {
            let count = self.count(&ns, &Filter::default())?;
            total += count;
            namespaces.push(NamespaceStats {
                namespace: ns,
                count,
            });
        }
        Ok(Stats {
            store: self.store.info(),
            healthy: health.ok,
            tenant: self.tenant.clone(),
            namespaces,
            total,
        })
    }
}
