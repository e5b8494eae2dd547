//! The knowledge graph.

use super::*;

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
