//! `muisti serve`, `muisti keys`, `muisti mcp` and `--server`, as processes.

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use muisti_client::{Client, NewMemory};
use muisti_testkit::python_with;
use serde_json::{Value, json};

use super::{muisti, ok, stderr, stdout};

/// A running `muisti serve` process, killed when dropped.
pub(crate) struct Served {
    pub child: Child,
    pub base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `muisti serve` on `listen` with `home` as its data directory, its output discarded.
fn serve_command(home: &Path, listen: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_muisti"));
    cmd.args(["serve", "--listen", listen])
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("MUISTI_STORE")
        .env_remove("MUISTI_LISTEN")
        .env_remove("MUISTI_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Starts `muisti serve` with `home` as its data directory and waits until it answers.
pub(crate) fn serve(home: &Path, extra: &[&str]) -> Served {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let child = serve_command(home, &listen)
        .args(extra)
        .spawn()
        .expect("muisti serve starts");
    let served = Served {
        child,
        base: format!("http://{listen}"),
    };
    let start = Instant::now();
    loop {
        if std::net::TcpStream::connect(&listen).is_ok() {
            return served;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The serving line says where the dashboard, MCP and the OpenAPI document are.
#[test]
fn the_serving_line_names_the_dashboard_mcp_and_openapi() {
    use std::io::BufRead;
    let home = tempfile::tempdir().expect("temp dir");
    let listen = format!("127.0.0.1:{}", free_port());
    let mut child = serve_command(home.path(), &listen)
        .stderr(Stdio::piped())
        .spawn()
        .expect("muisti serve starts");
    let lines = std::io::BufReader::new(child.stderr.take().expect("piped")).lines();
    let line = lines
        .map_while(Result::ok)
        .find(|l| l.contains("muisti serving"))
        .unwrap_or_default();
    let _ = child.kill();
    let _ = child.wait();
    for part in ["/ui", "/mcp", "/openapi.json"] {
        assert!(
            line.contains(&format!("http://{listen}{part}")),
            "{part}: {line}"
        );
    }
}

/// README's curl examples, run as written against `muisti serve` on the default store (only
/// the port is changed to a free one).
#[test]
fn the_readme_curl_examples_work_against_the_default_store() {
    if Command::new("curl").arg("--version").output().is_err() {
        muisti_testkit::service_unavailable("curl", "not installed");
        return;
    }
    let home = tempfile::tempdir().expect("temp dir");
    let s = serve(home.path(), &[]);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README");
    let start = readme
        .find("<!-- curl-examples -->")
        .expect("README marks its curl examples");
    let end = readme[start..]
        .find("<!-- /curl-examples -->")
        .expect("end marker")
        + start;
    let block = &readme[start..end];
    let script: String = block
        .lines()
        .skip_while(|l| !l.starts_with("```sh"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("http://127.0.0.1:7878", &s.base);
    assert!(script.matches("curl").count() >= 5, "{script}");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .output()
        .expect("bash runs");
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "README examples failed: {text}{}",
        stderr(&out)
    );
    // The recall example finds the memory stored before it, by meaning.
    let hits = text
        .find("\"hits\":[{")
        .expect("the recall example found something");
    assert!(text[hits..].contains("Lisbon"), "{text}");
    assert!(!text.contains("\"error\""), "an example failed: {text}");
    // The server wrote to the default store: the CLI sees the same data.
    let listed = ok(muisti(home.path(), &["list"]));
    assert!(listed.contains("Lisbon"), "{listed}");
}

/// SIGTERM while clients write: the server stops accepting, finishes what is in flight and
/// exits cleanly; every write it acknowledged is in the store afterwards.
#[test]
fn graceful_shutdown_keeps_every_acknowledged_write() {
    let home = tempfile::tempdir().expect("temp dir");
    let mut s = serve(home.path(), &[]);
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let failures: Arc<Mutex<u32>> = Arc::default();
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let client = Client::new(&s.base).expect("client");
            let acked = Arc::clone(&acked);
            let failures = Arc::clone(&failures);
            std::thread::spawn(move || {
                for i in 0..100_000 {
                    match client.create(&NewMemory::text(format!("writer {w} note {i}"))) {
                        Ok(m) => acked.lock().expect("lock").push(m.id),
                        Err(_) => {
                            *failures.lock().expect("lock") += 1;
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    let start = Instant::now();
    while acked.lock().expect("lock").len() < 200 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "writes are too slow"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = terminate(&mut s.child);
    for w in writers {
        w.join().expect("writer");
    }
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    let acked = acked.lock().expect("lock").clone();
    assert_eq!(
        *failures.lock().expect("lock"),
        6,
        "every writer saw the server go"
    );

    // Restart on the same store and read every acknowledged id back.
    let s2 = serve(home.path(), &[]);
    let client = Client::new(&s2.base).expect("client");
    let total = client.stats().expect("stats").total as usize;
    assert!(
        total >= acked.len(),
        "{total} stored, {} acknowledged",
        acked.len()
    );
    for id in &acked {
        assert!(
            client.get(id).expect("get").is_some(),
            "acknowledged write {id} lost"
        );
    }
}

#[test]
fn keys_and_the_cli_against_a_server() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let made: Value = serde_json::from_str(&ok(muisti(
        h,
        &[
            "keys", "create", "--tenant", "acme", "--label", "laptop", "--json",
        ],
    )))
    .expect("json");
    let key = made["key"].as_str().expect("key").to_owned();
    let id = made["id"].as_str().expect("id").to_owned();
    let admin = ok(muisti(
        h,
        &["keys", "create", "--tenant", "ops", "--operator"],
    ));
    let admin = admin.trim().to_owned();
    let listed = ok(muisti(h, &["keys", "list"]));
    assert!(listed.contains(&id) && listed.contains("acme") && listed.contains("laptop"));
    assert!(!listed.contains(&key), "listing never prints a key");
    let bad = muisti(h, &["keys", "create", "--tenant", "_muisti"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));

    let s = serve(h, &[]);
    let remote = |args: &[&str], key: &str| {
        let mut all = vec!["--server", s.base.as_str(), "--api-key", key];
        all.extend_from_slice(args);
        muisti(h, &all)
    };
    let stored = ok(remote(
        &["remember", "I moved to Lisbon in March", "--user", "alice"],
        &key,
    ));
    assert_eq!(stored.trim().len(), 26, "prints the new id: {stored}");
    let found = ok(remote(
        &["recall", "which city does the user live in now"],
        &key,
    ));
    assert!(found.contains("Lisbon"), "{found}");
    ok(remote(&["kv", "set", "tier", "gold", "-n", "user:1"], &key));
    assert_eq!(
        ok(remote(&["kv", "get", "tier", "-n", "user:1"], &key)).trim(),
        "gold"
    );
    let stats: Value = serde_json::from_str(&ok(remote(&["stats", "--json"], &key))).expect("json");
    assert_eq!(stats["tenant"], "acme");
    assert_eq!(stats["total"], 2);

    let denied = remote(&["stats"], "muisti_0000000000000000_00");
    assert_eq!(denied.status.code(), Some(2));
    assert!(stderr(&denied).contains("401"), "{}", stderr(&denied));
    let other = ok(remote(&["recall", "Lisbon"], &admin));
    assert!(
        !other.contains("Lisbon"),
        "another tenant sees nothing: {other}"
    );

    let revoked = ok(remote(&["keys", "revoke", &id], &admin));
    assert!(revoked.contains(&id));
    let after = remote(&["stats"], &key);
    assert_eq!(
        after.status.code(),
        Some(2),
        "a revoked key is refused at once"
    );
}

#[test]
fn serve_refuses_a_public_address_without_keys() {
    let home = tempfile::tempdir().expect("temp dir");
    let out = muisti(home.path(), &["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("without API keys"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn serve_reads_a_config_file_and_flags_override_it() {
    let home = tempfile::tempdir().expect("temp dir");
    let cfg = home.path().join("muisti.toml");
    std::fs::write(&cfg, "body_limit_bytes = 2048\nlisten = \"127.0.0.1:1\"\n").expect("write");
    let s = serve(home.path(), &["--config", cfg.to_str().expect("utf-8")]);
    let err = Client::new(&s.base)
        .expect("client")
        .create(&NewMemory::text("x".repeat(3000)))
        .expect_err("over the file's body limit");
    assert_eq!(
        err.status(),
        Some(413),
        "the file's body limit applies: {err}"
    );
    let bad = home.path().join("bad.toml");
    std::fs::write(&bad, "lisen = 1\n").expect("write");
    let out = muisti(
        home.path(),
        &["serve", "--config", bad.to_str().expect("utf-8")],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("lisen"), "{}", stderr(&out));
}

fn check_mcp_session(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "mcp client failed: {}{}",
        stdout(out),
        stderr(out)
    );
    let v: Value = serde_json::from_str(stdout(out).trim()).expect("json from the client");
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for t in [
        "remember",
        "recall",
        "similar",
        "get",
        "update",
        "forget",
        "list",
        "stats",
        "kv_get",
        "kv_set",
        "kv_forget",
        "graph_entities",
        "graph_relations",
    ] {
        assert!(tools.contains(&t), "{t} listed: {tools:?}");
    }
    assert_eq!(
        v["remember_schema"]["required"],
        serde_json::json!(["content"])
    );
    assert!(!v["stored_is_error"].as_bool().expect("bool"));
    let id = v["stored"]["id"].as_str().expect("stored id");
    let hits = v["recalled"]["hits"].as_array().expect("hits");
    assert_eq!(hits[0]["memory"]["id"].as_str(), Some(id), "{v}");
    assert!(
        v["bad_is_error"].as_bool().expect("bool"),
        "a bad id is an MCP error: {v}"
    );
    let similar = v["similar"]["hits"].as_array().expect("similar hits");
    assert_eq!(
        similar[0]["memory"]["content"], "Lisbon is my favourite city",
        "{v}"
    );
    let filtered = v["filtered"]["hits"].as_array().expect("filtered hits");
    assert_eq!(filtered.len(), 1, "only the tagged memory: {v}");
    assert_eq!(filtered[0]["memory"]["tags"], serde_json::json!(["travel"]));
    assert_eq!(v["stats"]["total"], 2, "two memories: {v}");
    assert!(!v["kv_forgot_is_error"].as_bool().expect("bool"), "{v}");
    assert!(
        v["kv_after_is_error"].as_bool().expect("bool"),
        "forgotten: {v}"
    );
}

#[test]
fn the_official_python_mcp_client_over_stdio() {
    let Some(py) = python_with("mcp") else { return };
    let home = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}/mcp.db", home.path().display());
    let out = Command::new(py)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py"))
        .args(["stdio", env!("CARGO_BIN_EXE_muisti"), &store])
        .output()
        .expect("python runs");
    check_mcp_session(&out);
}

#[test]
fn the_official_python_mcp_client_over_streamable_http() {
    let Some(py) = python_with("mcp") else { return };
    let home = tempfile::tempdir().expect("temp dir");
    let key = ok(muisti(
        home.path(),
        &["keys", "create", "--tenant", "assistant"],
    ));
    let s = serve(home.path(), &[]);
    let out = Command::new(py)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.py"))
        .args(["http", &format!("{}/mcp", s.base), key.trim()])
        .output()
        .expect("python runs");
    check_mcp_session(&out);
    let stats: Value = serde_json::from_str(&ok(muisti(
        home.path(),
        &["--tenant", "assistant", "stats", "--json"],
    )))
    .expect("json");
    assert_eq!(stats["total"], 2, "written as the key's tenant");
}

#[test]
fn the_openapi_document_validates_as_3_1() {
    let Some(py) = python_with("openapi_spec_validator") else {
        return;
    };
    let home = tempfile::tempdir().expect("temp dir");
    let doc = home.path().join("openapi.json");
    std::fs::write(&doc, ok(muisti(home.path(), &["openapi"]))).expect("write");
    let out = Command::new(py)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/validate_openapi.py"
        ))
        .arg(&doc)
        .output()
        .expect("python runs");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out).trim(), "valid 3.1.0");
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/openapi.json"
    ))
    .expect("docs/openapi.json");
    assert_eq!(
        std::fs::read_to_string(&doc).expect("read"),
        committed,
        "docs/openapi.json matches the code"
    );
}

/// The same commands locally and through `--server`: every tag filters, missing things exit
/// 1 with one line, bad input exits 2 with one line.
#[test]
fn local_and_server_modes_agree_on_filters_and_exit_codes() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    for (content, tags) in [
        ("alpha only", &["a"][..]),
        ("alpha and beta", &["a", "b"]),
        ("beta only", &["b"]),
    ] {
        let mut args = vec!["remember", content];
        for t in tags {
            args.extend(["--tag", t]);
        }
        ok(muisti(h, &args));
    }
    let s = serve(h, &[]);
    let modes: [Vec<&str>; 2] = [vec![], vec!["--server", s.base.as_str()]];
    for mode in &modes {
        let run = |args: &[&str]| {
            let mut all = mode.clone();
            all.extend_from_slice(args);
            muisti(h, &all)
        };
        let listed: Value =
            serde_json::from_str(&ok(run(&["list", "--tag", "a", "--tag", "b", "--json"])))
                .expect("json");
        let contents: Vec<&str> = listed["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect();
        assert_eq!(contents, ["alpha and beta"], "mode {mode:?}");
        for (args, code) in [
            (&["kv", "get", "no-such-key"][..], 1),
            (&["kv", "forget", "no-such-key"], 1),
            (&["get", "no-such-key"], 1),
            (&["remember", "x", "--ttl", "-5"], 2),
            (&["list", "--no-such-flag"], 2),
        ] {
            let o = run(args);
            assert_eq!(
                o.status.code(),
                Some(code),
                "{args:?} in mode {mode:?}: {}",
                stderr(&o)
            );
            assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        }
    }
    let o = muisti(h, &["similar", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = muisti(h, &["--store", "redis://127.0.0.1:1", "stats"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "unavailable store: {}",
        stderr(&o)
    );
}

/// `update`, `similar` and `stats -n` print the same locally and through `--server`; a
/// stale `--expected-version` is refused in both; flags a command would ignore are refused.
#[test]
fn update_similar_and_stats_agree_in_both_modes_and_ignored_flags_are_refused() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let made: Value =
        serde_json::from_str(&ok(muisti(h, &["remember", "Rex is a labrador", "--json"])))
            .expect("json");
    let id = made["id"].as_str().expect("id").to_owned();
    // Alice's, as the first becomes below: similar memories are the memory's own user's.
    ok(muisti(
        h,
        &["remember", "Rex likes the park", "--user", "alice"],
    ));
    ok(muisti(
        h,
        &["remember", "the invoice is due", "-n", "billing"],
    ));
    let s = serve(h, &[]);
    let modes: [Vec<&str>; 2] = [vec![], vec!["--server", s.base.as_str()]];
    let mut similar = Vec::new();
    for (version, mode) in (1..).zip(modes.iter()) {
        let run = |args: &[&str]| {
            let mut all = mode.clone();
            all.extend_from_slice(args);
            muisti(h, &all)
        };
        let v = u64::to_string(&version);
        let updated: Value = serde_json::from_str(&ok(run(&[
            "update",
            &id,
            "--importance",
            "0.9",
            "--user-id",
            "alice",
            "--expected-version",
            &v,
            "--json",
        ])))
        .expect("json");
        assert_eq!(updated["version"], version + 1, "mode {mode:?}");
        assert_eq!(updated["user_id"], "alice");
        let stale = run(&["update", &id, "--content", "x", "--expected-version", &v]);
        assert_eq!(stale.status.code(), Some(2), "mode {mode:?}");
        assert_eq!(stderr(&stale).lines().count(), 1, "{}", stderr(&stale));
        assert!(stderr(&stale).contains("conflict"), "{}", stderr(&stale));
        similar.push(ok(run(&["similar", &id, "--json"])));
        let stats: Value =
            serde_json::from_str(&ok(run(&["stats", "-n", "billing", "--json"]))).expect("json");
        assert_eq!(stats["total"], 1, "mode {mode:?}: {stats}");
        let missing = run(&["similar", "01ARZ3NDEKTSV4RRFFQ69G5FAV"]);
        assert_eq!(missing.status.code(), Some(1), "mode {mode:?}");
    }
    // The same hits with the same scores; a score may differ in its last bits, the
    // recency boost read a moment later in the second mode.
    let rounded = |text: &str| -> Value {
        let mut v: Value = serde_json::from_str(text).expect("json");
        for hit in v.as_array_mut().into_iter().flatten() {
            if let Some(score) = hit["score"].as_f64() {
                hit["score"] = json!((score * 1e5).round() / 1e5);
            }
        }
        v
    };
    assert_eq!(
        rounded(&similar[0]),
        rounded(&similar[1]),
        "similar differs between modes"
    );
    assert!(similar[0].contains("Rex likes the park"), "{}", similar[0]);
    for args in [
        &["serve", "--json"][..],
        &["openapi", "--json"],
        &["--tenant", "acme", "serve"],
        &[
            "--server",
            s.base.as_str(),
            "chat",
            "--model",
            "m",
            "-m",
            "hi",
        ],
        &["bench", "http", "--seconds", "-1"],
        &["bench", "http", "--seconds", "0"],
        &["bench", "store", "-n", "10"],
    ] {
        let o = muisti(h, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
    }
}
