//! The Redis store.
//!
//! Layout, under a prefix `P` (default `muisti:`); tenant and namespace names cannot contain
//! `/`, so every key below is unambiguous:
//!
//! | key | type | holds |
//! |---|---|---|
//! | `P r/{tenant}/{namespace}/{key}` | string | the record as JSON, with a native expiry when it has a TTL |
//! | `P i/{tenant}/{id}` | string | `{namespace}/{key}` of the record with that id, same expiry |
//! | `P v/{tenant}/{id}` | string | the record's vector, `f32` little-endian, same expiry |
//! | `P n/{tenant}/{namespace}` | sorted set | members `{id}/{key}`, all score 0: the listing index, in id order |
//! | `P t/{tenant}` | set | the tenant's namespaces |
//! | `P tenants` | set | the tenants |
//! | `P g/{tenant}/{namespace}` | integer | the partition's generation: `INCR`ed by every transaction that changes its records |
//! | `P c/{tenant}/{namespace}` | stream | the partition's change log: per such transaction its generation `g` and the `ids` it changed (`*`: all), the last 1,200 or so (a copy further behind reloads anyway) |
//!
//! Writes are `WATCH`/`MULTI` transactions, so concurrent writers in any number of processes
//! lose nothing. Expired records vanish natively; their index entries are dropped when a
//! listing meets them and by `purge_expired`. Only `SCAN`-family commands iterate (never
//! `KEYS`). No TTL means no expiry: there is no default TTL.
//!
//! Searches (full text, vectors) and recall's reads answer from an in-process copy of the
//! partition, checked against its generation (one `GET`) and caught up from its change log:
//! see `copy.rs`.
//! `staleness_ms` (default 1) lets a copy confirmed that recently answer without asking (the
//! reads of one recall cost one round trip); 0 asks on every read.
//! `cache_mb` bounds the memory the copies of one handle take (estimated; default 2048, as
//! SQLite's; least recently used partitions dropped first; 0 keeps none, so every search
//! reads the partition).
//!
//! URL: `redis://[:password@]host[:port][/db][?prefix=muisti:&cache_mb=N&staleness_ms=N]`, or
//! `rediss://` for TLS. A URL without a host (`redis://`, `redis:///2`, `redis://?prefix=p:`)
//! names the server in the `REDIS_URL` environment variable, or else `redis://127.0.0.1:6379`
//! ([`resolve_url`]); its own database and parameters are kept.
//!
//! **Redis Cluster:** `redis+cluster://[user:password@]host:port[,host:port...]` (any nodes
//! of the cluster; the slot map is read from the first that answers). Every key carries its
//! tenant as a hash tag (`r/{tenant}/...`), so one tenant's keys share a slot and its
//! transactions run as above on the master serving that slot (`cluster.rs`); tenants spread
//! over the masters. The tenants set is not kept: listing tenants scans each master for the
//! tenants' namespace sets. A write is acknowledged once `wait_replicas` (default 1) of its
//! master's connected replicas have it (`WAIT`, up to `wait_ms`, default 2000, at most 9000),
//! so a failover to such a replica does not lose it; a master with fewer replicas connected
//! (right after a failover, or while its replica resynchronises) waits for those it has, and
//! a write it acknowledges alone is lost if it fails before a replica copies it. Access
//! counts are acknowledged at once. A write not confirmed in time is an `Unavailable` error.
//! A call turned away unapplied (`MOVED`, `ASK` until a migration ends, `CLUSTERDOWN`,
//! `TRYAGAIN`, no connection to the node) reads the slot map again and runs again, for up to
//! `failover_ms` (default 15000); a fan-out over the masters (listing tenants, health) fails
//! at a node that fails it. The key layout differs from a single server's (the braces), so data is moved
//! between the two with `muisti export`/`import`, not copied key by key.

mod cluster;
mod store;
mod write;

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex, Once, RwLock, atomic::Ordering},
    time::{Duration, Instant},
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, RankFields, Record, Result, Scored, Store, StoreInfo,
    StoredVector, SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange,
    VectorQuery, WriteStatus, Written, redact_url,
    text::{vector_from_bytes, vector_to_bytes},
};
use muisti_store::{StoreRegistry, StoreUrl};
use redis::{Commands, Connection, ConnectionLike, RedisError};

use muisti_store::copy::{Copies, Copy, Shared};

/// A copy's version: the partition's generation and its change-log entry (`0-0` before the
/// first).
type Version = (i64, String);

/// The version after this process's write of `generation`, logged as `entry`, when the write
/// directly follows `have`.
fn follows(generation: i64, entry: String) -> impl FnOnce(&Version) -> Option<Version> {
    move |have| (have.0 + 1 == generation).then_some((generation, entry))
}

/// A record's member in its partition's listing index: `{id}/{key}`.
fn index_member(m: &Memory) -> String {
    format!("{}/{}", m.id, m.key)
}

/// The scheme of a Redis Cluster's URL.
pub const CLUSTER_SCHEME: &str = "redis+cluster";

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "muisti:";

/// The Redis store.
pub struct RedisStore {
    conns: Conns,
    /// The URL with the password removed, for messages.
    target: String,
    prefix: String,
    limits: Limits,
    by_id: redis::Script,
    clock: Arc<dyn Clock>,
    copies: Copies<Version>,
    /// Held while this handle commits a change and applies it to its copy, and while a copy
    /// catches up: so this handle's changes reach its copies in commit order.
    commit_order: Mutex<()>,
    /// How long a confirmed copy answers without asking Redis again.
    staleness: Duration,
}

