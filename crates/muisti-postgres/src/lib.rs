//! The PostgreSQL store of muisti: `postgres://` and `postgresql://` URLs.
//!
//! The URL is what libpq takes (user, password, host, port, database, `sslmode`, a Unix
//! socket directory as `host=/dir`), plus muisti's own parameters, which are taken out
//! before the rest reaches the driver:
//!
//! * `schema`: the PostgreSQL schema of muisti's tables (default `muisti`; created if
//!   missing); the `vector` extension is looked up in `public`.
//! * `pool_size`: connections per store (default 8).
//! * `ann_threshold`: vectors of one dimension from which an HNSW index is built for them
//!   (default 20,000, as on SQLite; 0 never): see `ann.rs`.
//! * `max_value_bytes`: the write limit, as on every backend.
//!
//! Records, their full-text terms and their vectors are written in one transaction. The
//! terms are the engine's own tokens ([`muisti_core::text::tokenize`]) in `text[]` columns
//! with GIN indexes: a search in the database reads the records that hold a query term, and
//! the engine scores them by its one BM25 definition ([`Bm25::rank_counts`]) with the corpus
//! statistics the same query's filter selects. Vectors are pgvector `vector`s, compared by
//! inner product, through an HNSW index per dimension once there are enough of them.
//!
//! Searches and recall's reads answer from in-process copies of partitions
//! ([`muisti_store::copy`]) kept coherent by generations and a change log that every write
//! transaction advances (see `copies.rs`): any number of processes and servers share one
//! database; a write committed by one is seen by every read of another that starts
//! `staleness_ms` (default 1) after it. More parameters:
//!
//! * `cache_mb`: the memory the copies of one handle take (estimated; default 2048, as
//!   SQLite's; 0 keeps none: every search is then a statement on the database, as is a
//!   search of a partition larger than this);
//! * `staleness_ms`: how long a copy whose version was confirmed answers without asking
//!   again (default 1; 0 asks on every read).
//!
//! **A streaming replica for reads:** `replica=HOST` (a host name, address or Unix socket
//! directory; `replica_port`, by default the primary's; the primary's user, password,
//! database and TLS settings) sends reads (copies' checks and loads, listings, counts, reads
//! by id) to the replica when it has replayed this handle's own last write (access counts
//! excepted) and what the
//! primary had at most `replica_lag_ms` ago (default 1000; 0: everything committed before the
//! read started), else to the primary; writes always go to the primary; a read the replica
//! fails runs again on the primary. See `replica.rs`.
//!
//! TLS is libpq's: `sslmode` (`disable`, `allow`, `prefer` (the default), `require`,
//! `verify-ca`, `verify-full`), `sslrootcert` (a PEM file, or `system`), `sslcert` and
//! `sslkey` (a client certificate); see `tls.rs`.

mod ann;
mod copies;
mod pool;
mod replica;
mod sql;
mod store;
mod tls;

use std::{
    collections::HashMap,
    str::FromStr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, RankFields, Record, Result, Scored, Store, StoreInfo,
    StoredVector, SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange,
    VectorQuery, WriteStatus, Written,
    text::{Bm25, CorpusStats, TermCounts, query_terms, top_scored},
};
use muisti_store::{StoreRegistry, StoreUrl};
use postgres::error::SqlState;

use muisti_store::copy::{Shared, WriteMark};

use crate::{
    pool::{Cached, Pool, Tx},
    sql::{
        COLUMNS, Sql, VECTOR_COLUMNS, decode, get, get_id, insert_sql, live, parse_id, row_args,
        update_sql,
    },
};

/// The default PostgreSQL schema of muisti's tables.
pub const DEFAULT_SCHEMA: &str = "muisti";
pub use replica::DEFAULT_REPLICA_LAG_MS;
/// The default number of pooled connections.
pub const DEFAULT_POOL_SIZE: usize = 8;
/// The default number of vectors of one dimension from which they get an HNSW index.
pub const DEFAULT_ANN_THRESHOLD: usize = 20_000;
/// The schema version this build writes.
const SCHEMA_VERSION: i32 = 2;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 2] = [include_str!("schema_v1.sql"), include_str!("schema_v2.sql")];
/// The default bound of the memory a handle's copies take, in MiB.
pub const DEFAULT_CACHE_MB: usize = 2048;
/// The default `staleness_ms`.
pub const DEFAULT_STALENESS_MS: usize = 1;
/// The records a handle writes before it first refreshes the planner's statistics.
const FIRST_ANALYZE: u64 = 1_000;
/// How often a write is retried after a conflict with a concurrent transaction (two
/// creates at one key, a serialization failure, a deadlock).
const WRITE_ATTEMPTS: usize = 8;

