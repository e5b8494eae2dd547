//! The web dashboard in a real browser: headless Chromium, driven by playwright-core
//! (`ui/tests/browser.mjs`), against a server seeded with a LoCoMo dev conversation, a few
//! declarative entries and a pending proposal, and graph facts; and a second server with
//! keys. Skips with a printed line without Node.js, the front end's packages (`npm ci` in
//! `ui/`, done by `ui/build.sh`), Chromium or the LoCoMo data; `.ci/run` has them all.

use std::path::{Path, PathBuf};

use muisti_server::ConfigLayer;
use serde_json::{Value, json};

use crate::{TestServer, raw};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the browser test needs, or a skip (a failure with `MUISTI_REQUIRE_SERVICES=1`).
fn prerequisites() -> Option<(PathBuf, PathBuf)> {
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node_ok {
        muisti_testkit::service_unavailable("node", "Node.js is not on PATH");
        return None;
    }
    if !root().join("ui/node_modules/playwright-core").is_dir() {
        muisti_testkit::service_unavailable(
            "the dashboard's test packages",
            "run ui/build.sh (npm ci in ui/)",
        );
        return None;
    }
    let chromium = std::env::var_os("MUISTI_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.exists())
        });
    let Some(chromium) = chromium else {
        muisti_testkit::service_unavailable(
            "chromium",
            "install Debian's chromium or set MUISTI_CHROMIUM",
        );
        return None;
    };
    let data = std::env::var_os("MUISTI_LOCOMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data/locomo-dev"));
    let conversation = data.join("26.json");
    if !conversation.exists() {
        muisti_testkit::service_unavailable(
            "the LoCoMo dev data",
            "set MUISTI_LOCOMO_DIR to the folder of the LoCoMo dev conversations",
        );
        return None;
    }
    Some((chromium, conversation))
}

/// The turns of a LoCoMo conversation, session by session: (session, "speaker: text").
fn turns(path: &Path) -> Vec<(String, String)> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json");
    let conv = doc.get("conversation").unwrap_or(&doc);
    let mut sessions: Vec<(u32, &Vec<Value>)> = conv
        .as_object()
        .expect("object")
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?)))
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut out = Vec::new();
    for (n, session) in sessions {
        for t in session {
            if let (Some(who), Some(said)) = (t["speaker"].as_str(), t["text"].as_str()) {
                out.push((format!("session_{n}"), format!("{who}: {said}")));
            }
        }
    }
    out
}

fn post(s: &TestServer, path: &str, body: &Value) -> crate::Raw {
    raw(
        "POST",
        &s.url(path),
        &[("Content-Type", "application/json")],
        Some(&body.to_string()),
    )
}

