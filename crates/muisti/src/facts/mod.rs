//! Memory from conversations (mem0's `add(messages, infer)`), in the engine over the store
//! contract, so every backend carries it.
//!
//! * `infer = false`: each user and assistant message is stored as it was said, one memory
//!   per message (its role and speaker in the metadata, its time as `valid_from`; system
//!   prompts and tool results are not stored).
//! * `infer = true`: a [`FactExtractor`] (the offline [`OfflineExtractor`], or a model
//!   through `muisti_agent::LlmFactExtractor`) reads the messages and proposes
//!   [`Candidate`]s: a text, its type, the message that states it (attribution), its time
//!   resolved against the message's date, whether it retracts something. **The model
//!   proposes, deterministic code decides** ([`Engine::add_messages`](crate::Engine::add_messages)):
//!   a fact (family, pets, home, work, health, plans) becomes a long-term memory of the
//!   user, recalled by relevance: added, folded into the memory that already says it, and
//!   marking superseded the memory it replaces (a new job, a move: the rule every write of a
//!   memory follows). A rule or a preference the user states is a declarative entry (in
//!   every prompt), so the declarative rules decide it (user-stated beats learned; a
//!   learned one carries a confidence and stops at the confirmation gate; a restatement or
//!   a new value for the same thing supersedes in place, its history kept). A retraction
//!   ("I don't live in Lisbon anymore") ends what it names, only when the user said it: an
//!   entry is deleted, a long-term memory superseded (kept with its dates).
//!
//! Each result is reported as mem0 does (`ADD`, `UPDATE`, `DELETE`, `NONE`), with
//! `CONFIRMATION_REQUIRED` for a learned entry waiting at the gate; what was said and became
//! no memory is listed beside, with why ([`Skipped`]).

mod offline;
mod queue;

pub use muisti_lang::facts::Skip;
pub use offline::OfflineExtractor;
pub use queue::{Debounce, ExtractionQueue, Learner};

use muisti_core::{
    Category, Error, MemoryId, Namespace, Owner, Result, Source, Timestamp, text::query_terms,
};
use serde::{Deserialize, Serialize};

/// Most messages one call reads.
pub const MAX_MESSAGES: usize = 200;
/// Longest message, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// Longest fact a candidate may state, in characters (longer ones are dropped).
pub const MAX_FACT_CHARS: usize = 500;
/// The confidence of a fact the assistant stated when the extractor gives none.
pub const ASSISTANT_CONFIDENCE: u8 = 60;
/// How much of a retraction's words an entry must hold to be the one it retracts.
pub const RETRACT_OVERLAP: f64 = 0.6;

/// One message of a conversation, as a caller sends it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// What was said.
    pub content: String,
    /// Who said it, when the conversation has several people (a speaker's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When it was said (relative times in it are resolved against this; default: now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

impl ChatMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_owned(),
            content: content.into(),
            name: None,
            created_at: None,
        }
    }

    /// Whether the assistant said it.
    pub fn is_assistant(&self) -> bool {
        self.role == "assistant"
    }

    /// Who said it: the name, else the role.
    pub fn speaker(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.role)
    }
}

/// What [`Engine::add_messages`](crate::Engine::add_messages) is asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct AddRequest {
    /// Where the memories go.
    pub namespace: Namespace,
    /// Whose they are (required: facts are per user).
    pub user_id: String,
    /// The agent in the conversation.
    pub agent_id: Option<String>,
    /// The conversation (stored messages carry it).
    pub session_id: Option<String>,
    /// The messages, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Extract facts (true) or store each message as said (false).
    pub infer: bool,
}

impl AddRequest {
    /// A request for `user_id`'s memory in the `default` namespace.
    pub fn new(user_id: impl Into<String>, messages: Vec<ChatMessage>, infer: bool) -> Self {
        Self {
            namespace: Namespace::default_ns(),
            user_id: user_id.into(),
            agent_id: None,
            session_id: None,
            messages,
            infer,
        }
    }

    /// The request that learns from one exchange of a chat (the agent's turn, the proxy's
    /// completion): the user's message and the answer (when it says anything), both said
    /// at `at`, read for facts. What the assistant says of the user is learned, not the
    /// user's word (see the module docs), so a reply cannot put words in the user's mouth.
    pub fn exchange(
        user_id: impl Into<String>,
        session_id: Option<String>,
        message: &str,
        answer: &str,
        at: Timestamp,
    ) -> Self {
        let mut messages = vec![ChatMessage::new("user", message)];
        if !answer.trim().is_empty() {
            messages.push(ChatMessage::new("assistant", answer));
        }
        for m in &mut messages {
            m.created_at = Some(at);
        }
        Self {
            session_id,
            ..Self::new(user_id, messages, true)
        }
    }

