//! Scripted answers of chat model APIs, in their real wire formats: OpenAI chat completions
//! and the Anthropic Messages API, whole and streamed (server-sent events), for
//! [`Server`](crate::http::Server).

use serde_json::json;

use crate::http::Reply;

/// An OpenAI chat completion answering `text` (usage: 11 prompt, 3 completion tokens).
pub fn openai_reply(text: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        })
        .to_string(),
    )
}

/// An OpenAI streamed completion: a role chunk, one chunk per piece, a finish chunk and
/// `[DONE]`.
pub fn openai_stream(pieces: &[&str]) -> Reply {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}",
            json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        json!(null),
    )];
    events.extend(
        pieces
            .iter()
            .map(|p| chunk(json!({"content": p}), json!(null))),
    );
    events.push(chunk(json!({}), json!("stop")));
    events.push("data: [DONE]".into());
    Reply::sse(events)
}

/// An OpenAI chat completion calling `tool` with `args` (usage: 30 prompt, 5 completion
/// tokens).
pub fn openai_tool_call(tool: &str, args: serde_json::Value) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": format!("call_{tool}"), "type": "function",
                    "function": {"name": tool, "arguments": args.to_string()}}]}}],
            "usage": {"prompt_tokens": 30, "completion_tokens": 5, "total_tokens": 35},
        })
        .to_string(),
    )
}

/// An Anthropic message answering `text` (usage: 12 input, 4 output tokens).
pub fn anthropic_reply(text: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "test-model",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 12, "output_tokens": 4},
        })
        .to_string(),
    )
}

/// An Anthropic streamed message: `message_start` (12 input tokens), a text block with one
/// delta per piece and a `ping`, `message_delta` (7 output tokens) and `message_stop`.
pub fn anthropic_stream(pieces: &[&str]) -> Reply {
    let event = |name: &str, data: serde_json::Value| format!("event: {name}\ndata: {data}");
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "test-model", "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    events.extend(pieces.iter().map(|p| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
        )
    }));
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    events.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 7}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    Reply::sse(events)
}
