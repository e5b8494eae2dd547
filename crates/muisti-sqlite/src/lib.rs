//! The embedded SQLite store, muisti's default.
//!
//! One database file in WAL mode, SQLite compiled in (nothing to install). Each write is one
//! `BEGIN IMMEDIATE` transaction, so several processes can write the same file; readers never
//! block writers. `synchronous=NORMAL` by default: a committed write survives a crash of the
//! process; pass `?synchronous=full` to also survive a power loss.
//!
//! ```
//! use muisti_core::{Key, Locator, Namespace, Partition, Put, Store};
//! use muisti_sqlite::SqliteStore;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("muisti.db"))?;
//! let p = Partition::of(Namespace::default_ns());
//! store.put(Put::new(p.clone(), Some(Key::new("city")?), "Lisbon"))?;
//! let m = store.get(&Locator::Key { partition: p, key: Key::new("city")? })?;
//! assert_eq!(m.unwrap().text(), "Lisbon");
//! # Ok::<(), muisti_core::Error>(())
//! ```

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use cache::{CachedRow, Fresh, Lookup, PartitionCache, PartitionCaches, Rows};
use muisti_core::{
    Capabilities, Category, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory,
    MemoryId, MemoryScope, Namespace, Owner, Page, Partition, Put, RankFields, ReadRun, Record,
    Result, Scored, Store, StoreInfo, StoredVector, SystemClock, Tenant, TextQuery, Timestamp,
    UpdateRequest, VectorQuery, Written,
    text::{query_terms, vector_from_bytes, vector_to_bytes},
};
use muisti_store::{StoreRegistry, StoreUrl};
use rusqlite::{
    Connection, OpenFlags, OptionalExtension, config::DbConfig, params, types::Value as SqlValue,
};

mod cache;
mod erase;
mod migrate;
mod records;
mod row;
mod sql;
mod write;

use migrate::{migrate, restore_indexes, set_indexes_aside};
use row::{decode, decode_from};
use sql::{COLUMNS, GET_BY_ID, GET_BY_KEY, LIVE, filter_sql, needs_rust_filter, partition_args};
use write::{import_in, purge_in, put_in, update_in};

const IDLE_READERS: usize = 8;
/// Bytes of the database file a connection maps into memory unless the URL says otherwise
/// (`mmap_mb`): reads of mapped pages skip a copy.
const MMAP_BYTES: u64 = 256 << 20;
/// A bulk load sets the secondary indexes aside only in a store with fewer rows than this:
/// one that the load fills (see [`muisti_core::Store::bulk_load`]).
const BULK_LOAD_MAX_ROWS: i64 = 10_000;

/// How hard SQLite syncs to disk on commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=NORMAL`: survives a process crash (the default).
    #[default]
    Normal,
    /// `synchronous=FULL`: also survives a power loss.
    Full,
}

/// The SQLite store.
pub struct SqliteStore {
    path: PathBuf,
    limits: Limits,
    durability: Durability,
    /// Bytes of the file each connection maps into memory (`PRAGMA mmap_size`).
    mmap_bytes: u64,
    writer: Arc<Mutex<Connection>>,
    readers: Mutex<Vec<Connection>>,
    cache: Arc<PartitionCaches>,
    ann_threshold: usize,
    background_loads: bool,
    clock: Arc<dyn Clock>,
    /// Tells this store apart from others in the process ([`SqliteStore::data_version`]'s
    /// memory of a [`ReadRun`]'s check).
    instance: u64,
    /// The checkpoints that take deleted text out of the write-ahead log.
    eraser: Arc<erase::Eraser>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.eraser.close();
    }
}

/// Numbers the stores opened in this process ([`SqliteStore::instance`]).
static STORES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    /// The last data-version check made in a [`ReadRun`] on this thread: the run and the
    /// store ([`SqliteStore::instance`]). One only: a run that reads two stores in turn
    /// checks at each read.
    static RUN_CHECK: std::cell::Cell<Option<(u64, u64)>> = const { std::cell::Cell::new(None) };
}

pub(crate) fn sql_err(e: rusqlite::Error) -> Error {
    match e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            Error::Unavailable {
                target: "sqlite".into(),
                reason: e.to_string(),
            }
        }
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
            ) =>
        {
            Error::Corrupted {
                location: "sqlite database".into(),
                reason: e.to_string(),
            }
        }
        other => Error::backend("sqlite", other),
    }
}

/// Registers the `sqlite` scheme: `sqlite:///path/muisti.db`, with the parameters
/// `synchronous` (`normal`, the default, or `full`), `ann_threshold` (vectors from which
/// search uses an HNSW graph; 0 never), `cache_mb` (the memory budget of the in-memory
/// copies, default 2048; see [`SqliteStore::with_cache_budget`]), `mmap_mb` (how much of the
/// file is memory-mapped, default 256; see [`SqliteStore::with_mmap`]) and the limits every
/// store URL takes.
pub fn register(registry: &mut StoreRegistry) {
    registry.register("sqlite", |url: &StoreUrl| {
        Ok(Arc::new(SqliteStore::open_url(url)?) as Arc<dyn Store>)
    });
}

