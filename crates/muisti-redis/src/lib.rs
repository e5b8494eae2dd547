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
//!
//! Writes are `WATCH`/`MULTI` transactions, so concurrent writers in any number of processes
//! lose nothing. Expired records vanish natively; their index entries are dropped when a
//! listing meets them and by `purge_expired`. Only `SCAN`-family commands iterate (never
//! `KEYS`). No TTL means no expiry: there is no default TTL.
//!
//! Searches (full text, vectors) and recall's reads answer from an in-process copy of the
//! partition, checked against its generation before each use (one `GET`): see `copy.rs`.
//! `staleness_ms` (default 1) lets a copy confirmed that recently answer without asking (the
//! reads of one recall cost one round trip); 0 asks on every read.
//! `cache_records` bounds the records the copies of one handle hold (default 1,000,000;
//! least recently used partitions dropped first; 0 keeps none, so every search reads the
//! partition).
//!
//! URL: `redis://[:password@]host[:port][/db][?prefix=muisti:&cache_records=N&staleness_ms=N]`, or
//! `rediss://` for TLS.

mod copy;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Once, RwLock},
    time::Duration,
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, RankFields, Result, Scored, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, VectorChange, VectorQuery,
    WriteStatus, Written, redact_url,
    text::{vector_from_bytes, vector_to_bytes},
};
use muisti_store::{StoreRegistry, StoreUrl};
use redis::{Commands, Connection, ConnectionLike, RedisError};

use crate::copy::{Copies, Copy};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "muisti:";

/// The Redis store.
pub struct RedisStore {
    client: redis::Client,
    /// The URL with the password removed, for messages.
    target: String,
    prefix: String,
    limits: Limits,
    pool: Mutex<Vec<Connection>>,
    by_id: redis::Script,
    clock: Arc<dyn Clock>,
    copies: Copies,
    /// How long a confirmed copy answers without asking Redis again.
    staleness: Duration,
}

const IDLE_CONNECTIONS: usize = 8;
const CHUNK: usize = 500;
/// The default bound of the records a handle's copies hold.
pub const DEFAULT_CACHE_RECORDS: usize = 1_000_000;
/// The default `staleness_ms`: how long a confirmed copy answers without asking again.
pub const DEFAULT_STALENESS_MS: usize = 1;
/// Loads of a copy tried while writers keep changing the partition; then the last one
/// answers the search without being kept.
const LOAD_ATTEMPTS: usize = 3;

static TLS_INIT: Once = Once::new();

