//! Conversations and their messages.

use super::*;

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
