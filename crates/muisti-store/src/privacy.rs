//! The privacy wrapper: a store that keeps nothing new.

use std::sync::Arc;

use muisti_core::{
    Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId, Namespace, Page, Partition, Put,
    RankFields, Record, Result, Scored, Store, StoreInfo, StoredVector, Tenant, TextQuery,
    Timestamp, UpdateRequest, VectorQuery, WriteStatus, Written,
};

/// Wraps a store and silently drops every write (`put`, `put_many`, `update`, `touch`), while reads,
/// searches, `delete` and `flush` pass through. Writes are still validated, so bad input gets
/// the same error as with the wrapped store, and report [`WriteStatus::Discarded`].
pub struct PrivacyStore {
    inner: Arc<dyn Store>,
}

impl PrivacyStore {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        Self { inner }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    fn discard(&self, put: Put) -> Result<Written> {
        put.validate(&self.inner.limits())?;
        Ok(Written {
            memory: put.apply(None, Timestamp::now()),
            status: WriteStatus::Discarded,
        })
    }
}

impl Store for PrivacyStore {
    fn info(&self) -> StoreInfo {
        let i = self.inner.info();
        StoreInfo {
            backend: "privacy",
            location: format!("privacy({})", i.location),
            capabilities: i.capabilities,
        }
    }

    fn limits(&self) -> Limits {
        self.inner.limits()
    }

    fn put(&self, put: Put) -> Result<Written> {
        self.discard(put)
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.inner.limits())?;
        puts.into_iter().map(|p| self.discard(p)).collect()
    }

    /// Validated, then dropped: nothing is written.
    fn import(&self, records: Vec<Record>) -> Result<u64> {
        Record::validate_all(&records, &self.inner.limits())?;
        Ok(0)
    }

    /// Validated and applied to the stored record as any update, then dropped: the record
    /// that would have been written is returned, nothing changes.
    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        let existing = self.inner.get(&req.at)?;
        req.apply(existing.as_ref(), Timestamp::now(), &self.inner.limits())
            .map(|(m, _)| m)
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        self.inner.get(at)
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        self.inner.list(query)
    }

    fn list_many(&self, queries: &[ListQuery]) -> Result<Vec<Page>> {
        self.inner.list_many(queries)
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        self.inner.count(partition, filter)
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        self.inner.delete(at)
    }

    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        self.inner.delete_many(tenant, ids)
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        self.inner.flush(partition)
    }

    fn erase_deleted(&self) -> Result<()> {
        self.inner.erase_deleted()
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.inner.namespaces(tenant)
    }

    fn touch(&self, _tenant: &Tenant, _ids: &[MemoryId], _at: Timestamp) -> Result<()> {
        Ok(())
    }

    fn purge_expired(&self) -> Result<u64> {
        self.inner.purge_expired()
    }

    fn count_expired(&self) -> Result<u64> {
        self.inner.count_expired()
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        self.inner.tenants()
    }

    fn set_vectors(&self, _tenant: &Tenant, _vectors: &[StoredVector]) -> Result<u64> {
        Ok(0)
    }

    fn health_check(&self) -> Health {
        self.inner.health_check()
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.inner.vectors(partition, filter)
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        self.inner.text_search(query)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        self.inner.vector_search(query)
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        self.inner.get_many(tenant, ids)
    }

    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        self.inner.get_many_shared(tenant, ids)
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        self.inner.rank_fields(partition, ids)
    }
}
