//! The history follows every change: a declarative entry's changes always, any memory's
//! when an actor is named; a deleted memory's history keeps what happened, who did it and
//! when, never what the memory said.

use std::collections::{BTreeMap, HashSet};

use muisti_core::{Filter, Locator, Memory, MemoryId, MemoryScope, Put, Result, list_all};
use serde_json::json;

use super::{HISTORY_NAMESPACE, HistoryEvent};
use crate::engine::{Change, Follower, own_record};
use crate::{Engine, records};

/// [`Follower`]: what the history keeps of changes.
pub(crate) struct History;

impl Follower for History {
    fn written(&self, engine: &Engine, changes: &[Change<'_>]) -> Result<()> {
        for c in changes {
            let m = c.memory;
            if !c.of_memory() {
                continue;
            }
            if m.scope == MemoryScope::Declarative || engine.core.actor.is_some() {
                let before = c.before.as_ref().map(|b| b.text().into_owned());
                engine.record(m, c.event, before, Some(m.text().into_owned()))?;
            }
        }
        Ok(())
    }

    /// Clears the texts of the histories of `gone`; then records the delete, without text,
    /// of a declarative entry, a memory with a history (one changed under an actor), or any
    /// deleted under one.
    fn deleted(&self, engine: &Engine, gone: &[Memory]) -> Result<()> {
        let gone: Vec<&Memory> = gone.iter().filter(|m| !own_record(m)).collect();
        if gone.is_empty() {
            return Ok(());
        }
        let with_history = engine.erase_history(&gone)?;
        for m in gone {
            if m.scope == MemoryScope::Declarative
                || engine.core.actor.is_some()
                || with_history.contains(&m.id)
            {
                engine.record(m, HistoryEvent::Delete, None, None)?;
            }
        }
        Ok(())
    }
}

impl Engine {
    /// Clears the texts of the history records of `gone` (what happened stays); returns
    /// the ids of those that have a history.
    fn erase_history(&self, gone: &[&Memory]) -> Result<HashSet<MemoryId>> {
        let mut with_history = HashSet::new();
        let partition = self.own_partition(HISTORY_NAMESPACE);
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
            for record in list_all(self.core.store.as_ref(), &partition, &filter)? {
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
                self.core.store.delete(&Locator::Id {
                    tenant: self.core.tenant.clone(),
                    id: record.id,
                })?;
                let mut put = Put::new(partition.clone(), Some(record.key), value);
                put.owner = record.owner;
                put.metadata = record.metadata;
                self.core.store.put(put)?;
            }
        }
        Ok(with_history)
    }
}
