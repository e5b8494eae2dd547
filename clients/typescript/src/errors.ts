/** The errors of the muisti client: every error answer of the server is an `ApiError` (a
 * subclass per status) carrying the server's stable `code` and `message`. */

/** The base of every error this client throws. */
export class MuistiError extends Error {
  override name = "MuistiError";
}

/** The server could not be reached, or the connection failed mid-request. */
export class ConnectionError extends MuistiError {
  override name = "ConnectionError";
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach ${url}: ${reason}`);
  }
}

/** The server answered with an error (`{"error": {"code", "message"}}`). */
export class ApiError extends MuistiError {
  override name = "ApiError";
  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The stable error code (`not_found`, `invalid_input`, `conflict`, ...). */
    readonly code: string,
    message: string,
    /** The whole error body. */
    readonly body: Record<string, unknown> = {},
    /** Seconds to wait before trying again, when the server said (429, 503). */
    readonly retryAfter?: number,
  ) {
    super(`${status} ${code}: ${message}`);
    this.serverMessage = message;
  }
  /** The server's message. */
  readonly serverMessage: string;
}

/** 400: the request was malformed. */
export class BadRequestError extends ApiError {
  override name = "BadRequestError";
}
/** 401: no valid API key. */
export class AuthenticationError extends ApiError {
  override name = "AuthenticationError";
}
/** 403: the key's rights do not allow this. */
export class PermissionDeniedError extends ApiError {
  override name = "PermissionDeniedError";
}
/** 404: no such record. */
export class NotFoundError extends ApiError {
  override name = "NotFoundError";
}
/** 409: a version or a rule between fields conflicts. */
export class ConflictError extends ApiError {
  override name = "ConflictError";
}
/** 413, 414, 431: the body, the target or the headers are too large. */
export class PayloadTooLargeError extends ApiError {
  override name = "PayloadTooLargeError";
}
/** 422: a field or a parameter breaks a rule; the message names it. */
export class ValidationError extends ApiError {
  override name = "ValidationError";
}
/** 428: a declarative change waits for the user's confirmation (`body.proposal`). */
export class ConfirmationRequiredError extends ApiError {
  override name = "ConfirmationRequiredError";
}
/** 429: too many requests; `retryAfter` says when to try again. */
export class RateLimitError extends ApiError {
  override name = "RateLimitError";
}
/** 5xx. */
export class ServerError extends ApiError {
  override name = "ServerError";
}
/** 503: the store, a timeout, or too many connections. */
export class UnavailableError extends ServerError {
  override name = "UnavailableError";
}

const BY_STATUS: Record<number, typeof ApiError> = {
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
};

/** The typed error of an error answer. */
export function errorFor(status: number, body: unknown, retryAfter?: number): ApiError {
  let code = "http_error";
  let message = `HTTP ${status}`;
  const detail = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (detail && typeof detail === "object") {
    code = String(detail.code ?? code);
    message = String(detail.message ?? message);
  } else if (typeof body === "string" && body) {
    message = body.slice(0, 500);
  }
  const Kind = BY_STATUS[status] ?? (status >= 500 ? ServerError : ApiError);
  const obj = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
  return new Kind(status, code, message, obj, retryAfter);
}
