//! Agents over muisti: attach a memory to a model and every message is sent with the
//! memories that matter for it.
//!
//! On every [`Agent::send`] and [`Agent::stream`], before the message reaches the model,
//! the agent recalls the best entries of the `default` namespace for it (hybrid recall: the
//! words and the meaning), and prepends at most [`long_term_memory`](AgentBuilder::long_term_memory)
//! of them as `- key: value` lines under [`MEMORY_HEADER`], capped at [`MAX_BLOCK_BYTES`].
//! Guards check the message and the injected text; conversations and durable runs are
//! stored in their own namespaces, which are never injected.
//!
//! ```no_run
//! use muisti::Engine;
//! use muisti_agent::{Agent, ProviderConfig, ProviderKind};
//!
//! let memory = Engine::open("sqlite://memory.db")?;
//! let ns = muisti::Namespace::default_ns();
//! memory.kv().set(&ns, "customer_tier", "gold tier customer".into(), None)?;
//! let provider = ProviderConfig::new(ProviderKind::OpenAi, "gpt-4o-mini").connect()?;
//! let agent = Agent::builder().memory(memory).provider(provider).build()?;
//! let reply = agent.send("What discount do I get for my customer tier?")?;
//! println!("{}", reply.text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod agent;
mod answer;
mod conversation;
mod error;
mod extract;
mod facts;
mod guard;
mod inject;
mod judge;
mod manager;
mod message;
pub mod provider;
mod tool;

pub use agent::{
    Agent, AgentBuilder, MAX_MESSAGE_BYTES, MAX_NOTE_BYTES, MAX_NOTES_SHOWN, NOTE_TOOL, Reply,
    TokenStream, Turn,
};
pub use conversation::{CONVERSATIONS_NAMESPACE, Conversation, RUNS_NAMESPACE, Run, RunStatus};
pub use error::{AgentError, AgentErrorKind, GuardTarget, Result};
pub use extract::{EXTRACT_SYSTEM, LlmExtractor};
pub use facts::{FACT_ATTEMPTS, FACTS_SYSTEM, LlmFactExtractor, facts_schema};
pub use guard::Guard;
pub use inject::{
    Block, INJECT_FLOOR, INJECT_SHARE, Injection, MAX_BLOCK_BYTES, MEMORY_HEADER, USER_HEADER,
    as_data, key_label, memory_label,
};
pub use judge::{JUDGE_SYSTEM, LlmJudge};
pub use manager::{
    Command, MANAGER_MAX_STEPS, MANAGER_SYSTEM, Managed, Manager, ManagerAction, actor,
};
pub use message::{
    ChatRequest, ChatResponse, FinishReason, JsonSchema, Message, Role, ToolCall, ToolSpec, Usage,
};
pub use provider::{Provider, ProviderConfig, ProviderKind};
pub use tool::Tool;

/// The README's Rust examples, compiled as doctests so they keep up with the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
