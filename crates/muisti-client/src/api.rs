//! The wire types of the HTTP API: what `muisti serve` accepts and returns under `/v1`.
//!
//! These are the contract; they are plain data (strings, numbers, JSON values) so a client
//! needs nothing of the engine. Timestamps are RFC 3339 strings, ids are ULIDs.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, de::DeserializeOwned, de::Error as _};
use serde_json::{Map, Value};

/// A struct read only from a JSON object: serde would also fill one from an array, by
/// position, which no client means.
fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(v: Value) -> Result<T, D::Error> {
    if !v.is_object() {
        return Err(D::Error::custom("expected a JSON object"));
    }
    T::deserialize(v).map_err(D::Error::custom)
}

/// [`object`], or nothing for `null`.
fn optional_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        v => object::<D, T>(v).map(Some),
    }
}

/// A list of [`object`]s.
fn objects<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    Vec::<Value>::deserialize(d)?
        .into_iter()
        .map(object::<D, T>)
        .collect()
}

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

/// A stored memory or key-value entry, as the API returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Memory {
    /// Unique id (ULID).
    pub id: String,
    /// The namespace it lives in.
    pub namespace: String,
    /// Unique within the namespace; the id unless one was given.
    pub key: String,
    /// The text of a memory, or any JSON value for a key-value entry.
    pub content: Value,
    /// Situating text, indexed at a lower weight than the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// `core`, `daily`, `conversation` or a custom name.
    pub category: String,
    /// `scratch`, `short_term`, `long_term`, `episodic` or `declarative`.
    pub scope: String,
    /// A declarative entry's type (`fact`, `preference` or `rule`; its category).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The end user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The session or conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Free labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Any JSON object.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metadata: Map<String, Value>,
    /// 0.0 to 1.0.
    pub importance: f32,
    /// `user_stated`, `agent_learned`, `import` or a custom name.
    pub source: String,
    /// 0 to 100 for learned facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// `active`, `archived` or `superseded`.
    pub state: String,
    /// When the fact became true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// When it stopped being true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    /// First written.
    pub created_at: String,
    /// Last written.
    pub updated_at: String,
    /// Last read or recalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed_at: Option<String>,
    /// How often it was read or recalled.
    #[serde(default)]
    pub access_count: u64,
    /// When it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The memory that replaced this one (state `superseded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Write counter: 1 when created, one more on each change. Pass it as
    /// `expected_version` (or `If-Match`) to update only what you read.
    #[serde(default)]
    pub version: u64,
}

/// A memory to store (`POST /v1/memories`). Only `content` is required.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMemory {
    /// The text to remember (or any JSON value).
    pub content: Value,
    /// Namespace; `default` if absent (recall reads `default` unless told otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A key: writing to an existing key replaces that record. Absent: a new record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Situating text (for example the turn this one answers), indexed at half weight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Category name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Scope name: `scratch` and `short_term` need `session_id` (the conversation);
    /// `declarative` needs `user_id`, `type` and `source` (`agent_learned` with a
    /// `confidence` answers 428 with a proposal until the user confirms it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// A declarative entry's type: `fact`, `preference` or `rule` (its category).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The end user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Any JSON object.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metadata: Map<String, Value>,
    /// 0.0 to 1.0 (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// Source name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// Expire after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
    /// When the fact became true (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// When it stopped being true (RFC 3339); not before `valid_from` (else 409
    /// `conflicting_fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    /// For a declarative entry: the id of the user's entry (same type) it replaces, when
    /// the caller knows (instead of the conflict detector's judgement). The rules still
    /// apply: learned never replaces user-stated, learned replaces learned only with a
    /// higher confidence. Another user's entry is 404; one of another type, or any other
    /// write, 409 `conflicting_fields`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
}

impl NewMemory {
    /// A memory of `content` with every other field at its default.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: Value::String(content.into()),
            ..Self::default()
        }
    }
}

/// Many memories in one transaction (`POST /v1/memories/batch`), at most 1,000.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMemories {
    /// The memories, written all or none.
    #[serde(deserialize_with = "objects")]
    pub memories: Vec<NewMemory>,
}

