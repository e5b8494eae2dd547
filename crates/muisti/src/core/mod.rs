//! What every part of the engine shares ([`Core`]) and the primitives every part writes
//! through: storing embedded writes, what follows a change ([`follow`]), bulk deletes,
//! the store's recorded embedder, and leases. The layer below every capability: it names
//! none of them (the followers it tells are handed to it when the engine is built).

mod follow;
mod lease;
mod scopes;
mod write;

pub(crate) use follow::{Change, Events, Follower, own_record};
pub(crate) use scopes::check_put;
pub use scopes::{Lifetimes, Maintained};
#[cfg(test)]
pub(crate) use write::embed_distinct;

use std::sync::{Arc, atomic::AtomicBool};

use muisti_core::{Clock, Error, Event, Namespace, Observer, Partition, Result, Store, Tenant};
use muisti_embed::{EmbedError, Embedder};

use crate::access::AccessRecorder;
use crate::recall::RecallConfig;

/// The tenant that holds muisti's own records (the store's embedder). Reserved: servers must
/// not hand it to clients.
pub const SYSTEM_TENANT: &str = "_muisti";

/// A namespace the engine itself names (conversations, messages, histories, proposals): the
/// constants pass the naming rules, so this never falls back.
pub(crate) fn own_namespace(name: &'static str) -> Namespace {
    Namespace::new(name).unwrap_or_default()
}

/// A partition of the system tenant (the engine's records about the store: its embedder,
/// leases, the graph's queue).
pub(crate) fn system_partition(namespace: &str) -> Result<Partition> {
    Ok(Partition::new(
        Tenant::new(SYSTEM_TENANT)?,
        Namespace::new(namespace)?,
    ))
}

/// A record of the engine's own (a proposal, a history entry, a conversation) that does not
/// decode: where it lives and why.
pub(crate) fn corrupted(location: impl Into<String>, e: impl std::fmt::Display) -> Error {
    Error::Corrupted {
        location: location.into(),
        reason: e.to_string(),
    }
}

pub(crate) fn embed_err(e: EmbedError) -> Error {
    match e {
        EmbedError::Service {
            endpoint,
            reason,
            retryable: true,
        } => Error::Unavailable {
            target: endpoint,
            reason,
        },
        other => Error::backend("embedder", other),
    }
}

/// What every part of the engine shares, and nothing else: the store and the tenant it is
/// confined to, the clock, the embedder and the recall configuration, the observers and
/// what follows a change, the scopes' lifetimes, access counts, and who acts. The engine's
/// capabilities (declarative memory, facts, the graph, the archive) keep their own state
/// beside it.
#[derive(Clone)]
pub(crate) struct Core {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) tenant: Tenant,
    pub(crate) observers: Arc<[Arc<dyn Observer>]>,
    pub(crate) embedder: Option<Arc<dyn Embedder>>,
    /// A second model that re-scores recall's best hits ([`crate::EngineBuilder::reranker`]).
    pub(crate) reranker: Option<Arc<dyn Embedder>>,
    pub(crate) recall: Arc<RecallConfig>,
    pub(crate) access: Arc<AccessRecorder>,
    /// Whether the store answers full-text search from an index (read once, not per recall).
    pub(crate) native_text: bool,
    pub(crate) clock: Arc<dyn Clock>,
    /// Whether the store's recorded embedder is known to be this engine's (else the next
    /// write records or checks it).
    pub(crate) model_checked: Arc<AtomicBool>,
    pub(crate) lifetimes: Lifetimes,
    /// Who acts, when the caller says (the memory manager's command): every change this
    /// engine makes is recorded in the changed memory's history with it as the actor.
    pub(crate) actor: Option<String>,
    /// What follows every change, in order ([`Follower`]).
    pub(crate) followers: Arc<[Arc<dyn Follower>]>,
}

impl Core {
    /// The cosine of `text` with each of `others`, by the engine's embedder (none without
    /// one): the one comparison of texts the conflict rules are given.
    pub(crate) fn cosines(&self, text: &str, others: &[String]) -> Result<Option<Vec<f32>>> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let mut all: Vec<&str> = vec![text];
        all.extend(others.iter().map(String::as_str));
        let vectors = embedder.embed(&all).map_err(embed_err)?;
        let Some((first, rest)) = vectors.split_first() else {
            return Ok(None);
        };
        Ok(Some(
            rest.iter()
                .map(|v| muisti_core::text::cosine(first, v))
                .collect(),
        ))
    }

    /// The partition of `namespace` in the tenant.
    pub(crate) fn partition(&self, namespace: &Namespace) -> Partition {
        Partition::new(self.tenant.clone(), namespace.clone())
    }

    /// The partition of one of the engine's own namespaces ([`own_namespace`]) in the
    /// tenant.
    pub(crate) fn own_partition(&self, name: &'static str) -> Partition {
        self.partition(&own_namespace(name))
    }

    /// Tells the observers.
    pub(crate) fn emit(&self, event: Event) {
        for o in self.observers.iter() {
            o.on_event(&event);
        }
    }
}
