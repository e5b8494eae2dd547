//! Building an engine: its store, tenant, embedder (the built-in model unless told), recall
//! configuration, clock, lifetimes, graph extraction and archive; the model check on open.

use std::sync::{Arc, atomic::AtomicBool};

use muisti_core::{Clock, Observer, Result, Store, SystemClock, Tenant};
use muisti_embed::{Embedder, StaticEmbedder};

use super::{Core, Engine, Follower, Lifetimes, embed_err};
use crate::access::AccessRecorder;
use crate::recall::RecallConfig;

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    tenant: Tenant,
    observers: Vec<Arc<dyn Observer>>,
    embedder: EmbedderChoice,
    reranker: Option<Arc<dyn Embedder>>,
    recall: RecallConfig,
    on_mismatch: OnModelMismatch,
    clock: Arc<dyn Clock>,
    lifetimes: Lifetimes,
    graph: crate::graph::GraphExtraction,
    graph_interval: crate::graph::GraphInterval,
    archive: Option<Arc<crate::lifecycle::archive::Archive>>,
    access_log: crate::access::AccessLog,
}

/// What [`EngineBuilder::build`] does when the store was indexed by another embedder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnModelMismatch {
    /// Refuse to open, naming both models (the default).
    #[default]
    Error,
    /// Re-embed every memory with the engine's embedder, then open.
    Reindex,
    /// Open anyway (for `muisti reindex` itself): vectors of the other model are skipped by
    /// vector search until reindexed.
    Ignore,
}

enum EmbedderChoice {
    Builtin,
    Given(Option<Arc<dyn Embedder>>),
}

impl EngineBuilder {
    /// Confines the engine to `tenant` (default: `default`).
    pub fn tenant(mut self, tenant: Tenant) -> Self {
        self.tenant = tenant;
        self
    }

    /// Adds an observer of [`Event`](muisti_core::Event)s.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// The embedder for semantic recall (default: the built-in static model); `None` turns
    /// vectors off (recall is then lexical only).
    pub fn embedder(mut self, embedder: Option<Arc<dyn Embedder>>) -> Self {
        self.embedder = EmbedderChoice::Given(embedder);
        self
    }

    /// A second model that re-scores recall's best hits (`RecallConfig::rerank_pool`, by
    /// default the top 10), typically a transformer (`minilm`): its cosine of the query and
    /// each hit weighs `RecallConfig::rerank` in the hit's score. It changes the order of the
    /// hits recall found, not which; it costs one embedding of the query and the pool per
    /// recall. Default: none.
    pub fn reranker(mut self, reranker: Option<Arc<dyn Embedder>>) -> Self {
        self.reranker = reranker;
        self
    }

    /// Recall settings (fusion, weights, half-life).
    pub fn recall_config(mut self, config: RecallConfig) -> Self {
        self.recall = config;
        self
    }

    /// What to do when the store was indexed by another embedder (default: refuse).
    pub fn on_model_mismatch(mut self, action: OnModelMismatch) -> Self {
        self.on_mismatch = action;
        self
    }

    /// Reads the time from `clock` (recency in recall, access times) instead of the system
    /// clock. Give the store the same clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How long the memories of each scope live (default [`Lifetimes::default`]).
    pub fn lifetimes(mut self, lifetimes: Lifetimes) -> Self {
        self.lifetimes = lifetimes;
        self
    }

    /// Whether the engine extracts entities and facts from its memories into the graph
    /// (default off): in the background, from a durable queue a worker thread drains.
    pub fn graph_extraction(mut self, graph: crate::graph::GraphExtraction) -> Self {
        self.graph = graph;
        self
    }

    /// How often a conversation is read into the graph (default: each memory on its own;
    /// see [`GraphInterval`](crate::graph::GraphInterval)).
    pub fn graph_interval(mut self, interval: crate::graph::GraphInterval) -> Self {
        self.graph_interval = interval;
        self
    }

