//! The engine: one API over any store, with events and tracing.

use std::{collections::BTreeMap, sync::Arc};

use muisti_core::{
    Clock, Error, ErrorKind, Event, Filter, Key, ListQuery, Locator, Memory, MemoryId, Namespace,
    Observer, Page, Partition, Put, Result, SearchMode, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, Ttl, UpdateRequest, WriteStatus, Written, list_all,
};
use muisti_embed::{EmbedError, Embedder, StaticEmbedder};
use serde::Serialize;
use serde_json::Value;
use tracing::{debug, info_span};

use crate::access::AccessRecorder;
use crate::recall::{self, Fusion, RecallConfig, RecallHit, RecallMode, RecallRequest};

/// Builds an [`Engine`].
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    tenant: Tenant,
    observers: Vec<Arc<dyn Observer>>,
    embedder: EmbedderChoice,
    recall: RecallConfig,
    on_mismatch: OnModelMismatch,
    clock: Arc<dyn Clock>,
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

/// The tenant that holds muisti's own records (the store's embedder). Reserved: servers must
/// not hand it to clients.
pub const SYSTEM_TENANT: &str = "_muisti";

/// What [`Engine::reindex`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    /// Memories looked at.
    pub scanned: u64,
    /// Memories given a new vector.
    pub reembedded: u64,
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

    /// Adds an observer of [`Event`]s.
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

    /// The engine. With an embedder, checks that the store was indexed by the same model
    /// (and records the model in a store that has none yet).
    pub fn build(self) -> Result<Engine> {
        let embedder = match self.embedder {
            EmbedderChoice::Builtin => {
                Some(StaticEmbedder::builtin().map_err(embed_err)? as Arc<dyn Embedder>)
            }
            EmbedderChoice::Given(e) => e,
        };
        let on_mismatch = self.on_mismatch;
        let engine = Engine {
            native_text: self.store.info().capabilities.native_text,
            access: Arc::new(AccessRecorder::start(Arc::clone(&self.store))),
            store: self.store,
            tenant: self.tenant,
            observers: self.observers.into(),
            embedder,
            recall: Arc::new(self.recall),
            clock: self.clock,
        };
        engine.check_model(on_mismatch)?;
        Ok(engine)
    }
}

fn embed_err(e: EmbedError) -> Error {
    match e {
        EmbedError::Service {
            endpoint,
            reason,
            retryable: true,
        } => Error::Unavailable {
            target: endpoint,
            reason,
        },
        other => Error::backend("embedder", other),
    }
}

/// Memory for agents over one store, confined to one tenant. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    store: Arc<dyn Store>,
    tenant: Tenant,
    observers: Arc<[Arc<dyn Observer>]>,
    embedder: Option<Arc<dyn Embedder>>,
    recall: Arc<RecallConfig>,
    access: Arc<AccessRecorder>,
    /// Whether the store answers full-text search from an index (read once, not per recall).
    native_text: bool,
    clock: Arc<dyn Clock>,
}

/// How much a namespace holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceStats {
    /// The namespace.
    pub namespace: Namespace,
    /// Live records in it.
    pub count: u64,
}

/// What [`Engine::stats`] reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// The store.
    pub store: StoreInfo,
    /// Whether it answered its health check.
    pub healthy: bool,
    /// The tenant the engine is confined to.
    pub tenant: Tenant,
    /// Per namespace.
    pub namespaces: Vec<NamespaceStats>,
    /// All records of the tenant.
    pub total: u64,
}

impl Engine {
    /// A builder over `store`.
    pub fn builder(store: Arc<dyn Store>) -> EngineBuilder {
        EngineBuilder {
            store,
            tenant: Tenant::default(),
            observers: Vec::new(),
            embedder: EmbedderChoice::Builtin,
            recall: RecallConfig::default(),
            on_mismatch: OnModelMismatch::default(),
            clock: Arc::new(SystemClock),
        }
    }

    /// An engine over the store a URL names, in the default tenant.
    pub fn open(url: &str) -> Result<Self> {
        Self::builder(crate::open_store(url)?).build()
    }

    /// The same engine confined to another tenant.
    pub fn with_tenant(&self, tenant: Tenant) -> Self {
        Self {
            tenant,
            ..self.clone()
        }
    }

