//! Declarative memory: proposals and histories.

use super::*;

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

/// A memory's history (its add, then every update, supersede and confirmation, whoever
/// made them), oldest first, by the memory's id, as mem0's `history(id)`; 404 once the
/// memory is deleted, and with a `user_id` that is not the memory's user.
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

/// A memory's accesses in the access log (the server's `--access-log`): each day's count
/// and the latest accesses, newest first, each with its kind, the recall's score and, with
/// `queries`, the query on the asking user's own memory; empty unless the log is (or was) on. 404
/// for a missing memory, and with a `user_id` that is not the memory's user.
#[utoipa::path(get, path = "/v1/memories/{id}/accesses", tag = "memories",
    params(("id" = String, Path, description = "Memory id (ULID)"), api::ActingUser),
    responses((status = 200, body = api::MemoryAccesses), (status = 404, body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn memory_accesses(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(user): ApiQuery<api::ActingUser>,
) -> ApiResult<Json<api::MemoryAccesses>> {
    run(&s, &caller, move |e| {
        ops::accesses(&e, &id, user.user_id.as_deref())
    })
    .await
    .map(Json)
}
