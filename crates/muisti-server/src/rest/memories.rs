//! Memories: create (one or a batch, with `ETag`s and `If-Match`), read, update, delete, list, recall and similar.

use super::*;

/// Stores a memory.
#[utoipa::path(post, path = "/v1/memories", tag = "memories",
    request_body = api::NewMemory,
    responses(
        (status = 201, description = "Created", body = api::Memory),
        (status = 200, description = "Replaced the record at the key (`muisti-write: updated`), or the same content was already stored (`deduplicated`; `merged` when the write's new tags, metadata, importance or confidence were merged into it). A declarative entry that restates or updates one of the user's entries supersedes it in place (`updated`, the existing entry's id; its old text in its history), or loses to it (`deduplicated`, the entry that won: user-stated over learned, a learned entry of at least this confidence)", body = api::Memory),
        (status = 400, body = api::ErrorBody), (status = 401, body = api::ErrorBody),
        (status = 404, description = "`supersedes` names no active declarative entry of the user", body = api::ErrorBody),
        (status = 409, description = CONFLICTING_FIELDS, body = api::ErrorBody),
        (status = 413, body = api::ErrorBody), (status = 422, body = api::ErrorBody),
        (status = 428, description = "An agent-learned declarative entry waits for the user's confirmation (`confirmation_required`, with the `proposal` to confirm or reject); nothing was stored", body = api::ErrorBody),
        (status = 429, body = api::ErrorBody), (status = 503, body = api::ErrorBody)))]
pub async fn create_memory(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<api::NewMemory>,
) -> ApiResult<Response> {
    let (m, written) = run(&s, &caller, move |e| ops::create(&e, body)).await?;
    Ok(written_response(m, written))
}

/// A write's answer: 201 when created, else 200; the `muisti-write` header says what
/// happened; the `ETag` is the version.
pub(super) fn written_response(m: api::Memory, written: muisti::WriteStatus) -> Response {
    let status = if written == muisti::WriteStatus::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut r = with_etag(status, m);
    r.headers_mut().insert(
        WRITE_STATUS.clone(),
        HeaderValue::from_static(written.as_str()),
    );
    r
}

/// A memory as the response body, its version as a strong `ETag` (`"3"`).
pub(super) fn with_etag(status: StatusCode, m: api::Memory) -> Response {
    let etag = HeaderValue::from_str(&format!("\"{}\"", m.version)).ok();
    let mut r = (status, Json(m)).into_response();
    if let Some(v) = etag {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// The version an `If-Match` header requires: `"3"`, `W/"3"` or `3`; `*` (any) is `None`.
pub(super) fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
    let Some(v) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let bad = || ApiError::invalid("If-Match must be a version ETag such as \"3\", or *");
    let v = v.to_str().map_err(|_| bad())?.trim();
    if v == "*" {
        return Ok(None);
    }
    let v = v.strip_prefix("W/").unwrap_or(v);
    let v = v
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v);
    v.parse().map(Some).map_err(|_| bad())
}

