//! What follows a change: the one definition every path that writes, replaces, updates or
//! supersedes a memory calls ([`Core::after_write`]), and every path that deletes one
//! ([`Core::after_delete`]). The paths store; the engine's [`Follower`]s (one each for the
//! observers' events, the history, the access log, the graph and the archive) are told in
//! order, so a
//! promise made of changes (the observers see each one, an actor's changes are in the
//! history, the graph reads what is new and forgets what is gone, a deleted memory's
//! archive object goes with it) holds on every path by construction.

use std::collections::HashSet;

use muisti_core::{Event, Memory, Result, WriteStatus, Written};

use super::Core;
use crate::declarative::HistoryEvent;

/// One change to a memory, as what follows it reads it.
pub(crate) struct Change<'a> {
    /// The memory as the change left it.
    pub(crate) memory: &'a Memory,
    /// What the store did.
    pub(crate) status: WriteStatus,
    /// What its history calls it (when it is recorded).
    pub(crate) event: HistoryEvent,
    /// The record as it was before, when the path read it: what the history keeps of it,
    /// and the user and scope the graph's facts of it belong to. `None` for a new memory,
    /// and for a replace at a key the path did not read (its text is taken as changed).
    pub(crate) before: Option<Memory>,
}

impl<'a> Change<'a> {
    /// A write (`Store::put`): an add, or a replace of `before` at its key.
    pub(crate) fn written(w: &'a Written, before: Option<Memory>) -> Self {
        Self {
            memory: &w.memory,
            status: w.status,
            event: match w.status {
                WriteStatus::Updated => HistoryEvent::Update,
                _ => HistoryEvent::Add,
            },
            before,
        }
    }

    /// An update in place of `before`.
    pub(crate) fn updated(memory: &'a Memory, before: Memory) -> Self {
        Self {
            memory,
            status: WriteStatus::Updated,
            event: HistoryEvent::Update,
            before: Some(before),
        }
    }

    /// The same change, recorded in the history as `event` (a supersede, a confirmation).
    pub(crate) fn recorded_as(self, event: HistoryEvent) -> Self {
        Self { event, ..self }
    }

    /// Whether it made or changed what the memory says (a duplicate folded into an
    /// existing memory did not: the update that merged it is its own change).
    pub(crate) fn changed(&self) -> bool {
        matches!(self.status, WriteStatus::Created | WriteStatus::Updated)
    }

    /// Whether it concerns a memory the followers of memories act on: it made or changed
    /// what the memory says ([`Change::changed`]), and the record is not the engine's own
    /// ([`own_record`]).
    pub(crate) fn of_memory(&self) -> bool {
        self.changed() && !own_record(self.memory)
    }

    /// Whether its text is new to what was read from it (a replace at a key that was not
    /// read is taken as new).
    pub(crate) fn text_changed(&self) -> bool {
        match &self.before {
            Some(b) => b.content != self.memory.content || b.context != self.memory.context,
            None => self.status == WriteStatus::Updated,
        }
    }

    /// The record it was before, when the change moved it to another user or scope.
    pub(crate) fn moved_from(&self) -> Option<&Memory> {
        self.before.as_ref().filter(|b| {
            b.owner.user_id != self.memory.owner.user_id || b.scope != self.memory.scope
        })
    }
}

/// Whether a record is the engine's own (its graph, histories, proposals, conversations'
/// messages and headers): observers see it written, and nothing else follows (the one
/// rule every follower calls).
pub(crate) fn own_record(m: &Memory) -> bool {
    let ns = m.partition.namespace.as_str();
    muisti_core::is_reserved(ns)
        || ns == crate::records::MESSAGES_NAMESPACE
        || ns == crate::records::CONVERSATIONS_NAMESPACE
}

/// What follows changes, for one thing that reads or keeps a copy of memories. Told of
/// every change in order; each decides by [`Change::changed`] and [`own_record`] what
/// concerns it.
pub(crate) trait Follower: Send + Sync {
    /// After writes, replaces, updates and supersedes (in the order made).
    fn written(&self, core: &Core, changes: &[Change<'_>]) -> Result<()> {
        let _ = (core, changes);
        Ok(())
    }

    /// After deletes (each record as it was just before).
    fn deleted(&self, core: &Core, gone: &[Memory]) -> Result<()> {
        let _ = (core, gone);
        Ok(())
    }
}

/// The observers: an [`Event::Write`] for each change (the engine's own records too).
pub(crate) struct Events;

impl Follower for Events {
    fn written(&self, core: &Core, changes: &[Change<'_>]) -> Result<()> {
        for c in changes {
            let m = c.memory;
            core.emit(Event::Write {
                partition: m.partition.clone(),
                key: m.key.clone(),
                bytes: if c.changed() { m.text().len() } else { 0 },
                status: c.status,
            });
        }
        Ok(())
    }
}

impl Core {
    /// What follows `changes`: each [`Follower`] told in order, then each user's long-term
    /// cap, kept once per user after all of them (the newest kept; what it evicts goes
    /// through [`Core::after_delete`]).
    pub(crate) fn after_write(&self, changes: &[Change<'_>]) -> Result<()> {
        for f in self.followers.iter() {
            f.written(self, changes)?;
        }
        // Each user's cap once, after the whole batch (the newest of theirs kept).
        let mut capped = HashSet::new();
        for c in changes.iter().rev() {
            let m = c.memory;
            if c.of_memory() && capped.insert((&m.partition, &m.owner.user_id)) {
                self.evict_beyond_cap(m)?;
            }
        }
        Ok(())
    }

    /// What follows the delete of `gone` (each deleted by this call's path, as it was just
    /// before): each [`Follower`] told in order (the archive object, the history's texts
    /// and the delete recorded, the access log's record, the graph's facts).
    pub(crate) fn after_delete(&self, gone: &[Memory]) -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        for f in self.followers.iter() {
            f.deleted(self, gone)?;
        }
        Ok(())
    }
}
