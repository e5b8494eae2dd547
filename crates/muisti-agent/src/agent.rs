//! The agent: recall, guards, the model and its tools, conversations and durable runs.

use std::{
    sync::{Arc, mpsc},
    thread::{self, JoinHandle},
    time::Duration,
};

use muisti::{
    Engine, Event, Filter, MemoryId, Namespace, Observer, PrivacyStore, RecallRequest, Store,
    Timestamp, Ttl,
};
use serde::Serialize;
use tracing::{info_span, warn};

use crate::{
    AgentError, ChatRequest, Conversation, FinishReason, GuardTarget, Message, Provider, Result,
    Role, Run, RunStatus, Tool, ToolCall, Usage,
    conversation::{CONVERSATIONS_NAMESPACE, RUNS_NAMESPACE},
    guard::{self, Guard},
    inject::{Block, MAX_BLOCK_BYTES},
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

enum MemorySource {
    Engine(Engine),
    Store(Arc<dyn Store>),
}

/// Builds an [`Agent`].
pub struct AgentBuilder {
    memory: Option<MemorySource>,
    provider: Option<Arc<dyn Provider>>,
    long_term_memory: usize,
    store_messages: bool,
    guards: Vec<Guard>,
    observers: Vec<Arc<dyn Observer>>,
    tools: Vec<Tool>,
    system: Option<String>,
    durable_runs: bool,
    run_retention: Duration,
    max_steps: usize,
    history: usize,
    min_similarity: f32,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    filter: Filter,
}

impl AgentBuilder {
    /// Memory through an engine (its tenant, embedder and recall settings are used).
    pub fn memory(mut self, engine: Engine) -> Self {
        self.memory = Some(MemorySource::Engine(engine));
        self
    }

    /// Memory over any store, with the default engine settings (built-in embedder).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.memory = Some(MemorySource::Store(store));
        self
    }

    /// The model.
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// How many memories are recalled per message: default 3; 0 turns recall off.
    pub fn long_term_memory(mut self, n: usize) -> Self {
        self.long_term_memory = n;
        self
    }

    /// Whether conversations (and runs) are written to memory. With `false` the memory is
    /// wrapped in a [`PrivacyStore`]: every write is dropped, while reads (recall included),
    /// forget and flush pass through, and each conversation starts empty.
    pub fn store_messages(mut self, store: bool) -> Self {
        self.store_messages = store;
        self
    }

    /// Adds a guard.
    pub fn guard(mut self, guard: Guard) -> Self {
        self.guards.push(guard);
        self
    }

    /// Adds an observer of memory events: `memory.search` for each recall, `memory.recalled`
    /// when entries are injected, and the reads and writes of conversations and runs.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// The system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Saves each run's state in the `runs` namespace so an interrupted run can be resumed
    /// with [`Agent::resume`]. Needs memory.
    pub fn durable_runs(mut self, on: bool) -> Self {
        self.durable_runs = on;
        self
    }

    /// How long a completed durable run is kept (so resuming it returns its reply);
    /// default 7 days. Unfinished runs are kept until they complete or are deleted.
    pub fn run_retention(mut self, keep: Duration) -> Self {
        self.run_retention = keep;
        self
    }

    /// Most model calls per message (each tool round is one); default 8.
    pub fn max_steps(mut self, n: usize) -> Self {
        self.max_steps = n;
        self
    }

    /// Most earlier messages of a conversation sent with each message; default 40.
    pub fn history(mut self, n: usize) -> Self {
        self.history = n;
        self
    }

    /// A memory found only by meaning (no word in common with the message) is injected when
    /// its cosine similarity to the message is at least this; default 0.35. Memories that
    /// share a word with the message always qualify.
    pub fn min_similarity(mut self, s: f32) -> Self {
        self.min_similarity = s;
        self
    }

    /// Most tokens per answer.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Which memories recall may inject (for example only one user's).
    pub fn recall_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// The agent.
    pub fn build(self) -> Result<Agent> {
        let provider = self
            .provider
            .ok_or_else(|| AgentError::invalid("provider", "an agent needs a provider"))?;
        if self.max_steps == 0 {
            return Err(AgentError::invalid("max_steps", "must be at least 1"));
        }
        if !(0.0..=1.0).contains(&self.min_similarity) {
            return Err(AgentError::invalid("min_similarity", "must be 0 to 1"));
        }
        let run_retention = Ttl::new(self.run_retention)?;
        let mut memory = match self.memory {
            None => None,
            Some(MemorySource::Engine(e)) => Some(e),
            Some(MemorySource::Store(s)) => Some(Engine::builder(s).build()?),
        };
        if self.durable_runs && memory.is_none() {
            return Err(AgentError::invalid(
                "durable_runs",
                "durable runs are saved in memory: attach one",
            ));
        }
        if let Some(m) = memory.as_mut() {
            for o in self.observers {
                *m = m.with_observer(o);
            }
            if !self.store_messages {
                *m = m.map_store(|s| Arc::new(PrivacyStore::new(s)));
            }
        }
        Ok(Agent {
            inner: Arc::new(Inner {
                memory,
                provider,
                long_term_memory: self.long_term_memory,
                guards: self.guards,
                tools: self.tools,
                system: self.system,
                durable_runs: self.durable_runs,
                run_retention,
                max_steps: self.max_steps,
                history: self.history,
                min_similarity: self.min_similarity,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
                filter: self.filter,
            }),
        })
    }
}

