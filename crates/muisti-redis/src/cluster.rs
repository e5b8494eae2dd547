//! Redis Cluster: which master serves a key's slot, and a pool of connections per master.
//!
//! Every key of a tenant carries the tenant as its hash tag (`{tenant}`), so a tenant's keys
//! share one slot: the store's `WATCH`/`MULTI` transactions, which never span tenants in
//! cluster mode, run unchanged on the one master that serves that slot, over a plain
//! connection to it. The slot map is read with `CLUSTER SLOTS` from any node that answers and
//! read again when a node redirects (`MOVED`, `ASK`), refuses, or says the cluster is down:
//! what a failover looks like from here.

use std::{
    collections::HashMap,
    sync::{Mutex, RwLock},
    time::{Duration, Instant},
};

use redis::{Connection, ErrorKind, RedisError, ServerErrorKind, Value};

/// The slot of a key: CRC16 (XMODEM) of its hash tag (the text between the first `{` and the
/// next `}`, when not empty) or of the whole key, modulo 16384, as Redis Cluster computes it.
pub(crate) fn key_slot(key: &str) -> u16 {
    let bytes = key.as_bytes();
    let hashed = match bytes.iter().position(|&b| b == b'{') {
        Some(open) => match bytes[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &bytes[open + 1..open + 1 + len],
            _ => bytes,
        },
        None => bytes,
    };
    crc16(hashed) % 16_384
}

fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// Whether a failure left the command unapplied and asks to look for the slot's master
/// again: a redirect (`MOVED`; `ASK`, while a slot migrates, is retried until the migration
/// ends and the map names the new owner: `ASKING` is not sent), a cluster between masters, a
/// node that refused the connection or is (no longer) a master. Such a call is retried; any
/// other failure (a connection lost midway, when a transaction may have been applied)
/// reaches the caller.
pub(crate) fn is_rerouted(e: &RedisError) -> bool {
    if e.is_connection_refusal() {
        return true;
    }
    match e.kind() {
        // A transaction discarded for its queued commands' errors: rerouted only if each
        // of them was (a transaction queued on a node that no longer serves the slot).
        ErrorKind::Server(ServerErrorKind::ExecAbort) => {
            e.clone().into_server_errors().is_some_and(|errors| {
                !errors.is_empty()
                    && errors
                        .iter()
                        .all(|(_, inner)| inner.kind().is_some_and(rerouted_kind))
            })
        }
        ErrorKind::Server(kind) => rerouted_kind(kind),
        _ => false,
    }
}

fn rerouted_kind(kind: ServerErrorKind) -> bool {
    matches!(
        kind,
        ServerErrorKind::Moved
            | ServerErrorKind::Ask
            | ServerErrorKind::TryAgain
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ReadOnly
            | ServerErrorKind::BusyLoading
    )
}

/// One range of slots and the master serving it.
#[derive(Clone, Debug)]
struct SlotRange {
    start: u16,
    end: u16,
    master: String,
}

/// The nodes of a cluster as this handle knows them.
pub(crate) struct Cluster {
    /// The addresses given in the URL (`host:port`), asked when no known master answers.
    seeds: Vec<String>,
    /// `user:password@` or empty: how every node is connected to.
    userinfo: String,
    /// The slot map, sorted by `start`.
    map: RwLock<Vec<SlotRange>>,
    pools: Mutex<HashMap<String, Vec<Connection>>>,
    /// Each master's connected replicas, and when its `ROLE` said so.
    replicas: Mutex<HashMap<String, (Instant, usize)>>,
    /// How long a call keeps looking for its slot's master (a failover's length).
    pub(crate) failover: Duration,
    /// Replicas a write waits for (`WAIT`) before it is acknowledged, at most.
    wait_replicas: usize,
    pub(crate) wait_timeout: Duration,
}

const IDLE_PER_NODE: usize = 8;
/// How long a master's count of connected replicas is taken as still true.
const ROLE_AGE: Duration = Duration::from_secs(1);

