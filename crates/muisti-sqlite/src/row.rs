//! Records to rows and back: the column codec of the `memories` table.

use std::sync::LazyLock;

use muisti_core::{
    Memory, Result,
    quant::quantize_into,
    text::{token_string, vector_to_bytes},
};
use muisti_store::Columns;
use rusqlite::{Row, params};

use crate::{
    cache::Fresh,
    packed,
    sql::{INSERT, WRITE_COLUMNS},
    sql_err,
};

/// Decodes a row selected with [`COLUMNS`](crate::sql::COLUMNS).
pub(crate) fn decode(row: &Row<'_>) -> rusqlite::Result<Result<Memory>> {
    decode_from(row, 0)
}

/// Decodes the [`COLUMNS`](crate::sql::COLUMNS) of a row that start at column `base`.
pub(crate) fn decode_from(row: &Row<'_>, base: usize) -> rusqlite::Result<Result<Memory>> {
    let columns = Columns {
        id: row.get(base)?,
        tenant: row.get(base + 1)?,
        namespace: row.get(base + 2)?,
        key: row.get(base + 3)?,
        content: row.get(base + 4)?,
        content_is_json: row.get(base + 5)?,
        category: row.get(base + 6)?,
        scope: row.get(base + 7)?,
        user_id: row.get(base + 8)?,
        agent_id: row.get(base + 9)?,
        session_id: row.get(base + 10)?,
        tags: row.get(base + 11)?,
        metadata: row.get(base + 12)?,
        importance: row.get(base + 13)?,
        source: row.get(base + 14)?,
        confidence: row.get(base + 15)?,
        content_hash: row.get(base + 16)?,
        state: row.get(base + 17)?,
        superseded_by: row.get(base + 18)?,
        valid_from: row.get(base + 19)?,
        valid_until: row.get(base + 20)?,
        created_at: row.get(base + 21)?,
        updated_at: row.get(base + 22)?,
        last_accessed_at: row.get(base + 23)?,
        access_count: row.get(base + 24)?,
        expires_at: row.get(base + 25)?,
        embedding_model: row.get(base + 26)?,
        context: row.get(base + 27)?,
        version: row.get(base + 28)?,
    };
    Ok(columns.into_memory("sqlite"))
}

/// Where [`write_row`] writes a record.
pub(crate) enum Target<'a> {
    /// A new row.
    New,
    /// The row `rowid`, which held `was` (as a read decodes it) when that is what the write
    /// changes; `vector_kept` when the write leaves its vector as it is.
    Row {
        rowid: i64,
        was: Option<&'a Memory>,
        vector_kept: bool,
    },
}

/// The `memories` columns [`write_row`] writes, in the order of its values (the vector
/// last): the names of [`WRITE_COLUMNS`].
static WRITTEN: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| WRITE_COLUMNS.split(',').map(str::trim).collect());

