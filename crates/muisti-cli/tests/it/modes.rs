//! Every memory and key-value command, run locally and through `--server` against the same
//! store: the same exit code, the same text and the same JSON (ids, times and the access
//! statistics a recall itself changes aside).

use muisti::MemoryId;
use serde_json::Value;

use super::{muisti, ok, serve::serve, stderr, stdout};

/// What may differ between two runs of one command: generated ids, times, access counts
/// (recall counts an access) and scores (they include that count).
fn normalize_json(v: Value) -> Value {
    match v {
        Value::String(s) if MemoryId::parse(&s).is_ok() => Value::String("<id>".into()),
        Value::String(s) if s.len() >= 20 && s.starts_with("20") && s.ends_with('Z') => {
            Value::String("<time>".into())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(normalize_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "score"
                            | "signals"
                            | "access_count"
                            | "last_accessed_at"
                            | "avg_access_count"
                            | "max_access_count"
                    )
                })
                .map(|(k, v)| (k, normalize_json(v)))
                .collect(),
        ),
        other => other,
    }
}

fn normalize(out: &str, json: bool) -> String {
    if json {
        let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"));
        return normalize_json(v).to_string();
    }
    out.lines()
        .map(|line| {
            if let Ok(v) = serde_json::from_str::<Value>(line.trim()) {
                // An `--explain` line: the signals, which hold the access count.
                return format!(
                    "signals {}",
                    normalize_json(v).as_object().map_or(0, |o| o.len())
                );
            }
            line.split(' ')
                .filter(|w| !(w.len() == 5 && w.starts_with("0.") || w.starts_with("1.000")))
                .map(|w| {
                    let bare = w.trim_matches(|c| c == '[' || c == ']');
                    if MemoryId::parse(bare).is_ok() {
                        "<id>"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_command_prints_the_same_locally_and_through_a_server() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let rex: Value = serde_json::from_str(&ok(muisti(
        h,
        &[
            "remember",
            "Rex is a labrador",
            "--user",
            "alice",
            "--tag",
            "pets",
            "--meta",
            "colour=\"black\"",
            "--json",
        ],
    )))
    .expect("json");
    let rex = rex["id"].as_str().expect("id").to_owned();
    ok(muisti(
        h,
        &["remember", "Rex likes the park", "--user", "alice"],
    ));
    ok(muisti(
        h,
        &[
            "remember",
            "the gold tier gives 10 percent",
            "--key",
            "tier",
        ],
    ));
    ok(muisti(h, &["kv", "set", "lang", "pt", "-n", "prefs"]));
    for (key, ns) in [
        ("a", "both"),
        ("b", "both"),
        ("x", "local"),
        ("x", "remote"),
    ] {
        ok(muisti(h, &["kv", "set", key, "v", "-n", ns]));
    }
    let mut made = Vec::new();
    for n in ["one", "two"] {
        let v: Value = serde_json::from_str(&ok(muisti(
            h,
            &["remember", &format!("to change {n}"), "--json"],
        )))
        .expect("json");
        made.push(v["id"].as_str().expect("id").to_owned());
    }
    let s = serve(h, &[]);
    let server = ["--server", s.base.as_str()];
    let missing = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    // (arguments locally, arguments through the server): the same unless a write needs its
    // own target in each mode.
    fn same<'a>(args: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
        (args.to_vec(), args.to_vec())
    }
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        // First: before any read counts an access (whose time orders ties).
        same(&["list", "--order", "importance"]),
        same(&["list", "--order", "accessed", "--limit", "2"]),
        same(&["list", "--order", "sideways"]),
        same(&["stats", "-n", "prefs", "-u", "alice"]),
        same(&["get", &rex]),
        same(&["get", "tier"]),
        same(&["get", missing]),
        same(&["list"]),
        same(&["list", "--user", "alice", "--tag", "pets"]),
        same(&["list", "--limit", "2"]),
        same(&["search", "what dog does alice have", "--user", "alice"]),
        same(&["search", "park", "--mode", "lexical", "--explain"]),
        same(&["search", "x", "--mode", "sideways"]),
        same(&["similar", &rex]),
        same(&["similar", missing]),
        same(&["similar", &rex, "-n", "both"]),
        same(&["stats"]),
        same(&["stats", "-n", "prefs"]),
        same(&["purge"]),
        same(&["maintain"]),
        same(&["maintain", "--user", "alice", "--dry-run"]),
        same(&[
            "maintain",
            "--job",
            "prune",
            "--max-memories",
            "1",
            "--dry-run",
        ]),
        same(&["maintain", "--job", "prune"]),
        same(&["maintain", "--job", "sideways"]),
        same(&["maintain", "--min-importance", "2"]),
        same(&["maintain", "--promote-after", "0"]),
        same(&[
            "maintain",
            "--job",
            "archive",
            "--archive-after-days",
            "0",
            "--dry-run",
        ]),
        same(&["maintain", "--job", "cluster", "--dry-run", "--exact-only"]),
        same(&["clusters", "--user", "alice"]),
        same(&["clusters", "--user", "a\nb"]),
        same(&["clusters", "--user", "alice", "--cluster", "3"]),
        same(&["restore", missing]),
        same(&["restore", "not-an-id"]),
        same(&["restore", &rex]),
        same(&["search", "dog", "--cluster", "0"]),
        same(&["search", "dog", "--user", "alice", "--include-archived"]),
        same(&["end-conversation", "no-such-conversation"]),
        same(&["end-conversation", "a\nb"]),
        same(&["remember", "a thought", "--scope", "scratch"]),
        same(&[
            "remember",
            "I live in Oslo",
            "--scope",
            "declarative",
            "--type",
            "fact",
        ]),
        same(&["proposals", "--user", "nobody"]),
        same(&["conversations"]),
        same(&["conversation", "no-such-conversation"]),
        same(&["confirm", missing]),
        same(&["reject", "not-an-id"]),
        same(&["history", missing]),
        same(&["history", "not-an-id"]),
        same(&["kv", "get", "lang", "-n", "prefs"]),
        same(&["kv", "get", "nope", "-n", "prefs"]),
        same(&["kv", "has", "lang", "-n", "prefs"]),
        same(&["kv", "all", "-n", "prefs"]),
        same(&["kv", "forget", "nope"]),
        same(&["forget", missing]),
        (
            vec!["update", &made[0], "--content", "changed", "--tag", "t"],
            vec!["update", &made[1], "--content", "changed", "--tag", "t"],
        ),
        same(&["update", missing, "--importance", "0.5"]),
        same(&["update", &rex, "--importance", "7"]),
        // The second write of the same thing replaces (or, for a memory, finds) the first.
        same(&["kv", "set", "k", "v", "-n", "both"]),
        same(&["remember", "new in both modes", "-n", "both"]),
        (
            vec!["kv", "forget", "a", "-n", "both"],
            vec!["kv", "forget", "b", "-n", "both"],
        ),
        (
            vec!["kv", "flush", "-n", "local"],
            vec!["kv", "flush", "-n", "remote"],
        ),
        (vec!["forget", &made[0]], vec!["forget", &made[1]]),
        // A conversation: facts (added, then found again), or messages as said.
        (
            vec![
                "extract",
                "--user",
                "el",
                "-m",
                "user:I live in Oslo and I like tea",
            ],
            vec![
                "extract",
                "--user",
                "er",
                "-m",
                "user:I live in Oslo and I like tea",
            ],
        ),
        (
            vec![
                "extract",
                "--user",
                "nl",
                "--no-infer",
                "-m",
                "user:see you",
                "-m",
                "assistant:bye",
            ],
            vec![
                "extract",
                "--user",
                "nr",
                "--no-infer",
                "-m",
                "user:see you",
                "-m",
                "assistant:bye",
            ],
        ),
        same(&["extract", "--user", "ex", "-m", "robot:hello"]),
        same(&["extract", "--user", "ex", "-m", "no role here"]),
        same(&["extract", "--user", "ex"]),
    ];
    for (local, remote) in cases {
        for json in [false, true] {
            let with_json = |args: &[&str], prefix: &[&str]| {
                let mut all: Vec<&str> = prefix.to_vec();
                if json {
                    all.push("--json");
                }
                all.extend_from_slice(args);
                muisti(h, &all)
            };
            // A write runs in each mode on its own target, text first, then again with
            // --json: both modes go through the same states.
            let (l, r) = (with_json(&local, &[]), with_json(&remote, &server));
            assert_eq!(
                l.status.code(),
                r.status.code(),
                "{local:?} json={json}: local {} / server {}",
                stderr(&l),
                stderr(&r)
            );
            let ok_run = l.status.success();
            if ok_run {
                assert_eq!(
                    normalize(&stdout(&l), json),
                    normalize(&stdout(&r), json),
                    "{local:?} json={json}"
                );
            } else {
                assert_eq!(stderr(&l).lines().count(), 1, "{local:?}: {}", stderr(&l));
                assert_eq!(stderr(&r).lines().count(), 1, "{remote:?}: {}", stderr(&r));
            }
        }
    }
    // The API's validation in both modes: exit 2 and one line, nothing written.
    let before = ok(muisti(h, &["stats", "--json"]));
    for args in [
        &["remember", "   "][..],
        &["remember", ""],
        &["list", "--limit", "0"],
        &["search", "x", "-k", "0"],
        &["search", "x", "--min-score", "7"],
        &["remember", "x", "--ttl", "99999999999"],
        &["extract", "--user", "u", "-m", "user:   "],
        &["extract", "--user", "", "-m", "user:I like tea"],
    ] {
        for prefix in [&[][..], &server[..]] {
            let mut all = prefix.to_vec();
            all.extend_from_slice(args);
            let o = muisti(h, &all);
            assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
            assert_eq!(stderr(&o).lines().count(), 1, "{all:?}: {}", stderr(&o));
        }
    }
    assert_eq!(
        ok(muisti(h, &["stats", "--json"])),
        before,
        "nothing was written"
    );
}
