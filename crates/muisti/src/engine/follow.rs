//! What follows a write: the one definition every path that writes, replaces, updates or
//! supersedes a memory calls ([`Engine::after_write`]), as [`Engine::after_delete`] is for
//! deletes. The paths store; this decides what the change means for everything else, so a
//! promise made of changes (the observers see each one, an actor's changes are in the
//! history, the graph reads what is new, the long-term cap holds) holds on every path by
//! construction.

use std::collections::HashSet;

use muisti_core::{Event, Memory, MemoryScope, Result, WriteStatus, Written};

use super::Engine;
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
    fn changed(&self) -> bool {
        matches!(self.status, WriteStatus::Created | WriteStatus::Updated)
    }

    /// Whether its text is new to what was read from it (a replace at a key that was not
    /// read is taken as new).
    fn text_changed(&self) -> bool {
        match &self.before {
            Some(b) => b.content != self.memory.content || b.context != self.memory.context,
            None => self.status == WriteStatus::Updated,
        }
    }

    /// The record it was before, when the change moved it to another user or scope.
    fn moved_from(&self) -> Option<&Memory> {
        self.before.as_ref().filter(|b| {
            b.owner.user_id != self.memory.owner.user_id || b.scope != self.memory.scope
        })
    }
}

/// Whether a record is the engine's own (its graph, histories, proposals, conversations'
/// messages and headers): observers see it written, and nothing else follows.
fn own_record(m: &Memory) -> bool {
    let ns = m.partition.namespace.as_str();
    muisti_core::is_reserved(ns)
        || ns == crate::conversation::MESSAGES_NAMESPACE
        || ns == crate::conversation::CONVERSATIONS_NAMESPACE
}

impl Engine {
    /// What follows `changes`, in order: the observers' [`Event::Write`] for each; then,
    /// for memories (not the engine's own records) whose content the change made or
    /// changed: the history (a declarative entry's always, any memory's when an actor is
    /// named), the graph (a moved memory's facts retired and read again, a new or changed
    /// text queued for extraction), and each user's long-term cap, kept once per user after
    /// all of them (the newest kept).
    pub(crate) fn after_write(&self, changes: &[Change<'_>]) -> Result<()> {
        for c in changes {
            let m = c.memory;
            self.emit(Event::Write {
                partition: m.partition.clone(),
                key: m.key.clone(),
                bytes: if c.changed() { m.text().len() } else { 0 },
                status: c.status,
            });
        }
        let memories: Vec<&Change<'_>> = changes
            .iter()
            .filter(|c| c.changed() && !own_record(c.memory))
            .collect();
        for c in &memories {
            let m = c.memory;
            if m.scope == MemoryScope::Declarative || self.actor.is_some() {
                let before = c.before.as_ref().map(|b| b.text().into_owned());
                self.record(m, c.event, before, Some(m.text().into_owned()))?;
            }
        }
        if self.graph_worker.is_some() {
            for c in &memories {
                if let Some(old) = c.moved_from() {
                    self.graph_forget(old.owner.user_id.as_deref(), &[old.id])?;
                }
            }
            let queued: Vec<(&Memory, bool)> = memories
                .iter()
                .filter_map(|c| match (c.status, c.moved_from()) {
                    (WriteStatus::Created, _) | (_, Some(_)) => Some((c.memory, false)),
                    _ if c.text_changed() => Some((c.memory, true)),
                    _ => None,
                })
                .collect();
            if !queued.is_empty() {
                self.queue_later(&queued);
            }
        }
        // Each user's cap once, after the whole batch (the newest of theirs kept).
        let mut capped = HashSet::new();
        for c in memories.iter().rev() {
            let m = c.memory;
            if capped.insert((&m.partition, &m.owner.user_id)) {
                self.evict_beyond_cap(m)?;
            }
        }
        Ok(())
    }
}
