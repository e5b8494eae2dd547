//! Schema migrations: `PRAGMA user_version` and the SQL that takes each version to the next.

use std::path::Path;

use muisti_core::{Error, Result, text::token_string};
use rusqlite::{Connection, params};

use crate::{
    row::decode,
    sql::{COLUMNS, ROWID_AFTER_COLUMNS},
    sql_err,
};

pub(crate) const SCHEMA_VERSION: i64 = 8;
/// Migrations: the SQL that takes the schema from version `i` to `i + 1`.
pub(crate) const MIGRATIONS: [&str; 8] = [
    include_str!("schema.sql"),
    include_str!("schema_v2.sql"),
    include_str!("schema_v3.sql"),
    include_str!("schema_v4.sql"),
    include_str!("schema_v5.sql"),
    include_str!("schema_v6.sql"),
    include_str!("schema_v7.sql"),
    include_str!("schema_v8.sql"),
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

/// Sets the secondary indexes of `memories` aside for a bulk load (see
/// [`muisti_core::Store::bulk_load`]) when the table holds fewer than `max_rows` rows:
/// building an index again sorts every row, which pays only when the load brings most of
/// them. Each index's statement goes to `deferred_indexes` in the transaction that drops it.
/// The unique indexes stay: they enforce the table's constraints. Returns whether any index
/// was set aside (none when a load running elsewhere already has them).
pub(crate) fn set_indexes_aside(conn: &mut Connection, max_rows: i64) -> Result<bool> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err)?;
    let rows: i64 = tx
        .query_row(
            "SELECT count(*) FROM (SELECT 1 FROM memories LIMIT ?1)",
            [max_rows],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    if rows >= max_rows {
        return Ok(false);
    }
    let indexes = names_and_statements(
        &tx,
        "SELECT name, sql FROM sqlite_master \
         WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL",
    )?;
    for (name, sql) in &indexes {
        tx.execute(
            "INSERT OR REPLACE INTO deferred_indexes (name, sql) VALUES (?1, ?2)",
            params![name, sql],
        )
        .map_err(sql_err)?;
        // The name comes from sqlite_master: an identifier SQLite itself accepted.
        tx.execute_batch(&format!("DROP INDEX \"{}\"", name.replace('"', "\"\"")))
            .map_err(sql_err)?;
    }
    tx.commit().map_err(sql_err)?;
    Ok(!indexes.is_empty())
}

/// Builds again every index a bulk load set aside (at its end, or when the store is opened
/// after a load was cut short) and forgets them, in one transaction.
pub(crate) fn restore_indexes(conn: &mut Connection) -> Result<()> {
    let pending: bool = conn
        .query_row("SELECT EXISTS (SELECT 1 FROM deferred_indexes)", [], |r| {
            r.get(0)
        })
        .map_err(sql_err)?;
    if !pending {
        return Ok(());
    }
    // Each build reads every row once and sorts its keys: through the page cache rather
    // than the memory map, and with the sorter spilling to a file beyond the cache size,
    // its memory stays that of the cache instead of growing with the table.
    let pragma = |name: &str| -> Result<i64> {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .map_err(sql_err)
    };
    let (temp_store, mmap_size) = (pragma("temp_store")?, pragma("mmap_size")?);
    conn.execute_batch("PRAGMA temp_store = FILE; PRAGMA mmap_size = 0;")
        .map_err(sql_err)?;
    let built = build_deferred(conn);
    let reset = conn
        .execute_batch(&format!(
            "PRAGMA temp_store = {temp_store}; PRAGMA mmap_size = {mmap_size};"
        ))
        .map_err(sql_err);
    built.and(reset)
}

fn build_deferred(conn: &mut Connection) -> Result<()> {
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(sql_err)?;
    let deferred = names_and_statements(
        &tx,
        "SELECT d.name, d.sql FROM deferred_indexes d \
         WHERE NOT EXISTS (SELECT 1 FROM sqlite_master m \
                           WHERE m.type = 'index' AND m.name = d.name)",
    )?;
    for (_, sql) in &deferred {
        tx.execute_batch(sql).map_err(sql_err)?;
    }
    tx.execute("DELETE FROM deferred_indexes", [])
        .map_err(sql_err)?;
    tx.commit().map_err(sql_err)
}

/// The (index name, `CREATE INDEX` statement) pairs `query` selects.
fn names_and_statements(conn: &Connection, query: &str) -> Result<Vec<(String, String)>> {
    conn.prepare(query)
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
        .map_err(sql_err)
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
