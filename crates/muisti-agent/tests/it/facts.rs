//! The model as the fact extractor, against a scripted provider: each decision of the
//! declarative rules, the schema and retries on the wire, and the labelled conversations'
//! decisions.

use std::sync::Arc;

use muisti::facts::{AddRequest, ChatMessage, FactEvent};
use muisti::{Engine, Source};
use muisti_agent::{LlmFactExtractor, ProviderKind};
use muisti_bench::facts::{LabelledConversation, evaluate, parse_corpus};
use muisti_testkit::{
    http::Server,
    llm::{anthropic_reply, openai_reply},
};
use serde_json::{Value, json};

use super::{body, provider};

const CORPUS: &str = include_str!("../../../muisti-lang/tests/data/fact-extraction.jsonl");

fn fact(text: &str, kind: &str, message: usize) -> Value {
    json!({"text": text, "type": kind, "message": message, "retract": false,
        "inferred": false, "confidence": null, "date": null})
}

fn answer(facts: Vec<Value>) -> String {
    json!({ "facts": facts }).to_string()
}

/// `add_messages` through a model that answers `facts` for `messages`.
fn add_with(
    kind: ProviderKind,
    engine: &Engine,
    messages: Vec<ChatMessage>,
    facts: Vec<Value>,
) -> muisti::facts::AddReport {
    let text = answer(facts);
    let reply = match kind {
        ProviderKind::OpenAi => openai_reply(&text),
        ProviderKind::Anthropic => anthropic_reply(&text),
    };
    let server = Server::start(vec![reply]);
    let memory =
        engine.with_fact_extractor(Arc::new(LlmFactExtractor::new(provider(kind, &server))));
    memory
        .add_messages(&AddRequest::new("ana", messages, true))
        .expect("add")
}

fn events(r: &muisti::facts::AddReport) -> Vec<FactEvent> {
    r.results.iter().map(|x| x.event).collect()
}

#[test]
fn each_decision_through_the_model() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let engine = Engine::open("mem://").expect("engine");
        let user = |t: &str| ChatMessage::new("user", t);
        let assistant = |t: &str| ChatMessage::new("assistant", t);
        // ADD, with the model's calls and tokens reported.
        let r = add_with(
            kind,
            &engine,
            vec![user("I live in Lisbon and I'm a nurse.")],
            vec![
                fact("I live in Lisbon", "fact", 0),
                fact("I am a nurse", "fact", 0),
            ],
        );
        assert_eq!(events(&r), [FactEvent::Add, FactEvent::Add], "{kind}");
        assert_eq!(r.usage.calls, 1);
        assert!(
            r.usage.input_tokens > 0 && r.usage.output_tokens > 0,
            "{kind}"
        );
        assert!(
            r.extractor
                .as_deref()
                .is_some_and(|n| n.ends_with("test-model"))
        );
        // UPDATE: a new value for the same thing.
        let r = add_with(
            kind,
            &engine,
            vec![user("I moved to Porto.")],
            vec![fact("I live in Porto", "fact", 0)],
        );
        assert_eq!(events(&r), [FactEvent::Update], "{kind}");
        assert_eq!(
            r.results[0].previous_memory.as_deref(),
            Some("I live in Lisbon")
        );
        // NONE: said again.
        let r = add_with(
            kind,
            &engine,
            vec![user("As I said, I'm a nurse.")],
            vec![fact("I am a nurse", "fact", 0)],
        );
        assert_eq!(events(&r), [FactEvent::None], "{kind}");
        // CONFIRMATION_REQUIRED: an inferred fact is learned, with the model's confidence.
        let mut inferred = fact("I work night shifts", "fact", 0);
        inferred["inferred"] = json!(true);
        inferred["confidence"] = json!(70);
        let r = add_with(
            kind,
            &engine,
            vec![user("Another night shift, ugh.")],
            vec![inferred],
        );
        assert_eq!(events(&r), [FactEvent::ConfirmationRequired], "{kind}");
        assert_eq!(r.results[0].source, Source::AgentLearned);
        assert_eq!(r.results[0].confidence, Some(70));
        assert_eq!(
            engine
                .declarative()
                .proposals("ana")
                .expect("proposals")
                .len(),
            1
        );
        // User-stated wins: the assistant's other value changes nothing and asks nothing.
        let r = add_with(
            kind,
            &engine,
            vec![assistant("Porto? I thought you lived in Braga.")],
            vec![fact("I live in Braga", "fact", 0)],
        );
        assert_eq!(events(&r), [FactEvent::None], "{kind}");
        assert_eq!(
            engine
                .declarative()
                .proposals("ana")
                .expect("proposals")
                .len(),
            1
        );
        // DELETE: the user retracts.
        let mut gone = fact("I am a nurse", "fact", 0);
        gone["retract"] = json!(true);
        let r = add_with(
            kind,
            &engine,
            vec![user("I'm not a nurse anymore.")],
            vec![gone],
        );
        assert_eq!(events(&r), [FactEvent::Delete], "{kind}");
        // The user's facts are long-term memories: what holds now is the move and the
        // retraction; Lisbon and the nurse are superseded, kept for what was true before.
        let left = muisti_testkit::active_memories(
            engine.store().as_ref(),
            &engine.partition(&muisti::Namespace::default_ns()),
            "ana",
        );
        assert_eq!(
            left,
            ["I am no longer a nurse", "I live in Porto"],
            "{kind}"
        );
        // A fact naming a message that is not there is dropped, not written.
        let r = add_with(
            kind,
            &engine,
            vec![user("hello")],
            vec![fact("I like jazz", "preference", 7)],
        );
        assert!(r.results.is_empty(), "{kind}");
    }
}

