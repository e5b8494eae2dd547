//! The history follows every change of every memory: each update, supersede, confirmation
//! and delete is a record. A plain memory's add is not written as one (its record is its
//! first version, and [`Engine::history`](crate::Engine::history) reads it from there), so a
//! write costs no second write; a declarative entry's add, and any add under an actor, is
//! recorded as it happens. A deleted memory's history keeps what happened, who did it and
//! when, never what the memory said, for [`DELETED_HISTORY_RETENTION`].

use std::collections::{BTreeMap, HashSet};

use muisti_core::{
    Filter, Key, Locator, Memory, MemoryId, MemoryScope, Owner, Put, Result, list_all,
};
use serde_json::json;

use super::{HISTORY_NAMESPACE, HistoryEntry, HistoryEvent, actor};
use crate::core::{Change, Core, Follower, own_record};
use crate::records;
use muisti_core::Ttl;

/// How long the history of a deleted memory (what happened, who, when; no text) is kept
/// after the delete: then maintenance's expiry removes it.
pub const DELETED_HISTORY_RETENTION: std::time::Duration =
    std::time::Duration::from_secs(90 * 24 * 60 * 60);

/// [`Follower`]: what the history keeps of changes.
pub(crate) struct History;

impl Follower for History {
    fn written(&self, core: &Core, changes: &[Change<'_>]) -> Result<()> {
        // One batch for all of them (a batch of writes marks many superseded at once).
        let mut puts = Vec::new();
        for c in changes {
            let m = c.memory;
            if !c.of_memory() || (c.event == HistoryEvent::Add && !added_recorded(core, m)) {
                continue;
            }
            // An update that links the memory to the one replacing it is its supersede.
            let event = match &c.before {
                Some(b)
                    if c.event == HistoryEvent::Update
                        && b.superseded_by.is_none()
                        && m.superseded_by.is_some() =>
                {
                    HistoryEvent::Supersede
                }
                _ => c.event,
            };
            let before = c.before.as_ref().map(|b| b.text().into_owned());
            let (order, entry) = Self::entry(core, m, event, before, Some(m.text().into_owned()));
            puts.push(Self::entry_put(core, m, order, &entry)?);
        }
        if !puts.is_empty() {
            core.store.put_many(puts)?;
        }
        Ok(())
    }

    /// Clears the texts of the histories of `gone`, then records each delete, without text
    /// (and, for a memory whose add was never recorded, the add before it, so the history
    /// of a deleted memory still says when it began).
    fn deleted(&self, core: &Core, gone: &[Memory]) -> Result<()> {
        let gone: Vec<&Memory> = gone.iter().filter(|m| !own_record(m)).collect();
        if gone.is_empty() {
            return Ok(());
        }
        let begun = Self::erase_history(core, &gone)?;
        // One batch for all of them (a maintenance pass deletes a user's memories at once).
        let mut puts = Vec::with_capacity(gone.len() * 2);
        for m in gone {
            if !begun.contains(&m.id) {
                puts.push(Self::entry_put(core, m, 1, &first_entry(m, None))?);
            }
            let (order, entry) = Self::entry(core, m, HistoryEvent::Delete, None, None);
            puts.push(Self::entry_put(core, m, order, &entry)?);
        }
        core.store.put_many(puts)?;
        Ok(())
    }
}

/// Whether the add of `m` is written to its history as it happens: a declarative entry's,
/// and any under an actor (who the actor was is known only then).
fn added_recorded(core: &Core, m: &Memory) -> bool {
    m.scope == MemoryScope::Declarative || core.actor.is_some()
}

/// The entry that begins `m`'s history when its add was not recorded: `m` was added at its
/// creation, saying `text` (its text then, when known).
pub(crate) fn first_entry(m: &Memory, text: Option<String>) -> HistoryEntry {
    HistoryEntry {
        memory_id: m.id,
        event: HistoryEvent::Add,
        old: None,
        new: text,
        source: m.source.clone(),
        confidence: m.confidence,
        actor: actor(m),
        at: m.created_at,
    }
}

impl History {
    /// Clears the texts of the history records of `gone` (what happened stays); returns
    /// the ids of those whose history records how they began (an add or a confirmation).
    fn erase_history(core: &Core, gone: &[&Memory]) -> Result<HashSet<MemoryId>> {
        let mut begun = HashSet::new();
        let partition = core.own_partition(HISTORY_NAMESPACE);
        // One read of the history per user.
        let mut by_user: BTreeMap<Option<&str>, Vec<MemoryId>> = BTreeMap::new();
        for m in gone.iter() {
            by_user
                .entry(m.owner.user_id.as_deref())
                .or_default()
                .push(m.id);
        }
        for (user, ids) in by_user {
            // The user's history records (a history record is its memory's user's, so the
            // read is narrowed where the store indexes users), and for one memory its own.
            let mut filter = Filter {
                user_id: user.map(str::to_owned),
                without_user: user.is_none(),
                ..Filter::default()
            };
            if let [id] = ids.as_slice() {
                filter
                    .metadata
                    .insert("memory_id".to_owned(), json!(id.to_string()));
            }
            let ids: HashSet<MemoryId> = ids.into_iter().collect();
            for record in list_all(core.store.as_ref(), &partition, &filter)? {
                let Ok(mut entry) = records::HISTORY.decode(&record) else {
                    continue;
                };
                if !ids.contains(&entry.memory_id) {
                    continue;
                }
                if entry.event.begins() {
                    begun.insert(entry.memory_id);
                }
                if entry.old.is_none() && entry.new.is_none() {
                    continue;
                }
                entry.old = None;
                entry.new = None;
                let value = records::HISTORY.encode(&entry)?;
                // Deleted and written again (not replaced): a delete is what the store
                // erases from its files (`Store::erase_deleted`), the old text with it.
                core.store.delete(&Locator::Id {
                    tenant: core.tenant.clone(),
                    id: record.id,
                })?;
                let mut put = Put::new(partition.clone(), Some(record.key), value);
                put.owner = record.owner;
                put.metadata = record.metadata;
                put.ttl = Some(Ttl::new(DELETED_HISTORY_RETENTION)?);
                core.store.put(put)?;
            }
        }
        Ok(begun)
    }

