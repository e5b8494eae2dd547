//! Two tenants on one server, each with its key: nothing one does reaches the other, whatever
//! ids, namespaces, keys and filters it sends.

use muisti_client::{
    Client, Filters, ListParams, MemoryPatch, NewMemories, NewMemory, RecallQuery,
};
use muisti_server::ConfigLayer;
use serde_json::json;

use crate::{JSON, TestServer, raw};

struct Two {
    server: TestServer,
    a: Client,
    b: Client,
    b_key: String,
}

fn two() -> Two {
    let mut keys = Vec::new();
    let server = TestServer::start_with(ConfigLayer::default(), |ring| {
        keys.push(ring.create("tenant-a", false, None).expect("key"));
        keys.push(ring.create("tenant-b", false, None).expect("key"));
    });
    Two {
        a: server.client(Some(&keys[0].key)),
        b: server.client(Some(&keys[1].key)),
        b_key: keys[1].key.clone(),
        server,
    }
}

#[test]
fn ids_of_another_tenant_are_not_found_for_every_operation() {
    let t = two();
    let mut m = NewMemory::text("tenant A's secret: the launch is on Friday");
    m.namespace = Some("shared".into());
    m.key = Some("launch".into());
    m.user_id = Some("u1".into());
    let a_mem = t.a.create(&m).expect("create");

    assert_eq!(t.b.get(&a_mem.id).expect("get"), None);
    let err =
        t.b.update(
            &a_mem.id,
            &MemoryPatch {
                content: Some(json!("overwritten by B")),
                ..MemoryPatch::default()
            },
        )
        .expect_err("update");
    assert_eq!(err.status(), Some(404));
    assert!(!t.b.delete(&a_mem.id).expect("delete"));

    let kept = t.a.get(&a_mem.id).expect("get").expect("A still has it");
    assert_eq!(kept, a_mem, "untouched by B");
}

#[test]
fn lists_searches_and_key_values_stay_within_the_tenant() {
    let t = two();
    let mut batch = Vec::new();
    for (i, text) in [
        "the launch is on Friday",
        "budget is 2 million",
        "the code name is Falcon",
    ]
    .iter()
    .enumerate()
    {
        let mut m = NewMemory::text(*text);
        m.namespace = Some(if i == 0 { "default" } else { "shared" }.into());
        m.user_id = Some("u1".into());
        m.tags = vec!["secret".into()];
        m.metadata.insert("project".into(), json!("apollo"));
        batch.push(m);
    }
    t.a.create_many(&NewMemories { memories: batch })
        .expect("batch");
    t.a.kv_set("shared", "code", json!("Falcon"), None)
        .expect("kv");

    for ns in [
        "default",
        "shared",
        "tenant-a",
        "tenant-a:shared",
        "_muisti",
        "meta",
        "api_keys",
    ] {
        let page =
            t.b.list(&ListParams {
                namespace: Some(ns.into()),
                ..ListParams::default()
            })
            .expect("list");
        assert!(page.items.is_empty(), "namespace {ns}");
        assert!(
            t.b.kv_all(ns).expect("all").entries.is_empty(),
            "namespace {ns}"
        );
        for query in ["launch Friday", "code name Falcon", "budget"] {
            let mut q = RecallQuery::new(query, 10);
            q.namespace = Some(ns.into());
            q.user_id = Some("u1".into());
            q.filters = Some(Filters {
                tags: vec!["secret".into()],
                metadata: [("project".to_owned(), json!("apollo"))]
                    .into_iter()
                    .collect(),
                ..Filters::default()
            });
            assert!(
                t.b.recall(&q).expect("recall").hits.is_empty(),
                "{ns} {query}"
            );
            assert!(
                t.b.recall(&RecallQuery {
                    namespace: Some(ns.into()),
                    ..RecallQuery::new(query, 10)
                })
                .expect("recall")
                .hits
                .is_empty()
            );
        }
    }
    assert_eq!(t.b.kv_get("shared", "code").expect("get"), None);
    assert!(!t.b.kv_forget("shared", "code").expect("forget"));
    assert_eq!(t.b.kv_flush("shared").expect("flush"), 0);

    // A cursor taken from A's page does not open A's data to B.
    let a_page =
        t.a.list(&ListParams {
            namespace: Some("shared".into()),
            limit: Some(1),
            ..ListParams::default()
        })
        .expect("list");
    let cursor = a_page.next_cursor.expect("A has a second page");
    let b_page =
        t.b.list(&ListParams {
            namespace: Some("shared".into()),
            cursor: Some(cursor),
            ..ListParams::default()
        })
        .expect("list");
    assert!(b_page.items.is_empty());

    // B writing the same namespace and key makes B's own record.
    t.b.kv_set("shared", "code", json!("Eagle"), None)
        .expect("kv");
    assert_eq!(
        t.a.kv_get("shared", "code")
            .expect("get")
            .expect("A's")
            .value,
        json!("Falcon")
    );
    assert_eq!(
        t.b.kv_get("shared", "code")
            .expect("get")
            .expect("B's")
            .value,
        json!("Eagle")
    );

    let sa = t.a.stats().expect("stats");
    let sb = t.b.stats().expect("stats");
    assert_eq!((sa.tenant.as_str(), sa.total), ("tenant-a", 4));
    assert_eq!((sb.tenant.as_str(), sb.total), ("tenant-b", 1));
}

