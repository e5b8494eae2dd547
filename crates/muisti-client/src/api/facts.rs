//! Memory from conversations: extraction.

use super::*;

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
    /// The memory that held `previous_memory`: for an `UPDATE` of a long-term memory, the
    /// one superseded (kept, linked to `id`); else `id` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<String>,
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

/// Something said that became no memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ExtractSkipped {
    /// The message it was in (its index in the request).
    pub message: usize,
    /// What was said.
    pub text: String,
    /// `question`, `request`, `chit_chat`, `passing` (a passing state or one-off task),
    /// `no_fact` (no lasting fact of the speaker found), `duplicate` (the same fact again in
    /// these messages) or `invalid` (a candidate the engine does not take).
    pub reason: String,
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
    /// What was said and became no memory, and why, in the order said (with inference;
    /// a model extractor may list nothing).
    #[serde(default)]
    pub skipped: Vec<ExtractSkipped>,
    /// Which extractor read the messages (`offline`, or `provider:model`); absent without
    /// inference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<String>,
    /// Model calls and tokens used.
    pub usage: ModelUsage,
}