impl SqliteStore {
    /// Opens the store a `sqlite://` URL names (see [`register`] for its parameters).
    pub fn open_url(url: &StoreUrl) -> Result<Self> {
        url.allow_params(&["synchronous", "ann_threshold", "cache_mb", "mmap_mb"])?;
        let durability = match url.param("synchronous") {
            None | Some("normal") => Durability::Normal,
            Some("full") => Durability::Full,
            Some(other) => {
                return Err(Error::invalid(
                    "synchronous",
                    format!("{other:?} is not normal or full"),
                ));
            }
        };
        let mut store = Self::open_with(url.path()?, url.limits()?, durability)?;
        if let Some(n) = url.whole("ann_threshold", 0..=usize::MAX)? {
            store = store.with_ann_threshold(n);
        }
        if let Some(mb) = url.whole("cache_mb", 1..=1 << 24)? {
            store = store.with_cache_budget(mb << 20);
        }
        if let Some(mb) = url.whole("mmap_mb", 0..=1 << 24)? {
            store = store.with_mmap((mb as u64) << 20)?;
        }
        Ok(store)
    }

    /// Opens (creating the file if needed, in an existing directory) the database at `path`.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        Self::open_with(path, Limits::default(), Durability::default())
    }

    /// Opens with explicit limits and durability.
    pub fn open_with(
        path: impl Into<PathBuf>,
        limits: Limits,
        durability: Durability,
    ) -> Result<Self> {
        let path = path.into();
        // The file is created, never missing directories: a typo in a path must not make
        // a new, empty store somewhere.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(Error::Unavailable {
                target: format!("sqlite://{}", path.display()),
                reason: format!("the directory {} does not exist", dir.display()),
            });
        }
        let mut writer = connect(&path, durability, MMAP_BYTES)?;
        migrate(&writer, &path)?;
        // A bulk load cut short left its indexes set aside.
        restore_indexes(&mut writer)?;
        let store = Self {
            path,
            limits,
            durability,
            mmap_bytes: MMAP_BYTES,
            writer: Arc::new(Mutex::new(writer)),
            readers: Mutex::new(Vec::new()),
            cache: Arc::new(PartitionCaches::new(cache::CACHE_BUDGET)),
            ann_threshold: cache::ANN_THRESHOLD,
            background_loads: true,
            clock: Arc::new(SystemClock),
            instance: STORES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            eraser: Arc::default(),
        };
        store.cache.validate(store.data_version()?);
        Ok(store)
    }

    /// Enforces `limits` on writes.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads the time from `clock` (expiry, timestamps of writes).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().as_millis()
    }

    /// Nearest-neighbour search switches from an exact scan to an HNSW graph when a
    /// partition, and the rows a query may return, hold at least this many vectors (default
    /// 20,000; 0 turns the graph off). The graph is built in the background from the
    /// in-memory copy of the partition, and rebuilt when the partition changes.
    pub fn with_ann_threshold(mut self, vectors: usize) -> Self {
        self.ann_threshold = vectors;
        self
    }

    /// The memory budget of the in-memory copies of partitions (and of one user's rows of
    /// them), in bytes as estimated from their sizes (default 2 GiB). Within it, the least
    /// recently used copies are dropped to make room; a copy larger than the whole budget
    /// answers the query that loaded it and is not kept (the next such query loads it again);
    /// an HNSW graph is built only if the copy with it fits.
    pub fn with_cache_budget(mut self, bytes: usize) -> Self {
        self.cache = Arc::new(PartitionCaches::new(bytes));
        // The version the empty caches start from (unknown: the first check empties them).
        self.cache.validate(self.data_version().ok().flatten());
        self
    }

    /// Maps at most `bytes` of the database file into memory on each connection (default
    /// 256 MiB; 0 maps nothing). Mapped pages are read without a copy, and count in the
    /// process's resident memory while the kernel keeps them: a command that reads or
    /// writes every record once (export, import) runs in less memory without the map.
    pub fn with_mmap(mut self, bytes: u64) -> Result<Self> {
        self.writer()
            .execute_batch(&format!("PRAGMA mmap_size = {bytes}"))
            .map_err(sql_err)?;
        self.readers
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.mmap_bytes = bytes;
        Ok(self)
    }

    /// Whether a one-user copy's first load also starts loading the copy of every row of
    /// its partition in the background (default on; off, a partition is loaded whole only
    /// for a query that names no user).
    pub fn with_background_loads(mut self, on: bool) -> Self {
        self.background_loads = on;
        self
    }

    /// Whether the copy of every row of the partition is in memory (for monitoring and
    /// tests).
    pub fn partition_loaded(&self, partition: &Partition) -> bool {
        self.cache.holds_all(partition)
    }

    /// The memory budget of the in-memory copies, in bytes.
    pub fn cache_budget(&self) -> usize {
        self.cache.budget()
    }

    /// The bytes the in-memory copies hold now (estimated), graphs included.
    pub fn cache_bytes(&self) -> usize {
        self.cache.bytes()
    }

    /// From how many vectors a partition's search uses an HNSW graph (0: never).
    pub fn ann_threshold(&self) -> usize {
        self.ann_threshold
    }

    /// Whether the partition's HNSW graph is built (it never is below
    /// [`SqliteStore::ann_threshold`] vectors).
    pub fn ann_ready(&self, partition: &Partition) -> bool {
        self.cache.peek(partition).iter().any(|c| c.ann_ready())
    }

    /// Whether an HNSW graph of the partition is being built (in the background).
    pub fn ann_building(&self, partition: &Partition) -> bool {
        self.cache.peek(partition).iter().any(|c| c.ann_building())
    }

    /// How many searches of a partition's current in-memory copies their HNSW graphs
    /// answered.
    pub fn ann_searches(&self, partition: &Partition) -> u64 {
        self.cache
            .peek(partition)
            .iter()
            .map(|c| c.ann_searches())
            .sum()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn writer(&self) -> MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on a pooled read connection.
    fn read<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        let pooled = self.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => connect(&self.path, self.durability, self.mmap_bytes)?,
        };
        let out = f(&conn);
        let mut pool = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < IDLE_READERS {
            pool.push(conn);
        }
        out
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction, committed if `f` succeeds.
    fn write<R>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<R>) -> Result<R> {
        self.write_then(f, |_| ())
    }

    /// [`SqliteStore::write`], then `then` with the result after the commit while the writer
    /// connection is still held: what it applies to the in-memory copies follows commit
    /// order, and a load (which takes its snapshot holding the writer) sees it either in its
    /// snapshot or as missed, never both.
    fn write_then<R>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<R>,
        then: impl FnOnce(&mut R),
    ) -> Result<R> {
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let mut out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        then(&mut out);
        Ok(out)
    }

    /// Runs a write that also purged expired records (`f` returns how many, its result and
    /// the records it left) in one transaction, and keeps the in-memory copies in step: the
    /// records are applied to the loaded copies of their partitions before the writer
    /// connection is released (so in commit order); a purge, or a failure, drops every copy.
    fn write_fresh<R>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<(u64, R, Vec<Fresh>)>,
    ) -> Result<R> {
        let out = self.write_then(f, |(purged, _, fresh)| {
            if *purged == 0 {
                self.cache.apply(std::mem::take(fresh));
            } else {
                self.cache.invalidate_all();
            }
        });
        match out {
            Ok((_, r, _)) => Ok(r),
            Err(e) => {
                self.cache.invalidate_all();
                Err(e)
            }
        }
    }

    /// `PRAGMA data_version` of the writer connection, which changes when another
    /// connection (another process) commits; `None` when not checked this time: while this
    /// process is writing (the check waits for the next query rather than for the write), or
    /// within a [`ReadRun`] whose first check of this store was made (each check is a read
    /// transaction begun and ended, about a microsecond and a half). Never an older version
    /// than one another thread has seen since: the copies are shared, and going back would
    /// drop them again.
    fn data_version(&self) -> Result<Option<i64>> {
        let run = ReadRun::current();
        if let Some(run) = run
            && RUN_CHECK.get() == Some((run, self.instance))
        {
            return Ok(None);
        }
        let conn = match self.writer.try_lock() {
            Ok(c) => c,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        let version: i64 = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(sql_err)?;
        if let Some(run) = run {
            RUN_CHECK.set(Some((run, self.instance)));
        }
        Ok(Some(version))
    }

    /// Loads the rows a ticket names on a pooled connection (see [`load_on`]).
    fn load(&self, ticket: cache::LoadTicket<'_>) -> Result<Arc<cache::Part>> {
        self.read(|conn| load_on(conn, &self.writer, ticket, self.ann_threshold))
    }

    /// After a one-user copy was loaded: loads the copy of every row of its partition in the
    /// background (if none is loaded or loading, and its size, estimated from this copy's
    /// bytes per row, fits the budget), which then answers every query of the partition.
    fn warm(&self, p: &Partition, user_copy: &cache::Part) {
        if !self.background_loads || !self.cache.start_warming(p) {
            return;
        }
        let per_row = user_copy.bytes_per_row();
        let (writer, cache, path) = (
            Arc::clone(&self.writer),
            Arc::clone(&self.cache),
            self.path.clone(),
        );
        let (durability, mmap_bytes) = (self.durability, self.mmap_bytes);
        let (ann_threshold, p) = (self.ann_threshold, p.clone());
        let _ = std::thread::Builder::new()
            .name("muisti-load".into())
            .spawn(move || {
                let Ok(conn) = connect(&path, durability, mmap_bytes) else {
                    return;
                };
                let rows: Option<usize> = conn
                    .query_row(
                        "SELECT count(*) FROM memories WHERE tenant = ? AND namespace = ?",
                        params![p.tenant.as_str(), p.namespace.as_str()],
                        |r| r.get::<_, i64>(0),
                    )
                    .ok()
                    .and_then(|n| usize::try_from(n).ok());
                let Some(bytes) = rows
                    .map(|n| n.saturating_mul(per_row))
                    .filter(|b| *b <= cache.budget())
                else {
                    return;
                };
                if let Lookup::Load(ticket) = cache.lookup(&p, None, None) {
                    ticket.reserve(bytes);
                    let _ = load_on(&conn, &writer, ticket, ann_threshold);
                }
            });
    }

    /// [`Store::list`], with `version` the database's data version if it was checked for
    /// an earlier query of the same batch (checked here, and kept, if not and needed).
    fn list_checked(&self, query: &ListQuery, version: &mut Option<Option<i64>>) -> Result<Page> {
        let size = query.page_size();
        // One session's records from a loaded copy (recall asks for a turn's next one),
        // when every record it names is still there to read.
        if let Some(session) = query.filter.session_id.as_deref() {
            let checked = match *version {
                Some(v) => v,
                None => *version.insert(self.data_version()?),
            };
            if let Some(part) =
                self.cache
                    .loaded(&query.partition, query.filter.user_id.as_deref(), checked)
            {
                let ids =
                    part.session_page(&query.filter, session, query.after, size + 1, self.now());
                // The one past the page only says there is a next page: its record is not read.
                let page = &ids[..ids.len().min(size)];
                let items: Vec<Memory> = self
                    .read_records(&query.partition.tenant, page)?
                    .into_iter()
                    .map(Arc::unwrap_or_clone)
                    .collect();
                if items.len() == page.len() {
                    return Ok(Page::of(items, ids.len() > size));
                }
            }
        }
        let now = self.now_ms();
        self.read(|conn| {
            if !needs_rust_filter(&query.filter) {
                let items = Self::select_page(
                    conn,
                    &query.partition,
                    &query.filter,
                    query.after,
                    size + 1,
                    now,
                )?;
                return Ok(Page::from_sorted(items, size));
            }
            // Tags and metadata are checked here; read in chunks until the page is full.
            let mut items = Vec::new();
            let mut after = query.after;
            loop {
                let chunk =
                    Self::select_page(conn, &query.partition, &query.filter, after, 512, now)?;
                let done = chunk.len() < 512;
                after = chunk.last().map(|m| m.id).or(after);
                items.extend(chunk.into_iter().filter(|m| query.filter.matches(m)));
                if done || items.len() > size {
                    return Ok(Page::from_sorted(items, size));
                }
            }
        })
    }

    /// The copy that answers a query over `p` filtered by `user`, loaded if missing or
    /// stale.
    fn cached(&self, p: &Partition, user: Option<&str>) -> Result<Arc<cache::Part>> {
        let mut version = self.data_version()?;
        loop {
            match self.cache.lookup(p, user, version.take()) {
                Lookup::Ready(part) => return Ok(part),
                Lookup::Wait(done) => {
                    if let Some(part) = done.wait() {
                        return Ok(part);
                    }
                }
                Lookup::Load(ticket) => {
                    let part = self.load(ticket)?;
                    if user.is_some() {
                        self.warm(p, &part);
                    }
                    return Ok(part);
                }
            }
        }
    }

    fn location(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

/// Loads the rows a ticket names on `conn`: a partition's, one user's rows next to each
/// other (a user-filtered query then reads its rows in sequence instead of one cache miss
/// per row), or one user's. The snapshot is taken while holding the writer connection, after
/// the ticket starts recording what this process commits later.
fn load_on(
    conn: &Connection,
    writer: &Mutex<Connection>,
    ticket: cache::LoadTicket<'_>,
    ann_threshold: usize,
) -> Result<Arc<cache::Part>> {
    let (p, rows) = ticket.key().clone();
    let tx = conn.unchecked_transaction().map_err(sql_err)?;
    {
        let _writer = writer.lock().unwrap_or_else(|p| p.into_inner());
        ticket.arm();
        // The first read takes the snapshot.
        tx.query_row(
            "SELECT count(*) FROM memory_access WHERE rowid = 0",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql_err)?;
    }
    let loaded = load_rows(&tx, &p, &rows, ann_threshold)?;
    tx.finish().map_err(sql_err)?;
    Ok(ticket.finish(loaded))
}

fn load_rows(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
) -> Result<PartitionCache> {
    match load_rows_by(conn, p, rows, ann_threshold, " INDEXED BY memories_user") {
        // A bulk load has the index set aside (see `Store::bulk_load`): the planner's own
        // choice is slower, not wrong.
        Err(Error::Backend { reason, .. }) if reason.contains("no such index") => {
            load_rows_by(conn, p, rows, ann_threshold, "")
        }
        other => other,
    }
}

/// [`load_rows`], one user's rows through the index `user_index` names (an `INDEXED BY`
/// clause, or nothing).
fn load_rows_by(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
    user_index: &str,
) -> Result<PartitionCache> {
    const SELECT: &str = "SELECT m.id, m.user_id, m.agent_id, m.session_id, m.category, \
         m.scope, m.created_at, m.expires_at, m.vector, f.tokens, f.context, m.tags, \
         m.metadata, m.content_hash, m.updated_at, m.importance, \
         m.access_count + IFNULL(a.access_count, 0), IFNULL(m.valid_from, m.created_at) \
         FROM o CROSS JOIN memories m ON m.rowid = o.r \
         CROSS JOIN memory_terms f ON f.rowid = m.rowid \
         LEFT JOIN memory_access a ON a.rowid = m.rowid";
    // Only (user, rowid) pairs are sorted; the rows are then read in that order
    // (sorting the whole rows would hold them all in the sorter).
    let (sql, user) = match rows {
        Rows::All => (
            format!(
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories \
                 WHERE tenant = ?1 AND namespace = ?2 ORDER BY user_id, id) {SELECT}"
            ),
            None,
        ),
        Rows::User(u) => (
            format!(
                // By the user index: the planner otherwise prefers the partition's
                // (tenant, namespace, id) index, which skips the sort but reads every
                // row of the partition.
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories{user_index} \
                 WHERE tenant = ?1 AND user_id = ?3 AND namespace = ?2 ORDER BY id) {SELECT}"
            ),
            Some(u.as_str()),
        ),
    };
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let mut rows = match user {
        None => stmt.query(params![p.tenant.as_str(), p.namespace.as_str()]),
        Some(u) => stmt.query(params![p.tenant.as_str(), p.namespace.as_str(), u]),
    }
    .map_err(sql_err)?;
    let mut out = PartitionCache::new(ann_threshold);
    while let Some(r) = rows.next().map_err(sql_err)? {
        let id: String = r.get(0).map_err(sql_err)?;
        let blob: Option<Vec<u8>> = r.get(8).map_err(sql_err)?;
        let terms: String = r.get(9).map_err(sql_err)?;
        let context_terms: Option<String> = r.get(10).map_err(sql_err)?;
        let corrupted = |what: &str| Error::Corrupted {
            location: format!("sqlite row id {id}"),
            reason: what.to_owned(),
        };
        let category: String = r.get(4).map_err(sql_err)?;
        let scope: String = r.get(5).map_err(sql_err)?;
        let tags: String = r.get(11).map_err(sql_err)?;
        let metadata: String = r.get(12).map_err(sql_err)?;
        let access_count: i64 = r.get(16).map_err(sql_err)?;
        let row = CachedRow {
            id: MemoryId::parse(&id).map_err(|_| corrupted("bad id"))?,
            owner: Owner {
                user_id: r.get(1).map_err(sql_err)?,
                agent_id: r.get(2).map_err(sql_err)?,
                session_id: r.get(3).map_err(sql_err)?,
            },
            category: Category::parse(&category).map_err(|_| corrupted("bad category"))?,
            scope: MemoryScope::parse(&scope).map_err(|_| corrupted("bad scope"))?,
            tags: serde_json::from_str(&tags).map_err(|_| corrupted("bad tags"))?,
            metadata: serde_json::from_str(&metadata).map_err(|_| corrupted("bad metadata"))?,
            content_hash: r.get(13).map_err(sql_err)?,
            created_at: Timestamp::from_millis(r.get(6).map_err(sql_err)?),
            updated_at: Timestamp::from_millis(r.get(14).map_err(sql_err)?),
            // RankFields::time_of, in SQL.
            time: Timestamp::from_millis(r.get(17).map_err(sql_err)?),
            importance: r.get::<_, f64>(15).map_err(sql_err)? as f32,
            expires_at: r.get(7).map_err(sql_err)?,
            access_count: u64::try_from(access_count).unwrap_or(0).into(),
        };
        let vector = blob
            .map(|b| vector_from_bytes(&b).ok_or_else(|| corrupted("bad vector")))
            .transpose()?;
        out.push(row, vector.as_deref(), &terms, context_terms.as_deref());
    }
    Ok(out)
}

