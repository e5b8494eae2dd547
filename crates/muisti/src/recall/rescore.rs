//! Rescoring: the contenders that can still reach the top once recency, access and
//! importance are added, their scores, and the hits with their records.

use std::{sync::Arc, time::Duration};

use muisti_core::{IdMap, Memory, MemoryId, RankFields, Result, Store, Tenant, Timestamp};

use super::{RecallConfig, RecallHit, Signals, Weights, fuse::Fused};

/// The candidates that can still reach the top `limit` once recency, access and importance
/// are added: those whose relevance is within `(w_recency + w_access + w_importance) /
/// w_relevance` of the `limit`-th best (the others cannot overtake it), or within what later
/// strategies may still add to them ([`Lifts`]). Only these are read. Best first (ties by id).
pub(super) fn contenders(
    config: &RecallConfig,
    fused: &Fused,
    limit: usize,
    lifts: Lifts,
) -> Vec<MemoryId> {
    let w = config.weights;
    let order = |a: &(MemoryId, f32), b: &(MemoryId, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut by_relevance: Vec<(MemoryId, f32)> =
        fused.iter().map(|(id, (r, _))| (*id, *r)).collect();
    let k = limit.saturating_sub(1);
    if by_relevance.len() <= k {
        by_relevance.sort_by(order);
        return by_relevance.into_iter().map(|(id, _)| id).collect();
    }
    // The k-th best alone is needed to know who is in; only those are sorted.
    let kth = by_relevance.select_nth_unstable_by(k, order).1.1;
    // Absolute: a score is relevance scaled by a factor in [1 − boost share, 1], so a
    // candidate can overtake the k-th only if its relevance is at least (1 − share) × kth.
    let floor = if config.fusion.is_absolute() {
        kth * (1.0 - boost_share(&w))
    } else if w.relevance > 0.0 {
        kth - (w.recency + w.access + w.importance) / w.relevance
    } else {
        f32::NEG_INFINITY
    } - lifts.any;
    by_relevance.retain(|(_, r)| *r >= floor - lifts.best_more);
    by_relevance.sort_by(order);
    by_relevance
        .into_iter()
        .enumerate()
        .filter(|(rank, (_, r))| *rank < lifts.best || *r >= floor)
        .map(|(_, (id, _))| id)
        .collect()
}

/// What strategies applied after [`contenders`] are chosen may still add to a candidate's
/// relevance: a candidate they can lift into the top must be read.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Lifts {
    /// What any candidate may gain (the temporal strategy's weight).
    pub(super) any: f32,
    /// How many of the most relevant may gain [`Lifts::best_more`] besides (word matching
    /// scores only the [`RecallConfig::words_pool`] best: the others cannot gain its part).
    pub(super) best: usize,
    pub(super) best_more: f32,
}

/// The share of the weights that recency, access and importance hold: with absolute scores,
/// the most they can take off a memory's relevance.
fn boost_share(w: &Weights) -> f32 {
    let boosts = w.recency + w.access + w.importance;
    let total = (w.relevance + boosts).max(f32::EPSILON);
    (boosts / total).clamp(0.0, 1.0)
}

/// A candidate with its final score, before its record is read.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Ranked {
    pub(super) id: MemoryId,
    pub(super) score: f32,
    pub(super) signals: Signals,
}

/// Recency of a memory last written at `written`, 0 to 1: 1 now, 0.5 one half-life ago.
pub(crate) fn recency(written: Timestamp, now: Timestamp, half_life: Duration) -> f32 {
    let age_ms = (now.as_millis() - written.as_millis()).max(0) as f64;
    let half_life_ms = half_life.as_millis().max(1) as f64;
    0.5f64.powf(age_ms / half_life_ms) as f32
}

/// Access frequency of a memory recalled `count` times, 0 to 1, log-scaled (1 at 100).
pub(crate) fn access(count: u64) -> f32 {
    ((1.0 + count as f32).ln() / 101f32.ln()).min(1.0)
}

/// Rescores fused candidates with recency, access and importance: the best `limit`, best
/// first (the rest are left out).
pub(super) fn rescore(
    config: &RecallConfig,
    candidates: Vec<RankFields>,
    mut fused: Fused,
    now: Timestamp,
    limit: usize,
) -> Vec<Ranked> {
    let w = config.weights;
    let total = (w.relevance + w.recency + w.access + w.importance).max(f32::EPSILON);
    let boosts = (w.recency + w.access + w.importance).max(f32::EPSILON);
    let share = boost_share(&w);
    let mut ranked: Vec<Ranked> = candidates
        .into_iter()
        .filter_map(|m| {
            let (_, mut signals) = fused.remove(&m.id)?;
            signals.recency = recency(m.updated_at, now, config.half_life);
            signals.access = access(m.access_count);
            signals.importance = m.importance.clamp(0.0, 1.0);
            let boost = (w.recency * signals.recency
                + w.access * signals.access
                + w.importance * signals.importance)
                / boosts;
            let score = if config.fusion.is_absolute() {
                // Bounded: the boosts scale relevance within [1 − share, 1], so they order
                // equally relevant memories and never lift an irrelevant one.
                let factor = 1.0 - share + share * boost;
                signals.boost = Some(factor);
                signals.relevance * factor
            } else {
                (w.relevance * signals.relevance + boosts * boost) / total
            };
            Some(Ranked {
                id: m.id,
                score,
                signals,
            })
        })
        .collect();
    muisti_core::text::keep_best(&mut ranked, limit, |a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.signals.relevance.total_cmp(&a.signals.relevance))
            .then(a.id.cmp(&b.id))
    });
    ranked
}

/// The ranked candidates as hits, with the records `read` returns for their ids (in any
/// order); a candidate whose record is gone meanwhile is left out.
pub(super) fn with_records(ranked: Vec<Ranked>, mut records: IdMap<Arc<Memory>>) -> Vec<RecallHit> {
    ranked
        .into_iter()
        .filter_map(|r| {
            Some(RecallHit {
                memory: records.remove(&r.id)?,
                score: r.score,
                signals: r.signals,
            })
        })
        .collect()
}

/// The records of ranked candidates: those in `read` (already read by this recall), the
/// others read now (only these: the rescoring itself reads [`Store::rank_fields`]).
pub(super) fn read_records(
    store: &dyn Store,
    tenant: &Tenant,
    ranked: Vec<Ranked>,
    mut read: IdMap<Arc<Memory>>,
) -> Result<Vec<RecallHit>> {
    let missing: Vec<MemoryId> = ranked
        .iter()
        .map(|r| r.id)
        .filter(|id| !read.contains_key(id))
        .collect();
    for m in store.get_many_shared(tenant, &missing)? {
        read.insert(m.id, m);
    }
    Ok(with_records(ranked, read))
}
