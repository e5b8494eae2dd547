//! Maintenance killed at random points: `muisti maintain` is started and killed with
//! SIGKILL, again and again, then run to the end; the store then holds exactly what one
//! uninterrupted run leaves, nothing lost, nothing counted twice.

use std::{
    process::{Command, Stdio},
    time::Duration,
};

use muisti::{Engine, Filter, MemoryId, Namespace, Put};

/// A deterministic stream of waits, in milliseconds.
struct Waits(u64);

impl Waits {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Starts `muisti --store URL maintain ARGS` and kills it with SIGKILL after a random wait,
/// `times` times (waiting out the dead run's one-second hold on the user each time), then
/// runs it to the end.
fn killed_then_finished(url: &str, args: &[&str], times: usize, seed: u64) {
    let mut waits = Waits(seed);
    let run = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_muisti"));
        cmd.args(["--store", url, "maintain", "--lease-secs", "1"])
            .args(args)
            .env_remove("MUISTI_STORE")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    for _ in 0..times {
        let mut child = run().spawn().expect("muisti runs");
        // A debug build's run on these stores takes 60 to 250 ms: most kills land mid-run.
        std::thread::sleep(Duration::from_millis(30 + waits.next(150)));
        // SIGKILL: no cleanup, no lease let go.
        let _ = child.kill();
        let _ = child.wait();
        std::thread::sleep(Duration::from_millis(1_100));
    }
    let out = run().output().expect("muisti runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn engine(url: &str) -> Engine {
    Engine::builder(muisti::open_store(url).expect("store"))
        .embedder(None)
        .build()
        .expect("engine")
}

fn memories_of(engine: &Engine, user: &str) -> Vec<muisti::Memory> {
    muisti::list_all(
        engine.store().as_ref(),
        &engine.partition(&Namespace::default_ns()),
        &Filter {
            user_id: Some(user.into()),
            ..Filter::default()
        },
    )
    .expect("list")
}

/// Consolidation: 200 contents written three times each, recalled 1, 2 and 3 times; after
/// the kills and a last run, one memory per content with 6 accesses and two merged.
#[test]
fn consolidation_killed_at_random_points_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..600)
            .map(|i| {
                let mut p = Put::new(partition.clone(), None, format!("fact number {}", i % 200));
                p.owner.user_id = Some("k1".into());
                p
            })
            .collect();
        let written = e.store().put_many(puts).expect("seed");
        let mut touches: Vec<MemoryId> = Vec::new();
        for (i, w) in written.iter().enumerate() {
            touches.extend(std::iter::repeat_n(w.memory.id, i / 200 + 1));
        }
        e.store()
            .touch(e.tenant(), &touches, muisti::Timestamp::now())
            .expect("touch");
    }
    killed_then_finished(
        &url,
        &["--user", "k1", "--job", "consolidate"],
        6,
        0x9e37_79b9,
    );
    let left = memories_of(&engine(&url), "k1");
    assert_eq!(left.len(), 200, "one per content");
    for m in &left {
        assert_eq!(m.access_count, 6, "{}: 1 + 2 + 3, once each", m.text());
        let merged = m.metadata["merged_from"].as_array().map(Vec::len);
        assert_eq!(merged, Some(2), "{}", m.text());
    }
}

/// Promotion: 300 memories recalled 12 times each; after the kills and a last run, each
/// promoted exactly once.
#[test]
fn promotion_killed_at_random_points_promotes_each_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..300)
            .map(|i| {
                let mut p = Put::new(partition.clone(), None, format!("habit {i}"));
                p.owner.user_id = Some("k2".into());
                p.importance = Some(0.3);
                p
            })
            .collect();
        let written = e.store().put_many(puts).expect("seed");
        let touches: Vec<MemoryId> = written.iter().flat_map(|w| [w.memory.id; 12]).collect();
        e.store()
            .touch(e.tenant(), &touches, muisti::Timestamp::now())
            .expect("touch");
    }
    killed_then_finished(&url, &["--user", "k2", "--job", "promote"], 6, 0x2545_f491);
    for m in memories_of(&engine(&url), "k2") {
        assert!(
            (m.importance - 0.4).abs() < 1e-6,
            "{}: {}",
            m.text(),
            m.importance
        );
    }
}

/// Pruning: 400 memories to a cap of 100; after the kills and a last run, exactly 100,
/// those an uninterrupted run keeps (the recalled ones).
#[test]
fn pruning_killed_at_random_points_stops_at_the_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let recalled: Vec<MemoryId> = {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..400)
            .map(|i| {
                let mut p = Put::new(partition.clone(), None, format!("remark {i}"));
                p.owner.user_id = Some("k3".into());
                p.importance = Some(0.1);
                p
            })
            .collect();
        let written = e.store().put_many(puts).expect("seed");
        let recalled: Vec<MemoryId> = written.iter().step_by(4).map(|w| w.memory.id).collect();
        e.store()
            .touch(e.tenant(), &recalled, muisti::Timestamp::now())
            .expect("touch");
        recalled
    };
    killed_then_finished(
        &url,
        &["--user", "k3", "--job", "prune", "--max-memories", "100"],
        6,
        0x1234_5678,
    );
    let left = memories_of(&engine(&url), "k3");
    assert_eq!(left.len(), 100);
    let mut ids: Vec<MemoryId> = left.iter().map(|m| m.id).collect();
    ids.sort();
    let mut want = recalled;
    want.sort();
    assert_eq!(ids, want, "the recalled quarter is what a whole run keeps");
}