fn connect(path: &Path, durability: Durability, mmap_bytes: u64) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| Error::Unavailable {
        target: format!("sqlite://{}", path.display()),
        reason: e.to_string(),
    })?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(sql_err)?;
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    let pragmas = format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON; \
         PRAGMA secure_delete=ON; \
         PRAGMA cache_size=-32768; PRAGMA mmap_size={mmap_bytes}; PRAGMA temp_store=MEMORY; \
         PRAGMA wal_autocheckpoint=8192; PRAGMA journal_size_limit=67108864;"
    );
    // `journal_mode` can answer SQLITE_BUSY without waiting on the busy handler while
    // another process opens or checkpoints the same file: wait here instead, as long as
    // the busy timeout would.
    let started = std::time::Instant::now();
    let set = loop {
        match conn.execute_batch(&pragmas) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => break other,
        }
    };
    set.map_err(|e| match sql_err(e) {
        Error::Corrupted { reason, .. } => Error::Corrupted {
            location: path.display().to_string(),
            reason,
        },
        other => other,
    })?;
    conn.set_prepared_statement_cache_capacity(64);
    // The query planner stability guarantee: without it SQLite (3.54) plans `LIMIT ?` with
    // the bound value and marks the statement to be prepared again whenever a new value is
    // bound, and a cached statement's bindings are cleared on reuse, so every read with a
    // limit was parsed and planned again (a quarter of LoCoMo recall's time in `perf`).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(sql_err)?;
    Ok(conn)
}

