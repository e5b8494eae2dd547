//! Stores that outlive the process: reopening, and several processes (or a killed one) writing.

use super::*;

/// Data written through one handle is read back through a new one, as by a new process.
pub fn data_survives_reopen(h: &dyn Harness) {
    let p = part("persist");
    let written = {
        let s = h.open();
        let m = set(&*s, &p, "k", json!({"v": 1}));
        set(&*s, &part("user:1"), "k", "v");
        set(&*s, &part("user_1"), "k", "w");
        s.touch(&p.tenant, &[m.id], Timestamp::now()).unwrap();
        s.get(&at(&p, "k")).unwrap().unwrap()
    };
    let s = h.open();
    assert_eq!(s.get(&at(&p, "k")).unwrap().unwrap(), written);
    assert_eq!(get_value(&*s, &part("user:1"), "k"), Some(json!("v")));
    assert_eq!(get_value(&*s, &part("user_1"), "k"), Some(json!("w")));
}

const CHILD_LOCATION: &str = "MUISTI_CONFORMANCE_LOCATION";

const CHILD_ID: &str = "MUISTI_CONFORMANCE_CHILD";

const CHILD_WRITES: usize = 60;

/// Several processes write to the same store at once; every write is there afterwards.
/// `child_test` is the full name of the test that runs [`child_writer`] in the same binary.
pub fn multi_process_writers_lose_nothing(h: &dyn Harness, child_test: &str) {
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let exe = std::env::current_exe().unwrap();
    let children = 4;
    let mut running = Vec::new();
    for c in 0..children {
        let child = Command::new(&exe)
            .args([child_test, "--exact", "--ignored", "--nocapture"])
            .env(CHILD_LOCATION, &location)
            .env(CHILD_ID, c.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        running.push(child);
    }
    for child in running {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer process failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = h.open();
    let p = part("multiproc");
    // Each child's own keys, plus the one key they all fought over.
    assert_eq!(
        s.count(&p, &Filter::default()).unwrap(),
        (children * CHILD_WRITES + 1) as u64
    );
    for c in 0..children {
        for i in 0..CHILD_WRITES {
            assert_eq!(get_value(&*s, &p, &format!("c{c}-{i}")), Some(json!(i)));
        }
    }
    assert_eq!(
        get_value(&*s, &p, "shared")
            .and_then(|v| v.as_u64())
            .map(|v| v < children as u64),
        Some(true)
    );
}

const CHILD_MODE: &str = "MUISTI_CONFORMANCE_MODE";

/// A writer process is killed (SIGKILL on Unix) in the middle of writing; every write it had
/// acknowledged is there afterwards and the store still reads and writes.
pub fn killed_writer_loses_no_acknowledged_write(h: &dyn Harness, child_test: &str) {
    use std::io::{BufRead, BufReader};
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([child_test, "--exact", "--ignored", "--nocapture"])
        .env(CHILD_LOCATION, &location)
        .env(CHILD_ID, "0")
        .env(CHILD_MODE, "until-killed")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if let Some(k) = line.strip_prefix("ack ") {
            acked.push(k.to_owned());
        }
        if acked.len() >= 150 || Instant::now() > deadline {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        acked.len() >= 150,
        "the writer acknowledged only {} writes",
        acked.len()
    );
    let s = h.open_at(&location);
    let p = part("killed");
    for k in &acked {
        assert!(
            s.get(&at(&p, k)).unwrap().is_some(),
            "acknowledged {k} is lost"
        );
    }
    let all = list_all(&*s, &p, &Filter::default()).unwrap();
    assert!(all.len() >= acked.len());
    set(&*s, &p, "after", "still writable");
    assert_eq!(get_value(&*s, &p, "after"), Some(json!("still writable")));
}

/// The writer run in each child process of [`multi_process_writers_lose_nothing`] and
/// [`killed_writer_loses_no_acknowledged_write`].
pub fn child_writer(h: &dyn Harness) {
    use std::io::Write;
    let location = std::env::var(CHILD_LOCATION).expect("run by a multi-process case");
    let id: usize = std::env::var(CHILD_ID).unwrap().parse().unwrap();
    let s = h.open_at(&location);
    if std::env::var(CHILD_MODE).is_ok_and(|m| m == "increment") {
        let p = part("race");
        for _ in 0..INCREMENTS {
            increment(&*s, &p);
        }
        return;
    }
    if std::env::var(CHILD_MODE).is_ok_and(|m| m == "until-killed") {
        let p = part("killed");
        let mut out = std::io::stdout().lock();
        // Bounded: the parent kills it long before.
        for i in 0..1_000_000 {
            s.put(Put::new(
                p.clone(),
                Some(key(&format!("k{i}"))),
                format!("value {i}"),
            ))
            .unwrap();
            writeln!(out, "ack k{i}").unwrap();
            out.flush().unwrap();
        }
        return;
    }
    let p = part("multiproc");
    for i in 0..CHILD_WRITES {
        s.put(Put::new(p.clone(), Some(key(&format!("c{id}-{i}"))), i))
            .unwrap();
        // All children also fight over one key.
        s.put(Put::new(p.clone(), Some(key("shared")), id)).unwrap();
    }
}

/// Processes race conditional updates on one record: none is lost.
pub fn multi_process_conditional_updates_lose_nothing(h: &dyn Harness, child_test: &str) {
    let location = h
        .location()
        .expect("a persistent harness gives a location for other processes");
    let s = h.open();
    let p = part("race");
    set(&*s, &p, "counter", 0);
    let children = 2;
    let running: Vec<_> = (0..children)
        .map(|c| {
            Command::new(std::env::current_exe().unwrap())
                .args([child_test, "--exact", "--ignored", "--nocapture"])
                .env(CHILD_LOCATION, &location)
                .env(CHILD_ID, c.to_string())
                .env(CHILD_MODE, "increment")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in running {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "an updating process failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let m = s.get(&at(&p, "counter")).unwrap().unwrap();
    assert_eq!(m.content, json!(children * INCREMENTS));
    assert_eq!(m.version, 1 + (children * INCREMENTS) as u64);
}

// ---- filters ----
