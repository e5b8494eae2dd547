//! The bench commands' own behaviour (not their figures): `bench http --server` loads the
//! given server, `bench http` in process reports the server's CPU, `bench scale` below the ANN threshold does not wait for a graph, and a
//! bench stopped with Ctrl-C leaves no temporary store behind.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;

use super::{muisti, ok, serve::serve};

/// Runs `muisti` with `args`, killing it (and failing) if it has not finished in `limit`.
fn within(home: &std::path::Path, args: &[&str], limit: Duration) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_muisti"))
        .args(args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env("TMPDIR", home.join("tmp"))
        .env_remove("MUISTI_STORE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn bench_http_with_server_loads_that_server() {
    let home = tempfile::tempdir().expect("temp dir");
    let s = serve(home.path(), &[]);
    let out = ok(muisti(
        home.path(),
        &[
            "--server",
            &s.base,
            "bench",
            "http",
            "--memories",
            "100",
            "--seconds",
            "0.3",
            "--connections",
            "1",
            "--json",
        ],
    ));
    let report: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(report["server"], s.base.as_str());
    assert!(report["recall"]["requests"].as_u64() > Some(0), "{report}");
    assert_eq!(report["recall"]["errors"], 0);
    // The server's CPU is another process's: not reported.
    assert!(report["recall"]["server_cpu_ms"].is_null(), "{report}");
    assert!(report["server_cost"].is_null(), "{report}");
    // The seeded memories are in that server's store.
    let stats: Value = serde_json::from_str(&ok(muisti(
        home.path(),
        &["--server", &s.base, "stats", "-n", "bench", "--json"],
    )))
    .expect("json");
    assert!(stats["total"].as_u64() >= Some(100), "{stats}");
}

/// In process, each phase reports the CPU per request of the server's threads and of the
/// load generator's, and what the server adds to a recall made without HTTP.
#[cfg(target_os = "linux")]
#[test]
fn bench_http_in_process_reports_the_servers_cpu_per_request() {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join("tmp")).expect("tmp");
    let out = within(
        home.path(),
        &[
            "bench",
            "http",
            "--memories",
            "200",
            "--seconds",
            "0.5",
            "--connections",
            "2",
            "--json",
        ],
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let ms = |v: &Value| v.as_f64().unwrap_or_else(|| panic!("a figure: {report}"));
    for phase in ["recall", "create"] {
        assert!(ms(&report[phase]["server_cpu_ms"]) > 0.0, "{report}");
        assert!(ms(&report[phase]["client_cpu_ms"]) > 0.0, "{report}");
    }
    let cost = &report["server_cost"];
    assert!(cost["recalls"].as_u64() > Some(0), "{report}");
    assert!(ms(&cost["recall_cpu_ms"]) > 0.0, "{report}");
    let own = ms(&report["recall"]["server_cpu_ms"]) - ms(&cost["recall_cpu_ms"]);
    assert!(
        (ms(&cost["server_own_cpu_ms"]) - own).abs() < 1e-9,
        "{report}"
    );
}

#[test]
fn bench_scale_below_the_ann_threshold_does_not_wait_for_a_graph() {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join("tmp")).expect("tmp");
    let out = within(
        home.path(),
        &[
            "bench",
            "scale",
            "--memories",
            "1000",
            "--queries",
            "5",
            "--unfiltered",
            "--json",
        ],
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The store's memory by part: the copy of the 1,000 memories holds rows, vectors and
    // terms, and resident memory holds more besides.
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let mib = |k: &str| {
        report["memory"][k]
            .as_f64()
            .unwrap_or_else(|| panic!("{k}: {report}"))
    };
    for part in ["copies_rows_mib", "copies_vectors_mib", "copies_text_mib"] {
        assert!(mib(part) > 0.0, "{part}: {report}");
    }
    assert!(mib("other_rss_mib") > 0.0, "{report}");
    let copies = mib("copies_rows_mib") + mib("copies_vectors_mib") + mib("copies_text_mib");
    let cache = report["cache_mib"].as_f64().expect("cache_mib");
    assert!(
        (copies + mib("graphs_mib") - cache).abs() < 1e-6,
        "{report}"
    );
}

#[test]
fn a_bench_stopped_with_ctrl_c_leaves_no_temporary_store() {
    let home = tempfile::tempdir().expect("temp dir");
    let tmp = home.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let mut child = Command::new(env!("CARGO_BIN_EXE_muisti"))
        .args(["bench", "scale", "--memories", "2000000"])
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("HOME", home.path())
        .env("TMPDIR", &tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    // Wait until the temporary store exists, then interrupt.
    let start = Instant::now();
    while std::fs::read_dir(&tmp).expect("tmp").next().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no temporary store"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let code = child.wait().expect("waits");
    assert_eq!(code.code(), Some(130), "stopped by the interrupt");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The sustained-load battery: a mixed workload (recall, create, key-value) at a fixed rate
/// for `MUISTI_LOAD_SECS` seconds (3 by default, 60 in CI) against a server over SQLite;
/// every request answered without error, at the rate asked for.
#[test]
fn a_sustained_mixed_load_runs_without_errors() {
    let secs: u64 = std::env::var("MUISTI_LOAD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(home.path().join("tmp")).expect("tmp");
    let out = within(
        home.path(),
        &[
            "bench",
            "load",
            "--seconds",
            &secs.to_string(),
            "--rate",
            "50",
            "--memories",
            "2000",
            "--connections",
            "8",
        ],
        Duration::from_secs(secs + 300),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(report["errors"], 0, "{text}");
    assert_eq!(report["requests"], 50 * secs, "{text}");
    for op in ["recall", "create", "kv_set", "kv_get"] {
        assert!(report[op]["requests"].as_u64() > Some(0), "{op}: {text}");
    }
    // Open loop: the load is sent at the rate asked for (a server falling behind shows in
    // the latencies, measured from each request's due time).
    let rate = report["achieved_rate"].as_f64().expect("rate");
    assert!(rate > 40.0, "{text}");
    println!(
        "load: {secs} s at 50 requests/s, 0 errors, p99 {} ms",
        report["p99_ms"]
    );
}

/// `bench scale --db F` writes the corpus once and keeps the file: a second run recalls
/// after a restart without writing (no ingest figure), and reports the cache it held within
/// the budget given.
#[test]
fn bench_scale_with_a_kept_file_measures_a_restart() {
    let home = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(home.path().join("tmp")).expect("tmp");
    let db = home.path().join("scale.db");
    let run = || {
        let out = within(
            home.path(),
            &[
                "bench",
                "scale",
                "--memories",
                "3000",
                "--queries",
                "6",
                "--db",
                db.to_str().expect("utf-8"),
                "--cache-mb",
                "1",
            ],
            Duration::from_secs(120),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let first = run();
    assert!(first["ingest_per_s"].as_f64() > Some(0.0), "{first}");
    let second = run();
    assert!(second["ingest_per_s"].is_null(), "{second}");
    assert_eq!(second["cache_budget_mib"], 1.0);
    let held = second["cache_mib"].as_f64().expect("cache_mib");
    assert!(held > 0.0 && held <= 1.0, "{second}");
    // With another store, the SQLite options are refused rather than ignored.
    let out = within(
        home.path(),
        &[
            "--store",
            "mem://",
            "bench",
            "scale",
            "--memories",
            "10",
            "--cache-mb",
            "5",
        ],
        Duration::from_secs(60),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--cache-mb"));
}
