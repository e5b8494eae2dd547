//! The MySQL and MariaDB store of muisti: `mysql://` and `mariadb://` URLs, for MySQL 8 and
//! MariaDB 10.11 or later.
//!
//! The URL is what the `mysql` driver takes (`mysql://user:password@host:port/database`,
//! `socket=/path` for a Unix socket, `tcp_connect_timeout_ms`, ...), plus muisti's own
//! parameters, which are taken out before the rest reaches the driver:
//!
//! * `table_prefix`: the prefix of muisti's tables (default `muisti_`), so that muisti can
//!   live in the database an application already runs;
//! * `pool_size`: connections per store (default 8);
//! * `max_value_bytes`: the write limit, as on every backend (keep it below the server's
//!   `max_allowed_packet`);
//! * `cache_mb`: the memory the in-process copies of partitions take (estimated; default
//!   2048, 0 keeps none: every read goes to the database);
//! * `staleness_ms`: how long a copy whose generation was confirmed answers without asking
//!   again (default 1; a read run of the engine asks once).
//!
//! Records, their full-text postings and their vectors are written in one transaction. The
//! postings are the engine's own tokens ([`muisti_core::text::tokenize`]), one row per
//! distinct term of a record with its counts: a search reads the postings of the query's
//! terms and the engine scores them by its one BM25 definition ([`Bm25::rank_counts`]) with
//! the corpus statistics the same query's filter selects, in one snapshot. MySQL's FULLTEXT
//! indexes are not used: their tokenizer, stop words and scores differ from the engine's.
//!
//! Vectors are stored as bytes and **compared by the engine**. Reads are answered from an
//! in-process copy of the partition (`copies.rs`, [`muisti_store::copy`]) kept coherent by
//! a generation and a change log that every write transaction advances, so any number of
//! processes and servers share one database and none reads stale data past `staleness_ms`;
//! a partition larger than the copies' budget is searched in the database (its vectors
//! read and ranked exactly: fine for thousands of memories per user; for millions in one
//! partition use PostgreSQL with pgvector). TLS is not built in: `require_ssl=true` is
//! refused rather than connecting in the clear.

mod copies;
mod sql;
mod store;
mod write;

use std::{
    collections::{HashMap, HashSet},
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, RankFields, Record, Result, Scored, Store, StoreInfo,
    StoredVector, SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange,
    VectorQuery, WriteStatus, Written,
    text::{
        Bm25, CorpusStats, TermCounts, correctable_terms, correction_variants, nearest,
        query_terms, search_terms, vector_from_bytes,
    },
};
use muisti_store::{StoreRegistry, StoreUrl, copy::Shared};
use mysql::{
    AccessMode, IsolationLevel, Opts, OptsBuilder, Params, Pool, PoolConstraints, PoolOpts,
    PooledConn, Row, Transaction, TxOpts, Value, prelude::Queryable,
};

use crate::sql::{
    Residual, Sql, bytes, columns, decode, parse_id, take, term_key, values, vector_values,
};

/// The default prefix of muisti's tables.
pub const DEFAULT_TABLE_PREFIX: &str = "muisti_";
/// The default number of pooled connections.
pub const DEFAULT_POOL_SIZE: usize = 8;
/// The schema version this build writes.
const SCHEMA_VERSION: i64 = 2;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 2] = [include_str!("schema_v1.sql"), include_str!("schema_v2.sql")];
/// The default `cache_mb`.
pub const DEFAULT_CACHE_MB: usize = 2048;
/// The default `staleness_ms`.
pub const DEFAULT_STALENESS_MS: u64 = 1;
/// How often a write is retried after a conflict with a concurrent transaction (two
/// creates at one key, a deadlock, a lock wait timeout).
const WRITE_ATTEMPTS: usize = 8;
/// How long a caller waits for a pooled connection.
const POOL_WAIT: Duration = Duration::from_secs(30);
/// Postings rows per INSERT, at most (a record's are written in chunks of powers of two, so
/// a handful of statement shapes serve every record).
const POSTINGS_CHUNK: usize = 64;
/// The parameters muisti takes out of the URL.
const OWN_PARAMS: [&str; 5] = [
    "table_prefix",
    "pool_size",
    "max_value_bytes",
    "cache_mb",
    "staleness_ms",
];

