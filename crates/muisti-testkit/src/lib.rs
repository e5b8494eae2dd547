//! The conformance suite: one set of expectations that every [`Store`] must meet.
//!
//! A backend crate implements [`Harness`] for its store and calls [`conformance!`] in its
//! integration tests, once per store. Each case becomes its own `#[test]`, so the count per
//! backend shows in the test output.
//!
//! ```text
//! muisti_testkit::conformance!(my_harness());           // every store
//! muisti_testkit::conformance_persistent!(my_harness()); // stores that outlive the process
//! ```
//!
//! Services: [`service_unavailable`] prints a skip line when a service (Redis, PostgreSQL) is
//! absent, or panics when `MUISTI_REQUIRE_SERVICES=1`.

#![allow(clippy::unwrap_used)] // a test kit: a failed expectation must panic

pub mod cases;
pub mod http;
pub mod llm;
pub mod redis_cluster;
pub mod redis_keys;
pub mod shared;

use std::sync::Arc;

use muisti_core::{Limits, Store};

/// How the suite reaches a backend. One harness is made per test, with its own empty data.
pub trait Harness {
    /// Opens a handle on this harness's data (the same data on every call).
    fn open(&self) -> Arc<dyn Store>;
    /// Opens a handle on this harness's data that enforces `limits`.
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store>;
    /// A location that [`Harness::open_at`] (in another process) can open, for stores that
    /// support several processes.
    fn location(&self) -> Option<String>;
    /// Opens the store at a location given by [`Harness::location`].
    fn open_at(&self, location: &str) -> Arc<dyn Store>;
}

/// Call when a required service is unreachable: reports the skip and returns, or panics if
/// `MUISTI_REQUIRE_SERVICES=1`.
///
/// The line goes to the terminal even when the test harness captures output (it is written
/// to standard error directly, not through `println!`), and, when `MUISTI_SKIP_LOG` names a
/// file, is appended there with the test's name: `scripts/test` sums those up at the end.
pub fn service_unavailable(service: &str, why: &str) {
    use std::io::Write;
    if std::env::var("MUISTI_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
        panic!("{service} is required (MUISTI_REQUIRE_SERVICES=1) but unavailable: {why}");
    }
    // The harness names each test's thread after the test.
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let _ = writeln!(
        std::io::stderr().lock(),
        "skipped: {test}: {service} unavailable ({why})"
    );
    if let Some(log) = std::env::var_os("MUISTI_SKIP_LOG") {
        let field = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        let line = format!("{}\t{}\t{}\n", field(&test), field(service), field(why));
        let _ = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// A Python interpreter that can import `module`: `MUISTI_PYTHON`, else `python3` (`.ci/run`
/// installs the packages the tests use); `None`, with [`service_unavailable`], when it
/// cannot.
pub fn python_with(module: &str) -> Option<String> {
    let py = std::env::var("MUISTI_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&py)
        .args(["-c", &format!("import {module}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(py);
    }
    service_unavailable(
        &format!("python package {module}"),
        "set MUISTI_PYTHON to a python with it (.ci/run installs it)",
    );
    None
}

/// Every path under `dir`, files and directories, recursively.
pub fn paths_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out
}

/// The deletion canary's check: each file under `dir` that holds one of `needles`
/// (lower case; compared with the file's bytes read as lower-case text) as "needle in
/// path", and how many files were read.
pub fn needles_in_files(dir: &std::path::Path, needles: &[&str]) -> (Vec<String>, usize) {
    // A store's last connection may still be closing on a background thread (its log
    // checkpointed into the database and removed): a file gone while being read means the
    // files changed, so they are read again, all of them, until none vanishes.
    for _ in 0..50 {
        if let Some(found) = needles_in_files_once(dir, needles) {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the files under {} kept changing", dir.display());
}

/// [`needles_in_files`] over the files as listed now; `None` if one vanished meanwhile.
fn needles_in_files_once(dir: &std::path::Path, needles: &[&str]) -> Option<(Vec<String>, usize)> {
    let files: Vec<_> = paths_under(dir)
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    let mut hits = Vec::new();
    for path in &files {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        let text = String::from_utf8_lossy(&bytes).to_lowercase();
        hits.extend(
            needles
                .iter()
                .filter(|n| text.contains(*n))
                .map(|n| format!("{n} in {}", path.display())),
        );
    }
    Some((hits, files.len()))
}

// `conformance!` and the persistent case list, derived from `src/cases/` by `build.rs`.
include!(concat!(env!("OUT_DIR"), "/conformance.rs"));

/// Generates the cases for stores that outlive the process and may be shared by several
/// processes: reopen, and several processes writing at once. `$make` as in [`conformance!`].
#[macro_export]
macro_rules! conformance_persistent {
    ($make:expr) => {
        /// The full name of `conformance_child_writer` in this test binary.
        fn conformance_child_name() -> String {
            let module = module_path!();
            match module.split_once("::") {
                Some((_, rest)) => format!("{rest}::conformance_child_writer"),
                None => "conformance_child_writer".to_string(),
            }
        }

        $crate::__conformance_persistent_cases!($make, conformance_child_name());

        /// The child side of `multi_process_writers_lose_nothing`: run by that test in
        /// another process, never on its own.
        #[test]
        #[ignore = "spawned by multi_process_writers_lose_nothing"]
        fn conformance_child_writer() {
            if let Some(h) = $make {
                $crate::cases::child_writer(&h);
            }
        }
    };
}

/// Polls `done` every 20 ms until it holds; fails the test naming `what` when it has not
/// after 30 s (for work a background thread does: a worker draining its queue, a schedule).
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The contract's BM25 ranking of `records` for `query` ([`muisti_core::text::Bm25::rank`]
/// over each record's index text and context): what a store's full-text search over the
/// records a filter admits must answer.
pub fn bm25_reference(
    records: &[muisti_core::Memory],
    query: &str,
    limit: usize,
) -> Vec<muisti_core::Scored> {
    let texts: Vec<_> = records
        .iter()
        .map(|m| (m.id, m.index_text(), m.context.as_deref()))
        .collect();
    muisti_core::text::Bm25::default().rank(
        texts.iter().map(|(id, t, c)| (*id, t.as_ref(), *c)),
        query,
        limit,
    )
}

/// The texts of `user`'s active long-term memories in `partition`, sorted: what a user's
/// memory holds now (what extraction learned of their facts, with what superseded out).
pub fn active_memories(
    store: &dyn Store,
    partition: &muisti_core::Partition,
    user: &str,
) -> Vec<String> {
    let filter = muisti_core::Filter {
        user_id: Some(user.into()),
        scope: Some(muisti_core::MemoryScope::LongTerm),
        ..muisti_core::Filter::default()
    };
    let mut texts: Vec<String> = muisti_core::list_all(store, partition, &filter)
        .expect("list the user's memories")
        .into_iter()
        .filter(|m| m.state == muisti_core::MemoryState::Active)
        .map(|m| m.text().into_owned())
        .collect();
    texts.sort();
    texts
}
