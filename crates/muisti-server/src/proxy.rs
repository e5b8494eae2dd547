//! The OpenAI-compatible memory proxy: `POST /v1/chat/completions`, whole and streamed, in
//! the OpenAI wire format, so an agent that speaks the OpenAI API gets memory by changing
//! its base URL only.
//!
//! Per request: the user is the body's `user` (or the `x-muisti-user-id` header), the
//! tenant the API key's. The last user message is the query: the agent's recall (the
//! user's declarative entries first, then what matters for the message, guards on both)
//! gives the memory block, which goes into the request as a system message (appended to
//! the client's first system message when there is one). The request is forwarded to the
//! upstream `/v1/chat` uses (the request's `model` passed through, the configured model
//! when it names none) and the answer comes back as the upstream gave it. Then the
//! exchange is remembered as `proxy_remember` says, in the background: never does the
//! answer wait for it. A request without a user is answered with recall over the tenant's
//! memories without a user filter and nothing is remembered (memory from a conversation is
//! per user).

use std::{convert::Infallible, sync::Arc};

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, HeaderValue},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, Sse},
    },
};
use muisti::facts::AddRequest;
use muisti_agent::provider::Upstream;
use muisti_client::api;
use serde_json::{Map, Value, json};

use crate::{
    AppState,
    config::ProxyRemember,
    error::{ApiError, ApiResult},
    extract::ApiJson,
    keys::Caller,
};

/// The header naming the user when the body's `user` does not.
pub const USER_HEADER: &str = "x-muisti-user-id";
/// The header naming the conversation the exchange belongs to (its messages are read for
/// facts together).
pub const SESSION_HEADER: &str = "x-muisti-session-id";
/// The answer's header: how many memories went into the request.
pub const RECALLED_HEADER: &str = "x-muisti-recalled";

/// What a proxied request is, once read.
struct Proxied {
    body: Value,
    user: Option<String>,
    session: Option<String>,
    /// The last user message's text: the query, and what is remembered.
    message: String,
    stream: bool,
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Reads and checks a chat completions body: `messages` a non-empty array of objects with
/// a `role`, one of them the user's with text; `model` a string when given; `user` a valid
/// owner when given.
fn read(body: Map<String, Value>, headers: &HeaderMap) -> ApiResult<Proxied> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::invalid("messages must be an array of messages"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid("messages must not be empty"));
    }
    if messages
        .iter()
        .any(|m| !m.get("role").is_some_and(Value::is_string))
    {
        return Err(ApiError::invalid(
            "each message must be an object with a role",
        ));
    }
    if body.get("model").is_some_and(|m| !m.is_string()) {
        return Err(ApiError::invalid("model must be a string"));
    }
    let message = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| muisti_agent::provider::content_text(&m["content"]))
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| ApiError::invalid("messages must hold a user message with text"))?;
    if message.len() > muisti_agent::MAX_MESSAGE_BYTES {
        return Err(ApiError::invalid(format!(
            "the last user message is longer than {} bytes",
            muisti_agent::MAX_MESSAGE_BYTES
        )));
    }
    let user = match body.get("user") {
        None | Some(Value::Null) => header(headers, USER_HEADER),
        Some(Value::String(u)) => Some(u.clone()),
        Some(_) => return Err(ApiError::invalid("user must be a string")),
    };
    muisti::check_owner_field("user", &user)?;
    let session = header(headers, SESSION_HEADER);
    muisti::check_owner_field("session_id", &session)?;
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    Ok(Proxied {
        body: Value::Object(body),
        user,
        session,
        message,
        stream,
    })
}

/// `body` with the memory block before the text of its last user message (as `/v1/chat`
/// sends it: the block is reference material in the user's turn, never the system's, so a
/// remembered message cannot speak with the system prompt's authority) and a model.
fn with_memory(mut body: Value, block: &muisti_agent::Block, model: &str) -> Value {
    if !body["model"].is_string() {
        body["model"] = json!(model);
    }
    if block.is_empty() {
        return body;
    }
    let preamble = block.preamble();
    let last_user = body["messages"]
        .as_array_mut()
        .and_then(|messages| messages.iter_mut().rev().find(|m| m["role"] == "user"));
    if let Some(message) = last_user {
        let content = &mut message["content"];
        match content {
            Value::String(text) => *text = format!("{preamble}{text}"),
            // Parts (text, images): the block as a text part before them.
            Value::Array(parts) => parts.insert(0, json!({"type": "text", "text": preamble})),
            _ => {}
        }
    }
    body
}