/// The stored records of a batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Memories {
    /// In the order of the request.
    pub memories: Vec<Memory>,
}

/// Changes to a memory (`PATCH /v1/memories/{id}`): absent fields are kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MemoryPatch {
    /// New content (absent or null: kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// New context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// New category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// New scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// New tags (replace the old ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// New metadata (replaces the old object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub metadata: Option<Map<String, Value>>,
    /// New importance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// New confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// New time to live, from now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
    /// New start of validity (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// New end of validity (RFC 3339); not before the memory's `valid_from` (else 409
    /// `conflicting_fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    /// Move the memory to this user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Move the memory to this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Move the memory to this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// New provenance: `user_stated`, `agent_learned`, `import` or a custom name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// New state: `active`, `archived` or `superseded` (with `superseded_by`, here or
    /// already on the memory; else 409 `conflicting_fields`). Any other state clears
    /// `superseded_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The id of the memory that replaces this one; the memory becomes `superseded` (with
    /// another `state` in the same patch: 409 `conflicting_fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Apply only if the memory is still at this version (else 409 `conflict`). The
    /// `If-Match` header carries the same condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<u64>,
    /// Record this change in the memory's history (`GET /v1/memories/{id}/history`) as made
    /// by this name (`dashboard`, a tool's name: 1-64 letters, digits and `_ . : -`).
    /// Declarative entries record every change anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// One page of memories (`GET /v1/memories`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MemoryPage {
    /// Oldest first.
    pub items: Vec<Memory>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Query parameters of `GET /v1/memories`; unknown parameters are refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// Only this user's memories.
    pub user_id: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this session's.
    pub session_id: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only this scope.
    pub scope: Option<String>,
    /// Only memories with every one of these tags (repeat the parameter: `tag=a&tag=b`).
    #[serde(default)]
    pub tag: Vec<String>,
    /// Only memories in this state: `active`, `archived` or `superseded`.
    pub state: Option<String>,
    /// Only memories created at or after this time (RFC 3339).
    pub created_after: Option<String>,
    /// Only memories created before this time (RFC 3339).
    pub created_before: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size (default 100, at most 1,000).
    pub limit: Option<usize>,
}

/// Query parameters of `DELETE /v1/memories`: deletes every memory of one user in the
/// namespace (only that agent's or session's, if given too).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ForgetParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// The user whose memories to delete.
    pub user_id: String,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this session's.
    pub session_id: Option<String>,
}

/// Filters beyond the owner fields.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Filters {
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Category name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Scope name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Every one of these tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Metadata fields that must be equal.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub metadata: Map<String, Value>,
    /// Created at or after (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<String>,
    /// Created before (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<String>,
}

/// A recall (`POST /v1/recall`): the memories that best match `query`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RecallQuery {
    /// The message or question.
    pub query: String,
    /// How many hits at most (default 10, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only this user's memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Only this session's memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// More filters.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_object"
    )]
    pub filters: Option<Filters>,
    /// Drop hits scoring below this (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_score: Option<f32>,
    /// `hybrid` (default), `lexical`, `vector` or `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Include each hit's signals.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain: bool,
    /// Archived memories too (their text read back from the archive; slower).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_archived: bool,
    /// Only the memories of this cluster of `user_id` (`GET /v1/clusters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<u32>,
}

/// The query of `GET /v1/memories/{id}/similar`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct SimilarParams {
    /// How many memories at most (default 5, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Where to look (default: the memory's own namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The user the request acts for: the memory must be visible to them (a declarative
    /// entry is its user's alone) and the similar memories are theirs, declarative entries
    /// included. Without it, the memory's own user's (none of their declarative entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Look among every user's memories, not only the memory's own user's (never another
    /// user's declarative entries). Conflicts with `user_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_users: Option<bool>,
}

impl RecallQuery {
    /// The top `limit` memories of the default namespace for `query`.
    pub fn new(query: impl Into<String>, limit: usize) -> Self {
        Self {
            query: query.into(),
            limit: Some(limit),
            ..Self::default()
        }
    }
}