impl SqliteStore {
    /// Selects live rows of a partition in id order after `after`, at most `limit`.
    fn select_page(
        conn: &Connection,
        partition: &Partition,
        filter: &Filter,
        after: Option<MemoryId>,
        limit: usize,
        now: i64,
    ) -> Result<Vec<Memory>> {
        let mut sql =
            format!("SELECT {COLUMNS} FROM memories WHERE tenant = ? AND namespace = ? AND {LIVE}");
        let mut args = vec![
            SqlValue::Text(partition.tenant.as_str().to_owned()),
            SqlValue::Text(partition.namespace.as_str().to_owned()),
            SqlValue::Integer(now),
        ];
        if let Some(after) = after {
            sql.push_str(" AND id > ?");
            args.push(SqlValue::Text(after.to_string()));
        }
        filter_sql(filter, &mut sql, &mut args);
        // Without statistics the planner prefers the (tenant, namespace, id) index, which
        // avoids the sort but scans the whole partition for a content hash (the dedupe check
        // of every write): ordering by an expression (`+id`) leaves the order to a sort of
        // the few candidates the hash index finds. (Not `INDEXED BY`, which fails while a
        // bulk load has the index set aside.)
        sql.push_str(if filter.content_hash.is_some() {
            " ORDER BY +id LIMIT ?"
        } else {
            " ORDER BY id LIMIT ?"
        });
        args.push(SqlValue::Integer(limit as i64));
        let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
        let rows = stmt
            .query_map(rusqlite::params_from_iter(args), decode)
            .map_err(sql_err)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r.map_err(sql_err)??);
        }
        Ok(out)
    }
}

