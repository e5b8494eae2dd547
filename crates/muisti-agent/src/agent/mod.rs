//! The agent: recall, guards, the model and its tools, conversations and durable runs.

mod builder;
mod notes;
mod runs;
mod stream;

pub use builder::AgentBuilder;
pub use notes::{MAX_NOTE_BYTES, MAX_NOTES_SHOWN, NOTE_TOOL};
pub use stream::TokenStream;

use std::{
    sync::{Arc, mpsc},
    thread::{self, JoinHandle},
    time::Duration,
};

use muisti::{
    Engine, Event, Filter, MemoryId, MemoryScope, Namespace, Observer, PrivacyStore, RecallRequest,
    Store, Timestamp, Ttl,
    facts::{AddRequest, ExtractionQueue},
};
use serde::Serialize;
use tracing::{info_span, warn};

use crate::{
    AgentError, ChatRequest, Conversation, FinishReason, GuardTarget, Message, Provider, Result,
    Role, Run, RunStatus, Tool, ToolCall, Usage,
    conversation::{CONVERSATIONS_NAMESPACE, RUNS_NAMESPACE},
    guard::{self, Guard},
    inject::{Block, Injection, MAX_BLOCK_BYTES, memory_label},
};

/// Longest message the agent accepts, in bytes (a conversation holding it must still fit
/// one stored record).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Most bytes of earlier messages sent with a message (so that a durable run, which holds
/// them, still fits one stored record).
pub const HISTORY_BYTES: usize = 384 * 1024;

/// What the model answered to one message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reply {
    /// The answer.
    pub text: String,
    /// Keys of the memories injected into the prompt, in order.
    pub recalled: Vec<String>,
    /// Tool calls the model made on the way, all of which were run.
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used by all the model calls.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish: FinishReason,
    /// The durable run's id, when durable runs are on.
    pub run_id: Option<String>,
}

/// One turn of a conversation: the reply and the conversation with both messages added.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// The reply.
    pub reply: Reply,
    /// The updated conversation: pass it to the next call.
    pub conversation: Conversation,
}

struct Inner {
    memory: Option<Engine>,
    provider: Arc<dyn Provider>,
    long_term_memory: usize,
    guards: Vec<Guard>,
    tools: Vec<Tool>,
    /// Whether the model gets the `note` tool in conversations.
    working_notes: bool,
    /// Most graph facts in a prompt (0: none).
    graph_context: usize,
    system: Option<String>,
    durable_runs: bool,
    run_retention: Ttl,
    max_steps: usize,
    history: usize,
    injection: Injection,
    as_of: Option<muisti::Timestamp>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    filter: Filter,
    /// Whether conversations are stored (`AgentBuilder::store_messages`).
    store_messages: bool,
    /// Where exchanges are gathered to learn from (`AgentBuilder::learn`).
    learning: Option<Arc<ExtractionQueue>>,
}

/// An agent: a model with memory. Every message is sent with the memories that matter for
/// it, recalled from the `default` namespace. Cheap to clone; blocking, like the store.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Inner>,
}

type OnText<'a> = Option<&'a mut dyn FnMut(&str)>;

fn ns(name: &str) -> Result<Namespace> {
    Ok(Namespace::new(name)?)
}

impl Agent {
    /// The memory, wrapped in the privacy store when messages are not stored.
    pub fn memory(&self) -> Option<&Engine> {
        self.inner.memory.as_ref()
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.inner.provider
    }

    /// Sends one message (no conversation) and returns the reply.
    pub fn send(&self, message: &str) -> Result<Reply> {
        self.exchange(&[], message, None, None)
    }

    /// Sends one message with the answer streamed: `on_text` gets each piece as it arrives.
    pub fn stream_with(&self, message: &str, mut on_text: impl FnMut(&str)) -> Result<Reply> {
        self.exchange(&[], message, None, Some(&mut on_text))
    }

    /// Sends one message and returns its answer as a stream of text pieces, produced on a
    /// background thread. [`TokenStream::finish`] gives the whole reply or the error.
    pub fn stream(&self, message: &str) -> TokenStream {
        let agent = self.clone();
        let message = message.to_owned();
        TokenStream::spawn(move |tx| {
            agent.stream_with(&message, |t| {
                let _ = tx.send(t.to_owned());
            })
        })
    }

    /// Starts a conversation with a new ULID id. It is stored with its first exchange
    /// (until then [`Agent::conversation_by_id`] does not find it).
    pub fn conversation(&self) -> Result<Conversation> {
        Ok(new_conversation(MemoryId::generate().to_string()))
    }

