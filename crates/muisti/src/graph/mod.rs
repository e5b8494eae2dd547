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
mod merge;
pub(crate) mod resolve;
pub(crate) mod store;
pub(crate) mod worker;

use muisti_core::{MemoryId, Timestamp};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use store::entity_key;

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
    pub(crate) core: &'a crate::engine::Core,
    pub(crate) state: &'a GraphState,
}

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

/// A person, place, organisation, product or other thing the memories name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Its id (a ULID).
    pub id: MemoryId,
    /// The user whose memories name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Its name, as first written.
    pub name: String,
    /// `person`, `place`, `organization`, `product`, `event`, `other`, or a custom kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// Other names it goes by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// How many memories named it.
    pub mentions: u64,
    /// When a memory first named it.
    pub first_seen: Timestamp,
    /// When a memory last named it.
    pub last_seen: Timestamp,
    /// What is known of it, as JSON.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
    /// A short summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The memories that name it.
    #[serde(default)]
    pub memory_ids: Vec<MemoryId>,
}

/// A fact: `subject predicate object`, with the two time axes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    /// Its id (a ULID).
    pub id: MemoryId,
    /// The user whose memories state it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The subject's name.
    pub subject: String,
    /// The subject entity.
    pub subject_id: MemoryId,
    /// The relation, snake_case (`works_at`).
    pub predicate: String,
    /// The object's name, or the value.
    pub object: String,
    /// The object entity (none for a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<MemoryId>,
    /// How sure the extractor was, 0 to 1.
    pub confidence: f32,
    /// The memories that state it.
    #[serde(default)]
    pub memory_ids: Vec<MemoryId>,
    /// Since when it holds in the world (the stating memory's time, or the date it gives).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_at: Option<Timestamp>,
    /// Until when it held (set when a newer fact replaced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_at: Option<Timestamp>,
    /// When muisti learned it.
    pub created_at: Timestamp,
    /// When muisti retired it (replaced, or its memories deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<Timestamp>,
}

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
