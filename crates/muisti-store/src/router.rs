//! The namespace router: sends each namespace to a store.

use std::{collections::HashMap, sync::Arc};

use muisti_core::{
    Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId, Namespace, Page, Partition, Put,
    RankFields, Record, Result, Scored, Store, StoreInfo, StoredVector, Tenant, TextQuery,
    Timestamp, UpdateRequest, VectorQuery, Written,
};

/// Routes each namespace to a store: an exact match in `routes`, else `default`.
///
/// Does no validation of its own; the store it calls does. Operations that are not tied to
/// one namespace (lookup by id, `touch`, `purge_expired`, `namespaces`) ask every distinct
/// store and keep only what lives where its namespace routes.
pub struct RouterStore {
    default: Arc<dyn Store>,
    routes: HashMap<Namespace, Arc<dyn Store>>,
}

impl RouterStore {
    /// A router with no routes yet.
    pub fn new(default: Arc<dyn Store>) -> Self {
        Self {
            default,
            routes: HashMap::new(),
        }
    }

    /// Sends `namespace` to `store`.
    pub fn route(mut self, namespace: Namespace, store: Arc<dyn Store>) -> Self {
        self.routes.insert(namespace, store);
        self
    }

    /// The store a namespace goes to.
    pub fn store_for(&self, namespace: &Namespace) -> &Arc<dyn Store> {
        self.routes.get(namespace).unwrap_or(&self.default)
    }

    /// The routes, without the default.
    pub fn routes(&self) -> &HashMap<Namespace, Arc<dyn Store>> {
        &self.routes
    }

    /// The default store.
    pub fn default_store(&self) -> &Arc<dyn Store> {
        &self.default
    }

    fn distinct(&self) -> Vec<&Arc<dyn Store>> {
        let mut out: Vec<&Arc<dyn Store>> = vec![&self.default];
        for s in self.routes.values() {
            if !out.iter().any(|o| Arc::ptr_eq(o, s)) {
                out.push(s);
            }
        }
        out
    }

    fn owns(&self, store: &Arc<dyn Store>, namespace: &Namespace) -> bool {
        Arc::ptr_eq(self.store_for(namespace), store)
    }
}

impl Store for RouterStore {
    fn info(&self) -> StoreInfo {
        let d = self.default.info();
        StoreInfo {
            backend: "router",
            location: format!(
                "router(default: {}, {} routes)",
                d.location,
                self.routes.len()
            ),
            capabilities: d.capabilities,
        }
    }

    fn limits(&self) -> Limits {
        self.default.limits()
    }

    fn put(&self, put: Put) -> Result<Written> {
        self.store_for(&put.partition.namespace).put(put)
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        // Route as one batch when every item goes to the same store.
        let first = puts.first().map(|p| self.store_for(&p.partition.namespace));
        match first {
            Some(s)
                if puts
                    .iter()
                    .all(|p| Arc::ptr_eq(self.store_for(&p.partition.namespace), s)) =>
            {
                s.put_many(puts)
            }
            _ => {
                for p in &puts {
                    p.validate(&self.store_for(&p.partition.namespace).limits())?;
                }
                puts.into_iter().map(|p| self.put(p)).collect()
            }
        }
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        for r in &records {
            r.validate(&self.store_for(&r.memory.partition.namespace).limits())?;
        }
        // One batch per store, in the order first met.
        let mut groups: Vec<(&Arc<dyn Store>, Vec<Record>)> = Vec::new();
        for r in records {
            let s = self.store_for(&r.memory.partition.namespace);
            match groups.iter_mut().find(|(g, _)| Arc::ptr_eq(g, s)) {
                Some((_, g)) => g.push(r),
                None => groups.push((s, vec![r])),
            }
        }
        let mut n = 0;
        for (s, group) in groups {
            n += s.import(group)?;
        }
        Ok(n)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        match &req.at {
            Locator::Key { partition, .. } => self.store_for(&partition.namespace).update(req),
            Locator::Id { .. } => {
                for s in self.distinct() {
                    if let Some(m) = s.get(&req.at)?
                        && self.owns(s, &m.partition.namespace)
                    {
                        return s.update(req);
                    }
                }
                req.apply(None, Timestamp::now(), &self.limits())
                    .map(|(m, _)| m)
            }
        }
    }

    /// Passed on whole when every namespace goes to one store.
    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        match self.distinct().as_slice() {
            [only] => only.update_many(reqs),
            _ => Ok(muisti_core::update_each(self, reqs)),
        }
    }

    /// Passed on whole when every namespace goes to one store.
    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        match self.distinct().as_slice() {
            [only] => only.delete_many(tenant, ids),
            _ => muisti_core::delete_each(self, tenant, ids),
        }
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        match at {
            Locator::Key { partition, .. } => self.store_for(&partition.namespace).get(at),
            Locator::Id { .. } => {
                for s in self.distinct() {
                    if let Some(m) = s.get(at)?
                        && self.owns(s, &m.partition.namespace)
                    {
                        return Ok(Some(m));
                    }
                }
                Ok(None)
            }
        }
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        self.store_for(&query.partition.namespace).list(query)
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        self.store_for(&partition.namespace)
            .count(partition, filter)
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        match at {
            Locator::Key { partition, .. } => self.store_for(&partition.namespace).delete(at),
            Locator::Id { .. } => match self.get(at)? {
                Some(m) => self.store_for(&m.partition.namespace).delete(at),
                None => Ok(false),
            },
        }
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        self.store_for(&partition.namespace).flush(partition)
    }

    fn erase_deleted(&self) -> Result<()> {
        self.distinct().iter().try_for_each(|s| s.erase_deleted())
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let mut out = Vec::new();
        for s in self.distinct() {
            for ns in s.namespaces(tenant)? {
                if self.owns(s, &ns) && !out.contains(&ns) {
                    out.push(ns);
                }
            }
        }
        out.sort();
        Ok(out)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        for s in self.distinct() {
            s.touch(tenant, ids, at)?;
        }
        Ok(())
    }

    fn purge_expired(&self) -> Result<u64> {
        let mut n = 0;
        for s in self.distinct() {
            n += s.purge_expired()?;
        }
        Ok(n)
    }

    fn count_expired(&self) -> Result<u64> {
        let mut n = 0;
        for s in self.distinct() {
            n += s.count_expired()?;
        }
        Ok(n)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let mut out = Vec::new();
        for s in self.distinct() {
            out.extend(s.tenants()?);
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        // Each store updates the records it holds (ids are unique across stores).
        let mut n = 0;
        for s in self.distinct() {
            n += s.set_vectors(tenant, vectors)?;
        }
        Ok(n)
    }

    fn health_check(&self) -> Health {
        let mut details = Vec::new();
        let mut ok = true;
        for s in self.distinct() {
            let h = s.health_check();
            ok &= h.ok;
            details.push(format!("{}: {}", s.info().backend, h.detail));
        }
        Health {
            ok,
            detail: details.join("; "),
        }
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.store_for(&partition.namespace)
            .vectors(partition, filter)
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        self.store_for(&query.partition.namespace)
            .text_search(query)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        self.store_for(&query.partition.namespace)
            .vector_search(query)
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let mut found: HashMap<MemoryId, Memory> = HashMap::new();
        for s in self.distinct() {
            for m in s.get_many(tenant, ids)? {
                if self.owns(s, &m.partition.namespace) {
                    found.insert(m.id, m);
                }
            }
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        self.store_for(&partition.namespace)
            .rank_fields(partition, ids)
    }
}
