//! What a web page may not do to a server in open mode (no keys, loopback). Any page the user
//! visits can send requests to `127.0.0.1`: a form-like `POST` (no preflight) would plant text
//! that is later injected into agent prompts, and a DNS-rebound name would let the page read
//! the answers. So in open mode every route refuses a `Host` that is not one of the server's
//! names and an `Origin` that is not allowed (both configurable, as for `/mcp`). JSON bodies
//! must say `application/json` on every route, in every mode (see
//! [`ApiJson`](crate::extract::ApiJson)), so a cross-site request cannot send one without a
//! preflight, which this server never grants.

use axum::{
    extract::{Request, State},
    http::{HeaderMap, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::{AppState, error::ApiError};

/// The names and origins a browser request may carry in open mode.
#[derive(Clone, Debug, Default)]
pub struct BrowserPolicy {
    /// Host names the server answers to (without port).
    pub hosts: Vec<String>,
    /// Allowed `Origin`s: `scheme://host:port`, `scheme://host:*` for any port, or `null`.
    pub origins: Vec<String>,
}

impl BrowserPolicy {
    /// Whether a `Host` header (with or without port) names this server.
    pub fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        self.hosts
            .iter()
            .any(|h| host_name(h).eq_ignore_ascii_case(name))
    }

    /// Whether an `Origin` header is allowed.
    pub fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim();
        self.origins.iter().any(|allowed| {
            let allowed = allowed.trim();
            match allowed.strip_suffix(":*") {
                Some(base) => origin
                    .strip_prefix(base)
                    .is_some_and(|rest| rest.is_empty() || is_port_suffix(rest)),
                None => origin.eq_ignore_ascii_case(allowed),
            }
        })
    }

    /// The refusal for a request, if it is refused.
    fn check(&self, headers: &HeaderMap) -> Option<ApiError> {
        if let Some(host) = headers.get(header::HOST) {
            let ok = host.to_str().is_ok_and(|h| self.host_allowed(h));
            if !ok {
                return Some(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "the Host header does not name this server (open mode answers only its \
                     own names; see allowed_hosts)",
                ));
            }
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let ok = origin.to_str().is_ok_and(|o| self.origin_allowed(o));
            if !ok {
                return Some(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    "requests from this Origin are refused (open mode allows only the \
                     configured origins; see allowed_origins)",
                ));
            }
        }
        None
    }
}

/// `:8080` and the like.
fn is_port_suffix(s: &str) -> bool {
    s.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// A host without its port (`[::1]:7878` → `::1`, `localhost:7878` → `localhost`).
fn host_name(host: &str) -> &str {
    let host = host.trim();
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            name
        }
        _ => host,
    }
}

/// The middleware: in open mode, refuses foreign `Host`s and disallowed `Origin`s (403 with
/// the error shape).
pub async fn guard(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if s.open.is_open()
        && let Some(refusal) = s.browser.check(req.headers())
    {
        return refusal.into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> BrowserPolicy {
        BrowserPolicy {
            hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            origins: vec!["http://localhost:*".into(), "http://127.0.0.1:*".into()],
        }
    }

    #[test]
    fn hosts_are_matched_without_their_port() {
        let p = policy();
        for ok in [
            "localhost",
            "127.0.0.1:7878",
            "LOCALHOST:1",
            "[::1]:7878",
            "::1",
        ] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7878",
            "127.0.0.1.evil.example",
            "",
        ] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn origins_match_exactly_or_by_any_port() {
        let p = policy();
        for ok in [
            "http://localhost:3000",
            "http://127.0.0.1",
            "http://127.0.0.1:8080",
        ] {
            assert!(p.origin_allowed(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "https://localhost:3000",
            "http://localhost.evil.example",
            "http://localhost:30x",
            "null",
        ] {
            assert!(!p.origin_allowed(bad), "{bad}");
        }
    }
}
