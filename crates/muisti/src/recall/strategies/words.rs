//! Word-level matching: the share of the query's words a memory matches by meaning, token
//! by token, with the embedder's token vectors (a retriever of meaning: not in a
//! lexical-only recall). Only the most relevant candidates are scored.

use std::{borrow::Cow, sync::Arc};

use muisti_core::{IdMap, Memory, MemoryId, Result};
use muisti_embed::WordMatcher;

use crate::recall::{
    Context, Fusion,
    fuse::{Fused, normalise},
};

/// The share of the query that `matcher` finds in each of the [`word_pool`] of `ids`, by
/// their indexed text (the records not in `read` are read, and kept there).
pub(in crate::recall) fn shares(
    ctx: &Context<'_>,
    matcher: &WordMatcher<'_>,
    fused: &Fused,
    ids: impl IntoIterator<Item = MemoryId>,
    read: &mut IdMap<Arc<Memory>>,
) -> Result<Vec<(MemoryId, f32)>> {
    let pool = word_pool(fused, ids, ctx.config.words_pool);
    let missing: Vec<MemoryId> = pool
        .iter()
        .filter(|id| !read.contains_key(*id))
        .copied()
        .collect();
    if !missing.is_empty() {
        for m in ctx.store.get_many_shared(ctx.tenant, &missing)? {
            read.insert(m.id, m);
        }
    }
    let texts: Vec<(MemoryId, Cow<str>)> = pool
        .iter()
        .filter_map(|id| read.get(id).map(|m| (*id, m.index_text())))
        .collect();
    let scores = matcher.scores(&texts.iter().map(|(_, t)| t.as_ref()).collect::<Vec<_>>());
    Ok(texts.iter().map(|(id, _)| *id).zip(scores).collect())
}

/// The words word-level matching leaves out ([`muisti_embed::Embedder::word_matcher`]'s
/// `skip`): stop words. The one definition recall and the reading of memories' words as they
/// are written ([`muisti_embed::Embedder::prepare_words`]) share.
pub(crate) const WORD_SKIP: fn(&str) -> bool = muisti_core::text::is_stop_word;

/// The pool word-level matching scores: the `len` ([`RecallConfig::words_pool`]) most
/// relevant of `ids`, best first (ties by id).
pub(in crate::recall) fn word_pool(
    fused: &Fused,
    ids: impl IntoIterator<Item = MemoryId>,
    len: usize,
) -> Vec<MemoryId> {
    let mut pool: Vec<(MemoryId, f32)> = ids
        .into_iter()
        .filter_map(|id| fused.get(&id).map(|(r, _)| (id, *r)))
        .collect();
    pool.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    pool.dedup_by_key(|(id, _)| *id);
    pool.truncate(len);
    pool.into_iter().map(|(id, _)| id).collect()
}

/// Adds word-level matching to fused candidates: each `(id, share)` (the share of the query
/// it matches by meaning, 0 to 1) gains `weight × share`, and relevance is made again by the
/// fusion's rule ([`normalise`]).
pub(in crate::recall) fn with_words(
    fusion: Fusion,
    fused: &mut Fused,
    shares: &[(MemoryId, f32)],
    weight: f32,
) {
    for (id, share) in shares {
        let part = weight * share;
        if part > 0.0
            && let Some(e) = fused.get_mut(id)
        {
            e.1.from_words = Some(part);
            e.0 += part;
        }
    }
    normalise(fusion, fused);
}
