//! The agent over HTTP: `POST /v1/chat` answers whole, `POST /v1/chat/stream` streams the
//! answer as server-sent events. The caller's tenant is the memory: recall reads its
//! `default` namespace and conversations are stored in its `conversations` namespace.

use std::{convert::Infallible, sync::Arc};

use axum::{
    Json,
    extract::State,
    http::StatusCode,
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, Sse},
    },
};
use muisti::{Engine, facts::ExtractionQueue};
use muisti_agent::{
    Agent, AgentError, Conversation, Guard, Provider, ProviderConfig, Turn, provider::Upstream,
};
use muisti_client::api;

use crate::{
    AppState,
    config::ChatConfig,
    error::{ApiError, ApiResult},
    extract::ApiJson,
    keys::Caller,
    ops,
};

impl ChatConfig {
    /// Connects the model (the API key from the environment): the chat's, the conflict
    /// judge's and the graph extractor's.
    pub fn connect(&self) -> Result<Arc<dyn Provider>, AgentError> {
        self.provider_config().connect()
    }

    /// How to reach the model (the API key from the environment).
    pub fn provider_config(&self) -> ProviderConfig {
        let mut provider = ProviderConfig::new(self.provider, self.model.clone());
        if let Some(url) = &self.base_url {
            provider = provider.base_url(url.clone());
        }
        provider.timeout = self.timeout;
        provider
    }
}

/// Most memories one message may ask to recall.
pub const MAX_LONG_TERM_MEMORY: usize = 50;

/// Most graph facts one message may ask for.
pub const MAX_GRAPH_FACTS: usize = 50;

/// The model and the rules every chat request shares.
pub struct ChatService {
    provider: Arc<dyn Provider>,
    /// The same model for the OpenAI-compatible proxy (requests forwarded as written).
    upstream: Arc<Upstream>,
    system: Option<String>,
    guard: Option<Guard>,
}

impl ChatService {
    /// Connects the model `config` describes (the API key from the environment).
    pub fn new(config: &ChatConfig) -> Result<Self, AgentError> {
        let guard = (!config.blocked_phrases.is_empty()).then(|| {
            config
                .blocked_phrases
                .iter()
                .fold(Guard::new("blocked_phrases"), |g, p| g.phrase(p))
        });
        Ok(Self {
            provider: config.connect()?,
            upstream: Arc::new(Upstream::new(&config.provider_config())?),
            system: config.system.clone(),
            guard,
        })
    }

    /// The model, for the conflict judge.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// The model as the proxy's upstream.
    pub fn upstream(&self) -> &Arc<Upstream> {
        &self.upstream
    }

    /// The agent for one request: the caller's engine, the message's options; learning
    /// from the exchange into `learning` when given.
    pub(crate) fn agent(
        &self,
        engine: Engine,
        msg: &api::ChatMessage,
        learning: Option<Arc<ExtractionQueue>>,
    ) -> Result<Agent, AgentError> {
        let as_of = crate::ops::timestamp("as_of", msg.as_of.as_deref())?;
        let mut b = Agent::builder()
            .memory(engine)
            .as_of(as_of)
            .provider(Arc::clone(&self.provider))
            .long_term_memory(msg.long_term_memory.unwrap_or(3))
            .graph_context(msg.graph_facts.unwrap_or(0))
            .recall_filter(muisti::Filter {
                user_id: msg.user_id.clone(),
                ..muisti::Filter::default()
            })
            .store_messages(msg.store_messages.unwrap_or(true));
        if let Some(s) = &self.system {
            b = b.system(s.clone());
        }
        if let Some(queue) = learning {
            b = b.learn(queue);
        }
        if let Some(g) = &self.guard {
            b = b.guard(g.clone());
        }
        b.build()
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        let message = e.to_string();
        let upstream = |code| {
            tracing::warn!(error = %message, "chat model call failed");
            ApiError::new(StatusCode::BAD_GATEWAY, code, message.clone())
        };
        match e {
            AgentError::Memory(e) => ApiError::from(e),
            AgentError::Blocked { .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "blocked", message)
            }
            AgentError::NotFound { .. } => ApiError::not_found(message),
            AgentError::InvalidInput { .. } => ApiError::invalid(message),
            AgentError::ContextLength { .. } => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "context_length", message)
            }
            AgentError::RateLimited { retry_after, .. } => {
                let mut e = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "provider_rate_limited",
                    message,
                );
                e.retry_after = Some(retry_after.map_or(1, |d| d.as_secs().max(1)));
                e
            }
            AgentError::Auth { .. } => upstream("provider_auth"),
            AgentError::StepLimit { .. } => upstream("step_limit"),
            _ => upstream("provider_unavailable"),
        }
    }
}

