//! The server itself: statistics, jobs, keys, snapshots, health and the error body.

use super::*;

/// A namespace and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct NamespaceCount {
    /// The namespace.
    pub namespace: String,
    /// Live records.
    pub count: u64,
}

/// What the caller's tenant holds (`GET /v1/stats`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Stats {
    /// The caller's tenant.
    pub tenant: String,
    /// The store's backend name.
    pub backend: String,
    /// Whether the store answered its health check.
    pub healthy: bool,
    /// Per namespace of memories.
    pub namespaces: Vec<NamespaceCount>,
    /// The live records of those namespaces.
    pub total: u64,
    /// Applications' own state (namespaces under `_state.`, such as LangGraph checkpoints):
    /// not memories, so counted apart and in sum.
    #[serde(default)]
    pub state: StateCount,
    /// With `namespace` or `user_id` asked: those memories summed up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<MemorySummary>,
}

/// Records of applications' own state (namespaces under `_state.`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct StateCount {
    /// How many such namespaces.
    pub namespaces: u64,
    /// The live records in them.
    pub records: u64,
}

/// The query of `GET /v1/stats`: naming a namespace or a user adds their memories'
/// [`MemorySummary`] (a read of every one of them, so only when asked).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
pub struct StatsParams {
    /// The namespace to sum up (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only this user's memories (default: every user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// The memories of a namespace (one user's, or all) in numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MemorySummary {
    /// The namespace.
    pub namespace: String,
    /// The user, when one was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Memories.
    pub total: u64,
    /// Their average importance (0 when there are none).
    pub avg_importance: f64,
    /// How often they were recalled or read by id, on average.
    pub avg_access_count: f64,
    /// The most any of them was.
    pub max_access_count: u64,
    /// How many have an expiry.
    pub with_expiry: u64,
}

/// Start a reindex (`POST /v1/reindex`, admin only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReindexRequest {
    /// Re-embed every memory, not only those another model embedded.
    #[serde(default)]
    pub force: bool,
}

/// A background job and its progress (`GET /v1/jobs/{id}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Job {
    /// Job id.
    pub id: String,
    /// `reindex` or `maintenance`.
    pub kind: String,
    /// `running`, `done` or `failed`.
    pub state: String,
    /// Items processed.
    pub done: u64,
    /// Items to process.
    pub total: u64,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The code of its failure, as the error shape's (`invalid_input`, `unavailable`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The HTTP status its failure would have answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_status: Option<u16>,
    /// A maintenance job's report, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<MaintenanceReport>,
}

/// A new API key (`POST /v1/admin/keys`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// The tenant the key acts as.
    pub tenant: String,
    /// Whether the key may manage its tenant's keys and reindex.
    #[serde(default)]
    pub admin: bool,
    /// Whether the key manages every tenant's keys and may purge the store (an operator
    /// key; only an operator may make one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub operator: bool,
    /// A note to recognise the key by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// An API key as listed: never the secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KeyInfo {
    /// Public key id (the part after `muisti_` and before the next `_`).
    pub id: String,
    /// The tenant it acts as.
    pub tenant: String,
    /// Whether it may manage its tenant's keys.
    pub admin: bool,
    /// Whether it manages every tenant's keys.
    #[serde(default)]
    pub operator: bool,
    /// Its note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// When it was made.
    pub created_at: String,
}

/// A key just made: the secret is shown this once and only its hash is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CreatedKey {
    /// What is stored about it.
    #[serde(flatten)]
    pub info: KeyInfo,
    /// The key to send as `Authorization: Bearer <key>`.
    pub key: String,
}

/// The keys of the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KeyList {
    /// Oldest first.
    pub keys: Vec<KeyInfo>,
}

/// A snapshot of the whole store (`/v1/admin/snapshots`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Snapshot {
    /// Its id: the time it was made, `YYYYMMDDTHHMMSSmmmZ`.
    pub id: String,
    /// When it was made (RFC 3339).
    pub created_at: String,
    /// The backend of the store it was made from.
    pub backend: String,
    /// `sqlite` (an online backup) or `jsonl` (an export).
    pub format: String,
    /// Records in it.
    pub records: u64,
    /// Size of its data file in bytes.
    pub bytes: u64,
}

/// The snapshots of the server's store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SnapshotList {
    /// Oldest first.
    pub snapshots: Vec<Snapshot>,
}

/// What restoring a snapshot did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Restored {
    /// Records deleted from the store first.
    pub deleted: u64,
    /// Records written from the snapshot.
    pub restored: u64,
}

/// The body of every error response.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
    /// With `confirmation_required` (428): the proposal to confirm or reject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
}

/// Every error `code` the server sends (the OpenAPI document's enum for it).
pub const ERROR_CODES: &[&str] = &[
    "bad_request",
    "unauthorized",
    "forbidden",
    "not_found",
    "method_not_allowed",
    "not_acceptable",
    "conflict",
    "conflicting_fields",
    "too_large",
    "uri_too_long",
    "unsupported_media_type",
    "invalid_input",
    "rate_limited",
    "headers_too_large",
    "internal",
    "unavailable",
    "timeout",
    "blocked",
    "context_length",
    "chat_not_configured",
    "provider_auth",
    "provider_unavailable",
    "provider_rate_limited",
    "step_limit",
    "confirmation_required",
];

/// A stable machine-readable code and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ErrorDetail {
    /// One of [`ERROR_CODES`]: `bad_request`, `unauthorized`, `forbidden`, `not_found`,
    /// `invalid_input`, `conflict`, `rate_limited`, `unavailable`, …
    pub code: String,
    /// What went wrong; never stored values.
    pub message: String,
}

/// Liveness and readiness.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Health {
    /// `ok` or `unavailable`.
    pub status: String,
    /// Why not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The server's background jobs (`GET /v1/jobs`), newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Jobs {
    /// The jobs.
    pub items: Vec<Job>,
}