/// A recalled memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RecallHit {
    /// The memory.
    pub memory: Memory,
    /// The final score, 0 to 1, comparable across queries: about the share of the query the
    /// memory matches (0.3 and above: a match; below 0.1: no word in common).
    pub score: f32,
    /// What made the score (with `explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub signals: Option<Value>,
}

/// What a recall found, best first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct RecallResult {
    /// Best first.
    pub hits: Vec<RecallHit>,
}

/// A value to store at a key (`PUT /v1/kv/{namespace}/{key}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct KvValue {
    /// Any JSON value.
    pub value: Value,
    /// Expire after this many seconds; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
}

/// The value at a key: what `GET` and `PUT` of a key answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KvEntry {
    /// The id of the record that holds it (a memory id).
    pub id: String,
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// When it expires, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// One page of the live entries of a namespace (`GET /v1/kv/{namespace}`), oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KvEntries {
    /// By key.
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub entries: BTreeMap<String, Value>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl KvEntries {
    /// Every entry of a namespace: `page(cursor)` fetches one page (the first with `None`),
    /// and each page's `next_cursor` is followed to the last.
    pub fn collect<E>(
        mut page: impl FnMut(Option<String>) -> Result<KvEntries, E>,
    ) -> Result<KvEntries, E> {
        let mut all = page(None)?;
        while let Some(cursor) = all.next_cursor.take() {
            let next = page(Some(cursor))?;
            all.entries.extend(next.entries);
            all.next_cursor = next.next_cursor;
        }
        Ok(all)
    }
}

/// The query of `GET /v1/kv/{namespace}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct KvPageParams {
    /// Page size (default 1,000, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// How many expired records a purge deleted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Purged {
    /// Records deleted.
    pub purged: u64,
}

/// How many entries a delete removed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Deleted {
    /// Entries removed.
    pub deleted: u64,
}

/// A conversation's header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ConversationSummary {
    /// Its id.
    pub id: String,
    /// The user it is with, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Messages so far.
    pub messages: u64,
    /// When it started (RFC 3339).
    pub created_at: String,
    /// When a message was last added.
    pub updated_at: String,
}

/// The conversations (`GET /v1/conversations`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Conversations {
    /// Oldest first.
    pub conversations: Vec<ConversationSummary>,
}

/// Which conversations to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ConversationParams {
    /// Only this user's.
    pub user_id: Option<String>,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ConversationMessage {
    /// Its place, from 0.
    pub seq: u64,
    /// `user`, `assistant`, `tool`, ...
    pub role: String,
    /// The text.
    pub content: String,
    /// A speaker's name, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What else was kept with it, as appended (tool calls, a framework's message fields).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub extra: Map<String, Value>,
    /// When it was stored (RFC 3339).
    pub created_at: String,
}

/// A message to add to a conversation (`POST /v1/conversations/{id}/messages`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user`, `assistant`, `system`, `tool` or another role name (1-64 letters, digits and
    /// `_ . : -`).
    pub role: String,
    /// The text (never blank).
    pub content: String,
    /// A speaker's name, when the role does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Anything else to keep with it (tool calls, a tool call's id, a framework's message
    /// fields), answered as given.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub extra: Map<String, Value>,
}

/// Messages to add to a conversation, which is made on first use
/// (`POST /v1/conversations/{id}/messages`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AppendMessages {
    /// The messages, oldest first (1-200), stored in one transaction where the store has them.
    #[serde(deserialize_with = "objects")]
    pub messages: Vec<NewMessage>,
    /// The user the conversation is with (a new conversation's; an existing one's must match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent in the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// The messages a `POST /v1/conversations/{id}/messages` stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AppendedMessages {
    /// The stored messages, in order, each with its place (`seq`) in the conversation.
    pub items: Vec<ConversationMessage>,
}

/// A conversation with its messages (`GET /v1/conversations/{id}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ConversationDetail {
    /// Its header.
    #[serde(flatten)]
    pub summary: ConversationSummary,
    /// Its messages, in order.
    pub items: Vec<ConversationMessage>,
}

/// What a maintenance run removed (`POST /v1/maintain`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Maintained {
    /// Expired records deleted, in every tenant.
    pub expired: u64,
    /// Episodic memories past the retention deleted, in the caller's tenant.
    pub episodic: u64,
}

