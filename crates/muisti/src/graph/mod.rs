//! Entities and a bi-temporal knowledge graph (seed 002), in the engine over the store
//! contract, so every backend carries it.
//!
//! * An [`Entity`] and a [`Relation`] are records of the engine's own namespaces
//!   ([`ENTITIES_NAMESPACE`], [`RELATIONS_NAMESPACE`]) owned by the memory's user; their tags
//!   index them (`n:` name and alias keys and `k:` kind of an entity; `s:` subject, `p:`
//!   predicate and `o:` object of a relation), so lookups and triple patterns are tag
//!   filters every backend answers.
//! * Extraction never blocks a write: [`Engine::remember`](crate::Engine::remember) puts the memory's id on a queue
//!   (a record of [`QUEUE_NAMESPACE`] in the system tenant) and a worker thread extracts
//!   ([`GraphExtractor`]; [`muisti_lang::relations::offline`] needs no model), resolves names to entities
//!   and writes the facts; a failure leaves the item queued, to be retried.
//! * Relations are bi-temporal: `valid_at`/`invalid_at` (when the fact held in the world),
//!   `created_at`/`expired_at` (when muisti learned and retired it). A new fact of a
//!   single-valued predicate ("lives_in") closes the subject's other current one instead of
//!   deleting it, so queries [`RelationQuery::as_of`] a past time still answer.

mod evidence;
mod keys;
mod merge;
pub(crate) mod resolve;
pub(crate) mod store;
pub(crate) mod worker;

use muisti_core::Timestamp;

pub use crate::records::{
    ADJACENCY_NAMESPACE, ALIASES_NAMESPACE, ENTITIES_NAMESPACE, Entity, FOCUS_NAMESPACE,
    QUEUE_NAMESPACE, RELATIONS_NAMESPACE, Relation, SOURCES_NAMESPACE,
};
pub use evidence::specificity;
pub use muisti_lang::relations::{
    Context, Extracted, Mention, Triple, kind, normalize_name, normalize_predicate,
};
pub use muisti_lang::time::date_in;
pub use worker::{
    ExtractError, FAILED_NAMESPACE, GraphExtraction, GraphExtractor, GraphInterval, MAX_INTERVAL,
    OfflineExtractor,
};

/// The graph's own state in an engine: how memories are read into it, how often, and the
/// worker that reads them (none without extraction, and in the worker's own engine).
#[derive(Clone, Default)]
pub(crate) struct GraphState {
    pub(crate) extraction: GraphExtraction,
    pub(crate) interval: GraphInterval,
    pub(crate) worker: Option<std::sync::Arc<worker::Worker>>,
}

/// The knowledge graph of an engine's tenant ([`Engine::graph`](crate::Engine::graph)):
/// entities, relations at a time, neighbourhoods, merges, and what waits for extraction. A
/// handle over what the engine's parts share and the graph's own state; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Graph<'a> {
    pub(crate) core: &'a crate::core::Core,
    pub(crate) state: &'a GraphState,
}

/// The most steps a neighbourhood query takes from its entity.
pub const MAX_HOPS: usize = 3;

/// The most relations a neighbourhood query returns.
pub const MAX_NEIGHBOURHOOD: usize = 1_000;

/// Predicates with one current value per subject: a new value closes the old edge.
pub const SINGLE_VALUED: &[&str] = &[
    "works_at",
    "lives_in",
    "married_to",
    "reports_to",
    "born_in",
    "located_in",
];

impl Relation {
    /// Whether it held in the world at `t` (world time: what muisti knows now of then).
    pub fn holds_at(&self, t: Timestamp) -> bool {
        self.valid_at.is_none_or(|v| v <= t) && self.invalid_at.is_none_or(|i| t < i)
    }

    /// The fact as a sentence for a prompt: "Alice works at Google".
    pub fn sentence(&self) -> String {
        format!(
            "{} {} {}",
            self.subject,
            self.predicate.replace('_', " "),
            self.object
        )
    }

    /// Whether it holds now: not replaced, not retired.
    pub fn is_current(&self) -> bool {
        self.invalid_at.is_none() && self.expired_at.is_none()
    }
}

/// A triple pattern over one user's relations: each part given must match (names match an
/// entity's name or aliases, or a value), the others are free.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RelationQuery {
    /// Whose graph.
    pub user_id: Option<String>,
    /// The subject's name.
    pub subject: Option<String>,
    /// The predicate (normalised to snake_case).
    pub predicate: Option<String>,
    /// The object's name or value.
    pub object: Option<String>,
    /// The facts that held at this time (invalidated ones included); `None`: those that
    /// hold now.
    pub as_of: Option<Timestamp>,
}
