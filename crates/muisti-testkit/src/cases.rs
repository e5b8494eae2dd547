//! The conformance cases. Each takes a fresh [`Harness`].

use std::{
    collections::BTreeSet,
    process::{Command, Stdio},
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use muisti_core::{
    Category, ErrorKind, Filter, Key, Limits, ListQuery, Locator, Memory, MemoryId, MemoryScope,
    Namespace, Owner, Partition, Patch, Put, Source, Store, Tenant, TextQuery, Timestamp, Ttl,
    UpdateRequest, WriteStatus, list_all,
};
use serde_json::{Value, json};

use crate::Harness;

/// A TTL long enough that a record is surely still there right after it is written, even on
/// a busy machine, and the wait after which it has surely expired.
const SHORT_TTL: Duration = Duration::from_millis(600);
const PAST_SHORT_TTL: Duration = Duration::from_millis(900);

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

fn key(s: &str) -> Key {
    Key::new(s).unwrap()
}

fn part(s: &str) -> Partition {
    Partition::of(ns(s))
}

fn at(p: &Partition, k: &str) -> Locator {
    Locator::Key {
        partition: p.clone(),
        key: key(k),
    }
}

fn set(store: &dyn Store, p: &Partition, k: &str, v: impl Into<Value>) -> Memory {
    store
        .put(Put::new(p.clone(), Some(key(k)), v))
        .unwrap()
        .memory
}

fn get_value(store: &dyn Store, p: &Partition, k: &str) -> Option<Value> {
    store.get(&at(p, k)).unwrap().map(|m| m.content)
}

fn keys_of(items: &[Memory]) -> Vec<String> {
    items.iter().map(|m| m.key.to_string()).collect()
}

/// Key-value entries hold any JSON value and read back equal.
pub fn kv_round_trip_of_json_values(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let values = [
        json!("gold tier customer"),
        json!(42),
        json!(1.5),
        json!(true),
        json!(null),
        json!([1, "two", {"three": 3}]),
        json!({"nested": {"list": [1, 2], "s": "x"}}),
    ];
    for (i, v) in values.iter().enumerate() {
        let w = s
            .put(Put::new(p.clone(), Some(key(&format!("k{i}"))), v.clone()))
            .unwrap();
        assert_eq!(w.status, WriteStatus::Created);
    }
    for (i, v) in values.iter().enumerate() {
        assert_eq!(
            get_value(&*s, &p, &format!("k{i}")).as_ref(),
            Some(v),
            "k{i}"
        );
    }
}

/// A missing key or id reads as `None`, and deleting it reports `false`.
pub fn get_missing_is_none(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    assert!(s.get(&at(&p, "nothing")).unwrap().is_none());
    let id = muisti_core::MemoryId::generate();
    let by_id = Locator::Id {
        tenant: Tenant::default(),
        id,
    };
    assert!(s.get(&by_id).unwrap().is_none());
    assert!(!s.delete(&at(&p, "nothing")).unwrap());
    assert!(!s.delete(&by_id).unwrap());
}

/// Writing an existing key replaces content and keeps id and `created_at`.
pub fn put_replaces_and_keeps_identity(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let first = set(&*s, &p, "city", "Porto");
    thread::sleep(Duration::from_millis(5));
    let w = s
        .put(Put::new(p.clone(), Some(key("city")), "Lisbon"))
        .unwrap();
    assert_eq!(w.status, WriteStatus::Updated);
    assert_eq!(w.memory.id, first.id);
    let got = s.get(&at(&p, "city")).unwrap().unwrap();
    assert_eq!(got.id, first.id);
    assert_eq!(got.content, json!("Lisbon"));
    assert_eq!(got.created_at, first.created_at);
    assert!(got.updated_at > first.updated_at);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
}

/// A write with no key creates a new record keyed by its id, every time.
pub fn put_without_key_creates(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = s
        .put(Put::new(p.clone(), None, "same text"))
        .unwrap()
        .memory;
    let b = s
        .put(Put::new(p.clone(), None, "same text"))
        .unwrap()
        .memory;
    assert_ne!(a.id, b.id);
    assert_eq!(a.key.as_str(), a.id.to_string());
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 2);
    let got = s.get(&at(&p, a.key.as_str())).unwrap().unwrap();
    assert_eq!(got.id, a.id);
}

/// An id is found in its own tenant and is invisible (reads, deletes) from any other.
pub fn get_by_id_is_confined_to_tenant(h: &dyn Harness) {
    let s = h.open();
    let mine = Partition::new(Tenant::new("acme").unwrap(), ns("default"));
    let m = set(&*s, &mine, "secret", "acme data");
    let own = Locator::Id {
        tenant: mine.tenant.clone(),
        id: m.id,
    };
    let other = Locator::Id {
        tenant: Tenant::new("globex").unwrap(),
        id: m.id,
    };
    assert_eq!(s.get(&own).unwrap().unwrap().key, key("secret"));
    assert!(s.get(&other).unwrap().is_none());
    assert!(!s.delete(&other).unwrap());
    assert!(s.get(&own).unwrap().is_some());
}

/// Delete by key and by id; a deleted record is gone for every read.
pub fn delete_by_key_and_by_id(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "1");
    let b = set(&*s, &p, "b", "2");
    assert!(s.delete(&at(&p, "a")).unwrap());
    assert!(s.get(&at(&p, "a")).unwrap().is_none());
    let a_by_id = Locator::Id {
        tenant: p.tenant.clone(),
        id: a.id,
    };
    assert!(s.get(&a_by_id).unwrap().is_none());
    let b_by_id = Locator::Id {
        tenant: p.tenant.clone(),
        id: b.id,
    };
    assert!(s.delete(&b_by_id).unwrap());
    assert!(s.get(&at(&p, "b")).unwrap().is_none());
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 0);
    // The key can be used again, with a new id.
    let again = set(&*s, &p, "a", "3");
    assert_ne!(again.id, a.id);
}

/// `flush` empties its partition and nothing else.
pub fn flush_clears_only_its_partition(h: &dyn Harness) {
    let s = h.open();
    let a = part("alpha");
    let b = part("beta");
    for i in 0..5 {
        set(&*s, &a, &format!("k{i}"), i);
    }
    set(&*s, &b, "k0", "kept");
    assert_eq!(s.flush(&a).unwrap(), 5);
    assert_eq!(s.count(&a, &Filter::default()).unwrap(), 0);
    assert!(s.get(&at(&a, "k0")).unwrap().is_none());
    assert_eq!(get_value(&*s, &b, "k0"), Some(json!("kept")));
    assert_eq!(s.flush(&a).unwrap(), 0);
}

/// `user:1`, `user.1` and `user_1` are three namespaces on every backend.
pub fn similar_namespaces_never_share_storage(h: &dyn Harness) {
    let s = h.open();
    let names = ["user:1", "user.1", "user_1", "User_1", "user-1"];
    for n in names {
        set(&*s, &part(n), "k", n);
    }
    for n in names {
        assert_eq!(get_value(&*s, &part(n), "k"), Some(json!(n)), "{n}");
        assert_eq!(s.count(&part(n), &Filter::default()).unwrap(), 1, "{n}");
    }
    s.flush(&part("user:1")).unwrap();
    assert!(get_value(&*s, &part("user:1"), "k").is_none());
    assert_eq!(get_value(&*s, &part("user.1"), "k"), Some(json!("user.1")));
    assert_eq!(get_value(&*s, &part("user_1"), "k"), Some(json!("user_1")));
}

