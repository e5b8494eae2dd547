//! Records: put, get, delete, flush, limits, validation, access counts, identity and isolation.

use super::*;

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

/// A batch delete deletes the live records of its tenant it names and tells which; an id
/// of another tenant's record or of none is passed over.
pub fn delete_many_deletes_the_records_it_names_in_its_tenant(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", "river boat");
    let b = set(&*s, &p, "b", "2");
    let kept = set(&*s, &p, "c", "3");
    let theirs = set(
        &*s,
        &Partition::new(Tenant::new("globex").unwrap(), ns("default")),
        "a",
        "theirs",
    );
    assert!(s.delete_many(&p.tenant, &[]).unwrap().is_empty());
    let gone = s
        .delete_many(&p.tenant, &[b.id, theirs.id, MemoryId::generate(), a.id])
        .unwrap();
    assert_eq!(gone, [b.id, a.id], "in the order named");
    assert_eq!(
        s.get_many(&p.tenant, &[a.id, b.id, kept.id]).unwrap(),
        [kept]
    );
    let theirs_at = Locator::Id {
        tenant: theirs.partition.tenant.clone(),
        id: theirs.id,
    };
    assert!(s.get(&theirs_at).unwrap().is_some());
    assert!(text_hits(&*s, &p, "river", Filter::default()).is_empty());
    assert_eq!(s.delete_many(&p.tenant, &[a.id]).unwrap(), []);
}

/// A batch delete longer than one statement's list deletes every record it names, each
/// reported once (an id named twice too), in the order named.
pub fn delete_many_of_hundreds_reports_each_once(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let ids: Vec<MemoryId> = (0..300)
        .map(|i| set(&*s, &p, &format!("k{i}"), i).id)
        .collect();
    let mut named = ids.clone();
    named.push(ids[0]);
    assert_eq!(s.delete_many(&p.tenant, &named).unwrap(), ids);
    assert_eq!(s.count(&p, &Filter::default()).unwrap(), 0);
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
    // A window that ends before it starts contradicts itself: refused, nothing stored.
    let mut inverted = put.clone();
    inverted.valid_until = Some(Timestamp::from_millis(1_600_000_000_000));
    assert_eq!(
        s.put(inverted).unwrap_err().kind(),
        ErrorKind::ConflictingFields
    );
    assert!(s.get(&at(&p, "full")).unwrap().is_none());
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

/// The health check answers.
pub fn health_check_ok(h: &dyn Harness) {
    let s = h.open();
    let health = s.health_check();
    assert!(health.ok, "{}", health.detail);
    assert!(!s.info().backend.is_empty());
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

/// `get_many_shared` gives the records `get_many` gives, in the same order, each time asked
/// (a backend that hands out the records it keeps still shows later writes and accesses).
pub fn get_many_shared_matches_get_many(h: &dyn Harness) {
    let s = h.open();
    let p = part("default");
    let a = set(&*s, &p, "a", 1);
    let b = set(&*s, &p, "b", 2);
    let foreign = set(
        &*s,
        &Partition::new(Tenant::new("t2").unwrap(), ns("default")),
        "c",
        3,
    );
    let ids = [b.id, foreign.id, a.id, muisti_core::MemoryId::generate()];
    let plain = s.get_many(&p.tenant, &ids).unwrap();
    let shared = s.get_many_shared(&p.tenant, &ids).unwrap();
    assert_eq!(
        shared.iter().map(|m| m.id).collect::<Vec<_>>(),
        [b.id, a.id]
    );
    assert_eq!(
        shared.iter().map(|m| (**m).clone()).collect::<Vec<_>>(),
        plain
    );
    // Read again after a write and an access: the shared records are the new ones, and
    // those handed out before are unchanged.
    let b2 = set(&*s, &p, "b", 20);
    s.touch(&p.tenant, &[a.id], Timestamp::now()).unwrap();
    let again = s.get_many_shared(&p.tenant, &[b.id, a.id]).unwrap();
    assert_eq!(again[0].content, b2.content);
    assert_eq!(again[1].access_count, a.access_count + 1);
    assert_eq!(shared[1].access_count, a.access_count);
    assert_eq!(shared[0].content, b.content);
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
