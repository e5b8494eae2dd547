//! Declarative memory: proposals waiting for confirmation, and histories.

use super::*;

/// The API form of a proposal.
pub fn proposal_out(p: &muisti::Proposal) -> api::Proposal {
    api::Proposal {
        id: p.id.to_string(),
        namespace: p.namespace.to_string(),
        content: p.content.clone(),
        kind: p.kind.to_string(),
        source: p.source.to_string(),
        confidence: p.confidence,
        user_id: p.owner.user_id.clone(),
        agent_id: p.owner.agent_id.clone(),
        supersedes: p.supersedes.as_ref().map(|s| api::ProposalTarget {
            id: s.id.to_string(),
            content: s.content.clone(),
            source: s.source.to_string(),
            confidence: s.confidence,
        }),
        created_at: p.created_at.to_string(),
        expires_at: p.expires_at.to_string(),
    }
}

/// Applies a proposal of the deciding user's; the entry as stored and what happened.
pub fn confirm(
    engine: &Engine,
    id: &str,
    by: api::ProposalDecision,
) -> Result<(api::Memory, muisti::WriteStatus)> {
    let d = engine.declarative().confirm(id, &by.user_id)?;
    Ok((memory_out(&d.memory), d.outcome.status()))
}

/// Drops a proposal of the deciding user's; returns it.
pub fn reject(engine: &Engine, id: &str, by: api::ProposalDecision) -> Result<api::Proposal> {
    Ok(proposal_out(&engine.declarative().reject(id, &by.user_id)?))
}

/// The proposals waiting for a user.
pub fn proposals(engine: &Engine, p: api::ProposalParams) -> Result<api::Proposals> {
    Ok(api::Proposals {
        proposals: engine
            .declarative()
            .proposals(&p.user_id)?
            .iter()
            .map(proposal_out)
            .collect(),
    })
}

/// A memory's declarative history, oldest first, as a request acting for `user` sees it.
pub fn history(engine: &Engine, id: &str, user: Option<&str>) -> Result<api::History> {
    let id = memory_id(id)?;
    // Over HTTP a deleted memory is gone, its history with it (the library's
    // `Engine::history` still reads the delete). A history is read by the entry's id, as
    // mem0's `history(id)`; naming a user, only that user's entry's.
    match user {
        Some(_) => visible(engine, id, user).map(drop)?,
        None if engine.get_by_id(id)?.is_some() => {}
        None => return Err(Error::NotFound(format!("memory {id}"))),
    }
    let history = engine
        .history(id)?
        .into_iter()
        .map(|h| api::HistoryEntry {
            event: h.event.as_str().to_owned(),
            old: h.old,
            new: h.new,
            source: h.source.to_string(),
            confidence: h.confidence,
            actor: h.actor,
            at: h.at.to_string(),
        })
        .collect();
    Ok(api::History { history })
}
