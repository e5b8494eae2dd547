//! Schema migrations: `PRAGMA user_version` and the SQL that takes each version to the next.

use std::path::Path;

use muisti_core::{Error, Result, text::token_string};
use rusqlite::{Connection, params};

use crate::{
    row::decode,
    sql::{COLUMNS, ROWID_AFTER_COLUMNS},
    sql_err,
};

pub(crate) const SCHEMA_VERSION: i64 = 5;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: [&str; 5] = [
    include_str!("schema.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
    include_str!("schema_v4.sql"),
    include_str!("schema_v5.sql"),
];

pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let read_version = || -> Result<i64> {
        conn.query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql_err)
    };
    let too_new = |version: i64| Error::Corrupted {
        location: path.display().to_string(),
        reason: format!(
            "schema version {version} was written by a newer muisti (this one knows {SCHEMA_VERSION})"
        ),
    };
    let version = read_version()?;
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    // Take the write lock, then look again: another process may have migrated meanwhile.
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err)?;
    let version = read_version()?;
    if version > SCHEMA_VERSION {
        return Err(too_new(version));
    }
    for sql in MIGRATIONS.iter().skip(version.max(0) as usize) {
        tx.execute_batch(sql).map_err(sql_err)?;
    }
    // Records written before version 2 have no full-text entry (read with today's columns,
    // so after every migration).
    if (1..2).contains(&version) {
        backfill_fts(&tx)?;
    }
    tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
        .map_err(sql_err)?;
    tx.commit().map_err(sql_err)
}

/// Indexes every existing record in the full-text table (migration to version 2).
pub(crate) fn backfill_fts(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let mut select = tx
        .prepare(&format!("SELECT {COLUMNS}, rowid FROM memories"))
        .map_err(sql_err)?;
    let rows = select
        .query_map([], |row| {
            Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?))
        })
        .map_err(sql_err)?;
    let mut insert = tx
        .prepare("INSERT INTO memory_terms (rowid, tokens, context) VALUES (?, ?, ?)")
        .map_err(sql_err)?;
    for row in rows {
        let (rowid, m) = row.map_err(sql_err)?;
        let m = m?;
        insert
            .execute(params![
                rowid,
                token_string(&m.index_text()),
                m.context.as_deref().map(token_string),
            ])
            .map_err(sql_err)?;
    }
    Ok(())
}