/// Two processes maintaining the same user at once: one works, the other finds the user
/// held and skips it (`busy`); the duplicates are folded once.
#[test]
fn two_runs_at_once_never_work_on_the_same_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..3000)
            .map(|i| {
                let mut p = Put::new(partition.clone(), None, format!("fact number {}", i % 1000));
                p.owner.user_id = Some("k4".into());
                p
            })
            .collect();
        e.store().put_many(puts).expect("seed");
    }
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_muisti"))
            .args([
                "--store",
                &url,
                "maintain",
                "--user",
                "k4",
                "--job",
                "consolidate",
                "--json",
            ])
            .env_remove("MUISTI_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("muisti runs")
    };
    let (one, two) = (start(), start());
    let reports: Vec<serde_json::Value> = [one, two]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().expect("waits");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).expect("a JSON report")
        })
        .collect();
    let sum = |field: &str| -> u64 { reports.iter().filter_map(|r| r[field].as_u64()).sum() };
    assert_eq!(
        sum("busy"),
        1,
        "one of the two found the user held: {reports:?}"
    );
    assert_eq!(sum("consolidated"), 2000, "{reports:?}");
    assert_eq!(memories_of(&engine(&url), "k4").len(), 1000);
}

/// Archiving: 300 cold memories; after the kills and a last run, each archived exactly once
/// with its object (one object each: what a killed run left behind was swept), and each
/// reads back with its text.
#[test]
fn archiving_killed_at_random_points_archives_each_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let texts: Vec<(MemoryId, String)> = {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..300)
            .map(|i| {
                let mut p = Put::new(partition.clone(), None, format!("an old note {i}"));
                p.owner.user_id = Some("k5".into());
                p
            })
            .collect();
        e.store()
            .put_many(puts)
            .expect("seed")
            .into_iter()
            .map(|w| (w.memory.id, w.memory.text().into_owned()))
            .collect()
    };
    killed_then_finished(
        &url,
        &[
            "--user",
            "k5",
            "--job",
            "archive",
            "--archive-after-days",
            "0",
            "--archive-max-access",
            "0",
        ],
        6,
        0x5bd1_e995,
    );
    let e = Engine::builder(muisti::open_store(&url).expect("store"))
        .embedder(None)
        .archive(muisti::open_archive(&url, None).expect("archive"))
        .build()
        .expect("engine");
    let archive_dir = dir.path().join("m.db.archive");
    let files: Vec<_> = muisti_testkit::paths_under(&archive_dir)
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    let strays: Vec<_> = files
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with(".json.zst"))
        .collect();
    assert!(strays.is_empty(), "no staging file left: {strays:?}");
    assert_eq!(files.len(), 300, "one object per memory, no orphan left");
    for (id, text) in texts {
        let m = e.get_by_id(id).expect("reads").expect("kept");
        assert_eq!(m.state, muisti::MemoryState::Archived);
        assert_eq!(m.text(), text, "read back from its object");
    }
}

/// Clustering killed at random points leaves either no clustering or a whole one; the last
/// run leaves a whole one.
#[test]
fn clustering_killed_at_random_points_leaves_a_whole_clustering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    {
        let e = Engine::open(&url).expect("engine");
        for i in 0..120 {
            let topic = [
                "cooking pasta sauce",
                "hiking mountain trails",
                "rust compiler errors",
            ][i % 3];
            let mut p = Put::new(
                e.partition(&Namespace::default_ns()),
                None,
                format!("{topic} note {i}"),
            );
            p.owner.user_id = Some("k6".into());
            e.remember(p).expect("remember");
        }
    }
    killed_then_finished(&url, &["--user", "k6", "--job", "cluster"], 4, 0x7f4a_7c15);
    let e = Engine::open(&url).expect("engine");
    let (clustering, members) = e
        .lifecycle()
        .cluster_members(&Namespace::default_ns(), Some("k6"))
        .expect("clustered");
    assert!(clustering.clusters.len() >= 2);
    assert_eq!(members.values().map(Vec::len).sum::<usize>(), 120);
}

/// Expiry: 200 expired memories among 200 that live on; after the kills and a last run, the
/// expired ones are purged and every other one is there.
#[test]
fn expiry_killed_at_random_points_purges_only_the_expired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    let kept: Vec<MemoryId> = {
        let e = engine(&url);
        let partition = e.partition(&Namespace::default_ns());
        let puts: Vec<Put> = (0..400)
            .map(|i| {
                let p = Put::new(partition.clone(), None, format!("a passing thought {i}"));
                let mut p = if i % 2 == 0 {
                    p.with_ttl(Some(muisti::Ttl::from_secs(1).expect("ttl")))
                } else {
                    p
                };
                p.owner.user_id = Some("k7".into());
                p
            })
            .collect();
        let written = e.store().put_many(puts).expect("seed");
        written
            .iter()
            .skip(1)
            .step_by(2)
            .map(|w| w.memory.id)
            .collect()
    };
    std::thread::sleep(Duration::from_millis(1_100));
    killed_then_finished(&url, &["--job", "expire"], 4, 0x0bad_cafe);
    let e = engine(&url);
    assert_eq!(e.store().purge_expired().expect("purge"), 0, "all purged");
    let mut left: Vec<MemoryId> = memories_of(&e, "k7").iter().map(|m| m.id).collect();
    left.sort();
    let mut want = kept;
    want.sort();
    assert_eq!(left, want, "every memory that lives on is there");
}
