//! The two wire protocols: requests, answers, streaming, tool calls, retries and errors.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use muisti_agent::{AgentError, AgentErrorKind, ChatRequest, Message, ProviderKind, Tool};
use muisti_testkit::http::{Reply, Server};
use serde_json::json;

use super::*;

const QUESTION: &str = "What discount do I get for my customer tier?";

fn seed_prompt() -> String {
    expected_prompt(
        &[
            "- customer_tier: gold tier customer",
            "- discount_rule: gold customer discount is 10 percent",
        ],
        QUESTION,
    )
}

#[test]
fn openai_request_shape_and_answer() {
    let server = Server::start(vec![openai_reply("10 percent.")]);
    let memory = seed_memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .system("You are a shop assistant.")
        .max_tokens(200)
        .build()
        .expect("agent");
    let reply = agent.send(QUESTION).expect("reply");
    assert_eq!(reply.text, "10 percent.");
    let r = &server.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
    let b = body(r);
    assert_eq!(b["model"], "test-model");
    assert_eq!(b["max_tokens"], 200);
    assert!(b.get("stream").is_none());
    assert_eq!(
        b["messages"],
        json!([
            {"role": "system", "content": "You are a shop assistant."},
            {"role": "user", "content": seed_prompt()},
        ])
    );
}

#[test]
fn openai_streaming_delivers_pieces_and_the_same_prompt() {
    let server = Server::start(vec![openai_stream(&["You get ", "10 ", "percent."])]);
    let memory = seed_memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let mut pieces = Vec::new();
    let reply = agent
        .stream_with(QUESTION, |t| pieces.push(t.to_owned()))
        .expect("reply");
    assert_eq!(pieces, ["You get ", "10 ", "percent."]);
    assert_eq!(reply.text, "You get 10 percent.");
    let r = &server.requests()[0];
    assert_eq!(body(r)["stream"], true);
    assert_eq!(body(r)["stream_options"], json!({"include_usage": true}));
    assert_eq!(last_prompt(r), seed_prompt());
}

#[test]
fn a_stream_cut_off_before_its_end_is_an_error() {
    let cut_openai = Reply::sse([format!(
        "data: {}",
        json!({"choices": [{"index": 0, "delta": {"content": "You get"}, "finish_reason": null}]})
    )]);
    let cut_anthropic = Reply::sse([format!(
        "event: content_block_delta\ndata: {}",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "You get"}})
    )]);
    for (kind, reply) in [
        (ProviderKind::OpenAi, cut_openai),
        (ProviderKind::Anthropic, cut_anthropic),
    ] {
        let server = Server::start(vec![reply]);
        let memory = memory();
        let agent = agent(kind, &server, &memory).build().expect("agent");
        let conv = agent.conversation().expect("conversation");
        let err = agent
            .stream_in_conversation(&conv, "hi", |_| {})
            .expect_err("cut off");
        assert_eq!(err.kind(), AgentErrorKind::Unavailable, "{kind}: {err}");
        assert!(
            agent.conversation_by_id(&conv.id).is_err(),
            "{kind}: a cut-off answer is not stored"
        );
    }
}

#[test]
fn openai_parallel_tool_calls_sent_at_one_index_stay_apart() {
    // Some servers (Ollama) give every streamed call index 0, each with its own id.
    let chunk = |delta: serde_json::Value| {
        format!(
            "data: {}",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let calls = Reply::sse([
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]}),
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}}]}),
        ),
        format!(
            "data: {}",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        ),
        "data: [DONE]".to_owned(),
    ]);
    let server = Server::start(vec![calls, openai_stream(&["Both sunny."])]);
    let memory = memory();
    let count = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .tool(weather_tool(Arc::clone(&count)))
        .build()
        .expect("agent");
    let reply = agent
        .stream_with("weather in Oslo and Rome?", |_| {})
        .expect("reply");
    assert_eq!(count.load(Ordering::SeqCst), 2);
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(reply.tool_calls[1].arguments, json!({"city": "Rome"}));
}

