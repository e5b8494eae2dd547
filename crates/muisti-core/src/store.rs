//! The storage contract: one trait that every backend implements.

use std::sync::Arc;

use serde::Serialize;

use crate::{
    Filter, Limits, ListQuery, Locator, Memory, MemoryId, Namespace, Page, Partition, Put,
    RankFields, Record, Result, Scored, Tenant, TextQuery, Timestamp, UpdateRequest, VectorQuery,
    text::{Bm25, nearest},
};

/// A record's vector, as a store returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredVector {
    /// The record.
    pub id: MemoryId,
    /// The model that made the vector.
    pub model: String,
    /// The vector.
    pub vector: Vec<f32>,
}

/// What a backend can do natively; the engine falls back where it cannot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// `text_search` uses a persistent full-text index rather than scoring every record.
    pub native_text: bool,
    /// `vector_search` uses an index rather than comparing every vector.
    pub native_vector: bool,
    /// Data survives the process.
    pub persistent: bool,
    /// Several processes may use the same store at once.
    pub multi_process: bool,
}

/// Which backend a store is and where it keeps its data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoreInfo {
    /// Stable lowercase name: `mem`, `file`, `sqlite`, `redis`, ...
    pub backend: &'static str,
    /// Where the data lives, with any password removed.
    pub location: String,
    /// What it can do.
    pub capabilities: Capabilities,
}

/// The answer of a health check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Whether the store answered.
    pub ok: bool,
    /// What was checked, or why it failed (never a password).
    pub detail: String,
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteStatus {
    /// A new record was created.
    Created,
    /// The record at the key was replaced (same id).
    Updated,
    /// The write was dropped on purpose (privacy wrapper); nothing was stored.
    Discarded,
    /// The same content already existed for the same owner; nothing new was stored and the
    /// existing record (returned) counted an access.
    Deduplicated,
    /// The same content already existed for the same owner, and the write brought tags,
    /// metadata, importance or confidence it lacked: those were merged into it (see
    /// [`Put::merge_patch`](crate::Put::merge_patch)) and the merged record is returned.
    Merged,
}

impl WriteStatus {
    /// `created`, `updated`, `discarded`, `deduplicated` or `merged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Discarded => "discarded",
            Self::Deduplicated => "deduplicated",
            Self::Merged => "merged",
        }
    }
}

/// The outcome of a write: the record as stored (or as it would have been) and what happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Written {
    /// The record.
    pub memory: Memory,
    /// Created, updated or discarded.
    pub status: WriteStatus,
}

/// A run of reads on one thread that may share one look at other processes' commits.
///
/// While a `ReadRun` is open on a thread, a store that keeps copies of a database shared with
/// other processes (SQLite) may check whether another process has committed once, at the
/// run's first read, rather than at every read: each of the run's reads then sees at least
/// the others' commits made before that check (a later commit may show in some reads and
/// not in others), and this process's own writes as always. A store that keeps no copy
/// ignores it. Recall opens one around its retrievers' and record reads. Runs nest: the
/// inner one is a run of its own, and the outer one goes on when it ends.
#[must_use = "a run lasts until the value is dropped"]
pub struct ReadRun {
    previous: Option<u64>,
    /// A run belongs to its thread.
    _thread: std::marker::PhantomData<*const ()>,
}