#[test]
fn the_tenant_comes_from_the_key_never_from_the_request() {
    let t = two();
    let auth = format!("Bearer {}", t.b_key);
    for body in [
        r#"{"content": "x", "tenant": "tenant-a"}"#,
        r#"{"content": "x", "partition": {"tenant": "tenant-a", "namespace": "default"}}"#,
    ] {
        let r = raw(
            "POST",
            &t.server.url("/v1/memories"),
            &[JSON, ("authorization", &auth)],
            Some(body),
        );
        assert_eq!(r.status, 422, "{body}");
    }
    let r = raw(
        "GET",
        &t.server.url("/v1/memories?tenant=tenant-a"),
        &[("authorization", &auth), ("x-tenant", "tenant-a")],
        None,
    );
    assert_eq!(r.status, 422, "unknown query parameters are refused");
    let r = raw(
        "GET",
        &t.server.url("/v1/stats"),
        &[("authorization", &auth), ("x-tenant", "tenant-a")],
        None,
    );
    assert_eq!(
        r.body["tenant"], "tenant-b",
        "headers cannot choose a tenant"
    );
    // Nothing B did reached A.
    assert_eq!(t.a.stats().expect("stats").total, 0);
}

#[test]
fn mcp_tools_act_as_the_tenant_of_the_key() {
    let t = two();
    let a_mem =
        t.a.create(&NewMemory::text("tenant A likes oolong"))
            .expect("create");
    let auth = format!("Bearer {}", t.b_key);
    let headers = [
        JSON,
        ("accept", "application/json, text/event-stream"),
        ("authorization", auth.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let call = |name: &str, args: serde_json::Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": name, "arguments": args}});
        raw(
            "POST",
            &t.server.url("/mcp"),
            &headers,
            Some(&body.to_string()),
        )
        .body
    };
    let got = call("get", json!({"id": a_mem.id}));
    assert!(got["error"].is_object(), "{got}");
    let recalled = call("recall", json!({"query": "oolong"}));
    assert_eq!(
        recalled["result"]["structuredContent"]["hits"],
        json!([]),
        "{recalled}"
    );
    let forgot = call("forget", json!({"id": a_mem.id}));
    assert!(forgot["error"].is_object());
    assert!(t.a.get(&a_mem.id).expect("get").is_some());
}

#[test]
fn deleting_a_user_deletes_that_user_in_that_tenant_only() {
    let t = two();
    for client in [&t.a, &t.b] {
        for (user, text) in [
            ("bob", "bob's diagnosis"),
            ("bob", "bob's address"),
            ("alice", "alice's plan"),
        ] {
            let mut m = NewMemory::text(text);
            m.user_id = Some(user.into());
            client.create(&m).expect("create");
        }
    }
    let bob = muisti_client::ForgetParams {
        user_id: "bob".into(),
        ..Default::default()
    };
    assert_eq!(t.a.delete_owner(&bob).expect("delete"), 2);
    assert_eq!(t.a.delete_owner(&bob).expect("again"), 0);
    let left = |c: &Client, user: &str| {
        c.list(&ListParams {
            user_id: Some(user.into()),
            ..ListParams::default()
        })
        .expect("list")
        .items
        .len()
    };
    assert_eq!(left(&t.a, "bob"), 0);
    assert_eq!(left(&t.a, "alice"), 1);
    assert_eq!(left(&t.b, "bob"), 2, "the other tenant's bob is untouched");
    let hits =
        t.a.recall(&RecallQuery::new("bob's diagnosis", 10))
            .expect("recall");
    assert!(
        hits.hits
            .iter()
            .all(|h| h.memory.user_id.as_deref() != Some("bob"))
    );

    // No user, an empty one, or an unknown parameter: refused, nothing deleted.
    let err =
        t.a.delete_owner(&Default::default())
            .expect_err("an empty user");
    assert_eq!(err.status(), Some(422));
    let r = raw(
        "DELETE",
        &t.server.url("/v1/memories?agent_id=x"),
        &[("authorization", &format!("Bearer {}", t.b_key))],
        None,
    );
    assert_eq!(r.status, 422, "no user_id: {}", r.body);
    let auth = format!("Bearer {}", t.b_key);
    let r = raw(
        "DELETE",
        &t.server.url("/v1/memories?user=alice"),
        &[("authorization", &auth)],
        None,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(left(&t.b, "alice"), 1);
}
