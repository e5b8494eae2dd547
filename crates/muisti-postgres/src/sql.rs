//! SQL text and arguments: the column list, the record codec and filters as conditions.

use muisti_core::{
    Category, Error, Filter, Memory, MemoryId, MemoryScope, MemoryState, Namespace, Owner,
    Partition, Result, Source, Tenant, Timestamp, text::tokenize,
};
use std::sync::OnceLock;

use postgres::types::ToSql;
use serde_json::Value;

/// The columns of a record, in the order [`decode`] reads them.
pub(crate) const COLUMNS: &str = "id, tenant, namespace, key, content, content_is_json, \
     category, scope, user_id, agent_id, session_id, tags, metadata, importance, source, \
     confidence, content_hash, state, superseded_by, valid_from, valid_until, created_at, \
     updated_at, last_accessed_at, access_count, expires_at, embedding_model, context, version";

/// The condition of a live record at `$n` (now, in milliseconds).
pub(crate) fn live(n: usize) -> String {
    format!("(expires_at IS NULL OR expires_at > ${n})")
}

/// A statement being built: its text and its arguments, numbered in order.
#[derive(Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    args: Vec<Box<dyn ToSql + Sync + Send>>,
}

impl Sql {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            args: Vec::new(),
        }
    }

    /// Adds an argument; its placeholder (`$n`).
    pub(crate) fn arg(&mut self, v: impl ToSql + Sync + Send + 'static) -> String {
        self.args.push(Box::new(v));
        format!("${}", self.args.len())
    }

    /// Appends ` AND <condition>` where `{}` is the argument's placeholder.
    pub(crate) fn and(&mut self, condition: &str, v: impl ToSql + Sync + Send + 'static) {
        let p = self.arg(v);
        self.text.push_str(" AND ");
        self.text.push_str(&condition.replace("{}", &p));
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Appends ` AND` the condition of a live record ([`live`]) at `now`.
    pub(crate) fn and_live(&mut self, now: i64) {
        self.arg(now);
        let n = self.args.len();
        self.push(&format!(" AND {}", live(n)));
    }

    pub(crate) fn params(&self) -> Vec<&(dyn ToSql + Sync)> {
        self.args
            .iter()
            .map(|a| a.as_ref() as &(dyn ToSql + Sync))
            .collect()
    }

    /// The condition (what follows `WHERE`) of the live records of `partition` that pass
    /// `filter`, tenant first.
    pub(crate) fn live_in(partition: &Partition, filter: &Filter, now: i64) -> Self {
        let mut sql = Self::new("");
        let t = sql.arg(partition.tenant.as_str().to_owned());
        sql.push(&format!("tenant = {t}"));
        sql.and("namespace = {}", partition.namespace.as_str().to_owned());
        sql.and_live(now);
        sql.filter(filter);
        sql
    }

    /// `SELECT <what> FROM memories WHERE` the records [`Sql::live_in`] selects.
    pub(crate) fn partition(what: &str, partition: &Partition, filter: &Filter, now: i64) -> Self {
        let mut sql = Self::live_in(partition, filter, now);
        sql.text = format!("SELECT {what} FROM memories WHERE {}", sql.text);
        sql
    }

    /// The filter's conditions. [`Filter::matches`] is the definition; this destructures it
    /// whole so that a new field fails to compile until it is translated here.
    pub(crate) fn filter(&mut self, filter: &Filter) {
        let Filter {
            user_id,
            agent_id,
            session_id,
            category,
            scope,
            tags,
            metadata,
            created_after,
            created_before,
            content_hash,
        } = filter;
        let text = |v: &Option<String>| v.clone();
        if let Some(v) = text(user_id) {
            self.and("user_id = {}", v);
        }
        if let Some(v) = text(agent_id) {
            self.and("agent_id = {}", v);
        }
        if let Some(v) = text(session_id) {
            self.and("session_id = {}", v);
        }
        if let Some(v) = category.as_ref().map(Category::as_str) {
            self.and("category = {}", v.to_owned());
        }
        if let Some(v) = scope.map(MemoryScope::as_str) {
            self.and("scope = {}", v.to_owned());
        }
        if !tags.is_empty() {
            self.and("tags @> {}", Value::from(tags.clone()));
        }
        for (k, v) in metadata {
            let key = self.arg(k.clone());
            self.and(&format!("metadata -> {key} = {{}}"), v.clone());
        }
        if let Some(t) = created_after {
            self.and("created_at >= {}", t.as_millis());
        }
        if let Some(t) = created_before {
            self.and("created_at < {}", t.as_millis());
        }
        if let Some(v) = text(content_hash) {
            self.and("content_hash = {}", v);
        }
    }
}

fn ts(v: Option<i64>) -> Option<Timestamp> {
    v.map(Timestamp::from_millis)
}

