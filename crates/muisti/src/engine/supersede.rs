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

use std::collections::{HashMap, HashSet};

use muisti_core::{MemoryState, Patch, RankFields, UpdateRequest};
use muisti_lang::conflict::Statement;

use crate::declarative::judge;

use super::*;

/// How many of the user's most similar memories a written memory is compared with.
const CANDIDATES: usize = 5;

/// The memories a batch is to mark superseded, each with the memory that replaces it, and
/// how many of each user's (so that a user's later comparisons ask recall for as many more,
/// to compare with as many others).
/// Also each memory's text as read for the comparisons, so that a memory compared with
/// several in one batch is read once.
#[derive(Default)]
struct Marked {
    successor: HashMap<MemoryId, Arc<Memory>>,
    by_user: HashMap<Option<String>, usize>,
    reads: HashMap<(MemoryId, u64), Arc<Statement>>,
}

impl Marked {
    /// `m`'s text read ([`Statement::read`]), once per version.
    fn read(&mut self, m: &Memory) -> Arc<Statement> {
        let read = self
            .reads
            .entry((m.id, m.version))
            .or_insert_with(|| Arc::new(Statement::read(&m.text())));
        Arc::clone(read)
    }

    fn contains(&self, id: &MemoryId) -> bool {
        self.successor.contains_key(id)
    }

    fn add(&mut self, older: &Memory, newer: &Memory) {
        self.successor.insert(older.id, Arc::new(newer.clone()));
        *self.by_user.entry(older.owner.user_id.clone()).or_default() += 1;
    }

    /// Recall's `hits` as recall would give them had the batch's marks been made: a marked
    /// memory replaced by the memory that replaces it (as recall puts a superseded
    /// memory's successor in its place), or left out when that one is among them already.
    fn in_place(&self, hits: Vec<Arc<Memory>>) -> Vec<Arc<Memory>> {
        let mut present: HashSet<MemoryId> = hits.iter().map(|m| m.id).collect();
        let mut out = Vec::with_capacity(hits.len());
        for m in hits {
            if !self.contains(&m.id) {
                out.push(m);
                continue;
            }
            let mut next = self.successor.get(&m.id);
            // A chain of marks (each memory's successor marked in turn) ends at a live one.
            for _ in 0..self.successor.len() {
                let Some(s) = next else { break };
                if !self.contains(&s.id) {
                    if present.insert(s.id) {
                        out.push(Arc::clone(s));
                    }
                    break;
                }
                next = self.successor.get(&s.id);
            }
        }
        out
    }

    fn of_user(&self, m: &Memory) -> usize {
        self.by_user.get(&m.owner.user_id).copied().unwrap_or(0)
    }
}

/// Whether an update failed because its memory went or changed meanwhile (the writer that
/// changed it decides).
fn gone_or_changed(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound)
}

