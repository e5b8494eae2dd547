//! The OpenAPI 3.1 document of the REST API, generated from the handlers' annotations.

use axum::{
    http::header,
    response::{IntoResponse, Response},
};
use utoipa::OpenApi;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key from `muisti keys create`; not needed on loopback when no key exists",
                    ))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI description of the REST API.
#[derive(OpenApi)]
#[openapi(
    info(title = "muisti", description = "Long-term memory for AI agents: the REST API of `muisti serve`. Every request acts as the tenant of its API key.", license(name = "Apache-2.0")),
    paths(crate::rest::create_memory, crate::rest::create_memories, crate::rest::get_memory,
        crate::rest::update_memory, crate::rest::delete_memory, crate::rest::delete_memories,
        crate::rest::list_memories,
        crate::rest::similar, crate::rest::recall, crate::rest::kv_get, crate::rest::kv_set,
        crate::rest::kv_forget, crate::rest::kv_all, crate::rest::kv_flush, crate::rest::stats,
        crate::rest::purge, crate::rest::reindex, crate::rest::job, crate::rest::create_key, crate::rest::list_keys,
        crate::rest::revoke_key, crate::rest::healthz, crate::rest::readyz, crate::rest::metrics,
        crate::chat::chat, crate::chat::chat_stream),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "memories", description = "Store, read, change and delete memories"),
        (name = "recall", description = "Find the memories that matter for a message"),
        (name = "kv", description = "Namespaced key-value state with TTL"),
        (name = "chat", description = "Talk to a model with the memories that matter recalled into every prompt"),
        (name = "admin", description = "Keys, reindexing, statistics"),
        (name = "health", description = "Liveness, readiness, metrics")),
)]
pub struct ApiDoc;

/// The OpenAPI 3.1 document, pretty-printed, as committed in `docs/openapi.json` (built
/// once per process).
pub fn openapi_document() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        let mut text = doc.to_pretty_json().unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        text
    })
}

/// `GET /openapi.json`: this document.
pub async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi_document(),
    )
        .into_response()
}
