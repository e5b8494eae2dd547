//! The `muisti` binary, run as a user would: one process per command.

use std::{
    io::Write,
    path::Path,
    process::{Command, Output, Stdio},
};

use serde_json::Value;

mod benches;
mod chat;
mod crash;
mod deletion;
mod docs;
mod lifecycle;
mod modes;
mod serve;
mod servers;

/// Runs `muisti ARGS` with its data directory under `home` and no MUISTI_STORE.
fn muisti(home: &Path, args: &[&str]) -> Output {
    muisti_with_stdin(home, args, None)
}

fn muisti_with_stdin(home: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_muisti"));
    cmd.args(args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("MUISTI_STORE")
        .env_remove("MUISTI_TENANT")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("muisti runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(input)
            .expect("writes stdin");
    }
    child.wait_with_output().expect("muisti finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}{}", stdout(&o), stderr(&o));
    stdout(&o)
}

/// The "done when" of the foundation: similar namespaces stay apart, across processes, on
/// the SQLite default and on the file store.
#[test]
fn similar_namespaces_stay_apart_across_processes() {
    let home = tempfile::tempdir().expect("temp dir");
    let file_url = format!("file://{}", home.path().join("files").display());
    for store in [None, Some(file_url.as_str())] {
        let with = |args: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = store
                .map(|s| vec!["--store".to_string(), s.to_string()])
                .unwrap_or_default();
            v.extend(args.iter().map(|a| a.to_string()));
            v
        };
        let run = |args: &[&str]| {
            let v = with(args);
            muisti(
                home.path(),
                &v.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        };
        ok(run(&["kv", "set", "k", "v", "-n", "user:1"]));
        ok(run(&["kv", "set", "k", "w", "-n", "user_1"]));
        assert_eq!(
            ok(run(&["kv", "get", "k", "-n", "user:1"])),
            "v\n",
            "{store:?}"
        );
        assert_eq!(
            ok(run(&["kv", "get", "k", "-n", "user_1"])),
            "w\n",
            "{store:?}"
        );
    }
    // The default store lives under the data directory (XDG on Linux), not the current
    // directory.
    if cfg!(target_os = "linux") {
        assert!(home.path().join("data/muisti/muisti.db").exists());
    }
}

#[test]
fn a_bad_namespace_fails_and_writes_nothing() {
    let home = tempfile::tempdir().expect("temp dir");
    for args in [
        &["kv", "get", "k", "-n", "../etc"][..],
        &["kv", "set", "k", "v", "-n", "../etc"][..],
        &["remember", "text", "-n", "a/b"][..],
    ] {
        let out = muisti(home.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("invalid namespace"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    let err = stderr(&muisti(home.path(), &["kv", "get", "k", "-n", "../etc"]));
    assert!(err.contains("must not contain '..'"), "{err}");
    assert!(!home.path().join("data").exists(), "a store was created");
}

#[test]
fn remember_then_search_round_trip() {
    let home = tempfile::tempdir().expect("temp dir");
    let id = ok(muisti(
        home.path(),
        &["remember", "I moved to Lisbon in March", "--user", "alice"],
    ));
    let id = id.trim();
    ok(muisti(
        home.path(),
        &["remember", "My favourite food is bacalhau"],
    ));
    let out = ok(muisti(
        home.path(),
        &["--json", "search", "when did I move to Lisbon", "--explain"],
    ));
    let hits: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits[0]["memory"]["id"], id);
    assert_eq!(hits[0]["memory"]["user_id"], "alice");
    assert!(hits[0]["signals"]["lexical_rank"].is_number());
    // The seed's word-overlap rule is still there: only the memory sharing a word.
    let out = ok(muisti(
        home.path(),
        &[
            "--json",
            "search",
            "--mode",
            "overlap",
            "when did I move to Lisbon",
        ],
    ));
    let hits: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits.as_array().map(Vec::len), Some(1));
    assert_eq!(hits[0]["memory"]["id"], id);
    let got: Value =
        serde_json::from_str(&ok(muisti(home.path(), &["--json", "get", id]))).expect("json");
    assert_eq!(got["content"], "I moved to Lisbon in March");
    assert_eq!(got["access_count"], 2);
    let listed = ok(muisti(home.path(), &["list", "--user", "alice"]));
    assert_eq!(listed.lines().count(), 1);
    // A blank query is refused with one line, as the API refuses it (422).
    for blank in ["", "   "] {
        let refused = muisti(home.path(), &["search", blank]);
        assert_eq!(refused.status.code(), Some(2), "{refused:?}");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(said.trim().lines().count(), 1, "{said}");
        assert!(
            said.contains("query") && said.contains("must not be empty"),
            "{said}"
        );
    }
    ok(muisti(home.path(), &["forget", id]));
    assert_eq!(muisti(home.path(), &["get", id]).status.code(), Some(1));
}

#[test]
fn kv_commands() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    ok(muisti(
        h,
        &["kv", "set", "n", "{\"a\": [1, 2]}", "--value-json"],
    ));
    ok(muisti(h, &["kv", "set", "s", "plain text"]));
    assert_eq!(ok(muisti(h, &["kv", "get", "n"])), "{\"a\":[1,2]}\n");
    assert_eq!(ok(muisti(h, &["kv", "has", "s"])), "true\n");
    let all: Value = serde_json::from_str(&ok(muisti(h, &["--json", "kv", "all"]))).expect("json");
    assert_eq!(all["s"], "plain text");
    assert_eq!(all["n"]["a"][1], 2);
    ok(muisti(h, &["kv", "forget", "s"]));
    let out = muisti(h, &["kv", "has", "s"]);
    assert_eq!(
        (out.status.code(), stdout(&out)),
        (Some(1), "false\n".into())
    );
    assert_eq!(muisti(h, &["kv", "get", "s"]).status.code(), Some(1));
    assert_eq!(ok(muisti(h, &["kv", "flush"])), "flushed 1\n");
    let stats: Value = serde_json::from_str(&ok(muisti(h, &["--json", "stats"]))).expect("json");
    assert_eq!(stats["total"], 0);
    assert_eq!(stats["backend"], "sqlite");
}

#[test]
fn bad_input_is_one_line_and_loses_nothing() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    ok(muisti(h, &["kv", "set", "k", "original"]));
    // Malformed JSON.
    let out = muisti(h, &["kv", "set", "k", "{bad", "--value-json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not valid JSON"), "{}", stderr(&out));
    // Over the size limit (1 MiB), from standard input.
    let big = vec![b'x'; (1 << 20) + 10];
    let out = muisti_with_stdin(h, &["kv", "set", "k", "-"], Some(&big));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("too large"), "{}", stderr(&out));
    // A configurable limit, through the store URL.
    let url = format!(
        "sqlite://{}?max_value_bytes=16",
        h.join("small.db").display()
    );
    let out = muisti(
        h,
        &["--store", &url, "kv", "set", "k", "more than sixteen bytes"],
    );
    assert!(
        stderr(&out).contains("the limit is 16 bytes"),
        "{}",
        stderr(&out)
    );
    // Invalid fields.
    let out = muisti(h, &["remember", "x", "--importance", "3"]);
    assert!(stderr(&out).contains("importance"), "{}", stderr(&out));
    let out = muisti(h, &["remember", "x", "--scope", "forever"]);
    assert!(stderr(&out).contains("scope"), "{}", stderr(&out));
    let out = muisti(h, &["kv", "set", "k", "v", "--ttl", "0"]);
    assert!(stderr(&out).contains("ttl"), "{}", stderr(&out));
    // A missing argument is named, on one line.
    let out = muisti(h, &["kv", "set", "k"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("not provided: <VALUE>"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    // Nothing was lost.
    assert_eq!(ok(muisti(h, &["kv", "get", "k"])), "original\n");
    let stats: Value = serde_json::from_str(&ok(muisti(h, &["--json", "stats"]))).expect("json");
    assert_eq!(stats["total"], 1);
}

#[test]
fn unreachable_redis_names_the_url_without_password() {
    let home = tempfile::tempdir().expect("temp dir");
    let out = muisti(
        home.path(),
        &[
            "--store",
            "redis://:hunter2@127.0.0.1:1/0",
            "kv",
            "get",
            "k",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "unavailable");
    let err = stderr(&out);
    assert!(err.contains("redis://:***@127.0.0.1:1/0"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

/// A Redis URL without a host reads its server from `REDIS_URL` (the unreachable one named in
/// the error proves it was read), and with a reachable one writes there.
#[test]
fn a_redis_url_without_a_host_reads_redis_url() {
    let home = tempfile::tempdir().expect("temp dir");
    let run = |redis_url: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_muisti"))
            .args(args)
            .env("XDG_DATA_HOME", home.path().join("data"))
            .env("HOME", home.path())
            .env_remove("MUISTI_STORE")
            .env("REDIS_URL", redis_url)
            .stdin(Stdio::null())
            .output()
            .expect("muisti runs")
    };
    let out = run(
        "redis://:hunter2@127.0.0.1:1/0",
        &["--store", "redis://", "kv", "get", "k"],
    );
    assert_eq!(out.status.code(), Some(3), "unavailable: {}", stderr(&out));
    assert!(
        stderr(&out).contains("redis://:***@127.0.0.1:1/0"),
        "{}",
        stderr(&out)
    );

    let url = muisti_testkit::redis_keys::base_url();
    if let Err(e) = muisti::RedisStore::open(&url) {
        muisti_testkit::service_unavailable("redis", &e.to_string());
        return;
    }
    let keys = muisti_testkit::redis_keys::KeyPrefix::fresh(url.clone(), "muisti-redis-url");
    let store = format!("redis://?prefix={}", keys.prefix);
    ok(run(
        &url,
        &["--store", &store, "kv", "set", "city", "Lisbon"],
    ));
    let direct = muisti::Engine::open(&keys.store_url()).expect("the same keys, named in full");
    let value = direct
        .kv()
        .get(&muisti::Namespace::new("default").expect("name"), "city")
        .expect("read");
    assert_eq!(
        value,
        Some(Value::from("Lisbon")),
        "written to REDIS_URL's server under the prefix"
    );
}

#[test]
fn unknown_scheme_lists_the_known_ones() {
    let home = tempfile::tempdir().expect("temp dir");
    let err = stderr(&muisti(home.path(), &["--store", "bogus://x", "stats"]));
    assert!(err.contains("unknown scheme \"bogus\""), "{err}");
    assert!(err.contains("sqlite"), "{err}");
}

#[test]
fn output_closed_early_is_not_an_error() {
    let home = tempfile::tempdir().expect("temp dir");
    // Far more than a pipe buffer holds, so the writer meets the closed pipe.
    let value = "x".repeat(8_000);
    for i in 0..40 {
        ok(muisti(
            home.path(),
            &["kv", "set", &format!("k{i}"), &value],
        ));
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_muisti"))
        .args(["--json", "kv", "all"])
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env_remove("MUISTI_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    // Close our end of the pipe without reading.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("finishes");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
}

/// A meaning match with no shared keyword, offline, with the built-in embedder.
#[test]
fn recall_by_meaning_without_shared_words() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let id = ok(muisti(h, &["remember", "I moved to Lisbon in March"]));
    for other in [
        "My favourite food is grilled sardines",
        "I work as a nurse at the hospital",
        "My sister has two cats and a dog",
    ] {
        ok(muisti(h, &["remember", other]));
    }
    let out = ok(muisti(
        h,
        &[
            "--json",
            "search",
            "--mode",
            "vector",
            "which city does the user live in now",
        ],
    ));
    let hits: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits[0]["memory"]["id"], id.trim(), "{out}");
    let out = ok(muisti(
        h,
        &["--json", "search", "which city does the user live in now"],
    ));
    let hits: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits[0]["memory"]["id"], id.trim(), "{out}");
}

#[test]
fn reindex_reports_what_it_did() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    ok(muisti(h, &["remember", "I moved to Lisbon in March"]));
    ok(muisti(
        h,
        &["remember", "My favourite food is grilled sardines"],
    ));
    assert_eq!(
        ok(muisti(h, &["reindex"])).split(" in ").next(),
        Some("re-embedded 0 of 2 memories")
    );
    let report: Value =
        serde_json::from_str(&ok(muisti(h, &["--json", "reindex", "--force"]))).expect("json");
    assert_eq!(report["reembedded"], 2);
    assert_eq!(report["scanned"], 2);
}

#[test]
fn context_makes_an_answer_findable_by_its_question() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let answer = ok(muisti(
        h,
        &[
            "remember",
            "5 years already!",
            "--context",
            "How long have you been married?",
        ],
    ));
    ok(muisti(h, &["remember", "We went hiking last weekend"]));
    let out = ok(muisti(
        h,
        &["--json", "search", "--mode", "lexical", "how long married"],
    ));
    let hits: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(hits[0]["memory"]["id"], answer.trim(), "{out}");
    assert_eq!(
        hits[0]["memory"]["context"],
        "How long have you been married?"
    );
    assert_eq!(hits[0]["memory"]["content"], "5 years already!");
}

/// Read-only commands pointed at a directory that is not a store (a typo such as
/// `file:///etc`) leave it exactly as it was: no metadata, no lock files.
#[test]
fn read_only_commands_write_nothing() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("etc");
    std::fs::create_dir(&dir).expect("dir");
    std::fs::write(dir.join("hosts"), "127.0.0.1 localhost\n").expect("writes");
    let listing = |d: &Path| {
        let mut names = muisti_testkit::paths_under(d);
        names.sort();
        names
    };
    let before = listing(&dir);
    let url = format!("file://{}", dir.display());
    for args in [
        &["stats"][..],
        &["list"],
        &["search", "hello"],
        &["get", "some-key"],
        &["kv", "get", "k"],
        &["kv", "all"],
        &["kv", "has", "k"],
    ] {
        let out = muisti(
            home.path(),
            &[&["--store", url.as_str()][..], args].concat(),
        );
        assert!(
            matches!(out.status.code(), Some(0 | 1 | 3)),
            "{args:?}: {}",
            stderr(&out)
        );
        assert_eq!(listing(&dir), before, "{args:?} wrote to the directory");
    }
}

/// Declarative memory from the command line: a restatement supersedes in place; an
/// agent-learned entry waits for `muisti confirm`; the history shows each step.
#[test]
fn declarative_entries_from_the_command_line() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let fact = ["--scope", "declarative", "--type", "fact", "--user", "ada"];
    let first = ok(muisti(
        h,
        &[&["remember", "I live in Paris"][..], &fact].concat(),
    ));
    let second = ok(muisti(
        h,
        &[&["remember", "I moved to Berlin"][..], &fact].concat(),
    ));
    assert_eq!(first.trim(), second.trim(), "superseded in place");
    let learned = [
        &[
            "remember",
            "The user lives in Rome",
            "--source",
            "agent_learned",
        ][..],
        &["--confidence", "80"],
        &fact,
    ]
    .concat();
    let gated = muisti(h, &learned);
    assert!(!gated.status.success());
    assert!(
        stderr(&gated).contains("confirmation required"),
        "{}",
        stderr(&gated)
    );
    let pending = ok(muisti(h, &["proposals", "--user", "ada", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&pending).expect("json");
    let id = v["proposals"][0]["id"]
        .as_str()
        .expect("a proposal")
        .to_owned();
    assert_eq!(
        v["proposals"][0]["supersedes"]["content"],
        "I moved to Berlin"
    );
    assert_eq!(
        muisti(h, &["confirm", &id, "--user", "bob"]).status.code(),
        Some(1),
        "another user's proposal is not found"
    );
    assert_eq!(
        muisti(h, &["confirm", &id]).status.code(),
        Some(2),
        "the proposal's user is needed"
    );
    let kept = ok(muisti(h, &["confirm", &id, "--user", "ada"]));
    assert_eq!(kept.trim(), first.trim(), "the user's word stands");
    assert!(
        !muisti(h, &["confirm", &id, "--user", "ada"])
            .status
            .success(),
        "once"
    );
    let id = first.trim();
    assert!(
        !muisti(h, &["history", id, "--user", "bob"])
            .status
            .success(),
        "another user does not read an entry's history"
    );
    assert!(
        ok(muisti(h, &["history", id])).contains("supersede"),
        "read by its id"
    );
    let history = ok(muisti(h, &["history", id, "--user", "ada"]));
    assert!(
        history.contains("add") && history.contains("supersede"),
        "{history}"
    );
    assert!(
        history.contains("I live in Paris -> I moved to Berlin"),
        "{history}"
    );
    // By id, the entry is its user's alone, as over the API.
    for other in [&["get", id][..], &["get", id, "--user", "bob"]] {
        assert_eq!(
            muisti(h, other).status.code(),
            Some(1),
            "{other:?}: not found"
        );
    }
    assert!(ok(muisti(h, &["get", id, "--user", "ada"])).contains("Berlin"));
    assert_eq!(
        muisti(h, &["forget", id, "--user", "bob"]).status.code(),
        Some(1)
    );
    ok(muisti(h, &["forget", id, "--user", "ada"]));
    assert_eq!(
        muisti(h, &["get", id, "--user", "ada"]).status.code(),
        Some(1)
    );
}

/// The seed's graph example from the command line: each `remember` process reads its memory
/// into the graph before it exits (the pronoun of the second resolved across processes),
/// and `muisti graph` queries the store.
#[test]
fn the_graph_from_the_command_line() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    for text in [
        "Alice works at Google in Mountain View.",
        "She is the manager of the ML team.",
        "Bob reports to Alice and works on TensorFlow.",
    ] {
        ok(muisti(
            h,
            &[
                "--graph-extractor",
                "offline",
                "remember",
                text,
                "--user",
                "g1",
                "--session",
                "s1",
            ],
        ));
    }
    let q = ok(muisti(
        h,
        &[
            "graph",
            "query",
            "--predicate",
            "works_at",
            "--user",
            "g1",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&q).expect("json");
    assert_eq!(v["relations"][0]["subject"], "Alice", "{v}");
    assert_eq!(v["relations"][0]["object"], "Google", "{v}");
    assert_eq!(v["relations"].as_array().map(Vec::len), Some(1), "{v}");
    let alice = ok(muisti(h, &["graph", "relations", "alice", "--user", "g1"]));
    assert!(alice.contains("Alice manager_of ML team"), "{alice}");
    assert!(alice.contains("Bob reports_to Alice"), "{alice}");
    // Two steps from Bob reach Google's place.
    let hood = ok(muisti(
        h,
        &["graph", "relations", "bob", "--hops", "2", "--user", "g1"],
    ));
    assert!(hood.contains("Alice works_at Google"), "{hood}");
    assert!(
        !hood.contains("Google located_in"),
        "three steps away: {hood}"
    );
    let far = ok(muisti(
        h,
        &["graph", "relations", "bob", "--hops", "3", "--user", "g1"],
    ));
    assert!(far.contains("Google located_in Mountain View"), "{far}");
    let merged = ok(muisti(
        h,
        &[
            "graph",
            "merge",
            "ML team",
            "TensorFlow",
            "--user",
            "g1",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(&merged).expect("json");
    assert_eq!(v["aliases"], serde_json::json!(["TensorFlow"]), "{v}");
    let again = muisti(
        h,
        &["graph", "merge", "ML team", "TensorFlow", "--user", "g1"],
    );
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    let too_far = muisti(h, &["graph", "relations", "bob", "--hops", "9"]);
    assert_eq!(too_far.status.code(), Some(2), "{}", stderr(&too_far));
    let people = ok(muisti(
        h,
        &["graph", "entities", "--user", "g1", "--type", "person"],
    ));
    assert!(people.contains("Alice (person), 3 mentions"), "{people}");
    let bad = muisti(h, &["graph", "query", "--as-of", "yesterday"]);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a usage error: {}",
        stderr(&bad)
    );
    let off = muisti(h, &["--graph-extractor", "llm-maybe", "graph", "entities"]);
    assert!(!off.status.success(), "an unknown extractor is refused");
}

/// `muisti export | muisti import` between two stores, twice; a bad line; snapshots.
#[test]
fn export_import_and_snapshots_from_the_command_line() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    for i in 0..5 {
        ok(muisti(
            h,
            &[
                "remember",
                &format!("note {i} about the staging cluster"),
                "--user",
                "ana",
            ],
        ));
    }
    let dump = ok(muisti(h, &["export"]));
    assert_eq!(
        dump.lines().count(),
        1 + 5,
        "a header and five records: {dump}"
    );
    let md = format!("markdown://{}", h.join("md").display());
    for _ in 0..2 {
        let out = muisti_with_stdin(h, &["--store", &md, "import"], Some(dump.as_bytes()));
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("imported 5 records"),
            "{}",
            stderr(&out)
        );
    }
    let listed = ok(muisti(
        h,
        &["--store", &md, "list", "--user", "ana", "--json"],
    ));
    let listed: Value = serde_json::from_str(&listed).expect("json");
    let items = listed.get("items").unwrap_or(&listed);
    assert_eq!(items.as_array().map(Vec::len), Some(5), "{listed}");
    // A store copied directly, and the Markdown export to read.
    let copy = format!("sqlite://{}", h.join("copy.db").display());
    let out = muisti(h, &["--store", &copy, "import", "--from", &md]);
    assert!(
        stderr(&out).contains("imported 5 records"),
        "{}",
        stderr(&out)
    );
    let text = ok(muisti(
        h,
        &["--store", &copy, "export", "--format", "markdown"],
    ));
    assert!(text.contains("note 3 about the staging cluster"), "{text}");
    // With a clustering of the user's memories (the engine's own record, vectors included;
    // eight memories at least), the Markdown export still holds the memories only.
    for i in 5..9 {
        let note = format!("note {i} about the staging cluster");
        ok(muisti(
            h,
            &["--store", &copy, "remember", &note, "--user", "ana"],
        ));
    }
    ok(muisti(
        h,
        &["--store", &copy, "maintain", "--job", "cluster"],
    ));
    let full = ok(muisti(h, &["--store", &copy, "export"]));
    assert!(
        full.contains("_muisti.clusters"),
        "the JSON Lines export keeps it: {full}"
    );
    let text = ok(muisti(
        h,
        &["--store", &copy, "export", "--format", "markdown"],
    ));
    assert!(text.contains("note 3 about the staging cluster"), "{text}");
    assert!(!text.contains("_muisti."), "{text}");
    // A bad line: exit 2, its number.
    let bad = format!("{}\n{{\"id\": 7}}\n", dump.lines().next().expect("header"));
    let out = muisti_with_stdin(h, &["--store", &md, "import"], Some(bad.as_bytes()));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    let out = muisti(h, &["--server", "http://127.0.0.1:9", "export"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Snapshots of the default store.
    let made = ok(muisti(h, &["snapshot", "create", "--json"]));
    let made: Value = serde_json::from_str(&made).expect("json");
    assert_eq!(made["format"], "sqlite", "SQLite's online backup: {made}");
    let id = made["id"].as_str().expect("id").to_owned();
    ok(muisti(
        h,
        &["remember", "written after the snapshot", "--user", "ana"],
    ));
    let out = muisti(h, &["snapshot", "restore", &id]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "restore needs --yes: {}",
        stderr(&out)
    );
    ok(muisti(h, &["snapshot", "restore", &id, "--yes"]));
    let after = ok(muisti(
        h,
        &["search", "written after the snapshot", "--user", "ana"],
    ));
    assert!(!after.contains("written after the snapshot"), "{after}");
    assert!(ok(muisti(h, &["snapshot", "list"])).contains(&id));
    // Deleting snapshots: one by id, and every one older than a retention.
    let second = ok(muisti(h, &["snapshot", "create", "--json"]));
    let second: Value = serde_json::from_str(&second).expect("json");
    ok(muisti(h, &["snapshot", "delete", &id]));
    let listed = ok(muisti(h, &["snapshot", "list"]));
    assert!(!listed.contains(&id), "{listed}");
    assert!(
        listed.contains(second["id"].as_str().expect("id")),
        "{listed}"
    );
    assert_eq!(
        muisti(h, &["snapshot", "delete", &id]).status.code(),
        Some(1)
    );
    ok(muisti(h, &["snapshot", "prune", "--keep-days", "1"]));
    assert!(ok(muisti(h, &["snapshot", "list"])).contains(second["id"].as_str().expect("id")));
    ok(muisti(h, &["snapshot", "prune", "--keep-days", "0"]));
    assert!(ok(muisti(h, &["snapshot", "list"])).contains("no snapshots"));
}

/// `muisti import` writes agent-learned declarative entries as proposals their users confirm
/// (an export can claim anything); `--trusted` writes them as they are.
#[test]
fn an_import_gates_agent_learned_entries_unless_trusted() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let fact = ["--scope", "declarative", "--type", "fact", "--user", "ana"];
    ok(muisti(
        h,
        &[&["remember", "I live in Porto"][..], &fact].concat(),
    ));
    let learned = [
        &[
            "remember",
            "The user is a nurse",
            "--source",
            "agent_learned",
        ][..],
        &["--confidence", "60"],
        &fact,
    ]
    .concat();
    assert!(!muisti(h, &learned).status.success(), "gated at the source");
    let pending = ok(muisti(h, &["proposals", "--user", "ana", "--json"]));
    let v: Value = serde_json::from_str(&pending).expect("json");
    let id = v["proposals"][0]["id"].as_str().expect("a proposal");
    ok(muisti(h, &["confirm", id, "--user", "ana"]));
    let dump = ok(muisti(h, &["export"]));
    let entries = |store: &str| -> String {
        ok(muisti(
            h,
            &[
                "--store",
                store,
                "list",
                "--user",
                "ana",
                "--scope",
                "declarative",
                "--json",
            ],
        ))
    };
    let gated = format!("sqlite://{}", h.join("gated.db").display());
    let out = muisti_with_stdin(h, &["--store", &gated, "import"], Some(dump.as_bytes()));
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = entries(&gated);
    assert!(listed.contains("I live in Porto"), "{listed}");
    assert!(
        !listed.contains("nurse"),
        "not an entry until ana confirms: {listed}"
    );
    let pending = ok(muisti(
        h,
        &["--store", &gated, "proposals", "--user", "ana", "--json"],
    ));
    assert!(pending.contains("The user is a nurse"), "{pending}");
    let trusted = format!("sqlite://{}", h.join("trusted.db").display());
    let out = muisti_with_stdin(
        h,
        &["--store", &trusted, "import", "--trusted"],
        Some(dump.as_bytes()),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = entries(&trusted);
    assert!(
        listed.contains("I live in Porto") && listed.contains("The user is a nurse"),
        "{listed}"
    );
}