/// Registers `mysql` and `mariadb`.
pub fn register(registry: &mut StoreRegistry) {
    for scheme in ["mysql", "mariadb"] {
        registry.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(MysqlStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
}

/// A store in a MySQL 8 or MariaDB 10.11+ database.
pub struct MysqlStore {
    pool: Pool,
    /// The table prefix.
    prefix: String,
    /// Where the data lives, without the password.
    location: String,
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// The statements that name tables, with the prefix in place.
    q: Statements,
    /// The in-process copies of partitions and how they are kept coherent.
    coherent: copies::Coherent,
}

impl std::fmt::Debug for MysqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MysqlStore")
            .field("location", &self.location)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// The table names with their prefix.
struct Statements {
    memories: String,
    postings: String,
    versions: String,
    generations: String,
    changes: String,
}

/// A failure inside a write transaction: the database's (retried when it is a conflict with
/// another transaction) or the engine's (returned as it is).
enum TxError {
    Db(mysql::Error),
    Muisti(Error),
}

impl From<mysql::Error> for TxError {
    fn from(e: mysql::Error) -> Self {
        TxError::Db(e)
    }
}

impl From<Error> for TxError {
    fn from(e: Error) -> Self {
        TxError::Muisti(e)
    }
}

type TxResult<T> = std::result::Result<T, TxError>;

/// Whether another attempt of the same transaction may succeed: a duplicate key (two
/// creates at one new key), a deadlock, a lock wait timeout.
fn retryable(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::MySqlError(me) if [1062, 1213, 1205].contains(&me.code))
}

/// A table prefix muisti accepts: lower-case letters, digits and `_` (so table names never
/// need quoting), at most 32.
fn check_prefix(prefix: &str) -> Result<()> {
    if prefix.len() <= 32
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        Ok(())
    } else {
        Err(Error::invalid(
            "table_prefix",
            format!("{prefix:?} must be at most 32 lower-case letters, digits or _"),
        ))
    }
}

fn params(args: Vec<Value>) -> Params {
    if args.is_empty() {
        Params::Empty
    } else {
        Params::Positional(args)
    }
}