/// Stores many memories in one transaction (all or none).
#[utoipa::path(post, path = "/v1/memories/batch", tag = "memories",
    request_body = api::NewMemories,
    responses((status = 200, body = api::Memories),
        (status = 400, body = api::ErrorBody),
        (status = 409, description = CONFLICTING_FIELDS, body = api::ErrorBody),
        (status = 413, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn create_memories(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<api::NewMemories>,
) -> ApiResult<Json<api::Memories>> {
    run(&s, &caller, move |e| ops::create_many(&e, body))
        .await
        .map(Json)
}

/// One memory by id; another tenant's id is 404 like a missing one, and so is a declarative
/// entry unless `user_id` is its user.
#[utoipa::path(get, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "Memory id (ULID)"), api::ActingUser),
    responses((status = 200, body = api::Memory), (status = 404, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn get_memory(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(user): ApiQuery<api::ActingUser>,
) -> ApiResult<Response> {
    let m = run(&s, &caller, move |e| {
        ops::get(&e, &id, user.user_id.as_deref())
    })
    .await?;
    Ok(with_etag(StatusCode::OK, m))
}

/// Changes some fields of a memory, atomically. With `expected_version` in the body or an
/// `If-Match` header (the `ETag` of a read), only if the memory is still at that version:
/// otherwise 409 `conflict` and nothing changes. Fields that contradict each other or the
/// stored memory (a validity window ending before it starts, `superseded_by` with another
/// state, a state `superseded` with no successor) are 409 `conflicting_fields`.
#[utoipa::path(patch, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "Memory id (ULID)"),
        ("If-Match" = Option<String>, Header, description = "The memory's ETag (its version, as \"3\"): update only that version")),
    request_body = api::MemoryPatch,
    responses((status = 200, body = api::Memory), (status = 404, body = api::ErrorBody),
        (status = 409, description = "The memory is at another version (`conflict`), or fields contradict each other or the stored memory (`conflicting_fields`)", body = api::ErrorBody),
        (status = 400, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn update_memory(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiPath(id): ApiPath<String>,
    ApiJson(mut patch): ApiJson<api::MemoryPatch>,
) -> ApiResult<Response> {
    match (if_match(&headers)?, patch.expected_version) {
        (Some(h), Some(b)) if h != b => {
            return Err(ApiError::conflicting_fields(
                "If-Match and expected_version name different versions",
            ));
        }
        (Some(h), _) => patch.expected_version = Some(h),
        _ => {}
    }
    let m = run(&s, &caller, move |e| ops::update(&e, &id, patch)).await?;
    Ok(with_etag(StatusCode::OK, m))
}

/// Deletes a memory (a declarative entry only when `user_id` is its user: otherwise 404).
#[utoipa::path(delete, path = "/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "Memory id (ULID)"), api::ActingUser),
    responses((status = 204, description = "Deleted"), (status = 404, body = api::ErrorBody)))]
pub async fn delete_memory(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(user): ApiQuery<api::ActingUser>,
) -> ApiResult<StatusCode> {
    run(&s, &caller, move |e| {
        ops::delete(&e, &id, user.user_id.as_deref())
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes every memory of one user in a namespace (only one agent's or session's, if given
/// too), each with every derived copy: full-text terms, vector, in-memory copies.
#[utoipa::path(delete, path = "/v1/memories", tag = "memories",
    params(api::ForgetParams),
    responses((status = 200, body = api::Deleted), (status = 400, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn delete_memories(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::ForgetParams>,
) -> ApiResult<Json<api::Deleted>> {
    run(&s, &caller, move |e| ops::forget_owner(&e, p))
        .await
        .map(Json)
}

/// One page of memories, oldest first (or in `order`).
#[utoipa::path(get, path = "/v1/memories", tag = "memories",
    params(api::ListParams),
    responses((status = 200, body = api::MemoryPage), (status = 400, body = api::ErrorBody),
        (status = 409, description = "`scope=declarative` without `user_id`, or a `cursor` of a listing in another `order` (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn list_memories(
    State(s): State<AppState>,
    caller: Caller,
    ListQueryParams(params): ListQueryParams,
) -> ApiResult<Json<api::MemoryPage>> {
    run(&s, &caller, move |e| ops::list(&e, params))
        .await
        .map(Json)
}

/// The memories closest in meaning to one memory (itself excluded), best first.
#[utoipa::path(get, path = "/v1/memories/{id}/similar", tag = "recall",
    params(("id" = String, Path, description = "Memory id (ULID)"), api::SimilarParams),
    responses((status = 200, body = api::RecallResult), (status = 404, body = api::ErrorBody),
        (status = 400, body = api::ErrorBody),
        (status = 409, description = DECLARATIVE_WITHOUT_USER, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn similar(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(p): ApiQuery<api::SimilarParams>,
) -> ApiResult<Json<api::RecallResult>> {
    run(&s, &caller, move |e| ops::similar(&e, &id, p))
        .await
        .map(Json)
}

/// The memories that best match a query (hybrid full-text and vector recall).
#[utoipa::path(post, path = "/v1/recall", tag = "recall",
    request_body = api::RecallQuery,
    responses((status = 200, body = api::RecallResult), (status = 400, body = api::ErrorBody),
        (status = 404, description = "`cluster`: the user has no such cluster (or no clusters yet)", body = api::ErrorBody),
        (status = 409, description = "`scope=declarative` without `user_id`, `cluster` without `user_id` or with `include_archived`, or `mode=overlap` with either (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn recall(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(q): ApiJson<api::RecallQuery>,
) -> ApiResult<Json<api::RecallResult>> {
    run(&s, &caller, move |e| ops::recall(&e, q))
        .await
        .map(Json)
}
