//! The crash battery: `muisti serve` killed with SIGKILL while concurrent writers send
//! memories, again and again on the same store; after each restart every write the server
//! acknowledged (201) is there, unchanged. `MUISTI_CRASH_CYCLES` sets the number of cycles
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

use muisti_client::{Client, ListParams, NewMemory};

use crate::serve::serve;

const WRITERS: usize = 4;

#[test]
fn no_acknowledged_write_is_lost_to_kill_9() {
    let cycles: usize = std::env::var("MUISTI_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let home = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/crash.db", home.path().display());
    // id → content of every acknowledged write.
    let acked: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for cycle in 0..cycles {
        let mut served = serve(home.path(), &["--store", &url]);
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let base = served.base.clone();
                let stop = Arc::clone(&stop);
                let acked = Arc::clone(&acked);
                thread::spawn(move || {
                    let client = Client::new(&base).expect("client");
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let content = format!("cycle {cycle} writer {w} write {n}");
                        let mut m = NewMemory::text(content.clone());
                        m.user_id = Some(format!("w{w}"));
                        match client.create(&m) {
                            Ok(stored) => {
                                acked
                                    .lock()
                                    .expect("lock")
                                    .insert(stored.id.clone(), content);
                            }
                            // The server is gone: unacknowledged, may or may not be stored.
                            Err(_) => break,
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
    let served = serve(home.path(), &["--store", &url]);
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
    let missing: Vec<_> = acked
        .iter()
        .filter(|(id, content)| stored.get(*id) != Some(content))
        .collect();
    println!(
        "crash: {cycles} kill -9 cycles, {WRITERS} writers, {} acknowledged writes, {} missing",
        acked.len(),
        missing.len()
    );
    assert!(acked.len() > cycles, "the writers wrote");
    assert!(
        missing.is_empty(),
        "lost: {:?}",
        &missing[..missing.len().min(5)]
    );
}