    /// The archive cold memories move to ([`crate::lifecycle::archive`]; none: the archive
    /// job and reads of archived text are refused).
    pub fn archive(mut self, archive: Option<Arc<crate::lifecycle::archive::Archive>>) -> Self {
        self.archive = archive;
        self
    }

    /// What the access log keeps of each recall and read by id, and for how long (default:
    /// nothing; see [`AccessLog`](crate::AccessLog)).
    pub fn access_log(mut self, log: crate::access::AccessLog) -> Self {
        self.access_log = log;
        self
    }

    /// The engine. With an embedder, checks that the store was indexed by the same model
    /// (a store with none recorded gets this one's at its first write: opening writes
    /// nothing).
    pub fn build(self) -> Result<Engine> {
        let embedder = match self.embedder {
            EmbedderChoice::Builtin => {
                Some(StaticEmbedder::builtin().map_err(embed_err)? as Arc<dyn Embedder>)
            }
            EmbedderChoice::Given(e) => e,
        };
        let on_mismatch = self.on_mismatch;
        self.lifetimes.validate()?;
        self.graph_interval.validate()?;
        self.access_log.validate()?;
        let core = Core {
            native_text: self.store.info().capabilities.native_text,
            access: Arc::new(AccessRecorder::start(
                Arc::clone(&self.store),
                self.access_log,
            )),
            store: self.store,
            tenant: self.tenant,
            observers: self.observers.into(),
            embedder,
            reranker: self.reranker,
            recall: Arc::new(self.recall),
            clock: self.clock,
            model_checked: Arc::new(AtomicBool::new(false)),
            lifetimes: self.lifetimes,
            actor: None,
            followers: Arc::new([]),
        };
        let mut engine = Engine {
            core,
            conflict_judge: None,
            fact_extractor: None,
            graph_state: crate::graph::GraphState {
                extraction: self.graph,
                interval: self.graph_interval,
                worker: None,
            },
            archive: self.archive,
        };
        engine.core.followers = followers(&engine.graph_state, engine.archive.clone());
        engine.check_model(on_mismatch)?;
        if engine.graph_state.extraction.extractor().is_some() {
            // The worker's own engine has no worker: what it writes is the graph's own.
            let mut with_worker = engine.clone();
            with_worker.graph_state.worker = Some(crate::graph::worker::Worker::start(
                engine.core,
                engine.graph_state,
                engine.archive,
            ));
            with_worker.core.followers =
                followers(&with_worker.graph_state, with_worker.archive.clone());
            return Ok(with_worker);
        }
        Ok(engine)
    }
}

impl Engine {
    /// A builder over `store`.
    pub fn builder(store: Arc<dyn Store>) -> EngineBuilder {
        EngineBuilder {
            store,
            tenant: Tenant::default(),
            observers: Vec::new(),
            embedder: EmbedderChoice::Builtin,
            reranker: None,
            recall: RecallConfig::default(),
            on_mismatch: OnModelMismatch::default(),
            clock: Arc::new(SystemClock),
            lifetimes: Lifetimes::default(),
            graph: crate::graph::GraphExtraction::default(),
            graph_interval: crate::graph::GraphInterval::default(),
            archive: None,
            access_log: crate::access::AccessLog::default(),
        }
    }
}

/// The followers of an engine, in the order they are told: the observers, the archive
/// (its objects go before anything that names them), the history, the graph.
fn followers(
    graph: &crate::graph::GraphState,
    archive: Option<Arc<crate::lifecycle::archive::Archive>>,
) -> Arc<[Arc<dyn Follower>]> {
    Arc::new([
        Arc::new(crate::core::Events) as Arc<dyn Follower>,
        Arc::new(crate::lifecycle::archive::ArchiveFollower(archive)),
        Arc::new(crate::declarative::History),
        Arc::new(crate::access::AccessLogFollower),
        Arc::new(crate::graph::worker::GraphFollower(graph.clone())),
    ])
}