/// The same namespace and key in two tenants are two records.
pub fn tenants_never_share_storage(h: &dyn Harness) {
    let s = h.open();
    let a = Partition::new(Tenant::new("a").unwrap(), ns("default"));
    let b = Partition::new(Tenant::new("b").unwrap(), ns("default"));
    set(&*s, &a, "k", "from a");
    set(&*s, &b, "k", "from b");
    assert_eq!(get_value(&*s, &a, "k"), Some(json!("from a")));
    assert_eq!(get_value(&*s, &b, "k"), Some(json!("from b")));
    s.flush(&a).unwrap();
    assert_eq!(get_value(&*s, &b, "k"), Some(json!("from b")));
    assert_eq!(
        s.namespaces(&Tenant::new("a").unwrap()).unwrap(),
        Vec::<Namespace>::new()
    );
    assert_eq!(
        s.namespaces(&Tenant::new("b").unwrap()).unwrap(),
        vec![ns("default")]
    );
}

fn seed_filtered(s: &dyn Store, p: &Partition) {
    let rows = [
        (
            "a",
            "u1",
            "s1",
            Category::Core,
            MemoryScope::LongTerm,
            vec!["x"],
            json!("red"),
        ),
        (
            "b",
            "u1",
            "s2",
            Category::Daily,
            MemoryScope::Episodic,
            vec!["x", "y"],
            json!("blue"),
        ),
        (
            "c",
            "u2",
            "s1",
            Category::Conversation,
            MemoryScope::ShortTerm,
            vec!["y"],
            json!("red"),
        ),
        (
            "d",
            "u2",
            "s2",
            Category::Custom("notes".into()),
            MemoryScope::Declarative,
            vec![],
            json!("green"),
        ),
    ];
    for (k, user, session, category, scope, tags, color) in rows {
        let mut put = Put::new(p.clone(), Some(key(k)), format!("memory {k}"))
            .with_category(category)
            .with_owner(Owner {
                user_id: Some(user.into()),
                agent_id: Some("agent".into()),
                session_id: Some(session.into()),
            });
        put.scope = scope;
        put.tags = tags.into_iter().map(String::from).collect();
        put.metadata.insert("color".into(), color);
        s.put(put).unwrap();
    }
}

fn listed(s: &dyn Store, p: &Partition, filter: Filter) -> Vec<String> {
    keys_of(&list_all(s, p, &filter).unwrap())
}

/// Listing filters by user, session, category, scope, tags and metadata, alone and together.
pub fn list_filters(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    seed_filtered(&*s, &p);
    let f = |f: Filter| listed(&*s, &p, f);
    assert_eq!(f(Filter::default()), ["a", "b", "c", "d"]);
    let user = |u: &str| Some(u.to_string());
    assert_eq!(
        f(Filter {
            user_id: user("u1"),
            ..Default::default()
        }),
        ["a", "b"]
    );
    assert_eq!(
        f(Filter {
            session_id: user("s1"),
            ..Default::default()
        }),
        ["a", "c"]
    );
    assert_eq!(
        f(Filter {
            user_id: user("u2"),
            session_id: user("s2"),
            ..Default::default()
        }),
        ["d"]
    );
    assert_eq!(
        f(Filter {
            agent_id: user("agent"),
            ..Default::default()
        })
        .len(),
        4
    );
    assert_eq!(
        f(Filter {
            agent_id: user("other"),
            ..Default::default()
        })
        .len(),
        0
    );
    assert_eq!(
        f(Filter {
            category: Some(Category::Daily),
            ..Default::default()
        }),
        ["b"]
    );
    assert_eq!(
        f(Filter {
            category: Some(Category::Custom("notes".into())),
            ..Default::default()
        }),
        ["d"]
    );
    assert_eq!(
        f(Filter {
            scope: Some(MemoryScope::ShortTerm),
            ..Default::default()
        }),
        ["c"]
    );
    assert_eq!(
        f(Filter {
            tags: vec!["x".into()],
            ..Default::default()
        }),
        ["a", "b"]
    );
    assert_eq!(
        f(Filter {
            tags: vec!["x".into(), "y".into()],
            ..Default::default()
        }),
        ["b"]
    );
    let mut md = serde_json::Map::new();
    md.insert("color".into(), json!("red"));
    assert_eq!(
        f(Filter {
            metadata: md.clone(),
            ..Default::default()
        }),
        ["a", "c"]
    );
    assert_eq!(
        f(Filter {
            metadata: md,
            user_id: user("u2"),
            ..Default::default()
        }),
        ["c"]
    );
    let future = Timestamp::now().plus(Duration::from_secs(3600));
    assert_eq!(
        f(Filter {
            created_after: Some(future),
            ..Default::default()
        })
        .len(),
        0
    );
    assert_eq!(
        f(Filter {
            created_before: Some(future),
            ..Default::default()
        })
        .len(),
        4
    );
}

/// Pages follow id order, never repeat or skip a record, and end with `next == None`.
pub fn list_pages_in_id_order(h: &dyn Harness) {
    let s = h.open();
    let p = part("paging");
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(set(&*s, &p, &format!("k{i:02}"), i).id);
    }
    let mut seen = Vec::new();
    let mut q = ListQuery {
        partition: p.clone(),
        limit: 10,
        ..Default::default()
    };
    let mut pages = 0;
    loop {
        let page = s.list(&q).unwrap();
        pages += 1;
        assert!(page.items.len() <= 10);
        seen.extend(page.items.iter().map(|m| m.id));
        match page.next {
            Some(n) => q.after = Some(n),
            None => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ids);
}

/// `count` honours filters and skips expired records.
pub fn count_follows_filters_and_expiry(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    seed_filtered(&*s, &p);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 4);
    let f = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    assert_eq!(s.count(&p, &f).unwrap(), 2);
    let f = Filter {
        tags: vec!["y".into()],
        ..Default::default()
    };
    assert_eq!(s.count(&p, &f).unwrap(), 2);
    s.put(
        Put::new(p.clone(), Some(key("short")), "x").with_ttl(Some(Ttl::new(SHORT_TTL).unwrap())),
    )
    .unwrap();
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 5);
    thread::sleep(PAST_SHORT_TTL);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 4);
}

/// `namespaces` lists the non-empty namespaces of a tenant, sorted.
pub fn namespaces_lists_non_empty(h: &dyn Harness) {
    let s = h.open();
    let t = Tenant::default();
    assert!(s.namespaces(&t).unwrap().is_empty());
    set(&*s, &part("zeta"), "k", 1);
    set(&*s, &part("alpha"), "k", 1);
    set(&*s, &part("mid:1"), "k", 1);
    assert_eq!(
        s.namespaces(&t).unwrap(),
        vec![ns("alpha"), ns("mid:1"), ns("zeta")]
    );
    s.flush(&part("zeta")).unwrap();
    assert_eq!(s.namespaces(&t).unwrap(), vec![ns("alpha"), ns("mid:1")]);
}

/// An expired record is gone from get (key and id), list, count and search, and its key
/// starts afresh.
pub fn ttl_expires_everywhere(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let ttl = Ttl::new(SHORT_TTL).unwrap();
    let w = s
        .put(Put::new(p.clone(), Some(key("temp")), "ephemeral lisbon note").with_ttl(Some(ttl)))
        .unwrap()
        .memory;
    set(&*s, &p, "keep", "permanent lisbon note");
    assert!(w.expires_at.is_some());
    assert!(s.get(&at(&p, "temp")).unwrap().is_some());
    let started = Instant::now();
    thread::sleep(PAST_SHORT_TTL);
    assert!(started.elapsed() >= PAST_SHORT_TTL);
    assert!(s.get(&at(&p, "temp")).unwrap().is_none());
    let by_id = Locator::Id {
        tenant: p.tenant.clone(),
        id: w.id,
    };
    assert!(s.get(&by_id).unwrap().is_none());
    assert_eq!(listed(&*s, &p, Filter::default()), ["keep"]);
    let hits = text_hits(&*s, &p, "lisbon note", Filter::default());
    assert_eq!(keys_of(&hits), ["keep"]);
    let again = s
        .put(Put::new(p.clone(), Some(key("temp")), "new"))
        .unwrap();
    assert_eq!(again.status, WriteStatus::Created);
    assert_ne!(again.memory.id, w.id);
    assert!(again.memory.expires_at.is_none());
}

