//! Conformance of the SQLite store, and what only SQLite has.

use std::sync::Arc;

use engram_core::{Limits, Store};
use engram_sqlite::SqliteStore;
use engram_testkit::Harness;

struct SqliteHarness(tempfile::TempDir);

impl SqliteHarness {
    fn path(&self) -> std::path::PathBuf {
        self.0.path().join("engram.db")
    }
}

impl Harness for SqliteHarness {
    fn open(&self) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(self.path()).expect("opens"))
    }
    fn open_with_limits(&self, limits: Limits) -> Arc<dyn Store> {
        Arc::new(
            SqliteStore::open(self.path())
                .expect("opens")
                .with_limits(limits),
        )
    }
    fn location(&self) -> Option<String> {
        Some(self.path().display().to_string())
    }
    fn open_at(&self, location: &str) -> Arc<dyn Store> {
        Arc::new(SqliteStore::open(location).expect("opens"))
    }
}

fn harness() -> Option<SqliteHarness> {
    Some(SqliteHarness(tempfile::tempdir().expect("temp dir")))
}

engram_testkit::conformance!(harness());
engram_testkit::conformance_persistent!(harness());

#[test]
fn not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("engram.db");
    std::fs::write(&path, b"this is not a sqlite database, just text long enough to look like a header ......................................").expect("writes");
    let err = SqliteStore::open(&path).err().expect("refuses");
    assert_eq!(err.kind(), engram_core::ErrorKind::Corrupted, "{err}");
}

#[test]
fn a_version_1_database_is_migrated_and_its_records_are_searchable() {
    use engram_core::{Filter, Key, Namespace, Partition, Put, TextQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("engram.db");
    let p = Partition::of(Namespace::default_ns());
    let id = {
        let s = SqliteStore::open(&path).expect("opens");
        s.put(Put::new(
            p.clone(),
            Some(Key::new("city").expect("valid")),
            "Lisbon since March",
        ))
        .expect("writes")
        .memory
        .id
    };
    // Turn it back into what version 1 wrote.
    let conn = rusqlite::Connection::open(&path).expect("opens");
    conn.execute_batch(
        "DROP TABLE memories_fts; ALTER TABLE memories DROP COLUMN vector; \
         ALTER TABLE memories DROP COLUMN context; PRAGMA user_version = 1;",
    )
    .expect("downgrades");
    drop(conn);
    let s = SqliteStore::open(&path).expect("migrates");
    let hits = s
        .text_search(&TextQuery {
            partition: p,
            query: "where is lisbon".into(),
            filter: Filter::default(),
            limit: 5,
        })
        .expect("searches");
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, id);
    let version: i64 = rusqlite::Connection::open(&path)
        .expect("opens")
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("reads");
    assert_eq!(version, 2);
}

#[test]
fn a_database_from_a_newer_engram_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("engram.db");
    drop(SqliteStore::open(&path).expect("opens"));
    rusqlite::Connection::open(&path)
        .expect("opens")
        .execute_batch("PRAGMA user_version = 99;")
        .expect("sets");
    let err = SqliteStore::open(&path).err().expect("refuses");
    assert!(err.to_string().contains("newer engram"), "{err}");
}

#[test]
fn cached_vectors_see_writes_from_another_handle() {
    use engram_core::{Filter, Key, Namespace, Partition, Put, VectorQuery};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("engram.db");
    let reader = SqliteStore::open(&path).expect("opens");
    let writer = SqliteStore::open(&path).expect("opens");
    let p = Partition::of(Namespace::default_ns());
    let put = |store: &SqliteStore, key: &str, v: Vec<f32>| {
        let mut put = Put::new(p.clone(), Some(Key::new(key).expect("valid")), key);
        put.embedding_model = Some("m".into());
        put.embedding = Some(v);
        store.put(put).expect("writes").memory.id
    };
    let search = |v: Vec<f32>| {
        reader
            .vector_search(&VectorQuery {
                partition: p.clone(),
                vector: v,
                filter: Filter::default(),
                limit: 1,
            })
            .expect("searches")
    };
    let a = put(&reader, "a", vec![1.0, 0.0]);
    assert_eq!(
        search(vec![0.0, 1.0])[0].id,
        a,
        "loads the partition into the cache"
    );
    // Another handle (as another process would) writes a better match.
    let b = put(&writer, "b", vec![0.0, 1.0]);
    assert_eq!(search(vec![0.0, 1.0])[0].id, b);
    // And deletes it.
    writer
        .delete(&engram_core::Locator::Key {
            partition: p.clone(),
            key: Key::new("b").expect("valid"),
        })
        .expect("deletes");
    assert_eq!(search(vec![0.0, 1.0])[0].id, a);
}
