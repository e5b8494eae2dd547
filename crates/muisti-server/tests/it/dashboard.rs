//! The web dashboard in a real browser: headless Chromium, driven by playwright-core
//! (`ui/tests/browser.mjs`), against a server seeded with a LoCoMo dev conversation, a few
//! declarative entries and a pending proposal, and graph facts; and a second server with
//! keys. Skips with a printed line without Node.js, the front end's packages (`npm ci` in
//! `ui/`, done by `ui/build.sh`) or Chromium; `.ci/run` has them all.

use std::path::{Path, PathBuf};

use muisti_server::ConfigLayer;
use serde_json::{Value, json};

use crate::{JSON, TestServer, raw};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the browser test needs, or a skip (a failure with `MUISTI_REQUIRE_SERVICES=1`).
fn prerequisites() -> Option<PathBuf> {
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
    Some(chromium)
}

/// The conversation the server is seeded with: LoCoMo dev conversation 26
/// (`MUISTI_LOCOMO_DIR`, default `../shared/data/locomo-dev` beside the workspace), or, where
/// that data is not, a generated one of the same size (said with a printed line: the data
/// is not in the repository, and the browser checks must run wherever the browser does).
fn conversation() -> Vec<(String, String)> {
    let data = std::env::var_os("MUISTI_LOCOMO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data/locomo-dev"));
    let path = data.join("26.json");
    if path.exists() {
        return turns(&path);
    }
    println!(
        "the LoCoMo dev data is not at {} (MUISTI_LOCOMO_DIR): seeding a generated conversation",
        data.display()
    );
    let people = ["Maya", "Tom"];
    let did = [
        "went hiking near",
        "bought a bicycle in",
        "visited an old friend in",
        "took a pottery class in",
        "adopted a puppy in",
        "ran a half marathon in",
        "cooked paella with cousins in",
    ];
    let places = [
        "Lisbon", "Porto", "Bergen", "Osaka", "Quito", "Accra", "Tbilisi", "Perth", "Riga",
        "Cusco", "Hanoi",
    ];
    let when = [
        "last weekend",
        "in March",
        "two summers ago",
        "on my birthday",
        "yesterday",
    ];
    (0..419)
        .map(|i| {
            let text = format!(
                "{}: I {} {} {} and it reminded me of turn {i} of our talks",
                people[i % 2],
                did[i % did.len()],
                places[(i / 2) % places.len()],
                when[(i / 3) % when.len()],
            );
            (format!("session_{}", i / 20 + 1), text)
        })
        .collect()
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
    let Some(chromium) = prerequisites() else {
        return;
    };
    let s = TestServer::with_offline_graph();
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
    let turns = conversation();
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

