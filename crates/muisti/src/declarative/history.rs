//! The history follows every change: a declarative entry's changes always, any memory's
//! when an actor is named; a deleted memory's history keeps what happened, who did it and
//! when, never what the memory said.

use std::collections::{BTreeMap, HashSet};

use muisti_core::{
    Filter, Key, Locator, Memory, MemoryId, MemoryScope, Owner, Put, Result, list_all,
};
use serde_json::json;

use super::{HISTORY_NAMESPACE, HistoryEntry, HistoryEvent, actor};
use crate::core::{Change, Core, Follower, own_record};
use crate::records;

/// [`Follower`]: what the history keeps of changes.
pub(crate) struct History;

impl Follower for History {
    fn written(&self, core: &Core, changes: &[Change<'_>]) -> Result<()> {
        for c in changes {
            let m = c.memory;
            if !c.of_memory() {
                continue;
            }
            if m.scope == MemoryScope::Declarative || core.actor.is_some() {
                let before = c.before.as_ref().map(|b| b.text().into_owned());
                Self::record(core, m, c.event, before, Some(m.text().into_owned()))?;
            }
        }
        Ok(())
    }

    /// Clears the texts of the histories of `gone`; then records the delete, without text,
    /// of a declarative entry, a memory with a history (one changed under an actor), or any
    /// deleted under one.
    fn deleted(&self, core: &Core, gone: &[Memory]) -> Result<()> {
        let gone: Vec<&Memory> = gone.iter().filter(|m| !own_record(m)).collect();
        if gone.is_empty() {
            return Ok(());
        }
        let with_history = Self::erase_history(core, &gone)?;
        for m in gone {
            if m.scope == MemoryScope::Declarative
                || core.actor.is_some()
                || with_history.contains(&m.id)
            {
                Self::record(core, m, HistoryEvent::Delete, None, None)?;
            }
        }
        Ok(())
    }
}

impl History {
    /// Clears the texts of the history records of `gone` (what happened stays); returns
    /// the ids of those that have a history.
    fn erase_history(core: &Core, gone: &[&Memory]) -> Result<HashSet<MemoryId>> {
        let mut with_history = HashSet::new();
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
                with_history.insert(entry.memory_id);
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
                core.store.put(put)?;
            }
        }
        Ok(with_history)
    }

    /// Records a change of declarative entry `m` (as it is after the change; for a delete,
    /// as it was). The history key orders by the entry's version.
    fn record(
        core: &Core,
        m: &Memory,
        event: HistoryEvent,
        old: Option<String>,
        new: Option<String>,
    ) -> Result<()> {
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
        // A delete comes after the entry's last version.
        let order = m.version + u64::from(event == HistoryEvent::Delete);
        let value = records::HISTORY.encode(&entry)?;
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
        core.store.put(record)?;
        Ok(())
    }
}