/// Registers `postgres` and `postgresql`.
pub fn register(registry: &mut StoreRegistry) {
    for scheme in ["postgres", "postgresql"] {
        registry.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(PostgresStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
}

/// A store in a PostgreSQL database with the pgvector extension.
pub struct PostgresStore {
    pool: Arc<Pool>,
    ann: Arc<ann::Indexes>,
    schema: String,
    location: String,
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// Records this handle has written, and the count at which it next refreshes the
    /// planner's statistics (see [`PostgresStore::wrote`]).
    written: AtomicU64,
    next_analyze: AtomicU64,
    coherent: copies::Coherent,
    /// A streaming replica reads go to when it is current enough (`replica=`).
    replica: Option<replica::Replica>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("location", &self.location)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// A failure inside a write transaction: the database's (retried when it is a conflict
/// with another transaction) or the engine's (returned as it is).
enum TxError {
    Db(postgres::Error),
    Muisti(Error),
}

impl From<postgres::Error> for TxError {
    fn from(e: postgres::Error) -> Self {
        TxError::Db(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Muisti(e)
    }
}

type TxResult<T> = std::result::Result<T, TxError>;

/// Whether a write must be seen by this handle's next read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReadBack {
    /// Yes: records, vectors, deletes (read-your-writes).
    AtOnce,
    /// Within the replica's bound, like another server's writes: access counts, which
    /// every recall writes, so that recalls keep reading from the replica.
    WithinTheBound,
}

/// Whether another attempt of the same transaction may succeed.
fn retryable(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| {
        [
            SqlState::UNIQUE_VIOLATION,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::T_R_DEADLOCK_DETECTED,
        ]
        .contains(c)
    })
}

/// A schema name muisti accepts: a plain lower-case SQL identifier (so it never needs
/// quoting).
fn check_schema(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "schema",
            format!(
                "{name:?} must be 1-63 lower-case letters, digits or _, not starting with a digit"
            ),
        ))
    }
}

