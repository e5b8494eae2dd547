//! The cross-tenant battery: two tenants hold look-alike data (the same namespaces, users,
//! keys and words; only a marker differs), each partition above the HNSW threshold so recall
//! goes through the graph, and every read and write of the REST API and of MCP is tried by
//! each tenant against the other's ids, keys, namespaces and filters. A response that carries
//! the other tenant's marker, or a write that changes the other tenant's data, is a leak.

use std::{sync::Arc, time::Duration};

use muisti::{Namespace, Partition, Tenant};
use muisti_client::{NewMemories, NewMemory};
use muisti_server::ConfigLayer;
use muisti_sqlite::SqliteStore;
use serde_json::{Value, json};

use crate::{JSON, TestServer, raw};

const MARKS: [&str; 2] = ["ALPHAMARK", "BRAVOMARK"];
const TENANTS: [&str; 2] = ["tenant-a", "tenant-b"];
const NAMESPACES: [&str; 2] = ["default", "shared"];
const USERS: [&str; 3] = ["u1", "u2", "u3"];
/// Records per tenant and namespace: above the graph threshold below.
const PER_NAMESPACE: usize = 90;
const ANN_THRESHOLD: usize = 60;

const TOPICS: [&str; 6] = [
    "the launch moved to Friday",
    "the budget is two million",
    "the code name is Falcon",
    "alice prefers window seats",
    "the password hint is a cat's name",
    "the diagnosis came back negative",
];

struct Tally {
    cases: usize,
    leaks: Vec<String>,
}

impl Tally {
    /// One case: `body` must not carry the other tenant's marker.
    fn check(&mut self, caller: usize, what: &str, body: &Value) {
        self.cases += 1;
        let text = body.to_string();
        if text.contains(MARKS[1 - caller]) {
            self.leaks.push(format!(
                "{} saw {}: {what}",
                TENANTS[caller],
                TENANTS[1 - caller]
            ));
        }
    }
}

fn bearer(key: &str) -> String {
    format!("Bearer {key}")
}

