//! The temporal strategy: the periods a query names ("last week", "in March 2024"), matched
//! against each contender's time, and with [`RecallConfig::temporal_text`] against the
//! periods its own words name.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use muisti_core::{IdMap, Memory, MemoryId, RankFields, Result, Timestamp};

use crate::recall::{
    Context, RecallConfig,
    fuse::{Fused, normalise},
};
use muisti_lang::time::Period;

/// The contenders that speak of one of the periods a query names ([`speaks_of`]): by their
/// time, and with [`RecallConfig::temporal_text`] by their own words (the records of those
/// their time does not place are read for it, and kept in `read`).
pub(in crate::recall) fn speaking_of(
    ctx: &Context<'_>,
    fields: &[RankFields],
    periods: &[Period],
    read: &mut IdMap<Arc<Memory>>,
) -> Result<HashSet<MemoryId>> {
    let config = ctx.config;
    let mut matched = HashSet::new();
    let mut unplaced = HashMap::new();
    for f in fields {
        if speaks_of(config, periods, f.time, None) {
            matched.insert(f.id);
        } else {
            unplaced.insert(f.id, f.time);
        }
    }
    if config.temporal_text && !unplaced.is_empty() {
        let ids: Vec<MemoryId> = unplaced.keys().copied().collect();
        for m in ctx.store.get_many_shared(ctx.tenant, &ids)? {
            let Some(time) = unplaced.get(&m.id) else {
                continue;
            };
            // Their time did not place them: their words may.
            if told_of(periods, *time, &m.text()) {
                matched.insert(m.id);
            }
            read.insert(m.id, m);
        }
    }
    Ok(matched)
}

/// Whether a memory speaks of one of `periods` (the temporal strategy's one rule): its
/// time falls in one (or up to `config.temporal_after` later), or, when `text` is given, a
/// period its text names, resolved against its time ("last week", said on 12 June), meets
/// one ([`told_of`]).
pub(in crate::recall) fn speaks_of(
    config: &RecallConfig,
    periods: &[Period],
    time: Timestamp,
    text: Option<&str>,
) -> bool {
    periods
        .iter()
        .any(|p| p.contains(time, config.temporal_after))
        || text.is_some_and(|text| told_of(periods, time, text))
}

/// The text half of [`speaks_of`]: whether a period `text` names, resolved against the
/// memory's `time`, meets one of `periods`.
pub(in crate::recall) fn told_of(periods: &[Period], time: Timestamp, text: &str) -> bool {
    muisti_lang::time::periods(text, time)
        .iter()
        .any(|own| periods.iter().any(|p| p.overlaps(own)))
}

/// Adds the temporal strategy's part to fused candidates: each of `matched` (those that
/// [`speaks_of`] a period the query names) gains `config.temporal`, and relevance is made
/// again by the fusion's rule ([`normalise`]).
pub(in crate::recall) fn with_time(
    config: &RecallConfig,
    fused: &mut Fused,
    matched: &HashSet<MemoryId>,
) {
    for id in matched {
        if let Some(e) = fused.get_mut(id) {
            e.1.from_time = Some(config.temporal);
            e.0 += config.temporal;
        }
    }
    normalise(config.fusion, fused);
}
