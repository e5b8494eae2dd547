//! Conformance of the Redis store against a real server (`MUISTI_REDIS_URL`, default
//! `redis://127.0.0.1:6379/0`). Each test uses its own key prefix and deletes it afterwards.
//! Skips with a printed line when Redis is unreachable, unless `MUISTI_REQUIRE_SERVICES=1`.

use std::sync::Arc;

use muisti_core::{ErrorKind, Limits, Store};
use muisti_redis::RedisStore;
use muisti_testkit::Harness;

use muisti_testkit::redis_keys::{KeyPrefix, base_url};

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

/// Two handles (two servers) on one Redis with `staleness_ms=0`: each answers searches
/// from its in-process copy, and every write, update, delete, access count and vector
/// through one is seen by the other's very next read (the copies are checked against the
/// partition's generation on every read).
#[test]
fn copies_in_two_handles_never_answer_stale() {
    use muisti_core::{Filter, Locator, Namespace, Partition, Put, TextQuery, VectorQuery};
    let Some(h) = harness() else { return };
    let exact = format!("{}&staleness_ms=0", h.url());
    let a = h.open_at(&exact);
    let b = h.open_at(&exact);
    let p = Partition::of(Namespace::default_ns());
    let text = |s: &Arc<dyn Store>, q: &str| {
        s.text_search(&TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("search")
        .into_iter()
        .map(|h| h.id)
        .collect::<Vec<_>>()
    };
    // B holds a copy before A writes.
    assert!(text(&b, "lisbon").is_empty());
    let m = a
        .put(Put::new(p.clone(), None, "I moved to Lisbon"))
        .expect("put")
        .memory;
    assert_eq!(text(&b, "lisbon"), vec![m.id]);
    // An update through A: B finds the new words, not the old.
    let req = muisti_core::UpdateRequest::new(
        Locator::Id {
            tenant: p.tenant.clone(),
            id: m.id,
        },
        muisti_core::Patch {
            content: Some("I moved to Porto".into()),
            ..Default::default()
        },
    );
    a.update(&req).expect("update");
    assert!(text(&b, "lisbon").is_empty());
    assert_eq!(text(&b, "porto"), vec![m.id]);
    // Access counts through A are B's rescoring fields at once.
    a.touch(&p.tenant, &[m.id], muisti_core::Timestamp::from_millis(5))
        .expect("touch");
    let fields = b.rank_fields(&p, &[m.id]).expect("fields");
    assert_eq!(fields.first().map(|f| f.access_count), Some(1));
    // A vector set through A is searched by B.
    a.set_vectors(
        &p.tenant,
        &[muisti_core::StoredVector {
            id: m.id,
            model: "test".into(),
            vector: vec![1.0, 0.0],
        }],
    )
    .expect("vectors");
    let near = b
        .vector_search(&VectorQuery {
            partition: p.clone(),
            vector: vec![1.0, 0.0],
            filter: Filter::default(),
            limit: 5,
        })
        .expect("vector search");
    assert_eq!(near.first().map(|s| s.id), Some(m.id));
    // B's own write lands in its copy in place, and A sees it.
    let n = b
        .put(Put::new(p.clone(), None, "Porto has a bridge"))
        .expect("put")
        .memory;
    assert_eq!(text(&b, "bridge"), vec![n.id]);
    assert_eq!(text(&a, "bridge"), vec![n.id]);
    assert_eq!(
        b.get_many(&p.tenant, &[n.id, m.id])
            .expect("get_many")
            .iter()
            .map(|m| m.id)
            .collect::<Vec<_>>(),
        vec![n.id, m.id]
    );
    // A delete through A is gone from B's search and reads.
    a.delete(&Locator::Id {
        tenant: p.tenant.clone(),
        id: m.id,
    })
    .expect("delete");
    assert!(text(&b, "porto").iter().all(|id| *id != m.id));
    assert!(b.get_many(&p.tenant, &[m.id]).expect("get_many").is_empty());
    // A flush through A empties B's answers.
    a.flush(&p).expect("flush");
    assert!(text(&b, "bridge").is_empty());
}

/// With a staleness window, a write through one handle is seen by every read through the
/// other that starts the window after it (the measured bound), while the writer's own reads
/// see it at once.
#[test]
fn the_staleness_window_bounds_what_another_handle_misses() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery};
    let Some(h) = harness() else { return };
    let window = std::time::Duration::from_millis(200);
    let url = format!("{}&staleness_ms={}", h.url(), window.as_millis());
    let a = h.open_at(&url);
    let b = h.open_at(&url);
    let p = Partition::of(Namespace::default_ns());
    let text = |s: &Arc<dyn Store>| {
        s.text_search(&TextQuery {
            partition: p.clone(),
            query: "lisbon".into(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("search")
        .len()
    };
    assert_eq!(text(&a), 0);
    assert_eq!(text(&b), 0);
    a.put(Put::new(p.clone(), None, "I moved to Lisbon"))
        .expect("put");
    let written = std::time::Instant::now();
    assert_eq!(text(&a), 1, "the writer reads its own write");
    // B may miss it inside the window (its copy was confirmed just before the write); the
    // first read that sees it is measured...
    let mut seen_after = None;
    while written.elapsed() < window {
        if text(&b) == 1 {
            seen_after = Some(written.elapsed());
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // ...and every read that starts once the window has passed sees it.
    std::thread::sleep(window.saturating_sub(written.elapsed()));
    assert_eq!(text(&b), 1, "a read {window:?} after the write sees it");
    let seen_after = seen_after.unwrap_or_else(|| written.elapsed());
    println!(
        "redis copy staleness: seen by the other handle after {seen_after:?} (window {window:?})"
    );
}

/// Another handle's writes are caught up from the change log (the records they name read
/// again), not by reloading the partition; a flush reloads it.
#[test]
fn another_handles_writes_are_caught_up_not_reloaded() {
    use muisti_core::{Filter, Namespace, Partition, Put, TextQuery};
    let Some(h) = harness() else { return };
    let exact = format!("{}&staleness_ms=0", h.url());
    let a = RedisStore::open(&exact).expect("a");
    let b = RedisStore::open(&exact).expect("b");
    let p = Partition::of(Namespace::default_ns());
    let search = |s: &RedisStore, q: &str| {
        s.text_search(&TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter: Filter::default(),
            limit: 50,
        })
        .expect("search")
        .len()
    };
    for i in 0..20 {
        a.put(Put::new(p.clone(), None, format!("note {i} about tea")))
            .expect("put");
    }
    assert_eq!(search(&b, "tea"), 20);
    assert_eq!(b.copy_counts(), (1, 0));
    let gone = a
        .list(&muisti_core::ListQuery {
            partition: p.clone(),
            filter: Filter::default(),
            after: None,
            limit: 1,
        })
        .expect("list")
        .items[0]
        .id;
    a.delete(&muisti_core::Locator::Id {
        tenant: p.tenant.clone(),
        id: gone,
    })
    .expect("delete");
    for i in 0..3 {
        a.put(Put::new(p.clone(), None, format!("more tea {i}")))
            .expect("put");
    }
    assert_eq!(search(&b, "tea"), 22);
    assert_eq!(b.copy_counts(), (1, 1), "caught up, not reloaded");
    a.flush(&p).expect("flush");
    assert_eq!(search(&b, "tea"), 0);
    assert_eq!(b.copy_counts().0, 2, "a flush reloads");
}
