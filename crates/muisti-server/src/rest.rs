//! The REST handlers under `/v1` (their OpenAPI description is in `openapi.rs`).

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use muisti::Engine;
use muisti_client::api;

use crate::{
    AppState,
    error::{ApiError, ApiResult},
    extract::{ApiJson, ApiPath, ApiQuery, ListQueryParams, OptionalJson},
    keys::Caller,
    ops,
};

/// Runs a store operation on the blocking pool.
async fn task<T, F>(f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> muisti::Result<T> + Send + 'static,
{
    ops::blocking(f)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a store task failed");
            ApiError::internal()
        })?
        .map_err(ApiError::from)
}

/// Runs a store operation as the caller's tenant.
async fn run<T, F>(state: &AppState, caller: &Caller, f: F) -> ApiResult<T>
where
    T: Send + 'static,
    F: FnOnce(Engine) -> muisti::Result<T> + Send + 'static,
{
    let engine = state.engine.with_tenant(caller.tenant.clone());
    task(move || f(engine)).await
}

fn require_admin(caller: &Caller) -> ApiResult<()> {
    if caller.admin {
        Ok(())
    } else {
        Err(ApiError::forbidden("this needs an admin key"))
    }
}

fn require_operator(caller: &Caller) -> ApiResult<()> {
    if caller.operator {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "this needs an operator key (a tenant's admin key acts on its own tenant only)",
        ))
    }
}

/// The 409 of a write whose fields contradict each other (ADR 0009).
const CONFLICTING_FIELDS: &str =
    "Fields contradict each other (`conflicting_fields`): valid_until before valid_from";

