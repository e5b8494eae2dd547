//! The memory manager against a scripted model that calls its tools: each tool, the
//! confirmation of deletes, the history with the command as the actor, and one user's
//! memory out of another's reach.

use muisti::{Category, Engine, Locator, MemoryScope, Namespace, Put};
use muisti_agent::{Command, Manager, ProviderKind};
use muisti_testkit::{
    http::Server,
    llm::{openai_reply, openai_tool_call},
};
use serde_json::{Value, json};

use super::{body, provider};

fn remember(engine: &Engine, user: &str, text: &str, kind: Option<Category>) -> muisti::Memory {
    let mut put = Put::new(
        engine.partition(&Namespace::default_ns()),
        None,
        json!(text),
    );
    put.owner.user_id = Some(user.into());
    if let Some(k) = kind {
        put.scope = MemoryScope::Declarative;
        put.category = k;
    }
    engine.remember(put).expect("remember").memory
}

fn command(text: &str, yes: bool) -> Command {
    Command {
        text: text.into(),
        user_id: "ana".into(),
        namespace: Namespace::default_ns(),
        yes,
    }
}

fn exists(engine: &Engine, m: &muisti::Memory) -> bool {
    engine
        .get(&Locator::Id {
            tenant: engine.tenant().clone(),
            id: m.id,
        })
        .expect("get")
        .is_some()
}

#[test]
fn a_delete_waits_for_yes_and_is_recorded_with_the_command() {
    let engine = Engine::open("mem://").expect("engine");
    let old = remember(
        &engine,
        "ana",
        "Ana's address is 12 Rua Augusta, Lisbon",
        None,
    );
    let keep = remember(&engine, "ana", "I like jazz", Some(Category::Preference));
    let script = || {
        vec![
            openai_tool_call("search", json!({"query": "address"})),
            openai_tool_call("forget", json!({"id": old.id.to_string()})),
            openai_reply("Your old address is deleted."),
        ]
    };
    // Without yes: the delete is pending, nothing is deleted.
    let server = Server::start(script());
    let manager = Manager::new(provider(ProviderKind::OpenAi, &server));
    let done = manager
        .run(&engine, &command("forget my old address", false))
        .expect("run");
    assert_eq!(done.actions.len(), 1, "{done:?}");
    assert_eq!(done.actions[0].tool, "search");
    assert!(
        done.actions[0].result.contains(&old.id.to_string()),
        "{done:?}"
    );
    assert_eq!(done.pending.len(), 1);
    assert_eq!(done.pending[0].tool, "forget");
    assert_eq!(done.calls, 3);
    assert_eq!(done.usage.input_tokens, 71);
    assert!(exists(&engine, &old), "not deleted without yes");
    // The model was told the delete waits.
    let requests = server.requests();
    let last = body(&requests[2]);
    let told = last["messages"]
        .as_array()
        .and_then(|m| m.last())
        .map(|m| m["content"].to_string())
        .unwrap_or_default();
    assert!(told.contains("pending"), "{last}");
    // The tools are offered with their schemas.
    let first = body(&requests[0]);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(
        offered,
        [
            "search",
            "get",
            "list",
            "remember",
            "update",
            "forget",
            "forget_many",
            "graph",
            "stats"
        ]
    );

    // With yes: deleted, and its history names the command.
    let server = Server::start(script());
    let manager = Manager::new(provider(ProviderKind::OpenAi, &server));
    let done = manager
        .run(&engine, &command("forget my old address", true))
        .expect("run");
    assert!(done.pending.is_empty());
    assert_eq!(done.answer, "Your old address is deleted.");
    assert!(!exists(&engine, &old));
    assert!(exists(&engine, &keep));
    let history = engine.history(old.id).expect("history");
    let last = history.last().expect("a delete");
    assert_eq!(last.event, muisti::declarative::HistoryEvent::Delete);
    assert_eq!(last.actor, "manage: forget my old address");
    // A delete erases the text: the history keeps what happened and who did it.
    assert!(
        history.iter().all(|h| h.old.is_none() && h.new.is_none()),
        "{history:?}"
    );
}

#[test]
fn remember_update_list_get_and_stats_through_the_tools() {
    let engine = Engine::open("mem://").expect("engine");
    let job = remember(&engine, "ana", "I work at Stripe", Some(Category::Fact));
    let server = Server::start(vec![
        openai_tool_call(
            "remember",
            json!({"text": "I moved to Berlin", "type": "fact"}),
        ),
        openai_tool_call(
            "update",
            json!({"id": job.id.to_string(), "text": "I work at Spotify"}),
        ),
        openai_tool_call("list", json!({"scope": "declarative"})),
        openai_tool_call("get", json!({"id": job.id.to_string()})),
        openai_tool_call("stats", json!({})),
        openai_tool_call("graph", json!({"entity": "Ana"})),
        openai_reply("Done: noted the move and the new job."),
    ]);
    let manager = Manager::new(provider(ProviderKind::OpenAi, &server));
    let text = "I moved to Berlin and I work at Spotify now";
    let done = manager.run(&engine, &command(text, false)).expect("run");
    let tools: Vec<&str> = done.actions.iter().map(|a| a.tool.as_str()).collect();
    assert_eq!(
        tools,
        ["remember", "update", "list", "get", "stats", "graph"]
    );
    assert!(
        done.actions.iter().all(|a| !a.result.starts_with("error")),
        "{done:?}"
    );
    let entries: Vec<String> = engine
        .declarative()
        .declarative_entries(&Namespace::default_ns(), "ana")
        .expect("entries")
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert!(
        entries.contains(&"I moved to Berlin".to_owned()),
        "{entries:?}"
    );
    assert!(
        entries.contains(&"I work at Spotify".to_owned()),
        "{entries:?}"
    );
    // Both changes are in their memories' histories, made by the command.
    let history = engine.history(job.id).expect("history");
    let update = history.last().expect("the update");
    assert_eq!(update.event, muisti::declarative::HistoryEvent::Update);
    assert_eq!(update.actor, format!("manage: {text}"));
    assert_eq!(update.old.as_deref(), Some("I work at Stripe"));
    let listed: Value = serde_json::from_str(&done.actions[2].result).expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(2));
    let stats: Value = serde_json::from_str(&done.actions[4].result).expect("json");
    assert_eq!(stats["total"], 2);
}

#[test]
fn another_users_memory_is_out_of_reach() {
    let engine = Engine::open("mem://").expect("engine");
    let theirs = remember(&engine, "bo", "Bo's PIN hint is the cat's name", None);
    let server = Server::start(vec![
        openai_tool_call("get", json!({"id": theirs.id.to_string()})),
        openai_tool_call("forget", json!({"id": theirs.id.to_string()})),
        openai_tool_call("search", json!({"query": "PIN hint"})),
        openai_reply("I found nothing of yours about that."),
    ]);
    let manager = Manager::new(provider(ProviderKind::OpenAi, &server));
    let done = manager
        .run(&engine, &command("delete the PIN hint", true))
        .expect("run");
    assert!(done.actions[0].result.starts_with("error: "), "{done:?}");
    assert!(done.actions[1].result.starts_with("error: "), "{done:?}");
    assert_eq!(done.actions[2].result, "[]");
    assert!(exists(&engine, &theirs));
    // A bad command is refused before the model is called.
    let server = Server::start(vec![]);
    let manager = Manager::new(provider(ProviderKind::OpenAi, &server));
    let e = manager
        .run(&engine, &command("  ", true))
        .expect_err("refused");
    assert_eq!(e.kind(), muisti_agent::AgentErrorKind::InvalidInput);
    assert!(server.requests().is_empty());
}
