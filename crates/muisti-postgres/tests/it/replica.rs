//! The PostgreSQL store reading from a streaming replica: `MUISTI_POSTGRES_REPLICA_URL`, the
//! primary's URL with `replica=` naming its replica (`.ci/postgres-replica` starts both).
//! The conformance suite runs with `replica_lag_ms=0` (a read sees everything committed
//! before it starts, wherever it goes); the tests below take the default bound and pause the
//! replica's replay to show which reads it may serve.

use std::time::{Duration, Instant};

use muisti_core::{ErrorKind, Key, Locator, Namespace, Partition, Put, Store};
use muisti_postgres::PostgresStore;

use super::PgHarness;

fn replica_url() -> Option<String> {
    match std::env::var("MUISTI_POSTGRES_REPLICA_URL") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            muisti_testkit::service_unavailable(
                "postgres replica",
                "MUISTI_POSTGRES_REPLICA_URL is not set (.ci/postgres-replica starts one)",
            );
            None
        }
    }
}

fn harness_with(params: &str) -> Option<PgHarness> {
    let url = replica_url()?;
    let mut h = PgHarness::fresh(&url);
    if !params.is_empty() {
        h.url = h.with(params);
    }
    if let Err(e) = PostgresStore::open(&h.url) {
        muisti_testkit::service_unavailable("postgres replica", &e.to_string());
        return None;
    }
    Some(h)
}

mod conformance_on_a_replica {
    use super::*;
    muisti_testkit::conformance!(harness_with("replica_lag_ms=0"));
    muisti_testkit::conformance_persistent!(harness_with("replica_lag_ms=0"));
}

/// A connection to the replica itself, as the URL's `replica=` names it.
fn replica_client(url: &str) -> postgres::Client {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let host = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("replica="))
        .expect("the URL names its replica");
    postgres::Config::new()
        .host(host)
        .user("postgres")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .expect("the replica answers")
}

/// Pauses the replica's replay while alive.
struct Paused(postgres::Client);

impl Paused {
    fn new(url: &str) -> Self {
        let mut c = replica_client(url);
        c.batch_execute("SELECT pg_wal_replay_pause()")
            .expect("replay paused");
        Paused(c)
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let _ = self.0.batch_execute("SELECT pg_wal_replay_resume()");
    }
}

fn put(key: &str) -> Put {
    Put::new(
        Partition::of(Namespace::default_ns()),
        Some(Key::new(key).expect("valid")),
        format!("text of {key}"),
    )
}

fn query(text: &str, limit: usize) -> muisti_core::TextQuery {
    muisti_core::TextQuery {
        partition: Partition::of(Namespace::default_ns()),
        query: text.into(),
        filter: muisti_core::Filter::default(),
        limit,
    }
}

fn at(key: &str) -> Locator {
    Locator::Key {
        partition: Partition::of(Namespace::default_ns()),
        key: Key::new(key).expect("valid"),
    }
}

#[test]
fn reads_go_to_the_replica_and_see_this_handles_writes() {
    let Some(h) = harness_with("") else { return };
    let store = PostgresStore::open(&h.url).expect("connects");
    for i in 0..20 {
        let key = format!("k{i}");
        store.put(put(&key)).expect("written");
        // Read at once: the replica serves it only once it has the write.
        assert!(store.get(&at(&key)).expect("read").is_some(), "{key}");
    }
    // Once the replica has replayed them, reads go there (polled: a busy machine replays
    // later).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (served, _) = store.replica_reads().expect("a replica");
        assert!(store.get(&at("k0")).expect("read").is_some());
        if store.replica_reads().expect("a replica").0 > served {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the replica served no read in 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (served_before, _) = store.replica_reads().expect("a replica");
    for i in 0..20 {
        assert!(store.get(&at(&format!("k{i}"))).expect("read").is_some());
    }
    let recalled = store.text_search(&query("text", 10)).expect("searched");
    assert_eq!(recalled.len(), 10);
    let (served, _) = store.replica_reads().expect("a replica");
    assert!(
        served >= served_before + 20,
        "the replica served {} of the 21 reads",
        served - served_before
    );
}

#[test]
fn a_replica_behind_is_passed_over_and_the_bound_holds() {
    let Some(h) = harness_with("replica_lag_ms=300") else {
        return;
    };
    let writer = PostgresStore::open(&h.url).expect("connects");
    let reader = PostgresStore::open(&h.url).expect("connects");
    writer.put(put("before")).expect("written");
    // The reader's bound starts: it takes a position of the primary now.
    let _ = reader.get(&at("before")).expect("read");
    let paused = Paused::new(&h.url);
    writer.put(put("during")).expect("written");
    let wrote = Instant::now();
    // The writer reads its own write at once: the replica does not have it, the primary
    // answers.
    let (_, passed_before) = writer.replica_reads().expect("a replica");
    assert!(writer.get(&at("during")).expect("read").is_some());
    let (_, passed) = writer.replica_reads().expect("a replica");
    assert!(
        passed > passed_before,
        "the paused replica was not passed over"
    );
    // Another handle sees it once the bound has passed since the write, replica paused.
    std::thread::sleep(Duration::from_millis(320).saturating_sub(wrote.elapsed()));
    assert!(
        reader.get(&at("during")).expect("read").is_some(),
        "not seen {:?} after the write",
        wrote.elapsed()
    );
    // A search through the reader's copy sees it too.
    let found = reader.text_search(&query("during", 5)).expect("searched");
    assert_eq!(found.len(), 1);
    drop(paused);
}

#[test]
fn replica_parameters_are_checked() {
    let err =
        PostgresStore::open("postgres://u@127.0.0.1:1/db?replica_lag_ms=5").expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("replica="), "{err}");
    // A server that is not in recovery (the primary itself) is not taken as a replica.
    let Some(url) = replica_url() else { return };
    let (primary, _) = url
        .split_once("&replica=")
        .expect("the URL names its replica");
    let host = primary
        .split_once('?')
        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("host=")))
        .expect("the primary's URL names its socket directory")
        .to_owned();
    let h = PgHarness::fresh(primary);
    let err = PostgresStore::open(&h.with(&format!("replica={host}"))).expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("not a replica"), "{err}");
}

#[test]
fn an_unreachable_replica_is_passed_over() {
    let Some(url) = replica_url() else { return };
    let (primary, _) = url
        .split_once("&replica=")
        .expect("the URL names its replica");
    let h = PgHarness::fresh(primary);
    // Nothing listens there: the store opens, and every read goes to the primary.
    let store =
        PostgresStore::open(&h.with("replica=/nonexistent/muisti-replica&replica_lag_ms=0"))
            .expect("opens without its replica");
    for i in 0..5 {
        let key = format!("k{i}");
        store.put(put(&key)).expect("written");
        assert!(store.get(&at(&key)).expect("read").is_some(), "{key}");
    }
    let (served, passed) = store.replica_reads().expect("a replica");
    assert_eq!(served, 0);
    assert!(passed >= 5, "{passed}");
}