impl SqliteStore {
    /// Deletes the addressed live row; the partition it was in, if there was one.
    /// Deletes the addressed live record; its partition, id and user if there was one. The
    /// loaded copies that held it drop its row in place, after the commit and while the
    /// writer connection is held (so in commit order; a load racing it records it).
    fn delete_row(&self, at: &Locator, now: i64) -> Result<Option<Partition>> {
        type Gone = Option<(String, String, Option<String>)>;
        let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, String, Option<String>)> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        };
        let deleted = self.write_then(
            |tx| {
                let gone: Gone = match at {
                    Locator::Key { partition, key } => tx
                        .prepare_cached(&format!(
                            "DELETE FROM memories WHERE tenant = ? AND namespace = ? AND key = ? \
                             AND {LIVE} RETURNING namespace, id, user_id"
                        ))
                        .and_then(|mut s| {
                            s.query_row(
                                params![
                                    partition.tenant.as_str(),
                                    partition.namespace.as_str(),
                                    key.as_str(),
                                    now
                                ],
                                row,
                            )
                            .optional()
                        }),
                    Locator::Id { tenant, id } => tx
                        .prepare_cached(&format!(
                            "DELETE FROM memories WHERE id = ? AND tenant = ? AND {LIVE} \
                             RETURNING namespace, id, user_id"
                        ))
                        .and_then(|mut s| {
                            s.query_row(params![id.to_string(), tenant.as_str(), now], row)
                                .optional()
                        }),
                }
                .map_err(sql_err)?;
                gone.map(|(ns, id, user)| {
                    let partition = Partition::new(at.tenant().clone(), Namespace::new(ns)?);
                    let id = MemoryId::parse(&id).map_err(|e| Error::Corrupted {
                        location: self.path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                    Ok((partition, id, user))
                })
                .transpose()
            },
            |gone| {
                if let Some((partition, id, user)) = gone {
                    self.cache.delete(partition, *id, user.as_deref());
                    self.eraser.deleted(&self.writer);
                }
            },
        )?;
        Ok(deleted.map(|(partition, _, _)| partition))
    }

    /// The live records of these ids in `tenant`: the decoded ones kept, the database for
    /// the others, which then join them. The caller checked that no other process wrote.
    fn read_records(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        let now = self.now();
        let found = self.cache.records().get(tenant, ids, now);
        let missing: Vec<MemoryId> = ids
            .iter()
            .zip(&found.records)
            .filter(|(_, m)| m.is_none())
            .map(|(id, _)| *id)
            .collect();
        if missing.is_empty() {
            return Ok(found.records.into_iter().flatten().collect());
        }
        let read = self.read(|conn| {
            // One point query per id on one connection: a statement over a JSON array of
            // ids was re-prepared by SQLite on most executions, which cost more.
            let mut stmt = conn.prepare_cached(GET_BY_ID).map_err(sql_err)?;
            let mut out = Vec::with_capacity(missing.len());
            for id in &missing {
                let found = stmt
                    .query_row(
                        params![id.to_string(), tenant.as_str(), now.as_millis()],
                        decode,
                    )
                    .optional()
                    .map_err(sql_err)?;
                if let Some(m) = found {
                    out.push(Arc::new(m?));
                }
            }
            Ok(out)
        })?;
        self.cache.records().fill(found.generation, &read);
        let read: HashMap<MemoryId, Arc<Memory>> = read.into_iter().map(|m| (m.id, m)).collect();
        Ok(ids
            .iter()
            .zip(found.records)
            .filter_map(|(id, m)| m.or_else(|| read.get(id).cloned()))
            .collect())
    }

    fn flush_rows(&self, partition: &Partition) -> Result<u64> {
        let now = self.now_ms();
        self.write(|tx| {
            let live: i64 = tx
                .query_row(
                    &format!(
                        "SELECT COUNT(*) FROM memories WHERE tenant = ? AND namespace = ? AND {LIVE}"
                    ),
                    params![partition.tenant.as_str(), partition.namespace.as_str(), now],
                    |r| r.get(0),
                )
                .map_err(sql_err)?;
            tx.execute(
                "DELETE FROM memories WHERE tenant = ? AND namespace = ?",
                params![partition.tenant.as_str(), partition.namespace.as_str()],
            )
            .map_err(sql_err)?;
            Ok(live as u64)
        })
    }

    /// The tenant's namespaces with a live record: the next name is found through the
    /// partition index from the last one (a jump per namespace, not a read of every record),
    /// then one live record is looked for in it.
    fn namespaces_of(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.read(|conn| {
            let mut next = conn
                .prepare_cached(
                    "SELECT namespace FROM memories WHERE tenant = ?1 AND namespace > ?2 \
                     ORDER BY namespace LIMIT 1",
                )
                .map_err(sql_err)?;
            let mut live = conn
                .prepare_cached(&format!(
                    "SELECT EXISTS (SELECT 1 FROM memories WHERE tenant = ?1 AND namespace = ?2 \
                     AND {LIVE})"
                ))
                .map_err(sql_err)?;
            let now = self.now_ms();
            let mut out = Vec::new();
            let mut after = String::new();
            while let Some(name) = next
                .query_row(params![tenant.as_str(), after], |r| r.get::<_, String>(0))
                .optional()
                .map_err(sql_err)?
            {
                let has_live: bool = live
                    .query_row(params![tenant.as_str(), name, now], |r| r.get(0))
                    .map_err(sql_err)?;
                if has_live {
                    out.push(Namespace::new(name.clone()).map_err(|e| Error::Corrupted {
                        location: self.path.display().to_string(),
                        reason: e.to_string(),
                    })?);
                }
                after = name;
            }
            Ok(out)
        })
    }
}