/// Registers the `redis` and `rediss` (TLS) schemes: `redis://[user:password@]host:port/db`
/// with the parameters [`RedisStore::open`] reads.
pub fn register(registry: &mut StoreRegistry) {
    for scheme in ["redis", "rediss"] {
        registry.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(RedisStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
}

impl RedisStore {
    /// Connects to `url` (see the crate docs) and checks the server answers.
    ///
    /// The query parameters `prefix`, `cache_records` and `max_value_bytes` are muisti's;
    /// any others are passed on to the Redis client.
    pub fn open(url: &str) -> Result<Self> {
        let target = redact_url(url);
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut prefix = DEFAULT_PREFIX.to_owned();
        let parsed = StoreUrl::parse(url)?;
        let limits = parsed.limits()?;
        let cache_records = parsed
            .whole("cache_records", 0..=usize::MAX)?
            .unwrap_or(DEFAULT_CACHE_RECORDS);
        let staleness_ms = parsed
            .whole("staleness_ms", 0..=60_000)?
            .unwrap_or(DEFAULT_STALENESS_MS);
        let mut passed = Vec::new();
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            match kv.split_once('=') {
                Some(("prefix", v)) => prefix = v.to_owned(),
                Some(("max_value_bytes" | "cache_records" | "staleness_ms", _)) => {}
                _ => passed.push(kv),
            }
        }
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
        let client = redis::Client::open(client_url.as_str()).map_err(|e| Error::InvalidInput {
            field: "store url",
            reason: format!("{target}: {}", scrub(&e, url)),
        })?;
        let store = Self {
            client,
            target,
            prefix,
            limits,
            pool: Mutex::new(Vec::new()),
            by_id: redis::Script::new(
                "local ptr = redis.call('GET', KEYS[1]) \
                 if not ptr then return false end \
                 return {ptr, redis.call('GET', ARGV[1] .. ptr)}",
            ),
            clock: Arc::new(SystemClock),
            copies: Copies::new(cache_records),
            staleness: Duration::from_millis(staleness_ms as u64),
        };
        // Fail now, with a clear message, rather than on first use.
        store.with_conn(|c| {
            redis::cmd("PING").query::<String>(c)?;
            Ok(())
        })?;
        Ok(store)
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

    /// Runs `f` with a pooled connection; a connection that failed is not reused.
    fn with_conn<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R, Fail>) -> Result<R> {
        let pooled = self.pool.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) if c.is_open() => c,
            _ => {
                let c = self
                    .client
                    .get_connection_with_timeout(Duration::from_secs(3))
                    .map_err(|e| self.unavailable(&e))?;
                c.set_read_timeout(Some(Duration::from_secs(10)))
                    .map_err(|e| self.unavailable(&e))?;
                c.set_write_timeout(Some(Duration::from_secs(10)))
                    .map_err(|e| self.unavailable(&e))?;
                c
            }
        };
        match f(&mut conn) {
            Ok(out) => {
                let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
                if pool.len() < IDLE_CONNECTIONS {
                    pool.push(conn);
                }
                Ok(out)
            }
            Err(Fail::Redis(e)) => Err(self.map_err(e)),
            Err(Fail::Muisti(e)) => {
                // Leave no WATCH behind on a connection we give back.
                if redis::cmd("UNWATCH").exec(&mut conn).is_ok() {
                    self.pool
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(conn);
                }
                Err(e)
            }
        }
    }

    fn record_key(&self, p: &Partition, key: &str) -> String {
        format!("{}r/{}/{}/{}", self.prefix, p.tenant, p.namespace, key)
    }

    fn id_key(&self, tenant: &Tenant, id: MemoryId) -> String {
        format!("{}i/{}/{}", self.prefix, tenant, id)
    }

    fn vector_key(&self, tenant: &Tenant, id: MemoryId) -> String {
        format!("{}v/{}/{}", self.prefix, tenant, id)
    }

    fn index_key(&self, p: &Partition) -> String {
        format!("{}n/{}/{}", self.prefix, p.tenant, p.namespace)
    }

    fn tenant_key(&self, tenant: &Tenant) -> String {
        format!("{}t/{}", self.prefix, tenant)
    }

    fn tenants_key(&self) -> String {
        format!("{}tenants", self.prefix)
    }

    fn generation_key(&self, p: &Partition) -> String {
        format!("{}g/{}/{}", self.prefix, p.tenant, p.namespace)
    }

    /// The copy of `p` at its current generation: the one held, or a new one read from
    /// Redis (kept when no write committed while it was read).
    fn copy_of(&self, c: &mut Connection, p: &Partition) -> Result<Arc<RwLock<Copy>>, Fail> {
        if let Some(copy) = self.copies.recent(p, self.staleness) {
            return Ok(copy);
        }
        let key = self.generation_key(p);
        let mut last = None;
        for _ in 0..LOAD_ATTEMPTS {
            let before: i64 = c.get::<_, Option<i64>>(&key)?.unwrap_or(0);
            if let Some(copy) = self.copies.at(p, before) {
                return Ok(copy);
            }
            let records = self.scan_index(c, p, &Filter::default(), None, usize::MAX)?;
            let vectors = self.vectors_of(c, &p.tenant, &records)?;
            let copy = Copy::new(before, records.into_iter().zip(vectors));
            let after: i64 = c.get::<_, Option<i64>>(&key)?.unwrap_or(0);
            if before == after {
                return Ok(self.copies.keep(p, copy));
            }
            last = Some(copy);
        }
        // Writers kept committing: answer from the last read (as fresh as a scan), unkept.
        Ok(Arc::new(RwLock::new(
            last.unwrap_or_else(|| Copy::new(-1, std::iter::empty())),
        )))
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
                    .arg(format!("{}r/{}/", self.prefix, tenant))
                    .invoke(c)?;
                let Some((ptr, json)) = found else {
                    return Ok(None);
                };
                let Some((ns, key)) = ptr.split_once('/') else {
                    return Err(Fail::Muisti(Error::Corrupted {
                        location: self.id_key(tenant, *id),
                        reason: "not a namespace/key pointer".into(),
                    }));
                };
                let ns = Namespace::new(ns).map_err(Fail::Muisti)?;
                let rkey = self.record_key(&Partition::new(tenant.clone(), ns), key);
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

    /// Validated writes as one WATCH/MULTI transaction, retried until it applies: one round
    /// trip to read what the keys hold, one to write everything.
    fn put_batch(&self, c: &mut Connection, puts: &[Put]) -> Result<Vec<Written>, Fail> {
        let now = self.now();
        let keyed: Vec<Option<String>> = puts
            .iter()
            .map(|p| {
                p.key
                    .as_ref()
                    .map(|k| self.record_key(&p.partition, k.as_str()))
            })
            .collect();
        let mut watched: Vec<&String> = keyed.iter().flatten().collect();
        watched.sort_unstable();
        watched.dedup();
        loop {
            let mut current: HashMap<String, Option<Memory>> = HashMap::new();
            if !watched.is_empty() {
                redis::cmd("WATCH").arg(&watched).exec(c)?;
                let values: Vec<Option<String>> = redis::cmd("MGET").arg(&watched).query(c)?;
                for (k, v) in watched.iter().zip(values) {
                    let m = match v {
                        Some(json) => Some(self.decode(k, &json)?).filter(|m| !m.is_expired(now)),
                        None => None,
                    };
                    current.insert((*k).clone(), m);
                }
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            let mut out = Vec::with_capacity(puts.len());
            let mut vectors = Vec::with_capacity(puts.len());
            for (put, rkey) in puts.iter().zip(&keyed) {
                let existing = rkey
                    .as_ref()
                    .and_then(|k| current.get(k).cloned().flatten());
                let mut put = put.clone();
                let vector = put.embedding.take();
                let memory = put.apply(existing.as_ref(), now);
                let status = if existing.is_some() {
                    WriteStatus::Updated
                } else {
                    WriteStatus::Created
                };
                let rkey = rkey
                    .clone()
                    .unwrap_or_else(|| self.record_key(&memory.partition, memory.key.as_str()));
                self.queue_write(&mut pipe, &rkey, &memory, vector.as_deref())?;
                current.insert(rkey, Some(memory.clone()));
                out.push(Written { memory, status });
                vectors.push(vector);
            }
            let mut partitions: Vec<&Partition> = out.iter().map(|w| &w.memory.partition).collect();
            partitions.sort_unstable();
            partitions.dedup();
            for p in &partitions {
                pipe.incr(self.generation_key(p), 1);
            }
            let applied: Option<Vec<i64>> = pipe.query(c)?;
            if let Some(generations) = applied {
                for (p, g) in partitions.iter().zip(generations) {
                    self.copies.apply(p, g, |copy| {
                        for (w, v) in out.iter().zip(&vectors) {
                            if w.memory.partition == **p {
                                copy.upsert(w.memory.clone(), v.as_deref());
                            }
                        }
                    });
                }
                return Ok(out);
            }
        }
    }

    /// Adds the commands that store `memory` at `rkey` to a transaction.
    fn queue_write(
        &self,
        pipe: &mut redis::Pipeline,
        rkey: &str,
        memory: &Memory,
        vector: Option<&[f32]>,
    ) -> Result<(), Fail> {
        let json =
            serde_json::to_string(memory).map_err(|e| Fail::Muisti(Error::backend("redis", e)))?;
        let p = &memory.partition;
        let mut set = redis::cmd("SET");
        set.arg(rkey).arg(json);
        let mut ptr = redis::cmd("SET");
        ptr.arg(self.id_key(&p.tenant, memory.id))
            .arg(format!("{}/{}", p.namespace, memory.key));
        if let Some(exp) = memory.expires_at {
            set.arg("PXAT").arg(exp.as_millis());
            ptr.arg("PXAT").arg(exp.as_millis());
        }
        let vkey = self.vector_key(&p.tenant, memory.id);
        match vector {
            Some(v) => {
                let mut vset = redis::cmd("SET");
                vset.arg(&vkey).arg(vector_to_bytes(v));
                if let Some(exp) = memory.expires_at {
                    vset.arg("PXAT").arg(exp.as_millis());
                }
                pipe.add_command(vset).ignore();
            }
            None => {
                pipe.del(&vkey).ignore();
            }
        }
        pipe.add_command(set).ignore();
        pipe.add_command(ptr).ignore();
        pipe.cmd("ZADD")
            .arg(self.index_key(p))
            .arg(0)
            .arg(format!("{}/{}", memory.id, memory.key))
            .ignore();
        pipe.cmd("SADD")
            .arg(self.tenant_key(&p.tenant))
            .arg(p.namespace.as_str())
            .ignore();
        pipe.cmd("SADD")
            .arg(self.tenants_key())
            .arg(p.tenant.as_str())
            .ignore();
        Ok(())
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

    /// Finds the live record a locator addresses and WATCHes its key, re-reading it under
    /// the watch (so a transaction queued next applies only if it did not change since).
    /// `None` when there is no such record (nothing left watched).
    fn watch_record(
        &self,
        c: &mut Connection,
        at: &Locator,
    ) -> Result<Option<(String, Memory)>, Fail> {
        loop {
            let Some((rkey, _)) = self.find(c, at)? else {
                return Ok(None);
            };
            redis::cmd("WATCH").arg(&rkey).exec(c)?;
            let json: Option<String> = c.get(&rkey)?;
            let Some(json) = json else {
                // Gone between the lookup and the watch: look again.
                redis::cmd("UNWATCH").exec(c)?;
                continue;
            };
            let m = self.decode(&rkey, &json)?;
            if !at.addresses(&m) || m.is_expired(self.now()) {
                redis::cmd("UNWATCH").exec(c)?;
                return Ok(None);
            }
            return Ok(Some((rkey, m)));
        }
    }

    fn delete_record(&self, c: &mut Connection, at: &Locator) -> Result<bool, Fail> {
        loop {
            let Some((rkey, m)) = self.watch_record(c, at)? else {
                return Ok(false);
            };
            let mut pipe = redis::pipe();
            pipe.atomic()
                .del(&rkey)
                .ignore()
                .del(self.id_key(&m.partition.tenant, m.id))
                .ignore()
                .del(self.vector_key(&m.partition.tenant, m.id))
                .ignore()
                .zrem(self.index_key(&m.partition), format!("{}/{}", m.id, m.key))
                .ignore()
                .incr(self.generation_key(&m.partition), 1);
            let applied: Option<(i64,)> = pipe.query(c)?;
            if let Some((g,)) = applied {
                self.copies.apply(&m.partition, g, |copy| copy.remove(m.id));
                return Ok(true);
            }
        }
    }

    /// Changes the live record with `id` in place (its expiry kept) under WATCH/MULTI,
    /// retried on conflict; `also` adds commands to the same transaction; `copied` applies
    /// the change to the partition's copy. `false` if there is no such record.
    fn update_by_id(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        id: MemoryId,
        change: impl Fn(&mut Memory),
        also: impl Fn(&mut redis::Pipeline, &Memory),
        copied: impl Fn(&mut Copy, &Memory),
    ) -> Result<bool, Fail> {
        let locator = Locator::Id {
            tenant: tenant.clone(),
            id,
        };
        loop {
            let Some((rkey, mut m)) = self.watch_record(c, &locator)? else {
                return Ok(false);
            };
            change(&mut m);
            let json =
                serde_json::to_string(&m).map_err(|e| Fail::Muisti(Error::backend("redis", e)))?;
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(&rkey)
                .arg(json)
                .arg("KEEPTTL")
                .ignore();
            also(&mut pipe, &m);
            pipe.incr(self.generation_key(&m.partition), 1);
            let applied: Option<(i64,)> = pipe.query(c)?;
            if let Some((g,)) = applied {
                self.copies.apply(&m.partition, g, |copy| copied(copy, &m));
                return Ok(true);
            }
        }
    }

    /// An update under WATCH/MULTI, retried until it applies on the version it read.
    fn update_record(&self, c: &mut Connection, req: &UpdateRequest) -> Result<Memory, Fail> {
        loop {
            let now = self.now();
            let Some((rkey, m)) = self.watch_record(c, &req.at)? else {
                // Nothing there: the one rule answers (not found).
                return req
                    .apply(None, now, &self.limits)
                    .map(|(m, _)| m)
                    .map_err(Fail::Muisti);
            };
            let (memory, change) = match req.apply(Some(&m), now, &self.limits) {
                Ok(done) => done,
                Err(e) => {
                    redis::cmd("UNWATCH").exec(c)?;
                    return Err(Fail::Muisti(e));
                }
            };
            let vector = match change {
                VectorChange::Set(v) => Some(v),
                VectorChange::Drop => None,
                VectorChange::Keep => {
                    let vkey = self.vector_key(&m.partition.tenant, m.id);
                    let bytes: Option<Vec<u8>> = c.get(&vkey)?;
                    match bytes {
                        Some(b) => Some(vector_from_bytes(&b).ok_or_else(|| {
                            Fail::Muisti(Error::Corrupted {
                                location: vkey,
                                reason: "not a vector".into(),
                            })
                        })?),
                        None => None,
                    }
                }
            };
            let mut pipe = redis::pipe();
            pipe.atomic();
            self.queue_write(&mut pipe, &rkey, &memory, vector.as_deref())?;
            pipe.incr(self.generation_key(&memory.partition), 1);
            let applied: Option<(i64,)> = pipe.query(c)?;
            if let Some((g,)) = applied {
                self.copies.apply(&memory.partition, g, |copy| {
                    copy.upsert(memory.clone(), vector.as_deref());
                });
                return Ok(memory);
            }
        }
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

/// A failure inside a connection: Redis's, or ours.
enum Fail {
    Redis(RedisError),
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

impl Store for RedisStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "redis",
            location: format!("{} (prefix {})", self.target, self.prefix),
            capabilities: Capabilities {
                native_text: false,
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
        self.with_conn(|c| {
            let mut w = self.put_batch(c, std::slice::from_ref(&put))?;
            w.pop()
                .ok_or_else(|| Fail::Muisti(Error::backend("redis", "empty transaction result")))
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        self.with_conn(|c| {
            let mut out = Vec::with_capacity(puts.len());
            for chunk in puts.chunks(CHUNK) {
                out.extend(self.put_batch(c, chunk)?);
            }
            Ok(out)
        })
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        self.with_conn(|c| self.update_record(c, req))
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        self.with_conn(|c| Ok(self.find(c, at)?.map(|(_, m)| m)))
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
        self.with_conn(|c| {
            let items =
                self.scan_index(c, &query.partition, &query.filter, query.after, size + 1)?;
            Ok(Page::from_sorted(items, size))
        })
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        self.with_conn(|c| {
            Ok(self
                .scan_index(c, partition, filter, None, usize::MAX)?
                .len() as u64)
        })
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        self.with_conn(|c| self.delete_record(c, at))
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        self.with_conn(|c| {
            let live = self.scan_index(c, partition, &Filter::default(), None, usize::MAX)?;
            let index = self.index_key(partition);
            let mut n = 0;
            for chunk in live.chunks(CHUNK) {
                let mut pipe = redis::pipe();
                pipe.atomic();
                for m in chunk {
                    pipe.del(self.record_key(partition, m.key.as_str()))
                        .ignore();
                    pipe.del(self.id_key(&partition.tenant, m.id)).ignore();
                    pipe.del(self.vector_key(&partition.tenant, m.id)).ignore();
                    pipe.zrem(&index, format!("{}/{}", m.id, m.key)).ignore();
                }
                pipe.incr(self.generation_key(partition), 1).ignore();
                pipe.exec(c)?;
                n += chunk.len() as u64;
            }
            // Remove the index and the namespace entry only if no writer added to it since.
            redis::cmd("WATCH").arg(&index).exec(c)?;
            let left: u64 = c.zcard(&index)?;
            if left == 0 {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .del(&index)
                    .ignore()
                    .srem(
                        self.tenant_key(&partition.tenant),
                        partition.namespace.as_str(),
                    )
                    .ignore();
                let _: Option<()> = pipe.query(c)?;
            } else {
                redis::cmd("UNWATCH").exec(c)?;
            }
            self.copies.drop_copy(partition);
            Ok(n)
        })
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.with_conn(|c| {
            let mut out = Vec::new();
            for ns in self.namespaces_of(c, tenant)? {
                let p = Partition::new(tenant.clone(), ns);
                if !self
                    .scan_index(c, &p, &Filter::default(), None, 1)?
                    .is_empty()
                {
                    out.push(p.namespace);
                }
            }
            Ok(out)
        })
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        self.with_conn(|c| {
            for id in ids {
                self.update_by_id(
                    c,
                    tenant,
                    *id,
                    |m| {
                        m.access_count += 1;
                        m.last_accessed_at = Some(at);
                    },
                    |_, _| {},
                    Copy::touched,
                )?;
            }
            Ok(())
        })
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.with_conn(|c| {
            let live = self.scan_index(c, partition, filter, None, usize::MAX)?;
            let vectors = self.vectors_of(c, &partition.tenant, &live)?;
            Ok(live
                .into_iter()
                .zip(vectors)
                .filter_map(|(m, v)| {
                    Some(StoredVector {
                        id: m.id,
                        model: m.embedding_model?,
                        vector: v?,
                    })
                })
                .collect())
        })
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let now = self.now();
        self.with_conn(|c| {
            let copy = self.copy_of(c, &query.partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.text_search(&query.query, &query.filter, query.limit, now))
        })
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        let now = self.now();
        self.with_conn(|c| {
            let copy = self.copy_of(c, &query.partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.vector_search(&query.vector, &query.filter, query.limit, now))
        })
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        let now = self.now();
        self.with_conn(|c| {
            let copy = self.copy_of(c, partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.rank_fields(ids, now))
        })
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let now = self.now();
        self.with_conn(|c| {
            // Copies of the tenant's partitions answer if their generations are current
            // (one MGET for all); other ids are read one by one.
            let held = self.copies.held_for(tenant);
            let mut fresh = Vec::new();
            if !held.is_empty() {
                let keys: Vec<String> = held
                    .iter()
                    .map(|(p, _, _)| self.generation_key(p))
                    .collect();
                let current: Vec<Option<i64>> = redis::cmd("MGET").arg(&keys).query(c)?;
                for ((_, copy, g), now_g) in held.into_iter().zip(current) {
                    if now_g.unwrap_or(0) == g {
                        fresh.push(copy);
                    }
                }
            }
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let cached = fresh
                    .iter()
                    .find_map(|copy| copy.read().unwrap_or_else(|e| e.into_inner()).get(id, now));
                let found = match cached {
                    Some(m) => Some(m),
                    None => self
                        .find(
                            c,
                            &Locator::Id {
                                tenant: tenant.clone(),
                                id: *id,
                            },
                        )?
                        .map(|(_, m)| m),
                };
                out.extend(found);
            }
            Ok(out)
        })
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        self.with_conn(|c| {
            let names: Vec<String> = c.smembers(self.tenants_key())?;
            let mut out = Vec::new();
            for n in names {
                let tenant = Tenant::new(n).map_err(Fail::Muisti)?;
                let mut live = false;
                for ns in self.namespaces_of(c, &tenant)? {
                    let p = Partition::new(tenant.clone(), ns);
                    if !self
                        .scan_index(c, &p, &Filter::default(), None, 1)?
                        .is_empty()
                    {
                        live = true;
                        break;
                    }
                }
                if live {
                    out.push(tenant);
                }
            }
            out.sort();
            Ok(out)
        })
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        self.with_conn(|c| {
            let mut n = 0;
            for v in vectors {
                let changed = self.update_by_id(
                    c,
                    tenant,
                    v.id,
                    |m| m.embedding_model = Some(v.model.clone()),
                    |pipe, m| {
                        let mut vset = redis::cmd("SET");
                        vset.arg(self.vector_key(tenant, v.id))
                            .arg(vector_to_bytes(&v.vector));
                        if let Some(exp) = m.expires_at {
                            vset.arg("PXAT").arg(exp.as_millis());
                        }
                        pipe.add_command(vset).ignore();
                    },
                    |copy, m| copy.upsert(m.clone(), Some(&v.vector)),
                )?;
                n += u64::from(changed);
            }
            Ok(n)
        })
    }

    fn purge_expired(&self) -> Result<u64> {
        // Records expire natively; this drops the index entries they leave behind.
        self.with_conn(|c| {
            let tenants: Vec<String> = c.smembers(self.tenants_key())?;
            for t in tenants {
                let tenant = Tenant::new(t).map_err(Fail::Muisti)?;
                for ns in self.namespaces_of(c, &tenant)? {
                    let p = Partition::new(tenant.clone(), ns);
                    self.scan_index(c, &p, &Filter::default(), None, usize::MAX)?;
                }
            }
            Ok(0)
        })
    }

    fn health_check(&self) -> Health {
        match self.with_conn(|c| Ok(redis::cmd("PING").query::<String>(c)?)) {
            Ok(pong) => Health {
                ok: true,
                detail: format!("{} answered {pong}", self.target),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }
}
