//! Redis Cluster for tests: the cluster `.ci/run` starts (`MUISTI_REDIS_CLUSTER_URL`), and a
//! cluster of this test's own `redis-server` processes on loopback, for tests that stop a
//! node.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use crate::redis_keys::{KeyPrefix, keys_under};

/// The cluster the conformance suite runs on: `MUISTI_REDIS_CLUSTER_URL`
/// (`redis+cluster://host:port,...`), or `None` with a skip line (a failure when
/// `MUISTI_REQUIRE_SERVICES=1`).
pub fn shared_cluster_url() -> Option<String> {
    match std::env::var("MUISTI_REDIS_CLUSTER_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            crate::service_unavailable(
                "redis cluster",
                "MUISTI_REDIS_CLUSTER_URL is not set (.ci/redis-cluster starts one)",
            );
            None
        }
    }
}

/// The masters of the cluster a node (`host:port`) belongs to, from its `CLUSTER NODES`.
pub fn masters(node: &str) -> Vec<String> {
    let Ok(mut c) =
        redis::Client::open(format!("redis://{node}/")).and_then(|c| c.get_connection())
    else {
        return Vec::new();
    };
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(&mut c)
        .unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let addr = fields.nth(1)?;
            let flags = fields.next()?;
            (flags.split(',').any(|f| f == "master") && !flags.contains("fail"))
                .then(|| addr.split('@').next().unwrap_or(addr).to_owned())
        })
        .collect()
}

