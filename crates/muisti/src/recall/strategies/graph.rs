//! The graph strategy: the graph's evidence for a query's entities and relations, added to
//! the candidates (a memory only the graph found joins with that alone).

use std::collections::{HashMap, HashSet};

use muisti_core::{MemoryId, Partition, Result};

use crate::recall::{
    Context, Fusion, RecallRequest,
    fuse::{Fused, normalise},
};

/// The graph's `evidence` for a recall, kept for the candidates the retrievers found, and
/// for at most `n` others (the strongest), those of the recalled partition that the filter
/// admits (the retrievers filtered theirs; these are read and checked here).
pub(in crate::recall) fn admitted(
    ctx: &Context<'_>,
    partition: &Partition,
    req: &RecallRequest,
    fused: &Fused,
    mut evidence: HashMap<MemoryId, f32>,
    n: usize,
) -> Result<HashMap<MemoryId, f32>> {
    let mut others: Vec<(MemoryId, f32)> = evidence
        .iter()
        .filter(|(id, _)| !fused.contains_key(*id))
        .map(|(id, g)| (*id, *g))
        .collect();
    others.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    let ids: Vec<MemoryId> = others.iter().map(|(id, _)| *id).collect();
    let (keep, drop) = ids.split_at(ids.len().min(n));
    let admitted: HashSet<MemoryId> = ctx
        .store
        .get_many(ctx.tenant, keep)?
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

/// Adds the graph's evidence to fused candidates: each memory with evidence `g` gains
/// `weight × g` (a memory only the graph found joins with that alone), and relevance is
/// made again by the fusion's rule ([`normalise`]).
pub(in crate::recall) fn with_graph(
    fusion: Fusion,
    fused: &mut Fused,
    evidence: &HashMap<MemoryId, f32>,
    weight: f32,
) {
    for (id, g) in evidence {
        let e = fused.entry(*id).or_default();
        e.1.graph = Some(*g);
        e.1.from_graph = Some(weight * g);
        e.0 += weight * g;
    }
    normalise(fusion, fused);
}
