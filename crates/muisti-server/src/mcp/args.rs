//! The tools' arguments, as the model sends them: each names what it does in its schema's
//! descriptions, refuses a field it does not know, and is turned into the wire type of the
//! REST body it stands for field by field (no `..Default`), so a field the body gains does
//! not compile until the tool takes it.

use rmcp::schemars;
use serde::Deserialize;
use serde_json::{Map, Value};

/// One message of `remember_conversation`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationMessageArgs {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// Who said it (a speaker's name).
    #[serde(default)]
    pub name: Option<String>,
    /// When (RFC 3339).
    #[serde(default)]
    pub created_at: Option<String>,
}

/// Arguments of `remember_conversation`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberConversationArgs {
    /// The messages, oldest first.
    pub messages: Vec<ConversationMessageArgs>,
    /// Whose memory.
    pub user_id: String,
    /// The agent in the conversation.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The conversation.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Extract facts (default true) or store each message as said.
    #[serde(default)]
    pub infer: Option<bool>,
}

/// Arguments of `manage`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManageArgs {
    /// What to do, in natural language ("forget my old address").
    pub command: String,
    /// Whose memory.
    pub user_id: String,
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Carry out deletes (default false: they come back as `pending`).
    #[serde(default)]
    pub yes: Option<bool>,
}

/// Arguments of `remember`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberArgs {
    /// The fact, preference or event to remember, as text.
    pub content: String,
    /// A key: writing to an existing key replaces that memory.
    #[serde(default)]
    pub key: Option<String>,
    /// Namespace (default `default`, the one recall reads).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The end user it is about.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// The session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// `core` (default), `daily`, `conversation` or a custom name.
    #[serde(default)]
    pub category: Option<String>,
    /// Labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// 0.0 to 1.0.
    #[serde(default)]
    pub importance: Option<f32>,
    /// Expire after this many seconds.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
    /// `long_term` (default), `episodic`, `scratch` or `short_term` (these two need
    /// session_id), or `declarative` (a user's fact, preference or rule: needs user_id and
    /// type).
    #[serde(default)]
    pub scope: Option<String>,
    /// A declarative entry's type: `fact`, `preference` or `rule`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// `user_stated` (default: the user said it) or `agent_learned` (you inferred it: give
    /// a confidence; it is stored only after the user confirms the proposal).
    #[serde(default)]
    pub source: Option<String>,
    /// 0 to 100, for an agent-learned entry.
    #[serde(default)]
    pub confidence: Option<u8>,
    /// For a declarative entry: the id of the user's entry of the same type it replaces,
    /// when you know it (for example the user corrected that entry).
    #[serde(default)]
    pub supersedes: Option<String>,
    /// Where it was said or what it is about (indexed and embedded with the content).
    #[serde(default)]
    pub context: Option<String>,
    /// Any JSON object to keep with it (filterable by exact value).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// When it became true (RFC 3339; default: when it is written).
    #[serde(default)]
    pub valid_from: Option<String>,
    /// When it stops being true (RFC 3339).
    #[serde(default)]
    pub valid_until: Option<String>,
}

/// Arguments of `recall`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// The question or message to find memories for.
    pub query: String,
    /// How many memories at most (default 5, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only this user's memories.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Only this session's memories.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only this agent's memories.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only memories of this category.
    #[serde(default)]
    pub category: Option<String>,
    /// Only memories with every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Drop memories scoring below this (0 to 1).
    #[serde(default)]
    pub min_score: Option<f32>,
    /// hybrid (default), lexical, vector or overlap.
    #[serde(default)]
    pub mode: Option<String>,
    /// Archived memories too (their text read back from the archive; slower).
    #[serde(default)]
    pub include_archived: bool,
    /// Only the memories of this cluster of the user (see the clusters of `GET /v1/clusters`).
    #[serde(default)]
    pub cluster: Option<u32>,
    /// Recall as of this time (RFC 3339) instead of now: "now" and relative periods in the
    /// query mean then, and only the memories true then are returned.
    #[serde(default)]
    pub as_of: Option<String>,
    /// Memories a newer one replaced (state superseded) too (left out by default).
    #[serde(default)]
    pub include_superseded: bool,
    /// Leave out key-value entries (records written with a key).
    #[serde(default)]
    pub exclude_key_value: bool,
    /// Only memories of this scope.
    #[serde(default)]
    pub scope: Option<String>,
    /// Only memories whose metadata has each of these values.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Only memories written at or after this time (RFC 3339).
    #[serde(default)]
    pub created_after: Option<String>,
    /// Only memories written before this time (RFC 3339).
    #[serde(default)]
    pub created_before: Option<String>,
    /// Each hit with every signal of its score.
    #[serde(default)]
    pub explain: bool,
}

/// Arguments of `similar`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarArgs {
    /// The memory id (ULID).
    pub id: String,
    /// How many memories at most (default 5, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Where to look (default: the memory's own namespace).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The user the request acts for (the similar memories are theirs; without it, the
    /// memory's own user's).
    #[serde(default)]
    pub user_id: Option<String>,
    /// Look among every user's memories (never another user's declarative entries).
    #[serde(default)]
    pub all_users: Option<bool>,
}

