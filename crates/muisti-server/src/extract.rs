//! Request extractors that map every rejection to the API's error shape: JSON bodies, path
//! and query parameters, the list query (repeatable `tag`), and the caller.

use axum::{
    body::Bytes,
    extract::{FromRequest, FromRequestParts, Path, Query, Request},
    http::{StatusCode, header, request::Parts},
};
use muisti_client::api;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{error::ApiError, keys::Caller};

/// A JSON body: a `Content-Type` other than `application/json` (or `…+json`) is 415 (so a
/// web page cannot send one without a CORS preflight, which this server never grants),
/// unparseable is 400, anything but a JSON object, a field of the wrong type or an unknown
/// field 422, over the body limit 413.
pub struct ApiJson<T>(pub T);

/// Whether a `Content-Type` is JSON.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"))
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (json, bytes) = body(req, state).await?;
        parse(json, &bytes).map(ApiJson)
    }
}

/// A JSON body that may be left out: an empty body (or blank without a JSON content type)
/// is `None` (the operation's defaults); anything else is read as [`ApiJson`] reads it, so
/// a blank body that says it is JSON is malformed JSON (400), not a request for defaults.
pub struct OptionalJson<T>(pub Option<T>);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (json, bytes) = body(req, state).await?;
        if bytes.is_empty() || !json && bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        parse(json, &bytes).map(|v| OptionalJson(Some(v)))
    }
}

/// Whether the request says its body is JSON, and the body (413 over the limit).
async fn body<S: Send + Sync>(req: Request, state: &S) -> Result<(bool, Bytes), ApiError> {
    let json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json);
    let bytes = Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large("the request body is larger than the server's limit")
        } else {
            ApiError::bad_request(format!("cannot read the body: {}", e.body_text()))
        }
    })?;
    Ok((json, bytes))
}

/// The one reading of a JSON body: 415 without a JSON `Content-Type`, 400 unparseable, 422
/// not an object or a field that breaks the type.
fn parse<T: DeserializeOwned>(json: bool, bytes: &[u8]) -> Result<T, ApiError> {
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send the body as JSON with Content-Type: application/json",
        ));
    }
    // A sequence would fill a struct's fields by position: only objects are bodies (the
    // wire types read their nested structs only from objects too).
    let object = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    match serde_json::from_slice(bytes) {
        Ok(_) if !object => Err(ApiError::invalid("the body must be a JSON object")),
        Ok(v) => Ok(v),
        Err(e) if e.is_data() => {
            // `16.0` in an integer field is the integer 16, as in JSON Schema.
            if object
                && let Ok(mut value) = serde_json::from_slice::<Value>(bytes)
                && whole_numbers(&mut value)
                && let Ok(v) = serde_json::from_value(value)
            {
                return Ok(v);
            }
            Err(ApiError::invalid(format!("invalid body: {e}")))
        }
        Err(e) => Err(ApiError::bad_request(format!("malformed JSON: {e}"))),
    }
}

/// The API's integer fields, wherever they are in a body (never inside stored values).
const INTEGER_FIELDS: [&str; 12] = [
    "limit",
    "confidence",
    "ttl_seconds",
    "expected_version",
    "long_term_memory",
    "graph_facts",
    "max_memories",
    "promote_after",
    "lease_secs",
    "archive_after_days",
    "archive_max_access",
    "cluster",
];
/// Fields holding the caller's own JSON, left exactly as sent.
const OPAQUE_FIELDS: [&str; 3] = ["content", "metadata", "value"];

/// Reads a whole number written with a fraction (`16.0`) in an integer field as that
/// integer, as JSON Schema's `integer` does; `true` if it changed any.
fn whole_numbers(v: &mut Value) -> bool {
    let mut changed = false;
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if OPAQUE_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if INTEGER_FIELDS.contains(&k.as_str())
                    && let Some(f) = v.as_f64().filter(|_| v.is_f64())
                    && let Some(whole) = whole(f)
                {
                    *v = whole;
                    changed = true;
                } else {
                    changed |= whole_numbers(v);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= whole_numbers(item);
            }
        }
        _ => {}
    }
    changed
}

/// `f` as a JSON integer when it is one: a float with no fraction is exactly that integer
/// (beyond 2^53 too), within the range of `u64` (or `i64` below zero).
fn whole(f: f64) -> Option<Value> {
    if f.fract() != 0.0 {
        return None;
    }
    if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
        Some(Value::from(f as u64))
    } else if (-9_223_372_036_854_775_808.0..0.0).contains(&f) {
        Some(Value::from(f as i64))
    } else {
        None
    }
}

/// Path parameters; a segment that cannot be decoded is 400.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

/// Query parameters; an unknown one, a missing one or a value of the wrong type is 422, as
/// the same mistakes in a JSON body are.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| ApiQuery(v))
            .map_err(|e| ApiError::invalid(e.body_text()))
    }
}

/// The query of `GET /v1/memories`: [`api::ListParams`] with `tag` repeatable (every tag
/// given must be on a memory); a query that is not URL-encoded is 400, anything else unknown
/// or of the wrong type 422 (as [`ApiQuery`]).
pub struct ListQueryParams(pub api::ListParams);

impl<S: Send + Sync> FromRequestParts<S> for ListQueryParams {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
        let (tags, rest): (Vec<_>, Vec<_>) = pairs.into_iter().partition(|(k, _)| k == "tag");
        let rest = serde_urlencoded::to_string(&rest)
            .map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
        let mut params: api::ListParams = serde_urlencoded::from_str(&rest)
            .map_err(|e| ApiError::invalid(format!("Failed to deserialize query string: {e}")))?;
        params.tag = tags.into_iter().map(|(_, v)| v).collect();
        Ok(ListQueryParams(params))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("no credential"))
    }
}
