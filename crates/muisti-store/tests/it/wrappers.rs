//! What the router and the privacy wrapper add beyond the conformance suite.

use std::sync::Arc;

use muisti_core::{
    Filter, Key, Locator, Namespace, Partition, Put, Store, Tenant, TextQuery, WriteStatus,
};
use muisti_store::{MemStore, PrivacyStore, RouterStore};
use serde_json::json;

fn p(ns: &str) -> Partition {
    Partition::of(Namespace::new(ns).expect("valid"))
}

fn k(s: &str) -> Key {
    Key::new(s).expect("valid")
}

#[test]
fn router_sends_exact_matches_to_their_route_and_the_rest_to_default() {
    let default = Arc::new(MemStore::new());
    let convs = Arc::new(MemStore::new());
    let router = RouterStore::new(default.clone()).route(
        Namespace::new("conversations").expect("valid"),
        convs.clone(),
    );
    router
        .put(Put::new(p("conversations"), Some(k("c1")), "turn"))
        .expect("writes");
    router
        .put(Put::new(p("conversations2"), Some(k("x")), "other"))
        .expect("writes");
    router
        .put(Put::new(p("default"), Some(k("d")), "fact"))
        .expect("writes");
    assert_eq!(
        convs
            .count(&p("conversations"), &Filter::default())
            .expect("counts"),
        1
    );
    assert_eq!(
        default
            .count(&p("conversations"), &Filter::default())
            .expect("counts"),
        0
    );
    assert_eq!(
        default
            .count(&p("conversations2"), &Filter::default())
            .expect("counts"),
        1
    );
    assert_eq!(
        default
            .count(&p("default"), &Filter::default())
            .expect("counts"),
        1
    );
    let all = router.namespaces(&Tenant::default()).expect("lists");
    let names: Vec<_> = all.iter().map(|n| n.as_str()).collect();
    assert_eq!(names, ["conversations", "conversations2", "default"]);
    // A record by id is found through the router wherever it lives.
    let id = convs
        .get(&Locator::Key {
            partition: p("conversations"),
            key: k("c1"),
        })
        .expect("reads")
        .expect("present")
        .id;
    let by_id = Locator::Id {
        tenant: Tenant::default(),
        id,
    };
    assert!(router.get(&by_id).expect("reads").is_some());
    assert!(router.delete(&by_id).expect("deletes"));
    assert_eq!(
        convs
            .count(&p("conversations"), &Filter::default())
            .expect("counts"),
        0
    );
}

#[test]
fn privacy_drops_writes_and_passes_reads_forget_and_flush() {
    let inner = Arc::new(MemStore::new());
    inner
        .put(Put::new(p("default"), Some(k("kept")), "stored before"))
        .expect("writes");
    inner
        .put(Put::new(p("default"), Some(k("gone")), "stored before"))
        .expect("writes");
    let private = PrivacyStore::new(inner.clone());
    let w = private
        .put(Put::new(p("default"), Some(k("new")), "secret"))
        .expect("accepted");
    assert_eq!(w.status, WriteStatus::Discarded);
    let batch = private
        .put_many(vec![Put::new(p("default"), Some(k("kept")), "overwrite")])
        .expect("accepted");
    assert_eq!(batch[0].status, WriteStatus::Discarded);
    let at = |key: &str| Locator::Key {
        partition: p("default"),
        key: k(key),
    };
    assert!(inner.get(&at("new")).expect("reads").is_none());
    assert_eq!(
        private.get(&at("kept")).expect("reads").map(|m| m.content),
        Some(json!("stored before"))
    );
    let hits = private
        .text_search(&TextQuery {
            partition: p("default"),
            query: "stored before".into(),
            limit: 5,
            filter: Filter::default(),
        })
        .expect("searches");
    assert_eq!(hits.len(), 2);
    // An update is applied and reported, but not stored.
    let kept = inner.get(&at("kept")).expect("reads").expect("there");
    let patched = private
        .update(&muisti_core::UpdateRequest::new(
            at("kept"),
            muisti_core::Patch {
                content: Some(json!("changed")),
                ..Default::default()
            },
        ))
        .expect("accepted");
    assert_eq!(
        (patched.content, patched.version),
        (json!("changed"), kept.version + 1)
    );
    assert_eq!(inner.get(&at("kept")).expect("reads"), Some(kept));
    assert!(private.delete(&at("gone")).expect("deletes"));
    assert!(inner.get(&at("gone")).expect("reads").is_none());
    assert_eq!(private.flush(&p("default")).expect("flushes"), 1);
    assert_eq!(
        inner
            .count(&p("default"), &Filter::default())
            .expect("counts"),
        0
    );
    // Bad input is still an error, not silently accepted.
    let mut bad = Put::new(p("default"), Some(k("x")), "v");
    bad.importance = Some(7.0);
    assert!(private.put(bad).is_err());
}
