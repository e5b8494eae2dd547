//! The pipeline: sources → fuse → strategies → contenders → rescore → records. It sees a
//! [`Context`], never the engine.

use std::{collections::HashMap, sync::Arc};

use muisti_core::{
    IdMap, IdSet, MemoryId, Partition, RankFields, Result, Scored, Store, Tenant, Timestamp,
};
use muisti_embed::Embedder;

use super::{
    Fusion, RecallConfig, RecallHit, RecallRequest, fuse,
    rescore::{self, Lifts},
    sources::Candidates,
    strategies::{graph, neighbours, successors, temporal, words},
};

/// What a recall reads and by which rules: the store and tenant it reads, the embedder that
/// made the vectors (word-level matching asks it for token vectors), the configuration, and
/// the time the recall is made at.
pub(crate) struct Context<'a> {
    pub(crate) store: &'a dyn Store,
    pub(crate) tenant: &'a Tenant,
    pub(crate) embedder: Option<&'a dyn Embedder>,
    pub(crate) config: &'a RecallConfig,
    pub(crate) now: Timestamp,
}

/// What a recall starts from, gathered by the engine: the retrievers' candidates (the
/// store's, or a cluster's members, plus the archive's when asked), the graph's evidence
/// for the query (unfiltered: the graph strategy admits it), and whether the query was
/// embedded (strategies of meaning need that).
pub(crate) struct Sources {
    pub(crate) candidates: Candidates,
    pub(crate) graph: Option<HashMap<MemoryId, f32>>,
    pub(crate) embedded: bool,
}

/// Runs a recall of `req` in `partition` from `sources`: the best `req.limit` hits the
/// request's filter may read, best first, those under `req.min_score` left out.
pub(crate) fn run(
    ctx: &Context<'_>,
    partition: &Partition,
    req: &RecallRequest,
    sources: Sources,
) -> Result<Vec<RecallHit>> {
    let config = ctx.config;
    let n = config.candidates.max(req.limit);
    let Candidates {
        lexical,
        vector,
        records: archived,
    } = sources.candidates;
    let mut fused = fuse::fuse(config.fusion, &lexical, &vector);
    if let Some(evidence) = sources.graph {
        let evidence = graph::admitted(ctx, partition, req, &fused, evidence, n)?;
        graph::with_graph(config.fusion, &mut fused, &evidence, config.graph);
    }
    // The periods the query names, matched against each contender's time once its fields
    // are read.
    let periods = if config.temporal > 0.0 {
        muisti_lang::time::periods(&req.query, ctx.now)
    } else {
        Vec::new()
    };
    let matcher = match ctx.embedder {
        Some(e) if sources.embedded && config.words > 0.0 => e
            .word_matcher(&req.query, words::WORD_SKIP, config.words_floor)
            .filter(|m| !m.is_empty()),
        _ => None,
    };
    let lifts = Lifts {
        any: if periods.is_empty() {
            0.0
        } else {
            config.temporal
        },
        best: config.words_pool,
        best_more: if matcher.is_some() { config.words } else { 0.0 },
    };
    let ids = rescore::contenders(config, &fused, req.limit, lifts);
    let mut fields = ctx.store.rank_fields(partition, &ids)?;
    // Records the strategies read on the way, so the hits need not be read again.
    let mut read = IdMap::default();
    if !periods.is_empty() {
        let matched = temporal::speaking_of(ctx, &fields, &periods, &mut read)?;
        temporal::with_time(config, &mut fused, &matched);
    }
    if config.neighbours > 0.0 && req.cluster.is_none() {
        let seeds = neighbours::neighbour_seeds(&fused, &ids);
        let next = neighbours::next_in_session(ctx, partition, req, &seeds, ctx.now, &mut read)?;
        let lifts: Vec<(MemoryId, f32)> = next.iter().map(|(m, seed)| (m.id, *seed)).collect();
        neighbours::with_neighbours(config.fusion, &mut fused, &lifts, config.neighbours);
        let known: IdSet = fields.iter().map(|f| f.id).collect();
        for (m, _) in next {
            if !known.contains(&m.id) && !read.contains_key(&m.id) {
                fields.push(RankFields::of(&m));
            }
            read.insert(m.id, m);
        }
    }
    // An archived candidate's record came with it.
    read.extend(archived.into_iter().map(|(id, m)| (id, Arc::new(m))));
    if let Some(matcher) = &matcher {
        let ids = fields.iter().map(|f| f.id);
        let shares = words::shares(ctx, matcher, &fused, ids, &mut read)?;
        words::with_words(config.fusion, &mut fused, &shares, config.words);
    }
    // As of a time: what became true after it is not known then (what stopped being true
    // by then is left out with the records, below).
    if req.as_of.is_some() {
        fields.retain(|f| f.time <= ctx.now);
    }
    // The best first: those under `min_score` are a tail of them. Key-value entries are
    // known by their records: with them left out, every candidate is ranked and read, and
    // the page cut after.
    let keep = if req.exclude_key_value {
        fields.len().max(req.limit)
    } else {
        req.limit
    };
    let mut ranked = rescore::rescore(config, fields, fused, ctx.now, keep);
    if let Some(min) = req.min_score {
        ranked.retain(|h| h.score >= min);
    }
    let mut hits = rescore::read_records(ctx.store, ctx.tenant, ranked, read)?;
    successors::in_place_of_superseded(ctx, req, &mut hits)?;
    // An archived memory the graph named has no text here unless asked for.
    hits.retain(|h| crate::declarative::readable(&req.filter, &h.memory) && req.admits(&h.memory));
    hits.truncate(req.limit);
    Ok(hits)
}

/// The hits among `found` (a vector search's nearest, in `partition`), by similarity alone:
/// the cosine itself with absolute scores, else relative to the best; rescored as any
/// recall is, the best `limit`.
pub(crate) fn similar(
    ctx: &Context<'_>,
    partition: &Partition,
    found: &[Scored],
    limit: usize,
) -> Result<Vec<RecallHit>> {
    let fusion = if ctx.config.fusion.is_absolute() {
        Fusion::Absolute { lexical: 0.0 }
    } else {
        Fusion::Rrf { k: 60.0 }
    };
    let fused = fuse::fuse(fusion, &[], found);
    let ids: Vec<MemoryId> = found.iter().map(|s| s.id).collect();
    let fields = ctx.store.rank_fields(partition, &ids)?;
    let ranked = rescore::rescore(ctx.config, fields, fused, ctx.now, limit);
    rescore::read_records(ctx.store, ctx.tenant, ranked, IdMap::default())
}
