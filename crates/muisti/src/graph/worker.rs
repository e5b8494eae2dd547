//! Extraction off the write path: a durable queue of memory ids and one worker thread per
//! engine that drains it.

use std::{
    sync::{Arc, Mutex, mpsc},
    time::Duration,
};

use muisti_core::{Filter, Key, ListQuery, Locator, Memory, MemoryId, Put, Result, Tenant};
use tracing::{debug, warn};

use super::Graph;
use super::{Context, Extracted};
use crate::core::Core;
use crate::lifecycle::archive::Archive;
pub use crate::records::FAILED_NAMESPACE;
use crate::records::{self, Queued};

/// Why an extractor could not read a memory (a model unreachable, an answer unreadable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("graph extractor: {0}")]
pub struct ExtractError(pub String);

/// Finds entities and facts in one memory's text.
pub trait GraphExtractor: Send + Sync {
    /// What `text` says, given the conversation so far.
    fn extract(
        &self,
        text: &str,
        context: &Context<'_>,
    ) -> std::result::Result<Extracted, ExtractError>;

    /// A name for logs.
    fn name(&self) -> &str;

    /// Which of `candidates` (entities that go by `name`) the memory `text` means, by
    /// index, or none (then the name becomes an entity of its own). The default chooses
    /// none; a model reads the text.
    fn choose(
        &self,
        name: &str,
        text: &str,
        candidates: &[super::Entity],
    ) -> std::result::Result<Option<usize>, ExtractError> {
        let _ = (name, text, candidates);
        Ok(None)
    }
}

/// [`muisti_lang::relations::offline`]: patterns, no model.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineExtractor;

impl GraphExtractor for OfflineExtractor {
    fn extract(
        &self,
        text: &str,
        context: &Context<'_>,
    ) -> std::result::Result<Extracted, ExtractError> {
        Ok(muisti_lang::relations::offline(text, context))
    }

    fn name(&self) -> &str {
        "offline"
    }
}

/// Whether and how an engine extracts its graph.
#[derive(Clone, Default)]
pub enum GraphExtraction {
    /// No extraction (the default of the library).
    #[default]
    Off,
    /// The offline extractor.
    Offline,
    /// Another extractor (a model: `muisti_agent::LlmExtractor`).
    With(Arc<dyn GraphExtractor>),
}

impl std::fmt::Debug for GraphExtraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GraphExtraction::Off => f.write_str("Off"),
            GraphExtraction::Offline => f.write_str("Offline"),
            GraphExtraction::With(e) => write!(f, "With({})", e.name()),
        }
    }
}

impl GraphExtraction {
    /// `off`, `offline` (the names of the configuration).
    pub fn parse(name: &str) -> Result<Self> {
        match name.trim() {
            "off" | "" => Ok(GraphExtraction::Off),
            "offline" => Ok(GraphExtraction::Offline),
            other => Err(muisti_core::Error::invalid(
                "graph_extractor",
                format!(
                    "{other:?} is not one of off, offline (llm: through the server's chat model)"
                ),
            )),
        }
    }

    pub(crate) fn extractor(&self) -> Option<Arc<dyn GraphExtractor>> {
        match self {
            GraphExtraction::Off => None,
            GraphExtraction::Offline => Some(Arc::new(OfflineExtractor)),
            GraphExtraction::With(e) => Some(Arc::clone(e)),
        }
    }
}

/// How often a conversation is read into the graph (the seed's extraction interval): every
/// `messages` memories of one user's conversation are read together, in one extraction
/// (one model call), or sooner once the oldest has waited `wait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphInterval {
    /// Memories of one conversation read together (1, the default: each on its own).
    pub messages: usize,
    /// Longest a memory waits for the rest of its batch (default a minute).
    pub wait: Duration,
}

impl Default for GraphInterval {
    fn default() -> Self {
        Self {
            messages: 1,
            wait: Duration::from_secs(60),
        }
    }
}

/// Most memories one interval reads together.
pub const MAX_INTERVAL: usize = 100;