    /// Resumes a stored conversation. An id that is not a ULID is invalid input; an id with
    /// no conversation is [`AgentError::NotFound`]; a conversation of another user than the
    /// agent's recall filter names is a conflict (`conflicting_fields`).
    pub fn conversation_by_id(&self, id: &str) -> Result<Conversation> {
        let id = MemoryId::parse(id.trim())?.to_string();
        let not_found = || AgentError::NotFound {
            what: "conversation",
            id: id.clone(),
        };
        let memory = self.inner.memory.as_ref().ok_or_else(not_found)?;
        let info = memory.conversations().info(&id)?.ok_or_else(not_found)?;
        // A conversation continued keeps its user: an agent of another user may not.
        if let (Some(user), Some(owner)) = (&self.inner.filter.user_id, &info.user_id)
            && user != owner
        {
            return Err(AgentError::Memory(muisti::Error::conflicting(
                "user_id",
                "the conversation is another user's: continue it with its user, or start one",
            )));
        }
        let messages = memory
            .conversations()
            .messages(&id)?
            .into_iter()
            .map(|m| message_from(m).map_err(|e| corrupted(CONVERSATIONS_NAMESPACE, &id, e)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Conversation {
            turns: messages.iter().filter(|m| m.role == Role::User).count() as u64,
            id,
            messages,
            created_at: info.created_at,
            updated_at: info.updated_at,
        })
    }

    /// The seed's behaviour: the stored conversation, or a new one (with a new id) when
    /// there is none under `id`. Compare the ids to tell which.
    pub fn conversation_or_new(&self, id: &str) -> Result<Conversation> {
        match self.conversation_by_id(id) {
            Ok(c) => Ok(c),
            Err(AgentError::NotFound { .. }) => self.conversation(),
            Err(e) if e.kind() == crate::AgentErrorKind::InvalidInput => self.conversation(),
            Err(e) => Err(e),
        }
    }

    /// Ends a conversation: its scratch and short-term memories are deleted (its messages
    /// stay). Returns how many memories went.
    pub fn end_conversation(&self, id: &str) -> Result<u64> {
        match &self.inner.memory {
            Some(memory) => Ok(memory.end_conversation(id)?),
            None => Ok(0),
        }
    }

    /// Sends a message in a conversation; returns the reply and the conversation with the
    /// message and the reply added (and stored).
    pub fn send_in_conversation(&self, conversation: &Conversation, message: &str) -> Result<Turn> {
        self.turn(conversation, message, None)
    }

    /// [`Agent::send_in_conversation`] with the answer streamed to `on_text`.
    pub fn stream_in_conversation(
        &self,
        conversation: &Conversation,
        message: &str,
        mut on_text: impl FnMut(&str),
    ) -> Result<Turn> {
        self.turn(conversation, message, Some(&mut on_text))
    }

    fn turn(&self, conversation: &Conversation, message: &str, on_text: OnText) -> Result<Turn> {
        let reply = self.exchange(
            &conversation.messages,
            message,
            Some(&conversation.id),
            on_text,
        )?;
        let conversation = self.append_exchange(conversation, message, &reply.text)?;
        // The turn is over: its scratch memories go (a failure is logged; the reply stands).
        if let Some(memory) = &self.inner.memory
            && let Err(e) = memory.end_turn(&conversation.id)
        {
            warn!(kind = %e.kind(), error = %e, "scratch memories of the turn were not cleared");
        }
        Ok(Turn {
            reply,
            conversation,
        })
    }

    /// Appends an exchange to a conversation: two message records (never a rewrite of the
    /// earlier ones). When another writer appended since `conv` was read, the exchange goes
    /// after theirs and the conversation returned is the stored one, so neither is lost.
    fn append_exchange(
        &self,
        conv: &Conversation,
        message: &str,
        reply: &str,
    ) -> Result<Conversation> {
        let mut latest = conv.clone();
        push_exchange(&mut latest, message, reply);
        let Some(memory) = self
            .inner
            .memory
            .as_ref()
            .filter(|_| self.inner.store_messages)
        else {
            return Ok(latest);
        };
        let owner = muisti::Owner {
            user_id: self.inner.filter.user_id.clone(),
            agent_id: self.inner.filter.agent_id.clone(),
            session_id: None,
        };
        let exchange = latest.messages[latest.messages.len() - 2..]
            .iter()
            .map(message_to)
            .collect();
        let stored = memory.conversations().append(&conv.id, &owner, exchange)?;
        let others_wrote = stored
            .first()
            .is_some_and(|m| m.seq != conv.messages.len() as u64);
        if others_wrote {
            return self.conversation_by_id(&conv.id);
        }
        Ok(latest)
    }

    /// Guards, recall, and the run through the model.
    fn exchange(
        &self,
        history: &[Message],
        message: &str,
        conversation_id: Option<&str>,
        on_text: OnText,
    ) -> Result<Reply> {
        if message.trim().is_empty() {
            return Err(AgentError::invalid("message", "must not be empty"));
        }
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(AgentError::invalid(
                "message",
                format!("{} bytes; the limit is {MAX_MESSAGE_BYTES}", message.len()),
            ));
        }
        let _span = info_span!(
            "agent.send",
            provider = self.inner.provider.name(),
            model = self.inner.provider.model()
        )
        .entered();
        let block = self.context_in(message, conversation_id)?;
        // The latest `history` messages within HISTORY_BYTES, starting at a user message
        // (Anthropic requires the first message to be the user's).
        let mut start = history.len().saturating_sub(self.inner.history);
        let mut bytes: usize = history[start..].iter().map(|m| m.content.len()).sum();
        while bytes > HISTORY_BYTES && start < history.len() {
            bytes -= history[start].content.len();
            start += 1;
        }
        while history.get(start).is_some_and(|m| m.role != Role::User) {
            start += 1;
        }
        let mut messages = history[start..].to_vec();
        messages.push(Message::user(block.prompt(message)));
        let now = Timestamp::now();
        let mut run = Run {
            id: MemoryId::generate().to_string(),
            status: RunStatus::Running,
            conversation_id: conversation_id.map(str::to_owned),
            message: message.to_owned(),
            recalled: block.keys,
            messages,
            steps: 0,
            tool_calls: Vec::new(),
            reply: None,
            error: None,
            usage: Usage::default(),
            created_at: now,
            updated_at: now,
        };
        self.save_run(&mut run)?;
        let reply = self.drive(&mut run, on_text)?;
        self.learn_from(message, &reply.text, conversation_id);
        Ok(reply)
    }