/// The chat service; without a model the chat routes answer 404 `chat_not_configured`: a
/// client error that retrying will not fix (a 503 invites retries).
pub(crate) fn service(s: &AppState) -> ApiResult<Arc<ChatService>> {
    s.chat.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "chat_not_configured",
            "chat is off: start muisti serve with --llm-model (and --llm-provider, --llm-base-url)",
        )
    })
}

fn check(msg: &api::ChatMessage) -> ApiResult<()> {
    if msg.message.trim().is_empty() {
        return Err(ApiError::invalid("message must not be empty"));
    }
    check_options(msg)
}

/// The rules of a chat message's options (all but its text), on every face: the routes
/// and `muisti chat`, local or not.
pub fn check_options(msg: &api::ChatMessage) -> ApiResult<()> {
    if msg
        .long_term_memory
        .is_some_and(|n| n > MAX_LONG_TERM_MEMORY)
    {
        return Err(ApiError::invalid(format!(
            "long_term_memory must be at most {MAX_LONG_TERM_MEMORY}"
        )));
    }
    if msg.graph_facts.is_some_and(|n| n > MAX_GRAPH_FACTS) {
        return Err(ApiError::invalid(format!(
            "graph_facts must be at most {MAX_GRAPH_FACTS}"
        )));
    }
    muisti::check_owner_field("user_id", &msg.user_id)?;
    Ok(())
}

/// The agent for this request (learning from it when the server learns) and the
/// conversation it continues (or a new one).
fn open(
    service: &ChatService,
    engine: Engine,
    msg: &api::ChatMessage,
    learning: Option<Arc<ExtractionQueue>>,
) -> Result<(Agent, Conversation), AgentError> {
    let agent = service.agent(engine, msg, learning)?;
    let conv = match &msg.conversation_id {
        Some(id) => agent.conversation_by_id(id)?,
        None => agent.conversation()?,
    };
    Ok((agent, conv))
}

/// A turn as the wire's chat reply: the one shape of a reply on every face (`/v1/chat`,
/// `muisti chat --json` in both modes). `stored`: whether the conversation was kept.
pub fn reply(turn: Turn, stored: bool) -> api::ChatReply {
    reply_in(turn.reply, stored.then_some(turn.conversation.id))
}

/// [`reply`] from the agent's reply and the conversation id to show (`None` when not
/// stored), for a caller that keeps the conversation.
pub fn reply_in(r: muisti_agent::Reply, conversation_id: Option<String>) -> api::ChatReply {
    api::ChatReply {
        conversation_id,
        reply: r.text,
        recalled: r.recalled,
        usage: api::TokenUsage {
            input_tokens: r.usage.input_tokens,
            output_tokens: r.usage.output_tokens,
        },
    }
}

pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AgentError> + Send + 'static,
) -> ApiResult<T> {
    ops::blocking(f)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a chat task failed");
            ApiError::internal()
        })?
        .map_err(ApiError::from)
}

/// One server-sent event carrying `data` as JSON.
fn sse(name: &'static str, data: &impl serde::Serialize) -> SseEvent {
    SseEvent::default()
        .event(name)
        .data(serde_json::to_string(data).unwrap_or_default())
}

/// Sends a message to the agent: the memories that matter for it are recalled from the
/// `default` namespace into the prompt, and the exchange is added to the conversation.
#[utoipa::path(post, path = "/v1/chat", tag = "chat",
    request_body = api::ChatMessage,
    responses((status = 200, body = api::ChatReply),
        (status = 400, body = api::ErrorBody), (status = 404, description = "No conversation with that id (`not_found`), or chat is off: the server has no model (`chat_not_configured`)", body = api::ErrorBody),
        (status = 409, description = "`user_id` is not the continued conversation's (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, description = "Invalid input, blocked by a guard (`blocked`), or the prompt does not fit the model (`context_length`)", body = api::ErrorBody),
        (status = 502, description = "The model failed (`provider_unavailable`, `provider_auth`, `step_limit`)", body = api::ErrorBody),
        (status = 503, description = "The model is rate limiting (`provider_rate_limited`)", body = api::ErrorBody)))]
pub async fn chat(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(msg): ApiJson<api::ChatMessage>,
) -> ApiResult<Json<api::ChatReply>> {
    let service = service(&s)?;
    check(&msg)?;
    let engine = s.engine.with_tenant(caller.tenant);
    let learning = s.learning();
    blocking(move || {
        let (agent, conv) = open(&service, engine, &msg, learning)?;
        let turn = agent.send_in_conversation(&conv, &msg.message)?;
        Ok(reply(turn, msg.store_messages.unwrap_or(true)))
    })
    .await
    .map(Json)
}

