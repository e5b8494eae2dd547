//! Conversations across a restart, privacy mode and durable runs.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use muisti::{Engine, Namespace};
use muisti_agent::{AgentError, AgentErrorKind, ProviderKind, RunStatus, Tool};
use muisti_testkit::http::{Reply, Server};
use serde_json::json;

use super::*;

fn sqlite(dir: &tempfile::TempDir) -> Engine {
    Engine::open(&format!(
        "sqlite://{}",
        dir.path().join("muisti.db").display()
    ))
    .expect("engine")
}

fn count(memory: &Engine, namespace: &str) -> u64 {
    memory
        .count(&Namespace::new(namespace).expect("ns"), &Default::default())
        .expect("count")
}

#[test]
fn a_conversation_resumes_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let id = {
        let memory = sqlite(&dir);
        let server = Server::start(vec![openai_reply("Hello Alice."), openai_reply("Noted.")]);
        let agent = agent(ProviderKind::OpenAi, &server, &memory)
            .build()
            .expect("agent");
        let conv = agent.conversation().expect("conversation");
        assert_eq!(conv.id.len(), 26, "a ULID");
        let t1 = agent
            .send_in_conversation(&conv, "My name is Alice.")
            .expect("turn 1");
        let t2 = agent
            .send_in_conversation(&t1.conversation, "I live in Lyon.")
            .expect("turn 2");
        assert_eq!(t2.conversation.messages.len(), 4);
        // The second request carried the first exchange.
        let second = body(&server.requests()[1]);
        assert_eq!(
            second["messages"],
            json!([
                {"role": "user", "content": "My name is Alice."},
                {"role": "assistant", "content": "Hello Alice."},
                {"role": "user", "content": "I live in Lyon."},
            ])
        );
        conv.id
    };
    // A new process: a new engine over the same file, a new agent.
    let memory = sqlite(&dir);
    let server = Server::start(vec![anthropic_reply("Your name is Alice.")]);
    let agent = agent(ProviderKind::Anthropic, &server, &memory)
        .build()
        .expect("agent");
    let conv = agent.conversation_by_id(&id).expect("resumed");
    assert_eq!(conv.id, id);
    assert_eq!(conv.messages.len(), 4);
    let turn = agent
        .send_in_conversation(&conv, "What is my name?")
        .expect("turn 3");
    assert_eq!(turn.reply.text, "Your name is Alice.");
    let b = body(&server.requests()[0]);
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": "My name is Alice."},
            {"role": "assistant", "content": "Hello Alice."},
            {"role": "user", "content": "I live in Lyon."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "What is my name?"},
        ])
    );
    assert_eq!(
        agent
            .conversation_by_id(&id)
            .expect("stored")
            .messages
            .len(),
        6
    );
}