impl MysqlStore {
    /// Connects to the database a `mysql://` or `mariadb://` URL names (see the crate docs),
    /// creates or migrates muisti's tables, and checks the server answers.
    pub fn open(url: &str) -> Result<Self> {
        let parsed = StoreUrl::parse(url)?;
        let limits = parsed.limits()?;
        let prefix = parsed
            .param("table_prefix")
            .unwrap_or(DEFAULT_TABLE_PREFIX)
            .to_owned();
        check_prefix(&prefix)?;
        let pool_size = parsed
            .whole("pool_size", 1..=1024)?
            .unwrap_or(DEFAULT_POOL_SIZE);
        let cache_mb = parsed
            .whole("cache_mb", 0..=1 << 30)?
            .unwrap_or(DEFAULT_CACHE_MB);
        let staleness_ms = parsed
            .whole("staleness_ms", 0..=60_000)?
            .map_or(DEFAULT_STALENESS_MS, |ms| ms as u64);
        if parsed
            .param("require_ssl")
            .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
        {
            return Err(Error::invalid(
                "require_ssl",
                "TLS to MySQL is not built into muisti yet; use a trusted network or a local \
                 socket",
            ));
        }
        let location = parsed.to_string();
        // The driver refuses parameters it does not know: give it the URL without ours, and
        // with the scheme it knows.
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let base = match base.split_once("://") {
            Some((_, rest)) => format!("mysql://{rest}"),
            None => base.to_owned(),
        };
        let passed: Vec<&str> = query
            .split('&')
            .filter(|kv| {
                !kv.is_empty() && !OWN_PARAMS.contains(&kv.split_once('=').map_or(*kv, |(k, _)| k))
            })
            .collect();
        let driver_url = if passed.is_empty() {
            base
        } else {
            format!("{base}?{}", passed.join("&"))
        };
        let opts = Opts::from_url(&driver_url)
            .map_err(|e| Error::invalid("store url", format!("{location}: {e}")))?;
        let constraints = PoolConstraints::new(1, pool_size)
            .ok_or_else(|| Error::invalid("pool_size", "must be at least 1"))?;
        let opts = OptsBuilder::from_opts(opts)
            .pool_opts(PoolOpts::default().with_constraints(constraints))
            .stmt_cache_size(Some(128))
            // Writes lock what they read; a create at a new key meets the unique index (and
            // is retried) instead of a gap lock (a deadlock).
            .init(vec![
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            ]);
        let pool = Pool::new(opts).map_err(|e| unavailable_or(&location, &e))?;
        let q = Statements {
            memories: format!("{prefix}memories"),
            postings: format!("{prefix}postings"),
            versions: format!("{prefix}schema_version"),
            generations: format!("{prefix}generations"),
            changes: format!("{prefix}changes"),
        };
        let store = Self {
            pool,
            prefix,
            location,
            limits,
            clock: Arc::new(SystemClock),
            q,
            coherent: copies::Coherent::new(
                cache_mb.saturating_mul(1 << 20),
                Duration::from_millis(staleness_ms),
            ),
        };
        store.migrate()?;
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

    /// The prefix of the store's tables.
    pub fn table_prefix(&self) -> &str {
        &self.prefix
    }

    /// Drops the store's tables and everything in them (for tests and tooling).
    pub fn drop_tables(&self) -> Result<()> {
        let mut conn = self.conn()?;
        let Statements {
            memories,
            postings,
            versions,
            generations,
            changes,
        } = &self.q;
        conn.query_drop(format!(
            "DROP TABLE IF EXISTS {postings}, {memories}, {versions}, {generations}, {changes}"
        ))
        .map_err(|e| self.err(&e))
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn conn(&self) -> Result<PooledConn> {
        self.pool
            .try_get_conn(POOL_WAIT)
            .map_err(|e| unavailable_or(&self.location, &e))
    }

    fn err(&self, e: &mysql::Error) -> Error {
        unavailable_or(&self.location, e)
    }

    /// Creates the tables or takes them to [`SCHEMA_VERSION`], holding a named lock so that
    /// servers starting together migrate once. (MySQL commits each DDL statement on its own:
    /// every step is idempotent, so a migration cut short is finished by the next open.)
    fn migrate(&self) -> Result<()> {
        let mut conn = self.conn()?;
        let lock = "muisti migrations";
        let got: Option<i64> = conn
            .exec_first("SELECT GET_LOCK(?, 60)", (lock,))
            .map_err(|e| self.err(&e))?
            .flatten();
        if got != Some(1) {
            return Err(Error::Unavailable {
                target: self.location.clone(),
                reason: "another process held the migration lock for 60 s".into(),
            });
        }
        let result = self.migrate_locked(&mut conn);
        let released = conn.exec_drop("SELECT RELEASE_LOCK(?)", (lock,));
        result?;
        released.map_err(|e| self.err(&e))
    }

    fn migrate_locked(&self, conn: &mut PooledConn) -> Result<()> {
        let versions = &self.q.versions;
        conn.query_drop(format!(
            "CREATE TABLE IF NOT EXISTS {versions} (version BIGINT NOT NULL) ENGINE = InnoDB"
        ))
        .map_err(|e| self.err(&e))?;
        let version: Option<i64> = conn
            .query_first(format!("SELECT MAX(version) FROM {versions}"))
            .map_err(|e| self.err(&e))?
            .flatten();
        let version = version.unwrap_or(0);
        if version > SCHEMA_VERSION {
            return Err(Error::Corrupted {
                location: format!("{} tables {}*", self.location, self.prefix),
                reason: format!(
                    "schema version {version} was written by a newer muisti (this one knows \
                     {SCHEMA_VERSION})"
                ),
            });
        }
        for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
            // Comments out (they may hold a `;`), then one statement at a time.
            let text: String = sql
                .lines()
                .filter(|l| !l.trim_start().starts_with("--"))
                .collect::<Vec<_>>()
                .join("\n")
                .replace("{prefix}", &self.prefix);
            for statement in text.split(';').filter(|s| !s.trim().is_empty()) {
                conn.query_drop(statement).map_err(|e| self.err(&e))?;
            }
        }
        if version < SCHEMA_VERSION {
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .map_err(|e| self.err(&e))?;
            tx.query_drop(format!("DELETE FROM {versions}"))
                .and_then(|()| {
                    tx.exec_drop(
                        format!("INSERT INTO {versions} (version) VALUES (?)"),
                        (SCHEMA_VERSION,),
                    )
                })
                .and_then(|()| tx.commit())
                .map_err(|e| self.err(&e))?;
        }
        Ok(())
    }

    /// Runs one read statement.
    fn query(&self, sql: Sql) -> Result<Vec<Row>> {
        let mut conn = self.conn()?;
        conn.exec(sql.text, params(sql.args))
            .map_err(|e| self.err(&e))
    }

    /// The names in the first column of `rows`, each checked by `parse`.
    fn names<T>(
        &self,
        rows: Vec<Row>,
        what: &str,
        parse: impl Fn(String) -> Result<T>,
    ) -> Result<Vec<T>> {
        rows.into_iter()
            .map(|mut r| {
                let name: String = take(&mut r, 0)?;
                parse(name).map_err(|e| Error::Corrupted {
                    location: self.location.clone(),
                    reason: format!("{what}: {e}"),
                })
            })
            .collect()
    }
}

/// A driver error as muisti's: the server's refusals are `Backend` with their code (the
/// message up to the first quoted value: MySQL quotes the values it refuses), everything
/// else (no connection, a broken one) `Unavailable` naming the server.
fn unavailable_or(location: &str, e: &mysql::Error) -> Error {
    match e {
        mysql::Error::MySqlError(me) => {
            let message = me.message.split('\'').next().unwrap_or_default().trim();
            Error::backend(
                "mysql",
                format!("{message} (error {}, {})", me.code, me.state),
            )
        }
        mysql::Error::UrlError(u) => Error::invalid("store url", format!("{location}: {u}")),
        mysql::Error::FromValueError(_) | mysql::Error::FromRowError(_) => Error::Corrupted {
            location: location.to_owned(),
            reason: e.to_string(),
        },
        other => Error::Unavailable {
            target: location.to_owned(),
            reason: other.to_string(),
        },
    }
}

impl MysqlStore {
    /// The live records of a tenant with these ids, from the database, in the order given.
    fn db_get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = Sql::new(format!(
            "SELECT {} FROM {} WHERE tenant = ?",
            columns(""),
            self.q.memories
        ));
        sql.args.push(bytes(tenant.as_str()));
        sql.and_live("", self.now().as_millis());
        sql.push(" AND id IN ");
        sql.list(ids.iter().map(|id| bytes(&id.to_string())));
        let mut found: HashMap<MemoryId, Memory> = HashMap::new();
        for mut r in self.query(sql)? {
            let m = decode(&mut r)?;
            found.insert(m.id, m);
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }
}

impl MysqlStore {
    /// The copy of `p` at its current generation: the one held (confirmed within the
    /// staleness window or in this thread's read run, else its generation read and the log
    /// caught up on), or a new one read in one snapshot; `None` when copies are off or the
    /// partition is larger than their budget (the database answers then). With `load`
    /// false, a copy not held is not loaded.
    fn copy_of(&self, p: &Partition, load: bool) -> Result<Option<Shared<copies::Version>>> {
        let c = &self.coherent;
        if !c.copies.may_hold(p) {
            return Ok(None);
        }
        if let Some(copy) = c.copies.recent(p, c.staleness) {
            return Ok(Some(copy));
        }
        if !load && c.copies.held(p).is_none() {
            return Ok(None);
        }
        let _checking = c.checking.lock().unwrap_or_else(|e| e.into_inner());
        // Another reader may have confirmed it while this one waited.
        if let Some(copy) = c.copies.recent(p, c.staleness) {
            return Ok(Some(copy));
        }
        let (t, n) = (bytes(p.tenant.as_str()), bytes(p.namespace.as_str()));
        let generation_sql = format!(
            "SELECT generation FROM {} WHERE tenant = ? AND namespace = ?",
            self.q.generations
        );
        let mut conn = self.conn()?;
        let since = c.copies.mark();
        let now: i64 = conn
            .exec_first(&generation_sql, params(vec![t.clone(), n.clone()]))
            .map_err(|e| self.err(&e))?
            .unwrap_or(0);
        if let Some(copy) = c.copies.held(p) {
            let have = *copy.read().unwrap_or_else(|e| e.into_inner()).version();
            if have == now {
                c.copies.confirmed(p, &copy, since);
                return Ok(Some(copy));
            }
            if have < now {
                let entries: Vec<(i64, Vec<u8>)> = conn
                    .exec(
                        format!(
                            "SELECT generation, ids FROM {} WHERE tenant = ? AND namespace = ? \
                             AND generation > ? ORDER BY generation LIMIT {}",
                            self.q.changes,
                            copies::CATCH_UP_MAX + 1
                        ),
                        params(vec![t.clone(), n.clone(), Value::Int(have)]),
                    )
                    .map_err(|e| self.err(&e))?;
                let entries: Vec<(i64, String)> = entries
                    .into_iter()
                    .map(|(g, ids)| (g, String::from_utf8_lossy(&ids).into_owned()))
                    .collect();
                if let Some((ids, next)) = copies::changes_after(have, &entries) {
                    let found = self.records_of(&mut conn, p, Some(&ids))?;
                    if copies::apply_caught_up(&copy, have, next, &ids, found) {
                        c.copies.catch_ups.fetch_add(1, Ordering::Relaxed);
                        c.copies.confirmed(p, &copy, since);
                        return Ok(Some(copy));
                    }
                }
            }
        }
        // Loaded whole, in one snapshot with its generation, unless it could not be kept.
        let mut count = Sql::new(format!("SELECT COUNT(*) FROM {} WHERE ", self.q.memories));
        count.append(Sql::live_in(
            "",
            p,
            &Filter::default(),
            self.now().as_millis(),
        ));
        let records: Option<i64> = conn
            .exec_first(count.text, params(count.args))
            .map_err(|e| self.err(&e))?;
        let records = records.unwrap_or(0).max(0) as usize;
        if !c.copies.fits(p, records) {
            return Ok(None);
        }
        let mut tx = conn
            .start_transaction(
                TxOpts::default()
                    .set_isolation_level(Some(IsolationLevel::RepeatableRead))
                    .set_with_consistent_snapshot(true)
                    .set_access_mode(Some(AccessMode::ReadOnly)),
            )
            .map_err(|e| self.err(&e))?;
        let version: i64 = tx
            .exec_first(&generation_sql, params(vec![t, n]))
            .map_err(|e| self.err(&e))?
            .unwrap_or(0);
        let loaded = self.records_of(&mut tx, p, None)?;
        tx.commit().map_err(|e| self.err(&e))?;
        c.copies.loads.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(partition = %p, records = loaded.len(), "mysql copy loaded");
        Ok(Some(c.copies.keep(
            p,
            copies::new_copy(version, loaded),
            since,
        )))
    }