/// Where the store's commands go.
enum Conns {
    /// One server (or a proxy in front of several): a pool of connections to it.
    Single {
        client: redis::Client,
        pool: Mutex<Vec<Connection>>,
    },
    /// A Redis Cluster: each tenant's commands to the master serving its slot.
    Cluster(cluster::Cluster),
}

/// Which node a call needs, in a cluster: the one serving a tenant's slot, or a given one
/// (fan-out over the masters). A single server serves every call.
#[derive(Clone, Copy)]
enum Route<'a> {
    Tenant(&'a Tenant),
    Node(&'a str),
}

/// A tenant as it appears in keys: `{tenant}` in a cluster (the hash tag that keeps all of
/// a tenant's keys in one slot), the bare name on a single server.
struct Tag<'a>(&'a Tenant, bool);

impl fmt::Display for Tag<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 {
            write!(f, "{{{}}}", self.0)
        } else {
            write!(f, "{}", self.0)
        }
    }
}

const IDLE_CONNECTIONS: usize = 8;
/// In a cluster, the default of how long a call keeps looking for its slot's master.
pub const DEFAULT_FAILOVER_MS: usize = 15_000;
/// In a cluster, the default of how many replicas a write waits for (at most: a master with
/// fewer connected waits for those it has).
pub const DEFAULT_WAIT_REPLICAS: usize = 1;
/// In a cluster, the default of how long a write waits for its replicas.
pub const DEFAULT_WAIT_MS: usize = 2_000;
const CHUNK: usize = 500;
/// The default bound of the memory a handle's copies take, in MiB.
pub const DEFAULT_CACHE_MB: usize = 2048;
/// The default `staleness_ms`: how long a confirmed copy answers without asking again.
pub const DEFAULT_STALENESS_MS: usize = 1;
/// Change-log entries kept per partition (approximately: trimmed with `MAXLEN ~`): a few
/// more than a copy catches up on ([`CATCH_UP_MAX`]), so that a log costs little memory in
/// Redis however many partitions there are.
const CHANGES_KEPT: usize = 1_200;
/// Change-log entries a copy catches up on at once; further behind, it is reloaded.
const CATCH_UP_MAX: usize = 1_000;
/// Run inside a write's `MULTI`: the partition's next generation, logged with the ids the
/// transaction changed. Returns `{generation, entry id}`.
const BUMP: &str = "local g = redis.call('INCR', KEYS[1]) \
    local e = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'g', g, 'ids', ARGV[2]) \
    return {g, e}";
/// The record with an id: its `namespace/key` pointer and its JSON (as `by_id`).
const BY_ID: &str = "local ptr = redis.call('GET', KEYS[1]) \
    if not ptr then return false end \
    return {ptr, redis.call('GET', ARGV[1] .. ptr)}";

static TLS_INIT: Once = Once::new();

