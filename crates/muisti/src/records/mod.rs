//! The engine's own records, declared once: each collection's namespace, the tenant it
//! lives in (the engine's, or the system tenant for what every tenant's workers share), its
//! record type, and the one codec every read and write of it goes through. A record that
//! does not decode is [`Error::Corrupted`] naming its collection and key; a value that does
//! not encode is the engine's own fault ([`Error::Backend`]), never called corrupted data.
//!
//! Every namespace here is reserved ([`muisti_core::is_reserved`]) except the
//! conversations' header namespace, which clients read through the conversation API.
//! (Leases are records of one namespace a lease, `lease.<name>` in the system tenant,
//! decoded where they are taken: `engine/lease.rs`.)

use std::marker::PhantomData;

use muisti_core::{Error, Memory, Namespace, Partition, Result, Tenant};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::core::SYSTEM_TENANT;

mod types;

pub(crate) use types::{Adjacency, Alias, Footprint, Header, Queued};
pub use types::{
    Cluster, Clustering, Entity, HistoryEntry, HistoryEvent, Relation, TOPICS_SILHOUETTE,
};

/// The namespace of declarative entries' histories (reserved for the engine).
pub const HISTORY_NAMESPACE: &str = "_muisti.history";

/// The namespace of the access log: one record per memory reached, keyed by its id
/// (reserved for the engine).
pub const ACCESS_LOG_NAMESPACE: &str = "_muisti.access_log";

/// The namespace of proposals waiting for confirmation (reserved for the engine).
pub const PROPOSALS_NAMESPACE: &str = "_muisti.proposals";

/// The namespace of entities (reserved for the engine).
pub const ENTITIES_NAMESPACE: &str = "_muisti.entities";

/// The namespace of relations (reserved for the engine).
pub const RELATIONS_NAMESPACE: &str = "_muisti.relations";

/// The namespace of each entity's adjacency (the relations at its ends).
pub const ADJACENCY_NAMESPACE: &str = "_muisti.graph_adjacency";

/// The namespace of names that lead to an entity other than by its own name (aliases and
/// short forms).
pub const ALIASES_NAMESPACE: &str = "_muisti.graph_aliases";

/// The namespace of each memory's footprint in the graph (the relations it states and
/// the entities it names), read when it is forgotten or changed.
pub const SOURCES_NAMESPACE: &str = "_muisti.graph_sources";

/// The namespace of memories waiting for extraction (in the system tenant).
pub const QUEUE_NAMESPACE: &str = "_muisti.graph_queue";

/// The namespace of each conversation's last person named (for pronouns).
pub const FOCUS_NAMESPACE: &str = "_muisti.graph_focus";

/// Where queued memories go after five failed extractions (system tenant).
pub const FAILED_NAMESPACE: &str = "_muisti.graph_failed";

/// The engine's own namespace of clusterings (one record per user and namespace).
pub const CLUSTERS_NAMESPACE: &str = "_muisti.clusters";

/// The namespace of conversation headers.
pub const CONVERSATIONS_NAMESPACE: &str = "conversations";
/// The namespace of conversation messages.
pub const MESSAGES_NAMESPACE: &str = "messages";

/// A collection of the engine's own records of type `T`.
pub(crate) struct Collection<T> {
    namespace: &'static str,
    /// What one record is, for messages ("a history entry").
    what: &'static str,
    /// Whether it lives in the system tenant (shared by every tenant's engine).
    system: bool,
    /// The metadata field that holds the value, for a collection whose records must not be
    /// searchable (a record's content is indexed for full-text search); else the content.
    in_metadata: Option<&'static str>,
    record: PhantomData<fn() -> T>,
}

impl<T> Collection<T> {
    const fn of_tenant(namespace: &'static str, what: &'static str) -> Self {
        Self {
            namespace,
            what,
            system: false,
            in_metadata: None,
            record: PhantomData,
        }
    }

    const fn of_system(namespace: &'static str, what: &'static str) -> Self {
        Self {
            namespace,
            what,
            system: true,
            in_metadata: None,
            record: PhantomData,
        }
    }

    /// The same collection with its value in metadata field `field` (the content then holds
    /// what the writer puts there, not indexed as the value would be).
    const fn in_metadata(self, field: &'static str) -> Self {
        Self {
            in_metadata: Some(field),
            ..self
        }
    }

    /// Its namespace.
    pub(crate) fn namespace(&self) -> Namespace {
        // The names below are valid namespaces (checked by a test).
        Namespace::new(self.namespace).unwrap_or_default()
    }

    /// Where its records live for an engine of `tenant`.
    pub(crate) fn partition(&self, tenant: &Tenant) -> Result<Partition> {
        let tenant = if self.system {
            Tenant::new(SYSTEM_TENANT)?
        } else {
            tenant.clone()
        };
        Ok(Partition::new(tenant, self.namespace()))
    }
}

impl<T: Serialize> Collection<T> {
    /// A record's content.
    pub(crate) fn encode(&self, value: &T) -> Result<Value> {
        serde_json::to_value(value)
            .map_err(|e| Error::backend("engine", format!("could not encode {}: {e}", self.what)))
    }