impl Cluster {
    /// Connects to the first seed that answers and reads the slot map.
    pub(crate) fn open(
        seeds: Vec<String>,
        userinfo: String,
        wait_replicas: usize,
        wait_timeout: Duration,
        failover: Duration,
    ) -> Result<Self, RedisError> {
        let cluster = Self {
            seeds,
            userinfo,
            map: RwLock::new(Vec::new()),
            pools: Mutex::new(HashMap::new()),
            replicas: Mutex::new(HashMap::new()),
            failover,
            wait_replicas,
            wait_timeout,
        };
        cluster.refresh()?;
        Ok(cluster)
    }

    /// How many replicas a write on `addr` waits for: `wait_replicas`, or fewer when the
    /// master has fewer connected now (after a failover, until its old master comes back as
    /// its replica: a write then has no copy to wait for). The master's own `ROLE` says,
    /// asked at most once a second.
    pub(crate) fn replicas_to_wait_for(&self, addr: &str, c: &mut Connection) -> usize {
        if self.wait_replicas == 0 {
            return 0;
        }
        let known = self
            .replicas
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(addr)
            .copied();
        let connected = match known {
            Some((at, n)) if at.elapsed() < ROLE_AGE => n,
            _ => match redis::cmd("ROLE").query::<Value>(c) {
                Ok(role) => {
                    let n = connected_replicas(&role);
                    self.replicas
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(addr.to_owned(), (Instant::now(), n));
                    n
                }
                // Not known (a user without `ROLE`, a connection failing): wait for all.
                Err(_) => self.wait_replicas,
            },
        };
        connected.min(self.wait_replicas)
    }

    /// Reads the slot map again from the first node that answers: known masters first, then
    /// the seeds.
    pub(crate) fn refresh(&self) -> Result<(), RedisError> {
        let mut candidates = self.masters();
        for s in &self.seeds {
            if !candidates.contains(s) {
                candidates.push(s.clone());
            }
        }
        let mut last = None;
        for addr in candidates {
            let read = self.connect(&addr).and_then(|mut c| {
                let v: Value = redis::cmd("CLUSTER").arg("SLOTS").query(&mut c)?;
                Ok(parse_slots(&v, &addr))
            });
            match read {
                Ok(Some(ranges)) if !ranges.is_empty() => {
                    *self.map.write().unwrap_or_else(|p| p.into_inner()) = ranges;
                    return Ok(());
                }
                Ok(_) => {
                    last = Some(RedisError::from((
                        ErrorKind::Server(ServerErrorKind::ClusterDown),
                        "no slots served",
                        addr,
                    )))
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            RedisError::from((ErrorKind::InvalidClientConfig, "no cluster node given"))
        }))
    }

    /// The master serving `slot`, if the map knows one.
    pub(crate) fn master_for(&self, slot: u16) -> Option<String> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        map.iter()
            .find(|r| r.start <= slot && slot <= r.end)
            .map(|r| r.master.clone())
    }

    /// Every master of the map, each once, sorted.
    pub(crate) fn masters(&self) -> Vec<String> {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<String> = map.iter().map(|r| r.master.clone()).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn connect(&self, addr: &str) -> Result<Connection, RedisError> {
        crate::connect(&redis::Client::open(format!(
            "redis://{}{addr}/",
            self.userinfo
        ))?)
    }

    /// A connection to `addr`: an idle one, or a new one.
    pub(crate) fn connection(&self, addr: &str) -> Result<Connection, RedisError> {
        let idle = self
            .pools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(addr)
            .and_then(Vec::pop);
        match idle {
            Some(c) if redis::ConnectionLike::is_open(&c) => Ok(c),
            _ => self.connect(addr),
        }
    }

    /// Keeps a healthy connection for the next call to `addr`.
    pub(crate) fn give_back(&self, addr: &str, conn: Connection) {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        let pool = pools.entry(addr.to_owned()).or_default();
        if pool.len() < IDLE_PER_NODE {
            pool.push(conn);
        }
    }

    /// Forgets the idle connections to `addr` (after one of them failed: the node may be
    /// gone, and its other connections with it).
    pub(crate) fn forget(&self, addr: &str) {
        self.pools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(addr);
    }
}

