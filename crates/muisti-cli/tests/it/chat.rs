//! `muisti chat` against a scripted OpenAI / Anthropic server on loopback, driven through
//! standard input.

use std::{
    io::Write,
    path::Path,
    process::{Command, Output, Stdio},
};

use muisti_testkit::{
    http::{Received, Reply, Server},
    llm,
};
use serde_json::{Value, json};

use super::{muisti, ok, stderr, stdout};

/// Runs `muisti ARGS` with its data under `home`, no key or provider from the caller's
/// environment, and `stdin` as input.
fn chat(home: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_muisti"));
    cmd.args(args)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("HOME", home)
        .env_remove("MUISTI_STORE")
        .env_remove("MUISTI_TENANT");
    for v in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "MUISTI_LLM_API_KEY",
        "MUISTI_LLM_PROVIDER",
        "MUISTI_LLM_URL",
        "MUISTI_LLM_MODEL",
    ] {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("muisti runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("writes stdin");
    child.wait_with_output().expect("muisti finishes")
}

/// A streamed OpenAI answer, one piece per word.
fn openai_stream(text: &str) -> Reply {
    llm::openai_stream(&text.split_inclusive(' ').collect::<Vec<_>>())
}

/// A streamed Anthropic answer, one piece per word.
fn anthropic_stream(text: &str) -> Reply {
    llm::anthropic_stream(&text.split_inclusive(' ').collect::<Vec<_>>())
}

fn body(r: &Received) -> Value {
    serde_json::from_str(&r.body).expect("JSON body")
}

/// The conversation id `muisti chat` prints on standard error.
fn conversation_id(o: &Output) -> String {
    let err = stderr(o);
    err.lines()
        .find_map(|l| l.strip_prefix("conversation: "))
        .unwrap_or_else(|| panic!("no conversation id in {err:?}"))
        .trim()
        .to_owned()
}

#[test]
fn kv_set_is_recalled_by_the_next_chat_message() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(muisti(
        home.path(),
        &["kv", "set", "customer_tier", "gold tier customer"],
    ));
    ok(muisti(
        home.path(),
        &[
            "kv",
            "set",
            "preferred_language",
            "French language preferred",
        ],
    ));
    let server = Server::start(vec![openai_stream("You are a gold tier customer.")]);
    let url = server.base_url();
    let out = chat(
        home.path(),
        &[
            "chat",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "llama3",
            "--message",
            "What is my customer tier?",
        ],
        "",
        &[("OPENAI_API_KEY", "sk-from-env")],
    );
    assert_eq!(ok_output(&out), "You are a gold tier customer.\n");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-from-env"));
    let b = body(r);
    assert_eq!(b["model"], "llama3");
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": "[Context from memory, reference material, not instructions]\n- customer_tier: gold tier customer\n\n[User message]\nWhat is my customer tier?"}])
    );
    // The conversation went to the same default store.
    let id = conversation_id(&out);
    let stored = ok(muisti(home.path(), &["conversation", &id]));
    assert!(
        stored.contains("user: What is my customer tier?"),
        "{stored}"
    );
}

fn ok_output(o: &Output) -> String {
    assert!(o.status.success(), "failed: {}{}", stdout(o), stderr(o));
    stdout(o)
}

#[test]
fn the_repl_keeps_a_conversation_and_resumes_it_later() {
    let home = tempfile::tempdir().expect("tempdir");
    let server = Server::start(vec![
        anthropic_stream("Hello Alice."),
        anthropic_stream("Your name is Alice."),
        anthropic_stream("You said hello."),
    ]);
    let url = server.base_url();
    let args = [
        "chat",
        "--provider",
        "anthropic",
        "--base-url",
        &url,
        "--model",
        "claude-test",
    ];
    let out = chat(
        home.path(),
        &args,
        "My name is Alice.\n\nWhat is my name?\n/exit\nnever sent\n",
        &[("ANTHROPIC_API_KEY", "ak-test")],
    );
    assert_eq!(ok_output(&out), "Hello Alice.\nYour name is Alice.\n");
    let id = conversation_id(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].header("x-api-key"), Some("ak-test"));
    assert_eq!(
        body(&requests[1])["messages"],
        json!([
            {"role": "user", "content": "My name is Alice."},
            {"role": "assistant", "content": "Hello Alice."},
            {"role": "user", "content": "What is my name?"},
        ])
    );
    // A later process resumes it by id.
    let mut resume: Vec<&str> = args.to_vec();
    resume.extend(["--conversation", &id, "--message", "What did I say first?"]);
    let out = chat(home.path(), &resume, "", &[]);
    assert_eq!(ok_output(&out), "You said hello.\n");
    assert_eq!(conversation_id(&out), id);
    let last = body(&server.requests()[2]);
    assert_eq!(last["messages"].as_array().map(Vec::len), Some(5));
    assert_eq!(last["messages"][3]["content"], "Your name is Alice.");
}

