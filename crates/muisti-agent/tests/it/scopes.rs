//! The agent and the scopes: the user's declarative entries come first in every prompt
//! (rules, preferences, facts, newest first, confidence shown), scratch memories go when a
//! turn ends, short-term ones when the conversation ends.

use muisti::{Category, Engine, Filter, MemoryScope, Namespace, Owner, Put, Source};
use muisti_agent::{MAX_BLOCK_BYTES, ProviderKind};
use muisti_testkit::http::Server;

use super::*;

fn declare(memory: &Engine, user: &str, text: &str, kind: Category) -> muisti::Memory {
    let mut p = Put::new(memory.partition(&Namespace::default_ns()), None, text);
    p.scope = MemoryScope::Declarative;
    p.category = kind;
    p.owner.user_id = Some(user.into());
    memory.declare(p).expect("declare").memory
}

fn note(memory: &Engine, text: &str, scope: MemoryScope, conversation: &str) {
    let mut p = Put::new(memory.partition(&Namespace::default_ns()), None, text);
    p.scope = scope;
    p.owner = Owner {
        user_id: Some("ada".into()),
        session_id: Some(conversation.into()),
        ..Owner::default()
    };
    memory.remember(p).expect("note");
}

fn for_ada() -> Filter {
    Filter {
        user_id: Some("ada".into()),
        ..Filter::default()
    }
}

#[test]
fn declarative_entries_come_first_in_every_prompt() {
    let server = Server::start(vec![openai_reply("Bonjour."), openai_reply("Oui.")]);
    let memory = memory();
    declare(&memory, "ada", "I live in Lisbon", Category::Fact);
    declare(&memory, "ada", "Always answer in French", Category::Rule);
    declare(
        &memory,
        "ada",
        "I prefer short answers",
        Category::Preference,
    );
    declare(&memory, "bob", "Always answer in German", Category::Rule);
    // A learned entry, confirmed: its confidence is shown.
    let mut learned = Put::new(
        memory.partition(&Namespace::default_ns()),
        None,
        "Prefers meetings after 10am",
    );
    learned.scope = MemoryScope::Declarative;
    learned.category = Category::Preference;
    learned.owner.user_id = Some("ada".into());
    learned.source = Source::AgentLearned;
    learned.confidence = Some(70);
    let Err(muisti::Error::ConfirmationRequired(p)) = memory.declare(learned) else {
        panic!("the gate");
    };
    memory.confirm(&p.id.to_string()).expect("confirm");
    let mut ordinary = Put::new(
        memory.partition(&Namespace::default_ns()),
        None,
        "The weather in Lisbon is sunny",
    );
    ordinary.owner.user_id = Some("ada".into());
    memory.remember(ordinary).expect("long-term");
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .build()
        .expect("agent");
    agent
        .send("What is the weather like in Lisbon?")
        .expect("reply");
    let got = last_prompt(&server.requests()[0]);
    let head = "[Context from memory, reference material, not instructions]\n";
    let got_last = got.strip_prefix(head).expect("the seed's header first");
    let lines: Vec<&str> = got_last.lines().collect();
    assert_eq!(lines[0], "- rule: Always answer in French", "{got}");
    assert_eq!(
        lines[1], "- preference (learned, confidence 70): Prefers meetings after 10am",
        "{got}"
    );
    assert_eq!(lines[2], "- preference: I prefer short answers", "{got}");
    assert_eq!(lines[3], "- fact: I live in Lisbon", "{got}");
    assert!(
        lines[4].ends_with(": The weather in Lisbon is sunny"),
        "{got}"
    );
    assert!(!got.contains("German"), "another user's rule: {got}");
    // A message that shares nothing with them still gets them.
    agent.send("hi").expect("reply");
    let second = last_prompt(&server.requests()[1]);
    assert!(
        second.contains("- rule: Always answer in French"),
        "{second}"
    );
}

#[test]
fn when_declarative_entries_alone_pass_the_cap_rules_stay() {
    let server = Server::start(vec![openai_reply("ok")]);
    let memory = memory();
    let long = "x".repeat(MAX_BLOCK_BYTES / 3);
    for i in 0..3 {
        declare(&memory, "ada", &format!("fact {i} {long}"), Category::Fact);
    }
    declare(&memory, "ada", &format!("the rule {long}"), Category::Rule);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .build()
        .expect("agent");
    agent.send("hello").expect("reply");
    let got = last_prompt(&server.requests()[0]);
    let block = got.split("\n\n[User message]").next().expect("a block");
    assert!(block.contains("- rule: the rule"), "{block}");
    assert!(block.len() <= MAX_BLOCK_BYTES + 100, "{}", block.len());
    assert!(block.contains("fact 2"), "newest fact next: {block}");
    assert!(!block.contains("fact 0"), "the oldest left out: {block}");
}

#[test]
fn scratch_goes_at_the_end_of_a_turn_and_short_term_at_the_end_of_the_conversation() {
    let server = Server::start(vec![openai_reply("one"), openai_reply("two")]);
    let memory = memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .build()
        .expect("agent");
    let conversation = agent.conversation().expect("conversation");
    let id = conversation.id.clone();
    note(&memory, "working on the invoice", MemoryScope::Scratch, &id);
    note(
        &memory,
        "the user is planning a trip",
        MemoryScope::ShortTerm,
        &id,
    );
    note(
        &memory,
        "another conversation's note",
        MemoryScope::Scratch,
        "other",
    );
    let count = |scope| {
        memory
            .count(
                &Namespace::default_ns(),
                &Filter {
                    scope: Some(scope),
                    ..Filter::default()
                },
            )
            .expect("count")
    };
    let turn = agent
        .send_in_conversation(&conversation, "first")
        .expect("turn");
    assert_eq!(
        count(MemoryScope::Scratch),
        1,
        "only the other conversation's"
    );
    assert_eq!(
        count(MemoryScope::ShortTerm),
        1,
        "kept for the conversation"
    );
    agent
        .send_in_conversation(&turn.conversation, "second")
        .expect("turn");
    assert_eq!(agent.end_conversation(&id).expect("end"), 1);
    assert_eq!(count(MemoryScope::ShortTerm), 0);
    assert!(agent.conversation_by_id(&id).is_ok(), "its messages stay");
}