thread_local! {
    static READ_RUN: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Numbers runs: no two in a process share one.
static READ_RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl ReadRun {
    /// Opens a run on this thread (until the value is dropped).
    pub fn open() -> Self {
        let id = READ_RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        Self {
            previous: READ_RUN.replace(Some(id)),
            _thread: std::marker::PhantomData,
        }
    }

    /// The run open on this thread, if any: a number no other run in the process has had.
    pub fn current() -> Option<u64> {
        READ_RUN.get()
    }
}

impl Drop for ReadRun {
    fn drop(&mut self) {
        READ_RUN.set(self.previous);
    }
}

/// The one storage contract of muisti, implemented by every backend.
///
/// # Contract
///
/// * **Confinement.** Every method takes its tenant (in a [`Partition`], a [`Locator`] or
///   directly) and never reads, counts, changes or returns a record of another tenant.
/// * **Validation first.** Names are valid by construction; `put` calls [`Put::validate`]
///   with the store's limits before any IO. A failed call changes nothing.
/// * **Upsert.** `put` replaces the record at `(partition, key)` keeping its id and
///   `created_at` (see [`Put::apply`]), or creates one. A write with no key always creates.
/// * **Expiry.** A record whose `expires_at` has passed does not exist for any method: it is
///   never returned, counted or listed, and a `put` at its key creates a new record.
///   Backends prune expired records (natively or in `purge_expired`).
/// * **Durability.** When a write method returns `Ok` on a persistent store, the write
///   survives the process; `put_many` is all-or-nothing on stores with transactions
///   (SQLite) and stops at the first failure elsewhere, after validating every item.
/// * **Concurrency.** Methods may be called from many threads; on multi-process stores,
///   concurrent writers from several processes lose no write.
/// * **Versions.** Every record carries [`Memory::version`]: 1 when created, one more on
///   each `put` that replaces it and each `update`; access counts and vectors set by
///   reindexing leave it alone. [`Store::update`] compares it atomically.
/// * **Time.** Expiry is judged by the store's [`Clock`](crate::Clock) (the system clock
///   unless the store was given another).
/// * **Order.** `list` returns records in id order; ids are ULIDs, so that is creation order.
pub trait Store: Send + Sync {
    /// The backend's name, location and capabilities.
    fn info(&self) -> StoreInfo;

    /// Creates or replaces one record.
    fn put(&self, put: Put) -> Result<Written>;

    /// Changes fields of the one record `req.at` addresses, atomically: the record is read,
    /// [`UpdateRequest::apply`] (the one definition of update semantics) makes the new
    /// record, and it is written, with no other write to that record in between, on every
    /// backend and across processes on multi-process stores.
    ///
    /// [`Error::NotFound`](crate::Error::NotFound) when no live record is there;
    /// [`Error::Conflict`](crate::Error::Conflict) when `req.expected_version` is set and the
    /// record has another [`Memory::version`]; nothing is changed on any error. The record's
    /// full-text entry follows the new text; its vector follows [`crate::VectorChange`].
    fn update(&self, req: &UpdateRequest) -> Result<Memory>;

    /// Applies many updates in order, each as [`Store::update`] would with its own
    /// outcome: an update whose record is gone, whose version is not the expected one or
    /// that is not valid fails alone, and changes nothing. A backend with transactions
    /// writes the batch in one (an error of the store itself then fails the whole batch
    /// and writes nothing); the default updates one by one. Maintenance writes its changes
    /// this way, a user's at a time.
    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        Ok(update_each(self, reqs))
    }

    /// Deletes the tenant's records of `ids`, in one transaction where the backend has
    /// them; the ids of those that existed, in the order given. The default deletes one by
    /// one.
    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        delete_each(self, tenant, ids)
    }

    /// Writes many records, in one transaction where the backend has them. The default
    /// validates every item, then writes them one by one.
    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits())?;
        puts.into_iter().map(|p| self.put(p)).collect()
    }

    /// Writes whole records as they are, for import, restore and moving data between
    /// stores: every field is kept (id, key, timestamps, version, state, access statistics)
    /// and the vector stored with `embedding_model`, or none.
    ///
    /// Idempotent by id: a record of the tenant with the same id is replaced (wherever it
    /// is), a record at the same key with another id is removed, so writing the same records
    /// twice leaves the store as writing them once. Records already expired are skipped.
    /// [`Record::validate`] runs on every record before any IO; the batch is one transaction
    /// where the backend has them. Returns how many records were written.
    fn import(&self, records: Vec<Record>) -> Result<u64>;

    /// Runs `load`, a run of [`Store::import`] calls that brings most of the store's
    /// records (an import into a new store, a restore), as one bulk load: a backend may set
    /// its secondary indexes aside while `load` runs and build each once at the end, which
    /// costs far less than keeping them up to date record by record. Reads and writes
    /// meanwhile stay correct, if slower, and a load cut short (a crash included) leaves
    /// the indexes to be built when the store is next opened. The default runs `load` as
    /// it is. Returns what `load` returns.
    fn bulk_load(&self, load: &mut dyn FnMut() -> Result<u64>) -> Result<u64> {
        load()
    }

    /// The store's online backup, when the backend has one (SQLite's); `None` (the
    /// default) when it has not, and snapshots are then made by exporting.
    fn backup(&self) -> Option<&dyn Backup> {
        None
    }

    /// The limits this store enforces on writes.
    fn limits(&self) -> Limits;

    /// The record a locator addresses, unless absent or expired.
    fn get(&self, at: &Locator) -> Result<Option<Memory>>;

    /// One page of the records in a partition that match a filter, in id order.
    fn list(&self, query: &ListQuery) -> Result<Page>;

    /// [`Store::list`]'s page for each of `queries`, in order (recall reads the next turn
    /// of several sessions at once). The default lists each in turn; a backend answers them
    /// together where that is cheaper.
    fn list_many(&self, queries: &[ListQuery]) -> Result<Vec<Page>> {
        queries.iter().map(|q| self.list(q)).collect()
    }

    /// How many live records in a partition match a filter.
    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64>;

    /// Deletes the addressed record; `true` if one existed.
    fn delete(&self, at: &Locator) -> Result<bool>;

    /// Deletes every record in a partition; returns how many.
    fn flush(&self, partition: &Partition) -> Result<u64>;

    /// Makes the text of what was deleted unrecoverable from the store's own files now, as
    /// far as the backend can (SQLite: a checkpoint that empties its write-ahead log, which
    /// otherwise runs within seconds of a delete). The default does nothing: the backend's
    /// deletes leave no copy it controls (the in-memory and file stores), or its server
    /// keeps its own files (Redis, PostgreSQL, MySQL: see the README's erasure section).
    fn erase_deleted(&self) -> Result<()> {
        Ok(())
    }

    /// The namespaces of a tenant that hold at least one record, sorted.
    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>>;

    /// The tenants that hold at least one record, sorted (for maintenance such as reindex).
    fn tenants(&self) -> Result<Vec<Tenant>>;

    /// Replaces the vector (and `embedding_model`) of existing live records of a tenant,
    /// changing nothing else (not `updated_at`); unknown ids are skipped. Returns how many
    /// were updated.
    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64>;

    /// Records `access_count += 1` and `last_accessed_at = at` on the given records of a
    /// tenant (an id given twice counts twice: [`touch_counts`]); unknown ids are ignored.
    /// Does not change `updated_at`.
    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()>;

    /// Deletes expired records now; returns how many (backends with native expiry may
    /// report 0).
    fn purge_expired(&self) -> Result<u64>;

    /// How many records [`Store::purge_expired`] would delete now, deleting nothing: what a
    /// dry run of maintenance reports (a backend whose records expire by themselves has
    /// none waiting, and reports 0 as its purge does).
    fn count_expired(&self) -> Result<u64>;

    /// Whether the store answers.
    fn health_check(&self) -> Health;

    /// The stored vectors of the live records of a partition that pass `filter`, with the
    /// model that made each.
    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>>;

    /// The best `limit` records for a full-text query, by BM25 over the
    /// [`tokenize`](crate::text::tokenize)d [`Memory::index_text`], each score divided by
    /// the query's attainable score ([`Bm25::finish`](crate::text::Bm25::finish): about 1
    /// for a record matching every query term). The default scores every matching record in
    /// memory; backends with a full-text index answer natively.
    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let all = list_all(self, &query.partition, &query.filter)?;
        let texts: Vec<(MemoryId, std::borrow::Cow<'_, str>, Option<&str>)> = all
            .iter()
            .map(|m| (m.id, m.index_text(), m.context.as_deref()))
            .collect();
        Ok(Bm25::default().rank(
            texts.iter().map(|(id, t, c)| (*id, t.as_ref(), *c)),
            &query.query,
            query.limit,
        ))
    }

    /// The stored vectors of these records (read from the store; `None` where a record has
    /// none or is gone), in the order given: what an export with vectors reads page by page.
    /// The default reads each partition's vectors once per call; backends answer by id.
    fn vectors_for(&self, records: &[Memory]) -> Result<Vec<Option<Vec<f32>>>> {
        let mut found: std::collections::HashMap<MemoryId, Vec<f32>> =
            std::collections::HashMap::new();
        let mut partitions: Vec<&Partition> = records.iter().map(|m| &m.partition).collect();
        partitions.sort_unstable();
        partitions.dedup();
        for p in partitions {
            found.extend(
                self.vectors(p, &Filter::default())?
                    .into_iter()
                    .map(|v| (v.id, v.vector)),
            );
        }
        Ok(records.iter().map(|m| found.remove(&m.id)).collect())
    }

    /// The `limit` records whose vectors are nearest the query's (dot product of unit
    /// vectors), best first; vectors of another length are skipped. The default compares
    /// every vector; backends with an index answer natively.
    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        exact_vector_search(self, query)
    }

    /// The live records of a tenant with these ids, in the order given; absent ids are
    /// skipped. The default reads them one by one.
    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(m) = self.get(&Locator::Id {
                tenant: tenant.clone(),
                id: *id,
            })? {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// [`Store::get_many`]'s records, shared: recall reads many records and returns few, and a
    /// backend that keeps decoded records hands out its own instead of copies. The default
    /// wraps `get_many`'s.
    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        Ok(self
            .get_many(tenant, ids)?
            .into_iter()
            .map(Arc::new)
            .collect())
    }

    /// The rescoring fields of the live records of `partition` with these ids, in the order
    /// given; absent ids are skipped. Recall reads these for all its candidates and whole
    /// records only for the hits it returns. The default reads the records; a backend that
    /// keeps the fields in memory answers from there.
    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        Ok(self
            .get_many(&partition.tenant, ids)?
            .iter()
            .filter(|m| m.partition == *partition)
            .map(RankFields::of)
            .collect())
    }
}