/// A maintenance run (`POST /v1/maintenance`, `muisti maintain`): the seed's
/// `runMaintenance`, user by user.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MaintenanceRequest {
    /// Only this user's memories (default: every user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Only this namespace (default: every namespace of the tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The jobs: `expire`, `consolidate`, `promote`, `prune`, `archive`, `cluster`
    /// (default: the first four; prune needs `max_memories`; archive and cluster run only
    /// when named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
    /// Prune's cap: memories a user keeps per namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memories: Option<u64>,
    /// Prune deletes only memories of importance below this (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_importance: Option<f32>,
    /// Promote raises importance by 0.1 per this many more recalls (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote_after: Option<u64>,
    /// Report what would change, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// How long the run's hold on a user lasts if it dies, in seconds (1 to 3600; default
    /// 60): until then another run skips the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_secs: Option<u64>,
    /// Run in the background: answer 202 with the job (`GET /v1/jobs/{id}`: users done of
    /// how many, then the report).
    #[serde(default)]
    pub background: bool,
    /// Archive moves memories not written or recalled for this many days (default 90;
    /// 0: any age).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_after_days: Option<u32>,
    /// Archive moves only memories recalled at most this many times (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_max_access: Option<u64>,
    /// Consolidate folds near-duplicates too, memories stating the same fact in other words
    /// (default true; false: exact duplicates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_duplicates: Option<bool>,
}

/// What a maintenance run did (or, dry, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MaintenanceReport {
    /// Expired memories deleted, in every tenant (not counted in a dry run).
    pub expired: u64,
    /// Episodic memories past the retention deleted (not counted in a dry run).
    pub episodic: u64,
    /// Duplicates folded into the memory they repeat.
    pub consolidated: u64,
    /// Memories whose importance was raised.
    pub promoted: u64,
    /// Memories pruned.
    pub pruned: u64,
    /// Memories moved to the archive.
    #[serde(default)]
    pub archived: u64,
    /// Archive objects no record named, deleted.
    #[serde(default)]
    pub swept: u64,
    /// Users whose memories were grouped by topic again.
    #[serde(default)]
    pub clustered: u64,
    /// Users looked at (per namespace).
    pub users: u64,
    /// Users skipped: another process held their lease.
    pub busy: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// The query of `GET /v1/clusters` and `GET /v1/clusters/{id}/memories`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ClusterParams {
    /// The user whose memories were clustered.
    pub user_id: String,
    /// Namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Page size of a cluster's memories (default 100, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page of a cluster's memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One topic of a user's memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ClusterInfo {
    /// Its number (`cluster` in a recall).
    pub id: u32,
    /// Its top terms, joined.
    pub label: String,
    /// Its top terms, best first.
    pub terms: Vec<String>,
    /// Memories in it now (each memory is in the cluster of its nearest centroid).
    pub size: u64,
    /// Memories in it when it was fitted.
    pub fitted_size: u64,
}

/// A user's memories grouped by topic (`GET /v1/clusters`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Clusters {
    /// The namespace.
    pub namespace: String,
    /// The user.
    pub user_id: String,
    /// The clusters.
    pub clusters: Vec<ClusterInfo>,
    /// How well they are separated: the mean silhouette (-1 to 1) that chose their number.
    pub silhouette: f32,
    /// Memories they were fitted on.
    pub fitted_on: u64,
    /// When they were fitted (RFC 3339).
    pub computed_at: String,
}

/// A namespace and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct NamespaceCount {
    /// The namespace.
    pub namespace: String,
    /// Live records.
    pub count: u64,
}

/// What the caller's tenant holds (`GET /v1/stats`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Stats {
    /// The caller's tenant.
    pub tenant: String,
    /// The store's backend name.
    pub backend: String,
    /// Whether the store answered its health check.
    pub healthy: bool,
    /// Per namespace.
    pub namespaces: Vec<NamespaceCount>,
    /// All live records of the tenant.
    pub total: u64,
}