/// With no TTL a record has no expiry, and replacing it with a TTL sets one (and back).
pub fn ttl_absent_never_expires(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = set(&*s, &p, "k", "v");
    assert!(m.expires_at.is_none());
    let got = s.get(&at(&p, "k")).unwrap().unwrap();
    assert!(got.expires_at.is_none());
    let ttl = Ttl::from_secs(3600).unwrap();
    s.put(Put::new(p.clone(), Some(key("k")), "v").with_ttl(Some(ttl)))
        .unwrap();
    assert!(s.get(&at(&p, "k")).unwrap().unwrap().expires_at.is_some());
    s.put(Put::new(p.clone(), Some(key("k")), "v")).unwrap();
    assert!(s.get(&at(&p, "k")).unwrap().unwrap().expires_at.is_none());
}

/// `purge_expired` leaves no expired record behind (natively expiring stores may report 0).
pub fn purge_removes_expired(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let ttl = Ttl::new(Duration::from_millis(100)).unwrap();
    for i in 0..3 {
        s.put(Put::new(p.clone(), Some(key(&format!("t{i}"))), i).with_ttl(Some(ttl)))
            .unwrap();
    }
    set(&*s, &p, "keep", 1);
    thread::sleep(Duration::from_millis(250));
    let purged = s.purge_expired().unwrap();
    assert!(purged <= 3);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
    assert_eq!(s.purge_expired().unwrap(), 0);
}

/// A value over the limit is rejected with `TooLarge` and nothing is written or replaced.
pub fn too_large_is_rejected_and_writes_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    set(&*s, &p, "k", "small");
    let big = "x".repeat(Limits::default().max_value_bytes + 1);
    let err = s
        .put(Put::new(p.clone(), Some(key("k")), big.clone()))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    let err = s
        .put(Put::new(p.clone(), Some(key("new")), big))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert_eq!(get_value(&*s, &p, "k"), Some(json!("small")));
    assert!(s.get(&at(&p, "new")).unwrap().is_none());
}

/// The size limit is configurable per store.
pub fn limit_is_configurable(h: &dyn Harness) {
    let s = h.open_with_limits(Limits {
        max_value_bytes: 64,
    });
    assert_eq!(s.limits().max_value_bytes, 64);
    let p = part("default");
    set(&*s, &p, "ok", "x".repeat(40));
    let err = s
        .put(Put::new(p.clone(), Some(key("big")), "x".repeat(100)))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooLarge);
    assert!(s.get(&at(&p, "big")).unwrap().is_none());
}

/// Invalid fields are rejected as invalid input and change nothing.
pub fn invalid_fields_write_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    set(&*s, &p, "k", "before");
    let mut bad = Put::new(p.clone(), Some(key("k")), "after");
    bad.importance = Some(2.0);
    assert_eq!(s.put(bad).unwrap_err().kind(), ErrorKind::InvalidInput);
    let mut bad = Put::new(p.clone(), Some(key("k")), "after");
    bad.confidence = Some(150);
    assert_eq!(s.put(bad).unwrap_err().kind(), ErrorKind::InvalidInput);
    let mut bad = Put::new(p.clone(), Some(key("k")), "after");
    bad.owner.user_id = Some(String::new());
    assert_eq!(s.put(bad).unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(get_value(&*s, &p, "k"), Some(json!("before")));
}

/// `put_many` writes every item.
pub fn put_many_writes_all(h: &dyn Harness) {
    let s = h.open();
    let p = part("batch");
    let puts: Vec<_> = (0..200)
        .map(|i| Put::new(p.clone(), Some(key(&format!("k{i}"))), format!("value {i}")))
        .collect();
    let written = s.put_many(puts).unwrap();
    assert_eq!(written.len(), 200);
    assert!(written.iter().all(|w| w.status == WriteStatus::Created));
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 200);
    assert_eq!(get_value(&*s, &p, "k199"), Some(json!("value 199")));
}

/// A batch with one invalid item writes nothing.
pub fn put_many_validates_before_writing(h: &dyn Harness) {
    let s = h.open();
    let p = part("batch");
    let mut puts: Vec<_> = (0..10)
        .map(|i| Put::new(p.clone(), Some(key(&format!("k{i}"))), i))
        .collect();
    puts[7].importance = Some(-1.0);
    assert_eq!(
        s.put_many(puts).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 0);
}

/// `touch` counts accesses without changing `updated_at`; ids of other tenants are ignored.
pub fn touch_counts_access(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = set(&*s, &p, "k", "v");
    assert_eq!(m.access_count, 0);
    assert!(m.last_accessed_at.is_none());
    let t = Timestamp::now();
    s.touch(&p.tenant, &[m.id], t).unwrap();
    s.touch(&p.tenant, &[m.id], t).unwrap();
    s.touch(&Tenant::new("other").unwrap(), &[m.id], t).unwrap();
    let got = s.get(&at(&p, "k")).unwrap().unwrap();
    assert_eq!(got.access_count, 2);
    assert_eq!(got.last_accessed_at, Some(t));
    assert_eq!(got.updated_at, m.updated_at);
    // Replacing the content keeps the access statistics.
    s.put(Put::new(p.clone(), Some(key("k")), "v2")).unwrap();
    assert_eq!(s.get(&at(&p, "k")).unwrap().unwrap().access_count, 2);
}

/// The records a full-text search of `query` finds in `p`, best first.
fn text_hits(s: &dyn Store, p: &Partition, query: &str, filter: Filter) -> Vec<Memory> {
    let found = s
        .text_search(&TextQuery {
            partition: p.clone(),
            query: query.into(),
            filter,
            limit: 10,
        })
        .unwrap();
    let ids: Vec<MemoryId> = found.iter().map(|f| f.id).collect();
    s.get_many(&p.tenant, &ids).unwrap()
}

/// The seed's example: shared words of three or more letters rank; the key never matches.
pub fn search_ranks_by_token_overlap(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    set(&*s, &p, "customer_tier", "gold tier customer");
    set(
        &*s,
        &p,
        "discount_rule",
        "gold customer discount is 10 percent",
    );
    set(&*s, &p, "preferred_language", "French language preferred");
    let all = muisti_core::list_all(&*s, &p, &Filter::default()).unwrap();
    let hits = muisti_core::rank::token_overlap(
        all.clone(),
        "What discount do I get for my customer tier?",
        3,
    );
    let keys: BTreeSet<_> = hits.iter().map(|h| h.memory.key.to_string()).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["customer_tier".to_string(), "discount_rule".to_string()])
    );
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hits = muisti_core::rank::token_overlap(all, "preferred", 1);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].memory.key, key("preferred_language"));
}

/// Search never returns a record from another namespace, tenant, or outside the filter.
pub fn search_is_confined_to_partition_and_filter(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let other_ns = part("conversations");
    let other_tenant = Partition::new(Tenant::new("other").unwrap(), ns("default"));
    set(&*s, &other_ns, "c", "lisbon apartment");
    set(&*s, &other_tenant, "t", "lisbon apartment");
    let mut put = Put::new(p.clone(), Some(key("mine")), "lisbon apartment");
    put.owner.user_id = Some("u1".into());
    s.put(put).unwrap();
    let mut put = Put::new(p.clone(), Some(key("theirs")), "lisbon apartment");
    put.owner.user_id = Some("u2".into());
    s.put(put).unwrap();
    let filter = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    let hits = text_hits(&*s, &p, "lisbon apartment", filter);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].key, key("mine"));
    assert_eq!(hits[0].partition, p);
}