#[test]
fn dashboard_in_a_real_browser() {
    let Some((chromium, conversation)) = prerequisites() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let store =
        muisti::open_store(&format!("sqlite://{}/muisti.db", dir.path().display())).expect("store");
    let engine = muisti::Engine::builder(store)
        .graph_extraction(muisti::graph::GraphExtraction::Offline)
        .build()
        .expect("engine");
    let s = TestServer::serve(engine, ConfigLayer::default(), Some(dir));
    // Graph facts, read by the offline extractor.
    for m in [
        "Alice works at Google in Mountain View.",
        "Bob reports to Alice and works on TensorFlow.",
    ] {
        let r = post(
            &s,
            "/v1/memories",
            &json!({"content": m, "user_id": "g1", "session_id": "s1"}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    // A LoCoMo conversation, one memory per turn.
    let user = "locomo-26";
    let turns = turns(&conversation);
    assert!(turns.len() > 200, "{} turns", turns.len());
    let mut ids = Vec::new();
    for chunk in turns.chunks(100) {
        let memories: Vec<Value> = chunk
            .iter()
            .map(|(session, text)| json!({"content": text, "user_id": user, "session_id": session}))
            .collect();
        let r = post(&s, "/v1/memories/batch", &json!({ "memories": memories }));
        assert_eq!(r.status, 200, "{}", r.body);
        for m in r.body["memories"].as_array().expect("memories") {
            ids.push(m["id"].as_str().expect("id").to_owned());
        }
    }
    assert_eq!(ids.len(), turns.len());
    // The known memory: a turn found by its own words.
    let (i, known) = turns
        .iter()
        .enumerate()
        .skip(40)
        .find(|(_, (_, t))| t.split_whitespace().count() >= 12)
        .map(|(i, (_, t))| (i, t.clone()))
        .expect("a long turn");
    let said = known.split_once(": ").map_or(known.as_str(), |(_, s)| s);
    let query: Vec<&str> = said.split_whitespace().take(8).collect();
    // Declarative entries: two stated by the user, one learned and waiting for confirmation.
    for fact in ["Ana is vegetarian", "Ana lives in Lisbon"] {
        let r = post(
            &s,
            "/v1/memories",
            &json!({"content": fact, "user_id": "ana", "scope": "declarative", "type": "fact"}),
        );
        assert!(r.status == 201 || r.status == 200, "{}", r.body);
    }
    let proposal = "Ana prefers meetings after 10am";
    let r = post(
        &s,
        "/v1/memories",
        &json!({"content": proposal, "user_id": "ana", "scope": "declarative",
            "type": "preference", "source": "agent_learned", "confidence": 70}),
    );
    assert_eq!(r.status, 428, "{}", r.body);
    muisti_testkit::wait_until("the graph has Alice works_at Google", || {
        let r = raw(
            "GET",
            &s.url("/v1/graph/relations?user_id=g1&predicate=works_at"),
            &[],
            None,
        );
        r.body["relations"].as_array().is_some_and(|a| {
            a.iter()
                .any(|x| x["subject"] == "Alice" && x["object"] == "Google")
        })
    });
    // Some recalls, so analytics has accesses.
    for q in ["painting", "adoption", "camping"] {
        let r = post(&s, "/v1/recall", &json!({"query": q, "user_id": user}));
        assert_eq!(r.status, 200, "{}", r.body);
    }

    // The conversation's topics (the cluster maintenance job), for analytics.
    let r = post(
        &s,
        "/v1/maintenance",
        &json!({"jobs": ["cluster"], "user_id": user}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = raw(
        "GET",
        &s.url(&format!("/v1/clusters?user_id={user}")),
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // A server with keys, two tenants.
    let mut key = String::new();
    let keyed = TestServer::start_with(ConfigLayer::default(), |ring| {
        key = ring.create("t1", false, None).expect("key").key;
        ring.create("admin", true, None).expect("admin key");
    });
    for (tenant, text) in [
        ("t1", "Tenant one: the red bicycle is in the shed"),
        ("t2", "Tenant two: the blue kite is in the attic"),
    ] {
        let engine = keyed
            .engine
            .with_tenant(muisti::Tenant::new(tenant).expect("tenant"));
        let mut put = muisti::Put::new(
            engine.partition(&muisti::Namespace::default()),
            None,
            Value::String(text.into()),
        );
        put.owner.user_id = Some("u1".into());
        engine.remember(put).expect("remember");
    }

    let out = std::env::var_os("MUISTI_UI_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-artifacts"));
    let fixture = json!({
        "base": s.base,
        "chromium": chromium,
        "out": out,
        "user": user,
        "listed": turns[0].1.chars().take(40).collect::<String>(),
        "search": {"query": query.join(" "), "expect": known.chars().take(40).collect::<String>()},
        "edit": {"id": ids[i + 60], "content": "Edited in the dashboard: the lighthouse is blue"},
        "delete_id": ids[i + 61],
        "proposal": {"user": "ana", "content": proposal},
        "graph_user": "g1",
        "edge": {"subject": "Alice", "predicate": "works_at", "object": "Google"},
        "auth": {"base": keyed.base, "key": key, "user": "u1", "expect": "red bicycle", "hidden": "blue kite"},
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fixture.json");
    std::fs::write(&path, fixture.to_string()).expect("write fixture");
    let run = std::process::Command::new("node")
        .arg(root().join("ui/tests/browser.mjs"))
        .arg(&path)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    println!("{stdout}");
    println!("screenshots in {}", out.display());
    assert!(
        run.status.success(),
        "the browser checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
