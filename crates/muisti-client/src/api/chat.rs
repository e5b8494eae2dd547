//! The agent: chat, the memory manager, and the OpenAI-compatible proxy's request.

use super::*;

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
    /// Recall as of this time (RFC 3339) instead of now: "now" and relative periods in the
    /// message mean then, and only the memories true then are injected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
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
