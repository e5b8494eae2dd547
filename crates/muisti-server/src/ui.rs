//! The web dashboard at `/ui`, served from the binary itself: the front end's built files
//! (`crates/muisti-server/ui`, made from `ui/` by `ui/build.sh` and committed) are embedded at
//! compile time. `/ui/assets/...` are the files; every other path under `/ui` is the page
//! (the front end routes it), so an address such as `/ui/memories?user_id=ana` can be shared.
//!
//! The page itself needs no credential (it holds no data); it calls the API, which applies
//! the same keys and tenants as for any client. Its headers forbid framing and any script,
//! style or connection that is not the server's own.

use axum::{
    Router,
    extract::Path,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use include_dir::{Dir, include_dir};

use crate::{AppState, error::ApiError};

/// The built front end.
static UI: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/ui");

/// What the page may load and where it may connect: only this server (styles inline too:
/// the chart library sets them).
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; \
                   base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The dashboard's routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(page))
        .route("/ui/", get(page))
        .route("/ui/{*path}", get(asset_or_page))
}

/// `index.html`, never cached (it names the current build's files).
async fn page() -> Response {
    match UI.get_file("index.html") {
        Some(f) => file(f.contents(), "text/html; charset=utf-8", "no-cache"),
        None => ApiError::not_found("this build has no dashboard").into_response(),
    }
}

/// A built file, or the page for a route of the front end.
async fn asset_or_page(Path(path): Path<String>) -> Response {
    if let Some(name) = path.strip_prefix("assets/") {
        return match UI.get_file(format!("assets/{name}")) {
            Some(f) => file(f.contents(), content_type(name), cache_of(name)),
            None => ApiError::not_found(format!("no asset {name}")).into_response(),
        };
    }
    if path.contains('.') {
        return ApiError::not_found(format!("no file {path}")).into_response();
    }
    page().await
}

/// A file with the dashboard's security headers.
fn file(body: &'static [u8], kind: &'static str, cache: &'static str) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// How long a built file may be cached: scripts and styles carry a hash of their content in
/// their names (cached for good); the licence notices do not.
fn cache_of(name: &str) -> &'static str {
    if name.ends_with(".js") || name.ends_with(".css") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    }
}

/// The media type of a built file, by its extension.
fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("html") => "text/html; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("json" | "map") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_has_a_page_and_its_scripts_are_served_as_javascript() {
        let index = UI.get_file("index.html").expect("index.html is built");
        let html = std::str::from_utf8(index.contents()).expect("utf-8");
        assert!(html.contains("<html"), "{html}");
        let scripts: Vec<_> = UI
            .get_dir("assets")
            .expect("assets are built")
            .files()
            .filter(|f| f.path().extension().is_some_and(|e| e == "js"))
            .collect();
        assert!(!scripts.is_empty());
        for s in scripts {
            let name = s.path().to_string_lossy();
            assert!(
                html.contains(name.as_ref()) || !name.contains("index"),
                "{name}"
            );
            assert_eq!(content_type(&name), "text/javascript; charset=utf-8");
        }
    }
}