/// Every field of the record reads back exactly as written.
pub fn all_fields_round_trip(h: &dyn Harness) {
    let s = h.open();
    let p = Partition::new(Tenant::new("t-1").unwrap(), ns("ns.with:all_chars-1"));
    let mut put = Put::new(p.clone(), Some(key("full")), "I moved to Lisbon in March");
    put.category = Category::Custom("travel".into());
    put.scope = MemoryScope::Declarative;
    put.owner = Owner {
        user_id: Some("user-1".into()),
        agent_id: Some("agent-1".into()),
        session_id: Some("session-1".into()),
    };
    put.tags = vec!["move".into(), "city".into()];
    put.metadata.insert("dia_id".into(), json!("D1:3"));
    put.metadata
        .insert("n".into(), json!({"deep": [1, 2.5, null]}));
    put.importance = Some(0.9);
    put.source = Source::AgentLearned;
    put.confidence = Some(70);
    put.valid_from = Some(Timestamp::from_millis(1_700_000_000_000));
    put.valid_until = Some(Timestamp::from_millis(1_800_000_000_000));
    put.embedding_model = Some("builtin-minilm-256".into());
    put.context = Some("Where do you live these days?".into());
    put.ttl = Some(Ttl::from_secs(3600).unwrap());
    let written = s.put(put).unwrap().memory;
    let got = s.get(&at(&p, "full")).unwrap().unwrap();
    assert_eq!(got, written);
    let by_id = s
        .get(&Locator::Id {
            tenant: p.tenant.clone(),
            id: written.id,
        })
        .unwrap()
        .unwrap();
    assert_eq!(by_id, written);
    assert_eq!(
        list_all(&*s, &p, &Filter::default()).unwrap(),
        vec![written]
    );
}

/// Keys and content with any Unicode text (but control characters) round-trip.
pub fn unicode_keys_and_content(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let keys = [
        "città",
        "東京/渋谷",
        "emoji 🎉",
        "a:b",
        "with spaces",
        "*?[glob]",
        "'\"quote",
    ];
    for k in keys {
        set(&*s, &p, k, format!("value of {k} ✓"));
    }
    for k in keys {
        assert_eq!(
            get_value(&*s, &p, k),
            Some(json!(format!("value of {k} ✓"))),
            "{k}"
        );
    }
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), keys.len() as u64);
}