thread_local! {
    /// In a cluster, the replicas the write running on this thread waits for: set by
    /// `with_conn` for the master it runs on, read by `replicated` (the many helpers between
    /// them take a bare connection).
    static WAIT_FOR: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The environment variable a Redis URL without a host reads its server from.
pub const REDIS_URL_ENV: &str = "REDIS_URL";

/// The server a Redis URL without a host falls back to when `REDIS_URL` is not set.
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// `url` with its server filled in when it names none: `redis://` (or `rediss://`) with an
/// empty host takes the scheme, credentials, host and database of `from_env` (the value of
/// `REDIS_URL`, when it is a `redis://` or `rediss://` URL with a host) or of
/// [`DEFAULT_REDIS_URL`]; `rediss://` keeps TLS, a database in `url` overrides the
/// environment's, and the parameters of both are kept (`url`'s where both name one). Any
/// other URL is returned as it is.
pub fn resolve_url(url: &str, from_env: Option<&str>) -> String {
    let Some((scheme, after)) = url.split_once("://") else {
        return url.to_owned();
    };
    let hostless = after.is_empty() || after.starts_with('/') || after.starts_with('?');
    if !hostless || !matches!(scheme.to_ascii_lowercase().as_str(), "redis" | "rediss") {
        return url.to_owned();
    }
    // Only a single server's URL with a host stands in (a cluster's, a socket's or a bare
    // host is not one: the default does, and opening it says what it reached).
    let server = from_env
        .map(str::trim)
        .filter(|s| {
            let lower = s.to_ascii_lowercase();
            ["redis://", "rediss://"].iter().any(|p| {
                lower
                    .strip_prefix(p)
                    .is_some_and(|rest| !rest.is_empty() && !rest.starts_with(['/', '?']))
            })
        })
        .unwrap_or(DEFAULT_REDIS_URL);
    let (path, query) = after.split_once('?').unwrap_or((after, ""));
    let (env_base, env_query) = server.split_once('?').unwrap_or((server, ""));
    // `rediss://` asks for TLS whatever the environment's scheme.
    let env_base = match env_base.split_once("://") {
        Some((_, rest)) if scheme.eq_ignore_ascii_case("rediss") => format!("rediss://{rest}"),
        _ => env_base.to_owned(),
    };
    let env_base = env_base.as_str();
    let base = match path.trim_matches('/') {
        "" => env_base.to_owned(),
        db => {
            // The environment's database, if any, gives way to the URL's.
            let host_end = env_base.split_once("://").map_or(0, |(s, rest)| {
                s.len() + 3 + rest.find('/').unwrap_or(rest.len())
            });
            format!("{}/{db}", &env_base[..host_end])
        }
    };
    let name = |kv: &str| kv.split('=').next().unwrap_or_default().to_owned();
    let own: Vec<&str> = query.split('&').filter(|kv| !kv.is_empty()).collect();
    let own_names: Vec<String> = own.iter().map(|kv| name(kv)).collect();
    let params: Vec<&str> = env_query
        .split('&')
        .filter(|kv| !kv.is_empty() && !own_names.contains(&name(kv)))
        .chain(own)
        .collect();
    if params.is_empty() {
        base
    } else {
        format!("{base}?{}", params.join("&"))
    }
}

/// Registers the `redis` and `rediss` (TLS) schemes: `redis://[user:password@]host:port/db`
/// with the parameters [`RedisStore::open`] reads.
pub fn register(registry: &mut StoreRegistry) {
    for scheme in ["redis", "rediss", CLUSTER_SCHEME] {
        registry.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(RedisStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
}

impl RedisStore {
    /// Connects to `url` (see the crate docs) and checks the server answers.
    ///
    /// The query parameters `prefix`, `cache_mb`, `staleness_ms` and `max_value_bytes` are muisti's;
    /// any others are passed on to the Redis client.
    ///
    /// A URL without a host reads the server from `REDIS_URL` ([`resolve_url`]).
    pub fn open(url: &str) -> Result<Self> {
        let env = std::env::var(REDIS_URL_ENV).ok();
        let url = &resolve_url(url, env.as_deref());
        let target = redact_url(url);
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut prefix = DEFAULT_PREFIX.to_owned();
        let parsed = StoreUrl::parse(url)?;
        let limits = parsed.limits()?;
        let cache_mb = parsed
            .whole("cache_mb", 0..=1 << 30)?
            .unwrap_or(DEFAULT_CACHE_MB);
        let staleness_ms = parsed
            .whole("staleness_ms", 0..=60_000)?
            .unwrap_or(DEFAULT_STALENESS_MS);
        let cluster = parsed.scheme().eq_ignore_ascii_case(CLUSTER_SCHEME);
        let mut passed = Vec::new();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("prefix", v)) => prefix = v.to_owned(),
                Some(("max_value_bytes" | "cache_mb" | "staleness_ms", _)) => {}
                Some(("wait_replicas" | "wait_ms" | "failover_ms", _)) if cluster => {}
                _ => passed.push(kv),
            }
        }
        let conns = if cluster {
            Conns::Cluster(Self::open_cluster(&parsed, url, &target, &prefix, &passed)?)
        } else {
            let client_url = if passed.is_empty() {
                base.to_owned()
            } else {
                format!("{base}?{}", passed.join("&"))
            };
            if base.to_ascii_lowercase().starts_with("rediss://") {
                TLS_INIT.call_once(|| {
                    let _ = rustls::crypto::ring::default_provider().install_default();
                });
            }
            let client =
                redis::Client::open(client_url.as_str()).map_err(|e| Error::InvalidInput {
                    field: "store url",
                    reason: format!("{target}: {}", scrub(&e, url)),
                })?;
            Conns::Single {
                client,
                pool: Mutex::new(Vec::new()),
            }
        };
        let store = Self {
            conns,
            target,
            prefix,
            limits,
            by_id: redis::Script::new(BY_ID),
            clock: Arc::new(SystemClock),
            copies: Copies::new(cache_mb << 20),
            commit_order: Mutex::new(()),
            staleness: Duration::from_millis(staleness_ms as u64),
        };
        // Fail now, with a clear message, rather than on first use.
        store.ping()?;
        Ok(store)
    }

    /// The cluster a `redis+cluster://[user:password@]host:port[,host:port...]` URL names:
    /// its nodes are the seeds the slot map is first read from.
    fn open_cluster(
        parsed: &StoreUrl,
        url: &str,
        target: &str,
        prefix: &str,
        passed: &[&str],
    ) -> Result<cluster::Cluster> {
        let invalid = |reason: String| Error::InvalidInput {
            field: "store url",
            reason: format!("{target}: {reason}"),
        };
        if let Some(unknown) = passed.first() {
            return Err(invalid(format!(
                "unknown parameter {unknown:?} for a cluster (known: prefix, cache_mb, \
                 staleness_ms, max_value_bytes, wait_replicas, wait_ms, failover_ms)"
            )));
        }
        if prefix.contains(['{', '}']) {
            return Err(invalid(
                "a cluster's key prefix cannot contain { or }: the tenant is each key's hash tag"
                    .into(),
            ));
        }
        let (userinfo, nodes) = match parsed.rest().rsplit_once('@') {
            Some((u, n)) => (format!("{u}@"), n),
            None => (String::new(), parsed.rest()),
        };
        let (nodes, db) = nodes.split_once('/').unwrap_or((nodes, ""));
        if !matches!(db, "" | "0") {
            return Err(invalid(
                "a cluster has only database 0; leave the path empty".into(),
            ));
        }
        let seeds: Vec<String> = nodes
            .split(',')
            .filter(|n| !n.is_empty())
            .map(|n| {
                if n.contains(':') {
                    n.to_owned()
                } else {
                    format!("{n}:6379")
                }
            })
            .collect();
        if seeds.is_empty() {
            return Err(invalid(
                "no node: expected redis+cluster://host:port[,host:port...]".into(),
            ));
        }
        let wait_replicas = parsed
            .whole("wait_replicas", 0..=16)?
            .unwrap_or(DEFAULT_WAIT_REPLICAS);
        let wait_ms = parsed
            // Below the connection's read timeout (10 s), so that a WAIT ends with its answer.
            .whole("wait_ms", 1..=9_000)?
            .unwrap_or(DEFAULT_WAIT_MS);
        let failover_ms = parsed
            .whole("failover_ms", 0..=300_000)?
            .unwrap_or(DEFAULT_FAILOVER_MS);
        cluster::Cluster::open(
            seeds,
            userinfo,
            wait_replicas,
            Duration::from_millis(wait_ms as u64),
            Duration::from_millis(failover_ms as u64),
        )
        .map_err(|e| Error::Unavailable {
            target: target.to_owned(),
            reason: scrub(&e, url),
        })
    }

    /// Asks every node the store writes to (the server, or each master) to answer.
    fn ping(&self) -> Result<String> {
        let mut answers = Vec::new();
        for node in self.nodes() {
            answers.push(self.with_conn(Route::Node(&node), |c| {
                Ok(redis::cmd("PING").query::<String>(c)?)
            })?);
        }
        Ok(answers.join(", "))
    }

    /// Each node that holds data, for [`Route::Node`]: the one server (named by an empty
    /// string), or each master of the cluster.
    fn nodes(&self) -> Vec<String> {
        match &self.conns {
            Conns::Single { .. } => vec![String::new()],
            Conns::Cluster(cluster) => cluster.masters(),
        }
    }

    fn is_cluster(&self) -> bool {
        matches!(self.conns, Conns::Cluster(_))
    }

    fn tag<'a>(&self, tenant: &'a Tenant) -> Tag<'a> {
        Tag(tenant, self.is_cluster())
    }

    /// Enforces `limits` on writes.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads the time from `clock`: expiry as the store judges it and the timestamps of
    /// writes (Redis's native expiry of a key still follows the server's clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// How many times this handle loaded a partition's copy whole, and caught one up from
    /// the change log (for tests and metrics).
    pub fn copy_counts(&self) -> (u64, u64) {
        (
            self.copies.loads.load(Ordering::Relaxed),
            self.copies.catch_ups.load(Ordering::Relaxed),
        )
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn unavailable(&self, e: &RedisError) -> Error {
        Error::Unavailable {
            target: self.target.clone(),
            reason: e.to_string(),
        }
    }

    fn map_err(&self, e: RedisError) -> Error {
        if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_timeout()
        {
            self.unavailable(&e)
        } else {
            Error::backend("redis", e)
        }
    }

    /// Runs `f` with a pooled connection to the node `route` names; a connection that failed
    /// is not reused. In a cluster, a call the cluster turned away unapplied (a redirect, a
    /// failover under way: [`cluster::is_rerouted`]) runs again on the slot's master as the
    /// map then says, for up to `failover_ms`.
    fn with_conn<R>(
        &self,
        route: Route<'_>,
        mut f: impl FnMut(&mut Connection) -> Result<R, Fail>,
    ) -> Result<R> {
        let cluster = match &self.conns {
            Conns::Single { client, pool } => {
                let pooled = pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let mut conn = match pooled {
                    Some(c) if c.is_open() => c,
                    _ => connect(client).map_err(|e| self.unavailable(&e))?,
                };
                let (out, reusable) = run(&mut conn, &mut f);
                if reusable {
                    let mut pool = pool.lock().unwrap_or_else(|p| p.into_inner());
                    if pool.len() < IDLE_CONNECTIONS {
                        pool.push(conn);
                    }
                }
                return out.map_err(|e| self.fail(e));
            }
            Conns::Cluster(cluster) => cluster,
        };
        let deadline = Instant::now() + cluster.failover;
        let mut pause = Duration::from_millis(20);
        loop {
            let node = match route {
                Route::Node(addr) => Some(addr.to_owned()),
                Route::Tenant(t) => cluster.master_for(cluster::key_slot(&self.tenant_key(t))),
            };
            let out = match &node {
                None => Err(Fail::Redis(RedisError::from((
                    redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
                    "no master serves the slot",
                )))),
                Some(addr) => match cluster.connection(addr) {
                    Ok(mut conn) => {
                        WAIT_FOR.set(cluster.replicas_to_wait_for(addr, &mut conn));
                        let (out, reusable) = run(&mut conn, &mut f);
                        if reusable {
                            cluster.give_back(addr, conn);
                        } else {
                            cluster.forget(addr);
                        }
                        out
                    }
                    // Nothing was sent: another node may serve the slot by the next try.
                    Err(e) => Err(Fail::Unsent(e)),
                },
            };
            let retry = match &out {
                Err(Fail::Unsent(_)) => true,
                Err(Fail::Redis(e)) => cluster::is_rerouted(e),
                _ => false,
            };
            // A fan-out names its node: a node that fails it is not asked again.
            match out {
                Err(Fail::Redis(e) | Fail::Unsent(e))
                    if retry && matches!(route, Route::Tenant(_)) && Instant::now() < deadline =>
                {
                    tracing::debug!(node = ?node, error = %e, "redis cluster: looking for the slot's master again");
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(500));
                    // A node that does not answer now may answer at the next try.
                    let _ = cluster.refresh();
                }
                out => return out.map_err(|e| self.fail(e)),
            }
        }
    }

    fn fail(&self, e: Fail) -> Error {
        match e {
            Fail::Redis(e) => self.map_err(e),
            Fail::Unsent(e) => self.unavailable(&e),
            Fail::Muisti(e) => e,
        }
    }

    /// After a write committed on `c`: in a cluster, waits until the replicas it asks for
    /// have it, so that a failover cannot lose a write this store acknowledged. A write they
    /// did not confirm in time is an error (it may still be applied).
    fn replicated(&self, c: &mut Connection) -> Result<(), Fail> {
        let Conns::Cluster(cluster) = &self.conns else {
            return Ok(());
        };
        let want = WAIT_FOR.get();
        if want == 0 {
            return Ok(());
        }
        let got: usize = redis::cmd("WAIT")
            .arg(want)
            .arg(cluster.wait_timeout.as_millis() as u64)
            .query(c)?;
        if got < want {
            return Err(Fail::Muisti(Error::Unavailable {
                target: self.target.clone(),
                reason: format!(
                    "the write reached {got} of {want} replicas within {} ms, so it is not \
                     acknowledged (it may still be applied)",
                    cluster.wait_timeout.as_millis()
                ),
            }));
        }
        Ok(())
    }

    fn record_key(&self, p: &Partition, key: &str) -> String {
        format!(
            "{}r/{}/{}/{}",
            self.prefix,
            self.tag(&p.tenant),
            p.namespace,
            key
        )
    }

    /// What the keys of a tenant's records start with.
    fn records_of(&self, tenant: &Tenant) -> String {
        format!("{}r/{}/", self.prefix, self.tag(tenant))
    }

    fn id_key(&self, tenant: &Tenant, id: MemoryId) -> String {
        format!("{}i/{}/{}", self.prefix, self.tag(tenant), id)
    }

    fn vector_key(&self, tenant: &Tenant, id: MemoryId) -> String {
        format!("{}v/{}/{}", self.prefix, self.tag(tenant), id)
    }

    fn index_key(&self, p: &Partition) -> String {
        format!("{}n/{}/{}", self.prefix, self.tag(&p.tenant), p.namespace)
    }

    fn tenant_key(&self, tenant: &Tenant) -> String {
        format!("{}t/{}", self.prefix, self.tag(tenant))
    }

    fn tenants_key(&self) -> String {
        format!("{}tenants", self.prefix)
    }

    fn generation_key(&self, p: &Partition) -> String {
        format!("{}g/{}/{}", self.prefix, self.tag(&p.tenant), p.namespace)
    }

    fn commit_order(&self) -> std::sync::MutexGuard<'_, ()> {
        self.commit_order.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changes_key(&self, p: &Partition) -> String {
        format!("{}c/{}/{}", self.prefix, self.tag(&p.tenant), p.namespace)
    }

    /// Where the records with these ids are and what they hold, in one round trip: for each,
    /// its record key and its JSON (`None` when no record has that id). The one reading of
    /// the id pointers.
    #[allow(clippy::type_complexity)]
    fn locate(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        ids: &[MemoryId],
    ) -> Result<Vec<Option<(String, Option<String>)>>, Fail> {
        let records = self.records_of(tenant);
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("EVAL")
                .arg(BY_ID)
                .arg(1)
                .arg(self.id_key(tenant, *id))
                .arg(&records);
        }
        let found: Vec<Option<(String, Option<String>)>> = pipe.query(c)?;
        ids.iter()
            .zip(found)
            .map(|(id, f)| {
                f.map(|(ptr, json)| Ok((self.pointed(tenant, *id, &ptr)?, json)))
                    .transpose()
            })
            .collect()
    }

    /// The record key an id's pointer (`namespace/key`) names; a pointer that names no
    /// partition is corruption.
    fn pointed(&self, tenant: &Tenant, id: MemoryId, ptr: &str) -> Result<String, Fail> {
        let Some((ns, key)) = ptr.split_once('/') else {
            return Err(Fail::Muisti(Error::Corrupted {
                location: self.id_key(tenant, id),
                reason: "not a namespace/key pointer".into(),
            }));
        };
        let ns = Namespace::new(ns).map_err(Fail::Muisti)?;
        Ok(self.record_key(&Partition::new(tenant.clone(), ns), key))
    }

    /// Adds to a write's transaction the bump of `p`'s generation, logging `ids` (comma
    /// separated; `*` for all). Its reply is `(generation, entry id)`.
    fn queue_bump(&self, pipe: &mut redis::Pipeline, p: &Partition, ids: &str) {
        pipe.cmd("EVAL")
            .arg(BUMP)
            .arg(2)
            .arg(self.generation_key(p))
            .arg(self.changes_key(p))
            .arg(CHANGES_KEPT)
            .arg(ids);
    }

    /// Runs a write transaction (`pipe`, atomic, every command but the bumps ignored) that
    /// changes `changed`: bumps each of their partitions with the ids it changes, commits,
    /// and applies `edit` to each record in its partition's copy. `false` when the
    /// transaction did not apply (a watched key changed). The one way every write commits.
    fn commit<T>(
        &self,
        c: &mut Connection,
        ack: Ack,
        mut pipe: redis::Pipeline,
        changed: &[T],
        memory: impl Fn(&T) -> &Memory,
        edit: impl Fn(&mut Copy<Version>, &T),
    ) -> Result<bool, Fail> {
        let mut partitions: Vec<&Partition> =
            changed.iter().map(|t| &memory(t).partition).collect();
        partitions.sort_unstable();
        partitions.dedup();
        for p in &partitions {
            let ids: Vec<String> = changed
                .iter()
                .map(&memory)
                .filter(|m| m.partition == **p)
                .map(|m| m.id.to_string())
                .collect();
            self.queue_bump(&mut pipe, p, &ids.join(","));
        }
        {
            let _order = self.commit_order();
            let applied: Option<Vec<(i64, String)>> = pipe.query(c)?;
            let Some(generations) = applied else {
                return Ok(false);
            };
            for (p, (g, entry)) in partitions.iter().zip(generations) {
                self.copies.apply(p, follows(g, entry), |copy| {
                    for t in changed.iter().filter(|t| memory(t).partition == **p) {
                        edit(copy, t);
                    }
                });
            }
        }
        // Outside the commit order: a slow replica delays this write only.
        if ack == Ack::Replicated
            && let Err(e) = self.replicated(c)
        {
            // Committed here but perhaps lost by a failover: no copy keeps it.
            for p in &partitions {
                self.copies.drop_copy(p);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// The copy of `p` at its current generation: the one held (caught up from the change
    /// log when behind), or a new one read from Redis.
    fn copy_of(&self, c: &mut Connection, p: &Partition) -> Result<Shared<Version>, Fail> {
        if let Some(copy) = self.current(c, p)? {
            return Ok(copy);
        }
        // The version, then the records: any write committed meanwhile is in the log after
        // that entry, so the next read catches up on it.
        let since = self.copies.mark();
        let version = self.version_now(c, p)?;
        let records = self.scan_index(c, p, &Filter::default(), None, usize::MAX)?;
        let vectors = self.vectors_of(c, &p.tenant, &records)?;
        self.copies.loads.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(partition = %p, records = records.len(), "redis copy loaded");
        let copy = Copy::new(version, records.into_iter().zip(vectors));
        Ok(self.copies.keep(p, copy, since))
    }

    /// The copy of `p` held now, made current (confirmed within the staleness window or in
    /// this thread's read run, else its generation read and the log caught up on); `None`
    /// when none is held or it cannot catch up (nothing is loaded here).
    fn current(&self, c: &mut Connection, p: &Partition) -> Result<Option<Shared<Version>>, Fail> {
        if let Some(copy) = self.copies.recent(p, self.staleness) {
            return Ok(Some(copy));
        }
        let Some(copy) = self.copies.held(p) else {
            return Ok(None);
        };
        let since = self.copies.mark();
        let now = self.version_now(c, p)?;
        let have = copy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .version()
            .clone();
        if have == now || (have.0 < now.0 && self.catch_up(c, p, &copy)?) {
            self.copies.confirmed(p, &copy, since);
            return Ok(Some(copy));
        }
        Ok(None)
    }

    /// The partition's version now: its generation and its change log's last entry, read
    /// together. Both, because a write a failover lost can leave a copy with the generation
    /// a later write reaches again (the entry is then another).
    fn version_now(&self, c: &mut Connection, p: &Partition) -> Result<Version, Fail> {
        let mut now = self.versions_now(c, &[p])?;
        now.pop()
            .ok_or_else(|| Fail::Muisti(Error::backend("redis", "empty version reply")))
    }

    /// [`Self::version_now`] of several partitions (of one tenant) in one round trip.
    fn versions_now(&self, c: &mut Connection, ps: &[&Partition]) -> Result<Vec<Version>, Fail> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for p in ps {
            pipe.get(self.generation_key(p))
                .cmd("XREVRANGE")
                .arg(self.changes_key(p))
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1);
        }
        let replies: Vec<redis::Value> = pipe.query(c)?;
        replies
            .chunks(2)
            .map(|pair| {
                let [generation, last] = pair else {
                    return Err(Fail::Muisti(Error::backend("redis", "short version reply")));
                };
                let generation: Option<i64> =
                    redis::from_redis_value_ref(generation).map_err(|e| Fail::Redis(e.into()))?;
                let last: Vec<(String, Vec<String>)> =
                    redis::from_redis_value_ref(last).map_err(|e| Fail::Redis(e.into()))?;
                let entry = last
                    .into_iter()
                    .next()
                    .map_or_else(|| "0-0".to_owned(), |(id, _)| id);
                Ok((generation.unwrap_or(0), entry))
            })
            .collect()
    }

    /// Brings `copy` of `p` up to date from the change log: the records its entries name are
    /// read again (or removed, when gone). `false` when the log does not reach back to the
    /// copy, holds a flush, or is too far ahead: the copy is then reloaded.
    fn catch_up(
        &self,
        c: &mut Connection,
        p: &Partition,
        copy: &RwLock<Copy<Version>>,
    ) -> Result<bool, Fail> {
        // No change of this handle commits meanwhile: after this, its changes follow the
        // copy's version and are applied in place.
        let _order = self.commit_order();
        let (have, after) = copy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .version()
            .clone();
        let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
            .arg(self.changes_key(p))
            .arg(format!("({after}"))
            .arg("+")
            .arg("COUNT")
            .arg(CATCH_UP_MAX + 1)
            .query(c)?;
        if entries.is_empty() || entries.len() > CATCH_UP_MAX {
            return Ok(false);
        }
        let field = |fields: &[String], name: &str| -> Option<String> {
            fields
                .chunks(2)
                .find(|kv| kv.first().map(String::as_str) == Some(name))
                .and_then(|kv| kv.get(1).cloned())
        };
        let mut ids: Vec<MemoryId> = Vec::new();
        let mut last = (have, after);
        for (expected, (entry, fields)) in (have + 1..).zip(&entries) {
            let g: Option<i64> = field(fields, "g").and_then(|g| g.parse().ok());
            // A gap (entries trimmed away) or a flush: reload.
            if g != Some(expected) {
                return Ok(false);
            }
            let Some(changed) = field(fields, "ids") else {
                return Ok(false);
            };
            for id in changed.split(',').filter(|s| !s.is_empty()) {
                match MemoryId::parse(id) {
                    Ok(id) => ids.push(id),
                    Err(_) => return Ok(false),
                }
            }
            last = (expected, entry.clone());
        }
        ids.sort_unstable();
        ids.dedup();
        // The records as they are now (possibly newer than the last entry: a later entry
        // then reads them again), with their vectors, in one round trip each.
        let found = self.locate(c, &p.tenant, &ids)?;
        let now = self.now();
        let mut live = Vec::new();
        for found in found {
            let m = match found {
                Some((rkey, Some(json))) => Some(self.decode(&rkey, &json)?),
                _ => None,
            };
            live.push(m.filter(|m| m.partition == *p && !m.is_expired(now)));
        }
        let present: Vec<Memory> = live.iter().flatten().cloned().collect();
        let mut vectors = self.vectors_of(c, &p.tenant, &present)?.into_iter();
        let mut copy = copy.write().unwrap_or_else(|e| e.into_inner());
        if copy.version().0 != have {
            // Another thread moved it meanwhile: current if it got at least as far.
            return Ok(copy.version().0 >= last.0);
        }
        for (id, m) in ids.iter().zip(live) {
            match m {
                Some(m) => {
                    let v = vectors.next().flatten();
                    copy.upsert(m, v.as_deref());
                }
                None => copy.remove(*id),
            }
        }
        tracing::debug!(partition = %p, entries = entries.len(), records = ids.len(), "redis copy caught up");
        copy.caught_up(last);
        self.copies.catch_ups.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// The vectors of `records` (none for a record without a model or a vector).
    fn vectors_of(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        records: &[Memory],
    ) -> Result<Vec<Option<Vec<f32>>>, Fail> {
        let mut out = Vec::with_capacity(records.len());
        for chunk in records.chunks(CHUNK) {
            let keys: Vec<String> = chunk
                .iter()
                .map(|m| self.vector_key(tenant, m.id))
                .collect();
            let blobs: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query(c)?;
            for ((m, key), blob) in chunk.iter().zip(&keys).zip(blobs) {
                let vector = match (blob, &m.embedding_model) {
                    (Some(blob), Some(_)) => Some(vector_from_bytes(&blob).ok_or_else(|| {
                        Fail::Muisti(Error::Corrupted {
                            location: format!("redis key {key}"),
                            reason: "not a vector".into(),
                        })
                    })?),
                    _ => None,
                };
                out.push(vector);
            }
        }
        Ok(out)
    }

    fn decode(&self, location: &str, json: &str) -> Result<Memory, Fail> {
        serde_json::from_str(json).map_err(|e| {
            Fail::Muisti(Error::Corrupted {
                location: format!("redis key {location} at {}", self.target),
                reason: e.to_string(),
            })
        })
    }

    /// Resolves a locator to the record key and the live record there.
    fn find(&self, c: &mut Connection, at: &Locator) -> Result<Option<(String, Memory)>, Fail> {
        let now = self.now();
        let rkey = match at {
            Locator::Key { partition, key } => self.record_key(partition, key.as_str()),
            Locator::Id { tenant, id } => {
                // Pointer and record in one round trip.
                let found: Option<(String, Option<String>)> = self
                    .by_id
                    .key(self.id_key(tenant, *id))
                    .arg(self.records_of(tenant))
                    .invoke(c)?;
                let Some((ptr, json)) = found else {
                    return Ok(None);
                };
                let rkey = self.pointed(tenant, *id, &ptr)?;
                return self.live(rkey, json, at, now);
            }
        };
        let json: Option<String> = c.get(&rkey)?;
        self.live(rkey, json, at, now)
    }

    fn live(
        &self,
        rkey: String,
        json: Option<String>,
        at: &Locator,
        now: Timestamp,
    ) -> Result<Option<(String, Memory)>, Fail> {
        let Some(json) = json else { return Ok(None) };
        let m = self.decode(&rkey, &json)?;
        if m.is_expired(now) || !at.addresses(&m) {
            return Ok(None);
        }
        Ok(Some((rkey, m)))
    }

    /// Reads index members after `after` and returns the live records in id order, dropping
    /// stale index entries it meets. Stops once `want` records passed `filter`.
    fn scan_index(
        &self,
        c: &mut Connection,
        p: &Partition,
        filter: &Filter,
        mut after: Option<MemoryId>,
        want: usize,
    ) -> Result<Vec<Memory>, Fail> {
        let index = self.index_key(p);
        let now = self.now();
        let mut out = Vec::new();
        loop {
            let min = match after {
                Some(id) => format!("({id}~"),
                None => "-".to_owned(),
            };
            let members: Vec<String> = redis::cmd("ZRANGEBYLEX")
                .arg(&index)
                .arg(&min)
                .arg("+")
                .arg("LIMIT")
                .arg(0)
                .arg(CHUNK)
                .query(c)?;
            if members.is_empty() {
                return Ok(out);
            }
            let done = members.len() < CHUNK;
            let keys: Vec<String> = members
                .iter()
                .map(|m| self.record_key(p, m.get(27..).unwrap_or("")))
                .collect();
            let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(c)?;
            let mut stale = Vec::new();
            for ((member, rkey), json) in members.iter().zip(&keys).zip(values) {
                let live = match json {
                    Some(j) => {
                        let m = self.decode(rkey, &j)?;
                        let same = member.get(..26) == Some(m.id.to_string().as_str());
                        (same && !m.is_expired(now)).then_some(m)
                    }
                    None => None,
                };
                match live {
                    Some(m) => {
                        if filter.matches(&m) {
                            out.push(m);
                        }
                    }
                    None => stale.push(member.clone()),
                }
            }
            if !stale.is_empty() {
                // Safe against races: a member names one id, and ids are never reused.
                redis::cmd("ZREM").arg(&index).arg(&stale).exec(c)?;
            }
            after = members
                .last()
                .and_then(|m| m.get(..26))
                .and_then(|s| MemoryId::parse(s).ok());
            if done || out.len() >= want || after.is_none() {
                return Ok(out);
            }
        }
    }

    /// Every tenant that has written (some may have no records left): the tenants set on a
    /// single server; in a cluster, the tenants' namespace sets found on each master.
    fn tenant_names(&self) -> Result<Vec<Tenant>> {
        let mut names: Vec<String> = Vec::new();
        if !self.is_cluster() {
            names = self.with_conn(Route::Node(""), |c| Ok(c.smembers(self.tenants_key())?))?;
        } else {
            let start = format!("{}t/{{", self.prefix);
            let pattern = format!("{}*}}", glob_escape(&start));
            for node in self.nodes() {
                let keys: Vec<String> = self.with_conn(Route::Node(&node), |c| {
                    Ok(redis::cmd("SCAN")
                        .cursor_arg(0)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000)
                        .arg("TYPE")
                        .arg("set")
                        .clone()
                        .iter::<String>(c)?
                        .collect::<Result<Vec<_>, _>>()?)
                })?;
                names.extend(keys.iter().filter_map(|k| {
                    k.strip_prefix(&start)
                        .and_then(|t| t.strip_suffix('}'))
                        .map(str::to_owned)
                }));
            }
        }
        names.sort_unstable();
        names.dedup();
        names.into_iter().map(Tenant::new).collect()
    }

    fn namespaces_of(&self, c: &mut Connection, tenant: &Tenant) -> Result<Vec<Namespace>, Fail> {
        let names: Vec<String> = c.smembers(self.tenant_key(tenant))?;
        let mut out = Vec::new();
        for n in names {
            let ns = Namespace::new(n).map_err(Fail::Muisti)?;
            out.push(ns);
        }
        out.sort();
        Ok(out)
    }
}