impl GraphInterval {
    /// Every `messages` memories (1 to [`MAX_INTERVAL`]), waiting a minute at most.
    pub fn every(messages: usize) -> Result<Self> {
        let interval = Self {
            messages,
            ..Self::default()
        };
        interval.validate()?;
        Ok(interval)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if !(1..=MAX_INTERVAL).contains(&self.messages) {
            return Err(muisti_core::Error::invalid(
                "graph_interval",
                format!("memories read together: 1 to {MAX_INTERVAL}"),
            ));
        }
        Ok(())
    }
}

/// Attempts before a queued memory is set aside in [`FAILED_NAMESPACE`] (logged each time).
const MAX_ATTEMPTS: u32 = 5;

/// Items one round of the worker takes.
const BATCH: usize = 100;

/// How often the worker looks at the queue without being woken (for items another process
/// queued, or whose extraction failed).
const IDLE_ROUND: Duration = Duration::from_secs(30);

/// How long a worker holds the queue after its last round (another process's worker takes
/// over when it stops).
const LEASE: Duration = Duration::from_secs(90);

/// A conversation of the queue: tenant, user and session.
type Conversation = (String, Option<String>, Option<String>);

/// Whether a memory is read into the graph: a user's text of the scopes that hold facts
/// (long-term, episodic, declarative; not working state nor the engine's own records).
/// The one rule queueing and forgetting share.
pub(crate) fn is_extracted(m: &Memory) -> bool {
    use muisti_core::MemoryScope::{Declarative, Episodic, LongTerm};
    !m.partition.namespace.is_reserved()
        && m.content.is_string()
        && matches!(m.scope, LongTerm | Episodic | Declarative)
}

/// The engine's side of the worker: wakes it after a write; dropped with the last engine,
/// it lets the worker finish its round, release the queue and end.
pub(crate) struct Worker {
    wake: Mutex<Option<mpsc::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Ok(mut wake) = self.wake.lock() {
            wake.take();
        }
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            warn!("the graph worker panicked");
        }
    }
}

impl Worker {
    /// Starts the worker thread draining the queue through `core` with the graph's `state`
    /// (which has no worker itself), reading archived memories back from `archive`; it ends
    /// when the last engine holding this is dropped.
    pub(crate) fn start(
        core: Core,
        state: super::GraphState,
        archive: Option<Arc<Archive>>,
    ) -> Arc<Self> {
        let (tx, rx) = mpsc::channel::<()>();
        let holder = MemoryId::generate().to_string();
        let spawned = std::thread::Builder::new()
            .name("muisti-graph".into())
            .spawn(move || {
                let graph = Graph {
                    core: &core,
                    state: &state,
                };
                loop {
                    // Of many processes on one store, the one holding the lease drains.
                    let round = core
                        .acquire_lease("graph", &holder, LEASE)
                        .and_then(|held| {
                            if held {
                                graph.drain(false, archive.as_deref())
                            } else {
                                Ok(0)
                            }
                        });
                    if let Err(e) = round {
                        warn!(kind = %e.kind(), error = %e, "graph extraction round failed");
                    }
                    match rx.recv_timeout(IDLE_ROUND) {
                        Ok(()) | Err(mpsc::RecvTimeoutError::Timeout) => {
                            // Coalesce the wake-ups of a burst of writes.
                            while rx.try_recv().is_ok() {}
                        }
                        Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    }
                }
                // Another process's worker may take the queue at once.
                if let Err(e) = core.release_lease("graph", &holder) {
                    debug!(error = %e, "the graph lease was not released");
                }
            });
        let thread = match spawned {
            Ok(t) => Some(t),
            Err(e) => {
                warn!(error = %e, "the graph worker could not start; queued memories wait");
                None
            }
        };
        Arc::new(Self {
            wake: Mutex::new(Some(tx)),
            thread: Mutex::new(thread),
        })
    }

    fn wake(&self) {
        if let Ok(tx) = self.wake.lock()
            && let Some(tx) = tx.as_ref()
        {
            let _ = tx.send(());
        }
    }
}

