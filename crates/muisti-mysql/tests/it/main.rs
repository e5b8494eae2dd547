//! Conformance of the MySQL/MariaDB store against a real server (`MUISTI_MYSQL_URL`, default
//! `mysql://root@127.0.0.1:3306/test`, the MariaDB this machine kind runs). Each test uses
//! tables of its own (a table prefix) and drops them afterwards. Skips with a printed line
//! when the server does not answer, unless `MUISTI_REQUIRE_SERVICES=1`.

use std::sync::Arc;

use muisti_core::{ErrorKind, Limits, MemoryId, Store};
use muisti_mysql::MysqlStore;
use muisti_testkit::Harness;

/// A test's own tables on the server.
struct MysqlHarness {
    url: String,
}

impl MysqlHarness {
    fn fresh(base: &str) -> Self {
        let prefix = format!("t{}_", MemoryId::generate().to_string().to_lowercase());
        let sep = if base.contains('?') { '&' } else { '?' };
        Self {
            url: format!("{base}{sep}table_prefix={prefix}&pool_size=4"),
        }
    }
}

impl Drop for MysqlHarness {
    fn drop(&mut self) {
        if let Ok(s) = MysqlStore::open(&self.url) {
            let _ = s.drop_tables();
        }
    }
}

impl Harness for MysqlHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(MysqlStore::open(&self.url).expect("connects"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            MysqlStore::open(&self.url)
                .expect("connects")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.url.clone())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(MysqlStore::open(location).expect("connects"))
    }
}

fn base_url() -> String {
    std::env::var("MUISTI_MYSQL_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into())
}

fn harness() -> Option<MysqlHarness> {
    let h = MysqlHarness::fresh(&base_url());
    if let Err(e) = MysqlStore::open(&h.url) {
        muisti_testkit::service_unavailable("mysql", &e.to_string());
        return None;
    }
    Some(h)
}

muisti_testkit::conformance!(harness());
muisti_testkit::conformance_persistent!(harness());

#[test]
fn unreachable_server_is_a_clear_error_without_the_password() {
    let err = MysqlStore::open("mysql://me:hunter2@127.0.0.1:1/db?tcp_connect_timeout_ms=2000")
        .expect_err("nothing listens on port 1");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    let msg = err.to_string();
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
}

#[test]
fn muisti_parameters_are_checked_before_connecting() {
    for (url, field) in [
        (
            "mysql://u@127.0.0.1:1/db?table_prefix=Bad-Name",
            "table_prefix",
        ),
        ("mysql://u@127.0.0.1:1/db?pool_size=0", "pool_size"),
        (
            "mysql://u@127.0.0.1:1/db?max_value_bytes=lots",
            "max_value_bytes",
        ),
        ("mysql://u@127.0.0.1:1/db?require_ssl=true", "require_ssl"),
        ("mysql://u@127.0.0.1:1/db?cache_mb=lots", "cache_mb"),
        ("mysql://u@127.0.0.1:1/db?staleness_ms=-1", "staleness_ms"),
        ("mysql://u@127.0.0.1:1/db?no_such_option=1", "store url"),
    ] {
        let err = MysqlStore::open(url).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}: {err}");
        assert!(err.to_string().contains(field), "{url}: {err}");
    }
}

/// Two handles (two servers) with `staleness_ms=0`: every change through one is seen by the
/// other's next read, which catches its copy up from the change log (the records named,
/// never the whole partition); a flush reloads it.
#[test]
fn copies_catch_up_from_the_change_log() {
    let Some(h) = harness() else { return };
    let exact = format!("{}&staleness_ms=0", h.url);
    let a = MysqlStore::open(&exact).expect("a");
    let b = MysqlStore::open(&exact).expect("b");
    muisti_testkit::shared::changes_are_seen_by_another_handle_at_once(&a, &b);
    let (loads, catch_ups) = b.copy_counts();
    assert_eq!(loads, 2, "loaded once, and again after the flush");
    assert!(catch_ups >= 5, "{catch_ups}");
}

/// The same with every read a statement on the database (`cache_mb=0`).
#[test]
fn two_handles_without_copies_see_each_other_at_once() {
    let Some(h) = harness() else { return };
    let url = format!("{}&cache_mb=0", h.url);
    let (a, b) = (h.open_at(&url), h.open_at(&url));
    muisti_testkit::shared::changes_are_seen_by_another_handle_at_once(&*a, &*b);
}

/// With a 200 ms window a write through one handle is seen by every read through the other
/// that starts 200 ms after it; the writer sees it at once.
#[test]
fn the_staleness_window_bounds_what_another_handle_misses() {
    let Some(h) = harness() else { return };
    let window = std::time::Duration::from_millis(200);
    let url = format!("{}&staleness_ms={}", h.url, window.as_millis());
    let (a, b) = (h.open_at(&url), h.open_at(&url));
    let seen = muisti_testkit::shared::the_staleness_window_bounds_what_another_handle_misses(
        &*a, &*b, window,
    );
    println!("mysql copy staleness: seen by the other handle after {seen:?} (window {window:?})");
}

/// Names that a case-insensitive or padding collation would confuse stay apart, and a term
/// longer than the postings' key is found.
#[test]
fn names_compare_exactly_and_long_terms_are_found() {
    let Some(h) = harness() else { return };
    let s = h.open();
    let p = muisti_core::Partition::of(muisti_core::Namespace::default_ns());
    let key = |k: &str| Some(muisti_core::Key::new(k).expect("key"));
    for k in ["city", "City", "city "] {
        s.put(muisti_core::Put::new(p.clone(), key(k), k))
            .expect("put");
    }
    assert_eq!(
        s.count(&p, &muisti_core::Filter::default()).expect("count"),
        3
    );
    let long = "z".repeat(300);
    let m = s
        .put(muisti_core::Put::new(
            p.clone(),
            None,
            format!("a {long} b"),
        ))
        .expect("put")
        .memory;
    let hits = s
        .text_search(&muisti_core::TextQuery {
            partition: p.clone(),
            query: long,
            filter: muisti_core::Filter::default(),
            limit: 5,
        })
        .expect("search");
    assert_eq!(hits.first().map(|h| h.id), Some(m.id));
}