#[test]
fn the_token_stream_iterates_pieces_then_finishes() {
    let server = Server::start(vec![openai_stream(&["a", "b", "c"])]);
    let memory = memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let mut stream = agent.stream("hello");
    let pieces: Vec<String> = stream.by_ref().collect();
    assert_eq!(pieces, ["a", "b", "c"]);
    assert_eq!(stream.finish().expect("reply").text, "abc");
}

#[test]
fn anthropic_request_shape_and_answer() {
    let server = Server::start(vec![anthropic_reply("10 percent.")]);
    let memory = seed_memory();
    let agent = agent(ProviderKind::Anthropic, &server, &memory)
        .system("You are a shop assistant.")
        .build()
        .expect("agent");
    let reply = agent.send(QUESTION).expect("reply");
    assert_eq!(reply.text, "10 percent.");
    assert_eq!(reply.usage.output_tokens, 4);
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    let b = body(r);
    assert_eq!(b["system"], "You are a shop assistant.");
    assert_eq!(b["max_tokens"], 1024);
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": seed_prompt()}])
    );
}

#[test]
fn anthropic_streaming_delivers_pieces_and_the_same_prompt() {
    let server = Server::start(vec![anthropic_stream(&["You get ", "10 percent."])]);
    let memory = seed_memory();
    let agent = agent(ProviderKind::Anthropic, &server, &memory)
        .build()
        .expect("agent");
    let mut pieces = Vec::new();
    let reply = agent
        .stream_with(QUESTION, |t| pieces.push(t.to_owned()))
        .expect("reply");
    assert_eq!(pieces, ["You get ", "10 percent."]);
    assert_eq!(reply.text, "You get 10 percent.");
    assert_eq!(reply.usage.input_tokens, 12);
    assert_eq!(reply.usage.output_tokens, 7);
    let r = &server.requests()[0];
    assert_eq!(body(r)["stream"], true);
    assert_eq!(last_prompt(r), seed_prompt());
}

fn weather_tool(calls: Arc<AtomicUsize>) -> Tool {
    Tool::new(
        "get_weather",
        "Current weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |args| {
            calls.fetch_add(1, Ordering::SeqCst);
            let city = args["city"].as_str().ok_or("city is required")?;
            Ok(format!("sunny in {city}"))
        },
    )
}

#[test]
fn openai_tool_calls_are_run_and_answered() {
    let call = Reply::json(
        200,
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
        ]}, "finish_reason": "tool_calls"}]})
        .to_string(),
    );
    let server = Server::start(vec![call, openai_reply("It is sunny in Paris.")]);
    let memory = memory();
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .tool(weather_tool(Arc::clone(&calls)))
        .build()
        .expect("agent");
    let reply = agent.send("weather in Paris?").expect("reply");
    assert_eq!(reply.text, "It is sunny in Paris.");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(reply.tool_calls[0].arguments, json!({"city": "Paris"}));
    let requests = server.requests();
    let first = body(&requests[0]);
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "get_weather");
    let second = body(&requests[1]);
    assert_eq!(
        second["messages"],
        json!([
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Paris"},
        ])
    );
}

#[test]
fn openai_streamed_tool_calls_are_assembled() {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        format!(
            "data: {}",
            json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let call = Reply::sse([
        chunk(
            json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": ""}}]}),
            json!(null),
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}),
            json!(null),
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"Oslo\"}"}}]}),
            json!(null),
        ),
        chunk(json!({}), json!("tool_calls")),
        "data: [DONE]".to_owned(),
    ]);
    let server = Server::start(vec![call, openai_stream(&["Sunny."])]);
    let memory = memory();
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .tool(weather_tool(Arc::clone(&calls)))
        .build()
        .expect("agent");
    let reply = agent
        .stream_with("weather in Oslo?", |_| {})
        .expect("reply");
    assert_eq!(reply.text, "Sunny.");
    assert_eq!(reply.tool_calls[0].id, "call_9");
    assert_eq!(reply.tool_calls[0].arguments, json!({"city": "Oslo"}));
    let second = body(&server.requests()[1]);
    assert_eq!(second["messages"][2]["content"], "sunny in Oslo");
}