impl Graph<'_> {
    fn queue_partition(&self) -> Result<muisti_core::Partition> {
        records::GRAPH_QUEUE.partition(&self.core.tenant)
    }

    /// Queues `memories` for extraction (in one write) when the engine extracts, those
    /// [`is_extracted`] admits, each with whether its text changed (then what it stated
    /// before is retired first); wakes the worker.
    pub(crate) fn queue_extraction(&self, memories: &[(&Memory, bool)]) -> Result<()> {
        let Some(worker) = &self.state.worker else {
            return Ok(());
        };
        let mut puts = Vec::new();
        for (memory, changed) in memories.iter().filter(|(m, _)| is_extracted(m)) {
            let item = Queued {
                tenant: memory.partition.tenant.as_str().to_owned(),
                memory_id: memory.id,
                attempts: 0,
                changed: *changed,
                user: memory.owner.user_id.clone(),
                session: memory.owner.session_id.clone(),
                queued_at: Some(self.core.clock.now()),
            };
            let value = records::GRAPH_QUEUE.encode(&item)?;
            puts.push(Put::new(
                self.queue_partition()?,
                Some(Key::new(MemoryId::generate().to_string())?),
                value,
            ));
        }
        if !puts.is_empty() {
            self.core.store.put_many(puts)?;
            worker.wake();
        }
        Ok(())
    }

    /// How many memories wait for extraction (in every tenant).
    pub fn pending(&self) -> Result<u64> {
        self.core
            .store
            .count(&self.queue_partition()?, &Filter::default())
    }
}

