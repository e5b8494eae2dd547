//! Deletes by filter (`delete_where`, the one bulk-delete loop) and a namespace's flush,
//! each record through [`Engine::after_delete`] (`follow.rs`), so a deleted memory's text
//! leaves every copy the engine made of it: its archive object, the graph's facts and
//! entities it alone supported (and a conversation's focus on a person it named), and the
//! texts of its history (the history keeps what happened, who did it and when, never what
//! the memory said), and its record in the access log. A user's delete-all ([`Engine::forget_where`] by user) also deletes
//! the history records themselves, the user's pending proposals and topics.

use muisti_core::{Filter, MemoryScope, Namespace, Result};
use serde_json::json;

use super::{Engine, own_namespace};
use crate::declarative::HISTORY_NAMESPACE;

impl Engine {
    /// Empties `namespace` of everything but declarative entries, which nothing but an
    /// explicit delete by their user removes (see [`Kv::flush`](super::Kv::flush)); returns how many.
    pub(crate) fn flush_namespace(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.partition(namespace);
        let declarative = Filter {
            scope: Some(MemoryScope::Declarative),
            ..Filter::default()
        };
        let graph = self.own_partition(crate::graph::SOURCES_NAMESPACE);
        // The store's own flush deletes without telling which: only with nothing to keep,
        // no graph to take apart and no actor whose deletes are recorded.
        let deleted = if self.core.actor.is_none()
            && self.core.store.count(&partition, &declarative)? == 0
            && self.core.store.count(&graph, &Filter::default())? == 0
        {
            // Nothing to keep and no graph to take apart: the store's own flush, then what
            // was made of the namespace's memories.
            let n = self.core.store.flush(&partition)?;
            self.lifecycle().drop_archived_namespace(namespace)?;
            let history = Filter {
                metadata: [("namespace".to_owned(), json!(namespace.as_str()))]
                    .into_iter()
                    .collect(),
                ..Filter::default()
            };
            self.core
                .delete_where(&own_namespace(HISTORY_NAMESPACE), &history, |_| false)?;
            crate::access::forget_namespace(&self.core, namespace)?;
            n
        } else {
            self.core.delete_where(namespace, &Filter::default(), |m| {
                m.scope == MemoryScope::Declarative
            })?
        };
        self.lifecycle().forget_clusterings_of(namespace)?;
        self.emit(muisti_core::Event::Forget {
            partition,
            key: None,
            count: deleted,
        });
        Ok(deleted)
    }
}
