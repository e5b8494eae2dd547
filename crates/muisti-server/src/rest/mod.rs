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

mod admin;
mod conversations;
mod declarative;
mod graph;
mod kv;
mod lifecycle;
mod memories;

pub use admin::*;
pub use conversations::*;
pub use declarative::*;
pub use graph::*;
pub use kv::*;
pub use lifecycle::*;
pub use memories::*;

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

/// What a create did: `created`, `updated` (a key's record replaced), `deduplicated` (the
/// same content was there) or `merged` (it was there, and the write's new tags, metadata,
/// importance or confidence were merged into it).
static WRITE_STATUS: header::HeaderName = header::HeaderName::from_static("muisti-write");