/// Threads writing distinct keys at once lose no write.
pub fn concurrent_writers_lose_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("concurrent");
    let threads = 8;
    let per = 40;
    thread::scope(|scope| {
        for t in 0..threads {
            let s = Arc::clone(&s);
            let p = p.clone();
            scope.spawn(move || {
                for i in 0..per {
                    s.put(Put::new(p.clone(), Some(key(&format!("t{t}-{i}"))), i))
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(
        s.count(&p, &Filter::default()).unwrap(),
        (threads * per) as u64
    );
    for t in 0..threads {
        for i in 0..per {
            assert_eq!(get_value(&*s, &p, &format!("t{t}-{i}")), Some(json!(i)));
        }
    }
}

/// Threads writing the same key at once leave exactly one record holding one of the values.
pub fn concurrent_upserts_keep_one_record(h: &dyn Harness) {
    let s = h.open();
    let p = part("concurrent");
    thread::scope(|scope| {
        for t in 0..6 {
            let s = Arc::clone(&s);
            let p = p.clone();
            scope.spawn(move || {
                for i in 0..30 {
                    s.put(Put::new(p.clone(), Some(key("shared")), t * 100 + i))
                        .unwrap();
                }
            });
        }
    });
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 1);
    let v = get_value(&*s, &p, "shared").unwrap();
    assert!(v.as_i64().is_some_and(|n| n % 100 < 30 && n / 100 < 6));
}

/// The health check answers.
pub fn health_check_ok(h: &dyn Harness) {
    let s = h.open();
    let health = s.health_check();
    assert!(health.ok, "{}", health.detail);
    assert!(!s.info().backend.is_empty());
}

/// Data written through one handle is read back through a new one, as by a new process.
pub fn data_survives_reopen(h: &dyn Harness) {
    let p = part("persist");
    let written = {
        let s = h.open();
        let m = set(&*s, &p, "k", json!({"v": 1}));
        set(&*s, &part("user:1"), "k", "v");
        set(&*s, &part("user_1"), "k", "w");
        s.touch(&p.tenant, &[m.id], Timestamp::now()).unwrap();
        s.get(&at(&p, "k")).unwrap().unwrap()
    };
    let s = h.open();
    assert_eq!(s.get(&at(&p, "k")).unwrap().unwrap(), written);
    assert_eq!(get_value(&*s, &part("user:1"), "k"), Some(json!("v")));
    assert_eq!(get_value(&*s, &part("user_1"), "k"), Some(json!("w")));
}

const CHILD_LOCATION: &str = "MUISTI_CONFORMANCE_LOCATION";
const CHILD_ID: &str = "MUISTI_CONFORMANCE_CHILD";
const CHILD_WRITES: usize = 60;

/// Several processes write to the same store at once; every write is there afterwards.
/// `child_test` is the full name of the test that runs [`child_writer`] in the same binary.
pub fn multi_process_writers_lose_nothing(h: &dyn Harness, child_test: &str) {
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let exe = std::env::current_exe().unwrap();
    let children = 4;
    let mut running = Vec::new();
    for c in 0..children {
        let child = Command::new(&exe)
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .env(CHILD_LOCATION, &location)
            .env(CHILD_ID, c.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        running.push(child);
    }
    for child in running {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer process failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = h.open();
    let p = part("multiproc");
    // Each child's own keys, plus the one key they all fought over.
    assert_eq!(
        s.count(&p, &Filter::default()).unwrap(),
        (children * CHILD_WRITES + 1) as u64
    );
    for c in 0..children {
        for i in 0..CHILD_WRITES {
            assert_eq!(get_value(&*s, &p, &format!("c{c}-{i}")), Some(json!(i)));
        }
    }
    assert_eq!(
        get_value(&*s, &p, "shared")
            .and_then(|v| v.as_u64())
            .map(|v| v < children as u64),
        Some(true)
    );
}

const CHILD_MODE: &str = "MUISTI_CONFORMANCE_MODE";

/// A writer process is killed (SIGKILL on Unix) in the middle of writing; every write it had
/// acknowledged is there afterwards and the store still reads and writes.
pub fn killed_writer_loses_no_acknowledged_write(h: &dyn Harness, child_test: &str) {
    use std::io::{BufRead, BufReader};
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([child_test, "--exact", "--ignored", "--nocapture"])
        .env(CHILD_LOCATION, &location)
        .env(CHILD_ID, "0")
        .env(CHILD_MODE, "until-killed")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(k) = line.strip_prefix("ack ") {
            acked.push(k.to_owned());
        }
        if acked.len() >= 150 || Instant::now() > deadline {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        acked.len() >= 150,
        "the writer acknowledged only {} writes",
        acked.len()
    );
    let s = h.open_at(&location);
    let p = part("killed");
    for k in &acked {
        assert!(
            s.get(&at(&p, k)).unwrap().is_some(),
            "acknowledged {k} is lost"
        );
    }
    let all = list_all(&*s, &p, &Filter::default()).unwrap();
    assert!(all.len() >= acked.len());
    set(&*s, &p, "after", "still writable");
    assert_eq!(get_value(&*s, &p, "after"), Some(json!("still writable")));
}

/// The writer run in each child process of [`multi_process_writers_lose_nothing`] and
/// [`killed_writer_loses_no_acknowledged_write`].
pub fn child_writer(h: &dyn Harness) {
    use std::io::Write;
    let location = std::env::var(CHILD_LOCATION).expect("run by a multi-process case");
    let id: usize = std::env::var(CHILD_ID).unwrap().parse().unwrap();
    let s = h.open_at(&location);
    if std::env::var(CHILD_MODE).is_ok_and(|m| m == "increment") {
        let p = part("race");
        for _ in 0..INCREMENTS {
            increment(&*s, &p);
        }
        return;
    }
    if std::env::var(CHILD_MODE).is_ok_and(|m| m == "until-killed") {
        let p = part("killed");
        let mut out = std::io::stdout().lock();
        // Bounded: the parent kills it long before.
        for i in 0..1_000_000 {
            s.put(Put::new(
                p.clone(),
                Some(key(&format!("k{i}"))),
                format!("value {i}"),
            ))
            .unwrap();
            writeln!(out, "ack k{i}").unwrap();
            out.flush().unwrap();
        }
        return;
    }
    let p = part("multiproc");
    for i in 0..CHILD_WRITES {
        s.put(Put::new(p.clone(), Some(key(&format!("c{id}-{i}"))), i))
            .unwrap();
        // All children also fight over one key.
        s.put(Put::new(p.clone(), Some(key("shared")), id)).unwrap();
    }
}

/// Random puts, replaces, deletes (by key and by id) and flushes over a few namespaces and
/// keys, checked after every step against a `BTreeMap` model.
pub fn random_operations_match_a_model(h: &dyn Harness) {
    use std::collections::BTreeMap;
    let s = h.open();
    let namespaces = ["m:1", "m.1", "m_1"];
    let keys = ["a", "b", "c", "d", "e"];
    let mut model: BTreeMap<(usize, usize), (Value, muisti_core::MemoryId)> = BTreeMap::new();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n) as usize
    };
    for step in 0..300 {
        let n = next(namespaces.len() as u64);
        let k = next(keys.len() as u64);
        let p = part(namespaces[n]);
        match next(10) {
            0..=4 => {
                let v = json!({"step": step});
                let w = s
                    .put(Put::new(p.clone(), Some(key(keys[k])), v.clone()))
                    .unwrap();
                let expected = if model.contains_key(&(n, k)) {
                    WriteStatus::Updated
                } else {
                    WriteStatus::Created
                };
                assert_eq!(w.status, expected, "step {step}");
                if let Some((_, id)) = model.get(&(n, k)) {
                    assert_eq!(w.memory.id, *id, "step {step}: replace keeps the id");
                }
                model.insert((n, k), (v, w.memory.id));
            }
            5 | 6 => {
                let existed = s.delete(&at(&p, keys[k])).unwrap();
                assert_eq!(existed, model.remove(&(n, k)).is_some(), "step {step}");
            }
            7 => {
                if let Some((_, id)) = model.remove(&(n, k)) {
                    let by_id = Locator::Id {
                        tenant: p.tenant.clone(),
                        id,
                    };
                    assert!(s.delete(&by_id).unwrap(), "step {step}");
                }
            }
            8 if next(4) == 0 => {
                let expected = model.keys().filter(|(mn, _)| *mn == n).count() as u64;
                assert_eq!(s.flush(&p).unwrap(), expected, "step {step}");
                model.retain(|(mn, _), _| *mn != n);
            }
            _ => {}
        }
        // The whole store agrees with the model.
        for (ni, name) in namespaces.iter().enumerate() {
            let listed = list_all(&*s, &part(name), &Filter::default()).unwrap();
            let want: Vec<(String, Value)> = model
                .iter()
                .filter(|((mn, _), _)| *mn == ni)
                .map(|((_, mk), (v, _))| (keys[*mk].to_string(), v.clone()))
                .collect();
            let mut got: Vec<(String, Value)> = listed
                .into_iter()
                .map(|m| (m.key.to_string(), m.content))
                .collect();
            got.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want, "step {step}, namespace {name}");
        }
    }
}

fn put_vec(s: &dyn Store, p: &Partition, k: &str, text: &str, v: &[f32]) -> Memory {
    let mut put = Put::new(p.clone(), Some(key(k)), text);
    put.embedding_model = Some("test-model".into());
    let mut v = v.to_vec();
    muisti_core::text::normalize(&mut v);
    put.embedding = Some(v);
    s.put(put).unwrap().memory
}

/// Vectors are stored beside their records, replaced and removed with them, and filtered
/// like them.
pub fn vectors_follow_their_records(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = put_vec(&*s, &p, "a", "alpha", &[1.0, 0.0, 0.0, 0.0]);
    let b = put_vec(&*s, &p, "b", "beta", &[0.0, 1.0, 0.0, 0.0]);
    put_vec(&*s, &part("other"), "c", "gamma", &[0.0, 0.0, 1.0, 0.0]);
    set(&*s, &p, "plain", "no vector");
    let mut got = s.vectors(&p, &Filter::default()).unwrap();
    got.sort_by_key(|v| v.id);
    assert_eq!(got.len(), 2);
    assert_eq!((got[0].id, got[1].id), (a.id, b.id));
    assert_eq!(got[0].model, "test-model");
    assert_eq!(got[0].vector, vec![1.0, 0.0, 0.0, 0.0]);
    // The record itself does not carry the vector.
    assert_eq!(a.embedding_model.as_deref(), Some("test-model"));
    // Replacing without a vector drops it; deleting drops it.
    s.put(Put::new(p.clone(), Some(key("a")), "alpha, no vector"))
        .unwrap();
    assert!(s.delete(&at(&p, "b")).unwrap());
    assert!(s.vectors(&p, &Filter::default()).unwrap().is_empty());
    // Filters apply, and an expired record's vector is gone with it.
    let mut put = Put::new(p.clone(), Some(key("u1")), "user one");
    put.owner.user_id = Some("u1".into());
    put.embedding_model = Some("test-model".into());
    put.embedding = Some(vec![0.0, 0.0, 0.0, 1.0]);
    s.put(put).unwrap();
    let mut put = Put::new(p.clone(), Some(key("brief")), "short lived");
    put.embedding_model = Some("test-model".into());
    put.embedding = Some(vec![0.0, 0.0, 1.0, 0.0]);
    put.ttl = Some(Ttl::new(SHORT_TTL).unwrap());
    s.put(put).unwrap();
    let only_u1 = Filter {
        user_id: Some("u1".into()),
        ..Default::default()
    };
    assert_eq!(s.vectors(&p, &only_u1).unwrap().len(), 1);
    assert_eq!(s.vectors(&p, &Filter::default()).unwrap().len(), 2);
    thread::sleep(PAST_SHORT_TTL);
    assert_eq!(s.vectors(&p, &Filter::default()).unwrap().len(), 1);
    // A vector without the id of its model is refused.
    let mut bad = Put::new(p.clone(), Some(key("x")), "x");
    bad.embedding = Some(vec![1.0]);
    assert_eq!(s.put(bad).unwrap_err().kind(), ErrorKind::InvalidInput);
}

/// Nearest neighbours by dot product, within the partition and filter.
pub fn vector_search_finds_nearest(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let east = put_vec(&*s, &p, "east", "e", &[1.0, 0.1, 0.0]);
    let north = put_vec(&*s, &p, "north", "n", &[0.1, 1.0, 0.0]);
    put_vec(&*s, &p, "up", "u", &[0.0, 0.1, 1.0]);
    put_vec(&*s, &part("elsewhere"), "east2", "e", &[1.0, 0.0, 0.0]);
    let mut q = vec![0.9, 0.3, 0.0];
    muisti_core::text::normalize(&mut q);
    let hits = s
        .vector_search(&muisti_core::VectorQuery {
            partition: p.clone(),
            vector: q,
            filter: Filter::default(),
            limit: 2,
        })
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.id).collect::<Vec<_>>(),
        [east.id, north.id]
    );
    assert!(hits[0].score > hits[1].score && hits[0].score <= 1.0001);
}

/// BM25 over key and content: rare shared words rank first, a key names what its value is
/// about, and nothing crosses partitions or filters.
pub fn text_search_ranks_by_bm25(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let tier = set(&*s, &p, "customer_tier", "gold");
    let rule = set(
        &*s,
        &p,
        "discount_rule",
        "gold customer discount is 10 percent",
    );
    set(&*s, &p, "preferred_language", "French language preferred");
    let moved = s
        .put(Put::new(p.clone(), None, "I moved to Lisbon in March"))
        .unwrap()
        .memory;
    set(
        &*s,
        &part("conversations"),
        "c",
        "discount customer tier lisbon",
    );
    let search = |q: &str, limit: usize, filter: Filter| {
        s.text_search(&muisti_core::TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter,
            limit,
        })
        .unwrap()
    };
    let hits = search(
        "What discount do we get for our customer tier?",
        5,
        Filter::default(),
    );
    let ids: Vec<_> = hits.iter().map(|h| h.id).collect();
    assert_eq!(ids.len(), 2, "{hits:?}");
    assert!(ids.contains(&tier.id) && ids.contains(&rule.id));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    let hits = search("lisbon", 5, Filter::default());
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [moved.id]);
    assert!(search("", 5, Filter::default()).is_empty());
    assert!(search("?!", 5, Filter::default()).is_empty());
    let none = Filter {
        user_id: Some("nobody".into()),
        ..Default::default()
    };
    assert!(search("lisbon", 5, none).is_empty());
    let tagged = Filter {
        tags: vec!["missing".into()],
        ..Default::default()
    };
    assert!(search("lisbon", 5, tagged).is_empty());
    // Deleted and replaced records leave the index.
    s.delete(&Locator::Id {
        tenant: p.tenant.clone(),
        id: moved.id,
    })
    .unwrap();
    assert!(search("lisbon", 5, Filter::default()).is_empty());
    set(&*s, &p, "customer_tier", "platinum");
    assert!(
        search("gold", 5, Filter::default())
            .iter()
            .all(|h| h.id != tier.id)
    );
    assert_eq!(search("platinum", 5, Filter::default())[0].id, tier.id);
    s.flush(&p).unwrap();
    assert!(search("discount", 5, Filter::default()).is_empty());
}

