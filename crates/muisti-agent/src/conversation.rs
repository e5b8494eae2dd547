//! Conversations and durable runs, as stored.

use muisti::Timestamp;
use serde::{Deserialize, Serialize};

use crate::{Message, ToolCall, Usage};

/// The namespace of conversation headers (their messages are records of their own, see
/// [`muisti::conversation`]).
pub use muisti::conversation::CONVERSATIONS_NAMESPACE;

/// The namespace durable runs are stored in, keyed by their id.
pub const RUNS_NAMESPACE: &str = "runs";

/// A conversation: its id (a ULID) and its messages, oldest first. Messages are stored as
/// the user typed them, without the injected memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// A ULID: keep it to resume the conversation later.
    pub id: String,
    /// The messages so far, oldest first (each stored as a record of its own).
    pub messages: Vec<Message>,
    /// Exchanges ever added, including dropped ones: tells a stale copy from the stored one.
    #[serde(default)]
    pub turns: u64,
    /// When it was started.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

/// Where a durable run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started and not finished: the process stopped, or it is still going.
    Running,
    /// Failed; [`Run::error`] says how. Resuming tries again from the last saved step.
    Failed,
    /// Finished; [`Run::reply`] holds the answer.
    Completed,
}

/// The saved state of one message's run through the model and its tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// A ULID.
    pub id: String,
    /// Where it is.
    pub status: RunStatus,
    /// The conversation it belongs to, if any.
    pub conversation_id: Option<String>,
    /// The user's message as typed.
    pub message: String,
    /// Keys of the memories injected into the prompt.
    pub recalled: Vec<String>,
    /// Everything sent to the model so far (history, prompt, tool calls and results).
    pub messages: Vec<Message>,
    /// Model calls that ended in tool calls, all of whose results are in `messages`.
    pub steps: usize,
    /// Tool calls run so far.
    pub tool_calls: Vec<ToolCall>,
    /// The answer, once completed.
    pub reply: Option<String>,
    /// The kind and text of the last error, if it failed.
    pub error: Option<String>,
    /// Tokens used so far.
    pub usage: Usage,
    /// When it started.
    pub created_at: Timestamp,
    /// When it was last saved.
    pub updated_at: Timestamp,
}
