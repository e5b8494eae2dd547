//! Deleting leaves nothing: after `forget` (one memory, or every memory of a user) no byte of
//! the deleted text is left in any file of the store, on every backend the binary opens.

use std::{
    fs,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{muisti, ok};

/// Words only the deleted memories hold (lower case; the full-text index keeps stems).
const NEEDLES: [&str; 3] = ["canaryzq7", "xylophon", "diagnos"];

fn needles_in(dir: &Path) -> (Vec<String>, usize) {
    muisti_testkit::needles_in_files(dir, &NEEDLES)
}

/// Writes alice's ordinary memories and bob's secret ones, deletes one secret by id and the
/// rest as "every memory of bob", and checks what is left through the CLI. `written` runs
/// between the writes and the deletion (to see the secrets are in the files at all).
fn write_then_forget_bob(home: &Path, store: &str, written: impl FnOnce()) {
    let run = |args: &[&str]| ok(muisti(home, &[&["--store", store], args].concat()));
    for i in 0..40 {
        run(&[
            "remember",
            &format!("alice note {i}: the garden needs water on tuesdays"),
            "--user",
            "alice",
        ]);
    }
    let mut ids = Vec::new();
    for i in 0..5 {
        let out = run(&[
            "--json",
            "remember",
            &format!("CANARYzq7 secret diagnosis {i} xylophone"),
            "--user",
            "bob",
            "--tag",
            "canaryzq7",
            "--meta",
            "note=xylophone",
        ]);
        let m: Value = serde_json::from_str(&out).expect("json");
        ids.push(m["id"].as_str().expect("id").to_owned());
    }
    // Found before: the deletion below is what removes it.
    assert!(run(&["search", "xylophone diagnosis"]).contains("CANARYzq7"));
    written();
    run(&["forget", &ids[0]]);
    let out = run(&["--json", "forget", "--user", "bob"]);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["deleted"], 4, "{out}");
    assert!(!run(&["search", "xylophone diagnosis"]).contains("CANARYzq7"));
    let left: Value =
        serde_json::from_str(&run(&["--json", "list", "--limit", "1000"])).expect("json");
    let items = left["items"].as_array().expect("items");
    assert_eq!(items.len(), 40, "alice's memories stay");
    assert!(items.iter().all(|m| m["user_id"] == "alice"));
}

/// The secrets were written to the files (else a clean result would prove nothing).
fn assert_written(dir: &Path) {
    let (hits, _) = needles_in(dir);
    assert!(
        !hits.is_empty(),
        "the secrets are in {} before",
        dir.display()
    );
}

fn assert_clean(dir: &Path) {
    let (hits, files) = needles_in(dir);
    assert!(files > 0, "the store wrote files under {}", dir.display());
    assert!(hits.is_empty(), "deleted text left behind: {hits:?}");
}

#[test]
fn forgetting_a_user_leaves_nothing_in_a_sqlite_file() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("db");
    fs::create_dir(&dir).expect("dir");
    let url = format!("sqlite://{}", dir.join("m.db").display());
    write_then_forget_bob(home.path(), &url, || assert_written(&dir));
    assert_clean(&dir);
}

#[test]
fn forgetting_a_user_leaves_nothing_in_the_file_store() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("files");
    let url = format!("file://{}", dir.display());
    write_then_forget_bob(home.path(), &url, || assert_written(&dir));
    assert_clean(&dir);
}

#[test]
fn forgetting_a_user_refuses_no_owner_and_a_target_with_an_agent_or_session() {
    let home = tempfile::tempdir().expect("temp dir");
    for flag in ["--agent", "--session"] {
        let both = muisti(home.path(), &["forget", "some-key", flag, "bob"]);
        assert_eq!(both.status.code(), Some(2), "{flag}: a usage error");
    }
    // With a target, --user names the user the request acts for.
    let acting = muisti(home.path(), &["forget", "some-key", "--user", "bob"]);
    assert_eq!(
        acting.status.code(),
        Some(1),
        "not found, not a usage error"
    );
    let neither = muisti(home.path(), &["forget"]);
    assert_eq!(neither.status.code(), Some(2), "a usage error");
}