    /// The live records of a partition (with these ids, when given) and their vectors.
    fn records_of(
        &self,
        conn: &mut impl Queryable,
        p: &Partition,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<copies::Loaded>> {
        let mut out = Vec::new();
        let mut read = |ids: Option<&[MemoryId]>| -> Result<()> {
            let mut sql = Sql::new(format!(
                "SELECT {}, embedding FROM {} WHERE ",
                columns(""),
                self.q.memories
            ));
            sql.append(Sql::live_in(
                "",
                p,
                &Filter::default(),
                self.now().as_millis(),
            ));
            if let Some(ids) = ids {
                sql.push(" AND id IN ");
                sql.list(ids.iter().map(|id| bytes(&id.to_string())));
            }
            let rows: Vec<Row> = conn
                .exec(sql.text, params(sql.args))
                .map_err(|e| self.err(&e))?;
            for mut r in rows {
                let raw: Option<Vec<u8>> = take(&mut r, muisti_store::COLUMN_NAMES.len())?;
                let m = decode(&mut r)?;
                let vector = match (raw, &m.embedding_model) {
                    (Some(raw), Some(_)) => {
                        Some(vector_from_bytes(&raw).ok_or_else(|| Error::Corrupted {
                            location: format!("mysql row id {}", m.id),
                            reason: "a vector's bytes".into(),
                        })?)
                    }
                    _ => None,
                };
                out.push((m, vector));
            }
            Ok(())
        };
        match ids {
            None => read(None)?,
            Some(ids) => {
                for chunk in ids.chunks(256) {
                    read(Some(chunk))?;
                }
            }
        }
        Ok(out)
    }

    /// How many times this handle loaded a partition's copy whole, and caught one up from
    /// the change log (for tests and metrics).
    pub fn copy_counts(&self) -> (u64, u64) {
        (
            self.coherent.copies.loads.load(Ordering::Relaxed),
            self.coherent.copies.catch_ups.load(Ordering::Relaxed),
        )
    }

    /// The vectors of the live records of a partition that pass `filter` (of `dims`
    /// dimensions, when given).
    fn read_vectors(
        &self,
        partition: &Partition,
        filter: &Filter,
        dims: Option<usize>,
    ) -> Result<Vec<StoredVector>> {
        let residual = Residual::of(filter);
        let mut sql = Sql::new(format!(
            "SELECT id, embedding_model, embedding{} FROM {} WHERE ",
            residual.columns(""),
            self.q.memories
        ));
        sql.append(Sql::live_in("", partition, filter, self.now().as_millis()));
        sql.push(" AND embedding IS NOT NULL");
        if let Some(d) = dims {
            sql.and("dims = ?", Value::Int(d as i64));
        }
        let rows = self.query(sql)?;
        let mut out = Vec::with_capacity(rows.len());
        for mut r in rows {
            if !residual.keeps(&mut r, 3)? {
                continue;
            }
            let id: String = take(&mut r, 0)?;
            let corrupted = |what: &str| Error::Corrupted {
                location: format!("mysql row id {id}"),
                reason: what.to_owned(),
            };
            let model: Option<String> = take(&mut r, 1)?;
            let raw: Vec<u8> = take(&mut r, 2)?;
            out.push(StoredVector {
                id: parse_id(&id)?,
                model: model.ok_or_else(|| corrupted("a vector without a model"))?,
                vector: vector_from_bytes(&raw).ok_or_else(|| corrupted("a vector's bytes"))?,
            });
        }
        Ok(out)
    }
}
