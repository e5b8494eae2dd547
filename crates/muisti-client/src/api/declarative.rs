//! Declarative memory: proposals and histories.

use super::*;

/// An agent-learned declarative entry waiting for the user's confirmation
/// (`POST /v1/proposals/{id}/confirm` or `/reject`; it expires unconfirmed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Proposal {
    /// The proposal's id (ULID).
    pub id: String,
    /// Where the entry would be written.
    pub namespace: String,
    /// The proposed entry's text.
    pub content: String,
    /// `fact`, `preference` or `rule`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `agent_learned`.
    pub source: String,
    /// 0 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// The user it is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent that proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The stored entry it would supersede, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<ProposalTarget>,
    /// When it was proposed.
    pub created_at: String,
    /// When it is dropped unconfirmed.
    pub expires_at: String,
}

/// The entry a proposal would supersede, as it was when proposed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ProposalTarget {
    /// Its id.
    pub id: String,
    /// Its text.
    pub content: String,
    /// `user_stated` or `agent_learned`.
    pub source: String,
    /// Its confidence, for a learned entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
}

/// The proposals waiting for a user (`GET /v1/proposals?user_id=`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Proposals {
    /// Oldest first.
    pub proposals: Vec<Proposal>,
}

/// The user a request that names a memory by id acts for: a declarative entry is found
/// only by its own user (without one, or with another, it is 404 like a missing memory).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ActingUser {
    /// The user the request acts for.
    pub user_id: Option<String>,
}

/// The user whose proposals to list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ProposalParams {
    /// The user.
    pub user_id: String,
}

/// Who decides a proposal (`POST /v1/proposals/{id}/confirm` or `/reject`): the user it
/// concerns; another user's proposal is not found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ProposalDecision {
    /// The user the proposal concerns.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 256))]
    pub user_id: String,
}

/// One change of a declarative entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct HistoryEntry {
    /// `add`, `update`, `supersede`, `delete` or `confirm`.
    pub event: String,
    /// The text before (none for an add).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text after (none for a delete).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The entry's source after the change.
    pub source: String,
    /// Its confidence after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// `user`, or the agent.
    pub actor: String,
    /// When (RFC 3339).
    pub at: String,
}

/// A memory's history (`GET /v1/memories/{id}/history`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct History {
    /// Oldest first: the add, then every change.
    pub history: Vec<HistoryEntry>,
}