/// A memory's context is searchable, at a lower weight than content.
pub fn text_search_reads_context(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut answer = Put::new(p.clone(), None, "Five years already!");
    answer.context = Some("How long have you been married?".into());
    let answer = s.put(answer).unwrap().memory;
    let stated = s
        .put(Put::new(p.clone(), None, "We married in spring"))
        .unwrap()
        .memory;
    let search = |q: &str| {
        s.text_search(&muisti_core::TextQuery {
            partition: p.clone(),
            query: q.into(),
            filter: Filter::default(),
            limit: 5,
        })
        .unwrap()
        .iter()
        .map(|h| h.id)
        .collect::<Vec<_>>()
    };
    assert_eq!(search("how long"), [answer.id]);
    assert_eq!(
        search("married"),
        [stated.id, answer.id],
        "content outweighs context"
    );
}

/// `get_many` returns live records of the tenant in the order asked, skipping the rest.
pub fn get_many_keeps_order(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", 1);
    let b = set(&*s, &part("other"), "b", 2);
    let c = set(&*s, &p, "c", 3);
    let foreign = set(
        &*s,
        &Partition::new(Tenant::new("t2").unwrap(), ns("default")),
        "d",
        4,
    );
    let got = s
        .get_many(
            &p.tenant,
            &[
                c.id,
                foreign.id,
                a.id,
                b.id,
                muisti_core::MemoryId::generate(),
            ],
        )
        .unwrap();
    assert_eq!(
        got.iter().map(|m| m.id).collect::<Vec<_>>(),
        [c.id, a.id, b.id]
    );
}

/// `tenants` lists tenants with live records; `set_vectors` replaces vectors of existing
/// records only, leaving everything else (`updated_at` included) as it was.
pub fn tenants_and_set_vectors(h: &dyn Harness) {
    let s = h.open();
    let t1 = Partition::new(Tenant::new("t1").unwrap(), ns("default"));
    let t2 = Partition::new(Tenant::new("t2").unwrap(), ns("other"));
    assert!(s.tenants().unwrap().is_empty());
    let a = put_vec(&*s, &t1, "a", "alpha", &[1.0, 0.0]);
    set(&*s, &t2, "b", "beta");
    assert_eq!(
        s.tenants().unwrap(),
        vec![Tenant::new("t1").unwrap(), Tenant::new("t2").unwrap()]
    );
    let v = muisti_core::StoredVector {
        id: a.id,
        model: "model-2".into(),
        vector: vec![0.0, 1.0],
    };
    let foreign = muisti_core::StoredVector {
        id: muisti_core::MemoryId::generate(),
        model: "model-2".into(),
        vector: vec![1.0, 1.0],
    };
    // Another tenant's id is not touched.
    assert_eq!(
        s.set_vectors(&t2.tenant, std::slice::from_ref(&v)).unwrap(),
        0
    );
    assert_eq!(s.set_vectors(&t1.tenant, &[v.clone(), foreign]).unwrap(), 1);
    let got = s.vectors(&t1, &Filter::default()).unwrap();
    assert_eq!(got, vec![v]);
    let after = s.get(&at(&t1, "a")).unwrap().unwrap();
    assert_eq!(after.embedding_model.as_deref(), Some("model-2"));
    assert_eq!(after.updated_at, a.updated_at);
    assert_eq!(after.content, a.content);
    s.flush(&t2).unwrap();
    assert_eq!(s.tenants().unwrap(), vec![Tenant::new("t1").unwrap()]);
}

// ---- atomic updates ----

fn by_id(m: &Memory) -> Locator {
    Locator::Id {
        tenant: m.partition.tenant.clone(),
        id: m.id,
    }
}

/// An update changes only the patched fields, keeps identity, creation time and access
/// statistics, moves the version up by one, and is found by full-text search under its new
/// text only; a replacing `put` moves the version too.
pub fn update_changes_fields_and_bumps_version(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let first = set(&*s, &p, "city", "I live in Lisbon");
    assert_eq!(first.version, 1);
    s.touch(&p.tenant, &[first.id], Timestamp::now()).unwrap();
    let patch = Patch {
        content: Some(json!("I live in Porto")),
        tags: Some(vec!["home".into()]),
        user_id: Some(Some("u2".into())),
        importance: Some(0.9),
        ..Patch::default()
    };
    let m = s.update(&UpdateRequest::new(by_id(&first), patch)).unwrap();
    assert_eq!(
        (m.id, m.key.clone(), m.created_at),
        (first.id, first.key.clone(), first.created_at)
    );
    assert_eq!(m.version, 2);
    assert_eq!(m.content, json!("I live in Porto"));
    assert_eq!(m.tags, ["home"]);
    assert_eq!(m.owner.user_id.as_deref(), Some("u2"));
    assert_eq!(m.importance, 0.9);
    assert_eq!(m.content_hash, muisti_core::content_hash("I live in Porto"));
    let stored = s.get(&at(&p, "city")).unwrap().unwrap();
    assert_eq!(stored, m.clone());
    assert_eq!(stored.access_count, 1);
    assert!(text_hits(&*s, &p, "porto", Filter::default()).len() == 1);
    assert!(text_hits(&*s, &p, "lisbon", Filter::default()).is_empty());
    let moved = Filter {
        user_id: Some("u2".into()),
        ..Filter::default()
    };
    assert_eq!(s.count(&p, &moved).unwrap(), 1);
    // By key, with the version just read.
    let m = s
        .update(
            &UpdateRequest::new(
                at(&p, "city"),
                Patch {
                    context: Some(Some("asked where I live".into())),
                    ..Patch::default()
                },
            )
            .expecting(Some(2)),
        )
        .unwrap();
    assert_eq!(m.version, 3);
    assert_eq!(m.content, json!("I live in Porto"));
    let replaced = set(&*s, &p, "city", "I live in Faro");
    assert_eq!((replaced.id, replaced.version), (first.id, 4));
}