/// [`chat`] with the answer streamed as server-sent events: `token` events (`{"text"}`)
/// as the model writes, then one `done` event (the [`api::ChatReply`]) or one `error`
/// event (an [`api::ErrorBody`]). Errors found before the model is called (bad input,
/// unknown conversation, chat off) are answered with their status instead.
#[utoipa::path(post, path = "/v1/chat/stream", tag = "chat",
    request_body = api::ChatMessage,
    responses((status = 200, description = "`text/event-stream`: `token` events (ChatToken), then `done` (ChatReply) or `error` (ErrorBody)", content_type = "text/event-stream", body = api::ChatToken),
        (status = 400, body = api::ErrorBody), (status = 404, description = "No conversation with that id (`not_found`), or chat is off: the server has no model (`chat_not_configured`)", body = api::ErrorBody),
        (status = 409, description = "`user_id` is not the continued conversation's (`conflicting_fields`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody), (status = 503, body = api::ErrorBody)))]
pub async fn chat_stream(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(msg): ApiJson<api::ChatMessage>,
) -> ApiResult<Response> {
    let service = service(&s)?;
    check(&msg)?;
    let engine = s.engine.with_tenant(caller.tenant);
    let learning = s.learning();
    let (agent, conv, msg) = blocking(move || {
        let (agent, conv) = open(&service, engine, &msg, learning)?;
        Ok((agent, conv, msg))
    })
    .await?;
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(64);
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || {
        span.in_scope(|| {
            let result = agent.stream_in_conversation(&conv, &msg.message, |text| {
                let token = api::ChatToken {
                    text: text.to_owned(),
                };
                // A client that went away stops receiving; the turn still completes.
                let _ = tx.blocking_send(sse("token", &token));
            });
            let last = match result {
                Ok(turn) => sse("done", &reply(turn, msg.store_messages.unwrap_or(true))),
                Err(e) => sse("error", &ApiError::from(e).body()),
            };
            let _ = tx.blocking_send(last);
        })
    });
    let events = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|e| (Ok::<_, Infallible>(e), rx))
    });
    Ok(Sse::new(events).into_response())
}

/// The manager's command a request asks for: the one check of its fields on every face
/// (`POST /v1/manage`, `muisti manage` in both modes).
pub fn manage_command(req: &api::ManageRequest) -> ApiResult<muisti_agent::Command> {
    if req.command.trim().is_empty() {
        return Err(ApiError::invalid("command must not be empty"));
    }
    if req.command.len() > muisti_agent::MAX_MESSAGE_BYTES {
        return Err(ApiError::invalid(format!(
            "command must be at most {} bytes",
            muisti_agent::MAX_MESSAGE_BYTES
        )));
    }
    muisti::check_owner_field("user_id", &Some(req.user_id.clone()))?;
    Ok(muisti_agent::Command {
        text: req.command.clone(),
        user_id: req.user_id.clone(),
        namespace: crate::ops::namespace(req.namespace.as_deref())?,
        yes: req.yes.unwrap_or(false),
    })
}

/// What the manager did, on the wire.
pub fn managed_out(done: muisti_agent::Managed) -> api::ManageReply {
    let action = |a: muisti_agent::ManagerAction| api::ManageAction {
        tool: a.tool,
        arguments: a.arguments,
        result: a.result,
    };
    api::ManageReply {
        answer: done.answer,
        actions: done.actions.into_iter().map(action).collect(),
        pending: done.pending.into_iter().map(action).collect(),
        usage: api::ModelUsage {
            calls: done.calls,
            input_tokens: done.usage.input_tokens,
            output_tokens: done.usage.output_tokens,
        },
    }
}

/// Carries out a natural-language command over the user's memory (the memory manager):
/// the model searches, reads, remembers, updates and deletes through tools, every change
/// recorded in the memory's history with the command as the actor. Deletes are done only
/// with `yes`; otherwise they come back as `pending`.
#[utoipa::path(post, path = "/v1/manage", tag = "chat",
    request_body = api::ManageRequest,
    responses((status = 200, body = api::ManageReply),
        (status = 400, body = api::ErrorBody),
        (status = 404, description = "The server has no model (`chat_not_configured`)", body = api::ErrorBody),
        (status = 422, body = api::ErrorBody),
        (status = 502, description = "The model failed (`provider_unavailable`, `provider_auth`, `step_limit`)", body = api::ErrorBody),
        (status = 503, description = "The model is rate limiting (`provider_rate_limited`)", body = api::ErrorBody)))]
pub async fn manage(
    State(s): State<AppState>,
    caller: Caller,
    ApiJson(req): ApiJson<api::ManageRequest>,
) -> ApiResult<Json<api::ManageReply>> {
    let service = service(&s)?;
    let command = manage_command(&req)?;
    let engine = s.engine.with_tenant(caller.tenant);
    let done = blocking(move || {
        muisti_agent::Manager::new(Arc::clone(service.provider())).run(&engine, &command)
    })
    .await?;
    s.metrics.model_usage(
        "manage",
        u64::from(done.calls),
        done.usage.input_tokens,
        done.usage.output_tokens,
    );
    Ok(Json(managed_out(done)))
}
