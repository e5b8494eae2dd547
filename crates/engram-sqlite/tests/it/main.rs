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