/// A stale expected version is a conflict; a missing, expired or other tenant's record is
/// not found; an invalid patch is invalid input. None of them changes anything.
pub fn update_refusals_change_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = set(&*s, &p, "k", "original");
    let patch = Patch {
        content: Some(json!("changed")),
        ..Patch::default()
    };
    let v2 = s
        .update(&UpdateRequest::new(by_id(&m), patch.clone()).expecting(Some(1)))
        .unwrap();
    assert_eq!(v2.version, 2);
    let stale = s.update(
        &UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("lost")),
                ..Patch::default()
            },
        )
        .expecting(Some(1)),
    );
    assert_eq!(stale.unwrap_err().kind(), ErrorKind::Conflict);
    let bad = s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            importance: Some(2.0),
            ..Patch::default()
        },
    ));
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::InvalidInput);
    let self_superseding = s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            state: Some(muisti_core::MemoryState::Superseded),
            ..Patch::default()
        },
    ));
    assert_eq!(
        self_superseding.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let stored = s.get(&by_id(&m)).unwrap().unwrap();
    assert_eq!((stored.content, stored.version), (json!("changed"), 2));
    let other = Locator::Id {
        tenant: Tenant::new("other").unwrap(),
        id: m.id,
    };
    let missing = s.update(&UpdateRequest::new(other, patch.clone()));
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let missing = s.update(&UpdateRequest::new(at(&p, "nothing here"), patch.clone()));
    assert_eq!(missing.unwrap_err().kind(), ErrorKind::NotFound);
    let expired = s
        .put(
            Put::new(p.clone(), Some(key("gone")), "short-lived")
                .with_ttl(Some(Ttl::new(SHORT_TTL).unwrap())),
        )
        .unwrap()
        .memory;
    thread::sleep(PAST_SHORT_TTL);
    let gone = s.update(&UpdateRequest::new(by_id(&expired), patch));
    assert_eq!(gone.unwrap_err().kind(), ErrorKind::NotFound);
    assert!(s.get(&at(&p, "gone")).unwrap().is_none());
}