pub(crate) fn state_str(s: MemoryState) -> &'static str {
    match s {
        MemoryState::Active => "active",
        MemoryState::Archived => "archived",
        MemoryState::Superseded => "superseded",
    }
}

/// Decodes a row selected with [`COLUMNS`] starting at column 0.
pub(crate) fn decode(row: &postgres::Row) -> Result<Memory> {
    let id: String = get(row, 0)?;
    let bad = |what: &str, e: &dyn std::fmt::Display| Error::Corrupted {
        location: format!("postgres row id {id}"),
        reason: format!("{what}: {e}"),
    };
    let text: String = get(row, 4)?;
    let is_json: bool = get(row, 5)?;
    let content = if is_json {
        serde_json::from_str(&text).map_err(|e| bad("content", &e))?
    } else {
        Value::String(text)
    };
    let state: String = get(row, 17)?;
    let state = match state.as_str() {
        "active" => MemoryState::Active,
        "archived" => MemoryState::Archived,
        "superseded" => MemoryState::Superseded,
        other => return Err(bad("state", &other)),
    };
    let tags: Value = get(row, 11)?;
    let metadata: Value = get(row, 12)?;
    let superseded_by: Option<String> = get(row, 18)?;
    let confidence: Option<i16> = get(row, 15)?;
    let importance: f64 = get(row, 13)?;
    let access_count: i64 = get(row, 24)?;
    let version: i64 = get(row, 28)?;
    Ok(Memory {
        id: MemoryId::parse(&id).map_err(|e| bad("id", &e))?,
        partition: Partition::new(
            Tenant::new(get::<String>(row, 1)?).map_err(|e| bad("tenant", &e))?,
            Namespace::new(get::<String>(row, 2)?).map_err(|e| bad("namespace", &e))?,
        ),
        key: muisti_core::Key::new(get::<String>(row, 3)?).map_err(|e| bad("key", &e))?,
        content,
        context: get(row, 27)?,
        category: Category::parse(&get::<String>(row, 6)?).map_err(|e| bad("category", &e))?,
        scope: MemoryScope::parse(&get::<String>(row, 7)?).map_err(|e| bad("scope", &e))?,
        owner: Owner {
            user_id: get(row, 8)?,
            agent_id: get(row, 9)?,
            session_id: get(row, 10)?,
        },
        tags: serde_json::from_value(tags).map_err(|e| bad("tags", &e))?,
        metadata: match metadata {
            Value::Object(m) => m,
            other => return Err(bad("metadata", &other)),
        },
        importance: importance as f32,
        source: Source::parse(&get::<String>(row, 14)?).map_err(|e| bad("source", &e))?,
        confidence: confidence
            .map(u8::try_from)
            .transpose()
            .map_err(|e| bad("confidence", &e))?,
        content_hash: get(row, 16)?,
        state,
        superseded_by: superseded_by
            .map(|s| MemoryId::parse(&s))
            .transpose()
            .map_err(|e| bad("superseded_by", &e))?,
        valid_from: ts(get(row, 19)?),
        valid_until: ts(get(row, 20)?),
        created_at: Timestamp::from_millis(get(row, 21)?),
        updated_at: Timestamp::from_millis(get(row, 22)?),
        last_accessed_at: ts(get(row, 23)?),
        access_count: u64::try_from(access_count).unwrap_or(0),
        expires_at: ts(get(row, 25)?),
        embedding_model: get(row, 26)?,
        version: u64::try_from(version).unwrap_or(1),
    })
}

/// A record id read from text: the one reading of an id column.
pub(crate) fn parse_id(id: &str) -> Result<MemoryId> {
    MemoryId::parse(id).map_err(|e| Error::Corrupted {
        location: format!("postgres row id {id}"),
        reason: e.to_string(),
    })
}

/// The id in column `i`.
pub(crate) fn get_id(row: &postgres::Row, i: usize) -> Result<MemoryId> {
    parse_id(&get::<String>(row, i)?)
}

/// One column of a row, its type error as corruption.
pub(crate) fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a postgres::Row,
    i: usize,
) -> Result<T> {
    row.try_get(i).map_err(|e| Error::Corrupted {
        location: format!("postgres column {i}"),
        reason: e.to_string(),
    })
}