/// The accesses [`Store::touch`] records: each distinct id with how often it was given, in
/// the order first given.
pub fn touch_counts(ids: &[MemoryId]) -> Vec<(MemoryId, u64)> {
    let mut counts: Vec<(MemoryId, u64)> = Vec::new();
    for id in ids {
        match counts.iter_mut().find(|(i, _)| i == id) {
            Some((_, n)) => *n += 1,
            None => counts.push((*id, 1)),
        }
    }
    counts
}

/// Nearest neighbours by comparing the query with every vector [`Store::vectors`] returns.
pub fn exact_vector_search<S: Store + ?Sized>(
    store: &S,
    query: &VectorQuery,
) -> Result<Vec<Scored>> {
    let vectors = store.vectors(&query.partition, &query.filter)?;
    Ok(nearest(
        vectors.iter().map(|v| (v.id, v.vector.as_slice())),
        &query.vector,
        query.limit,
    ))
}

/// [`Store::update_many`] one update at a time (its default, and a wrapper's that cannot
/// pass the batch on whole).
pub fn update_each<S: Store + ?Sized>(store: &S, reqs: &[UpdateRequest]) -> Vec<Result<Memory>> {
    reqs.iter().map(|r| store.update(r)).collect()
}

/// [`Store::delete_many`] one delete at a time (its default, and a wrapper's that cannot
/// pass the batch on whole).
pub fn delete_each<S: Store + ?Sized>(
    store: &S,
    tenant: &Tenant,
    ids: &[MemoryId],
) -> Result<Vec<MemoryId>> {
    let mut deleted = Vec::new();
    for id in ids {
        let at = Locator::Id {
            tenant: tenant.clone(),
            id: *id,
        };
        if store.delete(&at)? {
            deleted.push(*id);
        }
    }
    Ok(deleted)
}

/// Every live record of a partition that passes `filter`, following pages.
pub fn list_all<S: Store + ?Sized>(
    store: &S,
    partition: &Partition,
    filter: &Filter,
) -> Result<Vec<Memory>> {
    let mut out = Vec::new();
    let mut query = ListQuery {
        partition: partition.clone(),
        filter: filter.clone(),
        after: None,
        limit: 0,
    };
    loop {
        let page = store.list(&query)?;
        out.extend(page.items);
        match page.next {
            Some(next) => query.after = Some(next),
            None => return Ok(out),
        }
    }
}

/// A store's online backup: a consistent copy of the whole store, made while writers go on,
/// in a file that is itself a store of the same backend.
pub trait Backup {
    /// The copy's format: its file extension, and the URL scheme that opens it as a store
    /// (`sqlite`).
    fn format(&self) -> &'static str;

    /// Writes the copy to the file `to` (which must not exist).
    fn backup_to(&self, to: &std::path::Path) -> Result<()>;
}
