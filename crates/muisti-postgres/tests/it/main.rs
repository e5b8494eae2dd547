//! Conformance of the PostgreSQL store against a real server with pgvector
//! (`MUISTI_POSTGRES_URL`, for example `postgresql://postgres:@/postgres?host=/run/pg`;
//! `.ci/run` starts one). Each test uses a schema of its own and drops it afterwards. Skips
//! with a printed line when no server is given or it does not answer, unless
//! `MUISTI_REQUIRE_SERVICES=1`.

use std::sync::Arc;

use muisti_core::{ErrorKind, Limits, MemoryId, Store};
use muisti_postgres::PostgresStore;
use muisti_testkit::Harness;

mod replica;
mod tls;

/// A test's own schema on the server.
struct PgHarness {
    url: String,
}

impl PgHarness {
    fn fresh(base: &str) -> Self {
        let schema = format!("test_{}", MemoryId::generate().to_string().to_lowercase());
        let sep = if base.contains('?') { '&' } else { '?' };
        Self {
            url: format!("{base}{sep}schema={schema}&pool_size=4"),
        }
    }

    /// The same schema with more parameters.
    fn with(&self, params: &str) -> String {
        format!("{}&{params}", self.url)
    }
}

impl Drop for PgHarness {
    fn drop(&mut self) {
        if let Ok(s) = PostgresStore::open(&self.url) {
            let _ = s.drop_schema();
        }
    }
}

impl Harness for PgHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(PostgresStore::open(&self.url).expect("connects"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            PostgresStore::open(&self.url)
                .expect("connects")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.url.clone())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(PostgresStore::open(location).expect("connects"))
    }
}

