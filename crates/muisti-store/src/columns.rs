//! A record as the columns of a SQL row: the one codec of the SQL backends.

use muisti_core::{
    Category, Error, Memory, MemoryId, MemoryScope, MemoryState, Namespace, Owner, Partition,
    Result, Source, Tenant, Timestamp,
};
use serde_json::Value;

/// The column names of a record, in the order of [`Columns`]' fields.
pub const COLUMN_NAMES: [&str; 29] = [
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
];

/// A record flattened into SQL values: text, integers (times in milliseconds since the Unix
/// epoch) and one float. JSON content is kept as its text with `content_is_json` set; tags
/// and metadata as JSON text.
#[derive(Clone, Debug, PartialEq)]
#[allow(missing_docs)]
pub struct Columns {
    pub id: String,
    pub tenant: String,
    pub namespace: String,
    pub key: String,
    pub content: String,
    pub content_is_json: bool,
    pub category: String,
    pub scope: String,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub session_id: Option<String>,
    pub tags: String,
    pub metadata: String,
    pub importance: f64,
    pub source: String,
    pub confidence: Option<i64>,
    pub content_hash: String,
    pub state: String,
    pub superseded_by: Option<String>,
    pub valid_from: Option<i64>,
    pub valid_until: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_accessed_at: Option<i64>,
    pub access_count: i64,
    pub expires_at: Option<i64>,
    pub embedding_model: Option<String>,
    pub context: Option<String>,
    pub version: i64,
}

/// The stored name of a record state.
pub fn state_str(s: MemoryState) -> &'static str {
    match s {
        MemoryState::Active => "active",
        MemoryState::Archived => "archived",
        MemoryState::Superseded => "superseded",
    }
}

fn ts(v: Option<i64>) -> Option<Timestamp> {
    v.map(Timestamp::from_millis)
}

/// A record id read from an id column: the one reading of an id column of the SQL
/// backends (a value that is no id is [`Error::Corrupted`], naming the backend and the id).
pub fn parse_id(backend: &str, id: &str) -> Result<MemoryId> {
    MemoryId::parse(id).map_err(|e| Error::Corrupted {
        location: format!("{backend} row id {id}"),
        reason: e.to_string(),
    })
}

impl Columns {
    /// The columns of `m`.
    pub fn of(m: &Memory) -> Self {
        let (content, content_is_json) = match &m.content {
            Value::String(s) => (s.clone(), false),
            other => (other.to_string(), true),
        };
        Self {
            id: m.id.to_string(),
            tenant: m.partition.tenant.as_str().to_owned(),
            namespace: m.partition.namespace.as_str().to_owned(),
            key: m.key.as_str().to_owned(),
            content,
            content_is_json,
            category: m.category.as_str().to_owned(),
            scope: m.scope.as_str().to_owned(),
            user_id: m.owner.user_id.clone(),
            agent_id: m.owner.agent_id.clone(),
            session_id: m.owner.session_id.clone(),
            tags: Value::from(m.tags.clone()).to_string(),
            metadata: Value::Object(m.metadata.clone()).to_string(),
            importance: f64::from(m.importance),
            source: m.source.as_str().to_owned(),
            confidence: m.confidence.map(i64::from),
            content_hash: m.content_hash.clone(),
            state: state_str(m.state).to_owned(),
            superseded_by: m.superseded_by.map(|i| i.to_string()),
            valid_from: m.valid_from.map(Timestamp::as_millis),
            valid_until: m.valid_until.map(Timestamp::as_millis),
            created_at: m.created_at.as_millis(),
            updated_at: m.updated_at.as_millis(),
            last_accessed_at: m.last_accessed_at.map(Timestamp::as_millis),
            access_count: i64::try_from(m.access_count).unwrap_or(i64::MAX),
            expires_at: m.expires_at.map(Timestamp::as_millis),
            embedding_model: m.embedding_model.clone(),
            context: m.context.clone(),
            version: i64::try_from(m.version).unwrap_or(i64::MAX),
        }
    }

    /// The record these columns hold; a value no record could have is
    /// [`Error::Corrupted`], naming `backend` and the row's id.
    pub fn into_memory(self, backend: &str) -> Result<Memory> {
        let location = format!("{backend} row id {}", self.id);
        let bad = |what: &str, e: &dyn std::fmt::Display| Error::Corrupted {
            location: location.clone(),
            reason: format!("{what}: {e}"),
        };
        let content = if self.content_is_json {
            serde_json::from_str(&self.content).map_err(|e| bad("content", &e))?
        } else {
            Value::String(self.content)
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
            owner: Owner {
                user_id: self.user_id,
                agent_id: self.agent_id,
                session_id: self.session_id,
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use muisti_core::{Key, Put};

    #[test]
    fn a_record_survives_its_columns() {
        let p = Partition::of(Namespace::new("notes").expect("name"));
        let mut put = Put::new(p, Some(Key::new("k").expect("key")), "hello");
        put.tags = vec!["a".into(), "b".into()];
        put.owner.user_id = Some("alice".into());
        put.context = Some("before".into());
        let m = put.apply(None, Timestamp::from_millis(1_700_000_000_000));
        let back = Columns::of(&m).into_memory("test").expect("decodes");
        assert_eq!(back, m);
        let mut json = m.clone();
        json.content = serde_json::json!({"n": 1});
        let back = Columns::of(&json).into_memory("test").expect("decodes");
        assert_eq!(back, json);
    }

    #[test]
    fn an_impossible_value_is_corruption_naming_the_row() {
        let p = Partition::of(Namespace::new("notes").expect("name"));
        let m = Put::new(p, None, "x").apply(None, Timestamp::from_millis(1));
        let mut c = Columns::of(&m);
        c.state = "gone".into();
        let err = c.into_memory("mysql").expect_err("refused");
        assert!(err.to_string().contains("mysql row id"), "{err}");
    }
}
