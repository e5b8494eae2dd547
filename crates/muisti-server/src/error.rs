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
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
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
        match e.kind() {
            ErrorKind::InvalidInput => ApiError::invalid(message),
            ErrorKind::TooLarge => ApiError::too_large(message),
            ErrorKind::NotFound => ApiError::not_found(message),
            ErrorKind::Conflict => ApiError::new(StatusCode::CONFLICT, "conflict", message),
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

/// The result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;
