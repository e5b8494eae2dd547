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

pub use cache::CopyMemory;
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
mod connect;
mod erase;
mod load;
mod migrate;
mod packed;
mod records;
mod row;
mod sql;
mod store;
mod write;

use connect::connect;
use load::load_on;

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

/// What a [`SqliteStore`] holds in memory (estimated from its lists' lengths and
/// capacities), by part, in bytes: the copies and their graphs within `budget`, and the
/// decoded records within a share of it on top. SQLite's own page cache (32 MiB a
/// connection at most), the file's mapped pages and the process's code and models are
/// outside these figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheMemory {
    /// The copies' budget (`cache_mb`).
    pub budget: usize,
    /// The copies, graphs aside.
    pub copies: CopyMemory,
    /// The HNSW graphs built over copies.
    pub graphs: usize,
    /// The decoded records.
    pub records: usize,
    /// The decoded records' budget.
    pub records_budget: usize,
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
    /// Background loads of whole partitions ([`SqliteStore::warm`]): each holds a
    /// connection of its own, joined when the store is dropped.
    loads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        self.eraser.close();
        // No connection outlives the store: the last one to close checkpoints the
        // write-ahead log and removes it (with what deleted records left in it).
        let loads = std::mem::take(self.loads.get_mut().unwrap_or_else(|p| p.into_inner()));
        for load in loads {
            let _ = load.join();
        }
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
            loads: Mutex::new(Vec::new()),
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

    /// What the store holds in memory now (estimated), by part.
    pub fn cache_memory(&self) -> CacheMemory {
        self.cache.memory()
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
    /// background (if none is loaded or loading, it has at most [`WARM_MAX_ROWS`] rows, and
    /// its size, estimated from this copy's bytes per row, is at most [`WARM_SHARE`] of the
    /// budget), which then answers every query of the partition.
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
        let started = std::thread::Builder::new()
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
                    .filter(|n| *n <= WARM_MAX_ROWS)
                    .map(|n| n.saturating_mul(per_row))
                    .filter(|b| *b <= cache.budget() / WARM_SHARE)
                else {
                    return;
                };
                if let Lookup::Load(ticket) = cache.lookup(&p, None, None) {
                    ticket.reserve(bytes);
                    let _ = load_on(&conn, &writer, ticket, ann_threshold);
                }
            });
        if let Ok(load) = started {
            let mut loads = self.loads.lock().unwrap_or_else(|p| p.into_inner());
            loads.retain(|l| !l.is_finished());
            loads.push(load);
        }
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
        let (sql, args) = Self::page_sql(partition, filter, after, limit, now);
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

    /// The statement of [`SqliteStore::select_page`] and its arguments.
    fn page_sql(
        partition: &Partition,
        filter: &Filter,
        after: Option<MemoryId>,
        limit: usize,
        now: i64,
    ) -> (String, Vec<SqlValue>) {
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
        (sql, args)
    }
}

impl SqliteStore {
    /// Deletes the addressed live records in one transaction; the ids of those there were,
    /// in the order addressed. The loaded copies that held them drop their rows in place,
    /// after the commit and while the writer connection is held (so in commit order; a load
    /// racing it records it).
    fn delete_rows(&self, ats: &[Locator], now: i64) -> Result<Vec<MemoryId>> {
        type Gone = Vec<(Partition, MemoryId, Option<String>)>;
        if ats.is_empty() {
            return Ok(Vec::new());
        }
        let row = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(String, String, Option<String>)> {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        };
        let gone: Gone = self.write_then(
            |tx| {
                let mut gone = Vec::new();
                for at in ats {
                    let found = match at {
                        Locator::Key { partition, key } => tx
                            .prepare_cached(&format!(
                                "DELETE FROM memories WHERE tenant = ? AND namespace = ? \
                                 AND key = ? AND {LIVE} RETURNING namespace, id, user_id"
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
                    if let Some((ns, id, user)) = found {
                        let partition = Partition::new(at.tenant().clone(), Namespace::new(ns)?);
                        let id = MemoryId::parse(&id).map_err(|e| Error::Corrupted {
                            location: self.path.display().to_string(),
                            reason: e.to_string(),
                        })?;
                        gone.push((partition, id, user));
                    }
                }
                Ok(gone)
            },
            |gone| {
                for (partition, id, user) in gone.iter() {
                    self.cache.delete(partition, *id, user.as_deref());
                }
                if !gone.is_empty() {
                    self.eraser.deleted(&self.writer);
                }
            },
        )?;
        Ok(gone.into_iter().map(|(_, id, _)| id).collect())
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

/// The largest share of the cache's budget a partition's copy of every row may take to be
/// loaded in the background after a one-user load. The copy is built beside the one-user
/// copies it replaces and competes with the queries for the cores while it loads: a
/// partition of a million memories (about 1 GiB) took longer to load than a thousand users'
/// first recalls, and held the peak at 2.8 GiB where the one-user copies alone reached 1.6
/// (docs/benchmarks.md). A larger partition is answered by one-user copies, and by a copy
/// of every row only for a query that names no user.
const WARM_SHARE: usize = 4;

/// The most rows a partition loaded whole in the background may have (besides
/// [`WARM_SHARE`]). A user's first load reads the user's kept parts in a few milliseconds,
/// so a whole copy pays only where it is built quickly: at 200,000 memories of 200 users the
/// background load raised a user's first recall p99 from 2.8 to 5.5 ms and the peak memory
/// from 550 to 890 MiB, for no gain at the median (docs/benchmarks.md).
const WARM_MAX_ROWS: usize = 20_000;

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

    /// A page of one user's records reads that user's index entries, and the dedupe check
    /// of a write (a content hash, with or without a user) the hash index, not a user's or
    /// a partition's every row.
    #[test]
    fn listings_of_a_user_or_a_hash_read_their_own_index() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let conn = connect(&dir.path().join("t.db"), Durability::Normal, 0).expect("opens");
        migrate(&conn, &dir.path().join("t.db")).expect("migrates");
        let p = Partition::of(Namespace::default_ns());
        let plan = |filter: Filter| -> String {
            let (sql, args) = SqliteStore::page_sql(&p, &filter, None, 16, 0);
            let mut stmt = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .expect("plans");
            let rows = stmt
                .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
                .expect("plans");
            rows.map(|r| r.expect("a step"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let user = || Some("u".to_owned());
        let hash = || Some("0123abcd".to_owned());
        let of_user = plan(Filter {
            user_id: user(),
            ..Filter::default()
        });
        assert!(of_user.contains("INDEX memories_user"), "{of_user}");
        for filter in [
            Filter {
                user_id: user(),
                content_hash: hash(),
                ..Filter::default()
            },
            Filter {
                content_hash: hash(),
                ..Filter::default()
            },
        ] {
            let by_hash = plan(filter);
            assert!(by_hash.contains("INDEX memories_hash"), "{by_hash}");
        }
    }
}
