//! Maintenance and topics.

use super::*;

/// What a maintenance run removed (`POST /v1/maintain`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Maintained {
    /// Expired records deleted, in every tenant.
    pub expired: u64,
    /// Episodic memories past the retention deleted, in the caller's tenant.
    pub episodic: u64,
}

/// A maintenance run (`POST /v1/maintenance`, `muisti maintain`): the seed's
/// `runMaintenance`, user by user.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MaintenanceRequest {
    /// Only this user's memories (default: every user's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Only this namespace (default: every namespace of the tenant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The jobs: `expire`, `consolidate`, `promote`, `prune`, `archive`, `cluster`
    /// (default: the first four; prune needs `max_memories`; archive and cluster run only
    /// when named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<String>,
    /// Prune's cap: memories a user keeps per namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memories: Option<u64>,
    /// Prune deletes only memories of importance below this (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_importance: Option<f32>,
    /// Promote raises importance by 0.1 per this many more recalls (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote_after: Option<u64>,
    /// Report what would change, change nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// How long the run's hold on a user lasts if it dies, in seconds (1 to 3600; default
    /// 60): until then another run skips the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_secs: Option<u64>,
    /// Run in the background: answer 202 with the job (`GET /v1/jobs/{id}`: users done of
    /// how many, then the report).
    #[serde(default)]
    pub background: bool,
    /// Archive moves memories not written or recalled for this many days (default 90;
    /// 0: any age).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_after_days: Option<u32>,
    /// Archive moves only memories recalled at most this many times (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archive_max_access: Option<u64>,
    /// Consolidate folds near-duplicates too, memories stating the same fact in other words
    /// (default true; false: exact duplicates only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub near_duplicates: Option<bool>,
}

/// What a maintenance run did (or, dry, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MaintenanceReport {
    /// Expired memories deleted, in every tenant (not counted in a dry run).
    pub expired: u64,
    /// Episodic memories past the retention deleted (not counted in a dry run).
    pub episodic: u64,
    /// Duplicates folded into the memory they repeat.
    pub consolidated: u64,
    /// Memories whose importance was raised.
    pub promoted: u64,
    /// Memories pruned.
    pub pruned: u64,
    /// Memories moved to the archive.
    #[serde(default)]
    pub archived: u64,
    /// Archive objects no record named, deleted.
    #[serde(default)]
    pub swept: u64,
    /// Users whose memories were grouped by topic again.
    #[serde(default)]
    pub clustered: u64,
    /// Users looked at (per namespace).
    pub users: u64,
    /// Users skipped: another process held their lease.
    pub busy: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// The query of `GET /v1/clusters` and `GET /v1/clusters/{id}/memories`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::IntoParams),
    into_params(parameter_in = Query)
)]
#[serde(deny_unknown_fields)]
pub struct ClusterParams {
    /// The user whose memories were clustered.
    pub user_id: String,
    /// Namespace (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Page size of a cluster's memories (default 100, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page of a cluster's memories.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// One topic of a user's memories.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct ClusterInfo {
    /// Its number (`cluster` in a recall).
    pub id: u32,
    /// Its top terms, joined.
    pub label: String,
    /// Its top terms, best first.
    pub terms: Vec<String>,
    /// Memories in it now (each memory is in the cluster of its nearest centroid).
    pub size: u64,
    /// Memories in it when it was fitted.
    pub fitted_size: u64,
}

/// A user's memories grouped by topic (`GET /v1/clusters`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct Clusters {
    /// The namespace.
    pub namespace: String,
    /// The user.
    pub user_id: String,
    /// The clusters.
    pub clusters: Vec<ClusterInfo>,
    /// How well they are separated: the mean silhouette (-1 to 1) that chose their number.
    pub silhouette: f32,
    /// Whether they are topics: the silhouette reaches 0.25. Below it the memories show no
    /// substantial structure (short facts rarely do) and the clusters only divide them.
    #[serde(default)]
    pub topical: bool,
    /// Memories they were fitted on.
    pub fitted_on: u64,
    /// When they were fitted (RFC 3339).
    pub computed_at: String,
}