    /// Gathers an exchange for learning ([`AgentBuilder::learn`]); returns at once.
    fn learn_from(&self, message: &str, answer: &str, conversation_id: Option<&str>) {
        let (Some(queue), Some(memory), Some(user), true) = (
            &self.inner.learning,
            &self.inner.memory,
            &self.inner.filter.user_id,
            self.inner.store_messages,
        ) else {
            return;
        };
        let mut req = AddRequest::exchange(
            user.clone(),
            conversation_id.map(str::to_owned),
            message,
            answer,
            Timestamp::now(),
        );
        req.agent_id = self.inner.filter.agent_id.clone();
        queue.push(memory, req);
    }

    /// The memory block for `message`, as every prompt of this agent gets it: the
    /// message's guards, the recall (the user's declarative entries first), the block's
    /// guards, and the `memory.recalled` event. What the OpenAI-compatible proxy puts into
    /// a request.
    pub fn context(&self, message: &str) -> Result<Block> {
        self.context_in(message, None)
    }

    fn context_in(&self, message: &str, conversation_id: Option<&str>) -> Result<Block> {
        guard::check(&self.inner.guards, GuardTarget::Message, message)?;
        let block = self.recall(message, conversation_id);
        if !block.is_empty() {
            guard::check(&self.inner.guards, GuardTarget::Memory, &block.text)?;
            if let Some(m) = &self.inner.memory {
                m.notify(Event::Recalled {
                    partition: m.partition(&Namespace::default_ns()),
                    keys: block
                        .keys
                        .iter()
                        .filter_map(|k| muisti::Key::new(k.as_str()).ok())
                        .collect(),
                    count: block.keys.len(),
                    bytes: block.text.len(),
                });
            }
        }
        Ok(block)
    }