fn base_url() -> Option<String> {
    std::env::var("MUISTI_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
}

fn harness() -> Option<PgHarness> {
    harness_with("")
}

/// A harness whose URL carries `params` too.
fn harness_with(params: &str) -> Option<PgHarness> {
    let Some(url) = base_url() else {
        muisti_testkit::service_unavailable("postgres", "MUISTI_POSTGRES_URL is not set");
        return None;
    };
    let mut h = PgHarness::fresh(&url);
    if !params.is_empty() {
        h.url = h.with(params);
    }
    if let Err(e) = PostgresStore::open(&h.url) {
        muisti_testkit::service_unavailable("postgres", &e.to_string());
        return None;
    }
    Some(h)
}

muisti_testkit::conformance!(harness());
muisti_testkit::conformance_persistent!(harness());

/// The whole suite again with no copies: every search a statement on the database.
mod in_the_database {
    use super::*;
    muisti_testkit::conformance!(harness_with("cache_mb=0"));
}

#[test]
fn unreachable_server_is_a_clear_error_without_the_password() {
    let err = PostgresStore::open("postgres://me:hunter2@127.0.0.1:1/db?connect_timeout=2")
        .expect_err("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

#[test]
fn muisti_parameters_are_checked_before_connecting() {
    for (url, field) in [
        ("postgres://u@127.0.0.1:1/db?schema=Bad-Name", "schema"),
        ("postgres://u@127.0.0.1:1/db?pool_size=0", "pool_size"),
        (
            "postgres://u@127.0.0.1:1/db?max_value_bytes=lots",
            "max_value_bytes",
        ),
        ("postgres://u@127.0.0.1:1/db?sslmode=verify", "sslmode"),
        (
            "postgres://u@127.0.0.1:1/db?sslmode=require&sslrootcert=system",
            "sslrootcert",
        ),
        ("postgres://u@127.0.0.1:1/db?sslcert=client.crt", "sslcert"),
        (
            "postgres://u@127.0.0.1:1/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.crt",
            "sslrootcert",
        ),
    ] {
        let err = PostgresStore::open(url).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        assert!(err.to_string().contains(field), "{url}: {err}");
    }
}

/// A server without pgvector (`MUISTI_PLAIN_POSTGRES_URL`, default this machine kind's
/// PostgreSQL 15 on 5432) is refused with the reason, not a bare SQL error. Skips (fails
/// with `MUISTI_REQUIRE_SERVICES=1`) when that server does not answer or has pgvector.
#[test]
fn a_server_without_pgvector_is_a_clear_error() {
    let url = std::env::var("MUISTI_PLAIN_POSTGRES_URL").unwrap_or_else(|_| {
        "postgres://postgres@127.0.0.1:5432/postgres?connect_timeout=2&schema=muisti_probe".into()
    });
    match PostgresStore::open(&url) {
        Err(e) if e.kind() == ErrorKind::Unavailable => {
            muisti_testkit::service_unavailable("postgres without pgvector", &e.to_string());
        }
        Err(e) => assert!(e.to_string().contains("pgvector"), "{e}"),
        Ok(s) => {
            s.drop_schema().expect("drop");
            muisti_testkit::service_unavailable(
                "postgres without pgvector",
                "the server at MUISTI_PLAIN_POSTGRES_URL has pgvector",
            );
        }
    }
}

/// Two handles (two servers) with `staleness_ms=0`: every change through one is seen by the
/// other's next read, which catches its copy up from the change log (the records named,
/// never the whole partition); a flush reloads it.
#[test]
fn copies_catch_up_from_the_change_log() {
    let Some(h) = harness() else { return };
    let exact = h.with("staleness_ms=0");
    let a = PostgresStore::open(&exact).expect("a");
    let b = PostgresStore::open(&exact).expect("b");
    muisti_testkit::shared::changes_are_seen_by_another_handle_at_once(&a, &b);
    let (loads, catch_ups) = b.copy_counts();
    assert_eq!(loads, 2, "loaded once, and again after the flush");
    assert!(catch_ups >= 5, "{catch_ups}");
}

/// The same with every search a statement on the database (`cache_mb=0`).
#[test]
fn two_handles_without_copies_see_each_other_at_once() {
    let Some(h) = harness() else { return };
    let url = h.with("cache_mb=0");
    let (a, b) = (h.open_at(&url), h.open_at(&url));
    muisti_testkit::shared::changes_are_seen_by_another_handle_at_once(&*a, &*b);
}

/// With a 200 ms window a write through one handle is seen by every read through the other
/// that starts 200 ms after it; the writer sees it at once.
#[test]
fn the_staleness_window_bounds_what_another_handle_misses() {
    let Some(h) = harness() else { return };
    let window = std::time::Duration::from_millis(200);
    let url = h.with(&format!("staleness_ms={}", window.as_millis()));
    let (a, b) = (h.open_at(&url), h.open_at(&url));
    let seen = muisti_testkit::shared::the_staleness_window_bounds_what_another_handle_misses(
        &*a, &*b, window,
    );
    println!(
        "postgres copy staleness: seen by the other handle after {seen:?} (window {window:?})"
    );
}

/// Past `ann_threshold` vectors of one dimension an HNSW index is built in the background;
/// searches through it find what an exact scan finds (on data this small), filtered ones
/// included.
#[test]
fn an_hnsw_index_is_built_past_the_threshold_and_answers_as_the_scan() {
    let Some(h) = harness() else { return };
    let store = PostgresStore::open(&format!("{}&ann_threshold=60", h.url)).expect("opens");
    let p = muisti_core::Partition::of(muisti_core::Namespace::default_ns());
    let dims = 8;
    let vector = |i: usize| -> Vec<f32> {
        let mut v: Vec<f32> = (0..dims)
            .map(|k| {
                (((i * 7 + k * 13) % 17) as f32 - 8.0) / 8.0 + if k == i % dims { 1.0 } else { 0.0 }
            })
            .collect();
        muisti_core::text::normalize(&mut v);
        v
    };
    let puts: Vec<muisti_core::Put> = (0..80)
        .map(|i| {
            let mut put = muisti_core::Put::new(p.clone(), None, format!("memory {i}"));
            put.owner.user_id = Some(format!("u{}", i % 2));
            put.embedding = Some(vector(i));
            put.embedding_model = Some("test".into());
            put
        })
        .collect();
    store.put_many(puts).expect("written");
    let search = |v: Vec<f32>, filter: muisti_core::Filter| muisti_core::VectorQuery {
        partition: p.clone(),
        vector: v,
        filter,
        limit: 5,
    };
    // The first search starts the build.
    store
        .vector_search(&search(vector(3), muisti_core::Filter::default()))
        .expect("search");
    let start = std::time::Instant::now();
    while !store.ann_ready(dims).expect("catalog") {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "no index after 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    for (i, user) in [(5, None), (11, Some("u1")), (40, Some("u0"))] {
        let filter = muisti_core::Filter {
            user_id: user.map(str::to_owned),
            ..muisti_core::Filter::default()
        };
        let q = search(vector(i), filter);
        let ids =
            |hits: Vec<muisti_core::Scored>| hits.into_iter().map(|s| s.id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.vector_search(&q).expect("indexed")),
            ids(muisti_core::exact_vector_search(&store, &q).expect("exact")),
            "query {i} {user:?}"
        );
    }
}