    /// The same engine with one more observer (for example an agent's), which is told of
    /// every event of this engine and its clones made after this call.
    pub fn with_observer(&self, observer: Arc<dyn Observer>) -> Self {
        let mut observers: Vec<Arc<dyn Observer>> = self.observers.iter().cloned().collect();
        observers.push(observer);
        Self {
            observers: observers.into(),
            ..self.clone()
        }
    }

    /// The same engine over `wrap(store)`: same tenant, embedder, recall settings and
    /// observers. Used to put a wrapper such as the privacy store in front of the store.
    pub fn map_store(&self, wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>) -> Self {
        let store = wrap(Arc::clone(&self.store));
        Self {
            native_text: store.info().capabilities.native_text,
            store,
            ..self.clone()
        }
    }

    /// Tells this engine's observers of an event that happened outside the engine (an
    /// agent reports `memory.recalled` this way).
    pub fn notify(&self, event: Event) {
        self.emit(event);
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The tenant this engine is confined to.
    pub fn tenant(&self) -> &Tenant {
        &self.tenant
    }

    /// The partition of `namespace` in this engine's tenant.
    pub fn partition(&self, namespace: &Namespace) -> Partition {
        Partition::new(self.tenant.clone(), namespace.clone())
    }

    fn emit(&self, event: Event) {
        for o in self.observers.iter() {
            o.on_event(&event);
        }
    }

    fn at_key(&self, namespace: &Namespace, key: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.partition(namespace),
            key: Key::new(key)?,
        })
    }

    // ---- key-value contract ----

    /// The value at `key`, or `None`.
    pub fn kv_get(&self, namespace: &Namespace, key: &str) -> Result<Option<Value>> {
        Ok(self.get(&self.at_key(namespace, key)?)?.map(|m| m.content))
    }

    /// Stores `value` at `key`, replacing any value there; `ttl` of `None` never expires.
    pub fn kv_set(
        &self,
        namespace: &Namespace,
        key: &str,
        value: Value,
        ttl: Option<Ttl>,
    ) -> Result<Written> {
        let put = Put::new(self.partition(namespace), Some(Key::new(key)?), value).with_ttl(ttl);
        self.remember(put)
    }

    /// Deletes `key`; `true` if it existed.
    pub fn kv_forget(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        self.forget(&self.at_key(namespace, key)?)
    }

    /// Deletes everything in `namespace`; returns how many entries.
    pub fn kv_flush(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.flush", namespace = %namespace).entered();
        let n = self.store.flush(&partition)?;
        self.emit(Event::Forget {
            partition,
            key: None,
            count: n,
        });
        Ok(n)
    }

    /// Every live entry of `namespace`, by key.
    pub fn kv_all(&self, namespace: &Namespace) -> Result<BTreeMap<String, Value>> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.all", namespace = %namespace).entered();
        let all = list_all(&*self.store, &partition, &Filter::default())?;
        Ok(all
            .into_iter()
            .map(|m| (m.key.to_string(), m.content))
            .collect())
    }

    /// Whether `key` holds a live entry.
    pub fn kv_has(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        Ok(self.kv_get(namespace, key)?.is_some())
    }

    // ---- memory contract ----

    /// Writes a memory (the put's tenant is replaced by the engine's).
    pub fn remember(&self, mut put: Put) -> Result<Written> {
        put.partition.tenant = self.tenant.clone();
        if let Some(existing) = self.duplicate_of(&put)? {
            self.store
                .touch(&self.tenant, &[existing.id], self.clock.now())?;
            self.emit(Event::Write {
                partition: existing.partition.clone(),
                key: existing.key.clone(),
                bytes: 0,
                status: WriteStatus::Deduplicated,
            });
            return Ok(Written {
                memory: existing,
                status: WriteStatus::Deduplicated,
            });
        }
        self.embed_puts(std::slice::from_mut(&mut put))?;
        let span = info_span!("memory.write", namespace = %put.partition.namespace);
        let _g = span.enter();
        let w = self.store.put(put)?;
        self.emit(Event::Write {
            partition: w.memory.partition.clone(),
            key: w.memory.key.clone(),
            bytes: w.memory.text().len(),
            status: w.status,
        });
        debug!(id = %w.memory.id, status = ?w.status, "written");
        Ok(w)
    }

    /// Changes fields of one memory atomically, the only way a stored memory is updated
    /// (REST `PATCH`, the MCP `update` tool and the CLI all come here). The locator's
    /// tenant is replaced by the engine's.
    ///
    /// When the text changes and the engine has an embedder, the new text is embedded and
    /// the update is made conditional on the version that text was read from; if another
    /// writer got in between (and the caller set no `expected_version`), it is read and
    /// embedded again. With `expected_version`, a stale version is
    /// [`Error::Conflict`]; an absent memory is [`Error::NotFound`].
    pub fn update(&self, mut req: UpdateRequest) -> Result<Memory> {
        req.at = self.confine(&req.at);
        req.validate()?;
        let _span = info_span!("memory.update").entered();
        let given = req.expected_version;
        let mut attempts = 0;
        let m = loop {
            if req.patch.changes_text()
                && let Some(embedder) = &self.embedder
            {
                let current = self
                    .store
                    .get(&req.at)?
                    .ok_or_else(|| Error::NotFound(req.at.describe()))?;
                let content = req
                    .patch
                    .content
                    .clone()
                    .unwrap_or_else(|| current.content.clone());
                let mut put = Put::new(
                    current.partition.clone(),
                    current.writer_key().cloned(),
                    content,
                );
                put.context = match &req.patch.context {
                    Some(c) => c.clone(),
                    None => current.context.clone(),
                };
                self.embed_puts(std::slice::from_mut(&mut put))?;
                req.patch.embedding = put.embedding.map(|v| (embedder.id().to_owned(), v));
                req.expected_version = Some(given.unwrap_or(current.version));
            }
            match self.store.update(&req) {
                Err(e) if e.kind() == ErrorKind::Conflict && given.is_none() && attempts < 8 => {
                    attempts += 1;
                }
                other => break other?,
            }
        };
        self.emit(Event::Write {
            partition: m.partition.clone(),
            key: m.key.clone(),
            bytes: m.text().len(),
            status: WriteStatus::Updated,
        });
        debug!(id = %m.id, version = m.version, "updated");
        Ok(m)
    }

    /// Writes many memories in one batch (one transaction where the store has them).
    pub fn remember_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        let mut puts: Vec<Put> = puts
            .into_iter()
            .map(|mut p| {
                p.partition.tenant = self.tenant.clone();
                p
            })
            .collect();
        self.embed_puts(&mut puts)?;
        let _span = info_span!("memory.write_many", count = puts.len()).entered();
        let written = self.store.put_many(puts)?;
        for w in &written {
            self.emit(Event::Write {
                partition: w.memory.partition.clone(),
                key: w.memory.key.clone(),
                bytes: w.memory.text().len(),
                status: w.status,
            });
        }
        Ok(written)
    }

    fn confine(&self, at: &Locator) -> Locator {
        match at {
            Locator::Key { partition, key } => Locator::Key {
                partition: self.partition(&partition.namespace),
                key: key.clone(),
            },
            Locator::Id { id, .. } => Locator::Id {
                tenant: self.tenant.clone(),
                id: *id,
            },
        }
    }

    /// The memory a locator addresses (its tenant is replaced by the engine's).
    pub fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let at = self.confine(at);
        let _span = info_span!("memory.read").entered();
        let found = self.store.get(&at)?;
        let (partition, key) = match (&at, &found) {
            (_, Some(m)) => (Some(m.partition.clone()), Some(m.key.clone())),
            (Locator::Key { partition, key }, None) => (Some(partition.clone()), Some(key.clone())),
            (Locator::Id { .. }, None) => (None, None),
        };
        self.emit(Event::Read {
            partition,
            key,
            found: found.is_some(),
        });
        Ok(found)
    }

    /// The memory with `id`.
    pub fn get_by_id(&self, id: MemoryId) -> Result<Option<Memory>> {
        self.get(&Locator::Id {
            tenant: self.tenant.clone(),
            id,
        })
    }

    /// One page of a namespace's memories (the query's tenant is replaced by the engine's).
    pub fn list(&self, mut query: ListQuery) -> Result<Page> {
        query.partition.tenant = self.tenant.clone();
        let _span = info_span!("memory.list", namespace = %query.partition.namespace).entered();
        self.store.list(&query)
    }

    /// Deletes the addressed memory; `true` if it existed.
    pub fn forget(&self, at: &Locator) -> Result<bool> {
        let at = self.confine(at);
        let _span = info_span!("memory.forget").entered();
        let target = self.store.get(&at)?;
        let deleted = self.store.delete(&at)?;
        if let Some(m) = target {
            self.emit(Event::Forget {
                partition: m.partition,
                key: Some(m.key),
                count: u64::from(deleted),
            });
        }
        Ok(deleted)
    }

    /// How many memories of a namespace match `filter`.
    pub fn count(&self, namespace: &Namespace, filter: &Filter) -> Result<u64> {
        self.store.count(&self.partition(namespace), filter)
    }

    fn model_locator() -> Result<Locator> {
        Ok(Locator::Key {
            partition: Partition::new(Tenant::new(SYSTEM_TENANT)?, Namespace::new("meta")?),
            key: Key::new("embedder")?,
        })
    }

    /// The id of the embedder the store's vectors were made with, if recorded.
    pub fn store_model(&self) -> Result<Option<String>> {
        Ok(self.store.get(&Self::model_locator()?)?.and_then(|m| {
            m.content
                .get("id")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }))
    }

    fn record_model(&self, embedder: &dyn Embedder) -> Result<()> {
        let Locator::Key { partition, key } = Self::model_locator()? else {
            return Ok(());
        };
        let value = serde_json::json!({"id": embedder.id(), "dimensions": embedder.dimensions()});
        self.store.put(Put::new(partition, Some(key), value))?;
        Ok(())
    }

    fn check_model(&self, on_mismatch: OnModelMismatch) -> Result<()> {
        let Some(embedder) = &self.embedder else {
            return Ok(());
        };
        match self.store_model()? {
            None => self.record_model(&**embedder),
            Some(id) if id == embedder.id() => Ok(()),
            Some(id) => match on_mismatch {
                OnModelMismatch::Error => Err(Error::Conflict(format!(
                    "the store {} was indexed with the embedder {id:?}, but this engine embeds \
                     with {:?}; run `muisti reindex` to re-embed every memory with it, or \
                     choose the embedder {id:?}",
                    self.store.info().location,
                    embedder.id()
                ))),
                OnModelMismatch::Reindex => self.reindex(false, &mut |_, _| {}).map(|_| ()),
                OnModelMismatch::Ignore => Ok(()),
            },
        }
    }

    /// Re-embeds the memories of every tenant whose vector was made by another model (or
    /// all of them with `force`), then records the engine's embedder as the store's.
    /// `progress(done, total)` is called as batches complete.
    pub fn reindex(
        &self,
        force: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReindexReport> {
        let Some(embedder) = &self.embedder else {
            return Err(Error::invalid("embedder", "reindex needs an embedder"));
        };
        let _span = info_span!("memory.reindex", model = embedder.id()).entered();
        let mut partitions = Vec::new();
        let mut total = 0;
        for tenant in self.store.tenants()? {
            if tenant.as_str() == SYSTEM_TENANT {
                continue;
            }
            for ns in self.store.namespaces(&tenant)? {
                let p = Partition::new(tenant.clone(), ns);
                total += self.store.count(&p, &Filter::default())?;
                partitions.push(p);
            }
        }
        let mut report = ReindexReport::default();
        progress(0, total);
        for p in partitions {
            let all = list_all(&*self.store, &p, &Filter::default())?;
            for chunk in all.chunks(256) {
                report.scanned += chunk.len() as u64;
                let todo: Vec<&Memory> = chunk
                    .iter()
                    .filter(|m| force || m.embedding_model.as_deref() != Some(embedder.id()))
                    .collect();
                if !todo.is_empty() {
                    let mut puts: Vec<Put> = todo
                        .iter()
                        .map(|m| {
                            let mut put = Put::new(
                                m.partition.clone(),
                                m.writer_key().cloned(),
                                m.content.clone(),
                            );
                            put.context = m.context.clone();
                            put
                        })
                        .collect();
                    self.embed_puts(&mut puts)?;
                    let vectors: Vec<StoredVector> = todo
                        .iter()
                        .zip(puts)
                        .filter_map(|(m, put)| {
                            Some(StoredVector {
                                id: m.id,
                                model: embedder.id().to_owned(),
                                vector: put.embedding?,
                            })
                        })
                        .collect();
                    report.reembedded += self.store.set_vectors(&p.tenant, &vectors)?;
                }
                progress(report.scanned, total);
            }
        }
        self.record_model(&**embedder)?;
        Ok(report)
    }

    /// The live memory a keyless write duplicates: same partition, owner and context, same
    /// normalised content (see [`RecallConfig::dedupe`]). Batches
    /// ([`Engine::remember_many`]) are imports and are not deduplicated.
    fn duplicate_of(&self, put: &Put) -> Result<Option<Memory>> {
        if !self.recall.dedupe || put.key.is_some() {
            return Ok(None);
        }
        put.validate(&self.store.limits())?;
        let filter = Filter {
            user_id: put.owner.user_id.clone(),
            agent_id: put.owner.agent_id.clone(),
            session_id: put.owner.session_id.clone(),
            content_hash: Some(muisti_core::content_hash(&muisti_core::value_text(
                &put.content,
            ))),
            ..Filter::default()
        };
        let query = ListQuery {
            partition: put.partition.clone(),
            filter,
            after: None,
            limit: 16,
        };
        Ok(self
            .store
            .list(&query)?
            .items
            .into_iter()
            .find(|m| m.owner == put.owner && m.context == put.context))
    }

    /// Adds vectors to writes that have none, with the engine's embedder (one batch).
    fn embed_puts(&self, puts: &mut [Put]) -> Result<()> {
        let Some(embedder) = &self.embedder else {
            return Ok(());
        };
        let todo: Vec<usize> = (0..puts.len())
            .filter(|&i| puts[i].embedding.is_none())
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        // The content (and the key, when the writer gave one: an id is noise to a model),
        // plus each context at a lower weight: one batch. This is the one definition of
        // what a memory's vector describes.
        let mut texts: Vec<String> = todo
            .iter()
            .map(|&i| puts[i].index_text().into_owned())
            .collect();
        let with_context: Vec<usize> = todo
            .iter()
            .copied()
            .filter(|&i| {
                puts[i]
                    .context
                    .as_deref()
                    .is_some_and(|c| !c.trim().is_empty())
            })
            .collect();
        texts.extend(with_context.iter().filter_map(|&i| puts[i].context.clone()));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut vectors = embedder.embed(&refs).map_err(embed_err)?;
        // `with_context` is in the order of `todo`, so its vectors are met in turn.
        let mut context_vectors = with_context
            .iter()
            .copied()
            .zip(vectors.split_off(todo.len()))
            .peekable();
        for (i, mut v) in todo.iter().copied().zip(vectors) {
            if let Some((_, cv)) = context_vectors.next_if(|(c, _)| *c == i) {
                for (x, c) in v.iter_mut().zip(&cv) {
                    *x += muisti_core::text::CONTEXT_WEIGHT * c;
                }
                muisti_core::text::normalize(&mut v);
            }
            puts[i].embedding = Some(v);
            puts[i].embedding_model = Some(embedder.id().to_owned());
        }
        Ok(())
    }

    /// The embedder, if recall uses vectors.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// The best `limit` memories of `namespace` for `query` (hybrid recall), best first.
    pub fn search(
        &self,
        namespace: &Namespace,
        query: &str,
        limit: usize,
        filter: Filter,
    ) -> Result<Vec<RecallHit>> {
        let mut req = RecallRequest::new(namespace.clone(), query, limit);
        req.filter = filter;
        self.recall(&req)
    }

    /// Recalls the memories that matter for a query: full-text and vector candidates fused,
    /// rescored by recency, access and importance. Counts an access on each hit (unless the
    /// recall config turns it off); those counts are written in the background, off the recall
    /// path (see [`Engine::flush_access`]).
    pub fn recall(&self, req: &RecallRequest) -> Result<Vec<RecallHit>> {
        let partition = self.partition(&req.namespace);
        let _span =
            info_span!("memory.search", namespace = %req.namespace, limit = req.limit).entered();
        let config = &*self.recall;
        let n = config.candidates.max(req.limit);
        let now = self.clock.now();
        let (mode, mut hits) = match req.mode {
            RecallMode::Overlap => {
                let all = list_all(&*self.store, &partition, &req.filter)?;
                (
                    SearchMode::Scan,
                    recall::overlap(all, &req.query, req.limit),
                )
            }
            mode => {
                let lexical = if mode == RecallMode::Vector {
                    Vec::new()
                } else {
                    self.store
                        .text_search(&recall::text_query(partition.clone(), req, n))?
                };
                let vector = match (&self.embedder, mode) {
                    (Some(e), RecallMode::Hybrid | RecallMode::Vector) => {
                        let q = e.embed_one(&req.query).map_err(embed_err)?;
                        self.store.vector_search(&recall::vector_query(
                            partition.clone(),
                            req,
                            q,
                            n,
                        ))?
                    }
                    _ => Vec::new(),
                };
                let fused = recall::fuse(config.fusion, &lexical, &vector);
                let ids = recall::contenders(config, &fused, req.limit);
                let fields = self.store.rank_fields(&partition, &ids)?;
                let mut ranked = recall::rescore(config, fields, fused, now);
                if let Some(min) = req.min_score {
                    ranked.retain(|h| h.score >= min);
                }
                ranked.truncate(req.limit);
                let mode = if self.native_text {
                    SearchMode::Search
                } else {
                    SearchMode::Scan
                };
                (mode, self.with_records(ranked)?)
            }
        };
        if let Some(min) = req.min_score {
            hits.retain(|h| h.score >= min);
        }
        hits.truncate(req.limit);
        self.emit(Event::Search {
            partition,
            mode,
            limit: req.limit,
            hits: hits.len(),
        });
        if config.track_access && !hits.is_empty() {
            let ids: Vec<MemoryId> = hits.iter().map(|h| h.memory.id).collect();
            self.access.record(&self.tenant, ids, now);
        }
        Ok(hits)
    }

    /// Waits until the accesses counted by earlier recalls are written to the store. (They
    /// are written in the background, and at the latest when the last clone of the engine is
    /// dropped.)
    pub fn flush_access(&self) {
        self.access.flush();
    }

    /// The memories most similar in meaning to the one with `id` (itself excluded).
    pub fn find_similar(
        &self,
        id: MemoryId,
        limit: usize,
        filter: Filter,
    ) -> Result<Vec<RecallHit>> {
        let Some(m) = self.get_by_id(id)? else {
            return Err(Error::NotFound(format!("memory {id}")));
        };
        if self.embedder.is_none() {
            return Err(Error::invalid("embedder", "find_similar needs an embedder"));
        }
        let mut put = Put::new(
            m.partition.clone(),
            m.writer_key().cloned(),
            m.content.clone(),
        );
        put.context = m.context.clone();
        self.embed_puts(std::slice::from_mut(&mut put))?;
        let q = put.embedding.unwrap_or_default();
        let vq = muisti_core::VectorQuery {
            partition: m.partition.clone(),
            vector: q,
            filter,
            limit: limit + 1,
        };
        let found: Vec<_> = self
            .store
            .vector_search(&vq)?
            .into_iter()
            .filter(|s| s.id != id)
            .collect();
        let fused = recall::fuse(Fusion::Rrf { k: 60.0 }, &[], &found);
        let ids: Vec<MemoryId> = found.iter().map(|s| s.id).collect();
        let fields = self.store.rank_fields(&m.partition, &ids)?;
        let mut ranked = recall::rescore(&self.recall, fields, fused, self.clock.now());
        ranked.truncate(limit);
        self.with_records(ranked)
    }

    /// Reads the records of ranked candidates (only those: the rescoring itself reads
    /// [`Store::rank_fields`]).
    fn with_records(&self, ranked: Vec<recall::Ranked>) -> Result<Vec<RecallHit>> {
        let ids: Vec<MemoryId> = ranked.iter().map(|r| r.id).collect();
        let read = self.store.get_many(&self.tenant, &ids)?;
        Ok(recall::with_records(ranked, read))
    }

    /// Deletes expired memories now.
    pub fn purge_expired(&self) -> Result<u64> {
        self.store.purge_expired()
    }

    /// Per-namespace counts, the store and its health.
    pub fn stats(&self) -> Result<Stats> {
        let health = self.store.health_check();
        if !health.ok {
            return Err(Error::Unavailable {
                target: self.store.info().location,
                reason: health.detail,
            });
        }
        let mut namespaces = Vec::new();
        let mut total = 0;
        for ns in self.store.namespaces(&self.tenant)? {
            let count = self.count(&ns, &Filter::default())?;
            total += count;
            namespaces.push(NamespaceStats {
                namespace: ns,
                count,
            });
        }
        Ok(Stats {
            store: self.store.info(),
            healthy: health.ok,
            tenant: self.tenant.clone(),
            namespaces,
            total,
        })
    }
}
