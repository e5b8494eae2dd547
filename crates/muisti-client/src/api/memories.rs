//! Memories: the record, writes, updates, listings and recall.

use super::*;

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
    /// `superseded_by`; a superseded memory made `active` again is true again, its
    /// `valid_until` cleared too unless this update gives one.
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
    /// The order: `created` (oldest first, the default), `newest`, `importance` (most
    /// important first, then most recently accessed, then newest) or `accessed` (most
    /// recently accessed first). Any but `created` reads every matching memory for a page.
    pub order: Option<String>,
    /// The `next_cursor` of the previous page (of the same order).
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
    /// Recall as of this time (RFC 3339) instead of now: "now" and relative periods in the
    /// query mean then, and only the memories true then are returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Memories a newer one replaced (state `superseded`) too (left out by default).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub include_superseded: bool,
    /// Leave out key-value entries (records written with a `key`): only the memories of a
    /// namespace that also holds an application's state. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exclude_key_value: bool,
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
