//! The knowledge graph.

use super::*;

/// Which entities to list (`GET /v1/graph/entities`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct GraphEntityParams {
    /// Whose graph (none: the graph of memories without a user).
    pub user_id: Option<String>,
    /// Only entities of this kind (`person`, `place`, `organization`, ...).
    #[serde(rename = "type")]
    #[cfg_attr(feature = "openapi", param(rename = "type"))]
    pub kind: Option<String>,
    /// Only the entity with this name or alias.
    pub name: Option<String>,
    /// At most this many (1 to 10,000; default all), the rest marked by `truncated`.
    pub limit: Option<usize>,
}

/// A triple pattern over one user's relations (`GET /v1/graph/relations`): each part given
/// must match, the others are free. `entity` matches either end.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct GraphRelationParams {
    /// Whose graph (none: the graph of memories without a user).
    pub user_id: Option<String>,
    /// The subject's name or alias.
    pub subject: Option<String>,
    /// The predicate (`works_at`; any case and spacing).
    pub predicate: Option<String>,
    /// The object's name, alias or value.
    pub object: Option<String>,
    /// Relations of this entity, as subject or object (not with `subject` or `object`).
    pub entity: Option<String>,
    /// With `entity`: its neighbourhood, the relations within this many steps of it (1 to
    /// 3; default 1, its own), nearest first.
    pub hops: Option<usize>,
    /// The relations that held at this time (RFC 3339); default: those that hold now.
    pub as_of: Option<String>,
    /// At most this many, in the answer's order (1 to 10,000; default all), the rest marked
    /// by `truncated`.
    pub limit: Option<usize>,
}

/// A person, place, organisation or other thing the memories name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphEntity {
    /// Its id (ULID).
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// Other names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// How many memories name it.
    pub mentions: u64,
    /// When first named (RFC 3339).
    pub first_seen: String,
    /// When last named (RFC 3339).
    pub last_seen: String,
    /// What is known of it.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub attributes: Map<String, Value>,
    /// The memories that name it.
    pub memory_ids: Vec<String>,
}

/// A fact: `subject predicate object`, with when it held and when muisti knew it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphRelation {
    /// Its id (ULID).
    pub id: String,
    /// The subject's name.
    pub subject: String,
    /// The relation (snake_case).
    pub predicate: String,
    /// The object's name, or a value.
    pub object: String,
    /// The subject entity's id.
    pub subject_id: String,
    /// The object entity's id (none for a value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    /// 0 to 1.
    pub confidence: f32,
    /// The memories that state it.
    pub memory_ids: Vec<String>,
    /// Since when it held in the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_at: Option<String>,
    /// Until when it held (a newer fact replaced it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_at: Option<String>,
    /// When muisti learned it.
    pub created_at: String,
    /// When muisti retired it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired_at: Option<String>,
}

/// Two entities of a user that are one (`POST /v1/graph/entities/merge`): `other` is
/// merged into `keep`, both histories kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GraphMerge {
    /// Whose graph (none: the graph of memories without a user).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The entity that stays (a name or alias).
    pub keep: String,
    /// The entity merged into it (a name or alias): its names become aliases, its
    /// memories and relations move.
    pub other: String,
}

/// Entities.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphEntities {
    /// By name.
    pub entities: Vec<GraphEntity>,
    /// Whether `limit` left some out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Relations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct GraphRelations {
    /// Oldest first.
    pub relations: Vec<GraphRelation>,
    /// Whether `limit` left some out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}
