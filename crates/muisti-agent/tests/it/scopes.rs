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
    memory.declarative().declare(p).expect("declare").memory
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
    let Err(muisti::Error::ConfirmationRequired(p)) = memory.declarative().declare(learned) else {
        panic!("the gate");
    };
    memory
        .declarative()
        .confirm(&p.id.to_string(), p.owner.user_id.as_deref().expect("user"))
        .expect("confirm");
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

/// The model calls `note` with the tool's arguments.
fn note_call(calls: &[(&str, serde_json::Value)]) -> muisti_testkit::http::Reply {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, args)| {
            serde_json::json!({"id": id, "type": "function",
                "function": {"name": "note", "arguments": args.to_string()}})
        })
        .collect();
    muisti_testkit::http::Reply::json(
        200,
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": null,
            "tool_calls": calls}, "finish_reason": "tool_calls"}]})
        .to_string(),
    )
}

/// The agent keeps its own working state: a `note` kept for the turn is scratch (gone when
/// the reply is given), one kept for the conversation is short-term, shown in every later
/// prompt of that conversation (not of others) until the conversation ends.
#[test]
fn the_agent_keeps_working_notes_for_the_turn_and_for_the_conversation() {
    let server = Server::start(vec![
        note_call(&[
            (
                "n1",
                serde_json::json!({"text": "invoice 7 is due Friday", "keep": "conversation"}),
            ),
            ("n2", serde_json::json!({"text": "checking invoice 7 now"})),
            ("n3", serde_json::json!({"text": "x", "keep": "forever"})),
        ]),
        openai_reply("one"),
        openai_reply("two"),
        openai_reply("three"),
    ]);
    let memory = memory();
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .build()
        .expect("agent");
    let conversation = agent.conversation().expect("conversation");
    let id = conversation.id.clone();
    note(
        &memory,
        "invoice 9 of another conversation",
        MemoryScope::ShortTerm,
        "other",
    );
    let count = |scope| {
        memory
            .count(
                &Namespace::default_ns(),
                &Filter {
                    session_id: Some(id.clone()),
                    scope: Some(scope),
                    ..Filter::default()
                },
            )
            .expect("count")
    };
    let turn = agent
        .send_in_conversation(&conversation, "what about invoice 7?")
        .expect("turn");
    assert_eq!(turn.reply.text, "one");
    let requests = server.requests();
    let tools = body(&requests[0])["tools"].to_string();
    assert!(
        tools.contains("\"note\""),
        "the note tool is offered: {tools}"
    );
    let results = body(&requests[1])["messages"].to_string();
    assert!(
        results.contains("noted, kept until the conversation ends"),
        "{results}"
    );
    assert!(
        results.contains("noted, kept until this message is answered"),
        "{results}"
    );
    assert!(
        results.contains("keep is"),
        "a bad argument is the model's error: {results}"
    );
    assert_eq!(
        count(MemoryScope::Scratch),
        0,
        "the turn's note went with the turn"
    );
    assert_eq!(
        count(MemoryScope::ShortTerm),
        1,
        "kept for the conversation"
    );

    let turn = agent
        .send_in_conversation(&turn.conversation, "and invoice 9?")
        .expect("turn");
    let prompt = last_prompt(&server.requests()[2]);
    assert!(
        prompt.contains("- note: invoice 7 is due Friday"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("another conversation"),
        "another conversation's working state stays there: {prompt}"
    );

    assert_eq!(
        agent.end_conversation(&turn.conversation.id).expect("end"),
        1
    );
    let next = agent.conversation().expect("conversation");
    agent
        .send_in_conversation(&next, "invoice 7?")
        .expect("turn");
    let prompt = last_prompt(&server.requests()[3]);
    assert!(
        !prompt.contains("due Friday"),
        "gone with its conversation: {prompt}"
    );
}

/// A chat model judges declarative conflicts over the real wire protocols: the stored
/// candidates and the new entry go out in one request, and its answer picks the entry to
/// replace (or none).
#[test]
fn a_model_judges_which_declarative_entry_a_write_replaces() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let reply = |text: &str| match kind {
            ProviderKind::OpenAi => openai_reply(text),
            ProviderKind::Anthropic => muisti_testkit::llm::anthropic_reply(text),
        };
        let server = Server::start(vec![
            reply("```json\n{\"replaces\": 1}\n```"),
            reply("{\"replaces\": null}"),
        ]);
        let judge = std::sync::Arc::new(muisti_agent::LlmJudge::new(provider(kind, &server)));
        let memory = memory().with_conflict_judge(judge);
        let tea = declare(
            &memory,
            "ada",
            "Oolong tea, every afternoon",
            Category::Preference,
        );
        let sencha = declare(
            &memory,
            "ada",
            "Sencha tea these afternoons",
            Category::Preference,
        );
        assert_eq!(sencha.id, tea.id, "{kind:?}: replaced as the model said");
        assert_eq!(sencha.text(), "Sencha tea these afternoons");
        let green = declare(
            &memory,
            "ada",
            "Green tea with honey when ill",
            Category::Preference,
        );
        assert_ne!(green.id, tea.id, "{kind:?}: the model said none");
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{kind:?}");
        let first = body(&requests[0]);
        let text = first.to_string();
        assert!(
            text.contains("1. \\\"Oolong tea, every afternoon\\\""),
            "{kind:?}: {text}"
        );
        assert!(
            text.contains("NEW preference: \\\"Sencha tea these afternoons\\\""),
            "{text}"
        );
        assert!(
            text.contains("declarative memory"),
            "the judge's instructions: {text}"
        );
    }
}