const DECLARATIVE_WITHOUT_USER: &str = "`scope=declarative` without `user_id` (`conflicting_fields`): declarative entries are read per user";

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
fn written_response(m: api::Memory, written: muisti::WriteStatus) -> Response {
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

/// Applies a proposal (an agent-learned declarative entry the user confirms), once, for the
/// user it concerns (`user_id` in the body): 201 with the new entry, or 200 with the entry
/// it superseded (or that won against it).
#[utoipa::path(post, path = "/v1/proposals/{id}/confirm", tag = "declarative",
    params(("id" = String, Path, description = "Proposal id (ULID)")),
    request_body = api::ProposalDecision,
    responses((status = 201, body = api::Memory), (status = 200, body = api::Memory),
        (status = 404, description = "No such proposal of this user: confirmed, rejected, expired or another user's", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn confirm_proposal(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(by): ApiJson<api::ProposalDecision>,
) -> ApiResult<Response> {
    let (m, written) = run(&s, &caller, move |e| ops::confirm(&e, &id, by)).await?;
    Ok(written_response(m, written))
}

/// Drops a proposal of the user it concerns (`user_id` in the body); answers it.
#[utoipa::path(post, path = "/v1/proposals/{id}/reject", tag = "declarative",
    params(("id" = String, Path, description = "Proposal id (ULID)")),
    request_body = api::ProposalDecision,
    responses((status = 200, body = api::Proposal),
        (status = 404, description = "No such proposal of this user: confirmed, rejected, expired or another user's", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn reject_proposal(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(by): ApiJson<api::ProposalDecision>,
) -> ApiResult<Json<api::Proposal>> {
    run(&s, &caller, move |e| ops::reject(&e, &id, by))
        .await
        .map(Json)
}

/// The proposals waiting for a user's confirmation, oldest first.
#[utoipa::path(get, path = "/v1/proposals", tag = "declarative",
    params(api::ProposalParams),
    responses((status = 200, body = api::Proposals), (status = 400, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn list_proposals(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::ProposalParams>,
) -> ApiResult<Json<api::Proposals>> {
    run(&s, &caller, move |e| ops::proposals(&e, p))
        .await
        .map(Json)
}

/// A declarative entry's history (add, update, supersede, confirm), oldest first, by the
/// entry's id; empty for a memory that is not declarative; 404 once the memory is deleted,
/// and with a `user_id` that is not the entry's user.
#[utoipa::path(get, path = "/v1/memories/{id}/history", tag = "declarative",
    params(("id" = String, Path, description = "Memory id (ULID)"), api::ActingUser),
    responses((status = 200, body = api::History), (status = 404, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn memory_history(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(user): ApiQuery<api::ActingUser>,
) -> ApiResult<Json<api::History>> {
    run(&s, &caller, move |e| {
        ops::history(&e, &id, user.user_id.as_deref())
    })
    .await
    .map(Json)
}

/// What a create did: `created`, `updated` (a key's record replaced), `deduplicated` (the
/// same content was there) or `merged` (it was there, and the write's new tags, metadata,
/// importance or confidence were merged into it).
static WRITE_STATUS: header::HeaderName = header::HeaderName::from_static("muisti-write");

/// A memory as the response body, its version as a strong `ETag` (`"3"`).
fn with_etag(status: StatusCode, m: api::Memory) -> Response {
    let etag = HeaderValue::from_str(&format!("\"{}\"", m.version)).ok();
    let mut r = (status, Json(m)).into_response();
    if let Some(v) = etag {
        r.headers_mut().insert(header::ETAG, v);
    }
    r
}

/// The version an `If-Match` header requires: `"3"`, `W/"3"` or `3`; `*` (any) is `None`.
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ApiError> {
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

/// One page of memories, oldest first.
#[utoipa::path(get, path = "/v1/memories", tag = "memories",
    params(api::ListParams),
    responses((status = 200, body = api::MemoryPage), (status = 400, body = api::ErrorBody),
        (status = 409, description = DECLARATIVE_WITHOUT_USER, body = api::ErrorBody),
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

/// The value at a key (`HEAD` answers whether it exists).
#[utoipa::path(get, path = "/v1/kv/{namespace}/{key}", tag = "kv",
    params(("namespace" = String, Path), ("key" = String, Path)),
    responses((status = 200, body = api::KvEntry), (status = 404, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn kv_get(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath((ns, key)): ApiPath<(String, String)>,
) -> ApiResult<Json<api::KvEntry>> {
    run(&s, &caller, move |e| ops::kv_get(&e, &ns, &key))
        .await
        .map(Json)
}

/// Stores a value at a key, replacing any value there.
#[utoipa::path(put, path = "/v1/kv/{namespace}/{key}", tag = "kv",
    params(("namespace" = String, Path), ("key" = String, Path)),
    request_body = api::KvValue,
    responses((status = 200, body = api::KvEntry), (status = 400, body = api::ErrorBody),
        (status = 413, body = api::ErrorBody), (status = 422, body = api::ErrorBody)))]
pub async fn kv_set(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath((ns, key)): ApiPath<(String, String)>,
    ApiJson(v): ApiJson<api::KvValue>,
) -> ApiResult<Json<api::KvEntry>> {
    run(&s, &caller, move |e| ops::kv_set(&e, &ns, &key, v))
        .await
        .map(Json)
}

/// Deletes a key.
#[utoipa::path(delete, path = "/v1/kv/{namespace}/{key}", tag = "kv",
    params(("namespace" = String, Path), ("key" = String, Path)),
    responses((status = 204, description = "Deleted"), (status = 404, body = api::ErrorBody)))]
pub async fn kv_forget(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath((ns, key)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    run(&s, &caller, move |e| ops::kv_forget(&e, &ns, &key)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// One page of the live entries of a namespace, oldest first (`next_cursor` leads on).
#[utoipa::path(get, path = "/v1/kv/{namespace}", tag = "kv",
    params(("namespace" = String, Path), api::KvPageParams),
    responses((status = 200, body = api::KvEntries), (status = 400, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn kv_all(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(ns): ApiPath<String>,
    ApiQuery(p): ApiQuery<api::KvPageParams>,
) -> ApiResult<Json<api::KvEntries>> {
    run(&s, &caller, move |e| ops::kv_page(&e, &ns, p))
        .await
        .map(Json)
}

/// Deletes every entry of a namespace.
#[utoipa::path(delete, path = "/v1/kv/{namespace}", tag = "kv",
    params(("namespace" = String, Path)),
    responses((status = 200, body = api::Deleted), (status = 422, body = api::ErrorBody)))]
pub async fn kv_flush(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(ns): ApiPath<String>,
) -> ApiResult<Json<api::Deleted>> {
    run(&s, &caller, move |e| ops::kv_flush(&e, &ns))
        .await
        .map(Json)
}

/// What the caller's tenant holds.
#[utoipa::path(get, path = "/v1/stats", tag = "admin",
    responses((status = 200, body = api::Stats)))]
pub async fn stats(State(s): State<AppState>, caller: Caller) -> ApiResult<Json<api::Stats>> {
    run(&s, &caller, move |e| ops::stats(&e)).await.map(Json)
}

/// The conversations, oldest first (`user_id`: only that user's).
#[utoipa::path(get, path = "/v1/conversations", tag = "memories",
    params(api::ConversationParams),
    responses((status = 200, body = api::Conversations), (status = 400, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn list_conversations(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::ConversationParams>,
) -> ApiResult<Json<api::Conversations>> {
    run(&s, &caller, move |e| ops::conversations(&e, p))
        .await
        .map(Json)
}

/// A conversation with its messages, in order (each message is a record of its own).
#[utoipa::path(get, path = "/v1/conversations/{id}", tag = "memories",
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, body = api::ConversationDetail), (status = 404, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn get_conversation(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::ConversationDetail>> {
    run(&s, &caller, move |e| ops::conversation(&e, &id))
        .await
        .map(Json)
}

/// Appends messages to a conversation, which is made on first use (a chat history kept by
/// the caller: LangChain's, the SDKs'); answers the stored messages with their places. A
/// conversation with a user keeps it (another `user_id` is 409 `conflicting_fields`).
#[utoipa::path(post, path = "/v1/conversations/{id}/messages", tag = "memories",
    params(("id" = String, Path, description = "The conversation's id")),
    request_body = api::AppendMessages,
    responses((status = 200, body = api::AppendedMessages), (status = 400, body = api::ErrorBody),
        (status = 409, description = "`user_id` is not the conversation's (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn append_messages(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(req): ApiJson<api::AppendMessages>,
) -> ApiResult<Json<api::AppendedMessages>> {
    run(&s, &caller, move |e| ops::append_messages(&e, &id, req))
        .await
        .map(Json)
}

/// Deletes a conversation: its messages, its header, and its scratch and short-term
/// memories → how many records went.
#[utoipa::path(delete, path = "/v1/conversations/{id}", tag = "memories",
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, body = api::Deleted), (status = 422, body = api::ErrorBody)))]
pub async fn delete_conversation(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::Deleted>> {
    run(&s, &caller, move |e| ops::delete_conversation(&e, &id))
        .await
        .map(Json)
}

/// Ends a conversation: deletes its scratch and short-term memories (those whose
/// `session_id` is the conversation's id), in every namespace. Ending it again deletes
/// nothing.
#[utoipa::path(post, path = "/v1/conversations/{id}/end", tag = "memories",
    params(("id" = String, Path, description = "The conversation's id (the memories' session_id)")),
    responses((status = 200, body = api::Deleted), (status = 422, body = api::ErrorBody)))]
pub async fn end_conversation(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::Deleted>> {
    run(&s, &caller, move |e| ops::end_conversation(&e, &id))
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

fn snapshot_wire(s: muisti::snapshot::SnapshotInfo) -> api::Snapshot {
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

/// A user's entities (all, of one kind, or the one with a name or alias), by name.
#[utoipa::path(get, path = "/v1/graph/entities", tag = "graph",
    params(api::GraphEntityParams),
    responses((status = 200, body = api::GraphEntities), (status = 400, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn graph_entities(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::GraphEntityParams>,
) -> ApiResult<Json<api::GraphEntities>> {
    run(&s, &caller, move |e| ops::graph_entities(&e, p))
        .await
        .map(Json)
}

/// Merges the entity `other` into `keep` (two names of one thing): `keep` takes its
/// names as aliases, its memories and its relations (the same current fact twice becomes
/// one; past facts are kept as they were); the merge is recorded in `keep`'s attributes.
#[utoipa::path(post, path = "/v1/graph/entities/merge", tag = "graph",
    request_body = api::GraphMerge,
    responses((status = 200, body = api::GraphEntity), (status = 400, body = api::ErrorBody),
        (status = 404, description = "No entity with a name", body = api::ErrorBody),
        (status = 409, description = "Both names are one entity already (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn graph_merge(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(m): ApiJson<api::GraphMerge>,
) -> ApiResult<Json<api::GraphEntity>> {
    run(&s, &caller, move |e| ops::graph_merge(&e, m))
        .await
        .map(Json)
}

/// The relations matching a triple pattern (`subject`, `predicate`, `object`, each
/// optional; or an `entity` at either end), oldest first: those that hold now, or with
/// `as_of` those that held then (replaced facts included).
#[utoipa::path(get, path = "/v1/graph/relations", tag = "graph",
    params(api::GraphRelationParams),
    responses((status = 200, body = api::GraphRelations), (status = 400, body = api::ErrorBody),
        (status = 409, description = "`entity` with `subject` or `object`, or `hops` without `entity` (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn graph_relations(
    State(s): State<AppState>,
    caller: Caller,
    ApiQuery(p): ApiQuery<api::GraphRelationParams>,
) -> ApiResult<Json<api::GraphRelations>> {
    run(&s, &caller, move |e| ops::graph_relations(&e, p))
        .await
        .map(Json)
}
