//! The tenant's statistics and aggregates, extraction, and what operators and tenant admins run: purges, reindexes and their jobs, keys, snapshots, health and metrics.

use super::*;

/// Aggregates of a namespace's memories, computed on the server in one pass: counts by
/// scope, state and category, growth per day by scope, memories by the day they were last
/// accessed, and the most accessed.
#[utoipa::path(get, path = "/v1/analytics", tag = "memories",
    params(api::AnalyticsParams),
    responses((status = 200, body = api::Analytics), (status = 400, body = api::ErrorBody),
        (status = 409, description = DECLARATIVE_WITHOUT_USER, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn analytics(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::AnalyticsParams>,
) -> ApiResult<Json<api::Analytics>> {
    run(&s, &caller, move |e| ops::analytics(&e, p))
        .await
        .map(Json)
}

/// How alike a page of a user's active memories (or of one of their clusters) are: the
/// cosine similarity of every pair, by the server's embedder.
#[utoipa::path(get, path = "/v1/analytics/similarity", tag = "memories",
    params(api::SimilarityParams),
    responses((status = 200, body = api::Similarity), (status = 400, body = api::ErrorBody),
        (status = 404, description = "`cluster`: the user has no such cluster (or no clusters yet)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn similarity(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::SimilarityParams>,
) -> ApiResult<Json<api::Similarity>> {
    run(&s, &caller, move |e| ops::similarity(&e, p))
        .await
        .map(Json)
}

/// What the caller's tenant holds; with `namespace` or `user_id`, those memories summed up
/// (average importance, average and highest access count, how many expire).
#[utoipa::path(get, path = "/v1/stats", tag = "admin",
    params(api::StatsParams),
    responses((status = 200, body = api::Stats), (status = 422, body = api::ErrorBody)))]
pub async fn stats(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::StatsParams>,
) -> ApiResult<Json<api::Stats>> {
    run(&s, &caller, move |e| ops::stats(&e, p)).await.map(Json)
}

/// Remembers a conversation (mem0's `add(messages, infer)`): with `infer` (the default)
/// the lasting facts it states about the user are extracted (by the server's model when it
/// has one and `--llm-extract-facts` is on, else by the offline extractor) and each is
/// decided by the declarative rules; without, each message is stored as said. With
/// `background`, the messages are queued and read later with the conversation's others
/// (debounced), and the answer is 202 at once.
#[utoipa::path(post, path = "/v1/memories/extract", tag = "memories",
    request_body = api::ExtractRequest,
    responses((status = 200, body = api::ExtractResponse),
        (status = 202, description = "With `background`: the messages are queued", body = api::ExtractQueued),
        (status = 400, body = api::ErrorBody),
        (status = 409, description = "`background` without inference (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody),
        (status = 503, description = "The extractor's model could not be reached or never answered in the shape asked (`unavailable`)", body = api::ErrorBody)))]
pub async fn extract_memories(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<api::ExtractRequest>,
) -> ApiResult<Response> {
    if req.background == Some(true) {
        let add = ops::add_request(req)?;
        let queued = add.messages.len();
        s.extraction
            .push(&s.engine.with_tenant(caller.tenant.clone()), add);
        return Ok((StatusCode::ACCEPTED, Json(api::ExtractQueued { queued })).into_response());
    }
    let metrics = std::sync::Arc::clone(&s.metrics);
    let done = run(&s, &caller, move |e| ops::extract(&e, req)).await?;
    ops::count_extraction(&metrics, &done);
    Ok(Json(done).into_response())
}

/// Deletes expired records now, in the whole store (admin key). Reads already hide them;
/// this frees their space.
#[utoipa::path(post, path = "/v1/purge", tag = "admin",
    responses((status = 200, body = api::Purged), (status = 403, body = api::ErrorBody)))]
pub async fn purge(State(s): State<AppState>, caller: Caller) -> ApiResult<Json<api::Purged>> {
    require_operator(&caller)?;
    run(&s, &caller, move |e| ops::purge(&e)).await.map(Json)
}

/// Starts re-embedding memories in the background (admin key): a tenant admin's, its own
/// tenant's; an operator's, the whole store's. One of each reach at a time across every
/// server on the store (409 while one runs anywhere).
#[utoipa::path(post, path = "/v1/reindex", tag = "admin",
    request_body = api::ReindexRequest,
    responses((status = 202, body = api::Job), (status = 403, body = api::ErrorBody),
        (status = 409, body = api::ErrorBody)))]
pub async fn reindex(
    State(s): State<AppState>,
    caller: Caller,
    OptionalJson(r): OptionalJson<api::ReindexRequest>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    let r = r.unwrap_or_default();
    // Taking the store-wide lease reads and writes the store: off the async threads.
    let (jobs, engine) = (s.jobs.clone(), s.engine.with_tenant(caller.tenant.clone()));
    let whole_store = caller.operator;
    let job = ops::blocking(move || jobs.start_reindex(engine, r.force, whole_store))
        .await
        .map_err(|_| ApiError::internal())??;
    Ok((StatusCode::ACCEPTED, Json(job)).into_response())
}

/// The background jobs this server ran or runs, newest first (admin key): a tenant admin's
/// tenant's own, every job for an operator.
#[utoipa::path(get, path = "/v1/jobs", tag = "admin",
    responses((status = 200, body = api::Jobs), (status = 403, body = api::ErrorBody)))]
pub async fn jobs(State(s): State<AppState>, caller: Caller) -> ApiResult<Json<api::Jobs>> {
    require_admin(&caller)?;
    Ok(Json(api::Jobs {
        items: s.jobs.list(&caller),
    }))
}

