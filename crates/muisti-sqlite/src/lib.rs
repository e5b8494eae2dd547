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
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use cache::{CachedRow, PartitionCache, PartitionCaches};
use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Owner, Page, Partition, Put, Result, Scored, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange, VectorQuery,
    WriteStatus, Written,
    text::{CONTEXT_WEIGHT, query_terms, token_string, vector_from_bytes, vector_to_bytes},
};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params, types::Value as SqlValue};

mod cache;
mod fts;
mod row;

use fts::{fts_query, owner_term, partition_term, scope_terms};
use row::{decode, decode_from, write_row};

const SCHEMA_VERSION: i64 = 3;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 3] = [
    include_str!("schema.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
];
const IDLE_READERS: usize = 8;

macro_rules! columns {
    () => {
        "id, tenant, namespace, key, content, content_is_json, category, scope, \
    user_id, agent_id, session_id, tags, metadata, importance, source, confidence, content_hash, \
    state, superseded_by, valid_from, valid_until, created_at, updated_at, last_accessed_at, \
    access_count, expires_at, embedding_model, context, version"
    };
}

macro_rules! live {
    () => {
        "(expires_at IS NULL OR expires_at > ?)"
    };
}

const COLUMNS: &str = columns!();
/// The index of a `rowid` selected right after [`COLUMNS`].
const ROWID_AFTER_COLUMNS: usize = 29;

/// [`COLUMNS`] with the `m.` alias.
fn prefixed_columns() -> &'static str {
    static COLS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    COLS.get_or_init(|| {
        COLUMNS
            .split(',')
            .map(|c| format!("m.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    })
}
const LIVE: &str = live!();
const GET_BY_KEY: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM memories WHERE tenant = ? AND namespace = ? AND key = ? AND ",
    live!()
);
const GET_BY_ID: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM memories WHERE id = ? AND tenant = ? AND ",
    live!()
);
const GET_FOR_WRITE: &str = concat!(
    "SELECT ",
    columns!(),
    ", rowid FROM memories WHERE tenant = ? AND namespace = ? AND key = ?"
);
const GET_BY_ID_FOR_WRITE: &str = concat!(
    "SELECT ",
    columns!(),
    ", rowid FROM memories WHERE id = ? AND tenant = ?"
);
pub(crate) const INSERT: &str = concat!(
    "INSERT INTO memories (",
    columns!(),
    ", vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)"
);

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
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    cache: PartitionCaches,
    ann_threshold: usize,
    clock: Arc<dyn Clock>,
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

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`.
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
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                Error::backend("sqlite", format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let writer = connect(&path, durability)?;
        migrate(&writer, &path)?;
        Ok(Self {
            path,
            limits,
            durability,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            cache: PartitionCaches::default(),
            ann_threshold: cache::ANN_THRESHOLD,
            clock: Arc::new(SystemClock),
        })
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

    /// Whether the HNSW graph of a partition is built (for monitoring and tests).
    pub fn ann_ready(&self, partition: &Partition) -> bool {
        self.cache.peek(partition).is_some_and(|c| c.ann_ready())
    }

    /// How many searches of a partition's current in-memory copy its HNSW graph answered.
    pub fn ann_searches(&self, partition: &Partition) -> u64 {
        self.cache.peek(partition).map_or(0, |c| c.ann_searches())
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
            None => connect(&self.path, self.durability)?,
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
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(out)
    }

    /// Keeps the vector cache in step with a write: its partitions, or everything when
    /// expired records were purged.
    fn after_write<T>(&self, partitions: &[Partition], out: &Result<(u64, T)>) {
        match out {
            Ok((0, _)) => partitions.iter().for_each(|p| self.cache.invalidate(p)),
            _ => self.cache.invalidate_all(),
        }
    }

    /// `PRAGMA data_version` of the writer connection, which changes when another
    /// connection (another process) commits; `None` while this process is writing (then the
    /// check waits for the next query rather than for the write).
    fn data_version(&self) -> Result<Option<i64>> {
        let conn = match self.writer.try_lock() {
            Ok(c) => c,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
        };
        conn.query_row("PRAGMA data_version", [], |r| r.get(0))
            .map(Some)
            .map_err(sql_err)
    }

    /// Loads a partition's copy, one user's rows next to each other: a user-filtered query
    /// then reads its rows in sequence instead of one cache miss per row.
    fn load_partition(&self, p: &Partition) -> Result<PartitionCache> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    // Only (user, rowid) pairs are sorted; the rows are then read in that
                    // order (sorting the whole rows would hold them all in the sorter).
                    "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories \
                        WHERE tenant = ? AND namespace = ? ORDER BY user_id, id) \
                     SELECT m.id, m.user_id, m.agent_id, m.session_id, m.category, m.scope, \
                     m.created_at, m.expires_at, m.vector, f.tokens, f.context \
                     FROM o CROSS JOIN memories m ON m.rowid = o.r \
                     CROSS JOIN memories_fts f ON f.rowid = m.rowid",
                )
                .map_err(sql_err)?;
            let mut rows = stmt
                .query(params![p.tenant.as_str(), p.namespace.as_str()])
                .map_err(sql_err)?;
            let mut out = PartitionCache::new(self.ann_threshold);
            while let Some(r) = rows.next().map_err(sql_err)? {
                let id: String = r.get(0).map_err(sql_err)?;
                let blob: Option<Vec<u8>> = r.get(8).map_err(sql_err)?;
                let terms: String = r.get(9).map_err(sql_err)?;
                let context_terms: Option<String> = r.get(10).map_err(sql_err)?;
                let corrupted = |what: &str| Error::Corrupted {
                    location: format!("sqlite row id {id}"),
                    reason: what.to_owned(),
                };
                let row = CachedRow {
                    id: MemoryId::parse(&id).map_err(|_| corrupted("bad id"))?,
                    owner: Owner {
                        user_id: r.get(1).map_err(sql_err)?,
                        agent_id: r.get(2).map_err(sql_err)?,
                        session_id: r.get(3).map_err(sql_err)?,
                    },
                    category: r.get(4).map_err(sql_err)?,
                    scope: r.get(5).map_err(sql_err)?,
                    created_at: r.get(6).map_err(sql_err)?,
                    expires_at: r.get(7).map_err(sql_err)?,
                };
                let vector = blob
                    .map(|b| vector_from_bytes(&b).ok_or_else(|| corrupted("bad vector")))
                    .transpose()?;
                out.push(row, vector.as_deref(), &terms, context_terms.as_deref());
            }
            Ok(out)
        })
    }

    /// The partition's in-memory copy, loaded if missing or stale.
    fn cached(&self, p: &Partition) -> Result<std::sync::Arc<PartitionCache>> {
        let version = self.data_version()?;
        self.cache.get(p, version, || self.load_partition(p))
    }

    fn location(&self) -> String {
        format!("sqlite://{}", self.path.display())
    }
}

fn connect(path: &Path, durability: Durability) -> Result<Connection> {
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
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON; \
         PRAGMA cache_size=-32768; PRAGMA mmap_size=268435456; PRAGMA temp_store=MEMORY; \
         PRAGMA wal_autocheckpoint=8192; PRAGMA journal_size_limit=67108864;"
    ))
    .map_err(|e| match sql_err(e) {
        Error::Corrupted { reason, .. } => Error::Corrupted {
            location: path.display().to_string(),
            reason,
        },
        other => other,
    })?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let read_version = || -> Result<i64> {
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err)
    };
    let too_new = |version: i64| Error::Corrupted {
        location: path.display().to_string(),
        reason: format!(
            "schema version {version} was written by a newer muisti (this one knows {SCHEMA_VERSION})"
        ),
    };
    let version = read_version()?;
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    // Take the write lock, then look again: another process may have migrated meanwhile.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err)?;
    let version = read_version()?;
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
        tx.execute_batch(sql).map_err(sql_err)?;
    }
    // Records written before version 2 have no full-text entry (read with today's columns,
    // so after every migration).
    if (1..2).contains(&version) {
        backfill_fts(&tx)?;
    }
    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(sql_err)?;
    tx.commit().map_err(sql_err)
}

/// Indexes every existing record in the full-text table (migration to version 2).
fn backfill_fts(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let mut select = tx
        .prepare(&format!("SELECT {COLUMNS}, rowid FROM memories"))
        .map_err(sql_err)?;
    let rows = select
        .query_map([], |row| {
            Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?))
        })
        .map_err(sql_err)?;
    let mut insert = tx
        .prepare("INSERT INTO memories_fts (rowid, tokens, context, scope) VALUES (?, ?, ?, ?)")
        .map_err(sql_err)?;
    for row in rows {
        let (rowid, m) = row.map_err(sql_err)?;
        let m = m?;
        insert
            .execute(params![
                rowid,
                token_string(&m.index_text()),
                m.context.as_deref().map(token_string),
                scope_terms(&m)
            ])
            .map_err(sql_err)?;
    }
    Ok(())
}

/// Applies one validated write inside a transaction.
fn put_in(tx: &rusqlite::Transaction<'_>, mut put: Put, now: Timestamp) -> Result<Written> {
    let vector = put.embedding.take();
    let existing = match &put.key {
        None => None,
        Some(key) => {
            let mut stmt = tx.prepare_cached(GET_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(
                params![
                    put.partition.tenant.as_str(),
                    put.partition.namespace.as_str(),
                    key.as_str()
                ],
                |row| Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?)),
            )
            .optional()
            .map_err(sql_err)?
        }
    };
    let (rowid, live) = match existing {
        Some((rowid, m)) => {
            let m = m?;
            if m.is_expired(now) {
                (Some(rowid), None)
            } else {
                (Some(rowid), Some(m))
            }
        }
        None => (None, None),
    };
    let memory = put.apply(live.as_ref(), now);
    let status = if live.is_some() {
        WriteStatus::Updated
    } else {
        WriteStatus::Created
    };
    write_row(tx, &memory, vector.as_deref(), rowid)?;
    Ok(Written { memory, status })
}

/// Applies one update inside a transaction: the row is read, [`UpdateRequest::apply`] makes
/// the new record, and the row (with its full-text entry and vector) is rewritten.
fn update_in(
    tx: &rusqlite::Transaction<'_>,
    req: &UpdateRequest,
    now: Timestamp,
    limits: &Limits,
) -> Result<Memory> {
    let found = match &req.at {
        Locator::Key { partition, key } => {
            let mut stmt = tx.prepare_cached(GET_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(
                params![
                    partition.tenant.as_str(),
                    partition.namespace.as_str(),
                    key.as_str()
                ],
                |row| Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?)),
            )
        }
        Locator::Id { tenant, id } => {
            let mut stmt = tx.prepare_cached(GET_BY_ID_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(params![id.to_string(), tenant.as_str()], |row| {
                Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?))
            })
        }
    }
    .optional()
    .map_err(sql_err)?;
    let (rowid, live) = match found {
        Some((rowid, m)) => {
            let m = m?;
            let live = (!m.is_expired(now) && req.at.addresses(&m)).then_some(m);
            (Some(rowid), live)
        }
        None => (None, None),
    };
    let (memory, change) = req.apply(live.as_ref(), now, limits)?;
    let vector = match change {
        VectorChange::Set(v) => Some(v),
        VectorChange::Drop => None,
        VectorChange::Keep => {
            let blob: Option<Vec<u8>> = tx
                .prepare_cached("SELECT vector FROM memories WHERE rowid = ?")
                .and_then(|mut s| s.query_row([rowid], |r| r.get(0)))
                .map_err(sql_err)?;
            match blob {
                Some(b) => Some(vector_from_bytes(&b).ok_or_else(|| Error::Corrupted {
                    location: format!("sqlite row id {}", memory.id),
                    reason: "bad vector".into(),
                })?),
                None => None,
            }
        }
    };
    write_row(tx, &memory, vector.as_deref(), rowid)?;
    Ok(memory)
}

fn purge_in(tx: &rusqlite::Transaction<'_>, now: i64) -> Result<u64> {
    tx.prepare_cached(
        "DELETE FROM memories_fts WHERE rowid IN \
         (SELECT rowid FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?)",
    )
    .and_then(|mut s| s.execute([now]))
    .map_err(sql_err)?;
    let mut stmt = tx
        .prepare_cached("DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?")
        .map_err(sql_err)?;
    Ok(stmt.execute([now]).map_err(sql_err)? as u64)
}

/// The SQL conditions for the columns a filter can be checked on in SQL; tags and metadata
/// are checked in Rust by [`Filter::matches`].
fn filter_sql(filter: &Filter, sql: &mut String, args: &mut Vec<SqlValue>) {
    filter_sql_prefixed(filter, "", sql, args);
}

/// [`filter_sql`] for a query where the memories table has an alias (`prefix` is `m.`).
fn filter_sql_prefixed(filter: &Filter, prefix: &str, sql: &mut String, args: &mut Vec<SqlValue>) {
    let mut eq = |col: &str, v: Option<String>| {
        if let Some(v) = v {
            sql.push_str(&format!(" AND {prefix}{col} = ?"));
            args.push(SqlValue::Text(v));
        }
    };
    eq("user_id", filter.user_id.clone());
    eq("agent_id", filter.agent_id.clone());
    eq("session_id", filter.session_id.clone());
    eq(
        "category",
        filter.category.as_ref().map(|c| c.as_str().to_owned()),
    );
    eq("scope", filter.scope.map(|s| s.as_str().to_owned()));
    if let Some(h) = &filter.content_hash {
        sql.push_str(&format!(" AND {prefix}content_hash = ?"));
        args.push(SqlValue::Text(h.clone()));
    }
    if let Some(t) = filter.created_after {
        sql.push_str(&format!(" AND {prefix}created_at >= ?"));
        args.push(SqlValue::Integer(t.as_millis()));
    }
    if let Some(t) = filter.created_before {
        sql.push_str(&format!(" AND {prefix}created_at < ?"));
        args.push(SqlValue::Integer(t.as_millis()));
    }
}

/// Tenant, namespace and the current time: the arguments of a live-partition condition.
fn partition_args(p: &Partition, now: i64) -> Vec<SqlValue> {
    vec![
        SqlValue::Text(p.tenant.as_str().to_owned()),
        SqlValue::Text(p.namespace.as_str().to_owned()),
        SqlValue::Integer(now),
    ]
}

fn needs_rust_filter(filter: &Filter) -> bool {
    !filter.tags.is_empty() || !filter.metadata.is_empty()
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
        // Without statistics the planner prefers the (tenant, namespace, id) index, which
        // avoids the sort but scans the whole partition for a content hash (the dedupe check
        // of every write): the hash index finds the few candidates directly.
        let index = if filter.content_hash.is_some() {
            " INDEXED BY memories_hash"
        } else {
            ""
        };
        let mut sql = format!(
            "SELECT {COLUMNS} FROM memories{index} WHERE tenant = ? AND namespace = ? AND {LIVE}"
        );
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
        sql.push_str(" ORDER BY id LIMIT ?");
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
    fn delete_row(&self, at: &Locator, now: i64) -> Result<bool> {
        self.write(|tx| {
            let rowid: Option<i64> = match at {
                Locator::Key { partition, key } => tx
                    .prepare_cached(&format!(
                        "DELETE FROM memories WHERE tenant = ? AND namespace = ? AND key = ? \
                         AND {LIVE} RETURNING rowid"
                    ))
                    .and_then(|mut s| {
                        s.query_row(
                            params![
                                partition.tenant.as_str(),
                                partition.namespace.as_str(),
                                key.as_str(),
                                now
                            ],
                            |r| r.get(0),
                        )
                        .optional()
                    }),
                Locator::Id { tenant, id } => tx
                    .prepare_cached(&format!(
                        "DELETE FROM memories WHERE id = ? AND tenant = ? AND {LIVE} RETURNING rowid"
                    ))
                    .and_then(|mut s| {
                        s.query_row(params![id.to_string(), tenant.as_str(), now], |r| r.get(0))
                            .optional()
                    }),
            }
            .map_err(sql_err)?;
            if let Some(rowid) = rowid {
                tx.prepare_cached("DELETE FROM memories_fts WHERE rowid = ?")
                    .and_then(|mut s| s.execute([rowid]))
                    .map_err(sql_err)?;
            }
            Ok(rowid.is_some())
        })
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
                "DELETE FROM memories_fts WHERE rowid IN \
                 (SELECT rowid FROM memories WHERE tenant = ? AND namespace = ?)",
                params![partition.tenant.as_str(), partition.namespace.as_str()],
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

    fn namespaces_of(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT DISTINCT namespace FROM memories WHERE tenant = ? AND {LIVE} ORDER BY namespace"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(params![tenant.as_str(), self.now_ms()], |r| r.get::<_, String>(0))
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let name = r.map_err(sql_err)?;
                out.push(Namespace::new(name).map_err(|e| Error::Corrupted {
                    location: self.path.display().to_string(),
                    reason: e.to_string(),
                })?);
            }
            Ok(out)
        })
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
        let partition = put.partition.clone();
        let out = self.write(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            Ok((purged, put_in(tx, put, now)?))
        });
        self.after_write(std::slice::from_ref(&partition), &out);
        out.map(|(_, w)| w)
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        let mut partitions: Vec<Partition> = puts.iter().map(|p| p.partition.clone()).collect();
        partitions.sort();
        partitions.dedup();
        let out = self.write(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            let written: Result<Vec<Written>> =
                puts.into_iter().map(|p| put_in(tx, p, now)).collect();
            Ok((purged, written?))
        });
        self.after_write(&partitions, &out);
        out.map(|(_, w)| w)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        let out = self.write(|tx| update_in(tx, req, now, &self.limits));
        if let Ok(m) = &out {
            self.cache.invalidate(&m.partition);
        }
        out
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        self.read(|conn| {
            let found = match at {
                Locator::Key { partition, key } => {
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
                }
                Locator::Id { tenant, id } => {
                    let mut stmt = conn.prepare_cached(GET_BY_ID).map_err(sql_err)?;
                    stmt.query_row(
                        params![id.to_string(), tenant.as_str(), self.now_ms()],
                        decode,
                    )
                    .optional()
                    .map_err(sql_err)?
                }
            };
            found.transpose()
        })
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
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
        let out = self.delete_row(at, now);
        // After the commit, so that no reader caches what was just deleted.
        match at {
            Locator::Key { partition, .. } => self.cache.invalidate(partition),
            Locator::Id { .. } => self.cache.invalidate_all(),
        }
        out
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let out = self.flush_rows(partition);
        self.cache.invalidate(partition);
        out
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.namespaces_of(tenant)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.write(|tx| {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? \
                     WHERE id = ? AND tenant = ? AND {LIVE}"
                ))
                .map_err(sql_err)?;
            for id in ids {
                stmt.execute(params![
                    at.as_millis(),
                    id.to_string(),
                    tenant.as_str(),
                    at.as_millis()
                ])
                .map_err(sql_err)?;
            }
            Ok(())
        })
    }

    fn purge_expired(&self) -> Result<u64> {
        let n = self.write(|tx| purge_in(tx, self.now_ms()))?;
        if n > 0 {
            self.cache.invalidate_all();
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
        if !cache::answerable(&query.filter) {
            return muisti_core::exact_vector_search(self, query);
        }
        let part = self.cached(&query.partition)?;
        Ok(part.nearest(&query.filter, &query.vector, query.limit, self.now()))
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = serde_json::to_string(&ids.iter().map(ToString::to_string).collect::<Vec<_>>())
            .map_err(|e| Error::backend("sqlite", e))?;
        let mut found: std::collections::HashMap<MemoryId, Memory> = self.read(|conn| {
            // One statement for any number of ids: the ids travel as a JSON array.
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {} FROM json_each(?) j CROSS JOIN memories m \
                     ON m.id = j.value WHERE m.tenant = ? \
                     AND (m.expires_at IS NULL OR m.expires_at > ?)",
                    prefixed_columns()
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(params![list, tenant.as_str(), self.now_ms()], decode)
                .map_err(sql_err)?;
            let mut out = std::collections::HashMap::with_capacity(ids.len());
            for r in rows {
                let m = r.map_err(sql_err)??;
                out.insert(m.id, m);
            }
            Ok(out)
        })?;
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
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

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        if cache::answerable(&query.filter) {
            let terms = query_terms(&query.query);
            if terms.is_empty() {
                return Ok(Vec::new());
            }
            let part = self.cached(&query.partition)?;
            return Ok(part.bm25(&query.filter, &terms, query.limit, self.now()));
        }
        let Some(terms) = fts_query(&query.query) else {
            return Ok(Vec::new());
        };
        // Narrow the match inside the full-text index to the most selective scope term (the
        // owner's, else the partition's), so its cost follows that scope's size rather than
        // the whole table's. The SQL conditions below still decide.
        let owner = [
            ('u', &query.filter.user_id),
            ('s', &query.filter.session_id),
            ('a', &query.filter.agent_id),
        ]
        .into_iter()
        .find_map(|(kind, v)| v.as_ref().map(|v| owner_term(kind, v)));
        let scope = owner.unwrap_or_else(|| partition_term(&query.partition));
        let expr = format!("scope : {scope} AND ({{tokens context}} : ({terms}))");
        let rust_filter = needs_rust_filter(&query.filter);
        self.read(|conn| {
            // 1. The best matches by BM25, from the full-text index alone.
            // 2. Of those, the rows that pass the SQL conditions (expiry, filters), in one
            //    statement; tags and metadata are checked on the decoded record.
            // If too few pass and the first step may have cut more, ask for more.
            let mut wanted = query.limit + 16;
            loop {
                let mut stmt = conn
                    .prepare_cached(&format!(
                        "SELECT rowid, bm25(memories_fts, 1.0, {CONTEXT_WEIGHT}, 0.0) AS s \
                         FROM memories_fts WHERE memories_fts MATCH ? ORDER BY s LIMIT ?"
                    ))
                    .map_err(sql_err)?;
                let ranked: Vec<(i64, f64)> = stmt
                    .query_map(params![expr, wanted as i64], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(sql_err)?
                    .collect::<rusqlite::Result<_>>()
                    .map_err(sql_err)?;
                let rowids =
                    serde_json::to_string(&ranked.iter().map(|(r, _)| *r).collect::<Vec<_>>())
                        .map_err(|e| Error::backend("sqlite", e))?;
                let extra = if rust_filter {
                    format!(", {}", prefixed_columns())
                } else {
                    String::new()
                };
                let mut sql = format!(
                    "SELECT m.rowid, m.id{extra} FROM json_each(?) j \
                     CROSS JOIN memories m ON m.rowid = j.value \
                     WHERE m.tenant = ? AND m.namespace = ? \
                     AND (m.expires_at IS NULL OR m.expires_at > ?)"
                );
                let mut args = vec![SqlValue::Text(rowids)];
                args.extend(partition_args(&query.partition, self.now_ms()));
                filter_sql_prefixed(&query.filter, "m.", &mut sql, &mut args);
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(args))
                    .map_err(sql_err)?;
                let mut passed: std::collections::HashMap<i64, MemoryId> =
                    std::collections::HashMap::new();
                while let Some(row) = rows.next().map_err(sql_err)? {
                    if rust_filter {
                        let m = decode_from(row, 2).map_err(sql_err)??;
                        if !query.filter.matches(&m) {
                            continue;
                        }
                    }
                    let rowid: i64 = row.get(0).map_err(sql_err)?;
                    let id: String = row.get(1).map_err(sql_err)?;
                    let id = MemoryId::parse(&id).map_err(|e| Error::Corrupted {
                        location: format!("sqlite row id {id}"),
                        reason: e.to_string(),
                    })?;
                    passed.insert(rowid, id);
                }
                let out: Vec<Scored> = ranked
                    .iter()
                    .filter_map(|(rowid, rank)| {
                        passed.get(rowid).map(|id| Scored {
                            id: *id,
                            // FTS5's bm25() is lower-is-better.
                            score: -*rank as f32,
                        })
                    })
                    .take(query.limit)
                    .collect();
                if out.len() >= query.limit || ranked.len() < wanted {
                    return Ok(out);
                }
                wanted *= 4;
            }
        })
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
