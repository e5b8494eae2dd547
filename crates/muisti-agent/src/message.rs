//! What is said: messages, tool calls, and one request to and answer from a model.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or program) talking to the agent.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering one of the model's tool calls.
    Tool,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The text (for a tool message, the tool's result).
    #[serde(default)]
    pub content: String,
    /// Tools the assistant asked to call in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A tool's result for the call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// The model asking for a tool to be run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call; the result refers to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Value,
}

/// A tool as the model is told about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name (letters, digits, `_` and `-`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments object.
    pub parameters: Value,
}

/// One request to a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// System prompt.
    pub system: Option<String>,
    /// The conversation so far, oldest first; the last is the new user message.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Most tokens to generate (the provider's default when `None`; Anthropic requires one
    /// and gets the provider config's default).
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The shape the answer must have (OpenAI-compatible APIs enforce it as a
    /// `json_schema` response format; for Anthropic it is stated in the system prompt).
    pub json_schema: Option<JsonSchema>,
}

/// A named JSON Schema an answer must follow.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonSchema {
    /// Its name (letters, digits, `_` and `-`).
    pub name: String,
    /// The schema.
    pub schema: Value,
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It finished its answer.
    #[default]
    Stop,
    /// It hit the token limit.
    Length,
    /// It wants tools to be run.
    ToolCalls,
    /// The provider filtered the output.
    ContentFilter,
    /// Anything else the provider reported.
    Other,
}

/// Tokens used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// A model's answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatResponse {
    /// The text (may be empty when the model only calls tools).
    pub text: String,
    /// Tools it asks to run.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish: FinishReason,
    /// Tokens used, when the provider reported them.
    pub usage: Usage,
}