/// `s` with the characters `SCAN`'s `MATCH` reads as a pattern escaped.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if matches!(ch, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// A new connection to `client`'s server, with the store's timeouts.
fn connect(client: &redis::Client) -> Result<Connection, RedisError> {
    let c = client.get_connection_with_timeout(Duration::from_secs(3))?;
    c.set_read_timeout(Some(Duration::from_secs(10)))?;
    c.set_write_timeout(Some(Duration::from_secs(10)))?;
    Ok(c)
}

/// Runs `f` on `conn`, and whether the connection can be used again: not after Redis failed
/// (it may be broken), and after our own error only once no `WATCH` is left on it.
fn run<R>(
    conn: &mut Connection,
    f: &mut impl FnMut(&mut Connection) -> Result<R, Fail>,
) -> (Result<R, Fail>, bool) {
    match f(conn) {
        Ok(out) => (Ok(out), true),
        Err(Fail::Redis(e)) => (Err(Fail::Redis(e)), false),
        Err(Fail::Unsent(e)) => (Err(Fail::Unsent(e)), false),
        Err(Fail::Muisti(e)) => {
            let clean = redis::cmd("UNWATCH").exec(conn).is_ok();
            (Err(Fail::Muisti(e)), clean)
        }
    }
}

/// When a write is acknowledged.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ack {
    /// Once the replicas it waits for have it (in a cluster; on one server, at once).
    Replicated,
    /// At once: access counts, which every recall writes (a failover may lose a few).
    Local,
}