/// Arguments of `stats`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsArgs {
    /// Sum up this namespace's memories (default `default` when `user_id` is given).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Sum up only this user's memories.
    #[serde(default)]
    pub user_id: Option<String>,
}

/// Arguments naming one memory.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory id (ULID).
    pub id: String,
    /// The user the request acts for: a declarative entry is found only by its own user.
    #[serde(default)]
    pub user_id: Option<String>,
}

/// Arguments naming one proposal.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalArgs {
    /// The proposal id (from a confirmation_required answer or `proposals`).
    pub id: String,
    /// The user the proposal concerns (only they decide it).
    pub user_id: String,
}

/// Arguments naming one user.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserArgs {
    /// The user.
    pub user_id: String,
}

/// Arguments of `conversations`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationListArgs {
    /// Only this user's conversations.
    #[serde(default)]
    pub user_id: Option<String>,
}

/// Arguments of `graph_entities`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphEntityArgs {
    /// Whose graph.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Only entities of this kind (person, place, organization, product, event, other).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Only the entity with this name or alias.
    #[serde(default)]
    pub name: Option<String>,
}

/// Arguments of `graph_relations`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphRelationArgs {
    /// Whose graph.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The subject's name.
    #[serde(default)]
    pub subject: Option<String>,
    /// The predicate, such as works_at, lives_in, reports_to.
    #[serde(default)]
    pub predicate: Option<String>,
    /// The object's name or value.
    #[serde(default)]
    pub object: Option<String>,
    /// An entity at either end (instead of subject and object).
    #[serde(default)]
    pub entity: Option<String>,
    /// With entity: the facts within this many steps of it (1 to 3; default 1).
    #[serde(default)]
    pub hops: Option<usize>,
    /// The facts that held at this time (RFC 3339); default: now.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// Arguments naming one conversation.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationArgs {
    /// The conversation's id (the session_id of its memories).
    pub id: String,
}

/// Arguments of `update`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// The memory id (ULID).
    pub id: String,
    /// New text.
    #[serde(default)]
    pub content: Option<String>,
    /// New tags (replace the old ones).
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    /// New importance, 0.0 to 1.0.
    #[serde(default)]
    pub importance: Option<f32>,
    /// New metadata object (replaces the old one).
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
    /// New context.
    #[serde(default)]
    pub context: Option<String>,
    /// New category.
    #[serde(default)]
    pub category: Option<String>,
    /// New scope: scratch, short_term, long_term, episodic or declarative.
    #[serde(default)]
    pub scope: Option<String>,
    /// Move the memory to this user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// New state: active, archived or superseded (with superseded_by).
    #[serde(default)]
    pub state: Option<String>,
    /// The memory that replaces this one.
    #[serde(default)]
    pub superseded_by: Option<String>,
    /// Apply only if the memory is still at this version (its `version` field).
    #[serde(default)]
    pub expected_version: Option<u64>,
    /// New confidence, 0 to 100.
    #[serde(default)]
    pub confidence: Option<u8>,
    /// Expire this many seconds from now.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
    /// When it became true (RFC 3339).
    #[serde(default)]
    pub valid_from: Option<String>,
    /// When it stops being true (RFC 3339).
    #[serde(default)]
    pub valid_until: Option<String>,
    /// Move the memory to this agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Move the memory to this session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// New source: user_stated or agent_learned.
    #[serde(default)]
    pub source: Option<String>,
    /// Who makes the change, as the memory's history records it.
    #[serde(default)]
    pub actor: Option<String>,
}

/// Arguments of `list`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Only this user's memories.
    #[serde(default)]
    pub user_id: Option<String>,
    /// Only this session's memories.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Page size (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Only this agent's memories.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Only memories of this category.
    #[serde(default)]
    pub category: Option<String>,
    /// Only memories of this scope.
    #[serde(default)]
    pub scope: Option<String>,
    /// Only memories with every one of these tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Only memories in this state: active (default), archived or superseded.
    #[serde(default)]
    pub state: Option<String>,
    /// Only memories written at or after this time (RFC 3339).
    #[serde(default)]
    pub created_after: Option<String>,
    /// Only memories written before this time (RFC 3339).
    #[serde(default)]
    pub created_before: Option<String>,
    /// The order: created (oldest first, the default), newest, importance (most important,
    /// then most recently accessed) or accessed (most recently accessed first).
    #[serde(default)]
    pub order: Option<String>,
}

/// Arguments of `kv_get`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KvGetArgs {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The key.
    pub key: String,
}

/// Arguments of `kv_set`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KvSetArgs {
    /// Namespace (default `default`).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The key.
    pub key: String,
    /// Any JSON value.
    pub value: Value,
    /// Expire after this many seconds.
    #[serde(default)]
    pub ttl_seconds: Option<u64>,
}
