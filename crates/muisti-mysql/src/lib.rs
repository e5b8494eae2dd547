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
//!   `max_allowed_packet`).
//!
//! Records, their full-text postings and their vectors are written in one transaction. The
//! postings are the engine's own tokens ([`muisti_core::text::tokenize`]), one row per
//! distinct term of a record with its counts: a search reads the postings of the query's
//! terms and the engine scores them by its one BM25 definition ([`Bm25::rank_counts`]) with
//! the corpus statistics the same query's filter selects, in one snapshot. MySQL's FULLTEXT
//! indexes are not used: their tokenizer, stop words and scores differ from the engine's.
//!
//! Vectors are stored as bytes and **compared by the engine**: a vector search reads the
//! vectors of the partition (of the filter's user, when given) and ranks them exactly. That
//! is fine for thousands of memories per user; for millions in one partition use PostgreSQL
//! with pgvector.
//!
//! Nothing is kept in memory between calls, so any number of processes and servers share
//! one database and none reads stale data. TLS is not built in: `require_ssl=true` is refused
//! rather than connecting in the clear.

mod sql;

use std::{collections::HashMap, sync::Arc, time::Duration};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, Record, Result, Scored, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange, VectorQuery,
    WriteStatus, Written,
    text::{Bm25, CorpusStats, TermCounts, nearest, query_terms, vector_from_bytes},
};
use muisti_store::{StoreRegistry, StoreUrl};
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
const SCHEMA_VERSION: i64 = 1;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: [&str; 1] = [include_str!("schema_v1.sql")];
/// How often a write is retried after a conflict with a concurrent transaction (two
/// creates at one key, a deadlock, a lock wait timeout).
const WRITE_ATTEMPTS: usize = 8;
/// How long a caller waits for a pooled connection.
const POOL_WAIT: Duration = Duration::from_secs(30);
/// Postings rows per INSERT, at most (a record's are written in chunks of powers of two, so
/// a handful of statement shapes serve every record).
const POSTINGS_CHUNK: usize = 64;
/// The parameters muisti takes out of the URL.
const OWN_PARAMS: [&str; 3] = ["table_prefix", "pool_size", "max_value_bytes"];

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
        };
        let store = Self {
            pool,
            prefix,
            location,
            limits,
            clock: Arc::new(SystemClock),
            q,
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
        } = &self.q;
        conn.query_drop(format!(
            "DROP TABLE IF EXISTS {postings}, {memories}, {versions}"
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
    /// conflict with a concurrent transaction.
    fn write<R>(&self, mut f: impl FnMut(&mut Transaction<'_>) -> TxResult<R>) -> Result<R> {
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

    /// One put inside a transaction.
    fn put_in(&self, tx: &mut Transaction<'_>, put: &Put, now: Timestamp) -> TxResult<Written> {
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
        Ok(Written { memory, status })
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
            self.put_in(tx, &put, now)
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        self.write(|tx| {
            self.purge_in(tx, now.as_millis())?;
            puts.iter().map(|p| self.put_in(tx, p, now)).collect()
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
            Ok(())
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
        let now = self.now().as_millis();
        let m = &self.q.memories;
        self.write(|tx| {
            let (sql, mut args) = match at {
                Locator::Key { partition, key } => (
                    format!("DELETE FROM {m} WHERE tenant = ? AND namespace = ? AND `key` = ?"),
                    vec![
                        bytes(partition.tenant.as_str()),
                        bytes(partition.namespace.as_str()),
                        bytes(key.as_str()),
                    ],
                ),
                Locator::Id { tenant, id } => (
                    format!("DELETE FROM {m} WHERE tenant = ? AND id = ?"),
                    vec![bytes(tenant.as_str()), bytes(&id.to_string())],
                ),
            };
            args.push(Value::Int(now));
            tx.exec_drop(
                format!("{sql} AND (expires_at IS NULL OR expires_at > ?)"),
                params(args),
            )?;
            Ok(tx.affected_rows() > 0)
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
        let at = at.as_millis();
        self.write(|tx| {
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
            Ok(())
        })
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
