//! What a newer memory replaces. After every write of a user's long-term memories (one
//! `remember`, a batch, what extraction and the proxy store: they all come through
//! [`Engine::remember`] or [`Engine::remember_many`]), each written memory is compared with
//! the user's most similar live memories; when the two state different values of the same
//! thing ([`muisti_lang::conflict::replaces`]: "I live in Lisbon" / "Moved to Porto"), the
//! one that became true first is marked superseded by the other: kept, linked to it
//! (`superseded_by`), true until the newer one's time (`valid_until`). Dates decide, not
//! the order of writing: a memory dated earlier than one it conflicts with is the one
//! superseded, so a batch of dated memories written in any order ends the same. Where the
//! word rules see no change, a configured conflict judge (a model) decides among the
//! candidates the detector would show it.
//!
//! Recall leaves superseded memories out unless asked ([`RecallRequest::include_superseded`]),
//! and a recall as of an earlier time still finds them (they were true then).

use muisti_core::{MemoryState, Patch, RankFields, UpdateRequest};
use muisti_lang::conflict::Statement;

use crate::declarative::judge;

use super::*;

/// How many of the user's most similar memories a written memory is compared with.
const CANDIDATES: usize = 5;

/// When a memory became true: its `valid_from`, else when it was written.
fn since(m: &Memory) -> muisti_core::Timestamp {
    RankFields::time_of(m.valid_from, m.created_at)
}

/// Whether a memory states something that a later one may replace: a live long-term
/// memory of a user, keyless (a keyed entry is replaced by writing its key), not a turn of
/// a conversation (what was said stays said).
fn replaceable(m: &Memory) -> bool {
    m.owner.user_id.is_some()
        && m.writer_key().is_none()
        && m.state == MemoryState::Active
        && m.scope == MemoryScope::LongTerm
        && m.category != muisti_core::Category::Conversation
        && m.valid_until.is_none()
}

impl Engine {
    /// Marks what the memories just `written` replace, and the written ones that a memory
    /// dated later replaces (see the module docs). A written memory found superseded is
    /// returned in its new state. Returns each memory marked, as marked (its
    /// `superseded_by` names the memory that replaced it).
    pub(super) fn mark_superseded(&self, written: &mut [Written]) -> Result<Vec<Memory>> {
        let mut marked_all = Vec::new();
        let mut order: Vec<usize> = (0..written.len())
            .filter(|&i| {
                written[i].status == WriteStatus::Created && replaceable(&written[i].memory)
            })
            .collect();
        order.sort_by_key(|&i| since(&written[i].memory));
        for i in order {
            let m = &written[i].memory;
            if m.state != MemoryState::Active {
                continue;
            }
            let Some((older, newer)) = self.replaced_by(m)? else {
                continue;
            };
            let Some(marked) = self.supersede(&older, &newer)? else {
                continue;
            };
            if let Some(w) = written.iter_mut().find(|w| w.memory.id == marked.id) {
                w.memory = marked.clone();
            }
            marked_all.push(marked);
        }
        Ok(marked_all)
    }

    /// Marks `older` superseded by `newer`: linked to it, true until `newer` became true (or
    /// until `older` itself did, if `newer` is dated before it).
    /// `None` when `older` changed or went meanwhile (the writer that changed it decides).
    /// The one marking every path that replaces a memory makes.
    pub(crate) fn supersede(&self, older: &Memory, newer: &Memory) -> Result<Option<Memory>> {
        // True until the newer became true, and never before it itself did (a retraction
        // said before a fact of the same messages was dated).
        let patch = Patch {
            superseded_by: Some(newer.id),
            valid_until: Some(Some(since(newer).max(since(older)))),
            ..Patch::default()
        };
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: older.id,
        };
        match self.update(UpdateRequest::new(at, patch).expecting(Some(older.version))) {
            Ok(marked) => Ok(Some(marked)),
            Err(e) if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The pair (older, newer) of `m` and the user's live memory it conflicts with, if any:
    /// the most similar of its [`CANDIDATES`] nearest for which the later one replaces the
    /// earlier.
    fn replaced_by(&self, m: &Memory) -> Result<Option<(Memory, Memory)>> {
        let text = m.text();
        let read = Statement::read(&text);
        // Only a memory dated before it was written can have been said before a later-dated
        // one; a memory that neither fills a slot nor announces a change replaces nothing.
        let dated_back = m.valid_from.is_some_and(|v| v < m.created_at);
        if text.trim().is_empty() || !(read.may_replace() || dated_back) {
            return Ok(None);
        }
        let mut req =
            RecallRequest::new(m.partition.namespace.clone(), text.as_ref(), CANDIDATES + 1);
        req.filter.user_id = m.owner.user_id.clone();
        req.filter.scope = Some(MemoryScope::LongTerm);
        // The pair of `m` and `other` in the order they became true.
        let ordered = |other: &Memory| {
            if since(other) <= since(m) {
                (other.clone(), m.clone())
            } else {
                (m.clone(), other.clone())
            }
        };
        let mut unsure = Vec::new();
        for hit in self.recall_as(&req, false)? {
            let other: &Memory = &hit.memory;
            if other.id == m.id || !replaceable(other) {
                continue;
            }
            let theirs = Statement::read(&other.text());
            let found = if since(other) <= since(m) {
                read.replaces(&theirs)
            } else {
                theirs.replaces(&read)
            };
            if found.is_some() {
                return Ok(Some(ordered(other)));
            }
            unsure.push(Arc::clone(&hit.memory));
        }
        Ok(self.judged(m, &text, &unsure)?.map(|other| ordered(&other)))
    }

    /// A second opinion where the rules found no change: with a
    /// [`ConflictJudge`](crate::declarative::ConflictJudge) configured
    /// (a model), the one of `unsure` (the user's memories most like `m`) that `m` restates
    /// or changes, among those the detector would show a judge
    /// (`muisti_lang::conflict::candidates`: no veto, and a shared slot, topic term or
    /// cosine); none
    /// without a judge, without candidates, or when the judge fails (logged: the rules'
    /// verdict stands).
    fn judged(&self, m: &Memory, text: &str, unsure: &[Arc<Memory>]) -> Result<Option<Memory>> {
        let Some(judge) = &self.conflict_judge else {
            return Ok(None);
        };
        if unsure.is_empty() {
            return Ok(None);
        }
        let texts: Vec<String> = unsure.iter().map(|o| o.text().into_owned()).collect();
        let judgements = judge::judgements(&self.core, text, &texts)?;
        Ok(
            judge::second_opinion(judge.as_ref(), text, &m.category, &texts, &judgements)
                .flatten()
                .map(|i| (*unsure[i]).clone()),
        )
    }
}