    /// Puts `value` in a record's `metadata`, under the field of a collection kept there.
    pub(crate) fn encode_into(
        &self,
        value: &T,
        metadata: &mut serde_json::Map<String, Value>,
    ) -> Result<()> {
        let Some(field) = self.in_metadata else {
            return Err(Error::backend(
                "engine",
                format!(
                    "{} is kept in a record's content, not its metadata",
                    self.what
                ),
            ));
        };
        metadata.insert(field.to_owned(), self.encode(value)?);
        Ok(())
    }
}

impl<T: DeserializeOwned> Collection<T> {
    /// A stored record's value; [`Error::Corrupted`] (naming the collection and the key)
    /// when it is not one.
    pub(crate) fn decode(&self, record: &Memory) -> Result<T> {
        let value = match self.in_metadata {
            Some(field) => record.metadata.get(field).unwrap_or(&Value::Null),
            None => &record.content,
        };
        T::deserialize(value).map_err(|e| Error::Corrupted {
            location: format!("{} {} in {}", self.what, record.key, self.namespace),
            reason: e.to_string(),
        })
    }
}

/// A declarative entry's (or any memory's, under an actor) history.
pub(crate) const HISTORY: Collection<HistoryEntry> =
    Collection::of_tenant(HISTORY_NAMESPACE, "a history entry");
/// The access log: each memory's accesses.
pub(crate) const ACCESS_LOG: Collection<crate::access::AccessRecord> =
    Collection::of_tenant(ACCESS_LOG_NAMESPACE, "an access record").in_metadata("log");
/// Agent-learned declarative entries waiting for the user's confirmation.
pub(crate) const PROPOSALS: Collection<muisti_core::Proposal> =
    Collection::of_tenant(PROPOSALS_NAMESPACE, "a proposal");
/// The graph's entities.
pub(crate) const ENTITIES: Collection<Entity> =
    Collection::of_tenant(ENTITIES_NAMESPACE, "an entity");
/// The graph's relations.
pub(crate) const RELATIONS: Collection<Relation> =
    Collection::of_tenant(RELATIONS_NAMESPACE, "a relation");
/// Each entity's relations at its ends.
pub(crate) const ADJACENCY: Collection<Adjacency> =
    Collection::of_tenant(ADJACENCY_NAMESPACE, "an adjacency record");
/// Names that lead to an entity other than by its own name.
pub(crate) const ALIASES: Collection<Alias> = Collection::of_tenant(ALIASES_NAMESPACE, "an alias");
/// Each memory's footprint in the graph.
pub(crate) const SOURCES: Collection<Footprint> =
    Collection::of_tenant(SOURCES_NAMESPACE, "a graph footprint");
/// Memories waiting for graph extraction (every tenant's, in the system tenant).
pub(crate) const GRAPH_QUEUE: Collection<Queued> =
    Collection::of_system(QUEUE_NAMESPACE, "a queued extraction");
/// Extractions that failed for good.
pub(crate) const GRAPH_FAILED: Collection<Queued> =
    Collection::of_system(FAILED_NAMESPACE, "a failed extraction");
/// A user's topics (centroids and labels).
pub(crate) const CLUSTERS: Collection<Clustering> =
    Collection::of_tenant(CLUSTERS_NAMESPACE, "a clustering");
/// Conversations' headers (their messages are memories of `messages`).
pub(crate) const CONVERSATIONS: Collection<Header> =
    Collection::of_tenant(CONVERSATIONS_NAMESPACE, "a conversation header");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_collection_names_a_valid_namespace_and_only_conversations_are_open() {
        let all = [
            (HISTORY.namespace, HISTORY.system),
            (ACCESS_LOG.namespace, ACCESS_LOG.system),
            (PROPOSALS.namespace, PROPOSALS.system),
            (ENTITIES.namespace, ENTITIES.system),
            (RELATIONS.namespace, RELATIONS.system),
            (ADJACENCY.namespace, ADJACENCY.system),
            (ALIASES.namespace, ALIASES.system),
            (SOURCES.namespace, SOURCES.system),
            (GRAPH_QUEUE.namespace, GRAPH_QUEUE.system),
            (GRAPH_FAILED.namespace, GRAPH_FAILED.system),
            (CLUSTERS.namespace, CLUSTERS.system),
            (CONVERSATIONS.namespace, CONVERSATIONS.system),
        ];
        let mut seen = std::collections::HashSet::new();
        for (ns, _) in all {
            assert!(Namespace::new(ns).is_ok(), "{ns}");
            assert!(seen.insert(ns), "{ns} declared twice");
            assert_eq!(
                muisti_core::is_reserved(ns),
                ns != CONVERSATIONS_NAMESPACE,
                "{ns}"
            );
        }
    }

    #[test]
    fn a_record_that_does_not_decode_is_corrupted_and_named() {
        let p = Partition::new(Tenant::default(), HISTORY.namespace());
        let m = muisti_core::Put::new(
            p,
            Some(muisti_core::Key::new("x/1").expect("key")),
            serde_json::json!({}),
        )
        .apply(None, muisti_core::Timestamp::from_millis(0));
        let e = HISTORY.decode(&m).expect_err("not a history entry");
        assert_eq!(e.kind(), muisti_core::ErrorKind::Corrupted);
        assert!(e.to_string().contains("a history entry x/1"), "{e}");
    }
}