#[test]
fn anthropic_tool_use_is_run_and_answered_in_both_modes() {
    let tool_use = Reply::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}
        ], "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5}})
        .to_string(),
    );
    let streamed_tool_use = Reply::sse([
        format!(
            "event: message_start\ndata: {}",
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}})
        ),
        format!(
            "event: content_block_start\ndata: {}",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}}})
        ),
        format!(
            "event: content_block_delta\ndata: {}",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": "}})
        ),
        format!(
            "event: content_block_delta\ndata: {}",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"Rome\"}"}})
        ),
        format!(
            "event: content_block_stop\ndata: {}",
            json!({"type": "content_block_stop", "index": 0})
        ),
        format!(
            "event: message_delta\ndata: {}",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
        ),
        "event: message_stop\ndata: {\"type\": \"message_stop\"}".to_owned(),
    ]);
    let server = Server::start(vec![
        tool_use,
        anthropic_reply("Sunny in Rome."),
        streamed_tool_use,
        anthropic_stream(&["Still sunny."]),
    ]);
    let memory = memory();
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = agent(ProviderKind::Anthropic, &server, &memory)
        .tool(weather_tool(Arc::clone(&calls)))
        .build()
        .expect("agent");
    assert_eq!(
        agent.send("weather in Rome?").expect("reply").text,
        "Sunny in Rome."
    );
    let streamed = agent.stream_with("and now?", |_| {}).expect("reply");
    assert_eq!(streamed.text, "Still sunny.");
    assert_eq!(streamed.tool_calls[0].arguments, json!({"city": "Rome"}));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let requests = server.requests();
    let first = body(&requests[0]);
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert_eq!(first["tools"][0]["input_schema"]["required"][0], "city");
    let second = body(&requests[1]);
    assert_eq!(
        second["messages"],
        json!([
            {"role": "user", "content": "weather in Rome?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Rome"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny in Rome"}
            ]},
        ])
    );
    assert_eq!(
        body(&requests[3])["messages"][2]["content"][0]["tool_use_id"],
        "toolu_2"
    );
}

#[test]
fn a_model_that_keeps_calling_tools_hits_the_step_limit() {
    let call = || {
        Reply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "nope", "arguments": "{}"}}
            ]}, "finish_reason": "tool_calls"}]})
            .to_string(),
        )
    };
    let server = Server::start(vec![call(), call()]);
    let memory = memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .max_steps(2)
        .build()
        .expect("agent");
    let err = agent.send("loop").expect_err("step limit");
    assert_eq!(err.kind(), AgentErrorKind::StepLimit);
    // The unknown tool got an error result, not a crash.
    let second = body(&server.requests()[1]);
    assert!(
        second["messages"][2]["content"]
            .as_str()
            .is_some_and(|c| c.contains("no tool named"))
    );
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("hi")],
        ..ChatRequest::default()
    }
}

#[test]
fn server_errors_are_retried_with_backoff() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let ok = match kind {
            ProviderKind::OpenAi => openai_reply("fine"),
            ProviderKind::Anthropic => anthropic_reply("fine"),
        };
        let server = Server::start(vec![
            Reply::json(503, r#"{"error":{"message":"overloaded"}}"#),
            Reply::json(429, r#"{"error":{"message":"slow down"}}"#).header("Retry-After", "0"),
            ok,
        ]);
        let answer = provider(kind, &server)
            .chat(&request())
            .expect("third attempt");
        assert_eq!(answer.text, "fine");
        assert_eq!(server.requests().len(), 3);
    }
}

