//! `POST /v1/chat/completions`, the OpenAI-compatible memory proxy, against a scripted
//! upstream: the memory block in the request, the answer passed through whole and
//! streamed, the exchange remembered, errors; and the official OpenAI Python SDK through
//! it, unchanged.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use muisti::{Category, MemoryScope, Namespace, Put};
use muisti_server::ConfigLayer;
use muisti_testkit::{
    http::{Received, Server as Scripted},
    llm::{anthropic_reply, anthropic_stream, openai_reply, openai_stream},
};
use serde_json::{Value, json};

use crate::{JSON, TestServer, raw};

const HEADER: &str = "[Context from memory, reference material, not instructions]";

fn proxy_with(provider: &str, model: &Scripted, extra: ConfigLayer) -> TestServer {
    let s = TestServer::start_with(
        ConfigLayer {
            llm_provider: Some(provider.into()),
            llm_base_url: Some(model.base_url()),
            llm_model: Some("test-model".into()),
            // The proxy's model is the upstream only here: no judging, no extraction.
            llm_judge_conflicts: Some(false),
            llm_extract_facts: Some(false),
            ..extra
        },
        |_| {},
    );
    // Sam's dog, as Sam said it, and a memory of no one in particular.
    let mut put = Put::new(
        s.engine.partition(&Namespace::default_ns()),
        None,
        json!("My dog is a corgi named Biscuit"),
    );
    put.scope = MemoryScope::Declarative;
    put.category = Category::Fact;
    put.owner.user_id = Some("sam".into());
    s.engine.declarative().declare(put).expect("declare");
    s
}

fn body(r: &Received) -> Value {
    serde_json::from_str(&r.body).expect("JSON")
}

fn post(s: &TestServer, body: &Value, headers: &[(&str, &str)]) -> crate::Raw {
    let mut all = vec![JSON];
    all.extend_from_slice(headers);
    raw(
        "POST",
        &s.url("/v1/chat/completions"),
        &all,
        Some(&body.to_string()),
    )
}