    /// The memories to inject: the user's declarative entries, the conversation's
    /// short-term notes, then recall's best hits of `default` as [`Injection`] admits them,
    /// at most `long_term_memory` (no conversation's working state: scratch and short-term
    /// memories come only as this conversation's notes). A failing recall is logged and
    /// gives an empty block.
    fn recall(&self, message: &str, conversation_id: Option<&str>) -> Block {
        let n = self.inner.long_term_memory;
        let Some(memory) = self.inner.memory.as_ref().filter(|_| n > 0) else {
            return Block::default();
        };
        let mut req = RecallRequest::new(Namespace::default_ns(), message, n);
        req.filter = self.inner.filter.clone();
        req.as_of = self.inner.as_of;
        // A user's block holds the tenant's shared memories beside the user's own.
        req.include_shared = true;
        // A user's memories are theirs alone: an agent acting for no user is given only
        // the memories of no user.
        req.filter.without_user = req.filter.user_id.is_none();
        // The user's declarative entries come first, every turn, whatever the message.
        let declarative = match &req.filter.user_id {
            Some(user) => memory
                .declarative()
                .declarative_entries(&req.namespace, user)
                .unwrap_or_else(|e| {
                    warn!(kind = %e.kind(), error = %e, "declarative entries could not be read");
                    Vec::new()
                }),
            None => Vec::new(),
        };
        match memory.recall(&req) {
            Ok(hits) => {
                let mut entries: Vec<(String, String, String)> = declarative
                    .iter()
                    .map(|m| (m.key.to_string(), memory_label(m), m.text().into_owned()))
                    .collect();
                entries.extend(
                    self.conversation_notes(conversation_id)
                        .iter()
                        .map(|m| (m.key.to_string(), "note".to_owned(), m.text().into_owned())),
                );
                entries.extend(
                    self.graph_facts(message)
                        .iter()
                        .map(|r| (r.id.to_string(), "graph".to_owned(), r.sentence())),
                );
                let hits: Vec<_> = hits
                    .into_iter()
                    .filter(|h| {
                        !matches!(
                            h.memory.scope,
                            MemoryScope::Declarative
                                | MemoryScope::Scratch
                                | MemoryScope::ShortTerm
                        )
                    })
                    .collect();
                let taken = self.inner.injection.take(hits.iter().map(|h| h.score), n);
                entries.extend(hits.iter().take(taken).map(|h| {
                    (
                        h.memory.key.to_string(),
                        memory_label(&h.memory),
                        h.memory.text().into_owned(),
                    )
                }));
                Block::build_labelled(
                    entries
                        .iter()
                        .map(|(k, l, v)| (k.as_str(), l.as_str(), v.as_str())),
                    MAX_BLOCK_BYTES,
                )
            }
            Err(e) => {
                warn!(kind = %e.kind(), error = %e, "recall failed; the message is sent without memory");
                Block::default()
            }
        }
    }

    /// The graph's current facts about what `message` names (none when off; a failing read
    /// is logged and gives none).
    fn graph_facts(&self, message: &str) -> Vec<muisti::graph::Relation> {
        let (Some(memory), n) = (&self.inner.memory, self.inner.graph_context) else {
            return Vec::new();
        };
        memory
            .graph()
            .context(self.inner.filter.user_id.as_deref(), message, n)
            .unwrap_or_else(|e| {
                warn!(kind = %e.kind(), error = %e, "graph facts could not be read");
                Vec::new()
            })
    }

    fn call_tool(&self, call: &ToolCall, conversation_id: Option<&str>) -> String {
        let _span = info_span!("agent.tool", tool = %call.name).entered();
        let builtin = match conversation_id {
            Some(id) if call.name == NOTE_TOOL && self.notes_offered(conversation_id) => {
                Some(self.write_note(id, &call.arguments))
            }
            _ => None,
        };
        let result = builtin.or_else(|| {
            self.inner
                .tools
                .iter()
                .find(|t| t.spec().name == call.name)
                .map(|tool| tool.call(&call.arguments))
        });
        match result {
            Some(result) => match result {
                Ok(out) => out,
                Err(e) => {
                    warn!(tool = %call.name, "tool failed");
                    format!("error: {e}")
                }
            },
            None => {
                warn!(tool = %call.name, "the model called an unknown tool");
                format!("error: there is no tool named {:?}", call.name)
            }
        }
    }
}

fn new_conversation(id: String) -> Conversation {
    let now = Timestamp::now();
    Conversation {
        id,
        messages: Vec::new(),
        turns: 0,
        created_at: now,
        updated_at: now,
    }
}

fn push_exchange(conv: &mut Conversation, message: &str, reply: &str) {
    conv.messages.push(Message::user(message));
    conv.messages.push(Message::assistant(reply));
    conv.turns += 1;
    conv.updated_at = Timestamp::now();
}

/// A stored message as the agent's [`Message`].
fn message_from(
    stored: muisti::conversation::StoredMessage,
) -> std::result::Result<Message, String> {
    let m = stored.message;
    let role = match m.role.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(format!(
                "message {} has the unknown role {other:?}",
                stored.seq
            ));
        }
    };
    let tool_calls = match m.extra.get("tool_calls") {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    Ok(Message {
        role,
        content: m.content,
        tool_calls,
        tool_call_id: m
            .extra
            .get("tool_call_id")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
    })
}

/// The agent's [`Message`] as a message to store.
fn message_to(m: &Message) -> muisti::conversation::NewMessage {
    let mut extra = serde_json::Map::new();
    if !m.tool_calls.is_empty()
        && let Ok(v) = serde_json::to_value(&m.tool_calls)
    {
        extra.insert("tool_calls".into(), v);
    }
    if let Some(id) = &m.tool_call_id {
        extra.insert("tool_call_id".into(), id.clone().into());
    }
    muisti::conversation::NewMessage {
        role: match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
        .to_owned(),
        content: m.content.clone(),
        name: None,
        extra,
    }
}

fn corrupted(namespace: &str, id: &str, e: impl std::fmt::Display) -> AgentError {
    AgentError::Memory(muisti::Error::Corrupted {
        location: format!("{namespace}/{id}"),
        reason: e.to_string(),
    })
}
