//! The types of the engine's own records, as they are stored (their behaviour is with the
//! capability that keeps them). Changing a field here changes what is on disk.

use muisti_core::{MemoryId, Namespace, Source, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A change to a declarative entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryEvent {
    /// Written by the user.
    Add,
    /// Edited through an update (a learned entry becomes user-stated).
    Update,
    /// Replaced in place by a restatement or a newer value.
    Supersede,
    /// Deleted.
    Delete,
    /// Written or replaced by a confirmed agent proposal.
    Confirm,
}

impl HistoryEvent {
    /// Whether a history may begin with it: the memory was written (added, or by a
    /// confirmed proposal).
    pub fn begins(self) -> bool {
        matches!(self, HistoryEvent::Add | HistoryEvent::Confirm)
    }
}

/// One change of a memory, as its history keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The entry.
    pub memory_id: MemoryId,
    /// What happened.
    pub event: HistoryEvent,
    /// The text before (none for an add).
    pub old: Option<String>,
    /// The text after (none for a delete).
    pub new: Option<String>,
    /// The entry's source after the change.
    pub source: Source,
    /// Its confidence after the change.
    pub confidence: Option<u8>,
    /// Who made it: `user`, or the agent (its `agent_id`, or `agent`).
    pub actor: String,
    /// When.
    pub at: Timestamp,
}

/// A header record's fields.
#[derive(Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) id: String,
    pub(crate) messages: u64,
    pub(crate) created_at: Timestamp,
    pub(crate) updated_at: Timestamp,
    /// Only in conversations stored by earlier versions: their messages, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) legacy: Option<Vec<Value>>,
}

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

/// Where an alias leads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Alias {
    /// To the entity of this name.
    Entity(String),
    /// To more than one entity (written by earlier versions, which kept no names): to none.
    Ambiguous,
    /// To more than one entity, these: to none, unless a model chooses one of them from
    /// the memory that names it.
    Among(Vec<String>),
}

/// What the graph holds from one memory: the relations it states and the entities it
/// names (by name), so forgetting or retiring it reads these, not the user's graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Footprint {
    #[serde(default)]
    pub(crate) relations: Vec<MemoryId>,
    #[serde(default)]
    pub(crate) entities: Vec<String>,
}

/// The relations at an entity's ends: the record that makes subject and object queries
/// read an entity's degree, not the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Adjacency {
    /// Relations it is the subject of.
    #[serde(default)]
    pub(crate) out: Vec<MemoryId>,
    /// Relations it is the object of.
    #[serde(default, rename = "in")]
    pub(crate) into: Vec<MemoryId>,
}

/// A queued memory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Queued {
    pub(crate) tenant: String,
    pub(crate) memory_id: MemoryId,
    #[serde(default)]
    pub(crate) attempts: u32,
    /// The memory's text changed: what its earlier text stated is retired first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) changed: bool,
    /// The memory's user and conversation (an interval reads a conversation together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) user: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    /// When it was queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) queued_at: Option<muisti_core::Timestamp>,
}

/// A user's memories of a namespace grouped by topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Clustering {
    /// The namespace.
    pub namespace: Namespace,
    /// The user (none: the memories without one).
    pub user_id: Option<String>,
    /// The clusters.
    pub clusters: Vec<Cluster>,
    /// The mean silhouette of the chosen k on the sample (-1 to 1; higher: better separated).
    pub silhouette: f32,
    /// Memories it was fitted on.
    pub memories: u64,
    /// The model that made the vectors.
    pub model: String,
    /// When it was fitted.
    pub computed_at: Timestamp,
}

/// The mean silhouette from which clusters are topics: below it the memories show no
/// substantial structure (the usual reading of a silhouette under 0.25), and the clusters are
/// a partition of them, not topics. Short everyday facts rarely share words or themes (a
/// user of them measured 0.016).
pub const TOPICS_SILHOUETTE: f32 = 0.25;

impl Clustering {
    /// Whether the clusters are topics: their silhouette reaches [`TOPICS_SILHOUETTE`].
    pub fn topical(&self) -> bool {
        self.silhouette >= TOPICS_SILHOUETTE
    }
}

/// One topic of a user's memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cluster {
    /// Its number, 0 to k - 1.
    pub id: u32,
    /// Its top terms joined by ", ".
    pub label: String,
    /// Its top terms, best first.
    pub terms: Vec<String>,
    /// Memories in it when it was fitted.
    pub size: u64,
    /// Its centroid (unit length).
    pub centroid: Vec<f32>,
}
