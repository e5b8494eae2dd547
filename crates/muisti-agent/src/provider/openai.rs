//! The OpenAI chat completions API, as spoken by OpenAI, Ollama, vLLM, llama.cpp server and
//! LM Studio.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::{
    Provider, ProviderConfig,
    sse::for_each_event,
    transport::{Transport, read_json},
};
use crate::{ChatRequest, ChatResponse, FinishReason, Message, Result, Role, ToolCall, Usage};

/// An OpenAI-compatible provider (`POST {base}/chat/completions`).
pub struct OpenAi {
    t: Transport,
}

impl OpenAi {
    /// A provider for `config` (its `kind` is not checked).
    pub fn new(config: ProviderConfig) -> Self {
        let headers = config
            .api_key
            .as_ref()
            .map(|k| vec![("Authorization", format!("Bearer {k}"))])
            .unwrap_or_default();
        Self {
            t: Transport::new(config, "chat/completions", headers),
        }
    }

    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        if let Some(system) = &req.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(req.messages.iter().map(wire_message));
        let mut body = json!({
            "model": self.t.config.model,
            "messages": messages,
        });
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect();
        }
        if let Some(n) = req.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if let Some(t) = req.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(s) = &req.json_schema {
            body["response_format"] = json!({"type": "json_schema", "json_schema": {
                "name": s.name, "schema": s.schema, "strict": true,
            }});
        }
        if stream {
            body["stream"] = json!(true);
            // Token counts arrive in a last chunk only when asked for.
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }
}

fn wire_message(m: &Message) -> Value {
    match m.role {
        Role::User => json!({"role": "user", "content": m.content}),
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.content})
        }
        Role::Assistant => json!({
            "role": "assistant",
            "content": if m.content.is_empty() { Value::Null } else { json!(m.content) },
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments.to_string()},
            })).collect::<Vec<_>>(),
        }),
    }
}

fn finish_reason(s: Option<&str>) -> FinishReason {
    match s {
        None | Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(_) => FinishReason::Other,
    }
}

/// Tool arguments arrive as a JSON string; an empty string means no arguments.
fn arguments(s: &str) -> Value {
    if s.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_owned()))
}

fn usage(v: &Value) -> Usage {
    Usage {
        input_tokens: v["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["completion_tokens"].as_u64().unwrap_or(0),
    }
}

/// Whether a 4xx error's text says the prompt is too long (OpenAI's
/// `context_length_exceeded`, vLLM's "maximum context length", llama.cpp's "exceeds the
/// available context size", Ollama's "context window").
fn context_length(detail: &str) -> bool {
    detail.contains("context length")
        || detail.contains("context_length")
        || detail.contains("context size")
        || detail.contains("context window")
        || detail.contains("maximum context")
}

impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.t.config.model
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse> {
        let v = read_json(
            &self.t,
            self.t.post(&self.body(req, false), false, context_length)?,
        )?;
        let choice = v
            .pointer("/choices/0")
            .ok_or_else(|| self.t.protocol("the answer has no choices"))?;
        let message = &choice["message"];
        let tool_calls = message["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| ToolCall {
                        id: c["id"].as_str().unwrap_or_default().to_owned(),
                        name: c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        arguments: arguments(
                            c.pointer("/function/arguments")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(ChatResponse {
            text: message["content"].as_str().unwrap_or_default().to_owned(),
            tool_calls,
            finish: finish_reason(choice["finish_reason"].as_str()),
            usage: usage(&v["usage"]),
        })
    }

    fn chat_stream(
        &self,
        req: &ChatRequest,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse> {
        let reader = self.t.post(&self.body(req, true), true, context_length)?;
        let mut out = ChatResponse::default();
        // Tool calls arrive in pieces: (id, name, arguments so far), in order of arrival,
        // and the slot each `index` currently writes to.
        let mut calls: Vec<(String, String, String)> = Vec::new();
        let mut slots: HashMap<u64, usize> = HashMap::new();
        let mut finish = None;
        let mut done = false;
        for_each_event(
            reader,
            |event| {
                if event.data.trim() == "[DONE]" {
                    done = true;
                    return Ok(false);
                }
                let v: Value = serde_json::from_str(&event.data)
                    .map_err(|e| self.t.protocol(format!("a stream event is not JSON: {e}")))?;
                if let Some(message) = v.pointer("/error/message").and_then(Value::as_str) {
                    return Err(self
                        .t
                        .unavailable(format!("error in the stream: {message}")));
                }
                if v.get("usage").is_some_and(Value::is_object) {
                    out.usage = usage(&v["usage"]);
                }
                let Some(choice) = v.pointer("/choices/0") else {
                    return Ok(true);
                };
                let delta = &choice["delta"];
                if let Some(text) = delta["content"].as_str()
                    && !text.is_empty()
                {
                    on_text(text);
                    out.text.push_str(text);
                }
                for c in delta["tool_calls"].as_array().into_iter().flatten() {
                    let index = c["index"].as_u64().unwrap_or(0);
                    let id = c["id"].as_str().filter(|i| !i.is_empty());
                    // A new id at an index that already holds a call is a new call (some
                    // servers send every call at index 0).
                    let slot = match slots.get(&index) {
                        Some(&s) if id.is_none_or(|i| calls[s].0.is_empty() || calls[s].0 == i) => {
                            s
                        }
                        _ => {
                            calls.push(Default::default());
                            slots.insert(index, calls.len() - 1);
                            calls.len() - 1
                        }
                    };
                    let call = &mut calls[slot];
                    if let Some(id) = id
                        && call.0.is_empty()
                    {
                        call.0 = id.to_owned();
                    }
                    if let Some(name) = c.pointer("/function/name").and_then(Value::as_str)
                        && call.1.is_empty()
                    {
                        call.1 = name.to_owned();
                    }
                    if let Some(a) = c.pointer("/function/arguments").and_then(Value::as_str) {
                        call.2.push_str(a);
                    }
                }
                if let Some(f) = choice["finish_reason"].as_str() {
                    finish = Some(f.to_owned());
                }
                Ok(true)
            },
            |e| self.t.unavailable(format!("the stream broke: {e}")),
        )?;
        if !done && finish.is_none() {
            return Err(self
                .t
                .unavailable("the stream ended before the answer was finished"));
        }
        out.tool_calls = calls
            .into_iter()
            .map(|(id, name, args)| ToolCall {
                id,
                name,
                arguments: arguments(&args),
            })
            .collect();
        out.finish = finish_reason(finish.as_deref());
        Ok(out)
    }
}
