//! The dashboard's aggregates.

use super::*;

/// Query parameters of `GET /v1/analytics`: which memories to aggregate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// Only this user's memories.
    pub user_id: Option<String>,
    /// Only this agent's.
    pub agent_id: Option<String>,
    /// Only this scope.
    pub scope: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Days the per-day series cover, ending today (default 30, 1 to 366).
    pub days: Option<u32>,
    /// How many of the most accessed memories (default 10, at most 100).
    pub top: Option<usize>,
}

/// A count on one UTC day.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct DayCount {
    /// The day, `YYYY-MM-DD` (UTC).
    pub day: String,
    /// The scope counted, in a per-scope series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How many.
    pub count: u64,
}

/// Aggregates of a namespace's memories (`GET /v1/analytics`), computed on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Analytics {
    /// Memories matched.
    pub total: u64,
    /// By scope.
    pub by_scope: BTreeMap<String, u64>,
    /// By state (`active`, `archived`, `superseded`).
    pub by_state: BTreeMap<String, u64>,
    /// By category.
    pub by_category: BTreeMap<String, u64>,
    /// Memories created per day of the window, per scope (days with none left out).
    pub growth: Vec<DayCount>,
    /// Memories whose last access fell on each day of the window (every memory keeps a
    /// count and a last access time).
    pub last_accessed: Vec<DayCount>,
    /// Accesses (recalls and reads by id) of the memories on each day of the window, from
    /// the access log: empty unless the log is (or, within its retention, was) on.
    #[serde(default)]
    pub accesses: Vec<DayCount>,
    /// Whether the server keeps the access log (`--access-log`).
    #[serde(default)]
    pub access_log: bool,
    /// The most accessed memories, most first.
    pub top_accessed: Vec<Memory>,
}

/// Query parameters of `GET /v1/analytics/similarity`: a page of a user's memories (or of
/// one of their clusters) to compare.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct SimilarityParams {
    /// Namespace (default `default`).
    pub namespace: Option<String>,
    /// The user.
    pub user_id: String,
    /// Only this cluster's memories (`GET /v1/clusters`).
    pub cluster: Option<u32>,
    /// How many memories (default 20, 2 to 60).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// How alike a page of memories are (`GET /v1/analytics/similarity`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Similarity {
    /// The memories compared, in order.
    pub items: Vec<Memory>,
    /// `matrix[i][j]`: the cosine similarity of item `i` and item `j` (-1 to 1).
    pub matrix: Vec<Vec<f32>>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One access of a memory in the access log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AccessEntry {
    /// When (RFC 3339).
    pub at: String,
    /// `recall` (a recall returned it) or `read` (read by id).
    pub kind: String,
    /// The recall's score of the memory, 0 to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// The recall's query, kept with `--access-log queries` on the asking user's own
    /// memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// A memory's accesses in the access log (`GET /v1/memories/{id}/accesses`), within the
/// log's retention: empty unless the log is (or was) on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MemoryAccesses {
    /// The memory.
    pub memory_id: String,
    /// Accesses per UTC day, oldest first (days with none left out).
    pub days: Vec<DayCount>,
    /// The latest accesses, newest first (at most 25).
    pub accesses: Vec<AccessEntry>,
}