/// `/ui` is the page from the binary, with headers that keep other sites out; its routes are
/// the page; its built files are served with their media type; anything else under it is a
/// JSON 404. The page needs no key; the API it calls does.
#[test]
fn the_dashboard_is_served_from_the_binary() {
    let mut key = String::new();
    let s = TestServer::start_with(ConfigLayer::default(), |ring| {
        key = ring.create("t1", true, None).expect("key").key;
    });
    for path in ["/ui", "/ui/", "/ui/memories", "/ui/graph?user_id=ana"] {
        let r = raw("GET", &s.url(path), &[], None);
        assert_eq!(r.status, 200, "{path}");
        assert!(
            r.header("content-type")
                .is_some_and(|t| t.starts_with("text/html"))
        );
        let page = r.body.as_str().expect("html");
        assert!(page.contains("<html"), "{page}");
        let csp = r.header("content-security-policy").expect("csp");
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'"));
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(r.header("cache-control"), Some("no-cache"));
    }
    // The server's root sends a browser to the dashboard (read without following it).
    let root = {
        use std::io::{Read, Write};
        let addr = s.url("").trim_start_matches("http://").to_owned();
        let mut conn = std::net::TcpStream::connect(&addr).expect("connects");
        conn.write_all(b"GET / HTTP/1.1\r\nhost: muisti\r\nconnection: close\r\n\r\n")
            .expect("writes");
        let mut answer = String::new();
        conn.read_to_string(&mut answer).expect("reads");
        answer.to_ascii_lowercase()
    };
    assert!(root.starts_with("http/1.1 307"), "{root}");
    assert!(root.contains("\r\nlocation: /ui\r\n"), "{root}");
    let page = raw("GET", &s.url("/ui"), &[], None);
    let page = page.body.as_str().expect("html");
    let script = page
        .split("src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a script");
    assert!(script.starts_with("/ui/assets/"), "{script}");
    let r = raw("GET", &s.url(script), &[], None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert!(
        r.header("cache-control")
            .is_some_and(|c| c.contains("immutable"))
    );
    let notices = raw(
        "GET",
        &s.url("/ui/assets/third-party-licenses.txt"),
        &[],
        None,
    );
    assert_eq!(notices.status, 200);
    assert_eq!(
        notices.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let notices = notices.body.as_str().expect("text");
    for package in ["echarts", "preact", "htm", "zrender"] {
        assert!(notices.contains(&format!("==== {package} ")), "{package}");
    }
    for missing in ["/ui/assets/nope.js", "/ui/favicon.ico", "/ui/a/../b.txt"] {
        let r = raw("GET", &s.url(missing), &[], None);
        assert_eq!(r.status, 404, "{missing}");
        assert_eq!(r.code(), "not_found");
    }
    let r = raw("POST", &s.url("/ui"), &[JSON], Some("{}"));
    assert_eq!(r.status, 405);
    assert_eq!(r.code(), "method_not_allowed");
    // The data it shows needs the key.
    let r = raw("GET", &s.url("/v1/analytics"), &[], None);
    assert_eq!(r.status, 401);
    let auth = format!("Bearer {key}");
    let r = raw(
        "GET",
        &s.url("/v1/analytics"),
        &[("authorization", &auth)],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Analytics over REST: counts by scope and state, growth per day, the most accessed first,
/// confined to the caller's filter; a similarity matrix of a user's memories; bad
/// parameters are typed errors.
#[test]
fn analytics_over_rest() {
    let s = TestServer::open();
    let write = |body: Value| {
        let r = post(&s, "/v1/memories", &body);
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().expect("id").to_owned()
    };
    let cat = write(json!({"content": "Ana's cat is called Marmalade", "user_id": "ana"}));
    write(
        json!({"content": "Ana moved to Lisbon in May", "user_id": "ana", "scope": "short_term",
        "session_id": "s1"}),
    );
    write(json!({"content": "Ana works as a nurse", "user_id": "ana"}));
    write(json!({"content": "Bo collects stamps", "user_id": "bo"}));
    for _ in 0..3 {
        let r = post(
            &s,
            "/v1/recall",
            &json!({"query": "what is the cat called", "user_id": "ana", "limit": 1}),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    muisti_testkit::wait_until("recalls are counted", || {
        let r = raw("GET", &s.url(&format!("/v1/memories/{cat}")), &[], None);
        r.body["access_count"].as_u64().is_some_and(|n| n >= 3)
    });
    let r = raw("GET", &s.url("/v1/analytics?user_id=ana"), &[], None);
    assert_eq!(r.status, 200, "{}", r.body);
    let a = &r.body;
    assert_eq!(a["total"], 3, "{a}");
    assert_eq!(a["by_scope"], json!({"long_term": 2, "short_term": 1}));
    assert_eq!(a["by_state"], json!({"active": 3}));
    let growth: u64 = a["growth"]
        .as_array()
        .expect("growth")
        .iter()
        .map(|d| d["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(growth, 3, "everything was written today: {a}");
    assert_eq!(a["top_accessed"][0]["id"], cat.as_str(), "{a}");
    assert_eq!(a["last_accessed"][0]["count"], 1, "{a}");
    let all = raw("GET", &s.url("/v1/analytics"), &[], None);
    assert_eq!(all.body["total"], 4, "{}", all.body);

    let r = raw(
        "GET",
        &s.url("/v1/analytics/similarity?user_id=ana&limit=3"),
        &[],
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let m = r.body["matrix"].as_array().expect("matrix");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(m.len(), 3);
    for (i, row) in m.iter().enumerate() {
        let row = row.as_array().expect("row");
        assert_eq!(row.len(), 3);
        let own = row[i].as_f64().expect("number");
        assert!((own - 1.0).abs() < 1e-3, "{own}");
        for (j, v) in row.iter().enumerate() {
            let v = v.as_f64().expect("number");
            assert!(v < 0.999 || i == j, "two different memories: {v}");
            assert_eq!(Some(v), m[j][i].as_f64(), "symmetric");
        }
    }
    for (path, status) in [
        ("/v1/analytics?days=0", 422),
        ("/v1/analytics?days=367", 422),
        ("/v1/analytics?top=101", 422),
        ("/v1/analytics?scope=nope", 422),
        // Unknown or missing parameters as unknown or missing body fields: 422.
        ("/v1/analytics?bogus=1", 422),
        ("/v1/analytics?scope=declarative", 409),
        ("/v1/analytics/similarity", 422),
        ("/v1/analytics/similarity?user_id=ana&limit=1", 422),
        ("/v1/analytics/similarity?user_id=ana&limit=61", 422),
        ("/v1/analytics/similarity?user_id=ana&cluster=0", 404),
    ] {
        let r = raw("GET", &s.url(path), &[], None);
        assert_eq!(r.status, status, "{path}: {}", r.body);
        r.code();
    }
    // The server's jobs, newest first.
    let r = raw("GET", &s.url("/v1/jobs"), &[], None);
    assert_eq!(r.body, json!({"items": []}));
    let mut started = Vec::new();
    for _ in 0..2 {
        let r = post(
            &s,
            "/v1/maintenance",
            &json!({"background": true, "dry_run": true}),
        );
        assert_eq!(r.status, 202, "{}", r.body);
        started.push(r.body["id"].as_str().expect("id").to_owned());
    }
    let r = raw("GET", &s.url("/v1/jobs"), &[], None);
    let listed: Vec<&str> = r.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|j| j["id"].as_str().expect("id"))
        .collect();
    assert_eq!(listed, [started[1].as_str(), started[0].as_str()]);
}

/// Listing by state and by creation time: pages stay full when most memories are in
/// another state, and their cursors go on where they stopped.
#[test]
fn memories_are_listed_by_state_and_time() {
    let s = TestServer::open();
    let mut ids = Vec::new();
    for i in 0..12 {
        let r = post(
            &s,
            "/v1/memories",
            &json!({"content": format!("note number {i} about topic {}", i * 7), "user_id": "u"}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(r.body["id"].as_str().expect("id").to_owned());
    }
    // Every third one superseded by the next, the rest active.
    for (i, id) in ids.iter().enumerate().step_by(3) {
        let body = json!({"state": "superseded", "superseded_by": ids[i + 1]});
        let r = raw(
            "PATCH",
            &s.url(&format!("/v1/memories/{id}")),
            &[JSON],
            Some(&body.to_string()),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let r = raw(
            "GET",
            &s.url(&format!(
                "/v1/memories?user_id=u&state=superseded&limit=2{cursor}"
            )),
            &[],
            None,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        let items = r.body["items"].as_array().expect("items").clone();
        for m in &items {
            assert_eq!(m["state"], "superseded");
            seen.push(m["id"].as_str().expect("id").to_owned());
        }
        match r.body["next_cursor"].as_str() {
            Some(next) => {
                assert_eq!(items.len(), 2, "a page is short only at the end");
                cursor = format!("&cursor={next}");
            }
            None => break,
        }
    }
    let want: Vec<String> = ids.iter().step_by(3).cloned().collect();
    assert_eq!(seen, want);
    let active = raw(
        "GET",
        &s.url("/v1/memories?user_id=u&state=active"),
        &[],
        None,
    );
    assert_eq!(active.body["items"].as_array().map(Vec::len), Some(8));
    let r = raw("GET", &s.url("/v1/memories?state=gone"), &[], None);
    assert_eq!((r.status, r.code()), (422, "invalid_input"));
    let later = raw(
        "GET",
        &s.url("/v1/memories?created_after=2999-01-01T00:00:00Z"),
        &[],
        None,
    );
    assert_eq!(later.body["items"], json!([]));
    let earlier = raw(
        "GET",
        &s.url("/v1/memories?user_id=u&created_before=2999-01-01T00:00:00Z"),
        &[],
        None,
    );
    assert_eq!(earlier.body["items"].as_array().map(Vec::len), Some(12));
    let r = raw(
        "GET",
        &s.url("/v1/memories?created_after=yesterday"),
        &[],
        None,
    );
    assert_eq!(r.status, 422, "{}", r.body);
}

/// An update with an `actor` is in the memory's history under that name (as the
/// dashboard's edits are); without one, the change is the user's; a bad name is refused
/// and changes nothing.
#[test]
fn an_update_with_an_actor_is_in_the_history() {
    let s = TestServer::open();
    let r = post(
        &s,
        "/v1/memories",
        &json!({"content": "The boat is red", "user_id": "u"}),
    );
    let id = r.body["id"].as_str().expect("id").to_owned();
    let patch = |body: Value| {
        raw(
            "PATCH",
            &s.url(&format!("/v1/memories/{id}")),
            &[JSON],
            Some(&body.to_string()),
        )
    };
    let history = || {
        raw(
            "GET",
            &s.url(&format!("/v1/memories/{id}/history")),
            &[],
            None,
        )
    };
    assert_eq!(patch(json!({"content": "The boat is blue"})).status, 200);
    let h = history().body;
    assert_eq!(h["history"].as_array().map(Vec::len), Some(2), "{h}");
    assert_eq!(h["history"][0]["event"], "add", "{h}");
    assert_eq!(h["history"][1]["actor"], "user", "without an actor: {h}");
    let r = patch(json!({"content": "The boat is green", "actor": "bad actor!"}));
    assert_eq!((r.status, r.code()), (422, "invalid_input"));
    let r = patch(json!({"content": "The boat is green", "actor": "dashboard"}));
    assert_eq!(r.status, 200, "{}", r.body);
    let h = history().body;
    assert_eq!(h["history"].as_array().map(Vec::len), Some(3), "{h}");
    assert_eq!(h["history"][2]["actor"], "dashboard");
    assert_eq!(h["history"][2]["old"], "The boat is blue");
    assert_eq!(h["history"][2]["new"], "The boat is green");
}