/// Start a reindex (`POST /v1/reindex`, admin only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReindexRequest {
    /// Re-embed every memory, not only those another model embedded.
    #[serde(default)]
    pub force: bool,
}

/// A background job and its progress (`GET /v1/jobs/{id}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Job {
    /// Job id.
    pub id: String,
    /// `reindex` or `maintenance`.
    pub kind: String,
    /// `running`, `done` or `failed`.
    pub state: String,
    /// Items processed.
    pub done: u64,
    /// Items to process.
    pub total: u64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The code of its failure, as the error shape's (`invalid_input`, `unavailable`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The HTTP status its failure would have answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_status: Option<u16>,
    /// A maintenance job's report, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<MaintenanceReport>,
}

/// A new API key (`POST /v1/admin/keys`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// The tenant the key acts as.
    pub tenant: String,
    /// Whether the key may manage its tenant's keys and reindex.
    #[serde(default)]
    pub admin: bool,
    /// Whether the key manages every tenant's keys and may purge the store (an operator
    /// key; only an operator may make one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
    /// A note to recognise the key by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// An API key as listed: never the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KeyInfo {
    /// Public key id (the part after `muisti_` and before the next `_`).
    pub id: String,
    /// The tenant it acts as.
    pub tenant: String,
    /// Whether it may manage its tenant's keys.
    pub admin: bool,
    /// Whether it manages every tenant's keys.
    #[serde(default)]
    pub operator: bool,
    /// Its note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was made.
    pub created_at: String,
}

/// A key just made: the secret is shown this once and only its hash is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CreatedKey {
    /// What is stored about it.
    #[serde(flatten)]
    pub info: KeyInfo,
    /// The key to send as `Authorization: Bearer <key>`.
    pub key: String,
}

/// The keys of the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KeyList {
    /// Oldest first.
    pub keys: Vec<KeyInfo>,
}

/// A snapshot of the whole store (`/v1/admin/snapshots`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Snapshot {
    /// Its id: the time it was made, `YYYYMMDDTHHMMSSmmmZ`.
    pub id: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// The backend of the store it was made from.
    pub backend: String,
    /// `sqlite` (an online backup) or `jsonl` (an export).
    pub format: String,
    /// Records in it.
    pub records: u64,
    /// Size of its data file in bytes.
    pub bytes: u64,
}

/// The snapshots of the server's store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SnapshotList {
    /// Oldest first.
    pub snapshots: Vec<Snapshot>,
}

/// What restoring a snapshot did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Restored {
    /// Records deleted from the store first.
    pub deleted: u64,
    /// Records written from the snapshot.
    pub restored: u64,
}

/// The body of every error response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
    /// With `confirmation_required` (428): the proposal to confirm or reject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
}

/// An agent-learned declarative entry waiting for the user's confirmation
/// (`POST /v1/proposals/{id}/confirm` or `/reject`; it expires unconfirmed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Proposal {
    /// The proposal's id (ULID).
    pub id: String,
    /// Where the entry would be written.
    pub namespace: String,
    /// The proposed entry's text.
    pub content: String,
    /// `fact`, `preference` or `rule`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `agent_learned`.
    pub source: String,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// The user it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent that proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The stored entry it would supersede, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<ProposalTarget>,
    /// When it was proposed.
    pub created_at: String,
    /// When it is dropped unconfirmed.
    pub expires_at: String,
}

/// The entry a proposal would supersede, as it was when proposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ProposalTarget {
    /// Its id.
    pub id: String,
    /// Its text.
    pub content: String,
    /// `user_stated` or `agent_learned`.
    pub source: String,
    /// Its confidence, for a learned entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
}

/// The proposals waiting for a user (`GET /v1/proposals?user_id=`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Proposals {
    /// Oldest first.
    pub proposals: Vec<Proposal>,
}

/// The user a request that names a memory by id acts for: a declarative entry is found
/// only by its own user (without one, or with another, it is 404 like a missing memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ActingUser {
    /// The user the request acts for.
    pub user_id: Option<String>,
}

/// The user whose proposals to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ProposalParams {
    /// The user.
    pub user_id: String,
}

