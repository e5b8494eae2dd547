//! Recall: candidates from both retrievers, fused, rescored from the rank fields, and only
//! the hits read whole; similar memories.

use super::*;

impl Engine {
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
        self.recall_as(req, true)
    }

    /// A recall; `counted` says whether it is the caller's (an event, and an access on each
    /// hit) or the engine's own look-up on the way to a write (neither).
    pub(super) fn recall_as(&self, req: &RecallRequest, counted: bool) -> Result<Vec<RecallHit>> {
        req.validate()?;
        crate::declarative::check_read(&req.filter)?;
        // One look at other processes' commits for all of this recall's reads.
        let run = muisti_core::ReadRun::open();
        let partition = self.partition(&req.namespace);
        let _span =
            info_span!("memory.search", namespace = %req.namespace, limit = req.limit).entered();
        let config = &*self.core.recall;
        let n = config.candidates.max(req.limit);
        let now = req.as_of.unwrap_or_else(|| self.core.clock.now());
        if req.cluster.is_some() && req.include_archived {
            return Err(Error::conflicting(
                "include_archived",
                "a cluster holds the memories that have vectors: recall within one reads no \
                 archived memory",
            ));
        }
        if req.mode == RecallMode::Overlap && (req.cluster.is_some() || req.include_archived) {
            return Err(Error::conflicting(
                "mode",
                "overlap recall reads the live memories only: no cluster, no archive",
            ));
        }
        let (mode, hits) = match req.mode {
            RecallMode::Overlap => {
                let mut all = list_all(&*self.core.store, &partition, &req.filter)?;
                if let Some(shared) = req.shared_filter() {
                    all.extend(list_all(&*self.core.store, &partition, &shared)?);
                }
                all.retain(|m| crate::declarative::readable(&req.filter, m) && req.admits(m));
                let mut hits = recall::overlap(all, &req.query, req.limit);
                if let Some(min) = req.min_score {
                    hits.retain(|h| h.score >= min);
                }
                (SearchMode::Scan, hits)
            }
            mode => {
                let q = match (&self.core.embedder, mode) {
                    (Some(e), RecallMode::Hybrid | RecallMode::Vector) => {
                        Some(e.embed_one(&req.query).map_err(embed_err)?)
                    }
                    _ => None,
                };
                let mut candidates = match req.cluster {
                    Some(cluster) => self.lifecycle().cluster_candidates(
                        &partition,
                        req,
                        cluster,
                        q.as_deref(),
                        n,
                    )?,
                    None => recall::Candidates::from_store(
                        &*self.core.store,
                        &partition,
                        req,
                        q.as_deref(),
                        n,
                    )?,
                };
                if let Some(filter) = req.shared_filter().filter(|_| req.cluster.is_none()) {
                    let shared = RecallRequest {
                        filter,
                        ..req.clone()
                    };
                    let more = recall::Candidates::from_store(
                        &*self.core.store,
                        &partition,
                        &shared,
                        q.as_deref(),
                        n,
                    )?;
                    candidates = candidates.merge(more, n);
                }
                if req.include_archived {
                    let more = self.lifecycle().archived_candidates(
                        &partition,
                        &req.filter,
                        &req.query,
                        q.as_deref(),
                        mode != RecallMode::Vector,
                        n,
                    )?;
                    candidates = candidates.merge(more, n);
                }
                let graph = if config.graph > 0.0 && req.cluster.is_none() {
                    Some(
                        self.graph()
                            .evidence(req.filter.user_id.as_deref(), &req.query)?,
                    )
                } else {
                    None
                };
                let sources = recall::Sources {
                    candidates,
                    graph,
                    embedded: q.is_some(),
                };
                let reranker = self
                    .core
                    .reranker
                    .as_deref()
                    .filter(|_| config.rerank > 0.0);
                // With a reranker, recall finds its pool by its own score; `min_score`
                // applies to the score the reranker gives.
                let pool = reranker.map(|_| RecallRequest {
                    limit: req.limit.max(config.rerank_pool),
                    min_score: None,
                    ..req.clone()
                });
                let ctx = self.recall_context(now);
                let hits = recall::run(&ctx, &partition, pool.as_ref().unwrap_or(req), sources)?;
                let hits = match reranker {
                    Some(r) => {
                        recall::rerank(r, config, &req.query, hits, req.limit, req.min_score)?
                    }
                    None => hits,
                };
                let mode = if self.core.native_text {
                    SearchMode::Search
                } else {
                    SearchMode::Scan
                };
                (mode, hits)
            }
        };
        // Observers read as they would anywhere else.
        drop(run);
        if !counted {
            return Ok(hits);
        }
        self.emit(Event::Search {
            partition,
            mode,
            limit: req.limit,
            hits: hits.len(),
        });
        let reach = crate::access::Reach {
            kind: crate::access::AccessKind::Recall,
            query: Some(&req.query),
            user: req.filter.user_id.as_deref(),
        };
        self.count_access(
            hits.iter().map(|h| (h.memory.as_ref(), Some(h.score))),
            reach,
            now,
        );
        Ok(hits)
    }

    /// Waits until the accesses counted by earlier recalls are written to the store. (They
    /// are written in the background, and at the latest when the last clone of the engine is
    /// dropped.)
    pub fn flush_access(&self) {
        self.core.access.flush();
    }

    /// The memories most similar in meaning to the one with `id` (itself excluded), in
    /// `namespace` (default: the memory's own), that `filter` admits. Unless `across_users`
    /// or the filter names a user, they are the memory's own user's (for a memory of no
    /// user, memories of no user): a user's memories are theirs alone. Declarative entries
    /// come back only when the filter names their user (strict per-user reads).
    pub fn find_similar(
        &self,
        id: MemoryId,
        namespace: Option<&Namespace>,
        limit: usize,
        filter: Filter,
        across_users: bool,
    ) -> Result<Vec<RecallHit>> {
        let Some(m) = self.get_by_id(id)? else {
            return Err(Error::NotFound(format!("memory {id}")));
        };
        let read = filter.clone();
        let mut filter = filter;
        if !across_users && filter.user_id.is_none() && !filter.without_user {
            match &m.owner.user_id {
                Some(user) => filter.user_id = Some(user.clone()),
                None => filter.without_user = true,
            }
        }
        if self.core.embedder.is_none() {
            return Err(Error::invalid("embedder", "find_similar needs an embedder"));
        }
        let q = self
            .core
            .embed_memories(std::slice::from_ref(&m))?
            .pop()
            .unwrap_or_default();
        let partition = namespace.map_or_else(|| m.partition.clone(), |ns| self.partition(ns));
        crate::declarative::check_read(&read)?;
        let vq = muisti_core::VectorQuery {
            partition: partition.clone(),
            vector: q,
            filter,
            limit: limit + 1,
        };
        let found: Vec<_> = self
            .core
            .store
            .vector_search(&vq)?
            .into_iter()
            .filter(|s| s.id != id)
            .collect();
        let mut hits = recall::similar(
            &self.recall_context(self.core.clock.now()),
            &partition,
            &found,
            limit,
        )?;
        hits.retain(|h| crate::declarative::readable(&read, &h.memory));
        Ok(hits)
    }

    /// What a recall made at `now` reads, and by which rules.
    fn recall_context(&self, now: muisti_core::Timestamp) -> recall::Context<'_> {
        recall::Context {
            store: &*self.core.store,
            tenant: &self.core.tenant,
            embedder: self.core.embedder.as_deref(),
            config: &self.core.recall,
            now,
        }
    }
}
