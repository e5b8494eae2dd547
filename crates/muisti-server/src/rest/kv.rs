//! The key-value face.

use super::*;

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