/// Who decides a proposal (`POST /v1/proposals/{id}/confirm` or `/reject`): the user it
/// concerns; another user's proposal is not found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProposalDecision {
    /// The user the proposal concerns.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 256))]
    pub user_id: String,
}

/// One change of a declarative entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct HistoryEntry {
    /// `add`, `update`, `supersede`, `delete` or `confirm`.
    pub event: String,
    /// The text before (none for an add).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text after (none for a delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The entry's source after the change.
    pub source: String,
    /// Its confidence after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// `user`, or the agent.
    pub actor: String,
    /// When (RFC 3339).
    pub at: String,
}

/// A declarative entry's history (`GET /v1/memories/{id}/history`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct History {
    /// Oldest first; empty for a memory that is not declarative.
    pub history: Vec<HistoryEntry>,
}

/// Every error `code` the server sends (the OpenAPI document's enum for it).
pub const ERROR_CODES: &[&str] = &[
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "conflict",
    "conflicting_fields",
    "too_large",
    "uri_too_long",
    "unsupported_media_type",
    "invalid_input",
    "rate_limited",
    "headers_too_large",
    "internal",
    "unavailable",
    "timeout",
    "blocked",
    "context_length",
    "chat_not_configured",
    "provider_auth",
    "provider_unavailable",
    "provider_rate_limited",
    "step_limit",
    "confirmation_required",
];

/// A stable machine-readable code and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ErrorDetail {
    /// One of [`ERROR_CODES`]: `bad_request`, `unauthorized`, `forbidden`, `not_found`,
    /// `invalid_input`, `conflict`, `rate_limited`, `unavailable`, …
    pub code: String,
    /// What went wrong; never stored values.
    pub message: String,
}

/// Liveness and readiness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: String,
    /// Why not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A message for the agent (`POST /v1/chat` and `POST /v1/chat/stream`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChatMessage {
    /// What the user says.
    pub message: String,
    /// Continue this conversation; without it a new one is started (its id is in the
    /// answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Memories recalled into the prompt (default 3; 0 turns recall off; at most 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_term_memory: Option<usize>,
    /// Store the conversation (default true). With false nothing is written and the answer
    /// carries no conversation to continue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_messages: Option<bool>,
    /// Whose memory: recall, the graph's facts and the stored conversation are this user's
    /// (default: recall over every user's memories, a conversation of no user). A
    /// conversation continued keeps its user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Facts of the knowledge graph about what the message names (its entities' current
    /// relations) put into the prompt beside the memories, at most this many (default 0:
    /// none; at most 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_facts: Option<usize>,
}

/// Tokens a model used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct TokenUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// The agent's answer (and the last event of a streamed answer, `done`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ChatReply {
    /// The conversation, to continue it; absent when messages are not stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The answer.
    pub reply: String,
    /// Keys of the memories injected into the prompt, in order.
    pub recalled: Vec<String>,
    /// Tokens used.
    pub usage: TokenUsage,
}

/// One piece of a streamed answer (the `token` event of `POST /v1/chat/stream`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ChatToken {
    /// The text.
    pub text: String,
}

/// Which entities to list (`GET /v1/graph/entities`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct GraphEntityParams {
    /// Whose graph (none: the graph of memories without a user).
    pub user_id: Option<String>,
    /// Only entities of this kind (`person`, `place`, `organization`, ...).
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", param(rename = "type"))]
    pub kind: Option<String>,
    /// Only the entity with this name or alias.
    pub name: Option<String>,
    /// At most this many (1 to 10,000; default all), the rest marked by `truncated`.
    pub limit: Option<usize>,
}

/// A triple pattern over one user's relations (`GET /v1/graph/relations`): each part given
/// must match, the others are free. `entity` matches either end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct GraphRelationParams {
    /// Whose graph (none: the graph of memories without a user).
    pub user_id: Option<String>,
    /// The subject's name or alias.
    pub subject: Option<String>,
    /// The predicate (`works_at`; any case and spacing).
    pub predicate: Option<String>,
    /// The object's name, alias or value.
    pub object: Option<String>,
    /// Relations of this entity, as subject or object (not with `subject` or `object`).
    pub entity: Option<String>,
    /// With `entity`: its neighbourhood, the relations within this many steps of it (1 to
    /// 3; default 1, its own), nearest first.
    pub hops: Option<usize>,
    /// The relations that held at this time (RFC 3339); default: those that hold now.
    pub as_of: Option<String>,
    /// At most this many, in the answer's order (1 to 10,000; default all), the rest marked
    /// by `truncated`.
    pub limit: Option<usize>,
}