/// The nodes (`host:port`) a `redis+cluster://` URL names.
pub fn seeds(url: &str) -> Vec<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '/']).next().unwrap_or(rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A fresh key prefix on a cluster (a [`KeyPrefix`] whose URL is the cluster's); every key
/// under it is deleted from every master when this is dropped.
pub struct ClusterPrefix(pub KeyPrefix);

impl ClusterPrefix {
    /// A fresh prefix on the cluster at `url`, starting with `label`.
    pub fn fresh(url: String, label: &str) -> Self {
        Self(KeyPrefix::fresh(url, label))
    }
}

impl std::ops::Deref for ClusterPrefix {
    type Target = KeyPrefix;
    fn deref(&self) -> &KeyPrefix {
        &self.0
    }
}

impl Drop for ClusterPrefix {
    fn drop(&mut self) {
        let Some(seed) = seeds(&self.url).into_iter().next() else {
            return;
        };
        for master in masters(&seed) {
            let Ok(mut c) =
                redis::Client::open(format!("redis://{master}/")).and_then(|c| c.get_connection())
            else {
                continue;
            };
            // One key at a time: a cluster refuses a DEL of keys in several slots.
            for key in keys_under(&mut c, &self.prefix) {
                let _ = redis::cmd("DEL").arg(key).exec(&mut c);
            }
        }
    }
}

/// A Redis Cluster of this test's own: `shards` masters with one replica each, each node a
/// `redis-server` child process on a loopback port, without persistence; every node is
/// killed when this is dropped.
pub struct LocalCluster {
    _dir: tempfile::TempDir,
    nodes: Vec<(u16, Option<Child>)>,
}

impl LocalCluster {
    /// Starts the nodes, makes them one cluster (`redis-cli --cluster create`) and waits until
    /// every master has its replica. `None`, with a skip line, when `redis-server` or
    /// `redis-cli` is not installed.
    pub fn start(shards: usize) -> Option<Self> {
        for tool in ["redis-server", "redis-cli"] {
            if Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .status()
                .is_err()
            {
                crate::service_unavailable("redis cluster", &format!("{tool} is not installed"));
                return None;
            }
        }
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ports = free_ports(shards * 2);
        let mut nodes = Vec::new();
        for &port in &ports {
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "1000"])
                .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            nodes.push((port, Some(child)));
        }
        let cluster = Self { _dir: dir, nodes };
        for &port in &ports {
            cluster.wait_for(Duration::from_secs(10), "a node answering", || {
                cluster.query(port, &["PING"]).is_some()
            });
        }
        let addrs: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("redis-cli runs");
        assert!(created.success(), "redis-cli --cluster create failed");
        cluster.wait_for(
            Duration::from_secs(30),
            "every master with a replica",
            || {
                let ms = masters(&addrs[0]);
                ms.len() == shards
                    && ms.iter().all(|m| {
                        let port: u16 = m
                            .rsplit(':')
                            .next()
                            .and_then(|p| p.parse().ok())
                            .unwrap_or(0);
                        cluster
                            .query(port, &["INFO", "replication"])
                            .is_some_and(|info| {
                                info.contains("slave0:") && info.contains("state=online")
                            })
                    })
                    && ports.iter().all(|&p| {
                        cluster
                            .query(p, &["CLUSTER", "INFO"])
                            .is_some_and(|i| i.contains("cluster_state:ok"))
                    })
            },
        );
        Some(cluster)
    }

    /// The cluster's `redis+cluster://` URL (every node a seed), without parameters.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|(p, _)| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// The port of the master serving `key`'s slot.
    pub fn master_of(&self, key: &str) -> u16 {
        let (port, _) = self.live().next().expect("a live node");
        let slot: i64 = self.conn(port).map_or(-1, |mut c| {
            redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query(&mut c)
                .unwrap_or(-1)
        });
        let slots: Vec<(i64, i64, (String, i64))> =
            self.conn(port).map_or_else(Vec::new, |mut c| {
                let raw: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
                    .arg("SLOTS")
                    .query(&mut c)
                    .unwrap_or_default();
                raw.into_iter()
                    .filter_map(|r| {
                        let start = redis::from_redis_value::<i64>(r.first()?.clone()).ok()?;
                        let end = redis::from_redis_value::<i64>(r.get(1)?.clone()).ok()?;
                        let node: Vec<redis::Value> =
                            redis::from_redis_value(r.get(2)?.clone()).ok()?;
                        let host = redis::from_redis_value::<String>(node.first()?.clone()).ok()?;
                        let p = redis::from_redis_value::<i64>(node.get(1)?.clone()).ok()?;
                        Some((start, end, (host, p)))
                    })
                    .collect()
            });
        slots
            .into_iter()
            .find(|(s, e, _)| *s <= slot && slot <= *e)
            .and_then(|(_, _, (_, p))| u16::try_from(p).ok())
            .expect("the slot has a master")
    }

    /// The port of the replica of the master on `port`.
    pub fn replica_of(&self, port: u16) -> u16 {
        let text = self
            .query(port, &["CLUSTER", "NODES"])
            .expect("the master answers");
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        let me = format!("127.0.0.1:{port}@");
        let id = lines
            .iter()
            .find(|f| f.get(1).is_some_and(|a| a.starts_with(&me)))
            .and_then(|f| f.first().copied())
            .expect("the master is listed");
        lines
            .iter()
            .find(|f| f.get(2).is_some_and(|fl| fl.contains("slave")) && f.get(3) == Some(&id))
            .and_then(|f| f.get(1)?.split([':', '@']).nth(1)?.parse().ok())
            .expect("the master has a replica")
    }

    /// Stops (`SIGSTOP`) or resumes (`SIGCONT`) the node on `port`: a node that holds its
    /// connections but answers nothing.
    pub fn pause(&self, port: u16, paused: bool) {
        let (_, child) = self.live().find(|(p, _)| *p == port).expect("a live node");
        let signal = if paused { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Kills the node on `port` at once (`SIGKILL`: no chance to hand anything over).
    pub fn kill(&mut self, port: u16) {
        if let Some((_, child)) = self.nodes.iter_mut().find(|(p, _)| *p == port)
            && let Some(mut child) = child.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits until the cluster serves every slot again (after a kill: once a replica took
    /// over).
    pub fn wait_until_served(&self, within: Duration) {
        self.wait_for(within, "every slot served", || {
            self.live().all(|(p, _)| {
                self.query(p, &["CLUSTER", "INFO"])
                    .is_some_and(|i| i.contains("cluster_state:ok"))
            })
        });
    }

    /// The number of keys each live master holds, by port.
    pub fn keys_per_master(&self) -> Vec<(u16, u64)> {
        let (port, _) = self.live().next().expect("a live node");
        masters(&format!("127.0.0.1:{port}"))
            .into_iter()
            .filter_map(|m| {
                let p: u16 = m.rsplit(':').next()?.parse().ok()?;
                let mut c = self.conn(p)?;
                let n: u64 = redis::cmd("DBSIZE").query(&mut c).ok()?;
                Some((p, n))
            })
            .collect()
    }

    fn live(&self) -> impl Iterator<Item = (u16, &Child)> {
        self.nodes
            .iter()
            .filter_map(|(p, c)| c.as_ref().map(|c| (*p, c)))
    }

    fn conn(&self, port: u16) -> Option<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .ok()?
            .get_connection_with_timeout(Duration::from_secs(1))
            .ok()
    }

    fn query(&self, port: u16, args: &[&str]) -> Option<String> {
        let mut c = self.conn(port)?;
        let mut cmd = redis::cmd(args[0]);
        for a in &args[1..] {
            cmd.arg(*a);
        }
        cmd.query::<String>(&mut c).ok()
    }

    fn wait_for(&self, within: Duration, what: &str, mut ok: impl FnMut() -> bool) {
        let deadline = Instant::now() + within;
        while !ok() {
            assert!(
                Instant::now() < deadline,
                "redis cluster: no {what} within {within:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        for (_, child) in &mut self.nodes {
            if let Some(mut child) = child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `n` loopback ports that are free, each with its cluster bus port (+10000) free too.
fn free_ports(n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    while out.len() < n {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        // Neither the port nor its bus port may be another node's port or bus port.
        let taken = |p: u16| out.iter().any(|&q| p == q || p == q + 10_000);
        if port < 55_000 && !taken(port) && !taken(port + 10_000) && free(port + 10_000) {
            out.push(port);
        }
    }
    out
}
