//! Records to rows and back: the column codec of the `memories` table.

use muisti_core::{
    Memory, Result,
    quant::quantize_into,
    text::{token_string, vector_to_bytes},
};
use muisti_store::Columns;
use rusqlite::{Row, params};

use crate::{cache::Fresh, packed, sql::INSERT, sql_err};

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

/// Inserts or updates (by rowid) one record, its vector, its full-text entry and, when it
/// has a user, its part of the user's copy (after the record's statement, whose triggers
/// take the old part away).
pub(crate) fn write_row(
    tx: &rusqlite::Transaction<'_>,
    m: &Memory,
    vector: Option<&[f32]>,
    rowid: Option<i64>,
) -> Result<Fresh> {
    let c = Columns::of(m);
    let values = params![
        c.id,
        c.tenant,
        c.namespace,
        c.key,
        c.content,
        c.content_is_json,
        c.category,
        c.scope,
        c.user_id,
        c.agent_id,
        c.session_id,
        c.tags,
        c.metadata,
        c.importance,
        c.source,
        c.confidence,
        c.content_hash,
        c.state,
        c.superseded_by,
        c.valid_from,
        c.valid_until,
        c.created_at,
        c.updated_at,
        c.last_accessed_at,
        c.access_count,
        c.expires_at,
        c.embedding_model,
        c.context,
        c.version,
        vector.map(vector_to_bytes),
    ];
    let rowid = match rowid {
        None => {
            let mut stmt = tx.prepare_cached(INSERT).map_err(sql_err)?;
            stmt.execute(values).map_err(sql_err)?;
            tx.last_insert_rowid()
        }
        Some(rowid) => {
            let mut stmt = tx
                .prepare_cached(
                    "UPDATE memories SET id = ?1, tenant = ?2, namespace = ?3, key = ?4, \
                     content = ?5, content_is_json = ?6, category = ?7, scope = ?8, \
                     user_id = ?9, agent_id = ?10, session_id = ?11, tags = ?12, metadata = ?13, \
                     importance = ?14, source = ?15, confidence = ?16, content_hash = ?17, \
                     state = ?18, superseded_by = ?19, valid_from = ?20, valid_until = ?21, \
                     created_at = ?22, updated_at = ?23, last_accessed_at = ?24, \
                     access_count = ?25, expires_at = ?26, embedding_model = ?27, \
                     context = ?28, version = ?29, vector = ?30 WHERE rowid = ?31",
                )
                .map_err(sql_err)?;
            let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
            all.push(&rowid);
            stmt.execute(all.as_slice()).map_err(sql_err)?;
            rowid
        }
    };
    let terms = token_string(&m.index_text());
    let context_terms = m.context.as_deref().map(token_string);
    tx.prepare_cached(
        "INSERT INTO memory_terms (rowid, tokens, context) VALUES (?1, ?2, ?3) \
         ON CONFLICT (rowid) DO UPDATE SET tokens = ?2, context = ?3",
    )
    .and_then(|mut s| s.execute(params![rowid, terms, context_terms]))
    .map_err(sql_err)?;
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
