//! Re-scoring recall's best hits with a second, stronger model (a transformer): the query
//! and each hit's text embedded together, the hit's score `(1 − w) × its recall score + w ×
//! max(cosine, 0)`. Recall's own ranking decides which memories are in the pool (the words
//! a question shares count there); the stronger model decides their order, where the
//! built-in model's vectors are weakest (a question in other words than the memory's).

use muisti_core::Result;
use muisti_embed::Embedder;

use super::RecallHit;

/// How a reranker treats one recall ([`crate::RecallConfig::rerank`],
/// [`crate::RecallConfig::rerank_trust`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rerank {
    /// The weight of the reranker's cosine in a re-scored hit's score.
    pub(crate) weight: f32,
    /// The share of the query its best word match must cover for recall's order to stand.
    pub(crate) trust: f32,
}

impl Rerank {
    /// Whether `hits` (recall's best, best first) are re-scored: not when the words of
    /// the query are found, the best word match covering at least `trust` of it (a
    /// memory repeating a question's words is what it asks for, and the reranker's cosine
    /// would only blur that order), nor with no weight.
    fn applies(&self, hits: &[RecallHit]) -> bool {
        let words = hits
            .iter()
            .filter_map(|h| h.signals.lexical_score)
            .fold(0.0f32, f32::max);
        self.weight > 0.0 && words < self.trust
    }
}

/// Re-scores `hits` (recall's best, best first) by `reranker`'s cosine of `query` and each
/// hit's text as `how` says, best first; keeps those at or above `min_score` and at most
/// `limit`.
pub(crate) fn rerank(
    reranker: &dyn Embedder,
    how: Rerank,
    query: &str,
    mut hits: Vec<RecallHit>,
    limit: usize,
    min_score: Option<f32>,
) -> Result<Vec<RecallHit>> {
    if !how.applies(&hits) {
        if let Some(min) = min_score {
            hits.retain(|h| h.score >= min);
        }
        hits.truncate(limit);
        return Ok(hits);
    }
    let weight = how.weight;
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
