//! What follows a delete: the one definition every path that deletes memories calls
//! ([`Engine::forget`], the bulk deletes, the long-term cap, a namespace's flush), so a
//! deleted memory's text leaves every copy the engine made of it.
//!
//! A deleted memory takes with it its archive object, the graph's facts and entities it
//! alone supported (and a conversation's focus on a person it named), and the texts of its
//! history: the history keeps what happened, who did it and when, never what the memory
//! said. A user's delete-all ([`Engine::forget_where`] by user) also deletes the history
//! records themselves, the user's pending proposals and topics.

use std::collections::{BTreeMap, HashSet};

use muisti_core::{
    Filter, ListQuery, Locator, Memory, MemoryId, MemoryScope, Namespace, Put, Result, list_all,
};
use serde_json::json;

use super::{Engine, own_namespace};
use crate::declarative::{HISTORY_NAMESPACE, HistoryEvent};
use crate::records;

impl Engine {
    /// What follows the delete of `gone` (each deleted by this call's path, as it was just
    /// before): its archive object, its history's texts (then the delete recorded, without
    /// text, for a declarative entry, a memory with a history, or any under an actor), its
    /// graph facts.
    pub(crate) fn after_delete(&self, gone: &[Memory]) -> Result<()> {
        if gone.is_empty() {
            return Ok(());
        }
        let mut sourced: BTreeMap<Option<&str>, Vec<MemoryId>> = BTreeMap::new();
        for m in gone {
            self.drop_archived(m)?;
        }
        // The engine's own records (histories, the graph's, proposals) have none of these.
        let gone: Vec<&Memory> = gone
            .iter()
            .filter(|m| !m.partition.namespace.is_reserved())
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        let with_history = self.erase_history(&gone)?;
        for m in &gone {
            // A memory with a history (a declarative entry's, or one changed under an
            // actor), or deleted under one, has its delete recorded: no text, who and when.
            if m.scope == MemoryScope::Declarative
                || self.actor.is_some()
                || with_history.contains(&m.id)
            {
                self.record(m, HistoryEvent::Delete, None, None)?;
            }
            if crate::graph::worker::is_extracted(m) {
                sourced
                    .entry(m.owner.user_id.as_deref())
                    .or_default()
                    .push(m.id);
            }
        }
        for (user, ids) in &sourced {
            self.graph_forget(*user, ids)?;
        }
        Ok(())
    }

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
            for record in list_all(self.store.as_ref(), &partition, &filter)? {
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
                self.store.delete(&Locator::Id {
                    tenant: self.tenant.clone(),
                    id: record.id,
                })?;
                let mut put = Put::new(partition.clone(), Some(record.key), value);
                put.owner = record.owner;
                put.metadata = record.metadata;
                self.store.put(put)?;
            }
        }
        Ok(with_history)
    }

    /// Deletes every record of a namespace that `filter` matches and `keep` does not keep,
    /// each through [`muisti_core::Store::delete`] and [`Engine::after_delete`]; returns how
    /// many (the caller tells the observers).
    pub(crate) fn delete_where(
        &self,
        namespace: &Namespace,
        filter: &Filter,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<u64> {
        let partition = self.partition(namespace);
        let mut gone = Vec::new();
        let mut after = None;
        loop {
            let page = self.store.list(&ListQuery {
                partition: partition.clone(),
                filter: filter.clone(),
                after,
                limit: 0,
            })?;
            for m in page.items {
                if keep(&m) {
                    continue;
                }
                if self.store.delete(&Locator::Id {
                    tenant: self.tenant.clone(),
                    id: m.id,
                })? {
                    gone.push(m);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        self.after_delete(&gone)?;
        Ok(gone.len() as u64)
    }

    /// Empties `namespace` of everything but declarative entries, which nothing but an
    /// explicit delete by their user removes (see [`Engine::kv_flush`]); returns how many.
    pub(crate) fn flush_namespace(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.partition(namespace);
        let declarative = Filter {
            scope: Some(MemoryScope::Declarative),
            ..Filter::default()
        };
        let graph = self.own_partition(crate::graph::SOURCES_NAMESPACE);
        // The store's own flush deletes without telling which: only with nothing to keep,
        // no graph to take apart and no actor whose deletes are recorded.
        let deleted = if self.actor.is_none()
            && self.store.count(&partition, &declarative)? == 0
            && self.store.count(&graph, &Filter::default())? == 0
        {
            // Nothing to keep and no graph to take apart: the store's own flush, then what
            // was made of the namespace's memories.
            let n = self.store.flush(&partition)?;
            self.drop_archived_namespace(namespace)?;
            let history = Filter {
                metadata: [("namespace".to_owned(), json!(namespace.as_str()))]
                    .into_iter()
                    .collect(),
                ..Filter::default()
            };
            self.delete_where(&own_namespace(HISTORY_NAMESPACE), &history, |_| false)?;
            n
        } else {
            self.delete_where(namespace, &Filter::default(), |m| {
                m.scope == MemoryScope::Declarative
            })?
        };
        self.forget_clusterings_of(namespace)?;
        self.emit(muisti_core::Event::Forget {
            partition,
            key: None,
            count: deleted,
        });
        Ok(deleted)
    }
}