/// A person, place, organisation or other thing the memories name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphEntity {
    /// Its id (ULID).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// Other names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// How many memories name it.
    pub mentions: u64,
    /// When first named (RFC 3339).
    pub first_seen: String,
    /// When last named (RFC 3339).
    pub last_seen: String,
    /// What is known of it.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
    /// The memories that name it.
    pub memory_ids: Vec<String>,
}

/// A fact: `subject predicate object`, with when it held and when muisti knew it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphRelation {
    /// Its id (ULID).
    pub id: String,
    /// The subject's name.
    pub subject: String,
    /// The relation (snake_case).
    pub predicate: String,
    /// The object's name, or a value.
    pub object: String,
    /// The subject entity's id.
    pub subject_id: String,
    /// The object entity's id (none for a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    /// 0 to 1.
    pub confidence: f32,
    /// The memories that state it.
    pub memory_ids: Vec<String>,
    /// Since when it held in the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_at: Option<String>,
    /// Until when it held (a newer fact replaced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_at: Option<String>,
    /// When muisti learned it.
    pub created_at: String,
    /// When muisti retired it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<String>,
}

/// Two entities of a user that are one (`POST /v1/graph/entities/merge`): `other` is
/// merged into `keep`, both histories kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GraphMerge {
    /// Whose graph (none: the graph of memories without a user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The entity that stays (a name or alias).
    pub keep: String,
    /// The entity merged into it (a name or alias): its names become aliases, its
    /// memories and relations move.
    pub other: String,
}

/// Entities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphEntities {
    /// By name.
    pub entities: Vec<GraphEntity>,
    /// Whether `limit` left some out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Relations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphRelations {
    /// Oldest first.
    pub relations: Vec<GraphRelation>,
    /// Whether `limit` left some out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// One message of a conversation to remember (`POST /v1/memories/extract`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExtractMessage {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// Who said it (a speaker's name, when the conversation has several people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When (RFC 3339); relative times in it ("last month") are resolved against this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// A conversation to remember (`POST /v1/memories/extract`): each message as said
/// (`infer: false`), or the facts found in it, each decided by the declarative rules
/// (`infer: true`, the default).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExtractRequest {
    /// The messages, oldest first (1-200).
    #[serde(deserialize_with = "objects")]
    pub messages: Vec<ExtractMessage>,
    /// Whose memory.
    pub user_id: String,
    /// The agent in the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The conversation (messages stored without inference carry it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Extract facts (default true) or store each message as said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infer: Option<bool>,
    /// Queue the messages and answer at once (202): they are read for facts with the
    /// conversation's (`session_id`) other queued messages once enough have gathered or it
    /// has been quiet a while (the server's `extract_after_messages`,
    /// `extract_quiet_secs`). Only with inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
}

/// Messages queued for extraction in the background (`202` of
/// `POST /v1/memories/extract` with `background`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ExtractQueued {
    /// Messages queued by this request.
    pub queued: usize,
}

/// What became of one fact (or message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ExtractResult {
    /// The memory it concerns (for `CONFIRMATION_REQUIRED`, the proposal to confirm).
    pub id: String,
    /// The text stored, proposed or retracted.
    pub memory: String,
    /// `ADD`, `UPDATE`, `DELETE`, `NONE` or `CONFIRMATION_REQUIRED`.
    pub event: String,
    /// For `UPDATE` and `DELETE` (and `NONE` against an entry), the entry's text before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
    /// `fact`, `preference`, `rule` (or `conversation` for a message stored as said).
    #[serde(rename = "type")]
    pub kind: String,
    /// Who said it: a name, else the role.
    pub speaker: String,
    /// `user_stated` or `agent_learned`.
    pub source: String,
    /// A learned fact's confidence (0-100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// When it became true (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// Model calls and tokens one operation used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ModelUsage {
    /// Model calls (0 without a model).
    pub calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// What `POST /v1/memories/extract` did, mem0's shape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ExtractResponse {
    /// One per fact found (or message stored), in order.
    pub results: Vec<ExtractResult>,
    /// Which extractor read the messages (`offline`, or `provider:model`); absent without
    /// inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<String>,
    /// Model calls and tokens used.
    pub usage: ModelUsage,
}

