//! The server: router, middleware (request ids, metrics, timeouts, auth, rate limits), and
//! the listen loop with graceful shutdown.

mod jobs;
mod serve;

pub use jobs::Jobs;
pub use serve::Server;
use serve::scheduled_round;

use std::{
    collections::HashMap,
    future::Future,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Router,
    extract::{DefaultBodyLimit, MatchedPath, Request, State},
    http::{HeaderName, HeaderValue, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{delete, get, post},
};
use muisti::{Engine, Tenant};
use muisti_client::api;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::{
    chat::{self, ChatService},
    config::{RateLimit, ServerConfig},
    error::ApiError,
    keys::{Caller, KeyRing},
    mcp::MuistiMcp,
    metrics::Metrics,
    ops, rest,
};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// Listening beyond loopback needs API keys.
    #[error(
        "refusing to listen on {0} without API keys: make one with `muisti keys create --tenant NAME`, or listen on 127.0.0.1"
    )]
    NoKeys(SocketAddr),
    /// The store failed while starting.
    #[error(transparent)]
    Store(#[from] muisti::Error),
    /// The listener failed.
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    /// The chat model settings are unusable.
    #[error("cannot set up chat: {0}")]
    Chat(String),
}

/// Token buckets, one per API key.
pub struct RateLimiter {
    limit: RateLimit,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// Buckets refilled at `limit`.
    pub fn new(limit: RateLimit) -> Self {
        Self {
            limit,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a token for `key`, or answers how many seconds until one is free.
    pub fn check(&self, key: &str) -> Result<(), u64> {
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        let burst = f64::from(self.limit.burst);
        let (tokens, last) = buckets.entry(key.to_owned()).or_insert((burst, now));
        *tokens =
            (*tokens + now.duration_since(*last).as_secs_f64() * self.limit.per_sec).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / self.limit.per_sec).ceil().max(1.0) as u64)
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The engine; handlers confine it to the caller's tenant.
    pub engine: Engine,
    /// The API keys.
    pub keys: KeyRing,
    /// No keys needed (loopback, no keys yet, not required): ends for good once a key
    /// exists.
    pub open: Arc<OpenMode>,
    /// Per-key rate limits.
    pub limiter: Option<Arc<RateLimiter>>,
    /// Request metrics.
    pub metrics: Arc<Metrics>,
    /// Background jobs.
    pub jobs: Arc<Jobs>,
    /// The chat model, when `/v1/chat` is on.
    pub chat: Option<Arc<ChatService>>,
    /// What the OpenAI-compatible proxy remembers of each exchange.
    pub proxy_remember: crate::config::ProxyRemember,
    /// Background fact extraction, debounced per user and conversation.
    pub extraction: Arc<muisti::facts::ExtractionQueue>,
    /// Whether `/v1/chat` learns from what the user says (through `extraction`).
    pub chat_learn: bool,
    /// The `Host`s and `Origin`s open mode answers.
    pub browser: Arc<crate::browser::BrowserPolicy>,
    /// Snapshots of the whole store (`/v1/admin/snapshots`).
    pub snapshots: Arc<muisti::snapshot::Snapshots>,
}

impl AppState {
    /// The queue the agent of `/v1/chat` learns through, when the server learns.
    pub(crate) fn learning(&self) -> Option<Arc<muisti::facts::ExtractionQueue>> {
        self.chat_learn.then(|| Arc::clone(&self.extraction))
    }
}

/// Whether the server still runs without keys. It starts open only on loopback with no key
/// and no `require_auth`; it closes (for good) when this server makes a key, when a request
/// presents a valid key (made by another server on the same store), and, for keys made
/// elsewhere (`muisti keys create`), when a check of the store finds one (at most one second
/// after it was made).
#[derive(Debug)]
pub struct OpenMode {
    open: std::sync::atomic::AtomicBool,
    /// When the mode was set up.
    since: Instant,
    /// Milliseconds after `since` of the last check of the store for keys.
    checked_ms: std::sync::atomic::AtomicU64,
}

impl OpenMode {
    /// How often an open server looks for keys made by another process.
    pub const RECHECK: Duration = Duration::from_secs(1);

