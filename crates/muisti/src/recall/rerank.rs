//! Re-scoring recall's best hits with a second, stronger model (a transformer): the query
//! and each hit's text embedded together, the hit's score `(1 − w) × its recall score + w ×
//! max(cosine, 0)`. Recall's own ranking decides which memories are in the pool (the words
//! a question shares count there); the stronger model decides their order, where the
//! built-in model's vectors are weakest (a question in other words than the memory's).

use muisti_core::Result;
use muisti_embed::Embedder;

use super::RecallHit;

/// Re-scores `hits` (recall's best, best first) by `reranker`'s cosine of `query` and each
/// hit's text with weight `weight`, best first; keeps those at or above `min_score` and at
/// most `limit`.
pub(crate) fn rerank(
    reranker: &dyn Embedder,
    weight: f32,
    query: &str,
    mut hits: Vec<RecallHit>,
    limit: usize,
    min_score: Option<f32>,
) -> Result<Vec<RecallHit>> {
    if hits.is_empty() {
        return Ok(hits);
    }
    let texts: Vec<_> = hits.iter().map(|h| h.memory.text()).collect();
    let mut all: Vec<&str> = Vec::with_capacity(texts.len() + 1);
    all.push(query);
    all.extend(texts.iter().map(|t| t.as_ref()));
    let vectors = reranker.embed(&all).map_err(crate::core::embed_err)?;
    let Some((q, memories)) = vectors.split_first() else {
        return Ok(hits);
    };
    for (hit, v) in hits.iter_mut().zip(memories) {
        let cosine = muisti_core::text::cosine(q, v);
        hit.signals.rerank = Some(cosine);
        hit.score = (1.0 - weight) * hit.score + weight * cosine.max(0.0);
    }
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    if let Some(min) = min_score {
        hits.retain(|h| h.score >= min);
    }
    hits.truncate(limit);
    Ok(hits)
}