    /// The rules of a request, checked before any model or store is asked: the one check
    /// every face calls.
    pub fn validate(&self) -> Result<()> {
        let user = Some(self.user_id.clone());
        muisti_core::check_owner_field("user_id", &user)?;
        muisti_core::check_owner_field("agent_id", &self.agent_id)?;
        muisti_core::check_owner_field("session_id", &self.session_id)?;
        if self.namespace.is_reserved() {
            return Err(Error::invalid(
                "namespace",
                "namespaces starting with _muisti. are the engine's own",
            ));
        }
        check_messages(
            self.messages
                .iter()
                .map(|m| (m.role.as_str(), m.content.as_str(), &m.name)),
            |i, role| {
                if matches!(role, "user" | "assistant" | "system" | "tool") {
                    Ok(())
                } else {
                    Err(Error::invalid(
                        "messages",
                        format!(
                            "message {i}: role {role:?} is not user, assistant, system or tool"
                        ),
                    ))
                }
            },
        )
    }
}

/// The rules every caller-given list of messages shares, on every route that takes them
/// (extraction, appending to a conversation): 1 to [`MAX_MESSAGES`] messages, each with text
/// that is not blank and at most [`MAX_MESSAGE_BYTES`], and a speaker name as owner fields
/// are; `role` holds each message's role to its route's rule. Items: (role, text, name).
pub(crate) fn check_messages<'a>(
    messages: impl ExactSizeIterator<Item = (&'a str, &'a str, &'a Option<String>)>,
    role: impl Fn(usize, &str) -> Result<()>,
) -> Result<()> {
    if messages.len() == 0 {
        return Err(Error::invalid("messages", "give at least one message"));
    }
    if messages.len() > MAX_MESSAGES {
        return Err(Error::invalid(
            "messages",
            format!("at most {MAX_MESSAGES} messages per call"),
        ));
    }
    for (i, (r, content, name)) in messages.enumerate() {
        role(i, r)?;
        if content.trim().is_empty() {
            return Err(Error::invalid("messages", format!("message {i} is empty")));
        }
        if content.len() > MAX_MESSAGE_BYTES {
            return Err(Error::invalid(
                "messages",
                format!("message {i} is longer than {MAX_MESSAGE_BYTES} bytes"),
            ));
        }
        muisti_core::check_owner_field("name", name).map_err(|_| {
            Error::invalid(
                "messages",
                format!("message {i}: name must be 1-256 characters without control characters"),
            )
        })?;
    }
    Ok(())
}

/// A fact an extractor proposes. The engine decides what becomes of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The fact, in the first person of the user ("I live in Porto").
    pub text: String,
    /// `fact`, `preference` or `rule`.
    pub kind: Category,
    /// The message that states it (its index in the request): who said it.
    pub message: usize,
    /// A statement that a stored entry no longer holds (`text` is what it retracts).
    #[serde(default)]
    pub retract: bool,
    /// The extractor's confidence, 0-100, for a fact it inferred rather than read (a fact
    /// the assistant stated takes [`ASSISTANT_CONFIDENCE`] when none is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// When it became true, resolved against the message's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

/// Model calls and tokens one operation used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractUsage {
    /// Model calls (retries included; 0 for the offline extractor).
    pub calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for ExtractUsage {
    fn add_assign(&mut self, rhs: Self) {
        self.calls += rhs.calls;
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// What an extractor found in a conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extraction {
    /// The candidate facts, in the order stated.
    pub candidates: Vec<Candidate>,
    /// What it read and kept no fact of, and why (an extractor that cannot tell may list
    /// nothing).
    pub skipped: Vec<Skipped>,
    /// What it cost.
    pub usage: ExtractUsage,
}

/// Something said that became no memory, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The message it was in (its index in the request).
    pub message: usize,
    /// What was said (the clause, or the candidate's text).
    pub text: String,
    /// Why: a question, a request, chit-chat, a passing state, no fact found, or (for a
    /// candidate) a duplicate of another in the same messages.
    pub reason: SkipReason,
}

/// Why something said became no memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SkipReason {
    /// The extractor's reading of it.
    Read(Skip),
    /// A candidate dropped before any decision ([`screen`]).
    Screened(Screened),
}

impl SkipReason {
    /// The reason as the wire writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Read(s) => s.as_str(),
            SkipReason::Screened(Screened::Duplicate) => "duplicate",
            SkipReason::Screened(Screened::Invalid) => "invalid",
        }
    }
}

/// Why [`screen`] dropped a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Screened {
    /// The same fact again in the same messages (or the assistant echoing the user).
    Duplicate,
    /// Not a fact the engine takes: from a system or tool message, empty, too long, or of
    /// another type than fact, preference or rule.
    Invalid,
}

/// An extractor failed (the model could not be reached, or never answered in the shape
/// asked for).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("fact extractor: {0}")]
pub struct FactExtractError(pub String);

/// Reads candidate facts from a conversation.
pub trait FactExtractor: Send + Sync {
    /// The candidates `messages` state. `known` is what the user's memory already holds
    /// (their active declarative entries), so a model can tell a change from news.
    fn extract(
        &self,
        messages: &[ChatMessage],
        known: &[String],
    ) -> std::result::Result<Extraction, FactExtractError>;

