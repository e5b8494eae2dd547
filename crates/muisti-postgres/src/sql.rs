//! SQL text and arguments: the column list, the record codec and filters as conditions.

use muisti_core::{
    Category, Error, Filter, Memory, MemoryId, MemoryScope, Partition, Result, text::tokenize,
};
use muisti_store::{COLUMN_NAMES, Columns};
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
            without_user,
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
        if *without_user {
            self.push(" AND user_id IS NULL");
        }
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
        // Each tag as `same_tag` compares it: the stored tag without surrounding spaces and
        // its ASCII letters folded (`translate`, not `lower`, which folds by the locale).
        for tag in tags {
            self.and(
                "EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags) AS t(v) WHERE \
                 translate(btrim(t.v), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', \
                 'abcdefghijklmnopqrstuvwxyz') = {})",
                muisti_core::tag_key(tag),
            );
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

/// Decodes a row selected with [`COLUMNS`] starting at column 0.
pub(crate) fn decode(row: &postgres::Row) -> Result<Memory> {
    let json = |i: usize| -> Result<String> { Ok(get::<Value>(row, i)?.to_string()) };
    Columns {
        id: get(row, 0)?,
        tenant: get(row, 1)?,
        namespace: get(row, 2)?,
        key: get(row, 3)?,
        content: get(row, 4)?,
        content_is_json: get(row, 5)?,
        category: get(row, 6)?,
        scope: get(row, 7)?,
        user_id: get(row, 8)?,
        agent_id: get(row, 9)?,
        session_id: get(row, 10)?,
        tags: json(11)?,
        metadata: json(12)?,
        importance: get(row, 13)?,
        source: get(row, 14)?,
        confidence: get::<Option<i16>>(row, 15)?.map(i64::from),
        content_hash: get(row, 16)?,
        state: get(row, 17)?,
        superseded_by: get(row, 18)?,
        valid_from: get(row, 19)?,
        valid_until: get(row, 20)?,
        created_at: get(row, 21)?,
        updated_at: get(row, 22)?,
        last_accessed_at: get(row, 23)?,
        access_count: get(row, 24)?,
        expires_at: get(row, 25)?,
        embedding_model: get(row, 26)?,
        context: get(row, 27)?,
        version: get(row, 28)?,
    }
    .into_memory("postgres")
}

/// A record id read from an id column.
pub(crate) fn parse_id(id: &str) -> Result<MemoryId> {
    muisti_store::parse_id("postgres", id)
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
    let terms: Vec<String> = tokenize(&m.index_text()).collect();
    let context_terms: Vec<String> = m
        .context
        .as_deref()
        .map_or_else(Vec::new, |c| tokenize(c).collect());
    let doc_len = i32::try_from(terms.len() + context_terms.len())
        .map_err(|e| Error::backend("postgres", e))?;
    let c = Columns::of(m);
    let json = |s: &str| -> Result<Value> {
        serde_json::from_str(s).map_err(|e| Error::backend("postgres", e))
    };
    let args: Vec<Box<dyn ToSql + Sync + Send>> = vec![
        Box::new(c.id),
        Box::new(c.tenant),
        Box::new(c.namespace),
        Box::new(c.key),
        Box::new(c.content),
        Box::new(c.content_is_json),
        Box::new(c.category),
        Box::new(c.scope),
        Box::new(c.user_id),
        Box::new(c.agent_id),
        Box::new(c.session_id),
        Box::new(json(&c.tags)?),
        Box::new(json(&c.metadata)?),
        Box::new(c.importance),
        Box::new(c.source),
        Box::new(m.confidence.map(i16::from)),
        Box::new(c.content_hash),
        Box::new(c.state),
        Box::new(c.superseded_by),
        Box::new(c.valid_from),
        Box::new(c.valid_until),
        Box::new(c.created_at),
        Box::new(c.updated_at),
        Box::new(c.last_accessed_at),
        Box::new(c.access_count),
        Box::new(c.expires_at),
        Box::new(c.embedding_model),
        Box::new(c.context),
        Box::new(c.version),
        Box::new(terms),
        Box::new(context_terms),
        Box::new(doc_len),
        Box::new(vector.map(|v| pgvector::Vector::from(v.to_vec()))),
        Box::new(vector.map(|v| v.len() as i32)),
    ];
    Ok(args)
}

/// The columns [`row_args`] gives values for, in its order: the record's
/// ([`COLUMN_NAMES`]), then the terms, context terms, length, vector and dimensions.
fn write_columns() -> impl Iterator<Item = &'static str> {
    COLUMN_NAMES
        .into_iter()
        .chain(["terms", "context_terms", "doc_len", "embedding", "dims"])
}

/// The last two of [`write_columns`] are the vector's.
pub(crate) const VECTOR_COLUMNS: usize = 2;

/// The INSERT of a whole row ([`row_args`]).
pub(crate) fn insert_sql() -> &'static str {
    static SQL: OnceLock<String> = OnceLock::new();
    SQL.get_or_init(|| {
        let names: Vec<&str> = write_columns().collect();
        let values: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
        format!(
            "INSERT INTO memories ({}) VALUES ({})",
            names.join(", "),
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
        let set: Vec<String> = write_columns()
            .take(n)
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
        WITH.get_or_init(|| build(write_columns().count()))
    } else {
        WITHOUT.get_or_init(|| build(write_columns().count() - VECTOR_COLUMNS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is read and what is written name the record's columns alike.
    #[test]
    fn read_and_write_columns_agree() {
        assert_eq!(COLUMNS, COLUMN_NAMES.join(", "));
        let all: Vec<&str> = write_columns().collect();
        assert_eq!(all[all.len() - VECTOR_COLUMNS..], ["embedding", "dims"]);
    }
}