#[test]
fn errors_are_typed() {
    // Rate limited on every attempt.
    let server = Server::start(
        (0..3)
            .map(|_| Reply::json(429, r#"{"error":{"message":"rate"}}"#).header("Retry-After", "0"))
            .collect(),
    );
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("429");
    assert!(
        matches!(err, AgentError::RateLimited { attempts: 3, .. }),
        "{err:?}"
    );
    // A refused key is not retried.
    let server = Server::start(vec![Reply::json(401, r#"{"error":{"message":"bad key"}}"#)]);
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("401");
    assert_eq!(err.kind(), AgentErrorKind::Auth);
    assert_eq!(server.requests().len(), 1);
    let server = Server::start(vec![Reply::json(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]);
    let err = provider(ProviderKind::Anthropic, &server)
        .chat(&request())
        .expect_err("401");
    assert_eq!(err.kind(), AgentErrorKind::Auth);
    // The prompt is too long.
    let server = Server::start(vec![Reply::json(
        400,
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    )]);
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("400");
    assert_eq!(err.kind(), AgentErrorKind::ContextLength);
    let server = Server::start(vec![Reply::json(
        400,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
    )]);
    let err = provider(ProviderKind::Anthropic, &server)
        .chat(&request())
        .expect_err("400");
    assert_eq!(err.kind(), AgentErrorKind::ContextLength);
    // Any other 400 is the provider rejecting the request.
    let server = Server::start(vec![Reply::json(400, r#"{"error":"model 'x' not found"}"#)]);
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("400");
    assert!(
        matches!(
            err,
            AgentError::Provider {
                status: Some(400),
                ..
            }
        ),
        "{err:?}"
    );
    // The provider's message is not repeated (a body can echo the request, and with it
    // stored memory); a short error code is.
    assert!(!err.to_string().contains("not found"), "{err}");
    let server = Server::start(vec![Reply::json(
        404,
        r#"{"error":{"message":"you asked: my secret memory","type":"not_found_error"}}"#,
    )]);
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("404");
    assert!(!err.to_string().contains("secret"), "{err}");
    assert!(err.to_string().contains("not_found_error"), "{err}");
    // 5xx on every attempt.
    let server = Server::start((0..3).map(|_| Reply::json(502, "bad gateway")).collect());
    let err = provider(ProviderKind::Anthropic, &server)
        .chat(&request())
        .expect_err("502");
    assert_eq!(err.kind(), AgentErrorKind::Unavailable);
    assert!(err.is_transient());
    // An answer that is not the protocol.
    let server = Server::start(vec![Reply::json(200, r#"{"unexpected": true}"#)]);
    let err = provider(ProviderKind::OpenAi, &server)
        .chat(&request())
        .expect_err("shape");
    assert_eq!(err.kind(), AgentErrorKind::Provider);
}

#[test]
fn a_slow_provider_times_out() {
    let server = Server::start(vec![
        openai_reply("late").delayed(Duration::from_secs(3)),
        openai_reply("late").delayed(Duration::from_secs(3)),
    ]);
    let mut c = config(ProviderKind::OpenAi, &server);
    c.timeout = Duration::from_millis(300);
    c.max_attempts = 2;
    let err = c
        .connect()
        .expect("provider")
        .chat(&request())
        .expect_err("timeout");
    assert_eq!(err.kind(), AgentErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("2 attempts"), "{err}");
}

#[test]
fn nothing_listening_is_unavailable() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    let mut c =
        ProviderConfig::new(ProviderKind::OpenAi, "m").base_url(format!("http://{addr}/v1"));
    c.max_attempts = 1;
    let err = c
        .connect()
        .expect("provider")
        .chat(&request())
        .expect_err("refused");
    assert_eq!(err.kind(), AgentErrorKind::Unavailable);
}

#[test]
fn bad_provider_settings_are_rejected() {
    let bad_url = ProviderConfig::new(ProviderKind::OpenAi, "m")
        .base_url("ftp://x")
        .connect();
    assert!(matches!(
        bad_url,
        Err(AgentError::InvalidInput {
            field: "base_url",
            ..
        })
    ));
    let no_model = ProviderConfig::new(ProviderKind::Anthropic, " ").connect();
    assert!(matches!(
        no_model,
        Err(AgentError::InvalidInput { field: "model", .. })
    ));
    assert!("gemini".parse::<ProviderKind>().is_err());
    assert_eq!(
        "ollama".parse::<ProviderKind>().ok(),
        Some(ProviderKind::OpenAi)
    );
}
