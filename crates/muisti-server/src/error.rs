//! Errors as HTTP responses: a status and `{"error": {"code", "message"}}`.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use muisti::ErrorKind;
use muisti_client::api::{ErrorBody, ErrorDetail};

/// An error answered to a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code.
    pub code: &'static str,
    /// The message (never a stored value).
    pub message: String,
    /// Seconds to wait before retrying (sent as `Retry-After`).
    pub retry_after: Option<u64>,
    /// The proposal of a `confirmation_required` answer.
    pub proposal: Option<Box<muisti_client::api::Proposal>>,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        // The document's enum lists every code; a new one must be added there.
        debug_assert!(
            muisti_client::api::ERROR_CODES.contains(&code),
            "error code {code} is not in ERROR_CODES"
        );
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            proposal: None,
        }
    }

    /// 400: the body or a parameter could not be parsed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 401: no valid credential.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    /// 403: a valid credential without the right.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 413.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
    }

    /// 422: a field broke a rule.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_input", message)
    }

    /// 409: fields of the request contradict each other or the record they change
    /// (ADR 0009).
    pub fn conflicting_fields(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "conflicting_fields", message)
    }

    /// 500 without details for the client (the details go to the log).
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; the server log has the details",
        )
    }
}

impl From<muisti::Error> for ApiError {
    fn from(e: muisti::Error) -> Self {
        let message = e.to_string();
        if let muisti::Error::ConfirmationRequired(p) = &e {
            let mut answer = ApiError::new(
                StatusCode::PRECONDITION_REQUIRED,
                "confirmation_required",
                message,
            );
            answer.proposal = Some(Box::new(crate::ops::proposal_out(p)));
            return answer;
        }
        match e.kind() {
            ErrorKind::InvalidInput => ApiError::invalid(message),
            ErrorKind::TooLarge => ApiError::too_large(message),
            ErrorKind::NotFound => ApiError::not_found(message),
            ErrorKind::Conflict => ApiError::new(StatusCode::CONFLICT, "conflict", message),
            ErrorKind::ConflictingFields => ApiError::conflicting_fields(message),
            ErrorKind::Unavailable => {
                tracing::warn!(error = %message, "store unavailable");
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the store is unavailable; retry later",
                );
                e.retry_after = Some(1);
                e
            }
            ErrorKind::Model => {
                tracing::warn!(error = %message, "a model failed");
                ApiError::new(StatusCode::BAD_GATEWAY, "model_failed", message)
            }
            ErrorKind::Corrupted | ErrorKind::Backend => {
                tracing::error!(error = %message, kind = %e.kind(), "store error");
                ApiError::internal()
            }
            _ => {
                tracing::error!(error = %message, "unexpected error");
                ApiError::internal()
            }
        }
    }
}

impl ApiError {
    /// The JSON body: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message.clone(),
            },
            proposal: self.proposal.as_deref().cloned(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut resp = (self.status, Json(self.body())).into_response();
        if let Some(s) = self.retry_after
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// The code of an error status, for an error this server did not make itself (the MCP
/// transport's, the router's).
pub fn code_of(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        406 => "not_acceptable",
        409 => "conflict",
        413 => "too_large",
        414 => "uri_too_long",
        415 => "unsupported_media_type",
        422 => "invalid_input",
        429 => "rate_limited",
        431 => "headers_too_large",
        503 => "unavailable",
        504 => "timeout",
        s if s >= 500 => "internal",
        _ => "bad_request",
    }
}

/// Gives every error response the JSON error shape: one that is not JSON (an empty 405, the
/// MCP transport's plain-text refusals) is rewritten, its text kept as the message when it is
/// short and printable.
pub async fn json_errors(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty() && t.len() <= 300 && !t.chars().any(char::is_control));
    let message = text.unwrap_or_else(|| {
        status
            .canonical_reason()
            .unwrap_or("request refused")
            .to_lowercase()
    });
    let mut out = ApiError::new(status, code_of(status), message).into_response();
    for name in [header::ALLOW, header::RETRY_AFTER, header::WWW_AUTHENTICATE] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// The result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;
