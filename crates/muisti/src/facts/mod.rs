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
//!   proposes, deterministic code decides** ([`Engine::add_messages`]): each candidate is a
//!   declarative write, so the declarative rules say what happens (user-stated beats
//!   learned; a learned write carries a confidence and stops at the confirmation gate; a
//!   restatement or a new value for the same thing supersedes in place, its history kept).
//!   A retraction ("I don't live in Lisbon anymore") deletes the entry it names, only when
//!   the user said it, and the entry's history keeps its text.
//!
//! Each result is reported as mem0 does (`ADD`, `UPDATE`, `DELETE`, `NONE`), with
//! `CONFIRMATION_REQUIRED` for a learned fact waiting at the gate.

mod offline;
mod queue;

pub use offline::OfflineExtractor;
pub use queue::{Debounce, ExtractionQueue};

use std::sync::Arc;

use muisti_core::{
    Category, Error, Locator, MemoryId, MemoryScope, Namespace, Owner, Put, Result, Source,
    Timestamp, WriteStatus, text::query_terms,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::Engine;
use crate::declarative::Outcome;

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

/// What [`Engine::add_messages`] is asked to do.
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
    /// What it cost.
    pub usage: ExtractUsage,
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

/// The answer of [`Engine::add_messages`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AddReport {
    /// One per fact (or message), in order.
    pub results: Vec<FactResult>,
    /// Which extractor read the messages (none without inference).
    pub extractor: Option<String>,
    /// Model calls and tokens used.
    pub usage: ExtractUsage,
}

impl Engine {
    /// The same engine with `extractor` reading facts for [`Engine::add_messages`] (the
    /// default is the offline [`OfflineExtractor`]).
    pub fn with_fact_extractor(&self, extractor: Arc<dyn FactExtractor>) -> Self {
        Self {
            fact_extractor: Some(extractor),
            ..self.clone()
        }
    }

    /// The extractor [`Engine::add_messages`] uses.
    pub fn fact_extractor(&self) -> Arc<dyn FactExtractor> {
        self.fact_extractor
            .clone()
            .unwrap_or_else(|| Arc::new(OfflineExtractor))
    }

    /// Remembers a conversation: each message as said (`infer = false`), or the facts the
    /// extractor finds in it, each decided by the declarative rules (module docs).
    pub fn add_messages(&self, req: &AddRequest) -> Result<AddReport> {
        req.validate()?;
        let _span = tracing::info_span!("memory.add_messages", infer = req.infer).entered();
        if !req.infer {
            return self.store_messages(req);
        }
        let known: Vec<String> = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        let extractor = self.fact_extractor();
        let extraction =
            extractor
                .extract(&req.messages, &known)
                .map_err(|e| Error::Unavailable {
                    target: extractor.name().to_owned(),
                    reason: e.0,
                })?;
        self.add_candidates(req, extraction, extractor.name())
    }

    /// Decides what becomes of each candidate an extractor (named `extractor`) found in
    /// `req`'s messages ([`screen`]ed first): the second half of
    /// [`Engine::add_messages`], for a caller that ran the extractor itself. One result
    /// per screened candidate, in order.
    pub fn add_candidates(
        &self,
        req: &AddRequest,
        extraction: Extraction,
        extractor: &str,
    ) -> Result<AddReport> {
        req.validate()?;
        let candidates = screen(&req.messages, extraction.candidates);
        let mut results = Vec::with_capacity(candidates.len());
        for c in candidates {
            results.push(self.decide(req, &c)?);
        }
        Ok(AddReport {
            results,
            extractor: Some(extractor.to_owned()),
            usage: extraction.usage,
        })
    }

    fn store_messages(&self, req: &AddRequest) -> Result<AddReport> {
        let now = self.core.clock.now();
        let mut puts = Vec::new();
        let mut said = Vec::new();
        // What was said: system prompts and tool results are no memory of the user's.
        for m in req
            .messages
            .iter()
            .filter(|m| matches!(m.role.as_str(), "user" | "assistant"))
        {
            let mut put = Put::new(
                self.partition(&req.namespace),
                None,
                json!(m.content.trim()),
            );
            put.category = Category::Conversation;
            put.owner = owner(req);
            put.source = if m.is_assistant() {
                Source::AgentLearned
            } else {
                Source::UserStated
            };
            put.metadata.insert("role".into(), json!(m.role));
            put.metadata.insert("speaker".into(), json!(m.speaker()));
            put.valid_from = Some(m.created_at.unwrap_or(now));
            said.push((m.speaker().to_owned(), put.source.clone(), put.valid_from));
            puts.push(put);
        }
        // One at a time: a message already stored for this owner is found, not repeated.
        let written = puts
            .into_iter()
            .map(|p| self.remember(p))
            .collect::<Result<Vec<_>>>()?;
        let results = written
            .into_iter()
            .zip(said)
            .map(|(w, (speaker, source, at))| FactResult {
                id: w.memory.id,
                memory: w.memory.text().into_owned(),
                event: if w.status == WriteStatus::Deduplicated {
                    FactEvent::None
                } else {
                    FactEvent::Add
                },
                previous_memory: None,
                kind: w.memory.category.clone(),
                speaker,
                source,
                confidence: None,
                at,
            })
            .collect();
        Ok(AddReport {
            results,
            extractor: None,
            usage: ExtractUsage::default(),
        })
    }