/// The replicas a master's `ROLE` reply lists (`["master", offset, [[host, port, offset],
/// ...]]`); none for a node that is not a master.
fn connected_replicas(role: &Value) -> usize {
    match role {
        Value::Array(parts) => match (parts.first(), parts.get(2)) {
            (Some(Value::BulkString(kind)), Some(Value::Array(replicas))) if kind == b"master" => {
                replicas.len()
            }
            _ => 0,
        },
        _ => 0,
    }
}

/// The ranges of a `CLUSTER SLOTS` reply; a node given as an empty host is the one asked.
fn parse_slots(v: &Value, asked: &str) -> Option<Vec<SlotRange>> {
    let Value::Array(ranges) = v else { return None };
    let asked_host = asked.rsplit_once(':').map_or(asked, |(h, _)| h);
    let mut out = Vec::new();
    for r in ranges {
        let Value::Array(parts) = r else { return None };
        let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
            (parts.first(), parts.get(1), parts.get(2))
        else {
            return None;
        };
        let host = match master.first() {
            Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
            Some(Value::SimpleString(s)) => s.clone(),
            _ => return None,
        };
        let host = if host.is_empty() || host == "?" {
            asked_host.to_owned()
        } else {
            host
        };
        let Some(Value::Int(port)) = master.get(1) else {
            return None;
        };
        out.push(SlotRange {
            start: u16::try_from(*start).ok()?,
            end: u16::try_from(*end).ok()?,
            master: format!("{host}:{port}"),
        });
    }
    out.sort_by_key(|r| r.start);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_redis_clusters() {
        // The examples of the Redis Cluster specification and `CLUSTER KEYSLOT`'s.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot("foo"), 12_182);
        assert_eq!(key_slot("bar"), 5_061);
        assert_eq!(key_slot("{user1000}.following"), key_slot("user1000"));
        assert_eq!(
            key_slot("{user1000}.following"),
            key_slot("{user1000}.followers")
        );
        // An empty tag hashes the whole key.
        assert_eq!(key_slot("foo{}{bar}"), crc16(b"foo{}{bar}") % 16_384);
        assert_eq!(key_slot("foo{{bar}}zap"), key_slot("{bar"));
    }

    #[test]
    fn a_slots_reply_becomes_the_map() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![
                Value::BulkString(host.as_bytes().to_vec()),
                Value::Int(port),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let reply = Value::Array(vec![
            Value::Array(vec![
                Value::Int(5461),
                Value::Int(16383),
                node("10.0.0.2", 7001),
                node("10.0.0.5", 7004),
            ]),
            Value::Array(vec![Value::Int(0), Value::Int(5460), node("", 7000)]),
        ]);
        let map = parse_slots(&reply, "127.0.0.1:7000").expect("parses");
        assert_eq!(map.len(), 2);
        assert_eq!(
            (map[0].start, map[0].end, map[0].master.as_str()),
            (0, 5460, "127.0.0.1:7000")
        );
        assert_eq!(map[1].master, "10.0.0.2:7001");
        assert!(parse_slots(&Value::Int(1), "x:1").is_none());
    }

    #[test]
    fn a_role_reply_counts_the_connected_replicas() {
        let replica = |port: &[u8]| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::BulkString(port.to_vec()),
                Value::BulkString(b"3129".to_vec()),
            ])
        };
        let master = Value::Array(vec![
            Value::BulkString(b"master".to_vec()),
            Value::Int(3129),
            Value::Array(vec![replica(b"9001"), replica(b"9002")]),
        ]);
        assert_eq!(connected_replicas(&master), 2);
        let alone = Value::Array(vec![
            Value::BulkString(b"master".to_vec()),
            Value::Int(0),
            Value::Array(vec![]),
        ]);
        assert_eq!(connected_replicas(&alone), 0);
        let replica_role = Value::Array(vec![
            Value::BulkString(b"slave".to_vec()),
            Value::BulkString(b"127.0.0.1".to_vec()),
            Value::Int(9000),
        ]);
        assert_eq!(connected_replicas(&replica_role), 0);
        assert_eq!(connected_replicas(&Value::Nil), 0);
    }
}