/// A background job's progress (another tenant's job is not found, but by an operator).
#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "admin",
    params(("id" = String, Path)),
    responses((status = 200, body = api::Job), (status = 404, body = api::ErrorBody)))]
pub async fn job(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::Job>> {
    require_admin(&caller)?;
    s.jobs
        .get(&id, &caller)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("job {id}")))
}

/// Makes an API key; the key is in this answer only.
#[utoipa::path(post, path = "/v1/admin/keys", tag = "admin",
    request_body = api::NewKey,
    responses((status = 201, body = api::CreatedKey), (status = 403, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn create_key(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(k): ApiJson<api::NewKey>,
) -> ApiResult<Response> {
    require_admin(&caller)?;
    if k.operator || k.tenant != caller.tenant.as_str() {
        require_operator(&caller)?;
    }
    let keys = s.keys.clone();
    let made = task(move || keys.create_with(&k.tenant, k.admin, k.operator, k.label)).await?;
    // Open mode ends with the first key: the next request needs one.
    s.open.close();
    Ok((StatusCode::CREATED, Json(made)).into_response())
}

pub(super) fn snapshot_wire(s: muisti::snapshot::SnapshotInfo) -> api::Snapshot {
    api::Snapshot {
        id: s.id,
        created_at: s.created_at.to_string(),
        backend: s.backend,
        format: s.format,
        records: s.records,
        bytes: s.bytes,
    }
}

/// The snapshots of the whole store, oldest first (operator key).
#[utoipa::path(get, path = "/v1/admin/snapshots", tag = "admin",
    responses((status = 200, body = api::SnapshotList), (status = 403, body = api::ErrorBody)))]
pub async fn list_snapshots(
    State(s): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<api::SnapshotList>> {
    require_operator(&caller)?;
    let snapshots = s.snapshots.clone();
    let list = task(move || snapshots.list()).await?;
    Ok(Json(api::SnapshotList {
        snapshots: list.into_iter().map(snapshot_wire).collect(),
    }))
}

/// Snapshots the whole store now, every tenant (operator key): SQLite's online backup, or
/// an export of any other store. Writers go on meanwhile. Answers when it is written.
#[utoipa::path(post, path = "/v1/admin/snapshots", tag = "admin",
    responses((status = 201, body = api::Snapshot), (status = 403, body = api::ErrorBody)))]
pub async fn create_snapshot(State(s): State<AppState>, caller: Caller) -> ApiResult<Response> {
    require_operator(&caller)?;
    let (snapshots, engine) = (s.snapshots.clone(), s.engine.clone());
    let made = task(move || snapshots.create(&engine)).await?;
    Ok((StatusCode::CREATED, Json(snapshot_wire(made))).into_response())
}

/// Replaces everything in the store with a snapshot's records (operator key): every
/// partition of every tenant is emptied, API keys included, then the snapshot's records are
/// written back with every field.
#[utoipa::path(post, path = "/v1/admin/snapshots/{id}/restore", tag = "admin",
    params(("id" = String, Path, description = "The snapshot's id")),
    responses((status = 200, body = api::Restored), (status = 403, body = api::ErrorBody),
        (status = 404, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn restore_snapshot(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::Restored>> {
    require_operator(&caller)?;
    let (snapshots, engine) = (s.snapshots.clone(), s.engine.clone());
    let report = task(move || snapshots.restore(&engine, &id)).await?;
    Ok(Json(api::Restored {
        deleted: report.deleted,
        restored: report.restored,
    }))
}

/// Every API key (never the secrets).
#[utoipa::path(get, path = "/v1/admin/keys", tag = "admin",
    responses((status = 200, body = api::KeyList), (status = 403, body = api::ErrorBody)))]
pub async fn list_keys(State(s): State<AppState>, caller: Caller) -> ApiResult<Json<api::KeyList>> {
    require_admin(&caller)?;
    let keys = s.keys.clone();
    let mut list = task(move || keys.list()).await?;
    if !caller.operator {
        list.retain(|k| k.tenant == caller.tenant.as_str());
    }
    Ok(Json(api::KeyList { keys: list }))
}

/// Revokes an API key; effective on the next request.
#[utoipa::path(delete, path = "/v1/admin/keys/{id}", tag = "admin",
    params(("id" = String, Path)),
    responses((status = 204, description = "Revoked"), (status = 403, body = api::ErrorBody),
        (status = 404, body = api::ErrorBody),
        (status = 409, description = "The last admin key (revoke it with `muisti keys revoke` on the store)", body = api::ErrorBody)))]
pub async fn revoke_key(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    require_admin(&caller)?;
    let keys = s.keys.clone();
    let found = task(move || {
        // A tenant's admin sees only its tenant's keys: another's reads as absent.
        match keys.info_of(&id)? {
            Some(k) if caller.operator || k.tenant == caller.tenant.as_str() => {
                keys.revoke_unless_last_admin(&id)
            }
            _ => Ok(false),
        }
    })
    .await?;
    if found {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("no such key"))
    }
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, body = api::Health)))]
pub async fn healthz() -> Json<api::Health> {
    Json(api::Health {
        status: "ok".into(),
        detail: None,
    })
}

/// Readiness: the store answers its health check.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = api::Health), (status = 503, body = api::Health)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    let store = s.engine.store().clone();
    match ops::blocking(move || store.health_check()).await {
        Ok(h) if h.ok => Json(api::Health {
            status: "ok".into(),
            detail: None,
        })
        .into_response(),
        Ok(h) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(api::Health {
                status: "unavailable".into(),
                detail: Some(h.detail),
            }),
        )
            .into_response(),
        Err(_) => ApiError::internal().into_response(),
    }
}

/// Prometheus metrics in the text exposition format.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub async fn metrics(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(),
    )
        .into_response()
}