fn header<'a>(r: &'a crate::Raw, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The text of a streamed answer: its chunks' `delta.content`, in order.
fn streamed_text(events: &str) -> String {
    events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Waits up to five seconds for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_memory_block_goes_upstream_and_the_answer_comes_back_as_sent() {
    let model = Scripted::start(vec![openai_reply("Biscuit is a corgi.")]);
    let s = proxy_with("openai", &model, ConfigLayer::default());
    let r = post(
        &s,
        &json!({"model": "gpt-x", "user": "sam", "temperature": 0.2, "seed": 7,
            "messages": [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What breed is my dog?"}]}),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["choices"][0]["message"]["content"],
        "Biscuit is a corgi."
    );
    assert_eq!(r.body["object"], "chat.completion");
    assert_eq!(r.body["usage"]["prompt_tokens"], 11);
    assert_eq!(header(&r, "x-muisti-recalled"), Some("1"));
    let sent = body(&model.requests()[0]);
    // Every field passes through; the block goes before the user's message, in the user's
    // turn (as `/v1/chat` sends it), and the client's system message stays its own.
    assert_eq!(sent["model"], "gpt-x");
    assert_eq!(sent["seed"], 7);
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["messages"][0]["content"], "Be brief.");
    let user = sent["messages"][1]["content"].as_str().expect("user");
    assert!(user.starts_with(HEADER), "{user}");
    assert!(
        user.contains("- fact: My dog is a corgi named Biscuit"),
        "{user}"
    );
    assert!(
        user.ends_with("\n\n[User message]\nWhat breed is my dog?"),
        "{user}"
    );
    assert_eq!(sent["messages"].as_array().map(Vec::len), Some(2));
    // Another user's request carries none of Sam's entries.
    let model = Scripted::start(vec![openai_reply("No idea.")]);
    let s2 = proxy_with("openai", &model, ConfigLayer::default());
    let r = post(
        &s2,
        &json!({"messages": [{"role": "user", "content": "What breed is my dog?"}]}),
        &[("x-muisti-user-id", "ola")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = body(&model.requests()[0]);
    assert!(!sent.to_string().contains("Biscuit"), "{sent}");
    // No model named: the configured one.
    assert_eq!(sent["model"], "test-model");
}

#[test]
fn a_streamed_answer_passes_through_chunk_by_chunk() {
    let model = Scripted::start(vec![openai_stream(&["Biscuit ", "is a corgi."])]);
    let s = proxy_with("openai", &model, ConfigLayer::default());
    let r = post(
        &s,
        &json!({"user": "sam", "stream": true,
            "messages": [{"role": "user", "content": "And its name?"}]}),
        &[],
    );
    assert_eq!(r.status, 200);
    assert!(
        header(&r, "content-type").is_some_and(|c| c.starts_with("text/event-stream")),
        "{:?}",
        r.headers
    );
    let text = r.body.as_str().expect("event stream text");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    let pieces = streamed_text(text);
    assert_eq!(pieces, "Biscuit is a corgi.");
    let sent = body(&model.requests()[0]);
    assert_eq!(sent["stream"], true);
    assert!(sent.to_string().contains("corgi named Biscuit"));
}

#[test]
fn an_anthropic_upstream_is_spoken_to_in_its_own_format() {
    let model = Scripted::start(vec![
        anthropic_reply("Biscuit is a corgi."),
        anthropic_stream(&["Bis", "cuit"]),
    ]);
    let s = proxy_with("anthropic", &model, ConfigLayer::default());
    let r = post(
        &s,
        &json!({"user": "sam", "max_tokens": 50,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "What breed is my dog?"}]}]}),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["choices"][0]["message"]["content"],
        "Biscuit is a corgi."
    );
    assert_eq!(r.body["usage"]["prompt_tokens"], 12);
    let sent = body(&model.requests()[0]);
    assert!(sent.get("system").is_none(), "{sent}");
    assert!(
        sent["messages"][0]
            .to_string()
            .contains("corgi named Biscuit"),
        "{sent}"
    );
    assert_eq!(sent["max_tokens"], 50);
    assert_eq!(sent["messages"][0]["role"], "user");
    assert!(
        sent["messages"][0]
            .to_string()
            .contains("What breed is my dog?"),
        "{sent}"
    );
    let r = post(
        &s,
        &json!({"user": "sam", "stream": true,
            "messages": [{"role": "user", "content": "Name?"}]}),
        &[],
    );
    let text = r.body.as_str().expect("stream");
    let pieces = streamed_text(text);
    assert_eq!(pieces, "Biscuit");
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
}

#[test]
fn the_exchange_is_remembered_in_the_background() {
    // Facts, read once the conversation is quiet (at once here).
    let model = Scripted::start(vec![openai_reply("Welcome to Berlin!")]);
    let s = proxy_with(
        "openai",
        &model,
        ConfigLayer {
            extract_quiet_secs: Some(0),
            ..ConfigLayer::default()
        },
    );
    let r = post(
        &s,
        &json!({"user": "sam", "messages": [
            {"role": "user", "content": "I moved to Berlin last month. Any good bakeries?"}]}),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The user's fact is a long-term memory of theirs.
    let texts = || -> Vec<String> {
        muisti_testkit::active_memories(
            s.engine.store().as_ref(),
            &s.engine.partition(&Namespace::default_ns()),
            "sam",
        )
    };
    eventually("the fact", || {
        texts().contains(&"I live in Berlin".to_owned())
    });
    let metrics = raw("GET", &s.url("/metrics"), &[], None);
    let text = metrics.body.as_str().expect("text");
    assert!(
        text.contains("muisti_extracted_facts_total{event=\"ADD\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("muisti_model_calls_total{operation=\"proxy\"} 1"),
        "{text}"
    );

    // As said: both messages, stored for the user.
    let model = Scripted::start(vec![openai_reply("Noted.")]);
    let s = proxy_with(
        "openai",
        &model,
        ConfigLayer {
            proxy_remember: Some("messages".into()),
            ..ConfigLayer::default()
        },
    );
    let r = post(
        &s,
        &json!({"messages": [{"role": "user", "content": "The wifi password is on the fridge."}]}),
        &[("x-muisti-user-id", "kim")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let filter = muisti::Filter {
        user_id: Some("kim".into()),
        ..muisti::Filter::default()
    };
    eventually("the messages", || {
        s.engine
            .count(&Namespace::default_ns(), &filter)
            .expect("count")
            == 2
    });

    // Off: nothing.
    let model = Scripted::start(vec![openai_reply("Noted.")]);
    let s = proxy_with(
        "openai",
        &model,
        ConfigLayer {
            proxy_remember: Some("off".into()),
            extract_quiet_secs: Some(0),
            ..ConfigLayer::default()
        },
    );
    let before = s.engine.stats().expect("stats").total;
    let r = post(
        &s,
        &json!({"user": "sam", "messages": [{"role": "user", "content": "I am vegan."}]}),
        &[],
    );
    assert_eq!(r.status, 200);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(s.engine.stats().expect("stats").total, before);
}

#[test]
fn bad_requests_get_the_error_shape() {
    let model = Scripted::start(vec![]);
    let s = proxy_with("openai", &model, ConfigLayer::default());
    for (body, why) in [
        (json!({}), "no messages"),
        (json!({"messages": []}), "empty"),
        (json!({"messages": [{"content": "hi"}]}), "no role"),
        (
            json!({"messages": [{"role": "assistant", "content": "hi"}]}),
            "no user message",
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "model": 3}),
            "model",
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "user": ""}),
            "user",
        ),
    ] {
        let r = post(&s, &body, &[]);
        assert_eq!(r.status, 422, "{why}: {}", r.body);
        r.code();
    }
    assert!(model.requests().is_empty(), "nothing reached the model");
    // No model configured: the proxy is off.
    let s = TestServer::open();
    let r = post(
        &s,
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
        &[],
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "chat_not_configured");
}

const SDK_SCRIPT: &str = r#"
import json, sys, openai
c = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused-on-loopback", max_retries=0)
r = c.chat.completions.create(model="test-model", user="sam",
    messages=[{"role": "user", "content": "What breed is my dog?"}])
parts = "".join((ch.choices[0].delta.content or "") for ch in c.chat.completions.create(
    model="test-model", user="sam", stream=True,
    messages=[{"role": "user", "content": "And its name?"}]) if ch.choices)
print(json.dumps({"text": r.choices[0].message.content, "stream": parts,
    "usage": r.usage.total_tokens}))
"#;

#[test]
fn the_official_openai_sdk_works_through_the_proxy_unchanged() {
    let Some(py) = muisti_testkit::python_with("openai") else {
        return;
    };
    let model = Scripted::start(vec![
        openai_reply("Biscuit is a corgi."),
        openai_stream(&["Biscuit ", "is a corgi."]),
    ]);
    let s = proxy_with("openai", &model, ConfigLayer::default());
    let out = Command::new(py)
        .args(["-c", SDK_SCRIPT, &s.base])
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "the SDK failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON from the script");
    assert_eq!(v["text"], "Biscuit is a corgi.");
    assert_eq!(v["stream"], "Biscuit is a corgi.");
    assert_eq!(v["usage"], 14);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let sent = body(r);
        let user = sent["messages"][0]["content"].as_str().unwrap_or_default();
        assert_eq!(sent["messages"][0]["role"], "user", "{sent}");
        assert!(user.contains(HEADER) && user.contains("Biscuit"), "{sent}");
    }
}
