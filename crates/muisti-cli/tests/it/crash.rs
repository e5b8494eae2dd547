//! The crash battery: `muisti serve` killed with SIGKILL while concurrent writers send
//! memories (one at a time, and in batches) and key-value entries, again and again on the
//! same store (SQLite, and the file store); after each restart every write the server
//! acknowledged is there, unchanged. `MUISTI_CRASH_CYCLES` sets the number of cycles
//! (default 3; docs/reliability.md reports a longer run).

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::Duration,
};

use muisti_client::{Client, ListParams, NewMemories, NewMemory};

use crate::serve::serve;

const WRITERS: usize = 4;

/// What writers do: writer `w` does kind `w % 3`.
const SINGLE: usize = 0;
const BATCH: usize = 1;
/// Key-value entries, in this namespace.
const KV: &str = "crash-kv";

#[test]
fn no_acknowledged_write_is_lost_to_kill_9_on_sqlite() {
    let home = tempfile::tempdir().expect("temp dir");
    kill_9_cycles(
        home.path(),
        &format!("sqlite://{}/crash.db", home.path().display()),
    );
}

#[test]
fn no_acknowledged_write_is_lost_to_kill_9_on_the_file_store() {
    let home = tempfile::tempdir().expect("temp dir");
    let dir = home.path().join("crash-files");
    std::fs::create_dir_all(&dir).expect("dir");
    kill_9_cycles(home.path(), &format!("file://{}", dir.display()));
}

fn kill_9_cycles(home: &std::path::Path, url: &str) {
    let cycles: usize = std::env::var("MUISTI_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    // id → content of every acknowledged memory; key → value of every acknowledged entry.
    let acked: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let acked_kv: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for cycle in 0..cycles {
        let mut served = serve(home, &["--store", url]);
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let base = served.base.clone();
                let stop = Arc::clone(&stop);
                let acked = Arc::clone(&acked);
                let acked_kv = Arc::clone(&acked_kv);
                thread::spawn(move || {
                    let client = Client::new(&base).expect("client");
                    let mut n = 0;
                    let memory = |content: &str| {
                        let mut m = NewMemory::text(content.to_owned());
                        m.user_id = Some(format!("w{w}"));
                        m
                    };
                    // An error means the server is gone: that write is unacknowledged, and
                    // may or may not be stored.
                    while !stop.load(Ordering::Relaxed) {
                        let content = format!("cycle {cycle} writer {w} write {n}");
                        match w % 3 {
                            SINGLE => match client.create(&memory(&content)) {
                                Ok(stored) => {
                                    acked.lock().expect("lock").insert(stored.id, content);
                                }
                                Err(_) => break,
                            },
                            BATCH => {
                                let contents: Vec<String> =
                                    (0..5).map(|i| format!("{content} item {i}")).collect();
                                let batch = NewMemories {
                                    memories: contents.iter().map(|c| memory(c)).collect(),
                                };
                                match client.create_many(&batch) {
                                    Ok(stored) => {
                                        let mut acked = acked.lock().expect("lock");
                                        for (m, c) in stored.memories.into_iter().zip(contents) {
                                            acked.insert(m.id, c);
                                        }
                                    }
                                    Err(_) => break,
                                }
                            }
                            _ => {
                                let key = format!("w{w}-c{cycle}-n{n}");
                                match client.kv_set(KV, &key, serde_json::json!(content), None) {
                                    Ok(_) => {
                                        acked_kv.lock().expect("lock").insert(key, content);
                                    }
                                    Err(_) => break,
                                }
                            }
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        // A pseudo-random moment (xorshift, fixed seed) between 300 and 1,500 ms in.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        thread::sleep(Duration::from_millis(300 + seed % 1200));
        served.child.kill().expect("SIGKILL");
        served.child.wait().expect("reaped");
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().expect("writer");
        }
    }
    // A last start: everything acknowledged is there, as written.
    let served = serve(home, &["--store", url]);
    let client = Client::new(&served.base).expect("client");
    let mut stored = BTreeMap::new();
    let mut cursor = None;
    loop {
        let page = client
            .list(&ListParams {
                limit: Some(1000),
                cursor,
                ..ListParams::default()
            })
            .expect("list");
        for m in page.items {
            stored.insert(m.id, m.content.as_str().unwrap_or_default().to_owned());
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let acked = acked.lock().expect("lock");
    let mut missing: Vec<_> = acked
        .iter()
        .filter(|(id, content)| stored.get(*id) != Some(content))
        .map(|(id, _)| id.clone())
        .collect();
    let acked_kv = acked_kv.lock().expect("lock");
    for (key, value) in acked_kv.iter() {
        let found = client.kv_get(KV, key).expect("kv get");
        if found.map(|e| e.value) != Some(serde_json::json!(value)) {
            missing.push(format!("kv {key}"));
        }
    }
    let scheme = url.split(':').next().unwrap_or_default();
    println!(
        "crash ({scheme}): {cycles} kill -9 cycles, {WRITERS} writers, {} acknowledged memories \
         (single and batched), {} key-value entries, {} missing",
        acked.len(),
        acked_kv.len(),
        missing.len()
    );
    assert!(acked.len() > cycles, "the writers wrote");
    assert!(!acked_kv.is_empty(), "the key-value writer wrote");
    assert!(
        missing.is_empty(),
        "lost: {:?}",
        &missing[..missing.len().min(5)]
    );
}