    fn new(open: bool) -> Self {
        Self {
            open: std::sync::atomic::AtomicBool::new(open),
            since: Instant::now(),
            checked_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether requests need no key now.
    pub fn is_open(&self) -> bool {
        self.open.load(std::sync::atomic::Ordering::Acquire)
    }

    /// A key exists: authentication is on from the next request.
    pub fn close(&self) {
        self.open.store(false, std::sync::atomic::Ordering::Release);
    }

    /// Whether it is time to look for keys made by another process.
    /// Whether it is time to look for keys made by another process (one caller a second
    /// gets `true`; no lock on the request path).
    fn due(&self) -> bool {
        use std::sync::atomic::Ordering;
        let now = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.checked_ms.load(Ordering::Relaxed);
        now.saturating_sub(last) >= Self::RECHECK.as_millis() as u64
            && self
                .checked_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

fn request_id(req: &Request) -> String {
    req.headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| ulid::Ulid::generate().to_string(), str::to_owned)
}

/// Request id, span, metrics and a log line per failed request.
async fn observe(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request_id(&req);
    let method = req.method().clone();
    let matched = req.extensions().get::<MatchedPath>().cloned();
    let route = matched.as_ref().map_or("unmatched", MatchedPath::as_str);
    let span = tracing::info_span!("request", id = %id, method = %method, route = %route);
    s.metrics.started();
    let mut resp = next.run(req).instrument(span.clone()).await;
    let status = resp.status();
    let took = started.elapsed();
    s.metrics
        .finished(method.as_str(), route, status.as_u16(), took);
    span.in_scope(|| {
        if status.is_server_error() {
            tracing::warn!(
                status = status.as_u16(),
                ms = took.as_millis() as u64,
                "request failed"
            );
        } else {
            tracing::debug!(
                status = status.as_u16(),
                ms = took.as_millis() as u64,
                "request"
            );
        }
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(REQUEST_ID.clone(), v);
    }
    resp
}

/// Answers 503 `timeout` when a request takes longer than the configured limit. A write that
/// already reached the store still completes.
async fn deadline(State(limit): State<std::time::Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!("the request took longer than {} s", limit.as_secs()),
        )
        .into_response(),
    }
}

/// Reads the whole body within `limit` before the handler runs (for the routes whose work
/// may outlast the request deadline): a body sent too slowly is answered 503 `timeout` and
/// its connection closed; one over the body limit is 413, as on every route.
async fn body_in_time(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    use axum::extract::FromRequest;
    let (parts, body) = req.into_parts();
    let headers = parts.clone();
    let read = axum::body::Bytes::from_request(Request::from_parts(parts, body), &());
    match tokio::time::timeout(limit, read).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(headers, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(e)) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::too_large("the request body is larger than the server's limit")
                .into_response()
        }
        Ok(Err(e)) => ApiError::bad_request(format!("cannot read the body: {}", e.body_text()))
            .into_response(),
        Err(_) => {
            let mut r = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                format!(
                    "the request body took longer than {} s to arrive",
                    limit.as_secs()
                ),
            )
            .into_response();
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            r
        }
    }
}