/// With `graph_context`, the prompt carries the graph's current facts about the entities
/// the message names, after the declarative entries; a message naming none gets none.
#[test]
fn the_graph_facts_about_what_a_message_names_go_into_the_prompt() {
    let server = Server::start(vec![openai_reply("Alice."), openai_reply("Hello.")]);
    let memory = graph_of_ada(
        muisti::graph::GraphExtraction::Offline,
        &[
            "Alice works at Google in Mountain View.",
            "Bob reports to Alice and works on TensorFlow.",
        ],
    );
    declare(&memory, "ada", "Always answer briefly", Category::Rule);
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .graph_context(5)
        .build()
        .expect("agent");
    agent.send("Who does bob report to?").expect("reply");
    let prompt = last_prompt(&server.requests()[0]);
    let rule = prompt
        .find("- rule: Always answer briefly")
        .expect("the rule");
    let fact = prompt.find("- graph: Bob reports to Alice").expect(&prompt);
    assert!(rule < fact, "declarative entries first: {prompt}");
    assert!(
        prompt.contains("- graph: Bob works on TensorFlow"),
        "{prompt}"
    );
    agent.send("Good morning").expect("reply");
    let prompt = last_prompt(&server.requests()[1]);
    assert!(
        !prompt.contains("- graph:"),
        "nothing named, no facts: {prompt}"
    );
}

/// A chat model as the graph extractor, over the real wire protocol: the memory goes out
/// quoted with the user and the last person named, the JSON answer becomes the graph.
#[test]
fn a_model_reads_memories_into_the_graph() {
    let server = Server::start(vec![openai_reply(
        r#"{"entities": [{"name": "Priya", "type": "person"}, {"name": "Initech", "type": "organization"}],
            "facts": [{"subject": "Priya", "predicate": "works_at", "object": "Initech", "since": "2024-03-01"},
                      {"subject": "USER", "predicate": "reports_to", "object": "Priya"}],
            "last_person": "Priya"}"#,
    )]);
    let extractor = muisti_agent::LlmExtractor::new(provider(ProviderKind::OpenAi, &server));
    let memory = graph_of_ada(
        muisti::graph::GraphExtraction::With(std::sync::Arc::new(extractor)),
        &["My manager Priya just joined Initech."],
    );
    let facts: Vec<String> = memory
        .graph()
        .entity_relations(Some("ada"), "Priya", None)
        .expect("relations")
        .iter()
        .map(muisti::graph::Relation::sentence)
        .collect();
    assert_eq!(facts, ["Priya works at Initech", "ada reports to Priya"]);
    let sent = body(&server.requests()[0]).to_string();
    assert!(
        sent.contains("My manager Priya just joined Initech."),
        "{sent}"
    );
    assert!(sent.contains("USER is \\\"ada\\\""), "{sent}");
    assert!(sent.contains("Written at: 20"), "the memory's time: {sent}");
    let since: Vec<Option<String>> = memory
        .graph()
        .relations(&muisti::graph::RelationQuery {
            user_id: Some("ada".into()),
            subject: Some("Priya".into()),
            ..Default::default()
        })
        .expect("relations")
        .iter()
        .map(|r| r.valid_at.map(|t| t.to_string()))
        .collect();
    assert_eq!(
        since,
        [Some("2024-03-01T00:00:00.000Z".to_owned())],
        "the date the model gave"
    );
}

