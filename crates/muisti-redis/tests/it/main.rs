//! Conformance of the Redis store against a real server (`MUISTI_REDIS_URL`, default
//! `redis://127.0.0.1:6379/0`). Each test uses its own key prefix and deletes it afterwards.
//! Skips with a printed line when Redis is unreachable, unless `MUISTI_REQUIRE_SERVICES=1`.

use std::sync::Arc;

use muisti_core::{ErrorKind, Limits, Store};
use muisti_redis::RedisStore;
use muisti_testkit::Harness;

use muisti_testkit::redis_keys::{KeyPrefix, base_url};

mod cluster;

/// A test's own key prefix on the server.
struct RedisHarness(KeyPrefix);

impl std::ops::Deref for RedisHarness {
    type Target = KeyPrefix;
    fn deref(&self) -> &KeyPrefix {
        &self.0
    }
}

impl RedisHarness {
    fn url(&self) -> String {
        self.0.store_url()
    }
}

impl Harness for RedisHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(RedisStore::open(&self.url()).expect("connects"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            RedisStore::open(&self.url())
                .expect("connects")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.url())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(RedisStore::open(location).expect("connects"))
    }
}

fn harness() -> Option<RedisHarness> {
    let url = base_url();
    if let Err(e) = RedisStore::open(&url) {
        muisti_testkit::service_unavailable("redis", &e.to_string());
        return None;
    }
    Some(RedisHarness(KeyPrefix::fresh(url, "muisti-test")))
}

muisti_testkit::conformance!(harness());
muisti_testkit::conformance_persistent!(harness());

#[test]
fn unreachable_server_is_a_clear_error_without_the_password() {
    let err = RedisStore::open("redis://:hunter2@127.0.0.1:1/0")
        .err()
        .expect("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

#[test]
fn no_ttl_means_no_redis_expiry() {
    let Some(h) = harness() else { return };
    let s = h.open();
    let p = muisti_core::Partition::of(muisti_core::Namespace::default_ns());
    s.put(muisti_core::Put::new(
        p,
        Some(muisti_core::Key::new("k").expect("valid")),
        "v",
    ))
    .expect("writes");
    let client = redis::Client::open(h.url.as_str()).expect("url");
    let mut c = client.get_connection().expect("connects");
    let ttl: i64 = redis::cmd("PTTL")
        .arg(format!("{}r/default/default/k", h.prefix))
        .query(&mut c)
        .expect("pttl");
    assert_eq!(ttl, -1, "a record without TTL must have no Redis expiry");
}

#[test]
fn a_corrupted_record_is_reported_with_its_key() {
    let Some(h) = harness() else { return };
    let s = h.open();
    let p = muisti_core::Partition::of(muisti_core::Namespace::default_ns());
    let key = muisti_core::Key::new("k").expect("valid");
    s.put(muisti_core::Put::new(p.clone(), Some(key.clone()), "v"))
        .expect("writes");
    s.put(muisti_core::Put::new(
        p.clone(),
        Some(muisti_core::Key::new("other").expect("valid")),
        "kept",
    ))
    .expect("writes");
    let client = redis::Client::open(h.url.as_str()).expect("url");
    let mut c = client.get_connection().expect("connects");
    let rkey = format!("{}r/default/default/k", h.prefix);
    redis::cmd("SET")
        .arg(&rkey)
        .arg("{not json")
        .exec(&mut c)
        .expect("set");
    let err = s
        .get(&muisti_core::Locator::Key {
            partition: p.clone(),
            key,
        })
        .expect_err("corrupted");
    assert_eq!(err.kind(), ErrorKind::Corrupted);
    assert!(err.to_string().contains(&rkey), "{err}");
    let other = muisti_core::Locator::Key {
        partition: p,
        key: muisti_core::Key::new("other").expect("valid"),
    };
    assert!(s.get(&other).expect("reads").is_some());
}

#[test]
fn the_database_number_in_the_url_is_used() {
    let Some(h) = harness() else { return };
    let base = base_url();
    let base = base
        .rsplit_once('/')
        .map_or(base.as_str(), |(b, _)| b)
        .to_owned();
    // Same prefix in database 3; dropping it deletes its keys there.
    let h3 = RedisHarness(KeyPrefix {
        url: format!("{base}/3"),
        prefix: h.prefix.clone(),
    });
    let s = h3.open();
    let p = muisti_core::Partition::of(muisti_core::Namespace::default_ns());
    s.put(muisti_core::Put::new(
        p,
        Some(muisti_core::Key::new("k").expect("valid")),
        "in db 3",
    ))
    .expect("writes");
    let key = format!("{}r/default/default/k", h.prefix);
    let exists = |url: &str| -> bool {
        let mut c = redis::Client::open(url)
            .expect("url")
            .get_connection()
            .expect("connects");
        redis::cmd("EXISTS")
            .arg(&key)
            .query(&mut c)
            .expect("exists")
    };
    assert!(exists(&h3.url), "the record is in database 3");
    assert!(!exists(&h.url), "and not in the default database");
}

#[test]
fn rediss_speaks_tls_and_fails_clearly_against_a_plain_server() {
    let Some(_h) = harness() else { return };
    let plain = base_url();
    let tls = plain.replacen("redis://", "rediss://", 1);
    let err = RedisStore::open(&tls)
        .err()
        .expect("a plain server cannot complete a TLS handshake");
    assert!(
        matches!(err.kind(), ErrorKind::Unavailable | ErrorKind::Backend),
        "{err}"
    );
}

/// Two handles (two servers) on one Redis with `staleness_ms=0`: every change through one is
/// seen by the other's next read, which catches its copy up from the change log (the records
/// named, never the whole partition) or applies its own write in place; a flush reloads.
#[test]
fn copies_in_two_handles_never_answer_stale() {
    let Some(h) = harness() else { return };
    let exact = format!("{}&staleness_ms=0", h.url());
    let a = RedisStore::open(&exact).expect("a");
    let b = RedisStore::open(&exact).expect("b");
    muisti_testkit::shared::changes_are_seen_by_another_handle_at_once(&a, &b);
    let (loads, catch_ups) = b.copy_counts();
    assert_eq!(loads, 2, "loaded once, and again after the flush");
    assert!(catch_ups >= 5, "{catch_ups}");
}

/// With a 200 ms window a write through one handle is seen by every read through the other
/// that starts 200 ms after it; the writer sees it at once.
#[test]
fn the_staleness_window_bounds_what_another_handle_misses() {
    let Some(h) = harness() else { return };
    let window = std::time::Duration::from_millis(200);
    let url = format!("{}&staleness_ms={}", h.url(), window.as_millis());
    let (a, b) = (h.open_at(&url), h.open_at(&url));
    let seen = muisti_testkit::shared::the_staleness_window_bounds_what_another_handle_misses(
        &*a, &*b, window,
    );
    println!("redis copy staleness: seen by the other handle after {seen:?} (window {window:?})");
}
