//! `POST /v1/memories/extract`, `POST /v1/manage` and the MCP tool `remember_conversation`:
//! the decisions over HTTP, the error shape, tenants kept apart, the model's extraction
//! and the manager against a scripted model.

use muisti::Namespace;
use muisti_server::ConfigLayer;
use muisti_testkit::{
    http::Server as Scripted,
    llm::{openai_reply, openai_tool_call},
};
use serde_json::{Value, json};

use crate::{JSON, TestServer, raw};

/// The user's active long-term memories: what extraction learned of their facts.
fn learned(engine: &muisti::Engine, user: &str) -> Vec<String> {
    muisti_testkit::active_memories(
        engine.store().as_ref(),
        &engine.partition(&Namespace::default_ns()),
        user,
    )
}

fn post(s: &TestServer, path: &str, body: &Value, auth: Option<&str>) -> crate::Raw {
    let bearer = auth.map(|k| format!("Bearer {k}"));
    let mut headers = vec![JSON];
    if let Some(b) = &bearer {
        headers.push(("authorization", b.as_str()));
    }
    raw("POST", &s.url(path), &headers, Some(&body.to_string()))
}

fn events(r: &crate::Raw) -> Vec<String> {
    r.body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|x| x["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn extract_decides_each_fact_over_http() {
    let s = TestServer::open();
    let said = |text: &str| {
        json!({"user_id": "ana", "messages": [
        {"role": "user", "content": text, "created_at": "2024-05-14T09:30:00Z"}]})
    };
    let r = post(
        &s,
        "/v1/memories/extract",
        &said("I live in Lisbon and I like jazz."),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(events(&r), ["ADD", "ADD"]);
    assert_eq!(r.body["extractor"], "offline");
    assert_eq!(r.body["usage"]["calls"], 0);
    assert_eq!(r.body["results"][0]["type"], "fact");
    assert_eq!(r.body["results"][0]["speaker"], "user");
    let r = post(
        &s,
        "/v1/memories/extract",
        &said("I moved to Porto last month."),
        None,
    );
    assert_eq!(events(&r), ["UPDATE"], "{}", r.body);
    assert_eq!(r.body["results"][0]["previous_memory"], "I live in Lisbon");
    assert_eq!(r.body["results"][0]["at"], "2024-04-14T00:00:00.000Z");
    let r = post(
        &s,
        "/v1/memories/extract",
        &said("I don't like jazz anymore."),
        None,
    );
    assert_eq!(events(&r), ["DELETE"], "{}", r.body);
    let r = post(
        &s,
        "/v1/memories/extract",
        &json!({"user_id": "ana", "messages": [
            {"role": "assistant", "content": "Since you're a nurse, nights must be hard."}]}),
        None,
    );
    assert_eq!(events(&r), ["CONFIRMATION_REQUIRED"], "{}", r.body);
    let proposal = r.body["results"][0]["id"].as_str().expect("id").to_owned();
    let confirmed = post(
        &s,
        &format!("/v1/proposals/{proposal}/confirm"),
        &json!({"user_id": "ana"}),
        None,
    );
    assert_eq!(confirmed.status, 201, "{}", confirmed.body);
    let entries: Vec<String> = s
        .engine
        .declarative()
        .declarative_entries(&Namespace::default_ns(), "ana")
        .expect("entries")
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    // The confirmed proposal is an entry; the user's facts are long-term memories.
    assert_eq!(entries, ["I am a nurse"], "{entries:?}");
    let recalled = s
        .engine
        .recall(&{
            let mut q = muisti::RecallRequest::new(Namespace::default_ns(), "where do I live", 5);
            q.filter.user_id = Some("ana".into());
            q
        })
        .expect("recall");
    assert_eq!(
        recalled
            .first()
            .map(|h| h.memory.text().into_owned())
            .as_deref(),
        Some("I live in Porto")
    );
    // Without inference: the messages as said.
    let r = post(
        &s,
        "/v1/memories/extract",
        &json!({"user_id": "ana", "infer": false, "messages": [
            {"role": "user", "content": "see you at 5", "name": "Ana"}]}),
        None,
    );
    assert_eq!(events(&r), ["ADD"]);
    assert_eq!(r.body["results"][0]["type"], "conversation");
    assert_eq!(r.body["results"][0]["speaker"], "Ana");
    assert!(r.body.get("extractor").is_none());
    // The metrics count the decisions.
    let m = raw("GET", &s.url("/metrics"), &[], None);
    let text = m.body.as_str().expect("text");
    assert!(
        text.contains("muisti_extracted_facts_total{event=\"UPDATE\"} 1"),
        "{text}"
    );
}

#[test]
fn bad_extract_requests_get_the_error_shape_and_write_nothing() {
    let s = TestServer::open();
    let before = s.engine.stats().expect("stats").total;
    for (body, status) in [
        (json!({"user_id": "a", "messages": []}), 422),
        (
            json!({"user_id": "a", "messages": [{"role": "robot", "content": "x"}]}),
            422,
        ),
        (
            json!({"user_id": "a", "messages": [{"role": "user", "content": "  "}]}),
            422,
        ),
        (
            json!({"user_id": "", "messages": [{"role": "user", "content": "I like tea"}]}),
            422,
        ),
        (
            json!({"user_id": "a", "messages": [{"role": "user", "content": "x", "created_at": "May"}]}),
            422,
        ),
        (
            json!({"user_id": "a", "namespace": "_muisti.history", "messages": [{"role": "user", "content": "x"}]}),
            422,
        ),
        (
            json!({"user_id": "a", "messages": [{"role": "user", "content": "x"}], "tenant": "b"}),
            422,
        ),
        (json!({"messages": [{"role": "user", "content": "x"}]}), 422),
        (json!({"user_id": "a", "messages": "I like tea"}), 422),
    ] {
        let r = post(&s, "/v1/memories/extract", &body, None);
        assert_eq!(r.status, status, "{body}: {}", r.body);
        r.code();
    }
    assert_eq!(s.engine.stats().expect("stats").total, before);
}

#[test]
fn a_tenants_extraction_stays_in_its_tenant() {
    let mut keys = Vec::new();
    let s = TestServer::start_with(ConfigLayer::default(), |ring| {
        keys.push(ring.create("acme", false, None).expect("key"));
        keys.push(ring.create("globex", false, None).expect("key"));
    });
    let body =
        json!({"user_id": "ana", "messages": [{"role": "user", "content": "I live in Oslo."}]});
    let r = post(&s, "/v1/memories/extract", &body, Some(&keys[0].key));
    assert_eq!(r.status, 200, "{}", r.body);
    let tenant = |t: &str| {
        s.engine
            .with_tenant(muisti::Tenant::new(t).expect("tenant"))
    };
    let count = |t: &str| learned(&tenant(t), "ana").len();
    assert_eq!((count("acme"), count("globex")), (1, 0));
    // The same words in the other tenant are news there, not a restatement.
    let r = post(&s, "/v1/memories/extract", &body, Some(&keys[1].key));
    assert_eq!(events(&r), ["ADD"]);
}

#[test]
fn the_model_extracts_and_manages_when_the_server_has_one() {
    let facts = json!({"facts": [{"text": "I live in Lisbon", "type": "fact", "message": 0,
        "retract": false, "inferred": false, "confidence": null, "date": null}]});
    let model = Scripted::start(vec![
        openai_reply(&facts.to_string()),
        openai_tool_call("search", json!({"query": "where do I live"})),
        openai_reply("You live in Lisbon."),
        openai_tool_call("list", json!({})),
        openai_reply("One memory: you live in Lisbon."),
    ]);
    let s = TestServer::start_with(
        ConfigLayer {
            llm_base_url: Some(model.base_url()),
            llm_model: Some("m".into()),
            llm_judge_conflicts: Some(false),
            ..ConfigLayer::default()
        },
        |_| {},
    );
    let r = post(
        &s,
        "/v1/memories/extract",
        &json!({"user_id": "ana", "messages": [{"role": "user", "content": "Lisbon is home."}]}),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(events(&r), ["ADD"]);
    assert_eq!(r.body["extractor"], "openai:m");
    assert_eq!(r.body["usage"]["calls"], 1);
    assert_eq!(r.body["usage"]["input_tokens"], 11);
    let r = post(
        &s,
        "/v1/manage",
        &json!({"command": "where do I live?", "user_id": "ana"}),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["answer"], "You live in Lisbon.");
    assert_eq!(r.body["actions"][0]["tool"], "search");
    assert!(
        r.body["actions"][0]["result"]
            .as_str()
            .is_some_and(|t| t.contains("I live in Lisbon")),
        "{}",
        r.body
    );
    assert_eq!(r.body["pending"], json!([]));
    assert_eq!(r.body["usage"]["calls"], 2);
    let m = raw("GET", &s.url("/metrics"), &[], None);
    let text = m.body.as_str().expect("text");
    assert!(
        text.contains("muisti_model_calls_total{operation=\"extract\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("muisti_model_calls_total{operation=\"manage\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("muisti_model_tokens_total{operation=\"manage\",kind=\"input\"} 41"),
        "{text}"
    );
    // The manager as an MCP tool, with the same model.
    let r = mcp_call(
        &s,
        "manage",
        json!({"command": "what do you know?", "user_id": "ana"}),
    );
    let done = &r["result"]["structuredContent"];
    assert_eq!(done["answer"], "One memory: you live in Lisbon.", "{r}");
    assert_eq!(done["actions"][0]["tool"], "list", "{r}");
    // A blank command is refused before the model is asked.
    let r = post(
        &s,
        "/v1/manage",
        &json!({"command": " ", "user_id": "ana"}),
        None,
    );
    assert_eq!(r.status, 422, "{}", r.body);
    // Without a model, the manager is off.
    let s = TestServer::open();
    let r = post(
        &s,
        "/v1/manage",
        &json!({"command": "hi", "user_id": "ana"}),
        None,
    );
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "chat_not_configured");
}

/// One MCP tool call over `/mcp` (after an initialize): the JSON-RPC answer.
fn mcp_call(s: &TestServer, tool: &str, arguments: Value) -> Value {
    let accept = ("accept", "application/json, text/event-stream");
    let version = ("mcp-protocol-version", "2025-06-18");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let r = raw("POST", &s.url("/mcp"), &[JSON, accept], Some(init));
    assert_eq!(r.status, 200, "{:?}", r.body);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let r = raw(
        "POST",
        &s.url("/mcp"),
        &[JSON, accept, version],
        Some(&call.to_string()),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

#[test]
fn mcp_remembers_a_conversation() {
    let s = TestServer::open();
    let r = mcp_call(
        &s,
        "remember_conversation",
        json!({"user_id": "ana", "messages": [
            {"role": "user", "content": "Always answer in Portuguese."}]}),
    );
    let done = &r["result"]["structuredContent"];
    assert_eq!(done["results"][0]["event"], "ADD", "{r}");
    assert_eq!(done["results"][0]["type"], "rule");
    // Without a model the manager tool says it is off.
    let r = mcp_call(&s, "manage", json!({"command": "hi", "user_id": "ana"}));
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no chat model")),
        "{r}"
    );
}

#[test]
fn background_extraction_answers_at_once_and_reads_later() {
    let s = TestServer::start_with(
        ConfigLayer {
            extract_quiet_secs: Some(0),
            ..ConfigLayer::default()
        },
        |_| {},
    );
    let r = post(
        &s,
        "/v1/memories/extract",
        &json!({"user_id": "ana", "background": true, "session_id": "c1",
            "messages": [{"role": "user", "content": "I work as a pilot."}]}),
        None,
    );
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["queued"], 1);
    let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let n = learned(&s.engine, "ana").len();
        if n == 1 {
            break;
        }
        assert!(std::time::Instant::now() < until, "never read");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Without inference there is nothing to read in the background.
    let r = post(
        &s,
        "/v1/memories/extract",
        &json!({"user_id": "ana", "background": true, "infer": false,
            "messages": [{"role": "user", "content": "hello"}]}),
        None,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.code(), "conflicting_fields");
}