#[test]
fn the_request_asks_for_the_schema_and_an_unreadable_answer_is_asked_again() {
    let good = answer(vec![fact("I like jazz", "preference", 0)]);
    let server = Server::start(vec![
        openai_reply("Sure! Here are the facts."),
        openai_reply(&good),
    ]);
    let engine = Engine::open("mem://")
        .expect("engine")
        .with_fact_extractor(Arc::new(LlmFactExtractor::new(provider(
            ProviderKind::OpenAi,
            &server,
        ))));
    let mut said = ChatMessage::new("user", "I like jazz");
    said.created_at = muisti::Timestamp::parse("2024-05-01T10:00:00Z").ok();
    let r = engine
        .add_messages(&AddRequest::new("ana", vec![said], true))
        .expect("add");
    assert_eq!(events(&r), [FactEvent::Add]);
    assert_eq!(r.usage.calls, 2, "the unreadable answer was asked again");
    assert_eq!(r.usage.input_tokens, 22);
    let requests = server.requests();
    let sent = body(&requests[0]);
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["name"], "facts");
    assert_eq!(sent["temperature"], 0.0);
    let prompt = sent["messages"][1]["content"].as_str().expect("prompt");
    assert!(
        prompt.contains("[0] user, 2024-05-01T10:00:00.000Z: \"I like jazz\""),
        "{prompt}"
    );

    // Three unreadable answers: the call fails as unavailable, and nothing is written.
    let server = Server::start(vec![
        openai_reply("no"),
        openai_reply("no"),
        openai_reply("no"),
    ]);
    let engine = Engine::open("mem://")
        .expect("engine")
        .with_fact_extractor(Arc::new(LlmFactExtractor::new(provider(
            ProviderKind::OpenAi,
            &server,
        ))));
    let e = engine
        .add_messages(&AddRequest::new(
            "ana",
            vec![ChatMessage::new("user", "I like jazz")],
            true,
        ))
        .expect_err("no readable answer");
    assert_eq!(e.kind(), muisti::ErrorKind::Model);
    assert!(e.to_string().contains("test-model"), "names the model: {e}");
    assert_eq!(engine.stats().expect("stats").total, 0);
}

/// The message that states a labelled fact: the speaker's message sharing most of its
/// words.
fn stating_message(c: &LabelledConversation, text: &str, speaker: &str) -> usize {
    (0..c.messages.len())
        .filter(|&i| c.messages[i].role == speaker)
        .max_by(|&a, &b| {
            let o = |i: usize| muisti::facts::retract_overlap(text, &c.messages[i].content);
            o(a).total_cmp(&o(b)).then(b.cmp(&a))
        })
        .unwrap_or(0)
}

/// What a model that reads every labelled fact right would answer.
fn perfect_answer(c: &LabelledConversation) -> String {
    let facts = c
        .facts
        .iter()
        .map(|f| {
            let mut v = fact(
                &f.text,
                f.kind.as_str(),
                stating_message(c, &f.text, &f.speaker),
            );
            v["retract"] = json!(f.retract);
            v["date"] = json!(f.at);
            v
        })
        .collect();
    answer(facts)
}

#[test]
fn the_labelled_decisions_through_the_scripted_model() {
    let corpus = parse_corpus(CORPUS).expect("corpus");
    for split in ["tune", "test"] {
        let part: Vec<LabelledConversation> = corpus
            .iter()
            .filter(|c| c.split == split)
            .cloned()
            .collect();
        // One scripted server per conversation, answering as a perfect reader would: what
        // is measured is what the engine decides.
        let servers: std::sync::Mutex<Vec<Server>> = std::sync::Mutex::default();
        let extractor = |c: &LabelledConversation| -> Arc<dyn muisti::facts::FactExtractor> {
            let server = Server::start(vec![openai_reply(&perfect_answer(c))]);
            let p = provider(ProviderKind::OpenAi, &server);
            servers.lock().expect("servers").push(server);
            Arc::new(LlmFactExtractor::new(p))
        };
        let engine = |_: &LabelledConversation| Engine::open("mem://");
        let s = evaluate(&part, &engine, &extractor, None).expect("evaluates");
        println!(
            "scripted model, {split}: facts {:.3}/{:.3} (precision/recall), decisions {:.3} ({}/{}) {:?}, {} calls",
            s.precision(),
            s.recall(),
            s.decision_accuracy(),
            s.decisions_right,
            s.decisions,
            s.by_event,
            s.calls
        );
        assert_eq!(
            s.recall(),
            1.0,
            "{split}: every scripted fact reaches the engine"
        );
        assert_eq!(
            s.calls as usize,
            part.len(),
            "{split}: one call per conversation"
        );
        // Floor at the figure measured when this was written.
        assert!(
            s.decision_accuracy() >= 0.85,
            "{split}: {}",
            s.decision_accuracy()
        );
    }
}