/// At most how many more candidates a comparison asks for in place of memories its batch
/// marks (a batch of one user's memories may mark hundreds; the few most similar count).
const MAX_SKIPPED: usize = 16;

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
    ///
    /// The pairs are found first, each memory in the order it became true, as if each mark
    /// were made before the next memory is compared (a memory marked stands for the memory
    /// that replaces it among the later ones' candidates, as recall would put it); then all
    /// are marked in one batch ([`Engine::supersede_all`]).
    pub(super) fn mark_superseded(&self, written: &mut [Written]) -> Result<Vec<Memory>> {
        let mut order: Vec<usize> = (0..written.len())
            .filter(|&i| {
                written[i].status == WriteStatus::Created && replaceable(&written[i].memory)
            })
            .collect();
        order.sort_by_key(|&i| since(&written[i].memory));
        let mut pairs = Vec::new();
        let mut marked = Marked::default();
        let mut failed = None;
        for i in order {
            let m = &written[i].memory;
            if m.state != MemoryState::Active || marked.contains(&m.id) {
                continue;
            }
            match self.replaced_by(m, &mut marked) {
                Ok(Some((older, newer))) => {
                    marked.add(&older, &newer);
                    pairs.push((older, newer));
                }
                Ok(None) => {}
                // The pairs found so far are still marked (the batch is written and is not
                // compared again), then the error is returned.
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let at: HashMap<MemoryId, usize> = written
            .iter()
            .enumerate()
            .map(|(i, w)| (w.memory.id, i))
            .collect();
        let mut marked_all = Vec::new();
        for m in self.supersede_all(&pairs)?.into_iter().flatten() {
            if let Some(&i) = at.get(&m.id) {
                written[i].memory = m.clone();
            }
            marked_all.push(m);
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(marked_all),
        }
    }

    /// Marks `older` superseded by `newer`: linked to it, true until `newer` became true (or
    /// until `older` itself did, if `newer` is dated before it).
    /// `None` when `older` changed or went meanwhile (the writer that changed it decides).
    pub(crate) fn supersede(&self, older: &Memory, newer: &Memory) -> Result<Option<Memory>> {
        match self.update(self.superseding(older, newer)) {
            Ok(marked) => Ok(Some(marked)),
            Err(e) if gone_or_changed(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Engine::supersede`] of each pair (older, newer), in order, written as one batch
    /// ([`Store::update_many`](muisti_core::Store::update_many): one transaction where the
    /// store has them) and followed as one ([`Core::after_write`](crate::core::Core)). Each
    /// `older` is a memory [`replaceable`] as recall found it: a live long-term memory (not
    /// declarative, not archived), so the rules [`Engine::update`] adds for those do not
    /// apply.
    fn supersede_all(&self, pairs: &[(Memory, Memory)]) -> Result<Vec<Option<Memory>>> {
        let reqs: Vec<UpdateRequest> = pairs
            .iter()
            .map(|(older, newer)| self.superseding(older, newer))
            .collect();
        let mut batch = self.core.store.update_many(&reqs)?.into_iter();
        let mut out = Vec::with_capacity(pairs.len());
        // The marks the batch wrote, with what they changed, to be followed together (a
        // mark made again through `Engine::update` is followed there).
        let mut batched = Vec::new();
        let mut failed = None;
        for (older, newer) in pairs {
            let result = match batch.next() {
                Some(Ok(m)) if m.id != older.id => Err(Error::backend(
                    "engine",
                    "a batch update answered for another memory than asked",
                )),
                Some(Ok(m)) => {
                    batched.push((m.clone(), older.clone()));
                    Ok(m)
                }
                // Changed since the batch read it (its comparisons came first): marked still
                // if it says what it said and nothing replaced it meanwhile.
                Some(Err(e)) if e.kind() == ErrorKind::Conflict => {
                    self.supersede_again(older, newer)
                }
                Some(Err(e)) => Err(e),
                None => Err(Error::backend(
                    "engine",
                    "a batch update answered too few updates",
                )),
            };
            match result {
                Ok(m) => out.push(Some(m)),
                Err(e) if gone_or_changed(&e) => out.push(None),
                Err(e) => {
                    failed.get_or_insert(e);
                    out.push(None);
                }
            }
        }
        let changes: Vec<Change<'_>> = batched
            .iter()
            .map(|(m, older)| Change::updated(m, older.clone()))
            .collect();
        self.core.after_write(&changes)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// [`Engine::supersede`] of `older` as it is now, if it is still a live memory that says
    /// what it said when it was compared and nothing replaced it meanwhile (an update of
    /// its access or its tags came between); `NotFound` when not.
    fn supersede_again(&self, older: &Memory, newer: &Memory) -> Result<Memory> {
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: older.id,
        };
        let gone = || Error::NotFound(at.describe());
        let now = self.core.store.get(&at)?.ok_or_else(gone)?;
        if !replaceable(&now) || now.content != older.content || now.context != older.context {
            return Err(gone());
        }
        self.supersede(&now, newer)?.ok_or_else(gone)
    }

    /// The one update that marks `older` superseded by `newer`: linked to it, true until the
    /// newer became true (and never before it itself did: a retraction said before a fact of
    /// the same messages was dated), conditional on the version read.
    fn superseding(&self, older: &Memory, newer: &Memory) -> UpdateRequest {
        let patch = Patch {
            superseded_by: Some(newer.id),
            valid_until: Some(Some(since(newer).max(since(older)))),
            ..Patch::default()
        };
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: older.id,
        };
        UpdateRequest::new(at, patch).expecting(Some(older.version))
    }

    /// The pair (older, newer) of `m` and the user's live memory it conflicts with, if any:
    /// the most similar of its [`CANDIDATES`] nearest for which the later one replaces the
    /// earlier. Memories of `marked` (to be marked superseded in the same batch) are
    /// candidates as recall would have them once marked ([`Marked::in_place`]).
    fn replaced_by(&self, m: &Memory, marked: &mut Marked) -> Result<Option<(Memory, Memory)>> {
        let text = m.text();
        let read = marked.read(m);
        // Only a memory dated before it was written can have been said before a later-dated
        // one; a memory that neither fills a slot nor announces a change replaces nothing.
        let dated_back = m.valid_from.is_some_and(|v| v < m.created_at);
        if text.trim().is_empty() || !(read.may_replace() || dated_back) {
            return Ok(None);
        }
        let skipped = marked.of_user(m).min(MAX_SKIPPED);
        let mut req = RecallRequest::new(
            m.partition.namespace.clone(),
            text.as_ref(),
            CANDIDATES + 1 + skipped,
        );
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
        let hits = self.recall_as(&req, false)?;
        let found = marked.in_place(hits.into_iter().map(|h| h.memory).collect());
        for other in found.into_iter().take(CANDIDATES + 1) {
            if other.id == m.id || !replaceable(&other) {
                continue;
            }
            let theirs = marked.read(&other);
            let found = if since(&other) <= since(m) {
                read.replaces(&theirs)
            } else {
                theirs.replaces(&read)
            };
            if found.is_some() {
                return Ok(Some(ordered(&other)));
            }
            unsure.push(other);
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
