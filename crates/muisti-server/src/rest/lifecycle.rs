//! Maintenance, the archive tier and topics.

use super::*;

/// Brings an archived memory back from the archive: its text, vector and full-text entry
/// are restored and its state is `active` again; a memory that is not archived is returned
/// as it is.
#[utoipa::path(post, path = "/v1/memories/{id}/restore", tag = "memories",
    params(("id" = String, Path, description = "Memory id (ULID)")),
    responses((status = 200, body = api::Memory), (status = 404, body = api::ErrorBody),
        (status = 409, description = "The memory changed while it was restored (`conflict`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn restore_memory(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let m = run(&s, &caller, move |e| ops::restore(&e, &id)).await?;
    Ok(with_etag(StatusCode::OK, m))
}

/// A user's memories grouped by topic (after the `cluster` maintenance job ran for them):
/// each cluster's label (its top terms), size now and size when fitted.
#[utoipa::path(get, path = "/v1/clusters", tag = "recall",
    params(api::ClusterParams),
    responses((status = 200, body = api::Clusters), (status = 404, description = "The user's memories were not clustered yet", body = api::ErrorBody),
        (status = 400, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn clusters(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::ClusterParams>,
) -> ApiResult<Json<api::Clusters>> {
    run(&s, &caller, move |e| ops::clusters(&e, p))
        .await
        .map(Json)
}

/// One page of a cluster's memories, in id order (a memory belongs to the cluster of its
/// nearest centroid, memories written since the clustering included).
#[utoipa::path(get, path = "/v1/clusters/{cluster}/memories", tag = "recall",
    params(("cluster" = u32, Path, description = "Cluster number"), api::ClusterParams),
    responses((status = 200, body = api::MemoryPage), (status = 404, body = api::ErrorBody),
        (status = 400, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn cluster_memories(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<u32>,
    ApiQuery(p): ApiQuery<api::ClusterParams>,
) -> ApiResult<Json<api::MemoryPage>> {
    run(&s, &caller, move |e| ops::cluster_memories(&e, id, p))
        .await
        .map(Json)
}

/// Runs the scopes' lifetimes now (admin key): deletes expired records in the whole store
/// and episodic memories past the retention in the caller's tenant.
#[utoipa::path(post, path = "/v1/maintain", tag = "admin",
    responses((status = 200, body = api::Maintained), (status = 403, body = api::ErrorBody)))]
pub async fn maintain(
    State(s): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<api::Maintained>> {
    require_operator(&caller)?;
    run(&s, &caller, move |e| ops::maintain(&e)).await.map(Json)
}

/// Runs maintenance now (operator key), the seed's `runMaintenance`: expire, then per user
/// consolidate exact duplicates, promote what is recalled, prune to `max_memories`; when
/// named, archive cold memories and group memories by topic; with `dry_run`, reports what
/// would change.
#[utoipa::path(post, path = "/v1/maintenance", tag = "admin",
    request_body = api::MaintenanceRequest,
    responses((status = 200, body = api::MaintenanceReport),
        (status = 202, description = "With `background`: the job (`GET /v1/jobs/{id}`)", body = api::Job),
        (status = 400, body = api::ErrorBody),
        (status = 403, body = api::ErrorBody),
        (status = 409, description = "`prune` without `max_memories` (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn maintenance(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<api::MaintenanceRequest>,
) -> ApiResult<axum::response::Response> {
    require_operator(&caller)?;
    let metrics = std::sync::Arc::clone(&s.metrics);
    if req.background {
        let options = ops::maintenance_options(req)?;
        let engine = s.engine.with_tenant(caller.tenant.clone());
        let job = s.jobs.start_maintenance(engine, options, metrics)?;
        return Ok((StatusCode::ACCEPTED, Json(job)).into_response());
    }
    let report = run(&s, &caller, move |e| {
        ops::maintenance(&e, req, &mut |_, _| {})
    })
    .await?;
    metrics.maintenance("request", &ops::maintained_counts(&report));
    Ok(Json(report).into_response())
}
