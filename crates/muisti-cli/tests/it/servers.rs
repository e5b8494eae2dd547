//! Many `muisti serve` processes on one database: nothing one server does is missed or seen
//! late by another.

use std::thread;

use muisti_client::{Client, NewKey, NewMemory, RecallQuery};

use super::serve::{serve, terminate};

/// A schema of its own on the test PostgreSQL (`MUISTI_POSTGRES_URL`), dropped afterwards.
pub(crate) struct PgSchema {
    pub(crate) url: String,
}

impl PgSchema {
    pub(crate) fn fresh() -> Option<Self> {
        let Some(base) = std::env::var("MUISTI_POSTGRES_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            muisti_testkit::service_unavailable("postgres", "MUISTI_POSTGRES_URL is not set");
            return None;
        };
        let schema = format!(
            "test_{}",
            muisti::MemoryId::generate().to_string().to_lowercase()
        );
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}schema={schema}&pool_size=4");
        if let Err(e) = muisti::PostgresStore::open(&url) {
            muisti_testkit::service_unavailable("postgres", &e.to_string());
            return None;
        }
        Some(Self { url })
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        if let Ok(s) = muisti::PostgresStore::open(&self.url) {
            let _ = s.drop_schema();
        }
    }
}

fn recall_ids(c: &Client, query: &str) -> Vec<String> {
    c.recall(&RecallQuery {
        query: query.into(),
        limit: Some(10),
        ..RecallQuery::default()
    })
    .expect("recall")
    .hits
    .into_iter()
    .map(|h| h.memory.id)
    .collect()
}

/// Tables of their own on the test MySQL/MariaDB (`MUISTI_MYSQL_URL`, default the machine's
/// MariaDB), dropped afterwards.
struct MysqlTables {
    url: String,
}

impl MysqlTables {
    fn fresh() -> Option<Self> {
        let base = std::env::var("MUISTI_MYSQL_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into());
        let prefix = format!(
            "t{}_",
            muisti::MemoryId::generate().to_string().to_lowercase()
        );
        let sep = if base.contains('?') { '&' } else { '?' };
        let url = format!("{base}{sep}table_prefix={prefix}&pool_size=4");
        if let Err(e) = muisti::MysqlStore::open(&url) {
            muisti_testkit::service_unavailable("mysql", &e.to_string());
            return None;
        }
        Some(Self { url })
    }
}

impl Drop for MysqlTables {
    fn drop(&mut self) {
        if let Ok(s) = muisti::MysqlStore::open(&self.url) {
            let _ = s.drop_tables();
        }
    }
}

#[test]
fn two_servers_on_one_postgres_database_see_each_other_at_once() {
    let Some(pg) = PgSchema::fresh() else { return };
    two_servers_see_each_other_at_once(&pg.url);
}

/// On Redis the servers answer recall from in-process copies; `staleness_ms=0` makes every
/// read check its copy's generation, which is what "at once" asserts (the default window is
/// tested in the Redis store's tests).
#[test]
fn two_servers_on_one_redis_see_each_other_at_once() {
    let url = muisti_testkit::redis_keys::base_url();
    if let Err(e) = muisti::RedisStore::open(&url) {
        muisti_testkit::service_unavailable("redis", &e.to_string());
        return;
    }
    let keys = muisti_testkit::redis_keys::KeyPrefix::fresh(url, "muisti-servers");
    two_servers_see_each_other_at_once(&format!("{}&staleness_ms=0", keys.store_url()));
}

#[test]
fn two_servers_on_one_mysql_database_see_each_other_at_once() {
    let Some(my) = MysqlTables::fresh() else {
        return;
    };
    two_servers_see_each_other_at_once(&my.url);
}

/// Two servers on one store: a write through A is recalled through B at once, concurrent
/// writers through both lose nothing, a delete through A is gone from B's recall at once,
/// and a key created through A authenticates at B (and ends open mode there too).
fn two_servers_see_each_other_at_once(store: &str) {
    let (home_a, home_b) = (
        tempfile::tempdir().expect("temp dir"),
        tempfile::tempdir().expect("temp dir"),
    );
    let mut a = serve(home_a.path(), &["--store", store]);
    let b = serve(home_b.path(), &["--store", store]);
    let ca = Client::new(&a.base).expect("client");
    let cb = Client::new(&b.base).expect("client");

    let lisbon = ca
        .create(&NewMemory::text("I moved to Lisbon in March"))
        .expect("create through A");
    assert_eq!(
        recall_ids(&cb, "where did I move").first(),
        Some(&lisbon.id),
        "B recalls A's write at once"
    );

    const PER_WRITER: usize = 40;
    let writers: Vec<_> = [&a.base, &b.base, &a.base, &b.base]
        .into_iter()
        .enumerate()
        .map(|(w, base)| {
            let c = Client::new(base).expect("client");
            thread::spawn(move || {
                (0..PER_WRITER)
                    .map(|i| {
                        c.create(&NewMemory::text(format!("writer {w} note {i} about tea")))
                            .expect("acknowledged")
                            .id
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let acknowledged: Vec<String> = writers
        .into_iter()
        .flat_map(|t| t.join().expect("writer"))
        .collect();
    assert_eq!(acknowledged.len(), 4 * PER_WRITER);
    for c in [&ca, &cb] {
        assert_eq!(
            c.stats().expect("stats").total,
            4 * PER_WRITER as u64 + 1,
            "every acknowledged write, seen from both servers"
        );
    }
    for id in &acknowledged {
        assert!(cb.get(id).expect("get").is_some(), "{id} through B");
    }

    assert!(ca.delete(&lisbon.id).expect("delete through A"));
    assert!(
        !recall_ids(&cb, "where did I move").contains(&lisbon.id),
        "B no longer recalls what A deleted"
    );
    assert!(cb.get(&lisbon.id).expect("get").is_none());

    let made = ca
        .create_key(&NewKey {
            tenant: "acme".into(),
            label: Some("made through A".into()),
            ..NewKey::default()
        })
        .expect("key through A");
    let keyed = Client::new(&b.base)
        .expect("client")
        .with_key(Some(made.key));
    let stats = keyed.stats().expect("A's key works at B at once");
    assert_eq!((stats.tenant.as_str(), stats.total), ("acme", 0));
    assert_eq!(
        cb.stats()
            .expect_err("a key seen at B ends its open mode")
            .status(),
        Some(401)
    );
    // A server stops cleanly (on PostgreSQL, closing its connections once panicked inside
    // the runtime and aborted).
    let status = terminate(&mut a.child);
    assert!(status.success(), "{status:?}");
}