impl PostgresStore {
    /// Connects to the database a `postgres://` or `postgresql://` URL names (see the crate
    /// docs), creates or migrates muisti's schema, and checks the server answers.
    pub fn open(url: &str) -> Result<Self> {
        let parsed = StoreUrl::parse(url)?;
        let limits = parsed.limits()?;
        let schema = parsed.param("schema").unwrap_or(DEFAULT_SCHEMA).to_owned();
        check_schema(&schema)?;
        let pool_size = parsed
            .whole("pool_size", 1..=1024)?
            .unwrap_or(DEFAULT_POOL_SIZE);
        let ann_threshold = parsed
            .whole("ann_threshold", 0..=usize::MAX)?
            .unwrap_or(DEFAULT_ANN_THRESHOLD);
        let cache_mb = parsed
            .whole("cache_mb", 0..=1 << 30)?
            .unwrap_or(DEFAULT_CACHE_MB);
        let staleness_ms = parsed
            .whole("staleness_ms", 0..=60_000)?
            .unwrap_or(DEFAULT_STALENESS_MS);
        // The driver refuses parameters it does not know: give it the URL without ours.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        const OURS: [&str; 9] = [
            "schema",
            "pool_size",
            "ann_threshold",
            "max_value_bytes",
            "cache_mb",
            "staleness_ms",
            "replica",
            "replica_port",
            "replica_lag_ms",
        ];
        let passed: Vec<&str> = query
            .split('&')
            .filter(|kv| {
                let key = kv.split_once('=').map_or(*kv, |(k, _)| k);
                !kv.is_empty() && !OURS.contains(&key) && !tls::PARAMS.contains(&key)
            })
            .collect();
        let driver_url = if passed.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", passed.join("&"))
        };
        let location = parsed.to_string();
        let mut config = postgres::Config::from_str(&driver_url)
            .map_err(|e| Error::invalid("store url", format!("{location}: {e}")))?;
        let replica_config = Self::replica_config(&parsed, &config)?;
        let connector = tls::configure(&parsed, &mut config)?;
        // Iterative index scans: a filtered search through the HNSW index goes on until it
        // has enough rows that pass the filter (pgvector 0.8), in any order (the engine
        // sorts).
        let setup =
            format!("SET search_path TO {schema}, public; SET hnsw.iterative_scan = relaxed_order");
        let replica = match replica_config {
            Some((mut rc, target)) => {
                let connector = tls::configure(&parsed, &mut rc)?;
                let lag_ms = parsed
                    .whole("replica_lag_ms", 0..=3_600_000)?
                    .unwrap_or(DEFAULT_REPLICA_LAG_MS);
                let pool = Arc::new(Pool::new(rc, connector, setup.clone(), target, pool_size));
                let replica =
                    replica::Replica::new(pool, std::time::Duration::from_millis(lag_ms as u64));
                match replica.check() {
                    Ok(()) => {}
                    // Not a replica: a wrong URL, refused.
                    Err(e) if e.kind() == muisti_core::ErrorKind::InvalidInput => return Err(e),
                    // Unreachable now: reads go to the primary until it answers.
                    Err(e) => {
                        tracing::warn!(error = %e, "postgres replica unreachable; reads go to the primary");
                        replica.failed();
                    }
                }
                Some(replica)
            }
            None => None,
        };
        let pool = Arc::new(Pool::new(
            config,
            connector,
            setup,
            location.clone(),
            pool_size,
        ));
        let store = Self {
            ann: ann::Indexes::new(Arc::clone(&pool), schema.clone(), ann_threshold),
            pool,
            schema,
            location,
            limits,
            clock: Arc::new(SystemClock),
            written: AtomicU64::new(0),
            next_analyze: AtomicU64::new(FIRST_ANALYZE),
            coherent: copies::Coherent::new(
                cache_mb << 20,
                std::time::Duration::from_millis(staleness_ms as u64),
            ),
            replica,
        };
        store.migrate()?;
        if let Some(replica) = &store.replica {
            // Reads wait for the schema as migrated.
            replica.wrote();
        }
        Ok(store)
    }

    /// The replica's connection settings (`replica=` a host name, address or socket
    /// directory, `replica_port=` its port, by default the primary's): the primary's user,
    /// password, database and options on another server; `None` without `replica`.
    fn replica_config(
        parsed: &StoreUrl,
        primary: &postgres::Config,
    ) -> Result<Option<(postgres::Config, String)>> {
        let Some(host) = parsed.param("replica").filter(|h| !h.is_empty()) else {
            if parsed.param("replica_port").is_some() || parsed.param("replica_lag_ms").is_some() {
                return Err(Error::invalid(
                    "store url",
                    "replica_port and replica_lag_ms need replica=HOST (the replica's host or \
                     socket directory)",
                ));
            }
            return Ok(None);
        };
        let port = match parsed.whole("replica_port", 1..=65_535)? {
            Some(p) => p as u16,
            None => primary.get_ports().first().copied().unwrap_or(5432),
        };
        let mut rc = postgres::Config::new();
        rc.host(host).port(port);
        if let Some(user) = primary.get_user() {
            rc.user(user);
        }
        if let Some(password) = primary.get_password() {
            rc.password(password);
        }
        if let Some(db) = primary.get_dbname() {
            rc.dbname(db);
        }
        if let Some(options) = primary.get_options() {
            rc.options(options);
        }
        if let Some(name) = primary.get_application_name() {
            rc.application_name(name);
        }
        // A replica that does not answer is passed over: not waited for long.
        rc.connect_timeout(
            primary
                .get_connect_timeout()
                .copied()
                .unwrap_or(std::time::Duration::from_secs(3)),
        );
        Ok(Some((rc, format!("replica {host}:{port}"))))
    }

    /// Reads the replica served and reads sent to the primary instead (it was behind, or
    /// did not answer), with `replica=`; for tests and metrics.
    pub fn replica_reads(&self) -> Option<(u64, u64)> {
        self.replica.as_ref().map(|r| {
            (
                r.served.load(Ordering::Relaxed),
                r.passed.load(Ordering::Relaxed),
            )
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

    /// Whether the vectors of `dims` dimensions have a valid HNSW index now.
    pub fn ann_ready(&self, dims: usize) -> Result<bool> {
        self.ann.ready(dims)
    }

    /// The PostgreSQL schema of the store's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Drops the store's schema and everything in it (for tests and `muisti` tooling that
    /// created a schema of its own).
    pub fn drop_schema(&self) -> Result<()> {
        let mut conn = self.pool.get()?;
        conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))
            .map_err(|e| self.pool.err(&e))
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Creates the schema or takes it to [`SCHEMA_VERSION`], under an advisory lock so that
    /// servers starting together migrate once (one lock for every schema of the database:
    /// the `vector` extension they share is created once too).
    fn migrate(&self) -> Result<()> {
        let mut conn = self.pool.get()?;
        let s = &self.schema;
        let mut tx = conn.transaction().map_err(|e| self.pool.err(&e))?;
        let run = |tx: &mut Tx<'_>| -> std::result::Result<(), postgres::Error> {
            tx.execute(
                "SELECT pg_advisory_xact_lock(hashtext('muisti migrations'))",
                &[],
            )?;
            let has_vector = tx
                .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])?
                .is_some();
            if !has_vector {
                tx.batch_execute("CREATE EXTENSION vector SCHEMA public")?;
            }
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {s}; \
                 CREATE TABLE IF NOT EXISTS {s}.muisti_schema (version integer NOT NULL); \
                 SET LOCAL search_path TO {s}, public"
            ))?;
            Ok(())
        };
        run(&mut tx).map_err(|e| {
            if [SqlState::UNDEFINED_FILE, SqlState::FEATURE_NOT_SUPPORTED]
                .iter()
                .any(|c| e.code() == Some(c))
            {
                Error::backend(
                    "postgres",
                    format!(
                        "{}: the vector extension (pgvector) is not installed on this server; \
                         install pgvector 0.8 or later ({})",
                        self.location,
                        self.pool.err(&e)
                    ),
                )
            } else {
                self.pool.err(&e)
            }
        })?;
        let version: Option<i32> = tx
            .query_opt("SELECT max(version) FROM muisti_schema", &[])
            .map_err(|e| self.pool.err(&e))?
            .and_then(|r| r.get(0));
        let version = version.unwrap_or(0);
        if version > SCHEMA_VERSION {
            return Err(Error::Corrupted {
                location: format!("{} schema {s}", self.location),
                reason: format!(
                    "schema version {version} was written by a newer muisti (this one knows \
                     {SCHEMA_VERSION})"
                ),
            });
        }
        for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
            tx.batch_execute(sql).map_err(|e| self.pool.err(&e))?;
        }
        if version < SCHEMA_VERSION {
            tx.execute("DELETE FROM muisti_schema", &[])
                .and_then(|_| {
                    tx.execute(
                        "INSERT INTO muisti_schema (version) VALUES ($1)",
                        &[&SCHEMA_VERSION],
                    )
                })
                .map_err(|e| self.pool.err(&e))?;
        }
        tx.commit().map_err(|e| self.pool.err(&e))
    }

    /// Runs `f` in a transaction, again (up to [`WRITE_ATTEMPTS`]) when it failed on a
    /// conflict with a concurrent transaction. This handle's next reads see it.
    fn write<R>(&self, f: impl FnMut(&mut Tx<'_>) -> TxResult<R>) -> Result<R> {
        self.write_as(ReadBack::AtOnce, f)
    }

    /// [`Self::write`], with `read_back` saying whether this handle's next reads must see it
    /// at once (on a replica, they then wait for it to be replayed or go to the primary).
    fn write_as<R>(
        &self,
        read_back: ReadBack,
        mut f: impl FnMut(&mut Tx<'_>) -> TxResult<R>,
    ) -> Result<R> {
        let mut conn = self.pool.get()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = conn.transaction().map_err(|e| self.pool.err(&e))?;
            let result = f(&mut tx).and_then(|r| {
                tx.commit()?;
                Ok(r)
            });
            match result {
                Ok(r) => {
                    // This handle's own writes are read at once: its copies check their
                    // versions (and catch up) before their next use, on the primary or on a
                    // replica that has the write.
                    if let Some(replica) = &self.replica
                        && read_back == ReadBack::AtOnce
                    {
                        replica.wrote();
                    }
                    self.coherent.copies.unconfirm_all();
                    return Ok(r);
                }
                Err(TxError::Db(e)) if retryable(&e) && attempt < WRITE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "postgres write retried");
                }
                Err(TxError::Db(e)) => return Err(self.pool.err(&e)),
                Err(TxError::Muisti(e)) => return Err(e),
            }
        }
    }

    /// Counts `n` records written; each time the count doubles (from [`FIRST_ANALYZE`]) the
    /// table's planner statistics are refreshed in the background. Autovacuum does this a
    /// minute or more after a bulk load; meanwhile a fresh table has none, and the planner
    /// guesses one row per condition and scans the wrong index (measured with
    /// `auto_explain` on LoCoMo's 2,760 records: a lookup of about 50 records by id took
    /// 3-4 ms, with statistics about 0.1 ms). Doubling bounds it to a few `ANALYZE`s per
    /// handle, each sampling at most 30,000 rows.
    fn wrote(&self, n: usize) {
        let total = self.written.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        let due = self.next_analyze.load(Ordering::Relaxed);
        if total < due
            || self
                .next_analyze
                .compare_exchange(
                    due,
                    total.saturating_mul(2),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        let pool = Arc::clone(&self.pool);
        std::thread::spawn(move || {
            let done = pool.get().and_then(|mut c| {
                c.batch_execute("ANALYZE memories")
                    .map_err(|e| pool.err(&e))
            });
            if let Err(e) = done {
                tracing::warn!(error = %e, "refreshing the planner's statistics failed");
            }
        });
    }

    /// Runs one read statement (on the replica when it is current enough).
    fn query(&self, sql: &Sql) -> Result<Vec<postgres::Row>> {
        self.query_with(&sql.text, &sql.params())
    }

    /// Runs one read statement given as text and parameters (on the replica when it is
    /// current enough).
    fn query_with(
        &self,
        text: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>> {
        self.read(|pool| pool.get()?.query(text, params).map_err(|e| pool.err(&e)))
    }

    /// Runs a read on the replica when it is current enough for this handle (see
    /// `replica.rs`), else on the primary; a read the replica failed (unreachable, or
    /// refusing it) runs again on the primary. The one way every read picks its server.
    fn read<R>(&self, f: impl Fn(&Pool) -> Result<R>) -> Result<R> {
        match &self.replica {
            Some(r) if r.usable(&self.pool) => match f(&r.pool) {
                Ok(out) => Ok(out),
                Err(e) => {
                    tracing::debug!(error = %e, "postgres replica failed a read; the primary answers");
                    r.failed();
                    r.read_primary();
                    f(&self.pool)
                }
            },
            Some(r) => {
                r.read_primary();
                f(&self.pool)
            }
            None => f(&self.pool),
        }
    }

    /// The partition and id of a row returned as `id, namespace` in `tenant`.
    fn located(&self, tenant: &Tenant, row: &postgres::Row) -> Result<(Partition, MemoryId)> {
        let namespace = Namespace::new(get::<String>(row, 1)?).map_err(|e| Error::Corrupted {
            location: self.location.clone(),
            reason: e.to_string(),
        })?;
        Ok((Partition::new(tenant.clone(), namespace), get_id(row, 0)?))
    }

    /// The records of rows returned as `id, namespace` in `tenant`, with their partitions
    /// bumped ([`copies::bump`]).
    fn bump_returned(
        &self,
        tx: &mut Tx<'_>,
        slot: i16,
        tenant: &Tenant,
        rows: &[postgres::Row],
    ) -> TxResult<Vec<(Partition, MemoryId)>> {
        let changed = rows
            .iter()
            .map(|row| self.located(tenant, row))
            .collect::<Result<Vec<_>>>()?;
        self.bump_located(tx, slot, &changed)?;
        Ok(changed)
    }

    /// Bumps the partitions of `changed` records ([`copies::bump`]).
    fn bump_located(
        &self,
        tx: &mut Tx<'_>,
        slot: i16,
        changed: &[(Partition, MemoryId)],
    ) -> std::result::Result<(), postgres::Error> {
        copies::bump(
            tx,
            slot,
            &mut copies::by_partition(changed.iter().map(|(p, id)| (p, id))),
        )
    }

    /// The copy of `p` at the partition's current version (caught up from the change log, or
    /// loaded); `None` when copies are off or the partition is larger than they may hold:
    /// the database answers then.
    fn copy_of(&self, p: &Partition) -> Result<Option<Shared<copies::Version>>> {
        let c = &self.coherent;
        if !c.copies.may_hold(p) {
            return Ok(None);
        }
        if let Some(copy) = c.copies.recent(p, c.staleness) {
            return Ok(Some(copy));
        }
        let _checking = c.checking.lock().unwrap_or_else(|e| e.into_inner());
        // Another reader may have confirmed it while this one waited.
        if let Some(copy) = c.copies.recent(p, c.staleness) {
            return Ok(Some(copy));
        }
        // Marked before the replica is chosen: a write of this process the replica has not
        // replayed yet is then a write after the mark, and no copy read there is taken as
        // current.
        let since = c.copies.mark();
        self.read(|pool| self.copy_from(pool, p, since))
    }

    /// [`Self::copy_of`] reading from `pool` (the primary's or the replica's).
    fn copy_from(
        &self,
        pool: &Pool,
        p: &Partition,
        since: WriteMark,
    ) -> Result<Option<Shared<copies::Version>>> {
        let c = &self.coherent;
        let now = self.now().as_millis();
        let on_replica = !std::ptr::eq(pool, &*self.pool);
        let err = |e: postgres::Error| pool.err(&e);
        let mut conn = pool.get()?;
        let current = copies::version_of(&mut *conn, p).map_err(err)?;
        if let Some(copy) = c.copies.held(p) {
            let have = copy
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .version()
                .clone();
            // A replica current enough for this read may still be behind the copy (read
            // from the primary): the copy is then the newer, and stays.
            let ahead = on_replica && have.iter().zip(&current).all(|(h, n)| h >= n);
            if have == current || ahead {
                c.copies.confirmed(p, &copy, since);
                return Ok(Some(copy));
            }
            let behind = have.iter().zip(&current).all(|(h, n)| h <= n);
            if on_replica && !behind {
                // Ahead of the replica in some slots and behind in others: the primary has
                // both, and a load from the replica would undo what the copy already showed.
                drop(conn);
                if let Some(replica) = &self.replica {
                    replica.read_primary();
                }
                return self.copy_from(&self.pool, p, since);
            }
            if behind
                && let Some((ids, next)) =
                    copies::changes_after(&mut *conn, p, &have).map_err(err)?
            {
                let found = copies::records(&mut *conn, p, Some(&ids), now, err)?;
                if copies::apply_caught_up(&copy, &have, next, &ids, found)? {
                    c.copies.catch_ups.fetch_add(1, Ordering::Relaxed);
                    c.copies.confirmed(p, &copy, since);
                    return Ok(Some(copy));
                }
            }
        }
        // Loaded whole, in one snapshot with its version, unless it could not be kept.
        let count: i64 = conn
            .query_one(
                &format!(
                    "SELECT count(*) FROM memories WHERE tenant = $1 AND namespace = $2 AND {}",
                    live(3)
                ),
                &[&p.tenant.as_str(), &p.namespace.as_str(), &now],
            )
            .map_err(err)?
            .get(0);
        if !c.copies.fits(p, count.max(0) as usize) {
            return Ok(None);
        }
        let mut tx = conn.transaction().map_err(err)?;
        tx.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .map_err(err)?;
        let version = copies::version_of(&mut tx, p).map_err(err)?;
        let records = copies::records(&mut tx, p, None, now, err)?;
        tx.commit().map_err(err)?;
        c.copies.loads.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(partition = %p, records = records.len(), "postgres copy loaded");
        Ok(Some(c.copies.keep(
            p,
            copies::new_copy(version, records),
            since,
        )))
    }

    /// How many times this handle loaded a partition's copy whole, and caught one up from
    /// the change log (for tests and metrics).
    pub fn copy_counts(&self) -> (u64, u64) {
        (
            self.coherent.copies.loads.load(Ordering::Relaxed),
            self.coherent.copies.catch_ups.load(Ordering::Relaxed),
        )
    }

    fn decode_all(rows: &[postgres::Row]) -> Result<Vec<Memory>> {
        rows.iter().map(decode).collect()
    }
}

/// The live or expired row at a locator, locked for the rest of the transaction.
impl PostgresStore {
    /// One update inside a transaction, as `update` and `update_many` run it: the record
    /// locked, the request applied to it if it is live, the row written. The outer error
    /// fails the transaction; the inner one is the request's own (a stale version, no
    /// record), which writes nothing.
    fn update_in(
        &self,
        tx: &mut Tx<'_>,
        req: &UpdateRequest,
        now: Timestamp,
    ) -> TxResult<Result<Memory>> {
        let found = locked(tx, &req.at)?;
        let old_id = found.as_ref().map(|m| m.id);
        let live = found.filter(|m| !m.is_expired(now) && req.at.addresses(m));
        let (memory, change) = match req.apply(live.as_ref(), now, &self.limits) {
            Ok(applied) => applied,
            Err(e) => return Ok(Err(e)),
        };
        write_row(tx, &memory, &change, old_id)?;
        Ok(Ok(memory))
    }
}

fn locked(tx: &mut Tx<'_>, at: &Locator) -> TxResult<Option<Memory>> {
    let row = match at {
        Locator::Key { partition, key } => tx.query_opt(
            &format!(
                "SELECT {COLUMNS} FROM memories WHERE tenant = $1 AND namespace = $2 \
                 AND key = $3 FOR UPDATE"
            ),
            &[
                &partition.tenant.as_str(),
                &partition.namespace.as_str(),
                &key.as_str(),
            ],
        )?,
        Locator::Id { tenant, id } => tx.query_opt(
            &format!("SELECT {COLUMNS} FROM memories WHERE id = $1 AND tenant = $2 FOR UPDATE"),
            &[&id.to_string(), &tenant.as_str()],
        )?,
    };
    Ok(row.as_ref().map(decode).transpose()?)
}

/// Writes a row: an insert, or an update of the row whose id was `old`; the vector as
/// `vector` says (`Keep`: its columns are left as they are).
fn write_row(
    tx: &mut Tx<'_>,
    m: &Memory,
    vector: &VectorChange,
    old: Option<MemoryId>,
) -> TxResult<()> {
    let given = match vector {
        VectorChange::Set(v) => Some(v.as_slice()),
        VectorChange::Keep | VectorChange::Drop => None,
    };
    let mut args = row_args(m, given)?;
    let sql = match old {
        None => insert_sql(),
        Some(old) => {
            let keep = *vector == VectorChange::Keep;
            if keep {
                args.truncate(args.len() - VECTOR_COLUMNS);
            }
            args.push(Box::new(old.to_string()));
            update_sql(!keep)
        }
    };
    let params: Vec<_> = args.iter().map(|a| a.as_ref() as _).collect();
    tx.execute(sql, &params)?;
    Ok(())
}

/// Deletes expired records (every write does, as on SQLite: the partial index makes it
/// free when nothing has expired).
fn purge_in(tx: &mut Tx<'_>, now: i64) -> TxResult<u64> {
    Ok(tx.execute(
        "DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at <= $1",
        &[&now],
    )?)
}

/// One put inside a transaction.
fn put_in(tx: &mut Tx<'_>, put: &Put, now: Timestamp) -> TxResult<Written> {
    let mut put = put.clone();
    // A put replaces the whole record, its vector included.
    let vector = match put.embedding.take() {
        Some(v) => VectorChange::Set(v),
        None => VectorChange::Drop,
    };
    let existing = match &put.key {
        None => None,
        Some(key) => locked(
            tx,
            &Locator::Key {
                partition: put.partition.clone(),
                key: key.clone(),
            },
        )?,
    };
    let old_id = existing.as_ref().map(|m| m.id);
    let live = existing.filter(|m| !m.is_expired(now));
    let status = if live.is_some() {
        WriteStatus::Updated
    } else {
        WriteStatus::Created
    };
    let memory = put.apply(live.as_ref(), now);
    write_row(tx, &memory, &vector, old_id)?;
    Ok(Written { memory, status })
}

impl PostgresStore {
    /// Vector search in the database (pgvector), through the HNSW index when unfiltered.
    /// (`vector_search` has refused empty queries and started the index's build.)
    fn db_vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        let mut sql = Sql::partition(
            "id, embedding",
            &query.partition,
            &query.filter,
            self.now().as_millis(),
        );
        let dims = query.vector.len();
        // The dimension is a number, written into the text: a partial index needs the
        // constant.
        sql.push(&format!(" AND dims = {dims}"));
        let v = sql.arg(pgvector::Vector::from(query.vector.clone()));
        let limit = sql.arg(query.limit as i64);
        if query.filter.user_id.is_some() {
            // One user's rows: an exact scan of them through the user index. (Given the
            // choice, the planner walked the HNSW index filtering by user: recall p50
            // 10.8 ms, against 7.4 ms scanning, on one store of 100 users × 1,000.)
            sql.push(&format!(" ORDER BY embedding <#> {v} LIMIT {limit}"));
        } else {
            // The expression the dimension's index is built on.
            sql.push(&format!(
                " ORDER BY embedding::vector({dims}) <#> {v}::vector({dims}) LIMIT {limit}"
            ));
        }
        // The database orders; the engine scores (one dot product for every backend).
        let mut out = self
            .query(&sql)?
            .iter()
            .map(|r| {
                let vector: pgvector::Vector = get(r, 1)?;
                Ok(Scored {
                    id: get_id(r, 0)?,
                    score: muisti_core::text::dot(&query.vector, vector.as_slice()),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        top_scored(&mut out, query.limit);
        Ok(out)
    }

    /// Full-text search in the database.
    ///
    /// Misspelled words are not corrected here: looking the candidate words up through the
    /// terms' array index cost 4 ms at the median and 97 ms at p95 per search on LoCoMo
    /// (docs/benchmarks.md), more than the search.
    fn db_text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let terms = query_terms(&query.query);
        if terms.is_empty() || query.limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.now().as_millis();
        // Each candidate's counts of the query's terms (in query_terms order), counted in
        // the database so that only numbers travel.
        let mut sql = Sql::live_in(&query.partition, &query.filter, now);
        let cond = sql.text.clone();
        let t = sql.arg(terms.clone());
        let counts = |field: &str| {
            format!(
                "ARRAY(SELECT cardinality(array_positions({field}, q))::integer \
                 FROM unnest({t}::text[]) WITH ORDINALITY AS u(q, k) ORDER BY k)"
            )
        };
        // One statement, so one snapshot: the statistics of the filter's records and the
        // records holding a query term (none: one row of statistics with no record).
        sql.text = format!(
            "SELECT s.n, s.len, c.* FROM \
             (SELECT count(*) AS n, coalesce(sum(doc_len), 0)::bigint AS len \
             FROM memories WHERE {cond}) s LEFT JOIN LATERAL \
             (SELECT id, doc_len, {}, {} FROM memories WHERE {cond} \
             AND (terms && {t} OR context_terms && {t})) c ON true",
            counts("terms"),
            counts("context_terms")
        );
        let rows = self.query(&sql)?;
        let stats = match rows.first() {
            Some(r) => CorpusStats {
                docs: get::<i64>(r, 0)? as u64,
                total_len: get::<i64>(r, 1)? as u64,
            },
            None => return Ok(Vec::new()),
        };
        let mut candidates = Vec::with_capacity(rows.len());
        for r in &rows {
            let Some(id) = get::<Option<String>>(r, 2)? else {
                continue;
            };
            let id = parse_id(&id)?;
            let counts = |i: usize| -> Result<Vec<u32>> {
                Ok(get::<Vec<i32>>(r, i)?
                    .into_iter()
                    .map(|c| c.max(0) as u32)
                    .collect())
            };
            candidates.push(TermCounts {
                id,
                len: get::<i32>(r, 3)?.max(0) as u32,
                content: counts(4)?,
                context: counts(5)?,
            });
        }
        Ok(Bm25::default().rank_counts(candidates, &terms, stats, query.limit))
    }

    /// Records by id from the database.
    fn db_get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<String> = ids.iter().map(MemoryId::to_string).collect();
        let rows = self.query_with(
            &format!(
                "SELECT {COLUMNS} FROM memories WHERE id = ANY($1) AND tenant = $2 AND {}",
                live(3)
            ),
            &[&wanted, &tenant.as_str(), &self.now().as_millis()],
        )?;
        let mut found: HashMap<MemoryId, Memory> = Self::decode_all(&rows)?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }
}