/// State changes: superseded names its successor; back to active clears it; archived
/// records stay readable by id. A TTL given by an update counts from the update.
pub fn update_moves_state_and_expiry(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let old = set(&*s, &p, "old", "I live in Lisbon");
    let new = set(&*s, &p, "new", "I live in Porto");
    let m = s
        .update(&UpdateRequest::new(
            by_id(&old),
            Patch {
                state: Some(muisti_core::MemoryState::Superseded),
                superseded_by: Some(new.id),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(m.state, muisti_core::MemoryState::Superseded);
    assert_eq!(m.superseded_by, Some(new.id));
    assert_eq!(
        s.get(&by_id(&old)).unwrap().unwrap().superseded_by,
        Some(new.id)
    );
    let m = s
        .update(&UpdateRequest::new(
            by_id(&old),
            Patch {
                state: Some(muisti_core::MemoryState::Archived),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(
        (m.state, m.superseded_by),
        (muisti_core::MemoryState::Archived, None)
    );
    let m = s
        .update(&UpdateRequest::new(
            by_id(&new),
            Patch {
                ttl: Some(Some(Ttl::new(SHORT_TTL).unwrap())),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert!(m.expires_at.is_some());
    thread::sleep(PAST_SHORT_TTL);
    assert!(s.get(&by_id(&new)).unwrap().is_none());
    assert!(s.get(&by_id(&old)).unwrap().is_some());
}

/// An update that leaves the text alone keeps the vector; one that changes the text drops
/// it unless it brings a new one.
pub fn update_vectors_follow_the_text(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let m = put_vec(&*s, &p, "a", "alpha text", &[1.0, 0.0]);
    let vector_of = |s: &dyn Store| {
        s.vectors(&p, &Filter::default())
            .unwrap()
            .into_iter()
            .find(|v| v.id == m.id)
            .map(|v| v.vector)
    };
    s.update(&UpdateRequest::new(
        by_id(&m),
        Patch {
            importance: Some(0.7),
            ..Patch::default()
        },
    ))
    .unwrap();
    assert_eq!(vector_of(&*s), Some(vec![1.0, 0.0]));
    let u = s
        .update(&UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("beta text")),
                embedding: Some(("test-model".into(), vec![0.0, 1.0])),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(u.embedding_model.as_deref(), Some("test-model"));
    assert_eq!(vector_of(&*s), Some(vec![0.0, 1.0]));
    let u = s
        .update(&UpdateRequest::new(
            by_id(&m),
            Patch {
                content: Some(json!("gamma text")),
                ..Patch::default()
            },
        ))
        .unwrap();
    assert_eq!(u.embedding_model, None);
    assert_eq!(vector_of(&*s), None);
}

/// Reads the counter record, adds one with a conditional update, and retries on conflict;
/// returns how many conflicts it met.
fn increment(s: &dyn Store, p: &Partition) -> usize {
    let mut conflicts = 0;
    loop {
        let m = s.get(&at(p, "counter")).unwrap().unwrap();
        let n = m.content.as_u64().unwrap();
        let req = UpdateRequest::new(
            at(p, "counter"),
            Patch {
                content: Some(json!(n + 1)),
                ..Patch::default()
            },
        )
        .expecting(Some(m.version));
        match s.update(&req) {
            Ok(_) => return conflicts,
            Err(e) if e.kind() == ErrorKind::Conflict => conflicts += 1,
            Err(e) => panic!("update failed: {e}"),
        }
    }
}

const INCREMENTS: usize = 40;

/// Two threads race conditional updates on one record: exactly one wins per version, so
/// every increment is counted and the version counts every write.
pub fn racing_conditional_updates_lose_nothing(h: &dyn Harness) {
    let s = h.open();
    let p = part("race");
    set(&*s, &p, "counter", 0);
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let s = Arc::clone(&s);
            let p = p.clone();
            thread::spawn(move || (0..INCREMENTS).map(|_| increment(&*s, &p)).sum::<usize>())
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let m = s.get(&at(&p, "counter")).unwrap().unwrap();
    assert_eq!(m.content, json!(2 * INCREMENTS));
    assert_eq!(m.version, 1 + 2 * INCREMENTS as u64);
}

/// Processes race conditional updates on one record: none is lost.
pub fn multi_process_conditional_updates_lose_nothing(h: &dyn Harness, child_test: &str) {
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let s = h.open();
    let p = part("race");
    set(&*s, &p, "counter", 0);
    let children = 2;
    let running: Vec<_> = (0..children)
        .map(|c| {
            Command::new(std::env::current_exe().unwrap())
                .args([child_test, "--exact", "--ignored", "--nocapture"])
                .env(CHILD_LOCATION, &location)
                .env(CHILD_ID, c.to_string())
                .env(CHILD_MODE, "increment")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in running {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an updating process failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let m = s.get(&at(&p, "counter")).unwrap().unwrap();
    assert_eq!(m.content, json!(children * INCREMENTS));
    assert_eq!(m.version, 1 + (children * INCREMENTS) as u64);
}

// ---- filters ----

/// Random filters over random records: `list`, `count`, `text_search` and `vector_search`
/// return exactly the records [`Filter::matches`] (the reference definition) accepts.
pub fn filters_agree_with_the_reference(h: &dyn Harness) {
    let s = h.open();
    let p = part("filters");
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let users = [None, Some("u1"), Some("u2")];
    let categories = [
        Category::Core,
        Category::Daily,
        Category::Custom("notes".into()),
    ];
    let scopes = [
        MemoryScope::LongTerm,
        MemoryScope::Episodic,
        MemoryScope::Declarative,
    ];
    let tags = ["a", "b", "c"];
    let contents = ["apple pie", "apple tart", "plum jam"];
    let mut records = Vec::new();
    for i in 0..60 {
        let mut put = Put::new(
            p.clone(),
            Some(key(&format!("r{i}"))),
            contents[next(contents.len())],
        );
        put.owner.user_id = users[next(3)].map(str::to_owned);
        put.owner.agent_id = users[next(3)].map(|u| format!("agent-{u}"));
        put.owner.session_id = users[next(3)].map(|u| format!("session-{u}"));
        put.category = categories[next(3)].clone();
        put.scope = scopes[next(3)];
        put.tags = tags
            .iter()
            .filter(|_| next(2) == 0)
            .map(|t| (*t).to_owned())
            .collect();
        if next(2) == 0 {
            put.metadata.insert("k".into(), json!(next(2)));
        }
        put.embedding_model = Some("test-model".into());
        let mut v = vec![1.0 + next(5) as f32, next(5) as f32];
        muisti_core::text::normalize(&mut v);
        put.embedding = Some(v);
        records.push(s.put(put).unwrap().memory);
        if i % 20 == 19 {
            thread::sleep(Duration::from_millis(3));
        }
    }
    let pick = |n: usize, next: &mut dyn FnMut(usize) -> usize| next(n + 1).checked_sub(1);
    for round in 0..80 {
        let mut f = Filter::default();
        if let Some(i) = pick(3, &mut next) {
            f.user_id = users[i].map(str::to_owned);
        }
        if let Some(i) = pick(3, &mut next).filter(|_| next(2) == 0) {
            f.agent_id = users[i].map(|u| format!("agent-{u}"));
        }
        if let Some(i) = pick(3, &mut next).filter(|_| next(2) == 0) {
            f.session_id = users[i].map(|u| format!("session-{u}"));
        }
        if let Some(i) = pick(3, &mut next) {
            f.category = Some(categories[i].clone());
        }
        if let Some(i) = pick(3, &mut next) {
            f.scope = Some(scopes[i]);
        }
        f.tags = tags
            .iter()
            .filter(|_| next(3) == 0)
            .map(|t| (*t).to_owned())
            .collect();
        if next(3) == 0 {
            f.metadata.insert("k".into(), json!(next(2)));
        }
        if next(4) == 0 {
            f.created_after = Some(records[next(records.len())].created_at);
        }
        if next(4) == 0 {
            f.created_before = Some(records[next(records.len())].created_at);
        }
        if next(4) == 0 {
            f.content_hash = Some(muisti_core::content_hash(contents[next(contents.len())]));
        }
        let want: BTreeSet<MemoryId> = records
            .iter()
            .filter(|m| f.matches(m))
            .map(|m| m.id)
            .collect();
        let listed: BTreeSet<MemoryId> = list_all(&*s, &p, &f)
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(listed, want, "list, round {round}, {f:?}");
        assert_eq!(
            s.count(&p, &f).unwrap(),
            want.len() as u64,
            "count, round {round}, {f:?}"
        );
        let text: BTreeSet<MemoryId> = s
            .text_search(&TextQuery {
                partition: p.clone(),
                query: "apple".into(),
                filter: f.clone(),
                limit: 1000,
            })
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        let want_text: BTreeSet<MemoryId> = records
            .iter()
            .filter(|m| f.matches(m) && m.text().contains("apple"))
            .map(|m| m.id)
            .collect();
        assert_eq!(text, want_text, "text_search, round {round}, {f:?}");
        let near: BTreeSet<MemoryId> = s
            .vector_search(&muisti_core::VectorQuery {
                partition: p.clone(),
                vector: vec![1.0, 0.0],
                filter: f.clone(),
                limit: 1000,
            })
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(near, want, "vector_search, round {round}, {f:?}");
    }
}

/// Full-text scores use the statistics of the records the query may return (its partition,
/// after its filter), whatever the filter: they equal the reference BM25 over exactly those
/// records, and another tenant's or namespace's data changes none of them.
pub fn text_scores_ignore_other_partitions(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let mut hash = String::new();
    for (i, text) in [
        "the gold customer discount is ten percent",
        "gold members get free shipping on every order",
        "our customer support answers in French",
        "discount codes expire after thirty days",
        "shipping to Lisbon takes three days",
    ]
    .iter()
    .enumerate()
    {
        let mut put = Put::new(p.clone(), None, *text);
        put.tags = if i % 2 == 0 {
            vec!["billing".into()]
        } else {
            vec!["billing".into(), "logistics".into()]
        };
        put.metadata = json!({"team": if i < 3 { "sales" } else { "ops" }})
            .as_object()
            .cloned()
            .unwrap();
        put.owner.user_id = Some(if i < 4 { "ana" } else { "ben" }.into());
        let m = s.put(put).unwrap().memory;
        if i == 1 {
            hash = m.content_hash.clone();
        }
    }
    let filters = [
        Filter::default(),
        Filter {
            tags: vec!["logistics".into()],
            ..Filter::default()
        },
        Filter {
            metadata: json!({"team": "sales"}).as_object().cloned().unwrap(),
            ..Filter::default()
        },
        Filter {
            content_hash: Some(hash),
            ..Filter::default()
        },
        Filter {
            user_id: Some("ana".into()),
            tags: vec!["billing".into()],
            ..Filter::default()
        },
    ];
    let query = "gold customer discount shipping";
    let scores = |s: &dyn Store| -> Vec<Vec<(MemoryId, f32)>> {
        filters
            .iter()
            .map(|f| {
                s.text_search(&TextQuery {
                    partition: p.clone(),
                    query: query.into(),
                    filter: f.clone(),
                    limit: 10,
                })
                .unwrap()
                .into_iter()
                .map(|h| (h.id, h.score))
                .collect()
            })
            .collect()
    };
    let before = scores(&*s);
    for (f, got) in filters.iter().zip(&before) {
        let records = list_all(&*s, &p, f).unwrap();
        let want = muisti_core::text::Bm25::default().rank(
            records
                .iter()
                .map(|m| (m.id, m.index_text(), m.context.as_deref()))
                .collect::<Vec<_>>()
                .iter()
                .map(|(id, t, c)| (*id, t.as_ref(), *c)),
            query,
            10,
        );
        assert_eq!(got.len(), want.len(), "{f:?}: {got:?} vs {want:?}");
        for ((id, score), w) in got.iter().zip(&want) {
            assert!(
                (score - w.score).abs() <= 1e-4 * w.score.abs().max(1.0),
                "{f:?}: {id} scored {score}, the reference {} ({})",
                w.score,
                w.id
            );
        }
    }
    // Much more of the same words elsewhere: another tenant, another namespace.
    let elsewhere = [
        Partition::new(Tenant::new("other-tenant").unwrap(), ns("default")),
        part("elsewhere"),
    ];
    for q in &elsewhere {
        let puts: Vec<Put> = (0..40)
            .map(|i| {
                let mut put = Put::new(
                    q.clone(),
                    None,
                    format!("gold customer discount {i} shipping shipping"),
                );
                put.tags = vec!["billing".into(), "logistics".into()];
                put.owner.user_id = Some("ana".into());
                put
            })
            .collect();
        s.put_many(puts).unwrap();
    }
    assert_eq!(scores(&*s), before, "other partitions changed a score");
}

/// `rank_fields` answers what the records hold (after accesses, updates, replacement and
/// deletion), in the order asked, for live records of the partition only.
pub fn rank_fields_follow_the_records(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "alpha");
    let b = set(&*s, &p, "b", "beta");
    let c = set(&*s, &p, "c", "gamma");
    let other = set(&*s, &part("elsewhere"), "d", "delta");
    let ids = [c.id, a.id, b.id, other.id, MemoryId::generate()];
    // Load whatever a backend keeps in memory, then change the records under it.
    s.text_search(&TextQuery {
        partition: p.clone(),
        query: "alpha".into(),
        filter: Filter::default(),
        limit: 5,
    })
    .unwrap();
    s.rank_fields(&p, &ids).unwrap();
    let t = Timestamp::now();
    s.touch(&p.tenant, &[a.id, a.id, b.id], t).unwrap();
    let patch = Patch {
        importance: Some(0.9),
        ..Patch::default()
    };
    s.update(&UpdateRequest::new(at(&p, "b"), patch)).unwrap();
    s.delete(&at(&p, "c")).unwrap();
    let want: Vec<muisti_core::RankFields> = s
        .get_many(&p.tenant, &[a.id, b.id])
        .unwrap()
        .iter()
        .map(muisti_core::RankFields::of)
        .collect();
    assert_eq!(want[0].access_count, 2);
    assert_eq!(want[1].access_count, 1);
    assert!((want[1].importance - 0.9).abs() < 1e-6);
    assert_eq!(s.rank_fields(&p, &ids).unwrap(), want);
    s.touch(&p.tenant, &[b.id], t).unwrap();
    assert_eq!(s.rank_fields(&p, &[b.id]).unwrap()[0].access_count, 2);
}
