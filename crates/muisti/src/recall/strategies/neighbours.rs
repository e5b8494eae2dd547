//! Neighbourhood evidence: the turn written next after a relevant hit in its session (a
//! question's answer is often the next turn), lifted under the hit that found it.

use std::sync::Arc;

use muisti_core::{
    Filter, IdMap, ListQuery, Memory, MemoryId, MemoryState, Partition, Result, Timestamp,
};

use crate::recall::{
    Context, Fusion, NEIGHBOUR_SEEDS, RELEVANT_SCORE, RecallRequest,
    fuse::{Fused, normalise},
};

/// For each seed `(id, relevance)`, the live memory written next after it in its session and
/// scope (the first of those later memories, in id order, that the request's filter admits:
/// a conversation's next turn, not a fact filed meanwhile), with the seed's relevance. A
/// seed without a session has no neighbour. The seeds' records are read into `read`.
pub(in crate::recall) fn next_in_session(
    ctx: &Context<'_>,
    partition: &Partition,
    req: &RecallRequest,
    seeds: &[(MemoryId, f32)],
    now: Timestamp,
    read: &mut IdMap<Arc<Memory>>,
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
    for m in ctx.store.get_many_shared(ctx.tenant, &ids)? {
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
        let pages = ctx.store.list_many(&queries)?;
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

/// The seeds of neighbourhood evidence: the [`NEIGHBOUR_SEEDS`] most relevant of `ids` whose
/// relevance is at least [`RELEVANT_SCORE`], best first.
pub(in crate::recall) fn neighbour_seeds(fused: &Fused, ids: &[MemoryId]) -> Vec<(MemoryId, f32)> {
    let mut seeds: Vec<(MemoryId, f32)> = ids
        .iter()
        .filter_map(|id| fused.get(id).map(|(_, s)| (*id, s.relevance)))
        .filter(|(_, r)| *r >= RELEVANT_SCORE)
        .collect();
    seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    seeds.truncate(NEIGHBOUR_SEEDS);
    seeds
}

/// Adds neighbourhood evidence to fused candidates: each `(next, seed relevance)` raises the
/// relevance of the memory `next` to `weight × seed relevance` if it is lower (the highest
/// when several seeds name it; a memory no retriever found joins with that alone). With a
/// weight below 1 a neighbour ranks under the hit that lifted it, so the best hit stays
/// first. Relevance is made again by the fusion's rule ([`normalise`]).
pub(in crate::recall) fn with_neighbours(
    fusion: Fusion,
    fused: &mut Fused,
    lifts: &[(MemoryId, f32)],
    weight: f32,
) {
    let mut best: IdMap<f32> = IdMap::default();
    for (id, seed) in lifts {
        let lift = weight * seed;
        let e = best.entry(*id).or_insert(lift);
        *e = e.max(lift);
    }
    for (id, lift) in best {
        let e = fused.entry(id).or_default();
        if lift > e.0 {
            e.1.from_neighbour = Some(lift - e.0);
            e.0 = lift;
        }
    }
    normalise(fusion, fused);
}