impl muisti_core::Backup for SqliteStore {
    fn format(&self) -> &'static str {
        "sqlite"
    }

    /// `VACUUM INTO` on a connection of its own: one read transaction, so the copy is the
    /// database at one commit while writers go on (WAL), compacted.
    fn backup_to(&self, to: &Path) -> Result<()> {
        if to.exists() {
            return Err(Error::invalid(
                "backup",
                format!("{} exists already", to.display()),
            ));
        }
        let conn = Connection::open_with_flags(&self.path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(sql_err)?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(sql_err)?;
        let target = to
            .to_str()
            .ok_or_else(|| Error::invalid("backup", format!("{} is not UTF-8", to.display())))?;
        conn.execute("VACUUM INTO ?1", [target]).map_err(sql_err)?;
        Ok(())
    }
}

impl Store for SqliteStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "sqlite",
            location: self.location(),
            capabilities: Capabilities {
                native_text: true,
                native_vector: true,
                persistent: true,
                multi_process: true,
            },
        }
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn put(&self, put: Put) -> Result<Written> {
        put.validate(&self.limits)?;
        let now = self.now();
        self.write_fresh(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            let (written, fresh) = put_in(tx, put, now)?;
            Ok((purged, written, vec![fresh]))
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        self.write_fresh(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            let (written, fresh): (Vec<Written>, Vec<Fresh>) = puts
                .into_iter()
                .map(|p| put_in(tx, p, now))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .unzip();
            Ok((purged, written, fresh))
        })
    }

    fn backup(&self) -> Option<&dyn muisti_core::Backup> {
        Some(self)
    }

    /// Sets the secondary indexes aside when the store holds fewer than
    /// 10,000 rows (`BULK_LOAD_MAX_ROWS`), and builds them again at the end (see
    /// `migrate::set_indexes_aside`). At a million records this takes an import from keeping
    /// six B-trees in step, one at random (the content hashes), to appending rows and
    /// sorting each index once.
    fn bulk_load(&self, load: &mut dyn FnMut() -> Result<u64>) -> Result<u64> {
        let set_aside = set_indexes_aside(&mut self.writer(), BULK_LOAD_MAX_ROWS)?;
        let loaded = load();
        if set_aside {
            let restored = restore_indexes(&mut self.writer());
            let n = loaded?;
            restored?;
            return Ok(n);
        }
        loaded
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let records = Record::admit(records, &self.limits, self.now())?;
        // Rows are removed and replaced wholesale: the in-memory copies are dropped, as
        // after a purge, and loaded again when next used.
        self.write_then(
            |tx| {
                for r in &records {
                    import_in(tx, r)?;
                }
                Ok(records.len() as u64)
            },
            |_| self.cache.invalidate_all(),
        )
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        self.write_fresh(|tx| {
            let (memory, fresh) = update_in(tx, req, now, &self.limits)?;
            Ok((0, memory, vec![fresh]))
        })
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let (partition, key) = match at {
            Locator::Id { tenant, id } => {
                return Ok(self.get_many(tenant, std::slice::from_ref(id))?.pop());
            }
            Locator::Key { partition, key } => (partition, key),
        };
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(GET_BY_KEY).map_err(sql_err)?;
            stmt.query_row(
                params![
                    partition.tenant.as_str(),
                    partition.namespace.as_str(),
                    key.as_str(),
                    self.now_ms()
                ],
                decode,
            )
            .optional()
            .map_err(sql_err)?
            .transpose()
        })
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        self.list_checked(query, &mut None)
    }

    /// One check for other processes' writes for all the queries, then [`Store::list`]'s
    /// reading of each.
    fn list_many(&self, queries: &[ListQuery]) -> Result<Vec<Page>> {
        let mut version = None;
        queries
            .iter()
            .map(|q| self.list_checked(q, &mut version))
            .collect()
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        if needs_rust_filter(filter) {
            return Ok(muisti_core::list_all(self, partition, filter)?.len() as u64);
        }
        self.read(|conn| {
            let mut sql = format!(
                "SELECT COUNT(*) FROM memories WHERE tenant = ? AND namespace = ? AND {LIVE}"
            );
            let mut args = vec![
                SqlValue::Text(partition.tenant.as_str().to_owned()),
                SqlValue::Text(partition.namespace.as_str().to_owned()),
                SqlValue::Integer(self.now_ms()),
            ];
            filter_sql(filter, &mut sql, &mut args);
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let n: i64 = stmt
                .query_row(rusqlite::params_from_iter(args), |r| r.get(0))
                .map_err(sql_err)?;
            Ok(n as u64)
        })
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now_ms();
        Ok(self.delete_row(at, now)?.is_some())
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let out = self.flush_rows(partition);
        self.cache.invalidate(partition);
        if out.as_ref().is_ok_and(|n| *n > 0) {
            self.eraser.deleted(&self.writer);
        }
        out
    }

    fn erase_deleted(&self) -> Result<()> {
        // What the checkpoint cannot finish now (readers hold it) the eraser's thread does.
        if !self.eraser.now(&self.writer) {
            self.eraser.deleted(&self.writer);
        }
        Ok(())
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.namespaces_of(tenant)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // A small row per record in `memory_access`, not a rewrite of the record.
        let write = |tx: &rusqlite::Transaction<'_>| {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO memory_access (rowid, access_count, last_accessed_at) \
                     SELECT rowid, 1, ?1 FROM memories WHERE id = ?2 AND tenant = ?3 \
                     AND (expires_at IS NULL OR expires_at > ?1) \
                     ON CONFLICT (rowid) DO UPDATE SET access_count = access_count + 1, \
                     last_accessed_at = excluded.last_accessed_at",
                )
                .map_err(sql_err)?;
            for id in ids {
                stmt.execute(params![at.as_millis(), id.to_string(), tenant.as_str()])
                    .map_err(sql_err)?;
            }
            Ok(())
        };
        self.write_then(write, |_| self.cache.count_access(tenant, ids, at))
    }

    fn purge_expired(&self) -> Result<u64> {
        let n = self.write(|tx| purge_in(tx, self.now_ms()))?;
        if n > 0 {
            self.cache.invalidate_all();
            self.eraser.deleted(&self.writer);
        }
        Ok(n)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT DISTINCT tenant FROM memories WHERE {LIVE} ORDER BY tenant"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([self.now_ms()], |r| r.get::<_, String>(0))
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let name = r.map_err(sql_err)?;
                out.push(Tenant::new(name).map_err(|e| Error::Corrupted {
                    location: self.path.display().to_string(),
                    reason: e.to_string(),
                })?);
            }
            Ok(out)
        })
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let now = self.now_ms();
        let n = self.write(|tx| {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "UPDATE memories SET vector = ?, embedding_model = ? \
                     WHERE id = ? AND tenant = ? AND {LIVE}"
                ))
                .map_err(sql_err)?;
            let mut n = 0;
            for v in vectors {
                n += stmt
                    .execute(params![
                        vector_to_bytes(&v.vector),
                        v.model,
                        v.id.to_string(),
                        tenant.as_str(),
                        now
                    ])
                    .map_err(sql_err)? as u64;
            }
            Ok(n)
        })?;
        self.cache.invalidate_all();
        Ok(n)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        let part = self.cached(&query.partition, query.filter.user_id.as_deref())?;
        Ok(part.nearest(&query.filter, &query.vector, query.limit, self.now()))
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        Ok(self
            .get_many_shared(tenant, ids)?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    /// The decoded records this store keeps, handed out as they are kept.
    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // After checking that no other process wrote.
        self.cache.validate(self.data_version()?);
        self.read_records(tenant, ids)
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.read(|conn| {
            let mut sql = format!(
                "SELECT id, embedding_model, vector, {COLUMNS} FROM memories \
                 WHERE tenant = ? AND namespace = ? AND {LIVE} AND vector IS NOT NULL"
            );
            let mut args = partition_args(partition, self.now_ms());
            filter_sql(filter, &mut sql, &mut args);
            let rust_filter = needs_rust_filter(filter);
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let mut rows = stmt
                .query(rusqlite::params_from_iter(args))
                .map_err(sql_err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(sql_err)? {
                if rust_filter {
                    let m = decode_from(row, 3).map_err(sql_err)??;
                    if !filter.matches(&m) {
                        continue;
                    }
                }
                let id: String = row.get(0).map_err(sql_err)?;
                let model: Option<String> = row.get(1).map_err(sql_err)?;
                let blob: Vec<u8> = row.get(2).map_err(sql_err)?;
                let corrupted = |what: &str| Error::Corrupted {
                    location: format!("sqlite row id {id}"),
                    reason: what.to_owned(),
                };
                out.push(StoredVector {
                    id: MemoryId::parse(&id).map_err(|_| corrupted("bad id"))?,
                    model: model.ok_or_else(|| corrupted("a vector without a model"))?,
                    vector: vector_from_bytes(&blob).ok_or_else(|| corrupted("bad vector"))?,
                });
            }
            Ok(out)
        })
    }

    fn vectors_for(&self, records: &[Memory]) -> Result<Vec<Option<Vec<f32>>>> {
        let now = self.now_ms();
        let mut found: HashMap<String, Vec<f32>> = HashMap::with_capacity(records.len());
        self.read(|conn| {
            for chunk in records.chunks(500) {
                let marks = vec!["(?, ?)"; chunk.len()].join(", ");
                let sql = format!(
                    "SELECT id, vector FROM memories WHERE (tenant, id) IN (VALUES {marks}) \
                     AND vector IS NOT NULL AND {LIVE}"
                );
                let mut args: Vec<SqlValue> = Vec::with_capacity(chunk.len() * 2 + 1);
                for m in chunk {
                    args.push(SqlValue::Text(m.partition.tenant.as_str().to_owned()));
                    args.push(SqlValue::Text(m.id.to_string()));
                }
                args.push(SqlValue::Integer(now));
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(args))
                    .map_err(sql_err)?;
                while let Some(row) = rows.next().map_err(sql_err)? {
                    let id: String = row.get(0).map_err(sql_err)?;
                    let blob: Vec<u8> = row.get(1).map_err(sql_err)?;
                    let vector = vector_from_bytes(&blob).ok_or_else(|| Error::Corrupted {
                        location: format!("sqlite row id {id}"),
                        reason: "bad vector".into(),
                    })?;
                    found.insert(id, vector);
                }
            }
            Ok(())
        })?;
        Ok(records
            .iter()
            .map(|m| {
                found
                    .remove(&m.id.to_string())
                    .filter(|_| m.embedding_model.is_some())
            })
            .collect())
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let terms = query_terms(&query.query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let part = self.cached(&query.partition, query.filter.user_id.as_deref())?;
        Ok(part.bm25(&query.filter, &terms, query.limit, self.now()))
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        // From the copies the searches just used; the database for ids no copy holds (a
        // copy dropped meanwhile, or ids from elsewhere).
        let now = self.now();
        let cached = self.cache.rank_fields(partition, ids, now);
        if cached.iter().all(Option::is_some) {
            return Ok(cached.into_iter().flatten().flatten().collect());
        }
        // Those as the store's records say (the store contract's own reading).
        let missing: Vec<MemoryId> = ids
            .iter()
            .zip(&cached)
            .filter(|(_, c)| c.is_none())
            .map(|(id, _)| *id)
            .collect();
        let read: HashMap<MemoryId, RankFields> = self
            .get_many(&partition.tenant, &missing)?
            .iter()
            .filter(|m| m.partition == *partition)
            .map(|m| (m.id, RankFields::of(m)))
            .collect();
        Ok(ids
            .iter()
            .zip(cached)
            .filter_map(|(id, c)| c.unwrap_or_else(|| read.get(id).cloned()))
            .collect())
    }

    fn health_check(&self) -> Health {
        match self.read(|c| {
            c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                .map_err(sql_err)
        }) {
            Ok(_) => Health {
                ok: true,
                detail: format!("sqlite {}", self.path.display()),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached statement with `LIMIT ?` is not prepared again on every use: the
    /// connection plans without the bound values.
    #[test]
    fn connections_plan_without_bound_values() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let conn = connect(&dir.path().join("t.db"), Durability::Normal, 0).expect("opens");
        assert!(
            conn.db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG)
                .expect("reads the setting")
        );
    }
}