#[test]
fn an_unknown_conversation_is_not_found_unless_asked_for_a_new_one() {
    let memory = memory();
    let server = Server::start(vec![openai_reply("hi")]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let unknown = muisti::MemoryId::generate().to_string();
    let err = agent.conversation_by_id(&unknown).expect_err("unknown");
    assert!(matches!(
        err,
        AgentError::NotFound {
            what: "conversation",
            ..
        }
    ));
    let err = agent.conversation_by_id("not a ulid").expect_err("invalid");
    assert_eq!(err.kind(), AgentErrorKind::InvalidInput);
    let fresh = agent.conversation_or_new(&unknown).expect("new");
    assert_ne!(fresh.id, unknown);
    assert!(fresh.messages.is_empty());
    // A conversation is stored with its first exchange.
    assert!(agent.conversation_by_id(&fresh.id).is_err());
    agent.send_in_conversation(&fresh, "hello").expect("turn");
    let again = agent.conversation_or_new(&fresh.id).expect("same");
    assert_eq!(
        (again.id.as_str(), again.messages.len()),
        (fresh.id.as_str(), 2)
    );
}

#[test]
fn a_conversation_that_is_not_json_of_a_conversation_is_reported_as_corrupted() {
    let memory = memory();
    let id = muisti::MemoryId::generate().to_string();
    memory
        .kv()
        .set(
            &Namespace::new("conversations").expect("ns"),
            &id,
            json!({"id": 5}),
            None,
        )
        .expect("set");
    let server = Server::start(vec![]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let err = agent.conversation_by_id(&id).expect_err("corrupted");
    assert!(matches!(err, AgentError::Memory(ref e) if e.kind() == muisti::ErrorKind::Corrupted));
}

#[test]
fn with_store_messages_off_nothing_is_written_and_recall_still_works() {
    let memory = seed_memory();
    let before = memory.stats().expect("stats").total;
    let server = Server::start(vec![openai_reply("one"), openai_reply("two")]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .store_messages(false)
        .durable_runs(true)
        .build()
        .expect("agent");
    let conv = agent.conversation().expect("conversation");
    let t1 = agent
        .send_in_conversation(&conv, "What discount do I get for my customer tier?")
        .expect("turn 1");
    // Reads pass through: the memory was injected.
    assert_eq!(t1.reply.recalled, ["customer_tier", "discount_rule"]);
    agent
        .send_in_conversation(&t1.conversation, "and my name is Bob")
        .expect("turn 2");
    // No conversation row, no run, no message text anywhere in the store.
    assert_eq!(count(&memory, "conversations"), 0);
    assert_eq!(count(&memory, "runs"), 0);
    assert_eq!(memory.stats().expect("stats").total, before);
    let hits = memory
        .search(&Namespace::default_ns(), "Bob", 10, Default::default())
        .expect("search");
    assert!(hits.iter().all(|h| !h.memory.text().contains("Bob")));
    // So the conversation cannot be resumed: it starts empty.
    assert!(matches!(
        agent.conversation_by_id(&conv.id),
        Err(AgentError::NotFound { .. })
    ));
    assert!(
        agent
            .conversation_or_new(&conv.id)
            .expect("new")
            .messages
            .is_empty()
    );
    // Forget and flush still pass through the wrapped memory.
    let wrapped = agent.memory().expect("memory");
    assert!(
        wrapped
            .kv()
            .forget(&Namespace::default_ns(), "preferred_language")
            .expect("forget")
    );
    assert_eq!(count(&memory, "default"), 2);
    assert_eq!(
        wrapped.kv().flush(&Namespace::default_ns()).expect("flush"),
        2
    );
    assert_eq!(count(&memory, "default"), 0);
}

#[test]
fn durable_runs_need_memory() {
    let server = Server::start(vec![]);
    let err = muisti_agent::Agent::builder()
        .provider(provider(ProviderKind::OpenAi, &server))
        .durable_runs(true)
        .build()
        .err()
        .expect("refused");
    assert_eq!(err.kind(), AgentErrorKind::InvalidInput);
}

#[test]
fn an_interrupted_durable_run_resumes_by_id_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = {
        let calls = Arc::clone(&calls);
        Tool::new(
            "lookup_order",
            "Looks up an order",
            json!({"type": "object", "properties": {"id": {"type": "string"}}}),
            move |args| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(format!(
                    "order {} shipped",
                    args["id"].as_str().unwrap_or("?")
                ))
            },
        )
    };
    let (run_id, conv_id) = {
        let memory = sqlite(&dir);
        set(&memory, "order_policy", "orders ship within two days");
        // The model asks for the tool, then the provider fails for good.
        let server = Server::start(vec![
            Reply::json(
                200,
                json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": "{\"id\":\"A7\"}"}}
                ]}, "finish_reason": "tool_calls"}]})
                .to_string(),
            ),
            Reply::json(503, "down"),
        ]);
        let mut c = config(ProviderKind::OpenAi, &server);
        c.max_attempts = 1;
        let agent = muisti_agent::Agent::builder()
            .memory(memory.clone())
            .provider(c.connect().expect("provider"))
            .tool(tool.clone())
            .durable_runs(true)
            .build()
            .expect("agent");
        let conv = agent.conversation().expect("conversation");
        let err = agent
            .send_in_conversation(&conv, "did order A7 ship?")
            .expect_err("interrupted");
        assert_eq!(err.kind(), AgentErrorKind::Unavailable);
        let unfinished = agent.unfinished_runs().expect("runs");
        assert_eq!(unfinished.len(), 1);
        let run_id = unfinished[0].id.clone();
        assert_eq!(
            unfinished[0].conversation_id.as_deref(),
            Some(conv.id.as_str())
        );
        let run = agent.run(&run_id).expect("run");
        assert_eq!(run.status, RunStatus::Failed);
        assert_eq!(run.steps, 1);
        assert!(
            run.error
                .as_deref()
                .is_some_and(|e| e.starts_with("unavailable"))
        );
        assert_eq!(run.recalled, ["order_policy"]);
        (run_id, conv.id)
    };
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // After a restart the run continues from its last step: the tool is not run again.
    let memory = sqlite(&dir);
    let server = Server::start(vec![openai_reply("Yes, A7 shipped.")]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .tool(tool)
        .durable_runs(true)
        .build()
        .expect("agent");
    let reply = agent.resume(&run_id).expect("resumed");
    assert_eq!(reply.text, "Yes, A7 shipped.");
    assert_eq!(reply.run_id.as_deref(), Some(run_id.as_str()));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let b = body(&server.requests()[0]);
    let messages = b["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[0]["content"],
        expected_prompt(
            &["- order_policy: orders ship within two days"],
            "did order A7 ship?"
        )
    );
    assert_eq!(
        messages[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "order A7 shipped"})
    );
    assert_eq!(
        agent.run(&run_id).expect("run").status,
        RunStatus::Completed
    );
    assert!(agent.unfinished_runs().expect("runs").is_empty());
    // A completed run is kept for the retention period, then expires.
    let kept = memory
        .get(&muisti::Locator::Key {
            partition: memory.partition(&Namespace::new("runs").expect("ns")),
            key: muisti::Key::new(run_id.as_str()).expect("key"),
        })
        .expect("get")
        .expect("kept");
    assert!(kept.expires_at.is_some());
    // The conversation got the exchange; resuming a completed run returns its reply again.
    let conv = agent.conversation_by_id(&conv_id).expect("conversation");
    assert_eq!(conv.messages.len(), 2);
    assert_eq!(conv.messages[1].content, "Yes, A7 shipped.");
    assert_eq!(
        agent.resume(&run_id).expect("again").text,
        "Yes, A7 shipped."
    );
    assert_eq!(server.requests().len(), 1);
    assert!(matches!(
        agent.resume(&muisti::MemoryId::generate().to_string()),
        Err(AgentError::NotFound { what: "run", .. })
    ));
}