#[test]
fn no_tenant_sees_or_changes_another_tenants_data() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = Arc::new(
        SqliteStore::open(dir.path().join("muisti.db"))
            .expect("opens")
            .with_ann_threshold(ANN_THRESHOLD),
    );
    let mut keys = Vec::new();
    let server = TestServer::start_on(
        sqlite.clone(),
        ConfigLayer::default(),
        |ring| {
            for t in TENANTS {
                keys.push(ring.create(t, false, None).expect("key").key);
            }
        },
        Some(dir),
    );
    let clients: Vec<_> = keys.iter().map(|k| server.client(Some(k))).collect();

    // Look-alike data: the same keys, users and words in both tenants.
    let mut ids: [Vec<String>; 2] = [Vec::new(), Vec::new()];
    for (t, client) in clients.iter().enumerate() {
        for ns in NAMESPACES {
            let memories = (0..PER_NAMESPACE)
                .map(|i| {
                    let mut m = NewMemory::text(format!(
                        "{} {} (note {i} of {ns})",
                        TOPICS[i % TOPICS.len()],
                        MARKS[t]
                    ));
                    m.namespace = Some(ns.into());
                    m.key = Some(format!("k{i}"));
                    m.user_id = Some(USERS[i % USERS.len()].into());
                    m.session_id = Some(format!("s{}", i % 4));
                    m.tags = vec!["project".into(), format!("t{}", i % 3)];
                    m.metadata.insert("team".into(), json!("red"));
                    m
                })
                .collect();
            let stored = client
                .create_many(&NewMemories { memories })
                .expect("batch");
            ids[t].extend(stored.memories.into_iter().map(|m| m.id));
            for i in 0..10 {
                client
                    .kv_set(ns, &format!("k{i}"), json!({"secret": MARKS[t]}), None)
                    .expect("kv");
            }
        }
    }
    // Recall through the graph: an unfiltered query starts its build; wait for both.
    for (t, client) in clients.iter().enumerate() {
        for ns in NAMESPACES {
            let mut q = muisti_client::RecallQuery::new("launch budget falcon", 5);
            q.namespace = Some(ns.into());
            client.recall(&q).expect("recall");
            let partition = Partition::new(
                Tenant::new(TENANTS[t]).expect("tenant"),
                Namespace::new(ns).expect("ns"),
            );
            let deadline = std::time::Instant::now() + Duration::from_secs(120);
            while !sqlite.ann_ready(&partition) {
                assert!(std::time::Instant::now() < deadline, "graph not built");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    let mut tally = Tally {
        cases: 0,
        leaks: Vec::new(),
    };
    let before: Vec<Value> = clients
        .iter()
        .map(|c| serde_json::to_value(c.stats().expect("stats")).expect("json"))
        .collect();
    for caller in 0..2 {
        let auth = bearer(&keys[caller]);
        let send = |method: &str, path: &str, body: Option<Value>| {
            let text = body.map(|b| b.to_string());
            raw(
                method,
                &server.url(path),
                &[JSON, ("authorization", &auth)],
                text.as_deref(),
            )
        };
        // The other tenant's ids, through every route that takes one.
        for id in &ids[1 - caller] {
            for (method, path, body) in [
                ("GET", format!("/v1/memories/{id}"), None),
                ("GET", format!("/v1/memories/{id}/similar"), None),
                (
                    "PATCH",
                    format!("/v1/memories/{id}"),
                    Some(json!({"content": "overwritten", "tags": ["x"]})),
                ),
                ("DELETE", format!("/v1/memories/{id}"), None),
            ] {
                let r = send(method, &path, body);
                tally.check(caller, &format!("{method} {path}"), &r.body);
                if r.status != 404 {
                    tally
                        .leaks
                        .push(format!("{method} {path} answered {}", r.status));
                }
            }
        }
        // Lists, recalls and key-values over the same namespaces, users and filters.
        for ns in NAMESPACES {
            for user in USERS.iter().map(Some).chain([None]) {
                let mut query = format!("/v1/memories?namespace={ns}&limit=1000");
                if let Some(u) = user {
                    query.push_str(&format!("&user_id={u}"));
                }
                for extra in ["", "&tag=project", "&tag=t1&session_id=s1", "&scope=user"] {
                    let r = send("GET", &format!("{query}{extra}"), None);
                    tally.check(caller, &format!("list {query}{extra}"), &r.body);
                }
                for topic in TOPICS {
                    for mode in ["hybrid", "lexical", "vector"] {
                        let mut body = json!({"query": topic, "namespace": ns, "mode": mode,
                            "limit": 20, "explain": true});
                        if let Some(u) = user {
                            body["user_id"] = json!(u);
                        }
                        let r = send("POST", "/v1/recall", Some(body.clone()));
                        tally.check(caller, &format!("recall {body}"), &r.body);
                    }
                }
            }
            for i in 0..12 {
                for method in ["GET", "HEAD"] {
                    let r = send(method, &format!("/v1/kv/{ns}/k{i}"), None);
                    tally.check(caller, &format!("{method} kv {ns}/k{i}"), &r.body);
                }
            }
            let r = send("GET", &format!("/v1/kv/{ns}"), None);
            tally.check(caller, &format!("kv all {ns}"), &r.body);
            let r = send("GET", "/v1/stats", None);
            tally.check(caller, "stats", &r.body);
        }
        // The same through MCP.
        let mcp_headers = [
            JSON,
            ("accept", "application/json, text/event-stream"),
            ("authorization", auth.as_str()),
            ("mcp-protocol-version", "2025-06-18"),
        ];
        let call = |name: &str, args: Value| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": name, "arguments": args}});
            raw(
                "POST",
                &server.url("/mcp"),
                &mcp_headers,
                Some(&body.to_string()),
            )
        };
        for id in ids[1 - caller].iter().step_by(3) {
            for (tool, args) in [
                ("get", json!({"id": id})),
                ("similar", json!({"id": id})),
                ("forget", json!({"id": id})),
                ("update", json!({"id": id, "content": "overwritten"})),
            ] {
                let r = call(tool, args);
                tally.check(caller, &format!("mcp {tool} {id}"), &r.body);
            }
        }
        for ns in NAMESPACES {
            for topic in TOPICS {
                for user in USERS {
                    let r = call(
                        "recall",
                        json!({"query": topic, "namespace": ns, "user_id": user, "limit": 20}),
                    );
                    tally.check(caller, &format!("mcp recall {topic} {ns} {user}"), &r.body);
                }
            }
            let r = call("list", json!({"namespace": ns, "limit": 1000}));
            tally.check(caller, &format!("mcp list {ns}"), &r.body);
            for i in 0..12 {
                let r = call("kv_get", json!({"namespace": ns, "key": format!("k{i}")}));
                tally.check(caller, &format!("mcp kv_get {ns}/k{i}"), &r.body);
            }
        }
    }
    // Nothing either did changed the other: every record and value is still there, as written.
    let after: Vec<Value> = clients
        .iter()
        .map(|c| serde_json::to_value(c.stats().expect("stats")).expect("json"))
        .collect();
    assert_eq!(before, after, "counts unchanged");
    for (t, client) in clients.iter().enumerate() {
        for id in &ids[t] {
            let m = client.get(id).expect("get").expect("still there");
            let text = m.content.to_string();
            assert!(
                text.contains(MARKS[t]) && !text.contains("overwritten"),
                "{text}"
            );
        }
    }
    for ns in NAMESPACES {
        for (t, _) in TENANTS.iter().enumerate() {
            let p = Partition::new(
                Tenant::new(TENANTS[t]).expect("tenant"),
                Namespace::new(ns).expect("ns"),
            );
            assert!(sqlite.ann_searches(&p) > 0, "the graph answered recalls");
        }
    }
    println!(
        "cross-tenant: {} cases over REST and MCP, {} leaks",
        tally.cases,
        tally.leaks.len()
    );
    assert!(tally.leaks.is_empty(), "leaks: {:#?}", tally.leaks);
}
