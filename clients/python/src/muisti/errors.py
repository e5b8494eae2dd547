"""The errors of the muisti client: every error response of the server is an `ApiError` (a
subclass per status), carrying the server's stable `code` and `message`."""

from __future__ import annotations

from typing import Any, Optional


class MuistiError(Exception):
    """The base of every error this client raises."""


class ConnectionError(MuistiError):  # noqa: A001 - the client's own, like httpx's
    """The server could not be reached, or the connection failed mid-request."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot reach {url}: {reason}")
        self.url = url
        self.reason = reason


class ApiError(MuistiError):
    """The server answered with an error (the JSON error shape `{"error": {"code", "message"}}`)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        body: Optional[dict[str, Any]] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        """The HTTP status."""
        self.code = code
        """The stable error code (`not_found`, `invalid_input`, `conflict`, ...)."""
        self.message = message
        """The server's message."""
        self.body = body or {}
        """The whole error body."""
        self.retry_after = retry_after
        """Seconds to wait before trying again, when the server said (429, 503)."""


class BadRequestError(ApiError):
    """400: the request was malformed (JSON, parameters or HTTP)."""


class AuthenticationError(ApiError):
    """401: no valid API key."""


class PermissionDeniedError(ApiError):
    """403: the key's rights do not allow this, or a foreign Host or Origin in open mode."""


class NotFoundError(ApiError):
    """404: no such record (another tenant's is 404 too)."""


class ConflictError(ApiError):
    """409: a version or a rule between fields conflicts (`conflict`, `conflicting_fields`)."""


class PayloadTooLargeError(ApiError):
    """413, 414, 431: the body, the target or the headers are too large."""


class ValidationError(ApiError):
    """422: a field or a parameter breaks a rule; `message` names it."""


class ConfirmationRequiredError(ApiError):
    """428: a declarative change waits for the user's confirmation; `proposal` is it."""

    @property
    def proposal(self) -> Optional[dict[str, Any]]:
        """The proposal to confirm or reject (`POST /v1/proposals/{id}/confirm`)."""
        return self.body.get("proposal")


class RateLimitError(ApiError):
    """429: too many requests; `retry_after` says when to try again."""


class ServerError(ApiError):
    """500 and other 5xx statuses not listed."""


class UnavailableError(ServerError):
    """503: the store, a timeout, or too many connections; `retry_after` when given."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    414: PayloadTooLargeError,
    422: ValidationError,
    428: ConfirmationRequiredError,
    429: RateLimitError,
    431: PayloadTooLargeError,
    503: UnavailableError,
}


def error_for(status: int, body: Any, retry_after: Optional[float]) -> ApiError:
    """The typed error of an error response (its status and body)."""
    code, message = "http_error", f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = str(body["error"].get("code", code))
        message = str(body["error"].get("message", message))
    elif isinstance(body, str) and body:
        message = body[:500]
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return cls(status, code, message, body if isinstance(body, dict) else None, retry_after)