/// The arguments of a record's row, in [`COLUMNS`] order, then its terms, context terms,
/// length, vector and dimensions.
pub(crate) fn row_args(
    m: &Memory,
    vector: Option<&[f32]>,
) -> Result<Vec<Box<dyn ToSql + Sync + Send>>> {
    let (text, is_json) = match &m.content {
        Value::String(s) => (s.clone(), false),
        other => (other.to_string(), true),
    };
    let terms: Vec<String> = tokenize(&m.index_text()).collect();
    let context_terms: Vec<String> = m
        .context
        .as_deref()
        .map_or_else(Vec::new, |c| tokenize(c).collect());
    let doc_len = i32::try_from(terms.len() + context_terms.len())
        .map_err(|e| Error::backend("postgres", e))?;
    let args: Vec<Box<dyn ToSql + Sync + Send>> = vec![
        Box::new(m.id.to_string()),
        Box::new(m.partition.tenant.as_str().to_owned()),
        Box::new(m.partition.namespace.as_str().to_owned()),
        Box::new(m.key.as_str().to_owned()),
        Box::new(text),
        Box::new(is_json),
        Box::new(m.category.as_str().to_owned()),
        Box::new(m.scope.as_str().to_owned()),
        Box::new(m.owner.user_id.clone()),
        Box::new(m.owner.agent_id.clone()),
        Box::new(m.owner.session_id.clone()),
        Box::new(Value::from(m.tags.clone())),
        Box::new(Value::Object(m.metadata.clone())),
        Box::new(f64::from(m.importance)),
        Box::new(m.source.as_str().to_owned()),
        Box::new(m.confidence.map(i16::from)),
        Box::new(m.content_hash.clone()),
        Box::new(state_str(m.state)),
        Box::new(m.superseded_by.map(|i| i.to_string())),
        Box::new(m.valid_from.map(Timestamp::as_millis)),
        Box::new(m.valid_until.map(Timestamp::as_millis)),
        Box::new(m.created_at.as_millis()),
        Box::new(m.updated_at.as_millis()),
        Box::new(m.last_accessed_at.map(Timestamp::as_millis)),
        Box::new(i64::try_from(m.access_count).unwrap_or(i64::MAX)),
        Box::new(m.expires_at.map(Timestamp::as_millis)),
        Box::new(m.embedding_model.clone()),
        Box::new(m.context.clone()),
        Box::new(i64::try_from(m.version).unwrap_or(i64::MAX)),
        Box::new(terms),
        Box::new(context_terms),
        Box::new(doc_len),
        Box::new(vector.map(|v| pgvector::Vector::from(v.to_vec()))),
        Box::new(vector.map(|v| v.len() as i32)),
    ];
    Ok(args)
}

/// The columns [`row_args`] gives values for, in its order: [`COLUMNS`], then the terms,
/// context terms, length, vector and dimensions.
const WRITE_COLUMNS: [&str; 34] = [
    "id",
    "tenant",
    "namespace",
    "key",
    "content",
    "content_is_json",
    "category",
    "scope",
    "user_id",
    "agent_id",
    "session_id",
    "tags",
    "metadata",
    "importance",
    "source",
    "confidence",
    "content_hash",
    "state",
    "superseded_by",
    "valid_from",
    "valid_until",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "expires_at",
    "embedding_model",
    "context",
    "version",
    "terms",
    "context_terms",
    "doc_len",
    "embedding",
    "dims",
];

/// The last two of [`WRITE_COLUMNS`] are the vector's.
pub(crate) const VECTOR_COLUMNS: usize = 2;

/// The INSERT of a whole row ([`row_args`]).
pub(crate) fn insert_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let values: Vec<String> = (1..=WRITE_COLUMNS.len()).map(|i| format!("${i}")).collect();
        format!(
            "INSERT INTO memories ({}) VALUES ({})",
            WRITE_COLUMNS.join(", "),
            values.join(", ")
        )
    })
}

/// The UPDATE of a row whose id was the argument after the columns' (in the tenant `$2`):
/// every column of [`row_args`], or all but the vector's ([`VECTOR_COLUMNS`]) when it is
/// kept.
pub(crate) fn update_sql(with_vector: bool) -> &'static str {
    static WITH: OnceLock<String> = OnceLock::new();
    static WITHOUT: OnceLock<String> = OnceLock::new();
    let build = |n: usize| {
        let set: Vec<String> = WRITE_COLUMNS[..n]
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ${}", i + 1))
            .collect();
        format!(
            "UPDATE memories SET {} WHERE tenant = $2 AND id = ${}",
            set.join(", "),
            n + 1
        )
    };
    if with_vector {
        WITH.get_or_init(|| build(WRITE_COLUMNS.len()))
    } else {
        WITHOUT.get_or_init(|| build(WRITE_COLUMNS.len() - VECTOR_COLUMNS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is read and what is written name the record's columns alike.
    #[test]
    fn read_and_write_columns_agree() {
        assert_eq!(COLUMNS, WRITE_COLUMNS[..29].join(", "));
        assert_eq!(
            WRITE_COLUMNS[WRITE_COLUMNS.len() - VECTOR_COLUMNS..],
            ["embedding", "dims"]
        );
    }
}