/// A failure inside a connection: Redis's, or ours.
enum Fail {
    Redis(RedisError),
    /// No connection to the node: nothing was sent.
    Unsent(RedisError),
    Muisti(Error),
}

impl From<RedisError> for Fail {
    fn from(e: RedisError) -> Self {
        Fail::Redis(e)
    }
}

/// A Redis error message with the URL's password removed, should it quote the URL.
fn scrub(e: &RedisError, url: &str) -> String {
    let msg = e.to_string();
    match url.split_once("://").and_then(|(_, a)| a.split_once('@')) {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((_, pw)) if !pw.is_empty() => msg.replace(pw, "***"),
            _ => msg,
        },
        None => msg,
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_url;

    #[test]
    fn a_url_without_a_host_reads_redis_url_or_defaults_to_localhost() {
        assert_eq!(resolve_url("redis://", None), "redis://127.0.0.1:6379");
        assert_eq!(resolve_url("redis://", Some(" ")), "redis://127.0.0.1:6379");
        assert_eq!(
            resolve_url("redis:///2?prefix=p:", None),
            "redis://127.0.0.1:6379/2?prefix=p:"
        );
        let env = Some("rediss://:secret@10.0.0.4:6380/5?prefix=a:&cache_mb=8");
        assert_eq!(
            resolve_url("redis://", env),
            "rediss://:secret@10.0.0.4:6380/5?prefix=a:&cache_mb=8"
        );
        // The URL's database and parameters win over the environment's.
        assert_eq!(
            resolve_url("redis:///1?prefix=b:", env),
            "rediss://:secret@10.0.0.4:6380/1?cache_mb=8&prefix=b:"
        );
        assert_eq!(resolve_url("redis:///3", Some("redis://h")), "redis://h/3");
        // TLS asked for is kept; what is not one server's URL does not stand in.
        assert_eq!(
            resolve_url("rediss:///2", Some("redis://h:1")),
            "rediss://h:1/2"
        );
        assert_eq!(resolve_url("rediss://", None), "rediss://127.0.0.1:6379");
        for odd in [
            "localhost:6379",
            "redis+cluster://a:1,b:2",
            "unix:///tmp/r.sock",
            "redis://",
        ] {
            assert_eq!(
                resolve_url("redis:///2", Some(odd)),
                "redis://127.0.0.1:6379/2",
                "{odd}"
            );
        }
        // A URL with a host, or another scheme, is left alone.
        for url in [
            "redis://h:1/0",
            "redis+cluster://a:1,b:2",
            "sqlite:///x.db",
            "redis",
        ] {
            assert_eq!(resolve_url(url, env), url);
        }
    }
}