    /// The entry of a change of memory `m` (as it is after the change; for a delete, as it
    /// was), with its order in the memory's history.
    fn entry(
        core: &Core,
        m: &Memory,
        event: HistoryEvent,
        old: Option<String>,
        new: Option<String>,
    ) -> (u64, HistoryEntry) {
        let entry = HistoryEntry {
            memory_id: m.id,
            event,
            old,
            new,
            source: m.source.clone(),
            confidence: m.confidence,
            actor: core.actor.clone().unwrap_or_else(|| actor(m)),
            at: core.clock.now(),
        };
        // A delete comes after the memory's last version.
        let order = m.version + u64::from(event == HistoryEvent::Delete);
        (order, entry)
    }

    /// The write of `entry` of memory `m` at `order` in its history (a delete's, kept for
    /// [`DELETED_HISTORY_RETENTION`]).
    fn entry_put(core: &Core, m: &Memory, order: u64, entry: &HistoryEntry) -> Result<Put> {
        let value = records::HISTORY.encode(entry)?;
        let mut record = Put::new(
            core.own_partition(HISTORY_NAMESPACE),
            Some(Key::new(format!("{}/{order:012}", m.id))?),
            value,
        );
        record.owner = Owner {
            user_id: m.owner.user_id.clone(),
            ..Owner::default()
        };
        record
            .metadata
            .insert("memory_id".into(), json!(m.id.to_string()));
        record
            .metadata
            .insert("namespace".into(), json!(m.partition.namespace.as_str()));
        if entry.event == HistoryEvent::Delete || entry.new.is_none() && entry.old.is_none() {
            record.ttl = Some(Ttl::new(DELETED_HISTORY_RETENTION)?);
        }
        Ok(record)
    }
}
