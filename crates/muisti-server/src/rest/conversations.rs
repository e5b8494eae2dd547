//! Conversations.

use super::*;

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

/// Takes back a conversation's last message (a framework session's undo, such as the OpenAI
/// Agents SDK's `pop_item`) and answers it; 404 when the conversation has no message.
#[utoipa::path(delete, path = "/v1/conversations/{id}/messages/last", tag = "memories",
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, body = api::ConversationMessage), (status = 404, body = api::ErrorBody),
        (status = 409, description = "a conversation an earlier version stored as one record (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody)))]
pub async fn pop_message(
    State(s): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<api::ConversationMessage>> {
    run(&s, &caller, move |e| ops::pop_message(&e, &id))
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
