//! Recall: candidates from both retrievers, fused, rescored from the rank fields, and only
//! the hits read whole; similar memories.

use std::collections::{HashMap, HashSet};

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
        req.validate()?;
        crate::declarative::check_read(&req.filter)?;
        // One look at other processes' commits for all of this recall's reads.
        let run = muisti_core::ReadRun::open();
        let partition = self.partition(&req.namespace);
        let _span =
            info_span!("memory.search", namespace = %req.namespace, limit = req.limit).entered();
        let config = &*self.recall;
        let n = config.candidates.max(req.limit);
        let now = self.clock.now();
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
                let mut all = list_all(&*self.store, &partition, &req.filter)?;
                all.retain(|m| crate::declarative::readable(&req.filter, m));
                let mut hits = recall::overlap(all, &req.query, req.limit);
                if let Some(min) = req.min_score {
                    hits.retain(|h| h.score >= min);
                }
                (SearchMode::Scan, hits)
            }
            mode => {
                let q = match (&self.embedder, mode) {
                    (Some(e), RecallMode::Hybrid | RecallMode::Vector) => {
                        Some(e.embed_one(&req.query).map_err(embed_err)?)
                    }
                    _ => None,
                };
                let from_store = || -> Result<crate::lifecycle::Candidates> {
                    let lexical = if mode == RecallMode::Vector {
                        Vec::new()
                    } else {
                        self.store
                            .text_search(&recall::text_query(partition.clone(), req, n))?
                    };
                    let vector = match &q {
                        Some(q) => self.store.vector_search(&recall::vector_query(
                            partition.clone(),
                            req,
                            q.clone(),
                            n,
                        ))?,
                        None => Vec::new(),
                    };
                    Ok(crate::lifecycle::Candidates {
                        lexical,
                        vector,
                        records: HashMap::new(),
                    })
                };
                let crate::lifecycle::Candidates {
                    mut lexical,
                    mut vector,
                    records: mut archived,
                } = match req.cluster {
                    Some(cluster) => {
                        self.cluster_candidates(&partition, req, cluster, q.as_deref(), n)?
                    }
                    None => from_store()?,
                };
                if req.include_archived {
                    let more = self.archived_candidates(
                        &partition,
                        &req.filter,
                        &req.query,
                        q.as_deref(),
                        mode != RecallMode::Vector,
                        n,
                    )?;
                    lexical = crate::lifecycle::archive::merge_scored(lexical, more.lexical, n);
                    vector = crate::lifecycle::archive::merge_scored(vector, more.vector, n);
                    archived.extend(more.records);
                }
                let mut fused = recall::fuse(config.fusion, &lexical, &vector);
                if config.graph > 0.0 && req.cluster.is_none() {
                    let evidence = self.graph_candidates(&partition, req, &fused, n)?;
                    recall::with_graph(config.fusion, &mut fused, &evidence, config.graph);
                }
                // The temporal strategy: the periods the query names, matched against each
                // contender's time once its fields are read.
                let periods = if config.temporal > 0.0 {
                    crate::temporal::periods(&req.query, now)
                } else {
                    Vec::new()
                };
                // Word-level matching, with the embedder's token vectors (a retriever of
                // meaning: not in a lexical-only recall).
                let words = match (&self.embedder, &q) {
                    (Some(e), Some(_)) if config.words > 0.0 => e
                        .word_matcher(&req.query, recall::WORD_SKIP, config.words_floor)
                        .filter(|m| !m.is_empty()),
                    _ => None,
                };
                let lifts = recall::Lifts {
                    any: if periods.is_empty() {
                        0.0
                    } else {
                        config.temporal
                    },
                    best: config.words_pool,
                    best_more: if words.is_some() { config.words } else { 0.0 },
                };
                let ids = recall::contenders(config, &fused, req.limit, lifts);
                let mut fields = self.store.rank_fields(&partition, &ids)?;
                // Records the strategies read on the way, so the hits need not be read again.
                let mut read = muisti_core::IdMap::default();
                if !periods.is_empty() {
                    let matched = self.speaking_of(&fields, &periods, &mut read)?;
                    recall::with_time(config, &mut fused, &matched);
                }
                if config.neighbours > 0.0 && req.cluster.is_none() {
                    let seeds = recall::neighbour_seeds(&fused, &ids);
                    let next = self.next_in_session(&partition, req, &seeds, now, &mut read)?;
                    let lifts: Vec<(MemoryId, f32)> =
                        next.iter().map(|(m, seed)| (m.id, *seed)).collect();
                    recall::with_neighbours(config.fusion, &mut fused, &lifts, config.neighbours);
                    let known: muisti_core::IdSet = fields.iter().map(|f| f.id).collect();
                    for (m, _) in next {
                        if !known.contains(&m.id) && !read.contains_key(&m.id) {
                            fields.push(muisti_core::RankFields::of(&m));
                        }
                        read.insert(m.id, m);
                    }
                }
                // An archived candidate's record came with it.
                read.extend(archived.into_iter().map(|(id, m)| (id, Arc::new(m))));
                if let Some(words) = &words {
                    let pool =
                        recall::word_pool(&fused, fields.iter().map(|f| f.id), config.words_pool);
                    let missing: Vec<MemoryId> = pool
                        .iter()
                        .filter(|id| !read.contains_key(*id))
                        .copied()
                        .collect();
                    if !missing.is_empty() {
                        for m in self.store.get_many_shared(&self.tenant, &missing)? {
                            read.insert(m.id, m);
                        }
                    }
                    let texts: Vec<(MemoryId, std::borrow::Cow<str>)> = pool
                        .iter()
                        .filter_map(|id| read.get(id).map(|m| (*id, m.index_text())))
                        .collect();
                    let scores =
                        words.scores(&texts.iter().map(|(_, t)| t.as_ref()).collect::<Vec<_>>());
                    let shares: Vec<(MemoryId, f32)> =
                        texts.iter().map(|(id, _)| *id).zip(scores).collect();
                    recall::with_words(config.fusion, &mut fused, &shares, config.words);
                }
                // The best first: those under `min_score` are a tail of them.
                let mut ranked = recall::rescore(config, fields, fused, now, req.limit);
                if let Some(min) = req.min_score {
                    ranked.retain(|h| h.score >= min);
                }
                let mode = if self.native_text {
                    SearchMode::Search
                } else {
                    SearchMode::Scan
                };
                let mut hits = self.with_records(ranked, read)?;
                // An archived memory the graph named has no text here unless asked for.
                hits.retain(|h| {
                    crate::declarative::readable(&req.filter, &h.memory)
                        && (req.include_archived
                            || h.memory.state != muisti_core::MemoryState::Archived)
                });
                (mode, hits)
            }
        };
        // Observers read as they would anywhere else.
        drop(run);
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

    /// The vectors of memories' texts (content and context, as when they were written), by
    /// the engine's embedder, in order; empty vectors without one.
    pub(crate) fn embed_memories<'a>(
        &self,
        memories: impl IntoIterator<Item = &'a Memory>,
    ) -> Result<Vec<Vec<f32>>> {
        let mut puts: Vec<Put> = memories
            .into_iter()
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
        Ok(puts
            .into_iter()
            .map(|p| p.embedding.unwrap_or_default())
            .collect())
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
        if self.embedder.is_none() {
            return Err(Error::invalid("embedder", "find_similar needs an embedder"));
        }
        let q = self
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
            .store
            .vector_search(&vq)?
            .into_iter()
            .filter(|s| s.id != id)
            .collect();
        // Similarity alone: the cosine itself with absolute scores, else relative to the best.
        let fusion = if self.recall.fusion.is_absolute() {
            Fusion::Absolute { lexical: 0.0 }
        } else {
            Fusion::Rrf { k: 60.0 }
        };
        let fused = recall::fuse(fusion, &[], &found);
        let ids: Vec<MemoryId> = found.iter().map(|s| s.id).collect();
        let fields = self.store.rank_fields(&partition, &ids)?;
        let ranked = recall::rescore(&self.recall, fields, fused, self.clock.now(), limit);
        let mut hits = self.with_records(ranked, muisti_core::IdMap::default())?;
        hits.retain(|h| crate::declarative::readable(&read, &h.memory));
        Ok(hits)
    }

    /// The graph's evidence for a recall ([`Engine::graph_evidence`] of the filter's user):
    /// for the candidates the retrievers found, and for at most `n` others (the strongest),
    /// those of the recalled partition that the filter admits (the retrievers filtered
    /// theirs; these are read and checked here).
    fn graph_candidates(
        &self,
        partition: &Partition,
        req: &RecallRequest,
        fused: &recall::Fused,
        n: usize,
    ) -> Result<HashMap<MemoryId, f32>> {
        let mut evidence = self.graph_evidence(req.filter.user_id.as_deref(), &req.query)?;
        let mut others: Vec<(MemoryId, f32)> = evidence
            .iter()
            .filter(|(id, _)| !fused.contains_key(*id))
            .map(|(id, g)| (*id, *g))
            .collect();
        others.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        let ids: Vec<MemoryId> = others.iter().map(|(id, _)| *id).collect();
        let (keep, drop) = ids.split_at(ids.len().min(n));
        let admitted: HashSet<MemoryId> = self
            .store
            .get_many(&self.tenant, keep)?
            .into_iter()
            .filter(|m| {
                m.partition == *partition
                    && req.filter.matches(m)
                    && crate::declarative::readable(&req.filter, m)
            })
            .map(|m| m.id)
            .collect();
        for id in keep.iter().chain(drop) {
            if !admitted.contains(id) {
                evidence.remove(id);
            }
        }
        Ok(evidence)
    }

    /// The contenders that speak of one of the periods a query names ([`recall::speaks_of`]):
    /// by their time, and with [`RecallConfig::temporal_text`] by their own words (the
    /// records of those their time does not place are read for it).
    fn speaking_of(
        &self,
        fields: &[muisti_core::RankFields],
        periods: &[crate::temporal::Period],
        read: &mut muisti_core::IdMap<Arc<Memory>>,
    ) -> Result<HashSet<MemoryId>> {
        let config = &*self.recall;
        let mut matched = HashSet::new();
        let mut unplaced = HashMap::new();
        for f in fields {
            if recall::speaks_of(config, periods, f.time, None) {
                matched.insert(f.id);
            } else {
                unplaced.insert(f.id, f.time);
            }
        }
        if config.temporal_text && !unplaced.is_empty() {
            let ids: Vec<MemoryId> = unplaced.keys().copied().collect();
            for m in self.store.get_many_shared(&self.tenant, &ids)? {
                let Some(time) = unplaced.get(&m.id) else {
                    continue;
                };
                // Their time did not place them: their words may.
                if recall::told_of(periods, *time, &m.text()) {
                    matched.insert(m.id);
                }
                read.insert(m.id, m);
            }
        }
        Ok(matched)
    }

    /// Neighbourhood evidence: for each seed `(id, relevance)`, the live memory written next
    /// after it in its session and scope (the first of those later memories, in id order,
    /// that the request's filter admits: a conversation's next turn, not a fact filed
    /// meanwhile), with the seed's relevance. A seed without a session has no neighbour.
    fn next_in_session(
        &self,
        partition: &Partition,
        req: &RecallRequest,
        seeds: &[(MemoryId, f32)],
        now: muisti_core::Timestamp,
        read: &mut muisti_core::IdMap<Arc<Memory>>,
    ) -> Result<Vec<(Arc<Memory>, f32)>> {
        /// Later memories read per seed to find a live one (a superseded or archived turn
        /// is skipped, not a gap).
        const LOOKAHEAD: usize = 2;
        if seeds.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<MemoryId> = seeds
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !read.contains_key(id))
            .collect();
        for m in self.store.get_many_shared(&self.tenant, &ids)? {
            read.insert(m.id, m);
        }
        // Each seed's session, read one memory at a time: the next one is nearly always live,
        // and the look-ahead reads the one after only when it is not. All seeds' reads of a
        // round go to the store together.
        let (mut of_seed, mut queries) = (Vec::new(), Vec::new());
        for (k, (id, _)) in seeds.iter().enumerate() {
            let Some(seed) = read.get(id) else {
                continue;
            };
            let Some(session) = &seed.owner.session_id else {
                continue;
            };
            if seed.partition != *partition {
                continue;
            }
            of_seed.push(k);
            queries.push(ListQuery {
                partition: partition.clone(),
                filter: Filter {
                    session_id: Some(session.clone()),
                    scope: Some(seed.scope),
                    ..req.filter.clone()
                },
                after: Some(*id),
                limit: 1,
            });
        }
        let mut found: Vec<Option<Arc<Memory>>> = vec![None; seeds.len()];
        for _ in 0..LOOKAHEAD {
            if queries.is_empty() {
                break;
            }
            let pages = self.store.list_many(&queries)?;
            let (mut again_of, mut again) = (Vec::new(), Vec::new());
            for ((k, mut query), page) in of_seed.into_iter().zip(queries).zip(pages) {
                let Some(m) = page.items.into_iter().next() else {
                    continue;
                };
                if m.state == MemoryState::Active
                    && !m.is_expired(now)
                    && crate::declarative::readable(&req.filter, &m)
                {
                    found[k] = Some(Arc::new(m));
                } else {
                    query.after = Some(m.id);
                    again_of.push(k);
                    again.push(query);
                }
            }
            (of_seed, queries) = (again_of, again);
        }
        let next = found
            .into_iter()
            .zip(seeds)
            .filter_map(|(m, (_, relevance))| Some((m?, *relevance)))
            .collect();
        Ok(next)
    }

    /// The records of ranked candidates: those in `read` (already read by this recall), the
    /// others read now (only these: the rescoring itself reads [`Store::rank_fields`]).
    pub(super) fn with_records(
        &self,
        ranked: Vec<recall::Ranked>,
        mut read: muisti_core::IdMap<Arc<Memory>>,
    ) -> Result<Vec<RecallHit>> {
        let missing: Vec<MemoryId> = ranked
            .iter()
            .map(|r| r.id)
            .filter(|id| !read.contains_key(id))
            .collect();
        for m in self.store.get_many_shared(&self.tenant, &missing)? {
            read.insert(m.id, m);
        }
        Ok(recall::with_records(ranked, read))
    }
}