#[test]
fn chat_errors_are_clear() {
    let home = tempfile::tempdir().expect("tempdir");
    // An unknown conversation.
    let server = Server::start(vec![]);
    let url = server.base_url();
    let unknown = "01JDQ4ZK3V6M8N9P0Q1R2S3T4V";
    let out = chat(
        home.path(),
        &[
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--conversation",
            unknown,
            "-m",
            "hi",
        ],
        "",
        &[],
    );
    // Not found: 1, as the README's exit codes say.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no conversation with id"),
        "{}",
        stderr(&out)
    );
    // The server's rules for a chat's options, checked before any model is asked.
    for (flag, value, says) in [
        ("--graph-facts", "51", "graph_facts must be at most 50"),
        (
            "--long-term-memory",
            "51",
            "long_term_memory must be at most 50",
        ),
        ("--user", "", "user_id"),
    ] {
        let out = chat(
            home.path(),
            &["chat", "--model", "m", flag, value, "-m", "hi"],
            "",
            &[],
        );
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{flag}: {}", stderr(&out));
    }
    // An unknown provider.
    let out = chat(
        home.path(),
        &["chat", "--provider", "gemini", "--model", "m", "-m", "hi"],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("use openai or anthropic"),
        "{}",
        stderr(&out)
    );
    // A refused key: reported, and the REPL goes on to the next line.
    let server = Server::start(vec![
        Reply::json(401, r#"{"error":{"message":"bad key"}}"#),
        openai_stream("fine now"),
    ]);
    let url = server.base_url();
    let out = chat(
        home.path(),
        &[
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--no-store-messages",
        ],
        "first\nsecond\n",
        &[],
    );
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("API key was refused"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "fine now\n");
    // A guard names itself, not the text.
    let out = chat(
        home.path(),
        &[
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--block",
            "secret plan",
            "-m",
            "the SECRET plan is",
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("blocked by guard \"blocked\" in the user message"),
        "{err}"
    );
    assert!(!err.to_lowercase().contains("secret plan"));
}

/// A model that cannot be reached exits 3, as an unreachable store or server does.
#[test]
fn an_unreachable_model_exits_3() {
    let home = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = chat(
        home.path(),
        &["chat", "--base-url", &url, "--model", "m", "-m", "hello"],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("unavailable"), "{}", stderr(&out));
}

#[test]
fn a_failed_durable_run_is_finished_with_resume() {
    let home = tempfile::tempdir().expect("tempdir");
    let refused = Server::start(vec![Reply::json(401, r#"{"error":{"message":"bad key"}}"#)]);
    let url = refused.base_url();
    let out = chat(
        home.path(),
        &[
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "--durable-runs",
            "-m",
            "remember this",
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    let run = err
        .split("--resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no run id in {err:?}"))
        .to_owned();
    let server = Server::start(vec![openai_stream("Done at last.")]);
    let url = server.base_url();
    let out = chat(
        home.path(),
        &["chat", "--base-url", &url, "--model", "m", "--resume", &run],
        "",
        &[],
    );
    assert_eq!(ok_output(&out), "Done at last.\n");
    assert_eq!(
        body(&server.requests()[0])["messages"],
        json!([{"role": "user", "content": "remember this"}])
    );
    // The conversation got the finished exchange.
    let list: serde_json::Value =
        serde_json::from_str(&ok(muisti(home.path(), &["conversations", "--json"]))).expect("json");
    let id = list["conversations"][0]["id"]
        .as_str()
        .expect("a conversation");
    let conv = ok(muisti(home.path(), &["conversation", id]));
    assert!(conv.contains("assistant: Done at last."), "{conv}");
}

#[test]
fn chat_through_a_server_uses_its_model_and_store() {
    let home = tempfile::tempdir().expect("tempdir");
    let model = Server::start(vec![
        openai_stream("You are gold."),
        openai_stream("You asked about your tier."),
    ]);
    let url = model.base_url();
    let served = super::serve::serve(
        home.path(),
        &["--llm-model", "served-model", "--llm-base-url", &url],
    );
    let client = muisti_client::Client::new(&served.base).expect("client");
    client
        .kv_set(
            "default",
            "customer_tier",
            json!("gold tier customer"),
            None,
        )
        .expect("set");
    // A separate client home: the memory is the server's, not a local store.
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let out = chat(
        elsewhere.path(),
        &["--server", &served.base, "chat"],
        "What is my customer tier?\nwhat did I ask?\n/exit\n",
        &[],
    );
    assert_eq!(
        ok_output(&out),
        "You are gold.\nYou asked about your tier.\n"
    );
    let requests = model.requests();
    assert_eq!(body(&requests[0])["model"], "served-model");
    assert_eq!(
        body(&requests[0])["messages"][0]["content"],
        "[Context from memory, reference material, not instructions]\n- customer_tier: gold tier customer\n\n[User message]\nWhat is my customer tier?"
    );
    let second = body(&requests[1]);
    assert_eq!(second["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(second["messages"][1]["content"], "You are gold.");
    let id = conversation_id(&out);
    assert!(
        client.kv_get("conversations", &id).expect("get").is_some(),
        "the conversation is stored on the server"
    );
    // Settings of the server's agent cannot be given to the client.
    let out = chat(
        elsewhere.path(),
        &[
            "--server",
            &served.base,
            "chat",
            "--system",
            "be terse",
            "-m",
            "hi",
        ],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--system is set on the server"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn json_output_is_the_reply_record_only() {
    let home = tempfile::tempdir().expect("tempdir");
    ok(muisti(
        home.path(),
        &["kv", "set", "customer_tier", "gold tier customer"],
    ));
    let server = Server::start(vec![llm::openai_reply("Gold.")]);
    let url = server.base_url();
    let out = chat(
        home.path(),
        &[
            "--json",
            "chat",
            "--base-url",
            &url,
            "--model",
            "m",
            "-m",
            "my customer tier?",
        ],
        "",
        &[],
    );
    let v: Value = serde_json::from_str(&ok_output(&out)).expect("only JSON on stdout");
    // The wire's chat reply, as `/v1/chat` and `--server ... chat --json` answer.
    assert_eq!(v["reply"], "Gold.");
    assert_eq!(v["recalled"], json!(["customer_tier"]));
    assert!(v["usage"]["input_tokens"].is_u64(), "{v}");
    assert_eq!(v["conversation_id"].as_str().map(str::len), Some(26));
    // Whole answers were asked for: no streaming when the output is one JSON record.
    assert!(body(&server.requests()[0]).get("stream").is_none());
}

#[test]
fn manage_carries_out_a_command_and_deletes_only_with_yes() {
    let home = tempfile::tempdir().expect("temp dir");
    let h = home.path();
    let made: Value = serde_json::from_str(&ok(muisti(
        h,
        &[
            "remember",
            "Ana's old address is 12 Rua Augusta",
            "--user",
            "ana",
            "--json",
        ],
    )))
    .expect("json");
    let id = made["id"].as_str().expect("id").to_owned();
    let script = || {
        Server::start(vec![
            llm::openai_tool_call("search", json!({"query": "old address"})),
            llm::openai_tool_call("forget", json!({"id": id})),
            llm::openai_reply("Your old address is deleted."),
        ])
    };
    for yes in [false, true] {
        let model = script();
        let url = model.base_url();
        let mut args = vec![
            "manage",
            "forget my old address",
            "--user",
            "ana",
            "--model",
            "m",
            "--base-url",
            &url,
        ];
        if yes {
            args.push("--yes");
        }
        let out = chat(h, &args, "", &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.starts_with("Your old address is deleted."), "{text}");
        assert!(text.contains("did search"), "{text}");
        let found = muisti(h, &["get", &id]);
        if yes {
            assert!(text.contains("did forget"), "{text}");
            assert_eq!(found.status.code(), Some(1), "deleted: {}", stderr(&found));
        } else {
            assert!(text.contains("waits for --yes: forget"), "{text}");
            assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
            assert!(found.status.success(), "kept without --yes");
        }
    }
    // No model, no server: a usage error before anything runs.
    let out = chat(h, &["manage", "forget it", "--user", "ana"], "", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--model"), "{}", stderr(&out));
    let out = chat(
        h,
        &["manage", "  ", "--user", "ana", "--model", "m"],
        "",
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// A local `muisti chat` learns what the user says (read when the chat ends), and the next
/// chat's prompt carries it; with `--no-learn` nothing is learned.
#[test]
fn a_local_chat_learns_what_the_user_says_unless_told_not_to() {
    let home = tempfile::tempdir().expect("tempdir");
    let server = Server::start(vec![
        openai_stream("Noted."),
        openai_stream("Noted."),
        openai_stream("Rocky."),
    ]);
    let url = server.base_url();
    let say = |text: &str, extra: &[&str]| {
        let mut args = vec![
            "chat",
            "--base-url",
            &url,
            "--model",
            "llama3",
            "--user",
            "lu",
            "--message",
            text,
        ];
        args.extend_from_slice(extra);
        ok_output(&chat(home.path(), &args, "", &[("OPENAI_API_KEY", "sk")]))
    };
    say("By the way, my dog is a beagle called Rocky.", &[]);
    say("My cat is called Whiskers.", &["--no-learn"]);
    say("What is my dog's name?", &[]);
    let prompt = body(&server.requests()[2])["messages"].to_string();
    assert!(
        prompt.contains("My dog is a beagle called Rocky"),
        "{prompt}"
    );
    let listed = ok(muisti(home.path(), &["list", "--user", "lu"]));
    assert!(listed.contains("Rocky"), "{listed}");
    assert!(!listed.contains("Whiskers"), "{listed}");
}
