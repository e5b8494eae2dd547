//! The write transactions: a put, an atomic update and the purge of expired records, each
//! run inside a transaction the store opened.

use muisti_core::{
    Error, Limits, Locator, Memory, Put, Record, Result, Timestamp, UpdateRequest, VectorChange,
    WriteStatus, Written, text::vector_from_bytes,
};
use rusqlite::{OptionalExtension, params};

use crate::{
    cache::Fresh,
    row::{Target, decode, write_row},
    sql::{GET_BY_ID_FOR_WRITE, GET_FOR_WRITE, ROWID_AFTER_COLUMNS},
    sql_err,
};

/// Applies one validated write inside a transaction; the record as the in-memory copy
/// should now hold it.
pub(crate) fn put_in(
    tx: &rusqlite::Transaction<'_>,
    mut put: Put,
    now: Timestamp,
) -> Result<(Written, Fresh)> {
    let vector = put.embedding.take();
    let existing = match &put.key {
        None => None,
        Some(key) => {
            let mut stmt = tx.prepare_cached(GET_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(
                params![
                    put.partition.tenant.as_str(),
                    put.partition.namespace.as_str(),
                    key.as_str()
                ],
                |row| Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?)),
            )
            .optional()
            .map_err(sql_err)?
        }
    };
    let (rowid, live) = match existing {
        Some((rowid, m)) => {
            let m = m?;
            if m.is_expired(now) {
                (Some(rowid), None)
            } else {
                (Some(rowid), Some(m))
            }
        }
        None => (None, None),
    };
    let memory = put.apply(live.as_ref(), now);
    let status = if live.is_some() {
        WriteStatus::Updated
    } else {
        WriteStatus::Created
    };
    let target = match rowid {
        None => Target::New,
        Some(rowid) => Target::Row {
            rowid,
            was: live.as_ref(),
            vector_kept: false,
        },
    };
    let mut fresh = write_row(tx, &memory, vector.as_deref(), target)?;
    fresh.replaced_user = live.map(|m| m.owner.user_id);
    Ok((Written { memory, status }, fresh))
}

/// Applies one update inside a transaction: the row is read, [`UpdateRequest::apply`] makes
/// the new record, and the row (with its full-text entry and vector) is rewritten.
pub(crate) fn update_in(
    tx: &rusqlite::Transaction<'_>,
    req: &UpdateRequest,
    now: Timestamp,
    limits: &Limits,
) -> Result<(Memory, Fresh)> {
    let found = match &req.at {
        Locator::Key { partition, key } => {
            let mut stmt = tx.prepare_cached(GET_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(
                params![
                    partition.tenant.as_str(),
                    partition.namespace.as_str(),
                    key.as_str()
                ],
                |row| Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?)),
            )
        }
        Locator::Id { tenant, id } => {
            let mut stmt = tx.prepare_cached(GET_BY_ID_FOR_WRITE).map_err(sql_err)?;
            stmt.query_row(params![id.to_string(), tenant.as_str()], |row| {
                Ok((row.get::<_, i64>(ROWID_AFTER_COLUMNS)?, decode(row)?))
            })
        }
    }
    .optional()
    .map_err(sql_err)?;
    let (rowid, live) = match found {
        Some((rowid, m)) => {
            let m = m?;
            let live = (!m.is_expired(now) && req.at.addresses(&m)).then_some(m);
            (Some(rowid), live)
        }
        None => (None, None),
    };
    let (memory, change) = req.apply(live.as_ref(), now, limits)?;
    let vector_kept = matches!(change, VectorChange::Keep);
    let vector = match change {
        VectorChange::Set(v) => Some(v),
        VectorChange::Drop => None,
        VectorChange::Keep => {
            let blob: Option<Vec<u8>> = tx
                .prepare_cached("SELECT vector FROM memories WHERE rowid = ?")
                .and_then(|mut s| s.query_row([rowid], |r| r.get(0)))
                .map_err(sql_err)?;
            match blob {
                Some(b) => Some(vector_from_bytes(&b).ok_or_else(|| Error::Corrupted {
                    location: format!("sqlite row id {}", memory.id),
                    reason: "bad vector".into(),
                })?),
                None => None,
            }
        }
    };
    let target = match rowid {
        None => Target::New,
        Some(rowid) => Target::Row {
            rowid,
            was: live.as_ref(),
            vector_kept,
        },
    };
    let mut fresh = write_row(tx, &memory, vector.as_deref(), target)?;
    fresh.replaced_user = live.map(|m| m.owner.user_id);
    Ok((memory, fresh))
}

/// Writes one whole record inside a transaction (see `Store::import`): the rows with its
/// id in its tenant, or at its key, are deleted (their full-text and access rows with them,
/// by trigger) and the record inserted as it is.
pub(crate) fn import_in(tx: &rusqlite::Transaction<'_>, r: &Record) -> Result<()> {
    let m = &r.memory;
    tx.prepare_cached(
        "DELETE FROM memories WHERE tenant = ?1 AND (id = ?2 OR (namespace = ?3 AND key = ?4))",
    )
    .and_then(|mut s| {
        s.execute(params![
            m.partition.tenant.as_str(),
            m.id.to_string(),
            m.partition.namespace.as_str(),
            m.key.as_str()
        ])
    })
    .map_err(sql_err)?;
    write_row(tx, m, r.vector.as_deref(), Target::New)?;
    Ok(())
}

pub(crate) fn purge_in(tx: &rusqlite::Transaction<'_>, now: i64) -> Result<u64> {
    let mut stmt = tx
        .prepare_cached("DELETE FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?")
        .map_err(sql_err)?;
    Ok(stmt.execute([now]).map_err(sql_err)? as u64)
}