/// Inserts or updates one record, its vector, its full-text entry and, when it has a user,
/// its part of the user's copy (after the record's statement, whose triggers take the old
/// part away).
///
/// An update of a record as it was read sets only the columns that changed: SQLite rewrites
/// every index whose columns a statement sets, changed or not, so a change of importance or
/// metadata (maintenance's promotions and folds, a supersession's mark) would otherwise pay
/// for the six indexes and the word index of a text that did not change.
pub(crate) fn write_row(
    tx: &rusqlite::Transaction<'_>,
    m: &Memory,
    vector: Option<&[f32]>,
    target: Target<'_>,
) -> Result<Fresh> {
    let c = Columns::of(m);
    let blob = vector.map(vector_to_bytes);
    let mut values = record_values(&c).to_vec();
    values.push(&blob);
    let values = values.as_slice();
    let (rowid, words_changed) = match target {
        Target::New => {
            let mut stmt = tx.prepare_cached(INSERT).map_err(sql_err)?;
            stmt.execute(values).map_err(sql_err)?;
            (tx.last_insert_rowid(), true)
        }
        Target::Row {
            rowid,
            was,
            vector_kept,
        } => {
            let changed = match was {
                None => vec![true; WRITTEN.len()],
                Some(was) => changed_columns(was, values, vector_kept)?,
            };
            let sets: Vec<String> = (0..WRITTEN.len())
                .filter(|&i| changed[i])
                .map(|i| format!("{} = ?{}", WRITTEN[i], i + 1))
                .collect();
            if !sets.is_empty() {
                let sql = format!(
                    "UPDATE memories SET {} WHERE rowid = ?{}",
                    sets.join(", "),
                    WRITTEN.len() + 1
                );
                let mut stmt = tx.prepare_cached(&sql).map_err(sql_err)?;
                for (i, value) in values.iter().enumerate().filter(|&(i, _)| changed[i]) {
                    stmt.raw_bind_parameter(i + 1, value).map_err(sql_err)?;
                }
                stmt.raw_bind_parameter(WRITTEN.len() + 1, rowid)
                    .map_err(sql_err)?;
                stmt.raw_execute().map_err(sql_err)?;
            }
            let words_changed = was
                .is_none_or(|was| was.index_text() != m.index_text() || was.context != m.context);
            (rowid, words_changed)
        }
    };
    let terms = token_string(&m.index_text());
    let context_terms = m.context.as_deref().map(token_string);
    if words_changed {
        tx.prepare_cached(
            "INSERT INTO memory_terms (rowid, tokens, context) VALUES (?1, ?2, ?3) \
             ON CONFLICT (rowid) DO UPDATE SET tokens = ?2, context = ?3",
        )
        .and_then(|mut s| s.execute(params![rowid, terms, context_terms]))
        .map_err(sql_err)?;
    }
    if let Some(user) = c.user_id.as_deref() {
        let fields = packed::Fields {
            rowid,
            id: &c.id,
            user_id: None,
            agent_id: c.agent_id.as_deref(),
            session_id: c.session_id.as_deref(),
            category: &c.category,
            scope: &c.scope,
            created_at: c.created_at,
            expires_at: c.expires_at,
            tags: &c.tags,
            metadata: &c.metadata,
            content_hash: &c.content_hash,
            updated_at: c.updated_at,
            importance: c.importance,
            stored_accesses: c.access_count,
            // RankFields::time_of, as the load's SQL reads it.
            time: c.valid_from.unwrap_or(c.created_at),
            terms: &terms,
            context_terms: context_terms.as_deref(),
        };
        let mut quantized = Vec::with_capacity(vector.map_or(0, <[f32]>::len));
        let scale = vector.map(|v| quantize_into(v, &mut quantized));
        let part = packed::part(&fields, scale.map(|s| (quantized.as_slice(), s)));
        tx.prepare_cached(
            "INSERT OR REPLACE INTO user_copy_parts (tenant, namespace, user_id, record, part) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .and_then(|mut s| s.execute(params![c.tenant, c.namespace, user, rowid, part]))
        .map_err(sql_err)?;
    }
    Ok(Fresh::of(m, vector, terms, context_terms))
}

/// Which of [`WRITTEN`] a write of a record read as `was` sets: those whose value
/// (`values`, in that order) differs from `was`'s, the vector only if the write changes it,
/// and the access statistics always. A read adds to them the accesses not yet folded into
/// the row, so they are written whole: setting them folds the pending ones (by trigger),
/// and the user's part, written after, counts them as the row does.
fn changed_columns(
    was: &Memory,
    values: &[&dyn rusqlite::ToSql],
    vector_kept: bool,
) -> Result<Vec<bool>> {
    let w = Columns::of(was);
    let old = record_values(&w);
    let mut changed = Vec::with_capacity(WRITTEN.len());
    for (name, (now, then)) in WRITTEN.iter().zip(values.iter().zip(old.iter())) {
        let always = matches!(*name, "last_accessed_at" | "access_count");
        changed.push(always || now.to_sql().map_err(sql_err)? != then.to_sql().map_err(sql_err)?);
    }
    changed.push(!vector_kept);
    Ok(changed)
}

/// A record's column values in the order of [`WRITTEN`], without the vector.
fn record_values(c: &Columns) -> [&dyn rusqlite::ToSql; 29] {
    [
        &c.id,
        &c.tenant,
        &c.namespace,
        &c.key,
        &c.content,
        &c.content_is_json,
        &c.category,
        &c.scope,
        &c.user_id,
        &c.agent_id,
        &c.session_id,
        &c.tags,
        &c.metadata,
        &c.importance,
        &c.source,
        &c.confidence,
        &c.content_hash,
        &c.state,
        &c.superseded_by,
        &c.valid_from,
        &c.valid_until,
        &c.created_at,
        &c.updated_at,
        &c.last_accessed_at,
        &c.access_count,
        &c.expires_at,
        &c.embedding_model,
        &c.context,
        &c.version,
    ]
}
