//! The Anthropic Messages API.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{
    Provider, ProviderConfig,
    sse::for_each_event,
    transport::{Transport, read_json},
};
use crate::{ChatRequest, ChatResponse, FinishReason, Message, Result, Role, ToolCall, Usage};

/// The API version sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An Anthropic provider (`POST {base}/messages`).
pub struct Anthropic {
    t: Transport,
}

impl Anthropic {
    /// A provider for `config` (its `kind` is not checked).
    pub fn new(config: ProviderConfig) -> Self {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(k) = &config.api_key {
            headers.push(("x-api-key", k.clone()));
        }
        Self {
            t: Transport::new(config, "messages", headers),
        }
    }

    fn body(&self, req: &ChatRequest, stream: bool) -> Value {
        let mut body = json!({
            "model": self.t.config.model,
            "max_tokens": req.max_tokens.unwrap_or(self.t.config.max_tokens),
            "messages": wire_messages(&req.messages),
        });
        let schema = req.json_schema.as_ref().map(|s| {
            format!(
                "Answer with one JSON object that follows this JSON Schema: {}",
                s.schema
            )
        });
        match (&req.system, schema) {
            (Some(system), Some(schema)) => body["system"] = json!(format!("{system}\n\n{schema}")),
            (Some(system), None) => body["system"] = json!(system),
            (None, Some(schema)) => body["system"] = json!(schema),
            (None, None) => {}
        }
        if !req.tools.is_empty() {
            body["tools"] = req
                .tools
                .iter()
                .map(|t| {
                    json!({"name": t.name, "description": t.description, "input_schema": t.parameters})
                })
                .collect();
        }
        if let Some(t) = req.temperature {
            body["temperature"] = json!(t);
        }
        if stream {
            body["stream"] = json!(true);
        }
        body
    }
}

/// Messages in Anthropic's shape: tool calls are `tool_use` blocks of the assistant
/// message, and consecutive tool results are `tool_result` blocks of one user message.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut results: Vec<Value> = Vec::new();
    for m in messages {
        if m.role == Role::Tool {
            results.push(json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                "content": m.content,
            }));
            continue;
        }
        if !results.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        // The API refuses empty text: an empty answer stored earlier is left out.
        if m.role == Role::Assistant && m.content.is_empty() && m.tool_calls.is_empty() {
            continue;
        }
        out.push(match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                blocks.extend(m.tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
                }));
                json!({"role": "assistant", "content": blocks})
            }
            Role::Assistant => json!({"role": "assistant", "content": m.content}),
            _ => json!({"role": "user", "content": m.content}),
        });
    }
    if !results.is_empty() {
        out.push(json!({"role": "user", "content": results}));
    }
    out
}

fn finish_reason(s: Option<&str>) -> FinishReason {
    match s {
        None | Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(_) => FinishReason::Other,
    }
}

/// Whether a 4xx error's text says the prompt is too long ("prompt is too long: N tokens >
/// M maximum").
fn context_length(detail: &str) -> bool {
    detail.contains("prompt is too long")
        || detail.contains("context window")
        || detail.contains("context length")
}

impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.t.config.model
    }

    fn chat(&self, req: &ChatRequest) -> Result<ChatResponse> {
        let v = read_json(
            &self.t,
            self.t.post(&self.body(req, false), false, context_length)?,
        )?;
        let blocks = v["content"]
            .as_array()
            .ok_or_else(|| self.t.protocol("the answer has no content"))?;
        let mut out = ChatResponse {
            finish: finish_reason(v["stop_reason"].as_str()),
            usage: Usage {
                input_tokens: v
                    .pointer("/usage/input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                output_tokens: v
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
            },
            ..ChatResponse::default()
        };
        for b in blocks {
            match b["type"].as_str() {
                Some("text") => out.text.push_str(b["text"].as_str().unwrap_or_default()),
                Some("tool_use") => out.tool_calls.push(ToolCall {
                    id: b["id"].as_str().unwrap_or_default().to_owned(),
                    name: b["name"].as_str().unwrap_or_default().to_owned(),
                    arguments: b.get("input").cloned().unwrap_or_else(|| json!({})),
                }),
                _ => {}
            }
        }
        Ok(out)
    }

    fn chat_stream(
        &self,
        req: &ChatRequest,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse> {
        let reader = self.t.post(&self.body(req, true), true, context_length)?;
        let mut out = ChatResponse::default();
        // tool_use blocks by index: (id, name, input JSON so far).
        let mut tools: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
        let mut stop = None;
        let mut finished = false;
        for_each_event(
            reader,
            |event| {
                let v: Value = serde_json::from_str(&event.data)
                    .map_err(|e| self.t.protocol(format!("a stream event is not JSON: {e}")))?;
                let kind = event
                    .event
                    .as_deref()
                    .or_else(|| v["type"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                match kind.as_str() {
                    "message_start" => {
                        out.usage.input_tokens = v
                            .pointer("/message/usage/input_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or(0);
                    }
                    "content_block_start" => {
                        let block = &v["content_block"];
                        if block["type"] == "tool_use" {
                            tools.insert(
                                v["index"].as_u64().unwrap_or(0),
                                (
                                    block["id"].as_str().unwrap_or_default().to_owned(),
                                    block["name"].as_str().unwrap_or_default().to_owned(),
                                    String::new(),
                                ),
                            );
                        }
                    }
                    "content_block_delta" => {
                        let delta = &v["delta"];
                        match delta["type"].as_str() {
                            Some("text_delta") => {
                                let text = delta["text"].as_str().unwrap_or_default();
                                if !text.is_empty() {
                                    on_text(text);
                                    out.text.push_str(text);
                                }
                            }
                            Some("input_json_delta") => {
                                if let Some(t) = tools.get_mut(&v["index"].as_u64().unwrap_or(0)) {
                                    t.2.push_str(
                                        delta["partial_json"].as_str().unwrap_or_default(),
                                    );
                                }
                            }
                            _ => {}
                        }
                    }
                    "message_delta" => {
                        if let Some(s) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                            stop = Some(s.to_owned());
                        }
                        if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                            out.usage.output_tokens = n;
                        }
                    }
                    "message_stop" => {
                        finished = true;
                        return Ok(false);
                    }
                    "error" => {
                        let message = v
                            .pointer("/error/message")
                            .and_then(Value::as_str)
                            .unwrap_or("no detail");
                        return Err(self
                            .t
                            .unavailable(format!("error in the stream: {message}")));
                    }
                    _ => {}
                }
                Ok(true)
            },
            |e| self.t.unavailable(format!("the stream broke: {e}")),
        )?;
        if !finished && stop.is_none() {
            return Err(self
                .t
                .unavailable("the stream ended before the answer was finished"));
        }
        for (_, (id, name, input)) in tools {
            let arguments = if input.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(&input)
                    .map_err(|e| self.t.protocol(format!("tool input is not JSON: {e}")))?
            };
            out.tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
        out.finish = finish_reason(stop.as_deref());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_are_merged_into_one_user_message() {
        let mut call = Message::assistant("");
        call.tool_calls = vec![
            ToolCall {
                id: "a".into(),
                name: "f".into(),
                arguments: json!({"x": 1}),
            },
            ToolCall {
                id: "b".into(),
                name: "g".into(),
                arguments: json!({}),
            },
        ];
        let wire = wire_messages(&[
            Message::user("hi"),
            call,
            Message::tool("a", "1"),
            Message::tool("b", "2"),
        ]);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"][0]["type"], "tool_use");
        assert_eq!(wire[1]["content"].as_array().map(Vec::len), Some(2));
        assert_eq!(wire[2]["role"], "user");
        assert_eq!(wire[2]["content"][1]["tool_use_id"], "b");
    }

    #[test]
    fn empty_assistant_answers_are_left_out() {
        let wire = wire_messages(&[
            Message::user("a"),
            Message::assistant(""),
            Message::user("b"),
        ]);
        assert_eq!(wire.len(), 2);
        assert!(wire.iter().all(|m| m["role"] == "user"));
    }
}