/// Chat completions in the OpenAI wire format with the user's memory recalled into the
/// request and the exchange remembered (module docs of `proxy`). Errors are answered in
/// muisti's error shape (`{"error": {"code", "message"}}`, which OpenAI clients read).
#[utoipa::path(post, path = "/v1/chat/completions", tag = "chat",
    request_body(content = api::ChatCompletionRequest, description = "An OpenAI chat completions request; every field is passed to the upstream as given"),
    params(("x-muisti-user-id" = Option<String>, Header, description = "The user, when the body's `user` does not name one"),
        ("x-muisti-session-id" = Option<String>, Header, description = "The conversation: its exchanges are read for facts together")),
    responses((status = 200, description = "An OpenAI chat completion, or with `stream: true` a `text/event-stream` of `chat.completion.chunk`s ending in `data: [DONE]`", body = Object),
        (status = 400, body = api::ErrorBody),
        (status = 404, description = "The server has no model (`chat_not_configured`)", body = api::ErrorBody),
        (status = 422, description = "Invalid input, blocked by a guard (`blocked`), or the prompt does not fit the model (`context_length`)", body = api::ErrorBody),
        (status = 502, description = "The model failed (`provider_unavailable`, `provider_auth`)", body = api::ErrorBody),
        (status = 503, description = "The model is rate limiting (`provider_rate_limited`)", body = api::ErrorBody)))]
pub async fn chat_completions(
    State(s): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> ApiResult<Response> {
    let service = crate::chat::service(&s)?;
    let upstream = Arc::clone(service.upstream());
    let p = read(body, &headers)?;
    let engine = s.engine.with_tenant(caller.tenant);
    let stream_it = p.stream;
    let (message, user) = (p.message.clone(), p.user.clone());
    let model = upstream.model().to_owned();
    let up = Arc::clone(&upstream);
    let context_engine = engine.clone();
    // One blocking task: the block, then (answered whole) the upstream call.
    let (body, recalled, whole) = crate::chat::blocking(move || {
        let agent = service.agent(
            context_engine,
            &api::ChatMessage {
                message: message.clone(),
                user_id: user,
                ..api::ChatMessage::default()
            },
            // The proxy learns from the answer it forwards (`Remember`), not the agent.
            None,
        )?;
        let block = agent.context(&message)?;
        let body = with_memory(p.body, &block, &model);
        let whole = if stream_it {
            None
        } else {
            Some(up.complete(&body)?)
        };
        Ok((body, block.keys.len(), whole))
    })
    .await?;
    let remember = Remember {
        state: s.clone(),
        engine,
        user: p.user,
        session: p.session,
        message: p.message,
    };
    let Some((answer, usage)) = whole else {
        return Ok(stream(upstream, body, recalled, remember));
    };
    s.metrics
        .model_usage("proxy", 1, usage.input_tokens, usage.output_tokens);
    let text = answer
        .pointer("/choices/0/message/content")
        .map(muisti_agent::provider::content_text)
        .unwrap_or_default();
    remember.exchange(text);
    let mut response = Json(answer).into_response();
    response
        .headers_mut()
        .insert(RECALLED_HEADER, HeaderValue::from(recalled));
    Ok(response)
}

/// The streamed answer: the upstream's chunks as `data:` events, then `data: [DONE]`; an
/// error after the stream started is one `data:` event of the error shape.
fn stream(upstream: Arc<Upstream>, body: Value, recalled: usize, remember: Remember) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(64);
    let span = tracing::Span::current();
    let metrics = Arc::clone(&remember.state.metrics);
    tokio::task::spawn_blocking(move || {
        span.in_scope(|| {
            let result = upstream.stream(&body, &mut |chunk| {
                // A client that went away stops receiving; the answer still completes.
                let _ = tx.blocking_send(SseEvent::default().data(chunk));
            });
            match result {
                Ok(done) => {
                    metrics.model_usage(
                        "proxy",
                        1,
                        done.usage.input_tokens,
                        done.usage.output_tokens,
                    );
                    let _ = tx.blocking_send(SseEvent::default().data("[DONE]"));
                    remember.exchange(done.text);
                }
                Err(e) => {
                    let body = ApiError::from(e).body();
                    let _ = tx.blocking_send(
                        SseEvent::default().data(serde_json::to_string(&body).unwrap_or_default()),
                    );
                }
            }
        })
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    let mut response = Sse::new(events).into_response();
    response
        .headers_mut()
        .insert(RECALLED_HEADER, HeaderValue::from(recalled));
    response
}

/// What is needed to remember an exchange once its answer is known.
struct Remember {
    state: AppState,
    engine: muisti::Engine,
    user: Option<String>,
    session: Option<String>,
    message: String,
}

impl Remember {
    /// Remembers the user's message and the answer as `proxy_remember` says: facts through
    /// the debounced queue, or both messages as said on a blocking thread of their own.
    fn exchange(self, answer: String) {
        let Some(user) = self.user else {
            return;
        };
        let req = AddRequest::exchange(
            user,
            self.session,
            &self.message,
            &answer,
            muisti::Timestamp::now(),
        );
        match self.state.proxy_remember {
            ProxyRemember::Off => {}
            ProxyRemember::Extract => self.state.extraction.push(&self.engine, req),
            ProxyRemember::Messages => {
                let engine = self.engine;
                tokio::task::spawn_blocking(move || {
                    let req = AddRequest {
                        infer: false,
                        ..req
                    };
                    if let Err(e) = engine.add_messages(&req) {
                        tracing::warn!(kind = %e.kind(), error = %e, "the proxied exchange was not stored");
                    }
                });
            }
        }
    }
}
