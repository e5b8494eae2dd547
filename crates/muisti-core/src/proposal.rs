//! A declarative write waiting for the user's confirmation.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Category, MemoryId, Namespace, Owner, Source, Timestamp};

/// An agent-learned declarative entry that is not stored until the user confirms it
/// ([`Error::ConfirmationRequired`](crate::Error::ConfirmationRequired) carries it; the engine
/// keeps it until it expires, so a later request can confirm or reject it by id).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// The proposal's id (a ULID), to confirm or reject it.
    pub id: MemoryId,
    /// Where the entry would be written.
    pub namespace: Namespace,
    /// The entry's text.
    pub content: String,
    /// `fact`, `preference` or `rule`.
    #[serde(rename = "type")]
    pub kind: Category,
    /// Where it came from (`agent_learned`).
    pub source: Source,
    /// How much evidence supports it, 0-100.
    pub confidence: Option<u8>,
    /// Its owner: the user, and the agent and session that proposed it.
    #[serde(flatten)]
    pub owner: Owner,
    /// Labels the write carried.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Metadata the write carried.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Importance the write asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub importance: Option<f32>,
    /// The stored entry it would supersede, as it was when proposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<Superseded>,
    /// Whether the writer named that entry (`supersedes` on the write): confirming
    /// replaces exactly it, where otherwise the conflicts are judged again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explicit: bool,
    /// When it was proposed.
    pub created_at: Timestamp,
    /// When it is dropped unconfirmed.
    pub expires_at: Timestamp,
}

/// The entry a declarative write would replace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Superseded {
    /// Its id.
    pub id: MemoryId,
    /// Its text.
    pub content: String,
    /// Its source.
    pub source: Source,
    /// Its confidence.
    pub confidence: Option<u8>,
}