/// A command for the memory manager (`POST /v1/manage`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ManageRequest {
    /// What to do, in natural language ("forget my old address").
    pub command: String,
    /// Whose memory.
    pub user_id: String,
    /// Namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Carry out destructive actions (forget, bulk delete) without asking (default
    /// false: they are returned as `pending`, not done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub yes: Option<bool>,
}

/// One tool call the manager made (or would make).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ManageAction {
    /// The tool (`search`, `get`, `remember`, `update`, `forget`, `forget_all`, `list`,
    /// `graph`, `stats`).
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// What it answered (for a pending action, why it waits).
    pub result: String,
}

/// What the manager did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ManageReply {
    /// The manager's answer, in words.
    pub answer: String,
    /// The tool calls carried out, in order.
    pub actions: Vec<ManageAction>,
    /// Destructive calls not carried out: send the command again with `yes: true`.
    pub pending: Vec<ManageAction>,
    /// Model calls and tokens used.
    pub usage: ModelUsage,
}

/// An OpenAI chat completions request (`POST /v1/chat/completions`), as the OpenAI SDKs
/// send it: the fields muisti reads are described; every field is passed to the upstream
/// model as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ChatCompletionRequest {
    /// The model (default: the server's `--llm-model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The conversation, OpenAI's messages (`role`, `content` text or parts); the last
    /// user message is what memory is recalled for.
    pub messages: Vec<Value>,
    /// The user whose memory is recalled and who the exchange is remembered for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Stream the answer as server-sent `chat.completion.chunk`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Every other field of the OpenAI API, passed through.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Query parameters of `GET /v1/analytics`: which memories to aggregate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// Only this user's memories.
    pub user_id: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this scope.
    pub scope: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Days the per-day series cover, ending today (default 30, 1 to 366).
    pub days: Option<u32>,
    /// How many of the most accessed memories (default 10, at most 100).
    pub top: Option<usize>,
}

/// A count on one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayCount {
    /// The day, `YYYY-MM-DD` (UTC).
    pub day: String,
    /// The scope counted, in a per-scope series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How many.
    pub count: u64,
}

/// Aggregates of a namespace's memories (`GET /v1/analytics`), computed on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Analytics {
    /// Memories matched.
    pub total: u64,
    /// By scope.
    pub by_scope: BTreeMap<String, u64>,
    /// By state (`active`, `archived`, `superseded`).
    pub by_state: BTreeMap<String, u64>,
    /// By category.
    pub by_category: BTreeMap<String, u64>,
    /// Memories created per day of the window, per scope (days with none left out).
    pub growth: Vec<DayCount>,
    /// Memories whose last access fell on each day of the window (access is kept as a count
    /// and a last time per memory, not as a log).
    pub last_accessed: Vec<DayCount>,
    /// The most accessed memories, most first.
    pub top_accessed: Vec<Memory>,
}

/// Query parameters of `GET /v1/analytics/similarity`: a page of a user's memories (or of
/// one of their clusters) to compare.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct SimilarityParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// The user.
    pub user_id: String,
    /// Only this cluster's memories (`GET /v1/clusters`).
    pub cluster: Option<u32>,
    /// How many memories (default 20, 2 to 60).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// How alike a page of memories are (`GET /v1/analytics/similarity`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Similarity {
    /// The memories compared, in order.
    pub items: Vec<Memory>,
    /// `matrix[i][j]`: the cosine similarity of item `i` and item `j` (-1 to 1).
    pub matrix: Vec<Vec<f32>>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The server's background jobs (`GET /v1/jobs`), newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Jobs {
    /// The jobs.
    pub items: Vec<Job>,
}
