//! Records to rows and back: the column codec of the `memories` table.

use muisti_core::{
    Category, Error, Memory, MemoryId, MemoryScope, MemoryState, Namespace, Owner, Partition,
    Result, Source, Tenant, Timestamp,
    text::{token_string, vector_to_bytes},
};
use rusqlite::{Row, params};
use serde_json::Value;

use crate::{cache::Fresh, sql::INSERT, sql_err};

fn ts(v: Option<i64>) -> Option<Timestamp> {
    v.map(Timestamp::from_millis)
}

/// Decodes a row selected with [`COLUMNS`].
pub(crate) fn decode(row: &Row<'_>) -> rusqlite::Result<Result<Memory>> {
    decode_from(row, 0)
}

/// Decodes the [`COLUMNS`] of a row that start at column `base`.
pub(crate) fn decode_from(row: &Row<'_>, base: usize) -> rusqlite::Result<Result<Memory>> {
    let id: String = row.get(base)?;
    let text: String = row.get(base + 4)?;
    let is_json: bool = row.get(base + 5)?;
    let tags: String = row.get(base + 11)?;
    let metadata: String = row.get(base + 12)?;
    let raw = RawRow {
        id,
        tenant: row.get(base + 1)?,
        namespace: row.get(base + 2)?,
        key: row.get(base + 3)?,
        text,
        is_json,
        category: row.get(base + 6)?,
        scope: row.get(base + 7)?,
        owner: Owner {
            user_id: row.get(base + 8)?,
            agent_id: row.get(base + 9)?,
            session_id: row.get(base + 10)?,
        },
        tags,
        metadata,
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
    Ok(raw.into_memory())
}

struct RawRow {
    id: String,
    tenant: String,
    namespace: String,
    key: String,
    text: String,
    is_json: bool,
    category: String,
    scope: String,
    owner: Owner,
    tags: String,
    metadata: String,
    importance: f64,
    source: String,
    confidence: Option<i64>,
    content_hash: String,
    state: String,
    superseded_by: Option<String>,
    valid_from: Option<i64>,
    valid_until: Option<i64>,
    created_at: i64,
    updated_at: i64,
    last_accessed_at: Option<i64>,
    access_count: i64,
    expires_at: Option<i64>,
    embedding_model: Option<String>,
    context: Option<String>,
    version: i64,
}

impl RawRow {
    fn into_memory(self) -> Result<Memory> {
        let location = format!("sqlite row id {}", self.id);
        let bad = |what: &str, e: &dyn std::fmt::Display| Error::Corrupted {
            location: location.clone(),
            reason: format!("{what}: {e}"),
        };
        let content = if self.is_json {
            serde_json::from_str(&self.text).map_err(|e| bad("content", &e))?
        } else {
            Value::String(self.text)
        };
        let state = match self.state.as_str() {
            "active" => MemoryState::Active,
            "archived" => MemoryState::Archived,
            "superseded" => MemoryState::Superseded,
            other => return Err(bad("state", &other)),
        };
        Ok(Memory {
            id: MemoryId::parse(&self.id).map_err(|e| bad("id", &e))?,
            partition: Partition::new(
                Tenant::new(self.tenant).map_err(|e| bad("tenant", &e))?,
                Namespace::new(self.namespace).map_err(|e| bad("namespace", &e))?,
            ),
            key: muisti_core::Key::new(self.key).map_err(|e| bad("key", &e))?,
            content,
            context: self.context,
            category: Category::parse(&self.category).map_err(|e| bad("category", &e))?,
            scope: MemoryScope::parse(&self.scope).map_err(|e| bad("scope", &e))?,
            owner: self.owner,
            tags: if self.tags == "[]" {
                Vec::new()
            } else {
                serde_json::from_str(&self.tags).map_err(|e| bad("tags", &e))?
            },
            metadata: if self.metadata == "{}" {
                serde_json::Map::new()
            } else {
                serde_json::from_str(&self.metadata).map_err(|e| bad("metadata", &e))?
            },
            importance: self.importance as f32,
            source: Source::parse(&self.source).map_err(|e| bad("source", &e))?,
            confidence: self
                .confidence
                .map(u8::try_from)
                .transpose()
                .map_err(|e| bad("confidence", &e))?,
            content_hash: self.content_hash,
            state,
            superseded_by: self
                .superseded_by
                .map(|s| MemoryId::parse(&s))
                .transpose()
                .map_err(|e| bad("superseded_by", &e))?,
            valid_from: ts(self.valid_from),
            valid_until: ts(self.valid_until),
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            last_accessed_at: ts(self.last_accessed_at),
            access_count: u64::try_from(self.access_count).unwrap_or(0),
            expires_at: ts(self.expires_at),
            embedding_model: self.embedding_model,
            version: u64::try_from(self.version).unwrap_or(1),
        })
    }
}

fn state_str(s: MemoryState) -> &'static str {
    match s {
        MemoryState::Active => "active",
        MemoryState::Archived => "archived",
        MemoryState::Superseded => "superseded",
    }
}

/// Inserts or updates (by rowid) one record, its vector and its full-text entry.
pub(crate) fn write_row(
    tx: &rusqlite::Transaction<'_>,
    m: &Memory,
    vector: Option<&[f32]>,
    rowid: Option<i64>,
) -> Result<Fresh> {
    let (text, is_json) = match &m.content {
        Value::String(s) => (s.clone(), false),
        other => (other.to_string(), true),
    };
    let tags = serde_json::to_string(&m.tags).map_err(|e| Error::backend("sqlite", e))?;
    let metadata = serde_json::to_string(&m.metadata).map_err(|e| Error::backend("sqlite", e))?;
    let values = params![
        m.id.to_string(),
        m.partition.tenant.as_str(),
        m.partition.namespace.as_str(),
        m.key.as_str(),
        text,
        is_json,
        m.category.as_str(),
        m.scope.as_str(),
        m.owner.user_id,
        m.owner.agent_id,
        m.owner.session_id,
        tags,
        metadata,
        f64::from(m.importance),
        m.source.as_str(),
        m.confidence,
        m.content_hash,
        state_str(m.state),
        m.superseded_by.map(|i| i.to_string()),
        m.valid_from.map(Timestamp::as_millis),
        m.valid_until.map(Timestamp::as_millis),
        m.created_at.as_millis(),
        m.updated_at.as_millis(),
        m.last_accessed_at.map(Timestamp::as_millis),
        i64::try_from(m.access_count).unwrap_or(i64::MAX),
        m.expires_at.map(Timestamp::as_millis),
        m.embedding_model,
        m.context,
        i64::try_from(m.version).unwrap_or(i64::MAX),
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
    Ok(Fresh::of(m, vector, terms, context_terms))
}
