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

use std::{
    collections::HashMap,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, RankFields, Record, Result, Scored, Store, StoreInfo,
    StoredVector, SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange,
    VectorQuery, WriteStatus, Written,
    text::{Bm25, CorpusStats, TermCounts, nearest, query_terms, vector_from_bytes},
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

    /// Runs `f` in a transaction, again (up to [`WRITE_ATTEMPTS`]) when it failed on a
    /// conflict with a concurrent transaction; then this handle's copies check their
    /// generations before their next use (its own write is read at once).
    fn write<R>(&self, f: impl FnMut(&mut Transaction<'_>) -> TxResult<R>) -> Result<R> {
        let r = self.transact(f)?;
        self.coherent.copies.unconfirm_all();
        Ok(r)
    }

    /// [`MysqlStore::write`] without touching the copies: for a write its caller applies to
    /// them itself.
    fn transact<R>(&self, mut f: impl FnMut(&mut Transaction<'_>) -> TxResult<R>) -> Result<R> {
        let mut conn = self.conn()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .map_err(|e| self.err(&e))?;
            let result = f(&mut tx).and_then(|r| {
                tx.commit()?;
                Ok(r)
            });
            match result {
                Ok(r) => return Ok(r),
                Err(TxError::Db(e)) if retryable(&e) && attempt < WRITE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "mysql write retried");
                }
                Err(TxError::Db(e)) => return Err(self.err(&e)),
                Err(TxError::Muisti(e)) => return Err(e),
            }
        }
    }

    /// Runs one read statement.
    fn query(&self, sql: Sql) -> Result<Vec<Row>> {
        let mut conn = self.conn()?;
        conn.exec(sql.text, params(sql.args))
            .map_err(|e| self.err(&e))
    }

    /// The live or expired row at a locator, locked for the rest of the transaction.
    fn locked(&self, tx: &mut Transaction<'_>, at: &Locator) -> TxResult<Option<Memory>> {
        let m = &self.q.memories;
        let cols = columns("");
        let row: Option<Row> = match at {
            Locator::Key { partition, key } => tx.exec_first(
                format!(
                    "SELECT {cols} FROM {m} WHERE tenant = ? AND namespace = ? AND `key` = ? \
                     FOR UPDATE"
                ),
                params(vec![
                    bytes(partition.tenant.as_str()),
                    bytes(partition.namespace.as_str()),
                    bytes(key.as_str()),
                ]),
            )?,
            Locator::Id { tenant, id } => tx.exec_first(
                format!("SELECT {cols} FROM {m} WHERE tenant = ? AND id = ? FOR UPDATE"),
                params(vec![bytes(tenant.as_str()), bytes(&id.to_string())]),
            )?,
        };
        Ok(row.map(|mut r| decode(&mut r)).transpose()?)
    }

    /// Writes a record: an insert, or an update of the row whose id was `old`; the vector as
    /// `vector` says (`Keep`: its columns are left as they are); its postings replaced.
    fn write_row(
        &self,
        tx: &mut Transaction<'_>,
        m: &Memory,
        vector: &VectorChange,
        old: Option<MemoryId>,
    ) -> TxResult<()> {
        let Statements {
            memories, postings, ..
        } = &self.q;
        let (terms, doc_len) = sql::postings(m);
        let mut names: Vec<String> = muisti_store::COLUMN_NAMES
            .iter()
            .map(|c| format!("`{c}`"))
            .collect();
        let mut args = values(m);
        names.push("doc_len".into());
        args.push(Value::Int(i64::from(doc_len)));
        match vector {
            VectorChange::Keep => {}
            VectorChange::Set(v) => {
                names.extend(["embedding".into(), "dims".into()]);
                args.extend(vector_values(Some(v)));
            }
            VectorChange::Drop => {
                names.extend(["embedding".into(), "dims".into()]);
                args.extend(vector_values(None));
            }
        }
        let tenant = bytes(m.partition.tenant.as_str());
        match old {
            None => {
                let marks = vec!["?"; names.len()].join(", ");
                tx.exec_drop(
                    format!(
                        "INSERT INTO {memories} ({}) VALUES ({marks})",
                        names.join(", ")
                    ),
                    params(args),
                )?;
            }
            Some(old) => {
                let old = bytes(&old.to_string());
                tx.exec_drop(
                    format!("DELETE FROM {postings} WHERE tenant = ? AND id = ?"),
                    params(vec![tenant.clone(), old.clone()]),
                )?;
                let set: Vec<String> = names.iter().map(|c| format!("{c} = ?")).collect();
                args.extend([tenant.clone(), old]);
                tx.exec_drop(
                    format!(
                        "UPDATE {memories} SET {} WHERE tenant = ? AND id = ?",
                        set.join(", ")
                    ),
                    params(args),
                )?;
            }
        }
        let namespace = bytes(m.partition.namespace.as_str());
        let id = bytes(&m.id.to_string());
        let mut rest = terms.as_slice();
        while !rest.is_empty() {
            // The largest power of two that fits: a handful of statement shapes in all.
            let n = POSTINGS_CHUNK.min(1 << rest.len().ilog2());
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            let mut args = Vec::with_capacity(n * 6);
            for (term, tf, ctx) in chunk {
                args.extend([
                    tenant.clone(),
                    namespace.clone(),
                    Value::Bytes(term.clone()),
                    id.clone(),
                    Value::Int(i64::from(*tf)),
                    Value::Int(i64::from(*ctx)),
                ]);
            }
            let marks = vec!["(?, ?, ?, ?, ?, ?)"; n].join(", ");
            tx.exec_drop(
                format!(
                    "INSERT INTO {postings} (tenant, namespace, term, id, tf, ctx_tf) \
                     VALUES {marks}"
                ),
                params(args),
            )?;
        }
        Ok(())
    }

    /// Deletes expired records (every write does, as on SQLite and PostgreSQL: the expiry
    /// index makes it cheap when nothing has expired).
    fn purge_in(&self, tx: &mut Transaction<'_>, now: i64) -> TxResult<u64> {
        tx.exec_drop(
            format!(
                "DELETE FROM {} WHERE expires_at IS NOT NULL AND expires_at <= ?",
                self.q.memories
            ),
            (now,),
        )?;
        Ok(tx.affected_rows())
    }

    /// Bumps the generation of each partition in `changes` (sorted, so that two
    /// transactions lock them in one order) and logs what changed under it, trimming the log
    /// to its last [`copies::KEPT`] entries: the last statements of every write transaction
    /// (whether this handle keeps copies or not: another may).
    fn bump(
        &self,
        tx: &mut Transaction<'_>,
        mut changes: Vec<(Partition, copies::Changed)>,
    ) -> TxResult<Vec<(Partition, copies::Version)>> {
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        let Statements {
            generations,
            changes: log,
            ..
        } = &self.q;
        let mut bumped = Vec::with_capacity(changes.len());
        for (p, changed) in changes {
            let (t, n) = (bytes(p.tenant.as_str()), bytes(p.namespace.as_str()));
            tx.exec_drop(
                format!(
                    "INSERT INTO {generations} (tenant, namespace, generation) VALUES (?, ?, 1) \
                     ON DUPLICATE KEY UPDATE generation = generation + 1"
                ),
                params(vec![t.clone(), n.clone()]),
            )?;
            let g: i64 = tx
                .exec_first(
                    format!(
                        "SELECT generation FROM {generations} WHERE tenant = ? AND namespace = ?"
                    ),
                    params(vec![t.clone(), n.clone()]),
                )?
                .unwrap_or(1);
            tx.exec_drop(
                format!(
                    "INSERT INTO {log} (tenant, namespace, generation, ids) VALUES (?, ?, ?, ?)"
                ),
                params(vec![
                    t.clone(),
                    n.clone(),
                    Value::Int(g),
                    bytes(&copies::logged(&changed)),
                ]),
            )?;
            // Trimmed now and then, not on every write.
            if g % 64 == 0 {
                tx.exec_drop(
                    format!(
                        "DELETE FROM {log} WHERE tenant = ? AND namespace = ? AND generation <= ?"
                    ),
                    params(vec![t, n, Value::Int(g - copies::KEPT)]),
                )?;
            }
            bumped.push((p, g));
        }
        Ok(bumped)
    }

    /// The partitions of records of `tenant` with these ids, each with its ids (what a write
    /// by id alone changed, for [`MysqlStore::bump`]).
    fn partitions_of(
        &self,
        tx: &mut Transaction<'_>,
        tenant: &Tenant,
        ids: &[MemoryId],
    ) -> TxResult<Vec<(Partition, copies::Changed)>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(256) {
            let mut sql = Sql::new(format!(
                "SELECT namespace, id FROM {} WHERE tenant = ? AND id IN ",
                self.q.memories
            ));
            sql.args.push(bytes(tenant.as_str()));
            sql.list(chunk.iter().map(|id| bytes(&id.to_string())));
            let rows: Vec<Row> = tx.exec(sql.text, params(sql.args))?;
            for mut r in rows {
                let ns: String = take(&mut r, 0)?;
                let id = parse_id(&take::<String>(&mut r, 1)?)?;
                out.push((Partition::new(tenant.clone(), Namespace::new(ns)?), id));
            }
        }
        Ok(copies::by_partition(out))
    }

    /// One put inside a transaction; with the id of another record it replaced (an expired
    /// one at the key, whose row took the new record).
    fn put_in(
        &self,
        tx: &mut Transaction<'_>,
        put: &Put,
        now: Timestamp,
    ) -> TxResult<(Written, Option<MemoryId>)> {
        let mut put = put.clone();
        // A put replaces the whole record, its vector included.
        let vector = match put.embedding.take() {
            Some(v) => VectorChange::Set(v),
            None => VectorChange::Drop,
        };
        let existing = match &put.key {
            None => None,
            Some(key) => self.locked(
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
        self.write_row(tx, &memory, &vector, old_id)?;
        let replaced = old_id.filter(|old| *old != memory.id);
        Ok((Written { memory, status }, replaced))
    }

    /// What puts changed, for [`MysqlStore::bump`].
    fn changed_by(written: &[(Written, Option<MemoryId>)]) -> Vec<(Partition, copies::Changed)> {
        copies::by_partition(written.iter().flat_map(|(w, replaced)| {
            let p = &w.memory.partition;
            std::iter::once((p.clone(), w.memory.id)).chain(replaced.map(|old| (p.clone(), old)))
        }))
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

impl Store for MysqlStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "mysql",
            location: self.location.clone(),
            capabilities: Capabilities {
                native_text: true,
                native_vector: false,
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
        self.write(|tx| {
            self.purge_in(tx, now.as_millis())?;
            let done = self.put_in(tx, &put, now)?;
            self.bump(tx, Self::changed_by(std::slice::from_ref(&done)))?;
            Ok(done.0)
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        self.write(|tx| {
            self.purge_in(tx, now.as_millis())?;
            let done = puts
                .iter()
                .map(|p| self.put_in(tx, p, now))
                .collect::<TxResult<Vec<_>>>()?;
            self.bump(tx, Self::changed_by(&done))?;
            Ok(done.into_iter().map(|(w, _)| w).collect())
        })
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let live = Record::admit(records, &self.limits, self.now())?;
        let memories = &self.q.memories;
        self.write(|tx| {
            for r in &live {
                let m = &r.memory;
                // Postings go with their records (ON DELETE CASCADE).
                tx.exec_drop(
                    format!(
                        "DELETE FROM {memories} WHERE tenant = ? AND (id = ? OR \
                         (namespace = ? AND `key` = ?))"
                    ),
                    params(vec![
                        bytes(m.partition.tenant.as_str()),
                        bytes(&m.id.to_string()),
                        bytes(m.partition.namespace.as_str()),
                        bytes(m.key.as_str()),
                    ]),
                )?;
                let vector = match &r.vector {
                    Some(v) => VectorChange::Set(v.clone()),
                    None => VectorChange::Drop,
                };
                self.write_row(tx, m, &vector, None)?;
            }
            // Rows replaced by key are not named: copies of these partitions reload.
            let mut partitions: Vec<&Partition> =
                live.iter().map(|r| &r.memory.partition).collect();
            partitions.sort();
            partitions.dedup();
            self.bump(
                tx,
                partitions
                    .into_iter()
                    .map(|p| (p.clone(), copies::Changed::All))
                    .collect(),
            )
        })?;
        Ok(live.len() as u64)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        self.write(|tx| {
            let found = self.locked(tx, &req.at)?;
            let old_id = found.as_ref().map(|m| m.id);
            let live = found.filter(|m| !m.is_expired(now) && req.at.addresses(m));
            let (memory, change) = req.apply(live.as_ref(), now, &self.limits)?;
            self.write_row(tx, &memory, &change, old_id)?;
            let replaced = old_id.filter(|old| *old != memory.id);
            self.bump(
                tx,
                Self::changed_by(&[(
                    Written {
                        memory: memory.clone(),
                        status: WriteStatus::Updated,
                    },
                    replaced,
                )]),
            )?;
            Ok(memory)
        })
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let now = self.now().as_millis();
        let mut sql = Sql::new(format!(
            "SELECT {} FROM {} WHERE tenant = ?",
            columns(""),
            self.q.memories
        ));
        sql.args.push(bytes(at.tenant().as_str()));
        sql.and_live("", now);
        match at {
            Locator::Key { partition, key } => {
                sql.and("namespace = ?", bytes(partition.namespace.as_str()));
                sql.and("`key` = ?", bytes(key.as_str()));
            }
            Locator::Id { id, .. } => sql.and("id = ?", bytes(&id.to_string())),
        }
        let mut rows = self.query(sql)?;
        rows.first_mut().map(decode).transpose()
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
        // A copy held (made current) answers; no copy is loaded for a list.
        if let Some(copy) = self.copy_of(&query.partition, false)? {
            let items = copy.read().unwrap_or_else(|e| e.into_inner()).list(
                &query.filter,
                query.after,
                size.saturating_add(1),
                self.now(),
            );
            return Ok(Page::from_sorted(items, size));
        }
        let residual = Residual::of(&query.filter);
        let now = self.now().as_millis();
        let mut items: Vec<Memory> = Vec::new();
        let mut after = query.after;
        // Rows that fail the residual filter are skipped: read on until a page is full.
        loop {
            let mut sql = Sql::new(format!(
                "SELECT {} FROM {} WHERE ",
                columns(""),
                self.q.memories
            ));
            sql.append(Sql::live_in("", &query.partition, &query.filter, now));
            if let Some(after) = after {
                sql.and("id > ?", bytes(&after.to_string()));
            }
            let want = size + 1 - items.len();
            sql.push(&format!(" ORDER BY id LIMIT {want}"));
            let rows = self.query(sql)?;
            let got = rows.len();
            for mut r in rows {
                let m = decode(&mut r)?;
                after = Some(m.id);
                if residual.keeps_memory(&m) {
                    items.push(m);
                }
            }
            if got < want || items.len() > size {
                break;
            }
        }
        Ok(Page::from_sorted(items, size))
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        if let Some(copy) = self.copy_of(partition, false)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.count(filter, self.now()) as u64);
        }
        let residual = Residual::of(filter);
        let what = if residual.any() {
            "tags, metadata".to_owned()
        } else {
            "COUNT(*)".to_owned()
        };
        let mut sql = Sql::new(format!("SELECT {what} FROM {} WHERE ", self.q.memories));
        sql.append(Sql::live_in("", partition, filter, self.now().as_millis()));
        let rows = self.query(sql)?;
        if residual.any() {
            let mut n = 0;
            for mut r in rows {
                n += u64::from(residual.keeps(&mut r, 0)?);
            }
            Ok(n)
        } else {
            let n: i64 = match rows.into_iter().next() {
                Some(mut r) => take(&mut r, 0)?,
                None => 0,
            };
            Ok(n.max(0) as u64)
        }
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now();
        let m = &self.q.memories;
        self.write(|tx| {
            // The row (locked), so that its partition and id are logged.
            let Some(found) = self.locked(tx, at)?.filter(|f| !f.is_expired(now)) else {
                return Ok(false);
            };
            tx.exec_drop(
                format!("DELETE FROM {m} WHERE tenant = ? AND id = ?"),
                params(vec![
                    bytes(found.partition.tenant.as_str()),
                    bytes(&found.id.to_string()),
                ]),
            )?;
            let deleted = tx.affected_rows() > 0;
            if deleted {
                self.bump(
                    tx,
                    vec![(found.partition, copies::Changed::Ids(vec![found.id]))],
                )?;
            }
            Ok(deleted)
        })
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let now = self.now().as_millis();
        let m = &self.q.memories;
        let where_ = "WHERE tenant = ? AND namespace = ?";
        let args = || {
            vec![
                bytes(partition.tenant.as_str()),
                bytes(partition.namespace.as_str()),
            ]
        };
        self.write(|tx| {
            // The live ones are counted, under the locks the delete then takes.
            let mut count = args();
            count.push(Value::Int(now));
            let live: Option<i64> = tx.exec_first(
                format!(
                    "SELECT COUNT(*) FROM (SELECT id, expires_at FROM {m} {where_} FOR UPDATE) \
                     r WHERE r.expires_at IS NULL OR r.expires_at > ?"
                ),
                params(count),
            )?;
            tx.exec_drop(format!("DELETE FROM {m} {where_}"), params(args()))?;
            self.bump(tx, vec![(partition.clone(), copies::Changed::All)])?;
            Ok(live.unwrap_or(0).max(0) as u64)
        })
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new(format!(
            "SELECT DISTINCT namespace FROM {} WHERE tenant = ?",
            self.q.memories
        ));
        sql.args.push(bytes(tenant.as_str()));
        sql.and_live("", self.now().as_millis());
        sql.push(" ORDER BY namespace");
        let rows = self.query(sql)?;
        self.names(rows, "namespace", Namespace::new)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let mut sql = Sql::new(format!(
            "SELECT DISTINCT tenant FROM {} WHERE TRUE",
            self.q.memories
        ));
        sql.and_live("", self.now().as_millis());
        sql.push(" ORDER BY tenant");
        let rows = self.query(sql)?;
        self.names(rows, "tenant", Tenant::new)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let now = self.now().as_millis();
        let sql = format!(
            "UPDATE {} SET embedding = ?, dims = ?, embedding_model = ? \
             WHERE tenant = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)",
            self.q.memories
        );
        self.write(|tx| {
            let mut n = 0;
            for v in vectors {
                let [embedding, dims] = vector_values(Some(&v.vector));
                tx.exec_drop(
                    &sql,
                    params(vec![
                        embedding,
                        dims,
                        bytes(&v.model),
                        bytes(tenant.as_str()),
                        bytes(&v.id.to_string()),
                        Value::Int(now),
                    ]),
                )?;
                n += tx.affected_rows();
            }
            let ids: Vec<MemoryId> = vectors.iter().map(|v| v.id).collect();
            let changed = self.partitions_of(tx, tenant, &ids)?;
            self.bump(tx, changed)?;
            Ok(n)
        })
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let counts = muisti_core::touch_counts(ids);
        let sql = format!(
            "UPDATE {} SET access_count = access_count + ?, last_accessed_at = ? \
             WHERE tenant = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)",
            self.q.memories
        );
        let when = at;
        let at = at.as_millis();
        let bumped = self.transact(|tx| {
            for (id, n) in &counts {
                tx.exec_drop(
                    &sql,
                    params(vec![
                        Value::UInt(*n),
                        Value::Int(at),
                        bytes(tenant.as_str()),
                        bytes(&id.to_string()),
                        Value::Int(at),
                    ]),
                )?;
            }
            let ids: Vec<MemoryId> = counts.iter().map(|(id, _)| *id).collect();
            let changed = self.partitions_of(tx, tenant, &ids)?;
            self.bump(tx, changed)
        })?;
        // Applied to this handle's copies in place when nothing else changed the partition
        // meanwhile (else the copy checks before its next use), so recall's access counts
        // cost the next recall no catch-up.
        for (p, g) in bumped {
            self.coherent.copies.apply(
                &p,
                |have| (*have + 1 == g).then_some(g),
                |copy| {
                    for (id, n) in &counts {
                        copy.count_access(*id, *n, when);
                    }
                },
            );
        }
        Ok(())
    }

    fn purge_expired(&self) -> Result<u64> {
        let now = self.now().as_millis();
        self.write(|tx| self.purge_in(tx, now))
    }

    fn health_check(&self) -> Health {
        let answer = self
            .conn()
            .and_then(|mut c| c.query_drop("SELECT 1").map_err(|e| self.err(&e)));
        match answer {
            Ok(()) => Health {
                ok: true,
                detail: format!("mysql {}", self.location),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.read_vectors(partition, filter, None)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        if query.limit == 0 || query.vector.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(copy) = self.copy_of(&query.partition, true)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.vector_search(&query.vector, &query.filter, query.limit, self.now()));
        }
        let vectors =
            self.read_vectors(&query.partition, &query.filter, Some(query.vector.len()))?;
        Ok(nearest(
            vectors.iter().map(|v| (v.id, v.vector.as_slice())),
            &query.vector,
            query.limit,
        ))
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let terms = query_terms(&query.query);
        if terms.is_empty() || query.limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(copy) = self.copy_of(&query.partition, true)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.text_search(&query.query, &query.filter, query.limit, self.now()));
        }
        let now = self.now().as_millis();
        let residual = Residual::of(&query.filter);
        let Statements {
            memories, postings, ..
        } = &self.q;
        // The corpus statistics of the filter's records...
        let mut stats = if residual.any() {
            Sql::new(format!(
                "SELECT doc_len, tags, metadata FROM {memories} WHERE "
            ))
        } else {
            Sql::new(format!(
                "SELECT COUNT(*), CAST(COALESCE(SUM(doc_len), 0) AS SIGNED) FROM {memories} \
                 WHERE "
            ))
        };
        stats.append(Sql::live_in("", &query.partition, &query.filter, now));
        // ...and the postings of the query's terms in them.
        let keys: Vec<Vec<u8>> = terms.iter().map(|t| term_key(t)).collect();
        let mut hits = Sql::new(format!(
            "SELECT m.id, m.doc_len, p.term, p.tf, p.ctx_tf{} FROM {postings} p \
             JOIN {memories} m ON m.tenant = p.tenant AND m.id = p.id \
             WHERE p.tenant = ? AND p.namespace = ? AND p.term IN ",
            residual.columns("m.")
        ));
        hits.args.push(bytes(query.partition.tenant.as_str()));
        hits.args.push(bytes(query.partition.namespace.as_str()));
        hits.list(keys.iter().cloned().map(Value::Bytes));
        hits.push(" AND ");
        hits.append(Sql::live_in("m.", &query.partition, &query.filter, now));
        // One snapshot for both.
        let mut conn = self.conn()?;
        let mut tx = conn
            .start_transaction(
                TxOpts::default()
                    .set_isolation_level(Some(IsolationLevel::RepeatableRead))
                    .set_with_consistent_snapshot(true)
                    .set_access_mode(Some(AccessMode::ReadOnly)),
            )
            .map_err(|e| self.err(&e))?;
        let stat_rows: Vec<Row> = tx
            .exec(stats.text, params(stats.args))
            .map_err(|e| self.err(&e))?;
        let hit_rows: Vec<Row> = tx
            .exec(hits.text, params(hits.args))
            .map_err(|e| self.err(&e))?;
        tx.commit().map_err(|e| self.err(&e))?;
        let mut corpus = CorpusStats {
            docs: 0,
            total_len: 0,
        };
        if residual.any() {
            for mut r in stat_rows {
                if residual.keeps(&mut r, 1)? {
                    let len: i64 = take(&mut r, 0)?;
                    corpus.docs += 1;
                    corpus.total_len += len.max(0) as u64;
                }
            }
        } else if let Some(mut r) = stat_rows.into_iter().next() {
            corpus.docs = take::<i64>(&mut r, 0)?.max(0) as u64;
            corpus.total_len = take::<i64>(&mut r, 1)?.max(0) as u64;
        }
        let index: HashMap<&[u8], usize> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_slice(), i))
            .collect();
        let mut candidates: HashMap<MemoryId, TermCounts> = HashMap::new();
        for mut r in hit_rows {
            if !residual.keeps(&mut r, 5)? {
                continue;
            }
            let id = parse_id(&take::<String>(&mut r, 0)?)?;
            let len: i64 = take(&mut r, 1)?;
            let term: Vec<u8> = take(&mut r, 2)?;
            let tf: i64 = take(&mut r, 3)?;
            let ctx: i64 = take(&mut r, 4)?;
            let Some(&k) = index.get(term.as_slice()) else {
                continue;
            };
            let c = candidates.entry(id).or_insert_with(|| TermCounts {
                id,
                len: len.clamp(0, i64::from(u32::MAX)) as u32,
                content: vec![0; terms.len()],
                context: vec![0; terms.len()],
            });
            c.content[k] = tf.clamp(0, i64::from(u32::MAX)) as u32;
            c.context[k] = ctx.clamp(0, i64::from(u32::MAX)) as u32;
        }
        Ok(Bm25::default().rank_counts(candidates.into_values(), &terms, corpus, query.limit))
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        Ok(self
            .get_many_shared(tenant, ids)?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        // Copies confirmed within the staleness window (or this read run) answer with the
        // records they hold; the rest is read.
        self.coherent.copies.get_many_shared(
            tenant,
            ids,
            self.coherent.staleness,
            self.now(),
            |missing| self.db_get_many(tenant, missing),
        )
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        match self.copy_of(partition, true)? {
            Some(copy) => Ok(copy
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .rank_fields(ids, self.now())),
            None => Ok(self
                .db_get_many(&partition.tenant, ids)?
                .iter()
                .filter(|m| m.partition == *partition)
                .map(RankFields::of)
                .collect()),
        }
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
        let now: i64 = conn
            .exec_first(&generation_sql, params(vec![t.clone(), n.clone()]))
            .map_err(|e| self.err(&e))?
            .unwrap_or(0);
        if let Some(copy) = c.copies.held(p) {
            let have = *copy.read().unwrap_or_else(|e| e.into_inner()).version();
            if have == now {
                c.copies.confirmed(p);
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
                        c.copies.confirmed(p);
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
        Ok(Some(c.copies.keep(p, copies::new_copy(version, loaded))))
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
