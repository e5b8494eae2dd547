//! The model behind the OpenAI-compatible memory proxy: a chat completions request is
//! forwarded as the client wrote it (its `messages` carrying the memory block), and the
//! answer comes back in the OpenAI wire format, whole or streamed. An OpenAI-compatible
//! upstream gets the request verbatim (tools, response formats and every other field pass
//! through) and its answer or stream chunks are passed back verbatim; an Anthropic upstream
//! gets the conversation's text translated, and its answer is translated back.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    Provider, ProviderConfig, ProviderKind,
    sse::for_each_event,
    transport::{Transport, read_json},
};
use crate::{AgentError, ChatRequest, FinishReason, Message, Result, Role, Usage};

/// What a streamed answer came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Streamed {
    /// The answer's text.
    pub text: String,
    /// Tokens, when the upstream reported them.
    pub usage: Usage,
}

/// A chat completions upstream (module docs).
pub struct Upstream {
    kind: ProviderKind,
    model: String,
    /// For an OpenAI-compatible upstream: the endpoint the request goes to as it is.
    raw: Option<Transport>,
    /// For any other: the provider the request is translated for.
    provider: Arc<dyn Provider>,
}

impl Upstream {
    /// The upstream `config` describes (checked as [`ProviderConfig::connect`] checks it).
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        let provider = config.connect()?;
        let raw = (config.kind == ProviderKind::OpenAi).then(|| {
            let headers = config
                .api_key
                .as_ref()
                .map(|k| vec![("Authorization", format!("Bearer {k}"))])
                .unwrap_or_default();
            Transport::new(config.clone(), "chat/completions", headers)
        });
        Ok(Self {
            kind: config.kind,
            model: config.model.clone(),
            raw,
            provider,
        })
    }

    /// The configured model (a request that names none is sent to it).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One request (an OpenAI chat completions body), answered whole as an OpenAI chat
    /// completion; its usage.
    pub fn complete(&self, body: &Value) -> Result<(Value, Usage)> {
        let mut body = body.clone();
        body["stream"] = json!(false);
        if let Some(t) = &self.raw {
            let answer = read_json(t, t.post(&body, false, context_length)?)?;
            let usage = usage_of(&answer["usage"]);
            return Ok((answer, usage));
        }
        let answer = self.provider.chat(&translate(&body)?)?;
        let finish = finish_name(answer.finish);
        Ok((
            json!({
                "id": completion_id(),
                "object": "chat.completion",
                "created": now_secs(),
                "model": model_of(&body, &self.model),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.text},
                    "finish_reason": finish}],
                "usage": usage_json(answer.usage),
            }),
            answer.usage,
        ))
    }

    /// One request answered as a stream: `on_chunk` gets each chunk's JSON text (an OpenAI
    /// `chat.completion.chunk`) as it arrives; the text and usage are returned at the end.
    pub fn stream(&self, body: &Value, on_chunk: &mut dyn FnMut(&str)) -> Result<Streamed> {
        let mut body = body.clone();
        body["stream"] = json!(true);
        let mut out = Streamed::default();
        if let Some(t) = &self.raw {
            let reader = t.post(&body, true, context_length)?;
            let mut done = false;
            for_each_event(
                reader,
                |event| {
                    let data = event.data.trim();
                    if data == "[DONE]" {
                        done = true;
                        return Ok(false);
                    }
                    let v: Value = serde_json::from_str(data)
                        .map_err(|e| t.protocol(format!("a stream event is not JSON: {e}")))?;
                    if v.get("usage").is_some_and(Value::is_object) {
                        out.usage = usage_of(&v["usage"]);
                    }
                    if let Some(text) = v
                        .pointer("/choices/0/delta/content")
                        .and_then(Value::as_str)
                    {
                        out.text.push_str(text);
                    }
                    if v.pointer("/choices/0/finish_reason")
                        .is_some_and(Value::is_string)
                    {
                        done = true;
                    }
                    on_chunk(data);
                    Ok(true)
                },
                |e| t.unavailable(format!("the stream broke: {e}")),
            )?;
            if !done {
                return Err(t.unavailable("the stream ended before the answer was finished"));
            }
            return Ok(out);
        }
        let id = completion_id();
        let created = now_secs();
        let model = model_of(&body, &self.model);
        let chunk = |delta: Value, finish: Value| {
            json!({"id": id, "object": "chat.completion.chunk", "created": created,
                "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        on_chunk(&chunk(
            json!({"role": "assistant", "content": ""}),
            Value::Null,
        ));
        let answer = self
            .provider
            .chat_stream(&translate(&body)?, &mut |piece| {
                on_chunk(&chunk(json!({"content": piece}), Value::Null));
            })?;
        on_chunk(&chunk(json!({}), json!(finish_name(answer.finish))));
        out.text = answer.text;
        out.usage = answer.usage;
        Ok(out)
    }

    /// `openai` or `anthropic`.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }
}

fn context_length(detail: &str) -> bool {
    detail.contains("context length")
        || detail.contains("context_length")
        || detail.contains("maximum context")
        || detail.contains("too many tokens")
}

fn completion_id() -> String {
    format!("chatcmpl-{}", muisti::MemoryId::generate())
}

fn now_secs() -> i64 {
    muisti::Timestamp::now().as_millis() / 1000
}

fn model_of(body: &Value, default: &str) -> String {
    body["model"].as_str().unwrap_or(default).to_owned()
}

fn finish_name(f: FinishReason) -> &'static str {
    match f {
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        _ => "stop",
    }
}

fn usage_of(v: &Value) -> Usage {
    Usage {
        input_tokens: v["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["completion_tokens"].as_u64().unwrap_or(0),
    }
}

fn usage_json(u: Usage) -> Value {
    json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens})
}

/// The text of an OpenAI message's `content`: a string, or the text parts of an array.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An OpenAI chat completions body as a provider-neutral request: system messages become
/// the system prompt, user and assistant messages their text (tool traffic is not
/// translated).
fn translate(body: &Value) -> Result<ChatRequest> {
    let mut system: Vec<String> = Vec::new();
    let mut messages = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        let text = content_text(&m["content"]);
        match m["role"].as_str() {
            Some("system") | Some("developer") => system.push(text),
            Some("user") => messages.push(Message::user(text)),
            Some("assistant") if !text.is_empty() => messages.push(Message::assistant(text)),
            _ => {}
        }
    }
    if !messages.first().is_some_and(|m| m.role == Role::User) {
        return Err(AgentError::invalid(
            "messages",
            "this upstream needs the conversation to start with a user message",
        ));
    }
    let max_tokens = body["max_completion_tokens"]
        .as_u64()
        .or_else(|| body["max_tokens"].as_u64())
        .and_then(|n| u32::try_from(n).ok());
    Ok(ChatRequest {
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        messages,
        tools: Vec::new(),
        max_tokens,
        temperature: body["temperature"].as_f64().map(|t| t as f32),
        json_schema: None,
    })
}