    /// What one candidate becomes: a declarative write (added, superseding, unchanged, or
    /// stopped at the gate), or a retraction.
    fn decide(&self, req: &AddRequest, c: &Candidate) -> Result<FactResult> {
        let said = &req.messages[c.message];
        let (source, confidence) = source_of(said, c);
        let mut result = FactResult {
            id: MemoryId::generate(),
            memory: c.text.clone(),
            event: FactEvent::None,
            previous_memory: None,
            kind: c.kind.clone(),
            speaker: said.speaker().to_owned(),
            source: source.clone(),
            confidence,
            at: c.at,
        };
        if c.retract {
            return self.retract(req, c, source, result);
        }
        let mut put = Put::new(self.partition(&req.namespace), None, json!(c.text));
        put.scope = MemoryScope::Declarative;
        put.category = c.kind.clone();
        put.owner = owner(req);
        put.source = source;
        put.confidence = confidence;
        put.valid_from = c.at;
        put.metadata.insert("speaker".into(), json!(said.speaker()));
        put.metadata.insert("extracted".into(), json!(true));
        // A learned fact the user's word already answers is not put to the user again.
        if put.source == Source::AgentLearned
            && let Some(winner) = self.declarative().declarative_winner(&put)?
        {
            result.id = winner.id;
            result.previous_memory = Some(winner.text().into_owned());
            return Ok(result);
        }
        match self.declarative().declare(put) {
            Ok(d) => {
                result.id = d.memory.id;
                result.event = match d.outcome {
                    Outcome::Added => FactEvent::Add,
                    Outcome::Superseded => FactEvent::Update,
                    Outcome::Unchanged => FactEvent::None,
                };
                result.previous_memory = match d.outcome {
                    Outcome::Superseded => d.replaced,
                    Outcome::Unchanged => Some(d.memory.text().into_owned()),
                    Outcome::Added => None,
                };
                Ok(result)
            }
            Err(Error::ConfirmationRequired(p)) => {
                result.id = p.id;
                result.event = FactEvent::ConfirmationRequired;
                result.previous_memory = p.supersedes.map(|s| s.content);
                Ok(result)
            }
            Err(e) => Err(e),
        }
    }

    /// A retraction: the user's active entry that holds most of its words (at least
    /// [`RETRACT_OVERLAP`]) is deleted, its history kept. Only the user retracts: an
    /// assistant's retraction, or one that names no entry, changes nothing.
    fn retract(
        &self,
        req: &AddRequest,
        c: &Candidate,
        source: Source,
        mut result: FactResult,
    ) -> Result<FactResult> {
        let entries = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?;
        let Some((entry, _)) = entries
            .iter()
            .map(|m| (m, retract_overlap(&c.text, &m.text())))
            .filter(|(_, o)| *o >= RETRACT_OVERLAP)
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(result);
        };
        result.id = entry.id;
        result.kind = entry.category.clone();
        result.previous_memory = Some(entry.text().into_owned());
        if source != Source::UserStated {
            return Ok(result);
        }
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: entry.id,
        };
        if self.forget(&at)? {
            result.event = FactEvent::Delete;
        }
        Ok(result)
    }
}

fn owner(req: &AddRequest) -> Owner {
    Owner {
        user_id: Some(req.user_id.clone()),
        agent_id: req.agent_id.clone(),
        session_id: req.session_id.clone(),
    }
}

/// Who a candidate's source is: the user's own words are user-stated; what the assistant
/// said, or what an extractor inferred (it gave a confidence), is learned, with that
/// confidence.
fn source_of(said: &ChatMessage, c: &Candidate) -> (Source, Option<u8>) {
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
/// the same messages (the user's word is the one kept).
pub fn screen(messages: &[ChatMessage], candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut kept: Vec<Candidate> = Vec::new();
    for mut c in candidates {
        c.text = c.text.trim().to_owned();
        let Some(m) = messages.get(c.message) else {
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
            continue;
        }
        let repeat = kept.iter().any(|k| {
            k.retract == c.retract
                && (k.text.eq_ignore_ascii_case(&c.text)
                    || (m.is_assistant()
                        && !messages[k.message].is_assistant()
                        && retract_overlap(&c.text, &k.text) >= RETRACT_OVERLAP))
        });
        if !repeat {
            kept.push(c);
        }
    }
    kept
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
