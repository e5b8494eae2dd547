//! Opening a connection: the pragmas every connection of the store runs with.

use super::*;

pub(crate) fn connect(path: &Path, durability: Durability, mmap_bytes: u64) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| Error::Unavailable {
        target: format!("sqlite://{}", path.display()),
        reason: e.to_string(),
    })?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(sql_err)?;
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    let pragmas = format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA foreign_keys=ON; \
         PRAGMA secure_delete=ON; \
         PRAGMA cache_size=-32768; PRAGMA mmap_size={mmap_bytes}; PRAGMA temp_store=MEMORY; \
         PRAGMA wal_autocheckpoint=8192; PRAGMA journal_size_limit=67108864;"
    );
    // `journal_mode` can answer SQLITE_BUSY without waiting on the busy handler while
    // another process opens or checkpoints the same file: wait here instead, as long as
    // the busy timeout would.
    let started = std::time::Instant::now();
    let set = loop {
        match conn.execute_batch(&pragmas) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && started.elapsed() < Duration::from_secs(30) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => break other,
        }
    };
    set.map_err(|e| match sql_err(e) {
        Error::Corrupted { reason, .. } => Error::Corrupted {
            location: path.display().to_string(),
            reason,
        },
        other => other,
    })?;
    conn.set_prepared_statement_cache_capacity(64);
    // The query planner stability guarantee: without it SQLite (3.54) plans `LIMIT ?` with
    // the bound value and marks the statement to be prepared again whenever a new value is
    // bound, and a cached statement's bindings are cleared on reuse, so every read with a
    // limit was parsed and planned again (a quarter of LoCoMo recall's time in `perf`).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(sql_err)?;
    Ok(conn)
}
