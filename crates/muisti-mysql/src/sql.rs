//! SQL text and arguments: the column list, the record codec, postings and filters as
//! conditions.

use muisti_core::{
    Category, Error, Filter, Filterable, Memory, MemoryId, MemoryScope, Owner, Partition, Result,
    Timestamp, text::term_counts,
};
use muisti_store::{COLUMN_NAMES, Columns};
use mysql::{Row, Value, prelude::FromValue};
use serde_json::Map;
use sha2::{Digest, Sha256};

/// `a, b, ...` of the record's columns, each back-quoted (`key` is a reserved word), with
/// `alias.` before each when given.
pub(crate) fn columns(alias: &str) -> String {
    COLUMN_NAMES
        .iter()
        .map(|c| format!("{alias}`{c}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A statement being built: its text and its positional (`?`) arguments.
#[derive(Default)]
pub(crate) struct Sql {
    pub(crate) text: String,
    pub(crate) args: Vec<Value>,
}

/// A text value: stored as bytes (the columns are binary).
pub(crate) fn bytes(s: &str) -> Value {
    Value::Bytes(s.as_bytes().to_vec())
}

fn opt_bytes(s: &Option<String>) -> Value {
    s.as_deref().map_or(Value::NULL, bytes)
}

fn opt_int(v: Option<i64>) -> Value {
    v.map_or(Value::NULL, Value::Int)
}

impl Sql {
    pub(crate) fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            args: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.text.push_str(s);
    }

    /// Appends ` AND <condition>` with one `?`, bound to `v`.
    pub(crate) fn and(&mut self, condition: &str, v: Value) {
        self.text.push_str(" AND ");
        self.text.push_str(condition);
        self.args.push(v);
    }

    /// Appends `(?, ?, ...)` for `values`, padded with copies of the last one to a power of
    /// two: an `IN` list means the same, and a handful of statement shapes stay in the
    /// connection's prepared-statement cache.
    pub(crate) fn list(&mut self, values: impl IntoIterator<Item = Value>) {
        let mut values: Vec<Value> = values.into_iter().collect();
        if let Some(last) = values.last().cloned() {
            values.resize(values.len().next_power_of_two(), last);
        }
        let marks = vec!["?"; values.len()].join(", ");
        self.text.push('(');
        self.text.push_str(&marks);
        self.text.push(')');
        self.args.extend(values);
    }

    /// Appends another statement's text and arguments.
    pub(crate) fn append(&mut self, other: Sql) {
        self.text.push_str(&other.text);
        self.args.extend(other.args);
    }

    /// The condition (what follows `WHERE`) of the live records of `partition` that pass
    /// the part of `filter` SQL decides exactly (see [`Residual`]), tenant first, each
    /// column prefixed by `alias` (`""` or `"m."`).
    pub(crate) fn live_in(alias: &str, partition: &Partition, filter: &Filter, now: i64) -> Self {
        let mut sql = Self::new(format!("{alias}tenant = ?"));
        sql.args.push(bytes(partition.tenant.as_str()));
        sql.and(
            &format!("{alias}namespace = ?"),
            bytes(partition.namespace.as_str()),
        );
        sql.and_live(alias, now);
        sql.filter(alias, filter);
        sql
    }

    /// Appends ` AND` the condition of a live record at `now`.
    pub(crate) fn and_live(&mut self, alias: &str, now: i64) {
        self.text.push_str(&format!(
            " AND ({alias}expires_at IS NULL OR {alias}expires_at > ?)"
        ));
        self.args.push(Value::Int(now));
    }

    /// The filter's conditions that SQL decides exactly. [`Filter::matches`] is the
    /// definition; this destructures it whole so that a new field fails to compile until it
    /// is handled here. Tags and metadata (JSON) are left to [`Residual`], which checks them
    /// with [`Filter::matches`] itself: MySQL's and MariaDB's JSON equality differ from each
    /// other and from JSON's (`1` and `1.0`).
    fn filter(&mut self, a: &str, filter: &Filter) {
        let Filter {
            user_id,
            without_user,
            agent_id,
            session_id,
            category,
            scope,
            tags: _,
            metadata: _,
            created_after,
            created_before,
            content_hash,
        } = filter;
        if *without_user {
            self.text.push_str(&format!(" AND {a}user_id IS NULL"));
        }
        for (column, v) in [
            ("user_id", user_id),
            ("agent_id", agent_id),
            ("session_id", session_id),
            ("content_hash", content_hash),
        ] {
            if let Some(v) = v {
                self.and(&format!("{a}{column} = ?"), bytes(v));
            }
        }
        if let Some(v) = category.as_ref().map(Category::as_str) {
            self.and(&format!("{a}category = ?"), bytes(v));
        }
        if let Some(v) = scope.map(MemoryScope::as_str) {
            self.and(&format!("{a}scope = ?"), bytes(v));
        }
        if let Some(t) = created_after {
            self.and(&format!("{a}created_at >= ?"), Value::Int(t.as_millis()));
        }
        if let Some(t) = created_before {
            self.and(&format!("{a}created_at < ?"), Value::Int(t.as_millis()));
        }
    }
}

/// The part of a filter SQL leaves to the engine: tags and metadata, checked on each row's
/// `tags` and `metadata` columns by [`Filter::matches`].
pub(crate) struct Residual(Option<Filter>);

/// A row's tags and metadata, as [`Filter::matches`] reads them (the other fields are
/// decided in SQL).
struct JsonFields {
    owner: Owner,
    category: Category,
    tags: Vec<String>,
    metadata: Map<String, serde_json::Value>,
}

impl Filterable for JsonFields {
    fn owner(&self) -> &Owner {
        &self.owner
    }
    fn category(&self) -> &Category {
        &self.category
    }
    fn scope(&self) -> MemoryScope {
        MemoryScope::default()
    }
    fn tags(&self) -> &[String] {
        &self.tags
    }
    fn metadata(&self) -> &Map<String, serde_json::Value> {
        &self.metadata
    }
    fn created_at(&self) -> Timestamp {
        Timestamp::from_millis(0)
    }
    fn content_hash(&self) -> &str {
        ""
    }
}

impl Residual {
    pub(crate) fn of(filter: &Filter) -> Self {
        Self(
            (!filter.tags.is_empty() || !filter.metadata.is_empty()).then(|| Filter {
                tags: filter.tags.clone(),
                metadata: filter.metadata.clone(),
                ..Filter::default()
            }),
        )
    }

    /// Whether rows must be checked.
    pub(crate) fn any(&self) -> bool {
        self.0.is_some()
    }

    /// The columns a check reads (`, m.tags, m.metadata`), or nothing.
    pub(crate) fn columns(&self, alias: &str) -> String {
        if self.any() {
            format!(", {alias}tags, {alias}metadata")
        } else {
            String::new()
        }
    }

    /// Whether the row passes, its tags and metadata at columns `at` and `at + 1`.
    pub(crate) fn keeps(&self, row: &mut Row, at: usize) -> Result<bool> {
        let Some(filter) = &self.0 else {
            return Ok(true);
        };
        let bad = |what: &str, e: &dyn std::fmt::Display| Error::Corrupted {
            location: "mysql row".into(),
            reason: format!("{what}: {e}"),
        };
        let tags: String = take(row, at)?;
        let metadata: String = take(row, at + 1)?;
        let fields = JsonFields {
            owner: Owner::default(),
            category: Category::default(),
            tags: serde_json::from_str(&tags).map_err(|e| bad("tags", &e))?,
            metadata: serde_json::from_str(&metadata).map_err(|e| bad("metadata", &e))?,
        };
        Ok(filter.matches(&fields))
    }

    /// Whether a decoded record passes.
    pub(crate) fn keeps_memory(&self, m: &Memory) -> bool {
        self.0.as_ref().is_none_or(|f| f.matches(m))
    }
}

/// Column `i` of a row, taken out of it; a value of another type is corruption.
pub(crate) fn take<T: FromValue>(row: &mut Row, i: usize) -> Result<T> {
    match row.take_opt::<T, usize>(i) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(Error::Corrupted {
            location: format!("mysql column {i}"),
            reason: e.to_string(),
        }),
        None => Err(Error::Corrupted {
            location: format!("mysql column {i}"),
            reason: "missing".into(),
        }),
    }
}

/// A record id read from an id column.
pub(crate) fn parse_id(id: &str) -> Result<MemoryId> {
    muisti_store::parse_id("mysql", id)
}

/// Decodes the record's [`columns`] of a row, starting at column 0.
pub(crate) fn decode(row: &mut Row) -> Result<Memory> {
    Columns {
        id: take(row, 0)?,
        tenant: take(row, 1)?,
        namespace: take(row, 2)?,
        key: take(row, 3)?,
        content: take(row, 4)?,
        content_is_json: take(row, 5)?,
        category: take(row, 6)?,
        scope: take(row, 7)?,
        user_id: take(row, 8)?,
        agent_id: take(row, 9)?,
        session_id: take(row, 10)?,
        tags: take(row, 11)?,
        metadata: take(row, 12)?,
        importance: take(row, 13)?,
        source: take(row, 14)?,
        confidence: take(row, 15)?,
        content_hash: take(row, 16)?,
        state: take(row, 17)?,
        superseded_by: take(row, 18)?,
        valid_from: take(row, 19)?,
        valid_until: take(row, 20)?,
        created_at: take(row, 21)?,
        updated_at: take(row, 22)?,
        last_accessed_at: take(row, 23)?,
        access_count: take(row, 24)?,
        expires_at: take(row, 25)?,
        embedding_model: take(row, 26)?,
        context: take(row, 27)?,
        version: take(row, 28)?,
    }
    .into_memory("mysql")
}

/// The values of a record's [`columns`], in their order.
pub(crate) fn values(m: &Memory) -> Vec<Value> {
    let c = Columns::of(m);
    vec![
        bytes(&c.id),
        bytes(&c.tenant),
        bytes(&c.namespace),
        bytes(&c.key),
        Value::Bytes(c.content.into_bytes()),
        Value::Int(i64::from(c.content_is_json)),
        bytes(&c.category),
        bytes(&c.scope),
        opt_bytes(&c.user_id),
        opt_bytes(&c.agent_id),
        opt_bytes(&c.session_id),
        bytes(&c.tags),
        bytes(&c.metadata),
        Value::Double(c.importance),
        bytes(&c.source),
        opt_int(c.confidence),
        bytes(&c.content_hash),
        bytes(&c.state),
        opt_bytes(&c.superseded_by),
        opt_int(c.valid_from),
        opt_int(c.valid_until),
        Value::Int(c.created_at),
        Value::Int(c.updated_at),
        opt_int(c.last_accessed_at),
        Value::Int(c.access_count),
        opt_int(c.expires_at),
        opt_bytes(&c.embedding_model),
        opt_bytes(&c.context),
        Value::Int(c.version),
    ]
}

/// A vector as stored: little-endian f32s, and its dimension.
pub(crate) fn vector_values(v: Option<&[f32]>) -> [Value; 2] {
    match v {
        Some(v) => [
            Value::Bytes(muisti_core::text::vector_to_bytes(v)),
            Value::Int(v.len() as i64),
        ],
        None => [Value::NULL, Value::NULL],
    }
}

/// The key a term is stored under in `postings.term`: the term itself up to 64 bytes; a
/// longer one as its first 40 bytes and 16 bytes of its SHA-256 in hex (72 bytes), so that
/// any term fits the index and distinct terms keep distinct keys.
pub(crate) fn term_key(term: &str) -> Vec<u8> {
    let b = term.as_bytes();
    if b.len() <= 64 {
        return b.to_vec();
    }
    let digest = Sha256::digest(b);
    let mut key = b[..40].to_vec();
    for byte in &digest[..16] {
        key.extend_from_slice(format!("{byte:02x}").as_bytes());
    }
    key
}

/// A record's postings: each distinct term's key with its counts in the indexed text and in
/// the context; and the document's length in terms (both fields).
pub(crate) fn postings(m: &Memory) -> (Vec<(Vec<u8>, u32, u32)>, u32) {
    let (counts, len) = term_counts(&m.index_text(), m.context.as_deref());
    let mut out: Vec<(Vec<u8>, u32, u32)> = counts
        .into_iter()
        .map(|(t, (tf, ctx))| (term_key(&t), tf, ctx))
        .collect();
    out.sort_unstable();
    (out, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_terms_get_short_distinct_keys() {
        assert_eq!(term_key("lisbon"), b"lisbon".to_vec());
        let a = "x".repeat(100);
        let b = format!("{}y", "x".repeat(99));
        assert_eq!(term_key(&a).len(), 72);
        assert_ne!(term_key(&a), term_key(&b));
        assert_eq!(term_key(&a), term_key(&a));
    }

    #[test]
    fn lists_are_padded_to_a_power_of_two() {
        let mut sql = Sql::new("x IN ");
        sql.list((0..5).map(Value::Int));
        assert_eq!(sql.text, "x IN (?, ?, ?, ?, ?, ?, ?, ?)");
        assert_eq!(sql.args.last(), Some(&Value::Int(4)));
    }

    #[test]
    fn postings_count_content_and_context_apart() {
        let p = Partition::of(muisti_core::Namespace::default_ns());
        let mut put = muisti_core::Put::new(p, None, "Lisbon lisbon port");
        put.context = Some("port wine".into());
        let m = put.apply(None, Timestamp::from_millis(1));
        let (postings, len) = postings(&m);
        assert_eq!(len, 5);
        let find = |t: &str| {
            postings
                .iter()
                .find(|p| p.0 == t.as_bytes())
                .map(|p| (p.1, p.2))
        };
        assert_eq!(find("lisbon"), Some((2, 0)));
        assert_eq!(find("port"), Some((1, 1)));
        assert_eq!(find("wine"), Some((0, 1)));
    }
}