fn bearer(req: &Request) -> Option<&str> {
    let v = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn unauthorized(message: &str) -> Response {
    let mut r = ApiError::unauthorized(message).into_response();
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// Identifies the caller from its key (or the open mode) and applies its rate limit. The
/// tenant comes from the credential only; handlers read it from the request's extensions.
async fn authenticate(State(s): State<AppState>, mut req: Request, next: Next) -> Response {
    if s.open.is_open() && s.open.due() {
        let keys = s.keys.clone();
        if let Ok(Ok(n)) = ops::blocking(move || keys.count()).await
            && n > 0
        {
            s.open.close();
        }
    }
    // A valid key presented to an open server (made by another server on the same store)
    // is that key's caller, and proves a key exists: open mode ends now, not at the next
    // check. An unknown key in open mode changes nothing.
    let presented = match (s.open.is_open(), bearer(&req).map(str::to_owned)) {
        (true, Some(token)) => {
            let keys = s.keys.clone();
            match ops::blocking(move || keys.verify(&token)).await {
                Ok(Ok(Some(c))) => {
                    s.open.close();
                    Some(c)
                }
                _ => None,
            }
        }
        _ => None,
    };
    let caller = if let Some(c) = presented {
        c
    } else if s.open.is_open() {
        Caller {
            tenant: Tenant::default(),
            key_id: None,
            admin: true,
            operator: true,
        }
    } else {
        let Some(token) = bearer(&req).map(str::to_owned) else {
            return unauthorized("send an API key as Authorization: Bearer <key>");
        };
        let keys = s.keys.clone();
        match ops::blocking(move || keys.verify(&token)).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => return unauthorized("unknown or revoked API key"),
            Ok(Err(e)) => return ApiError::from(e).into_response(),
            Err(_) => return ApiError::internal().into_response(),
        }
    };
    if let Some(limiter) = &s.limiter
        && let Err(wait) = limiter.check(caller.key_id.as_deref().unwrap_or("-"))
    {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many requests for this key; retry later",
        );
        e.retry_after = Some(wait);
        return e.into_response();
    }
    req.extensions_mut().insert(caller);
    next.run(req).await
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// The whole HTTP application over `state`; `/mcp` stops its streams when `mcp_stop` fires.
pub fn router(state: AppState, config: &ServerConfig, mcp_stop: CancellationToken) -> Router {
    let engine = state.engine.clone();
    let model = state.chat.as_ref().map(|c| Arc::clone(c.provider()));
    let mcp = StreamableHttpService::new(
        move || Ok(MuistiMcp::http(engine.clone(), model.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_sse_keep_alive(None)
            .with_allowed_origins(config.allowed_origins.clone())
            .enforce_origin_validation()
            .with_allowed_hosts(config.allowed_hosts.clone())
            .with_max_request_body_bytes(config.body_limit)
            .with_cancellation_token(mcp_stop),
    );
    let protected = Router::new()
        .route(
            "/v1/memories",
            post(rest::create_memory)
                .get(rest::list_memories)
                .delete(rest::delete_memories),
        )
        .route("/v1/memories/batch", post(rest::create_memories))
        .route(
            "/v1/memories/{id}",
            get(rest::get_memory)
                .patch(rest::update_memory)
                .delete(rest::delete_memory),
        )
        .route("/v1/memories/{id}/similar", get(rest::similar))
        .route("/v1/memories/{id}/restore", post(rest::restore_memory))
        .route("/v1/clusters", get(rest::clusters))
        .route(
            "/v1/clusters/{cluster}/memories",
            get(rest::cluster_memories),
        )
        .route("/v1/recall", post(rest::recall))
        .route(
            "/v1/kv/{namespace}",
            get(rest::kv_all).delete(rest::kv_flush),
        )
        .route(
            "/v1/kv/{namespace}/{key}",
            get(rest::kv_get).put(rest::kv_set).delete(rest::kv_forget),
        )
        .route("/v1/stats", get(rest::stats))
        .route("/v1/purge", post(rest::purge))
        .route("/v1/maintain", post(rest::maintain))
        .route("/v1/maintenance", post(rest::maintenance))
        .route("/v1/proposals", get(rest::list_proposals))
        .route("/v1/graph/entities", get(rest::graph_entities))
        .route("/v1/graph/entities/merge", post(rest::graph_merge))
        .route("/v1/graph/relations", get(rest::graph_relations))
        .route("/v1/proposals/{id}/confirm", post(rest::confirm_proposal))
        .route("/v1/proposals/{id}/reject", post(rest::reject_proposal))
        .route("/v1/memories/{id}/history", get(rest::memory_history))
        .route("/v1/memories/{id}/accesses", get(rest::memory_accesses))
        .route("/v1/conversations", get(rest::list_conversations))
        .route(
            "/v1/conversations/{id}",
            get(rest::get_conversation).delete(rest::delete_conversation),
        )
        .route("/v1/conversations/{id}/end", post(rest::end_conversation))
        .route(
            "/v1/conversations/{id}/messages",
            post(rest::append_messages),
        )
        .route(
            "/v1/conversations/{id}/messages/last",
            delete(rest::pop_message),
        )
        .route("/v1/reindex", post(rest::reindex))
        .route("/v1/jobs", get(rest::jobs))
        .route("/v1/jobs/{id}", get(rest::job))
        .route("/v1/analytics", get(rest::analytics))
        .route("/v1/analytics/similarity", get(rest::similarity))
        .route(
            "/v1/admin/keys",
            get(rest::list_keys).post(rest::create_key),
        )
        .route(
            "/v1/admin/keys/{id}",
            axum::routing::delete(rest::revoke_key),
        )
        .route(
            "/v1/admin/snapshots",
            get(rest::list_snapshots).post(rest::create_snapshot),
        )
        .route(
            "/v1/admin/snapshots/{id}/restore",
            post(rest::restore_snapshot),
        )
        .nest_service("/mcp", mcp)
        .layer(middleware::from_fn_with_state(state.clone(), authenticate));
    // A model may take longer than the request deadline; its own timeout bounds chat and
    // extraction once the body is in, and the body itself is read under the deadline.
    let chat = Router::new()
        .route("/v1/chat", post(chat::chat))
        .route("/v1/chat/stream", post(chat::chat_stream))
        .route("/v1/memories/extract", post(rest::extract_memories))
        .route("/v1/chat/completions", post(crate::proxy::chat_completions))
        .route("/v1/manage", post(chat::manage))
        .layer(middleware::from_fn_with_state(
            config.request_timeout,
            body_in_time,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        .layer(DefaultBodyLimit::max(config.body_limit));
    Router::new()
        // A browser pointed at the server finds the dashboard.
        .route(
            "/",
            get(|| async { axum::response::Redirect::temporary("/ui") }),
        )
        .route("/healthz", get(rest::healthz))
        .route("/readyz", get(rest::readyz))
        .route("/metrics", get(rest::metrics))
        .route("/openapi.json", get(crate::openapi::openapi_json))
        .merge(crate::ui::routes())
        .merge(protected)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(middleware::from_fn_with_state(
            config.request_timeout,
            deadline,
        ))
        .merge(chat)
        .layer(middleware::from_fn(crate::error::json_errors))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::browser::guard,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// The background extraction queue: each read counted in the metrics.
fn extraction_queue(
    debounce: muisti::facts::Debounce,
    metrics: Arc<Metrics>,
) -> muisti::facts::ExtractionQueue {
    muisti::facts::ExtractionQueue::start(
        debounce,
        Box::new(move |_, result| {
            if let Ok(report) = result {
                crate::ops::count_extraction(&metrics, &crate::ops::extract_out(report));
            }
        }),
    )
}

/// Runs maintenance over the whole store every `every` (the first round one interval
/// after start): expired records and episodic retention, then in every tenant the per-user
/// jobs of `plan`. Of many servers on one store one runs a round: the one holding the
/// `maintain` lease, which it renews each round and which passes to another when it stops.
async fn maintain_on_schedule(
    engine: Engine,
    every: Duration,
    plan: muisti::lifecycle::MaintenanceOptions,
    metrics: Arc<crate::metrics::Metrics>,
) {
    let holder = ulid::Ulid::generate().to_string();
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let engine = engine.clone();
        let holder = holder.clone();
        let plan = plan.clone();
        let round = ops::blocking(move || {
            if !engine.acquire_lease("maintain", &holder, every.saturating_mul(2))? {
                return Ok(None);
            }
            scheduled_round(&engine, &plan).map(Some)
        })
        .await;
        match round {
            Ok(Ok(Some(done))) => {
                metrics.maintenance("schedule", &ops::maintained_counts(&done));
                tracing::info!(
                    expired = done.expired,
                    episodic = done.episodic,
                    consolidated = done.consolidated,
                    promoted = done.promoted,
                    pruned = done.pruned,
                    "scheduled maintenance"
                );
            }
            Ok(Ok(None)) => tracing::debug!("scheduled lifetimes: another server holds the lease"),
            Ok(Err(e)) => {
                tracing::warn!(kind = %e.kind(), error = %e, "scheduled lifetimes failed")
            }
            Err(e) => tracing::warn!(error = %e, "scheduled lifetimes did not run"),
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_reindex_while_one_runs_is_a_conflict() -> muisti::Result<()> {
        let jobs = Arc::new(Jobs::default());
        let running = api::Job {
            id: "first".into(),
            kind: "reindex".into(),
            state: "running".into(),
            done: 0,
            total: 10,
            error: None,
            error_code: None,
            error_status: None,
            report: None,
        };
        if let Ok(mut j) = jobs.jobs.lock() {
            j.insert(running.id.clone(), (None, running));
        }
        let engine = Engine::open("mem://")?;
        let err = jobs
            .start_reindex(engine.clone(), false, true)
            .expect_err("one reindex at a time");
        assert_eq!((err.status, err.code), (StatusCode::CONFLICT, "conflict"));
        jobs.set("first", |j| j.state = "done".into());
        let started = jobs
            .start_reindex(engine, false, true)
            .map_err(|e| muisti::Error::backend("test", e.message))?;
        assert_eq!(started.state, "running");
        Ok(())
    }

    /// A reindex held by another server on the same store (its lease) is a conflict here
    /// too; once released, this server starts one, and releases the lease when it ends.
    #[test]
    fn a_reindex_on_another_server_is_a_conflict() -> muisti::Result<()> {
        let store = muisti::open_store("mem://")?;
        let elsewhere = Engine::builder(Arc::clone(&store)).build()?;
        assert!(elsewhere.acquire_lease("reindex", "their-job", Jobs::REINDEX_LEASE)?);
        let here = Engine::builder(Arc::clone(&store)).build()?;
        let jobs = Arc::new(Jobs::default());
        let err = jobs
            .start_reindex(here.clone(), false, true)
            .expect_err("held elsewhere");
        assert_eq!((err.status, err.code), (StatusCode::CONFLICT, "conflict"));
        elsewhere.release_lease("reindex", "their-job")?;
        let started = jobs
            .start_reindex(here, false, true)
            .map_err(|e| muisti::Error::backend("test", e.message))?;
        let start = Instant::now();
        let operator = Caller {
            tenant: muisti::Tenant::default(),
            key_id: None,
            admin: true,
            operator: true,
        };
        while jobs
            .get(&started.id, &operator)
            .is_some_and(|j| j.state == "running")
        {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "the reindex ended"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            elsewhere.acquire_lease("reindex", "their-next", Jobs::REINDEX_LEASE)?,
            "released when the job ended"
        );
        Ok(())
    }

    #[test]
    fn the_token_bucket_refuses_past_the_burst_and_names_the_wait() {
        let limiter = RateLimiter::new(RateLimit {
            per_sec: 0.5,
            burst: 2,
        });
        assert_eq!(limiter.check("k"), Ok(()));
        assert_eq!(limiter.check("k"), Ok(()));
        assert_eq!(limiter.check("k"), Err(2));
        assert_eq!(limiter.check("other"), Ok(()));
    }
}
