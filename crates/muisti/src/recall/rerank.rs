//! Re-scoring recall's best hits with a second, stronger model (a transformer): the query
//! and each hit's text embedded together, the hit's score `(1 − w) × its recall score + w ×
//! max(cosine, 0)`. Recall's own ranking decides which memories are in the pool (the words
//! a question shares count there); the stronger model decides their order, where the
//! built-in model's vectors are weakest (a question in other words than the memory's).

use muisti_core::Result;
use muisti_embed::Embedder;

use super::{RecallConfig, RecallHit};

/// Re-scores `hits` (recall's best, best first) by `reranker`'s cosine of `query` and each
/// hit's text, weighted `config.rerank`, unless the query's words are found (see
/// [`words_found`]); then, best first, keeps those at or above `min_score` and at most
/// `limit`.
pub(crate) fn rerank(
    reranker: &dyn Embedder,
    config: &RecallConfig,
    query: &str,
    mut hits: Vec<RecallHit>,
    limit: usize,
    min_score: Option<f32>,
) -> Result<Vec<RecallHit>> {
    if !words_found(&hits, config.rerank_trust) {
        rescore(reranker, config.rerank, query, &mut hits)?;
    }
    if let Some(min) = min_score {
        hits.retain(|h| h.score >= min);
    }
    hits.truncate(limit);
    Ok(hits)
}

/// Whether the query's words are found: the best word match among `hits` covers at least
/// `trust` of it. A memory repeating a question's words is what it asks for, and the
/// reranker's cosine would only blur that order.
fn words_found(hits: &[RecallHit], trust: f32) -> bool {
    hits.iter()
        .filter_map(|h| h.signals.lexical_score)
        .any(|s| s >= trust)
}

/// Each hit's score made `(1 − weight) × its score + weight × max(cosine, 0)`, best first.
fn rescore(
    reranker: &dyn Embedder,
    weight: f32,
    query: &str,
    hits: &mut [RecallHit],
) -> Result<()> {
    let texts: Vec<_> = hits.iter().map(|h| h.memory.text()).collect();
    let mut all: Vec<&str> = Vec::with_capacity(texts.len() + 1);
    all.push(query);
    all.extend(texts.iter().map(|t| t.as_ref()));
    let vectors = reranker.embed(&all).map_err(crate::core::embed_err)?;
    let Some((q, memories)) = vectors.split_first() else {
        return Ok(());
    };
    for (hit, v) in hits.iter_mut().zip(memories) {
        let cosine = muisti_core::text::cosine(q, v);
        hit.signals.rerank = Some(cosine);
        hit.score = (1.0 - weight) * hit.score + weight * cosine.max(0.0);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(())
}