struct Inner {
    memory: Option<Engine>,
    provider: Arc<dyn Provider>,
    long_term_memory: usize,
    guards: Vec<Guard>,
    tools: Vec<Tool>,
    system: Option<String>,
    durable_runs: bool,
    run_retention: Ttl,
    max_steps: usize,
    history: usize,
    min_similarity: f32,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    filter: Filter,
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
    /// A builder: no memory, no provider, 3 memories per message, messages stored.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            memory: None,
            provider: None,
            long_term_memory: 3,
            store_messages: true,
            guards: Vec::new(),
            observers: Vec::new(),
            tools: Vec::new(),
            system: None,
            durable_runs: false,
            run_retention: Duration::from_secs(7 * 24 * 3600),
            max_steps: 8,
            history: 40,
            min_similarity: 0.35,
            max_tokens: None,
            temperature: None,
            filter: Filter::default(),
        }
    }

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
    /// no conversation is [`AgentError::NotFound`].
    pub fn conversation_by_id(&self, id: &str) -> Result<Conversation> {
        let id = MemoryId::parse(id.trim())?.to_string();
        let not_found = || AgentError::NotFound {
            what: "conversation",
            id: id.clone(),
        };
        let memory = self.inner.memory.as_ref().ok_or_else(not_found)?;
        let value = memory
            .kv_get(&ns(CONVERSATIONS_NAMESPACE)?, &id)?
            .ok_or_else(not_found)?;
        serde_json::from_value(value).map_err(|e| corrupted(CONVERSATIONS_NAMESPACE, &id, e))
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

    /// A saved durable run.
    pub fn run(&self, id: &str) -> Result<Run> {
        let id = MemoryId::parse(id.trim())?.to_string();
        let not_found = || AgentError::NotFound {
            what: "run",
            id: id.clone(),
        };
        let memory = self.inner.memory.as_ref().ok_or_else(not_found)?;
        let value = memory
            .kv_get(&ns(RUNS_NAMESPACE)?, &id)?
            .ok_or_else(not_found)?;
        serde_json::from_value(value).map_err(|e| corrupted(RUNS_NAMESPACE, &id, e))
    }

    /// Durable runs that have not completed (interrupted or failed), newest first: what
    /// [`Agent::resume`] can continue.
    pub fn unfinished_runs(&self) -> Result<Vec<Run>> {
        let Some(memory) = &self.inner.memory else {
            return Ok(Vec::new());
        };
        let mut runs = Vec::new();
        for (id, value) in memory.kv_all(&ns(RUNS_NAMESPACE)?)? {
            let run: Run =
                serde_json::from_value(value).map_err(|e| corrupted(RUNS_NAMESPACE, &id, e))?;
            if run.status != RunStatus::Completed {
                runs.push(run);
            }
        }
        runs.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(runs)
    }

    /// Resumes an interrupted durable run from its last saved step (tools already run are
    /// not run again). A completed run returns its saved reply. When the run belongs to a
    /// conversation, the conversation gets the message and the reply.
    pub fn resume(&self, run_id: &str) -> Result<Reply> {
        self.finish_run(run_id, None)
    }

    /// [`Agent::resume`] with the answer streamed to `on_text` (a completed run's saved
    /// reply is returned without being streamed).
    pub fn resume_stream(&self, run_id: &str, mut on_text: impl FnMut(&str)) -> Result<Reply> {
        self.finish_run(run_id, Some(&mut on_text))
    }

    fn finish_run(&self, run_id: &str, on_text: OnText) -> Result<Reply> {
        let mut run = self.run(run_id)?;
        if run.status == RunStatus::Completed {
            return Ok(reply_of(&run, FinishReason::Stop));
        }
        let reply = self.drive(&mut run, on_text)?;
        if let Some(id) = run.conversation_id.clone() {
            let conv = match self.conversation_by_id(&id) {
                Ok(conv) => conv,
                // The run was the conversation's first exchange.
                Err(AgentError::NotFound { .. }) => new_conversation(id),
                Err(e) => return Err(e),
            };
            self.append_exchange(&conv, &run.message, &reply.text)?;
        }
        Ok(reply)
    }

    fn turn(&self, conversation: &Conversation, message: &str, on_text: OnText) -> Result<Turn> {
        let reply = self.exchange(
            &conversation.messages,
            message,
            Some(&conversation.id),
            on_text,
        )?;
        let conversation = self.append_exchange(conversation, message, &reply.text)?;
        Ok(Turn {
            reply,
            conversation,
        })
    }

    /// Adds an exchange to a conversation and stores it. When another writer appended to
    /// the stored conversation since `conv` was read, the exchange goes after theirs, so
    /// neither is lost (saves at the very same moment can still race: the store has no
    /// compare-and-set).
    fn append_exchange(
        &self,
        conv: &Conversation,
        message: &str,
        reply: &str,
    ) -> Result<Conversation> {
        let mut latest = match self.conversation_by_id(&conv.id) {
            Ok(stored) if stored.turns > conv.turns => stored,
            _ => conv.clone(),
        };
        push_exchange(&mut latest, message, reply);
        self.save_conversation(&latest)?;
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
        guard::check(&self.inner.guards, GuardTarget::Message, message)?;
        let block = self.recall(message);
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
        self.drive(&mut run, on_text)
    }

    /// The memories to inject: the best `long_term_memory` entries of `default` that share
    /// a word with the message or are close to it in meaning. A failing recall is logged
    /// and gives an empty block.
    fn recall(&self, message: &str) -> Block {
        let n = self.inner.long_term_memory;
        let Some(memory) = self.inner.memory.as_ref().filter(|_| n > 0) else {
            return Block::default();
        };
        let mut req = RecallRequest::new(Namespace::default_ns(), message, n);
        req.filter = self.inner.filter.clone();
        match memory.recall(&req) {
            Ok(hits) => {
                let relevant: Vec<(String, String)> = hits
                    .into_iter()
                    .filter(|h| {
                        h.signals.lexical_rank.is_some()
                            || h.signals
                                .similarity
                                .is_some_and(|s| s >= self.inner.min_similarity)
                    })
                    .map(|h| (h.memory.key.to_string(), h.memory.text().into_owned()))
                    .collect();
                Block::build(
                    relevant.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                    MAX_BLOCK_BYTES,
                )
            }
            Err(e) => {
                warn!(kind = %e.kind(), error = %e, "recall failed; the message is sent without memory");
                Block::default()
            }
        }
    }

    /// Calls the model until it answers without tool calls, running the tools it asks for
    /// and saving the run after each step.
    fn drive(&self, run: &mut Run, mut on_text: OnText) -> Result<Reply> {
        let inner = &*self.inner;
        let mut req = ChatRequest {
            system: inner.system.clone(),
            messages: Vec::new(),
            tools: inner.tools.iter().map(|t| t.spec().clone()).collect(),
            max_tokens: inner.max_tokens,
            temperature: inner.temperature,
        };
        // Each drive (a first run or a resume) gets `max_steps` model calls.
        let limit = run.steps + inner.max_steps;
        loop {
            if run.steps >= limit {
                let e = AgentError::StepLimit {
                    steps: inner.max_steps,
                };
                return Err(self.fail(run, e));
            }
            req.messages.clone_from(&run.messages);
            let answer = match on_text.as_deref_mut() {
                Some(f) => inner.provider.chat_stream(&req, f),
                None => inner.provider.chat(&req),
            };
            let answer = match answer {
                Ok(a) => a,
                Err(e) => return Err(self.fail(run, e)),
            };
            run.usage += answer.usage;
            if answer.tool_calls.is_empty() {
                run.status = RunStatus::Completed;
                run.reply = Some(answer.text);
                run.error = None;
                self.save_run(run)?;
                return Ok(reply_of(run, answer.finish));
            }
            let mut said = Message::assistant(answer.text);
            said.tool_calls.clone_from(&answer.tool_calls);
            run.messages.push(said);
            for call in answer.tool_calls {
                let result = self.call_tool(&call);
                run.messages.push(Message::tool(call.id.clone(), result));
                run.tool_calls.push(call);
            }
            run.steps += 1;
            self.save_run(run)?;
        }
    }

    fn call_tool(&self, call: &ToolCall) -> String {
        let _span = info_span!("agent.tool", tool = %call.name).entered();
        match self.inner.tools.iter().find(|t| t.spec().name == call.name) {
            Some(tool) => match tool.call(&call.arguments) {
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

    /// Records a failure in the run (when durable) and returns the error.
    fn fail(&self, run: &mut Run, e: AgentError) -> AgentError {
        run.status = RunStatus::Failed;
        run.error = Some(format!("{}: {e}", e.kind()));
        if let Err(save) = self.save_run(run) {
            warn!(kind = %save.kind(), error = %save, "could not save the failed run");
        }
        e
    }

    fn save_run(&self, run: &mut Run) -> Result<()> {
        let Some(memory) = self
            .inner
            .memory
            .as_ref()
            .filter(|_| self.inner.durable_runs)
        else {
            return Ok(());
        };
        run.updated_at = Timestamp::now();
        let value =
            serde_json::to_value(&*run).map_err(|e| corrupted(RUNS_NAMESPACE, &run.id, e))?;
        // A completed run is kept for a while so that resuming it again returns its reply.
        let ttl = (run.status == RunStatus::Completed).then_some(self.inner.run_retention);
        memory.kv_set(&ns(RUNS_NAMESPACE)?, &run.id, value, ttl)?;
        Ok(())
    }

    fn save_conversation(&self, conv: &Conversation) -> Result<()> {
        let Some(memory) = &self.inner.memory else {
            return Ok(());
        };
        let limit = memory.store().limits().max_value_bytes / 10 * 9;
        let mut value = serde_json::to_value(conv)
            .map_err(|e| corrupted(CONVERSATIONS_NAMESPACE, &conv.id, e))?;
        // A conversation longer than a record may hold keeps its latest messages.
        let mut trimmed = conv.clone();
        while value.to_string().len() > limit && trimmed.messages.len() > 2 {
            let drop = (trimmed.messages.len() / 4).max(2);
            trimmed.messages.drain(..drop);
            value = serde_json::to_value(&trimmed)
                .map_err(|e| corrupted(CONVERSATIONS_NAMESPACE, &conv.id, e))?;
        }
        memory.kv_set(&ns(CONVERSATIONS_NAMESPACE)?, &conv.id, value, None)?;
        Ok(())
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

fn reply_of(run: &Run, finish: FinishReason) -> Reply {
    Reply {
        text: run.reply.clone().unwrap_or_default(),
        recalled: run.recalled.clone(),
        tool_calls: run.tool_calls.clone(),
        usage: run.usage,
        finish,
        run_id: Some(run.id.clone()),
    }
}

fn corrupted(namespace: &str, id: &str, e: serde_json::Error) -> AgentError {
    AgentError::Memory(muisti::Error::Corrupted {
        location: format!("{namespace}/{id}"),
        reason: e.to_string(),
    })
}

/// The pieces of a streamed answer, produced on a background thread. Iterate for the
/// text; then [`TokenStream::finish`] for the whole reply or the error.
pub struct TokenStream {
    rx: mpsc::Receiver<String>,
    handle: Option<JoinHandle<Result<Reply>>>,
}

impl TokenStream {
    fn spawn(work: impl FnOnce(mpsc::Sender<String>) -> Result<Reply> + Send + 'static) -> Self {
        let (tx, rx) = mpsc::channel();
        let handle = thread::spawn(move || work(tx));
        Self {
            rx,
            handle: Some(handle),
        }
    }

    /// Waits for the end of the answer: the reply, or why it failed.
    pub fn finish(mut self) -> Result<Reply> {
        while self.rx.recv().is_ok() {}
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Err(AgentError::Provider {
                provider: "agent",
                status: None,
                reason: "the streaming thread stopped unexpectedly".into(),
            }),
        }
    }
}

impl Iterator for TokenStream {
    type Item = String;
    fn next(&mut self) -> Option<String> {
        self.rx.recv().ok()
    }
}
