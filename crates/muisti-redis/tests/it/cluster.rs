//! The Redis store on a Redis Cluster: the conformance suite on the cluster `.ci/run` starts
//! (`MUISTI_REDIS_CLUSTER_URL`), tenants spread over the masters, and no acknowledged write
//! lost when a master is killed during writes (a cluster of this test's own nodes).

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use muisti_core::{ErrorKind, Key, Limits, Locator, Namespace, Partition, Put, Store, Tenant};
use muisti_redis::RedisStore;
use muisti_testkit::{
    Harness,
    redis_cluster::{ClusterPrefix, LocalCluster, shared_cluster_url},
};

struct ClusterHarness(ClusterPrefix);

impl Harness for ClusterHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(RedisStore::open(&self.0.store_url()).expect("connects"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            RedisStore::open(&self.0.store_url())
                .expect("connects")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.0.store_url())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(RedisStore::open(location).expect("connects"))
    }
}

fn harness() -> Option<ClusterHarness> {
    let url = shared_cluster_url()?;
    if let Err(e) = RedisStore::open(&url) {
        muisti_testkit::service_unavailable("redis cluster", &e.to_string());
        return None;
    }
    Some(ClusterHarness(ClusterPrefix::fresh(url, "muisti-test")))
}

muisti_testkit::conformance!(harness());
muisti_testkit::conformance_persistent!(harness());

fn tenant(name: &str) -> Tenant {
    Tenant::new(name).expect("valid")
}

fn put(t: &Tenant, key: &str, text: &str) -> Put {
    Put::new(
        Partition::new(t.clone(), Namespace::default_ns()),
        Some(Key::new(key).expect("valid")),
        text,
    )
}

#[test]
fn tenants_spread_over_the_masters_and_are_listed_from_each() {
    let Some(h) = harness() else { return };
    let store = h.open();
    let tenants: Vec<Tenant> = (0..24).map(|i| tenant(&format!("t{i}"))).collect();
    for t in &tenants {
        store.put(put(t, "k", "hello")).expect("written");
    }
    // Each tenant's keys share a slot; the slots of 24 tenants fall on more than one master.
    let url = h.0.url.clone();
    let seeds = muisti_testkit::redis_cluster::seeds(&url);
    let masters = muisti_testkit::redis_cluster::masters(&seeds[0]);
    let holding = masters
        .iter()
        .filter(|m| {
            let mut c = redis::Client::open(format!("redis://{m}/"))
                .and_then(|c| c.get_connection())
                .expect("connects");
            !muisti_testkit::redis_keys::keys_under(&mut c, &h.0.prefix).is_empty()
        })
        .count();
    assert!(masters.len() >= 3, "{masters:?}");
    assert!(
        holding >= 2,
        "24 tenants on {holding} of {} masters",
        masters.len()
    );
    let mut listed = store.tenants().expect("listed");
    listed.sort();
    let mut expected = tenants.clone();
    expected.sort();
    assert_eq!(listed, expected);
    // A batch over several tenants is written tenant by tenant, in order.
    let batch: Vec<Put> = tenants.iter().map(|t| put(t, "b", "batched")).collect();
    let written = store.put_many(batch).expect("written");
    for (w, t) in written.iter().zip(&tenants) {
        assert_eq!(&w.memory.partition.tenant, t);
    }
}

#[test]
fn a_cluster_url_is_checked() {
    for (url, says) in [
        ("redis+cluster://", "no node"),
        ("redis+cluster://127.0.0.1:1/3", "database 0"),
        ("redis+cluster://127.0.0.1:1?prefix={x}:", "hash tag"),
        (
            "redis+cluster://127.0.0.1:1?protocol=resp3",
            "unknown parameter",
        ),
    ] {
        let err = RedisStore::open(url).err().expect("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        assert!(err.to_string().contains(says), "{url}: {err}");
    }
    let err = RedisStore::open("redis+cluster://:hunter2@127.0.0.1:1")
        .err()
        .expect("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

#[test]
fn killing_a_master_during_writes_loses_no_acknowledged_write() {
    let Some(mut cluster) = LocalCluster::start(3) else {
        return;
    };
    let url = format!("{}?prefix=failover:&failover_ms=20000", cluster.url());
    let store = Arc::new(RedisStore::open(&url).expect("connects"));
    let t = tenant("acme");
    // A write is acknowledged only once the master's replica has it: with the replica
    // stopped, it is refused (Unavailable) rather than acknowledged.
    let master = cluster.master_of("{acme}");
    let replica = cluster.replica_of(master);
    let strict = RedisStore::open(&format!("{url}&wait_ms=300")).expect("connects");
    cluster.pause(replica, true);
    let refused = strict.put(put(&t, "unconfirmed", "not yet replicated"));
    cluster.pause(replica, false);
    let err = refused.expect_err("refused while the replica is stopped");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("replicas"), "{err}");
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let errors = Arc::new(Mutex::new(Vec::<(ErrorKind, String)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (store, t, acked, errors, stop) = (
                store.clone(),
                t.clone(),
                acked.clone(),
                errors.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let key = format!("w{w}-{i}");
                    match store.put(put(&t, &key, &format!("text of {key}"))) {
                        Ok(_) => acked.lock().expect("lock").push(key),
                        Err(e) => {
                            errors.lock().expect("lock").push((e.kind(), e.to_string()));
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();
    let count = || acked.lock().expect("lock").len();
    let wait_for = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while count() < n {
            assert!(
                Instant::now() < deadline,
                "only {} writes acknowledged",
                count()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for(200);
    // The master of the tenant's slot dies mid-stream; its replica takes over.
    cluster.kill(master);
    let at_kill = count();
    cluster.wait_until_served(Duration::from_secs(30));
    wait_for(at_kill + 200);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    assert_ne!(cluster.master_of("{acme}"), master, "a replica took over");
    // A new handle (no copy of its own) finds every acknowledged write with its text.
    let fresh = RedisStore::open(&url).expect("connects");
    let acked = acked.lock().expect("lock").clone();
    let mut lost = Vec::new();
    for key in &acked {
        let at = Locator::Key {
            partition: Partition::new(t.clone(), Namespace::default_ns()),
            key: Key::new(key.as_str()).expect("valid"),
        };
        match fresh.get(&at).expect("read") {
            Some(m) if m.text().as_ref() == format!("text of {key}").as_str() => {}
            _ => lost.push(key.clone()),
        }
    }
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(10)]
    );
    // Errors during the failover are Unavailable (a 503), never anything else.
    let errors = errors.lock().expect("lock").clone();
    for (kind, e) in &errors {
        assert_eq!(*kind, ErrorKind::Unavailable, "{e}");
    }
    println!(
        "{} writes acknowledged, {} refused during the failover",
        acked.len(),
        errors.len()
    );
}