/// A Redis server of this test's own, persisting to a directory: an append-only file and a
/// snapshot, both rewritten after the deletion, must not hold the deleted text.
struct PrivateRedis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl PrivateRedis {
    fn start(dir: &Path) -> Option<Self> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--appendonly", "yes", "--save", ""])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                muisti_testkit::service_unavailable("redis-server", &e.to_string());
                return None;
            }
        };
        let redis = Self {
            child,
            port,
            dir: dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis.cli(&["PING"]) != "PONG" {
            assert!(Instant::now() < deadline, "redis-server did not start");
            thread::sleep(Duration::from_millis(50));
        }
        Some(redis)
    }

    fn cli(&self, args: &[&str]) -> String {
        Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    }

    /// Rewrites the append-only file and writes a snapshot, waiting for both.
    fn persist(&self) {
        self.cli(&["BGREWRITEAOF"]);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = self.cli(&["INFO", "persistence"]);
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
            {
                break;
            }
            assert!(Instant::now() < deadline, "the AOF rewrite did not finish");
            thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(self.cli(&["SAVE"]), "OK");
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn forgetting_a_user_leaves_nothing_in_redis() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("redis");
    fs::create_dir(&dir).expect("dir");
    let Some(redis) = PrivateRedis::start(&dir) else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}/0", redis.port);
    write_then_forget_bob(home.path(), &url, || {
        redis.persist();
        assert_written(&redis.dir);
    });
    // Nothing in the server's memory either: every value, dumped.
    let keys = redis.cli(&["--scan"]);
    assert!(!keys.is_empty(), "alice's memories are there");
    for key in keys.lines() {
        let dump = redis.cli(&["--no-raw", "DUMP", key]).to_lowercase();
        assert!(NEEDLES.iter().all(|n| !dump.contains(n)), "{key}: {dump}");
        assert!(NEEDLES.iter().all(|n| !key.to_lowercase().contains(n)));
    }
    redis.persist();
    assert_clean(&redis.dir);
}

/// While `muisti serve` runs (no clean stop, which would checkpoint on its own), memories
/// deleted by id leave no byte of their text in the database, its `-wal` or its `-shm` within
/// seconds, later writes and all: a plain memory, one edited under an actor (as the
/// dashboard does, so its history held the text) and a declarative entry with a superseded
/// text. Prints how long it took.
#[test]
fn a_deleted_memory_leaves_the_sqlite_files_while_the_server_runs() {
    use muisti_client::{MemoryPatch, NewMemory};
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("db");
    fs::create_dir(&dir).expect("dir");
    let url = format!("sqlite://{}", dir.join("m.db").display());
    let served = crate::serve::serve(home.path(), &["--store", &url]);
    let c = muisti_client::Client::new(&served.base).expect("client");
    let note = |text: &str, user: &str| NewMemory {
        content: text.into(),
        user_id: Some(user.into()),
        ..NewMemory::default()
    };
    for i in 0..30 {
        c.create(&note(&format!("alice note {i}: water the garden"), "alice"))
            .expect("write");
    }
    let plain = c
        .create(&note("CANARYzq7 plain secret", "bob"))
        .expect("write");
    let edited = c
        .create(&note("CANARYzq7 first draft", "bob"))
        .expect("write");
    c.update(
        &edited.id,
        &MemoryPatch {
            content: Some("CANARYzq7 xylophone second draft".into()),
            actor: Some("dashboard".into()),
            ..MemoryPatch::default()
        },
    )
    .expect("edit");
    let declared = |text: &str| NewMemory {
        scope: Some("declarative".into()),
        kind: Some("fact".into()),
        ..note(text, "bob")
    };
    let entry = c
        .create(&declared("CANARYzq7 my diagnosis is private"))
        .expect("entry");
    c.create(&declared("CANARYzq7 my diagnosis changed"))
        .expect("supersede");
    assert_written(&dir);
    assert!(c.delete(&plain.id).expect("delete"));
    assert!(c.delete(&edited.id).expect("delete"));
    assert!(c.delete_for(&entry.id, Some("bob")).expect("delete"));
    let deleted = Instant::now();
    for i in 0..50 {
        c.create(&note(&format!("alice later note {i}"), "alice"))
            .expect("write");
    }
    let deadline = deleted + Duration::from_secs(15);
    loop {
        let (hits, files) = needles_in(&dir);
        assert!(files >= 2, "the database and its log: {files}");
        if hits.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "deleted text still in the files after 15 s: {hits:?}"
        );
        thread::sleep(Duration::from_millis(100));
    }
    println!(
        "deleted text gone from the db, -wal and -shm {:.1} s after the deletes",
        deleted.elapsed().as_secs_f64()
    );
    assert!(c.get(&plain.id).expect("read").is_none());
}