    /// A name for logs and reports.
    fn name(&self) -> &str;
}

/// What became of a fact (mem0's events, and the confirmation gate's answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FactEvent {
    /// A new memory.
    Add,
    /// An existing entry now says this (same id; its old text in its history).
    Update,
    /// An entry retracted (deleted; its history keeps its text).
    Delete,
    /// Nothing changed (already known, or the entry it conflicts with wins).
    None,
    /// A learned fact waits for the user's confirmation (a proposal).
    ConfirmationRequired,
}

impl FactEvent {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            FactEvent::Add => "ADD",
            FactEvent::Update => "UPDATE",
            FactEvent::Delete => "DELETE",
            FactEvent::None => "NONE",
            FactEvent::ConfirmationRequired => "CONFIRMATION_REQUIRED",
        }
    }
}

/// What was done with one fact (or one message, without inference).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FactResult {
    /// The memory it concerns (for a proposal, the proposal's id).
    pub id: MemoryId,
    /// The text stored (or proposed, or retracted).
    pub memory: String,
    /// What happened.
    pub event: FactEvent,
    /// For an update or a delete, the text the entry had before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
    /// The memory that held `previous_memory`: for an update of a long-term memory, the
    /// one superseded (kept, linked to `id`); else `id` itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<MemoryId>,
    /// The entry's type (`fact`, `preference`, `rule`; `conversation` for a message).
    pub kind: Category,
    /// Who said it (a name, else the role).
    pub speaker: String,
    /// `user_stated` or `agent_learned`.
    pub source: Source,
    /// A learned fact's confidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// When it became true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
}

/// The answer of [`Engine::add_messages`](crate::Engine::add_messages).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AddReport {
    /// One per fact (or message), in order.
    pub results: Vec<FactResult>,
    /// What was said and became no memory, and why (with inference).
    pub skipped: Vec<Skipped>,
    /// Which extractor read the messages (none without inference).
    pub extractor: Option<String>,
    /// Model calls and tokens used.
    pub usage: ExtractUsage,
}

pub(crate) fn owner(req: &AddRequest) -> Owner {
    Owner {
        user_id: Some(req.user_id.clone()),
        agent_id: req.agent_id.clone(),
        session_id: req.session_id.clone(),
    }
}

/// Who a candidate's source is: the user's own words are user-stated; what the assistant
/// said, or what an extractor inferred (it gave a confidence), is learned, with that
/// confidence.
pub(crate) fn source_of(said: &ChatMessage, c: &Candidate) -> (Source, Option<u8>) {
    match (said.is_assistant(), c.confidence) {
        (false, None) => (Source::UserStated, None),
        (false, Some(conf)) => (Source::AgentLearned, Some(conf.min(100))),
        (true, conf) => (
            Source::AgentLearned,
            Some(conf.unwrap_or(ASSISTANT_CONFIDENCE).min(100)),
        ),
    }
}

/// The candidates the engine acts on: each names a message of the request that is the
/// user's or the assistant's, states a declarative type and a text of at most
/// [`MAX_FACT_CHARS`]; repeats go, and so does the assistant echoing what the user said in
/// the same messages (the user's word is the one kept). What goes is returned beside, with
/// why.
pub fn screen(
    messages: &[ChatMessage],
    candidates: Vec<Candidate>,
) -> (Vec<Candidate>, Vec<Skipped>) {
    let mut kept: Vec<Candidate> = Vec::new();
    let mut dropped = Vec::new();
    for mut c in candidates {
        c.text = c.text.trim().to_owned();
        let drop = |c: Candidate, why| Skipped {
            message: c.message,
            text: c.text,
            reason: SkipReason::Screened(why),
        };
        let Some(m) = messages.get(c.message) else {
            dropped.push(drop(c, Screened::Invalid));
            continue;
        };
        if !matches!(m.role.as_str(), "user" | "assistant")
            || c.text.is_empty()
            || c.text.chars().count() > MAX_FACT_CHARS
            || !matches!(
                c.kind,
                Category::Fact | Category::Preference | Category::Rule
            )
        {
            dropped.push(drop(c, Screened::Invalid));
            continue;
        }
        let repeat = kept.iter().any(|k| {
            k.retract == c.retract
                && (k.text.eq_ignore_ascii_case(&c.text)
                    || (m.is_assistant()
                        && !messages[k.message].is_assistant()
                        && retract_overlap(&c.text, &k.text) >= RETRACT_OVERLAP))
        });
        if repeat {
            dropped.push(drop(c, Screened::Duplicate));
        } else {
            kept.push(c);
        }
    }
    (kept, dropped)
}

/// The share of `said`'s content words (stemmed, stop words out) that `entry` holds.
pub fn retract_overlap(said: &str, entry: &str) -> f64 {
    let said = query_terms(said);
    if said.is_empty() {
        return 0.0;
    }
    let entry = query_terms(entry);
    let shared = said.iter().filter(|t| entry.contains(t)).count();
    shared as f64 / said.len() as f64
}
