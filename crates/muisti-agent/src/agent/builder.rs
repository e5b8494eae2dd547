//! Building an [`Agent`]: memory, model, guards, tools and limits.

use super::*;

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
            working_notes: true,
            graph_context: 0,
            system: None,
            durable_runs: false,
            run_retention: Duration::from_secs(7 * 24 * 3600),
            max_steps: 8,
            history: 40,
            injection: Injection::default(),
            as_of: None,
            max_tokens: None,
            temperature: None,
            filter: Filter::default(),
            learning: None,
        }
    }
}

enum MemorySource {
    Engine(Box<Engine>),
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
    working_notes: bool,
    graph_context: usize,
    system: Option<String>,
    durable_runs: bool,
    run_retention: Duration,
    max_steps: usize,
    history: usize,
    injection: Injection,
    as_of: Option<muisti::Timestamp>,
    max_tokens: Option<u32>,
    temperature: Option<f32>,
    filter: Filter,
    learning: Option<Arc<ExtractionQueue>>,
}

impl AgentBuilder {
    /// Memory through an engine (its tenant, embedder and recall settings are used).
    pub fn memory(mut self, engine: Engine) -> Self {
        self.memory = Some(MemorySource::Engine(Box::new(engine)));
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

    /// Learns from what the user says: after each reply the exchange is gathered in
    /// `queue`, and the facts in it are extracted in the background (the queue's debounce;
    /// the memory's fact extractor, offline by default) into the user's long-term memory,
    /// where later conversations recall them. Only for an agent with memory, a user in its
    /// recall filter, and stored messages (`store_messages(false)` learns nothing). Off
    /// unless set; `muisti serve` and `muisti chat` set it.
    pub fn learn(mut self, queue: Arc<ExtractionQueue>) -> Self {
        self.learning = Some(queue);
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

    /// Whether the model gets the built-in `note` tool in conversations (default on, with
    /// memory): working notes in the scratch scope (gone when the turn ends) or the
    /// short-term scope (shown in every prompt of the conversation until it ends).
    pub fn working_notes(mut self, on: bool) -> Self {
        self.working_notes = on;
        self
    }

    /// At most `n` facts of the knowledge graph about what the message names (entities
    /// named in it and their current relations, as "Alice works at Google") go into the
    /// prompt after the declarative entries and notes (default 0: off). Needs a graph
    /// (`EngineBuilder::graph_extraction`).
    pub fn graph_context(mut self, n: usize) -> Self {
        self.graph_context = n;
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

    /// Which of recall's hits are injected ([`Injection`]; the default is the rule chosen
    /// on the memory-qa dev set).
    pub fn injection(mut self, injection: Injection) -> Self {
        self.injection = injection;
        self
    }

    /// Recall as of this time instead of now ([`muisti::RecallRequest::as_of`]): "now" and
    /// relative periods in a message mean then, and only the memories true then are
    /// injected.
    pub fn as_of(mut self, at: Option<muisti::Timestamp>) -> Self {
        self.as_of = at;
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
        self.injection
            .validate()
            .map_err(|e| AgentError::invalid("injection", e))?;
        let run_retention = Ttl::new(self.run_retention)?;
        let mut memory = match self.memory {
            None => None,
            Some(MemorySource::Engine(e)) => Some(*e),
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
                working_notes: self.working_notes,
                graph_context: self.graph_context,
                system: self.system,
                durable_runs: self.durable_runs,
                run_retention,
                max_steps: self.max_steps,
                history: self.history,
                injection: self.injection,
                as_of: self.as_of,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
                filter: self.filter,
                store_messages: self.store_messages,
                learning: self.learning,
            }),
        })
    }
}
