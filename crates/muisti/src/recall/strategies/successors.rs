//! A superseded memory's place goes to what replaced it. A question is often worded as the
//! old fact was ("Am I still doing pottery on Thursdays?"), so the old memory matches it
//! best; when the request leaves superseded memories out, the memory that replaced it (its
//! `superseded_by`, followed to the one the request admits) takes its place and score,
//! unless it is among the hits already.

use std::sync::Arc;

use muisti_core::{IdSet, Locator, MemoryState, Result};

use super::super::{RecallHit, RecallRequest, pipeline::Context};

/// Most links followed from one superseded memory (a fact that changed this many times in
/// a row; a longer chain, or a loop, ends the search).
const MAX_LINKS: usize = 8;

/// Puts in place of each hit the request does not admit because it was superseded the
/// memory that replaced it, as the module docs say. Hits the request does not admit stay
/// as they are (the caller leaves them out).
pub(in crate::recall) fn in_place_of_superseded(
    ctx: &Context<'_>,
    req: &RecallRequest,
    hits: &mut [RecallHit],
) -> Result<()> {
    let mut present: IdSet = hits.iter().map(|h| h.memory.id).collect();
    let shared = req.shared_filter();
    // What the request could have found itself: its partition, its filter (or, for the
    // tenant's shared memories beside a user's, theirs), its states and time.
    let fits = |old: &muisti_core::Memory, m: &muisti_core::Memory| {
        m.partition == old.partition
            && m.owner.user_id == old.owner.user_id
            && (req.filter.matches(m) || shared.as_ref().is_some_and(|f| f.matches(m)))
            && crate::declarative::readable(&req.filter, m)
            && req.admits(m)
    };
    for hit in hits.iter_mut() {
        if hit.memory.state != MemoryState::Superseded || req.admits(&hit.memory) {
            continue;
        }
        let mut next = hit.memory.superseded_by;
        for _ in 0..MAX_LINKS {
            let Some(id) = next else { break };
            let at = Locator::Id {
                tenant: ctx.tenant.clone(),
                id,
            };
            let Some(m) = ctx.store.get(&at)? else { break };
            if fits(&hit.memory, &m) {
                if present.insert(m.id) {
                    hit.memory = Arc::new(m);
                }
                break;
            }
            next = if m.state == MemoryState::Superseded {
                m.superseded_by
            } else {
                None
            };
        }
    }
    Ok(())
}