/// An in-process memory reading its memories into the graph with `extraction`, holding
/// `texts` as ada's memories, read once the worker has drained its queue.
fn graph_of_ada(extraction: muisti::graph::GraphExtraction, texts: &[&str]) -> Engine {
    let store = muisti::open_store("mem://").expect("store");
    let memory = Engine::builder(store)
        .graph_extraction(extraction)
        .build()
        .expect("engine");
    for text in texts {
        let mut p = Put::new(memory.partition(&Namespace::default_ns()), None, *text);
        p.owner.user_id = Some("ada".into());
        memory.remember(p).expect("remember");
    }
    muisti_testkit::wait_until("the graph worker drained its queue", || {
        memory.graph().pending().expect("pending") == 0
    });
    memory
}

/// A name two entities go by: the model reads from the memory which one it means, over
/// the real wire protocol; the mention is theirs, no third entity is made.
#[test]
fn a_model_chooses_which_entity_an_ambiguous_name_means() {
    let server = Server::start(vec![
        openai_reply(
            r#"{"entities": [{"name": "Alice Chen", "type": "person"}, {"name": "Alice Moreno", "type": "person"}], "facts": []}"#,
        ),
        openai_reply(r#"{"entities": [{"name": "Alice", "type": "person"}], "facts": []}"#),
        openai_reply(r#"{"choice": 2}"#),
    ]);
    let extractor = muisti_agent::LlmExtractor::new(provider(ProviderKind::OpenAi, &server));
    let memory = graph_of_ada(
        muisti::graph::GraphExtraction::With(std::sync::Arc::new(extractor)),
        &[
            "I know Alice Chen from school and Alice Moreno from work.",
            "Alice from work called me about the budget.",
        ],
    );
    let moreno = memory
        .graph()
        .entity(Some("ada"), "Alice Moreno")
        .expect("read")
        .expect("Alice Moreno");
    assert_eq!(moreno.mentions, 2, "the second memory named her");
    assert!(
        memory
            .graph()
            .entities(Some("ada"), None)
            .expect("entities")
            .iter()
            .all(|e| e.name != "Alice"),
        "no entity of the bare name"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let asked = body(&requests[2]).to_string();
    assert!(asked.contains("1. \\\"Alice Chen\\\" (person)"), "{asked}");
    assert!(
        asked.contains("2. \\\"Alice Moreno\\\" (person)"),
        "{asked}"
    );
    assert!(asked.contains("Alice from work called me"), "{asked}");
}

/// A user with 50 declarative entries and 1,000 memories learned over time: every entry
/// is in the prompt, first, and recall adds the few memories that match the message (the
/// one relevant among them), all within the block's cap; the learned memories are recalled
/// by relevance, never all injected.
#[test]
fn fifty_entries_and_a_thousand_memories_stay_within_the_cap_with_the_relevant_one_in() {
    let server = Server::start(vec![openai_reply("ok")]);
    let memory = memory();
    for i in 0..50 {
        declare(
            &memory,
            "ada",
            &format!("standing preference number {i}: keep it short"),
            Category::Preference,
        );
    }
    let topics = [
        "gardening",
        "chess",
        "cycling",
        "baking",
        "astronomy",
        "pottery",
        "sailing",
        "knitting",
    ];
    let puts: Vec<Put> = (0..1000)
        .map(|i| {
            let text = if i == 617 {
                "My sister Ingrid lives in Bergen and teaches violin".to_owned()
            } else {
                format!(
                    "note {i}: spent the evening on {} again",
                    topics[i % topics.len()]
                )
            };
            let mut p = Put::new(memory.partition(&Namespace::default_ns()), None, text);
            p.owner.user_id = Some("ada".into());
            p
        })
        .collect();
    memory.remember_many(puts).expect("learned memories");
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .build()
        .expect("agent");
    agent
        .send("Where does my sister Ingrid live?")
        .expect("reply");
    let got = last_prompt(&server.requests()[0]);
    let block = got.split("\n\n[User message]").next().expect("a block");
    let lines: Vec<&str> = block.lines().filter(|l| l.starts_with("- ")).collect();
    assert!(block.len() <= MAX_BLOCK_BYTES + 100, "{}", block.len());
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("- preference: standing preference"))
            .count(),
        50,
        "every entry, first: {block}"
    );
    let recalled: Vec<&&str> = lines.iter().skip(50).collect();
    assert!(
        recalled
            .iter()
            .any(|l| l.contains("Ingrid lives in Bergen")),
        "the relevant memory: {block}"
    );
    assert!(
        recalled.len() <= 3,
        "recalled by relevance, not all: {block}"
    );
}

/// A user's block holds their own memories and the tenant's shared ones (of no user),
/// ranked together by recall's score; another user's memories never.
#[test]
fn a_users_block_ranks_their_memories_and_the_shared_ones_together() {
    let server = Server::start(vec![openai_reply("ok")]);
    let memory = memory();
    let write = |text: &str, user: Option<&str>| {
        let mut p = Put::new(memory.partition(&Namespace::default_ns()), None, text);
        p.owner.user_id = user.map(str::to_owned);
        memory.remember(p).expect("write");
    };
    write(
        "The office wifi network is called Harbour and its password is taped to the fridge",
        None,
    );
    write(
        "My laptop connects to the office wifi only on the 5 GHz band",
        Some("ada"),
    );
    write(
        "Bob's laptop never connects to the office wifi",
        Some("bob"),
    );
    let agent = agent(ProviderKind::OpenAi, &server, &memory)
        .recall_filter(for_ada())
        .build()
        .expect("agent");
    agent
        .send("How does my laptop get on the office wifi?")
        .expect("reply");
    let got = last_prompt(&server.requests()[0]);
    assert!(
        got.contains("only on the 5 GHz band"),
        "the user's own: {got}"
    );
    assert!(got.contains("taped to the fridge"), "the shared one: {got}");
    assert!(!got.contains("Bob's laptop"), "never another user's: {got}");
}

/// A chat model judges which everyday memory a newer one changes where the word rules see
/// no change: the stored candidates go out in one request and its answer picks the memory
/// to supersede (or none); without candidates the model is not asked.
#[test]
fn a_model_judges_which_memory_a_change_said_in_other_words_replaces() {
    let server = Server::start(vec![
        // The stored memories are numbered from 1 in the request.
        openai_reply("{\"replaces\": 1}"),
        openai_reply("{\"replaces\": null}"),
    ]);
    let judge = std::sync::Arc::new(muisti_agent::LlmJudge::new(provider(
        ProviderKind::OpenAi,
        &server,
    )));
    let memory = memory().with_conflict_judge(judge);
    let at = |text: &str, millis: i64| {
        let mut p = muisti::Put::new(memory.partition(&Namespace::default_ns()), None, text);
        p.owner.user_id = Some("mo".into());
        p.valid_from = Some(muisti::Timestamp::from_millis(millis));
        memory.remember(p).expect("write").memory
    };
    let wine = at(
        "I drink a glass of red wine every Friday night.",
        1_700_000_000_000,
    );
    let dry = at(
        "Started staying off alcohol for good: no drinks at all.",
        1_710_000_000_000,
    );
    let wine = memory.get_by_id(wine.id).expect("read").expect("kept");
    assert_eq!(wine.superseded_by, Some(dry.id), "the model said so");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let asked = body(&requests[0]).to_string();
    assert!(asked.contains("red wine every Friday"), "{asked}");
    // The model says the next change replaces nothing: nothing is superseded.
    let bike = at("I cycle to work every day.", 1_700_000_000_000);
    let car = at("Started driving to work since the move.", 1_720_000_000_000);
    let bike = memory.get_by_id(bike.id).expect("read").expect("kept");
    assert_eq!(bike.state, muisti::MemoryState::Active, "{}", car.text());
    assert_eq!(server.requests().len(), 2, "the model was asked again");
}