#[test]
fn the_history_sent_is_the_latest_messages_starting_at_a_user_message() {
    let memory = memory();
    let server = Server::start(vec![
        openai_reply("r1"),
        openai_reply("r2"),
        openai_reply("r3"),
        openai_reply("r4"),
    ]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .history(3)
        .build()
        .expect("agent");
    let mut conv = agent.conversation().expect("conversation");
    for m in ["m1", "m2", "m3", "m4"] {
        conv = agent
            .send_in_conversation(&conv, m)
            .expect("turn")
            .conversation;
    }
    // Three earlier messages would start at the assistant's "r2": the history starts at
    // the next user message instead.
    assert_eq!(
        body(&server.requests()[3])["messages"],
        json!([
            {"role": "user", "content": "m3"},
            {"role": "assistant", "content": "r3"},
            {"role": "user", "content": "m4"},
        ])
    );
    assert_eq!(
        conv.messages.len(),
        8,
        "the stored conversation keeps everything"
    );
}

#[test]
fn an_oversized_message_is_refused_before_the_model_is_called() {
    let memory = memory();
    let server = Server::start(vec![]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let huge = "a".repeat(muisti_agent::MAX_MESSAGE_BYTES + 1);
    let err = agent.send(&huge).expect_err("too large");
    assert_eq!(err.kind(), AgentErrorKind::InvalidInput);
    assert!(agent.send(" \n").is_err());
    assert!(server.requests().is_empty());
}

#[test]
fn a_stale_copy_of_a_conversation_appends_after_the_stored_exchanges() {
    let memory = memory();
    let server = Server::start(vec![openai_reply("r1"), openai_reply("r2")]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let conv = agent.conversation().expect("conversation");
    // Two clients hold the same (empty) conversation; each sends one message.
    let first = agent.send_in_conversation(&conv, "m1").expect("first");
    let second = agent.send_in_conversation(&conv, "m2").expect("second");
    assert_eq!(first.conversation.messages.len(), 2);
    let contents: Vec<&str> = second
        .conversation
        .messages
        .iter()
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(contents, ["m1", "r1", "m2", "r2"]);
    let stored = agent.conversation_by_id(&conv.id).expect("stored");
    assert_eq!(stored.messages.len(), 4, "neither exchange is lost");
}

#[test]
fn the_history_sent_stays_within_its_byte_budget() {
    let memory = memory();
    let server = Server::start(vec![
        openai_reply("r1"),
        openai_reply("r2"),
        openai_reply("r3"),
    ]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let big = |c: char| c.to_string().repeat(200 * 1024);
    let mut conv = agent.conversation().expect("conversation");
    for c in ['a', 'b'] {
        conv = agent
            .send_in_conversation(&conv, &big(c))
            .expect("turn")
            .conversation;
    }
    agent.send_in_conversation(&conv, "small").expect("turn");
    // 2 x 200 KiB of history would pass the 384 KiB budget: only the latest exchange goes.
    let sent = body(&server.requests()[2]);
    let messages = sent["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    assert!(
        messages[0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with('b'))
    );
}

#[test]
fn a_run_stopped_by_the_step_limit_gets_a_new_budget_when_resumed() {
    let call = || {
        Reply::json(
            200,
            json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "noop", "arguments": "{}"}}
            ]}, "finish_reason": "tool_calls"}]})
            .to_string(),
        )
    };
    let memory = memory();
    let server = Server::start(vec![call(), openai_reply("finally")]);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .tool(Tool::new(
            "noop",
            "does nothing",
            json!({"type": "object"}),
            |_| Ok("done".into()),
        ))
        .durable_runs(true)
        .max_steps(1)
        .build()
        .expect("agent");
    let err = agent.send("go").expect_err("step limit");
    assert_eq!(err.kind(), AgentErrorKind::StepLimit);
    let run = agent.unfinished_runs().expect("runs").remove(0);
    assert_eq!(agent.resume(&run.id).expect("resumed").text, "finally");
}