impl Graph<'_> {
    /// A round of the queue: with an interval, only the conversations with a whole batch
    /// waiting, or whose oldest memory has waited long enough, unless `all`.
    pub(crate) fn drain(&self, all: bool, archive: Option<&Archive>) -> Result<u64> {
        let Some(extractor) = self.state.extraction.extractor() else {
            return Ok(0);
        };
        let interval = self.state.interval;
        let mut done = 0;
        let mut after = None;
        // With an interval, a conversation's items are gathered over the pages.
        let mut groups: Vec<(Conversation, Vec<(Memory, Queued)>)> = Vec::new();
        loop {
            let page = self.core.store.list(&ListQuery {
                partition: self.queue_partition()?,
                filter: Filter::default(),
                after,
                limit: BATCH,
            })?;
            for record in page.items.iter() {
                let item = records::GRAPH_QUEUE.decode(record)?;
                if interval.messages <= 1 {
                    let outcome = self.extract_one(extractor.as_ref(), &item, archive);
                    done += self.settle(&[(record.clone(), item)], outcome)?;
                    continue;
                }
                let conversation = (item.tenant.clone(), item.user.clone(), item.session.clone());
                match groups.iter_mut().find(|(c, _)| *c == conversation) {
                    Some((_, items)) => items.push((record.clone(), item)),
                    None => groups.push((conversation, vec![(record.clone(), item)])),
                }
            }
            match page.next {
                Some(next) if !page.items.is_empty() => after = Some(next),
                _ => break,
            }
        }
        let now = self.core.clock.now();
        for (_, items) in groups {
            for batch in items.chunks(interval.messages) {
                let waited = batch[0]
                    .1
                    .queued_at
                    .is_none_or(|t| t.plus(interval.wait) <= now);
                if batch.len() < interval.messages && !all && !waited {
                    // The rest of the batch has not come yet.
                    break;
                }
                let queued: Vec<&Queued> = batch.iter().map(|(_, q)| q).collect();
                let outcome = self.extract_batch(extractor.as_ref(), &queued, archive);
                done += self.settle(batch, outcome)?;
            }
        }
        if done > 0 {
            debug!(done, "graph extraction");
        }
        Ok(done)
    }

    /// After an extraction of `items`: removed from the queue when it worked; otherwise
    /// each kept with one more attempt, or after the last set aside. How many were done.
    fn settle(&self, items: &[(Memory, Queued)], outcome: Result<()>) -> Result<u64> {
        let e = match outcome {
            Ok(()) => {
                for (record, _) in items {
                    self.core.store.delete(&Locator::Key {
                        partition: record.partition.clone(),
                        key: record.key.clone(),
                    })?;
                }
                return Ok(items.len() as u64);
            }
            Err(e) => e,
        };
        for (record, item) in items {
            let mut item = item.clone();
            let at = Locator::Key {
                partition: record.partition.clone(),
                key: record.key.clone(),
            };
            item.attempts += 1;
            let value = records::GRAPH_QUEUE.encode(&item)?;
            if item.attempts < MAX_ATTEMPTS {
                warn!(memory = %item.memory_id, attempts = item.attempts, error = %e,
                    "graph extraction failed; kept queued");
                self.core.store.put(Put::new(
                    record.partition.clone(),
                    Some(record.key.clone()),
                    value,
                ))?;
            } else {
                // Given up: kept apart, where it can be read and queued again.
                warn!(memory = %item.memory_id, error = %e,
                    "graph extraction failed {MAX_ATTEMPTS} times; set aside in {FAILED_NAMESPACE}");
                let mut failed = Put::new(
                    records::GRAPH_FAILED.partition(&self.core.tenant)?,
                    Some(record.key.clone()),
                    value,
                );
                failed.metadata.insert("error".into(), e.to_string().into());
                self.core.store.put(failed)?;
                self.core.store.delete(&at)?;
            }
        }
        Ok(0)
    }

    /// Reads a conversation's queued memories together: their texts in one extraction,
    /// each fact then credited to the first of them that names both its ends, else its
    /// object, else its subject, else to the last; each name to those that name it.
    fn extract_batch(
        &self,
        extractor: &dyn GraphExtractor,
        items: &[&Queued],
        archive: Option<&Archive>,
    ) -> Result<()> {
        let Some(first) = items.first() else {
            return Ok(());
        };
        let core = self.core.with_tenant(Tenant::new(&first.tenant)?);
        let graph = Graph {
            core: &core,
            state: self.state,
        };
        let mut memories = Vec::new();
        for item in items {
            if let Some(m) = read(&core, item.memory_id, archive)? {
                if item.changed {
                    graph.retire(m.id, m.updated_at)?;
                }
                memories.push(m);
            }
        }
        let Some(last) = memories.last() else {
            return Ok(());
        };
        let user = last.owner.user_id.as_deref();
        let context = Context {
            user,
            last_person: graph.focus(user, last.owner.session_id.as_deref())?,
            now: Some(last.valid_from.unwrap_or(last.updated_at)),
        };
        let text: Vec<String> = memories.iter().map(|m| m.text().into_owned()).collect();
        let found = extractor.extract(&text.join("\n"), &context).map_err(|e| {
            muisti_core::Error::Backend {
                backend: "graph",
                reason: e.to_string(),
            }
        })?;
        let lower: Vec<String> = text.iter().map(|t| t.to_lowercase()).collect();
        let named_in = |name: &str| {
            let name = name.to_lowercase();
            lower.iter().position(|t| t.contains(&name))
        };
        let last_index = memories.len() - 1;
        for (i, memory) in memories.iter().enumerate() {
            let triples: Vec<_> = found
                .triples
                .iter()
                .filter(|t| {
                    let both = lower.iter().position(|x| {
                        x.contains(&t.subject.name.to_lowercase())
                            && x.contains(&t.object.name.to_lowercase())
                    });
                    both.or_else(|| named_in(&t.object.name))
                        .or_else(|| named_in(&t.subject.name))
                        .unwrap_or(last_index)
                        == i
                })
                .cloned()
                .collect();
            let mut mentions: Vec<_> = found
                .mentions
                .iter()
                .filter(|m| {
                    lower[i].contains(&m.name.to_lowercase())
                        || (i == last_index && named_in(&m.name).is_none())
                })
                .cloned()
                .collect();
            for t in &triples {
                for end in std::iter::once(&t.subject).chain((!t.literal).then_some(&t.object)) {
                    if !mentions.iter().any(|m| m.name == end.name) {
                        mentions.push(end.clone());
                    }
                }
            }
            let part = Extracted {
                mentions,
                triples,
                last_person: (i == last_index)
                    .then(|| found.last_person.clone())
                    .flatten(),
            };
            graph.apply_extraction(memory, &part, Some(extractor))?;
        }
        Ok(())
    }

    fn extract_one(
        &self,
        extractor: &dyn GraphExtractor,
        item: &Queued,
        archive: Option<&Archive>,
    ) -> Result<()> {
        let core = self.core.with_tenant(Tenant::new(&item.tenant)?);
        let graph = Graph {
            core: &core,
            state: self.state,
        };
        let Some(memory) = read(&core, item.memory_id, archive)? else {
            return Ok(());
        };
        let user = memory.owner.user_id.as_deref();
        if item.changed {
            graph.retire(memory.id, memory.updated_at)?;
        }
        let context = Context {
            user,
            last_person: graph.focus(user, memory.owner.session_id.as_deref())?,
            now: Some(memory.valid_from.unwrap_or(memory.updated_at)),
        };
        let found = extractor.extract(&memory.text(), &context).map_err(|e| {
            muisti_core::Error::Backend {
                backend: "graph",
                reason: e.to_string(),
            }
        })?;
        graph.apply_extraction(&memory, &found, Some(extractor))
    }
}

/// The memory with `id` as the worker reads it: an archived one with its text, read back
/// from the archive.
fn read(core: &Core, id: MemoryId, archive: Option<&Archive>) -> Result<Option<Memory>> {
    match core.read(id)? {
        Some(m) => crate::lifecycle::Lifecycle { core, archive }
            .hydrate(m)
            .map(Some),
        None => Ok(None),
    }
}

/// [`Follower`](crate::core::Follower): the graph reads what is new and forgets what is
/// gone (nothing to do without a worker reading it). A memory moved to another user or scope
/// leaves its old graph and is read again; a new or changed text is queued; a deleted
/// memory's facts and entities it alone supported go, with a conversation's focus on them.
pub(crate) struct GraphFollower(pub(crate) super::GraphState);

impl crate::core::Follower for GraphFollower {
    fn written(&self, core: &crate::core::Core, changes: &[crate::core::Change<'_>]) -> Result<()> {
        if self.0.worker.is_none() {
            return Ok(());
        }
        let graph = Graph {
            core,
            state: &self.0,
        };
        let memories: Vec<&crate::core::Change<'_>> =
            changes.iter().filter(|c| c.of_memory()).collect();
        for c in &memories {
            if let Some(old) = c.moved_from() {
                graph.forget(old.owner.user_id.as_deref(), &[old.id])?;
            }
        }
        let queued: Vec<(&Memory, bool)> = memories
            .iter()
            .filter_map(|c| match (c.status, c.moved_from()) {
                (muisti_core::WriteStatus::Created, _) | (_, Some(_)) => Some((c.memory, false)),
                _ if c.text_changed() => Some((c.memory, true)),
                _ => None,
            })
            .collect();
        if !queued.is_empty() {
            // A failure is logged: the memories stay; their facts are not read into the graph.
            if let Err(e) = graph.queue_extraction(&queued) {
                warn!(kind = %e.kind(), error = %e, count = queued.len(), "could not queue memories for graph extraction");
            }
        }
        Ok(())
    }

    fn deleted(&self, core: &crate::core::Core, gone: &[Memory]) -> Result<()> {
        let graph = Graph {
            core,
            state: &self.0,
        };
        let mut sourced: std::collections::BTreeMap<Option<&str>, Vec<MemoryId>> =
            std::collections::BTreeMap::new();
        for m in gone {
            if !crate::core::own_record(m) && is_extracted(m) {
                sourced
                    .entry(m.owner.user_id.as_deref())
                    .or_default()
                    .push(m.id);
            }
        }
        for (user, ids) in &sourced {
            graph.forget(*user, ids)?;
        }
        Ok(())
    }
}
