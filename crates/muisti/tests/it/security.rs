//! The engine's side of the second adversarial run (issue 51), on every backend: the key
//! space reaches no keyless memory, proposals are decided by their user, a delete erases the
//! text from every copy the engine made, similar memories stay within the user, and an
//! import passes the confirmation gate.

use muisti::{
    Category, Engine, ErrorKind, Filter, Key, Locator, MemoryScope, Owner, Patch, Put, Source,
    UpdateRequest,
    declarative::HistoryEvent,
    graph::{GraphExtraction, RelationQuery},
    transfer::{Selection, Trust},
};
use serde_json::json;

use super::{ns, on_every_backend};

fn each(check: impl Fn(&str, Engine)) {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        check,
    );
}

fn declarative(engine: &Engine, user: &str, text: &str) -> Put {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.scope = MemoryScope::Declarative;
    p.category = Category::Fact;
    p.owner = Owner {
        user_id: Some(user.into()),
        ..Owner::default()
    };
    p
}

fn keyed(engine: &Engine, key: &str, text: &str) -> Put {
    Put::new(
        engine.partition(&ns("default")),
        Some(Key::new(key).expect("key")),
        text,
    )
}

/// Every path that names a record by key, tried with a keyless memory's id: none reaches
/// it, and the entry, its version and its history are as they were.
#[test]
fn no_key_space_call_reaches_a_keyless_memory() {
    each(|url, e| {
        let n = ns("default");
        let entry = e
            .remember(declarative(&e, "victim", "I am allergic to peanuts"))
            .expect("entry")
            .memory;
        let mut plain = Put::new(e.partition(&n), None, "Ana takes her coffee with oat milk");
        plain.owner.user_id = Some("ana".into());
        let plain = e.remember(plain).expect("memory").memory;
        let history = e.history(entry.id).expect("history");
        for target in [&entry, &plain] {
            let id = target.id.to_string();
            let at = Locator::Key {
                partition: e.partition(&n),
                key: Key::new(&id).expect("key"),
            };
            assert_eq!(e.kv().get(&n, &id).expect("get"), None, "{url}");
            assert!(!e.kv().has(&n, &id).expect("has"), "{url}");
            assert_eq!(e.get(&at).expect("get"), None, "{url}");
            let refused = e.kv().set(&n, &id, json!("I love peanuts"), None);
            assert_eq!(
                refused.expect_err("set").kind(),
                ErrorKind::Conflict,
                "{url}"
            );
            let mut hijack = keyed(&e, &id, "hijacked");
            hijack.owner.user_id = Some("intruder".into());
            let refused = e.remember(hijack.clone());
            assert_eq!(
                refused.expect_err("keyed").kind(),
                ErrorKind::Conflict,
                "{url}"
            );
            let batch = vec![keyed(&e, "fine", "fine"), hijack];
            let refused = e.remember_many(batch);
            assert_eq!(
                refused.expect_err("batch").kind(),
                ErrorKind::Conflict,
                "{url}"
            );
            assert_eq!(
                e.kv().get(&n, "fine").expect("get"),
                None,
                "{url}: all or none"
            );
            let patch = Patch {
                content: Some(json!("changed")),
                ..Patch::default()
            };
            let refused = e.update(UpdateRequest::new(at.clone(), patch));
            assert_eq!(
                refused.expect_err("update").kind(),
                ErrorKind::NotFound,
                "{url}"
            );
            assert!(!e.kv().forget(&n, &id).expect("forget"), "{url}");
            assert!(!e.forget(&at).expect("forget"), "{url}");
            assert!(!e.kv().all(&n).expect("all").contains_key(&id), "{url}");
            let now = e.get_by_id(target.id).expect("read").expect("still there");
            assert_eq!(
                (now.text(), now.version, &now.owner),
                (target.text(), target.version, &target.owner),
                "{url}"
            );
        }
        assert_eq!(e.history(entry.id).expect("history"), history, "{url}");
        // A key in a memory id's form that is no memory's id is an ordinary key.
        let free = muisti::MemoryId::generate().to_string();
        e.kv()
            .set(&n, &free, json!(1), None)
            .expect("a free id-shaped key");
        assert_eq!(e.kv().get(&n, &free).expect("get"), Some(json!(1)), "{url}");
        // A flush empties the key space and the memories, never a user's declarative
        // entries (removed by nothing but their user's delete).
        e.kv().flush(&n).expect("flush");
        assert!(e.get_by_id(plain.id).expect("read").is_none(), "{url}");
        assert_eq!(e.kv().get(&n, &free).expect("get"), None, "{url}");
        let kept = e.get_by_id(entry.id).expect("read").expect("kept");
        assert_eq!(kept.text(), "I am allergic to peanuts", "{url}");
    });
}

/// Only the user a proposal concerns confirms or rejects it.
#[test]
fn a_proposal_is_decided_by_its_user_only() {
    each(|url, e| {
        let mut put = declarative(&e, "pa", "The user prefers tea");
        put.category = Category::Preference;
        put.source = Source::AgentLearned;
        put.confidence = Some(70);
        let Err(muisti::Error::ConfirmationRequired(p)) = e.declarative().declare(put) else {
            panic!("{url}: a proposal");
        };
        let id = p.id.to_string();
        for other in ["pb", "pa "] {
            let c = e
                .declarative()
                .confirm(&id, other)
                .expect_err("another user's");
            assert_eq!(c.kind(), ErrorKind::NotFound, "{url}");
            let r = e
                .declarative()
                .reject(&id, other)
                .expect_err("another user's");
            assert_eq!(r.kind(), ErrorKind::NotFound, "{url}");
        }
        assert_eq!(
            e.declarative().proposals("pa").expect("pending").len(),
            1,
            "{url}"
        );
        assert_eq!(
            e.declarative()
                .confirm(&id, "")
                .expect_err("no user")
                .kind(),
            ErrorKind::InvalidInput
        );
        let d = e.declarative().confirm(&id, "pa").expect("its user");
        assert_eq!(d.memory.text(), "The user prefers tea", "{url}");
    });
}

/// A delete erases the memory's text from its history (edited under an actor, a
/// declarative entry superseded, a retraction), keeping what happened and who did it.
#[test]
fn a_delete_erases_the_text_from_the_history() {
    each(|url, e| {
        let n = ns("default");
        let mut put = Put::new(e.partition(&n), None, "CANARY first text");
        put.owner.user_id = None;
        let m = e.remember(put).expect("memory").memory;
        let at = Locator::Id {
            tenant: e.tenant().clone(),
            id: m.id,
        };
        let patch = Patch {
            content: Some(json!("CANARY second text")),
            ..Patch::default()
        };
        let dashboard = e.with_actor("dashboard");
        dashboard
            .update(UpdateRequest::new(at.clone(), patch))
            .expect("edit");
        assert!(
            e.history(m.id)
                .expect("history")
                .iter()
                .any(|h| h.new.as_deref() == Some("CANARY second text")),
            "{url}: the edit is recorded"
        );
        assert!(e.forget(&at).expect("delete"), "{url}");
        let entry = e
            .remember(declarative(&e, "v", "CANARY I live in Lisbon"))
            .expect("entry")
            .memory;
        e.remember(declarative(&e, "v", "CANARY I live in Porto now"))
            .expect("supersede");
        let entry_at = Locator::Id {
            tenant: e.tenant().clone(),
            id: entry.id,
        };
        assert!(e.forget(&entry_at).expect("delete"), "{url}");
        for id in [m.id, entry.id] {
            let history = e.history(id).expect("history");
            assert_eq!(
                history.last().map(|h| h.event),
                Some(HistoryEvent::Delete),
                "{url}"
            );
            assert!(history.len() >= 2, "{url}: what happened stays");
            assert!(
                history.iter().all(|h| h.old.is_none() && h.new.is_none()),
                "{url}: {history:?}"
            );
        }
        // Nothing of the engine's own records holds the text any more.
        for namespace in e.store().namespaces(e.tenant()).expect("namespaces") {
            let all = muisti::list_all(
                e.store().as_ref(),
                &e.partition(&namespace),
                &Filter::default(),
            )
            .expect("list");
            assert!(
                all.iter()
                    .all(|r| !r.content.to_string().contains("CANARY")),
                "{url}: {namespace} keeps deleted text"
            );
        }
    });
}

/// Deleting the memory that named a conversation's last person (also after that person's
/// entity was merged into another) takes the name out of the conversation's focus: a later
/// "she" resolves to no one.
#[test]
fn a_delete_takes_the_person_out_of_the_conversation_focus() {
    on_every_backend(
        |store| {
            Engine::builder(store)
                .graph_extraction(GraphExtraction::Offline)
                .build()
                .expect("engine")
        },
        |url, e| {
            let settled = || {
                muisti_testkit::wait_until("the graph worker drained its queue", || {
                    e.graph().pending().expect("pending") == 0
                })
            };
            let say = |session: &str, text: &str| {
                let mut p = Put::new(e.partition(&ns("default")), None, text);
                p.owner.user_id = Some("f".into());
                p.owner.session_id = Some(session.into());
                let m = e.remember(p).expect("remember").memory;
                settled();
                m
            };
            say("other", "Maria Silva lives in Porto.");
            for merged in [false, true] {
                let (session, person) = if merged {
                    ("s2", "Mia")
                } else {
                    ("s1", "Maria")
                };
                let named = say(session, &format!("{person} works at Acme."));
                if merged {
                    e.graph()
                        .merge(Some("f"), "Maria Silva", person)
                        .expect("merge");
                }
                let at = Locator::Id {
                    tenant: e.tenant().clone(),
                    id: named.id,
                };
                assert!(e.forget(&at).expect("delete"), "{url}");
                settled();
                say(session, "She works at Initech.");
                let q = RelationQuery {
                    user_id: Some("f".into()),
                    subject: None,
                    predicate: Some("works_at".into()),
                    object: None,
                    as_of: None,
                };
                assert!(
                    e.graph().relations(&q).expect("relations").is_empty(),
                    "{url} (merged: {merged}): the deleted memory's person is no one's focus"
                );
            }
        },
    );
}

/// Similar memories are the memory's own user's unless asked otherwise, and never another
/// user's declarative entries.
#[test]
fn similar_memories_stay_within_the_user() {
    each(|url, e| {
        let n = ns("default");
        let mine = |user: &str, text: &str| {
            let mut p = Put::new(e.partition(&n), None, text);
            p.owner.user_id = Some(user.into());
            e.remember(p).expect("write").memory
        };
        let ana = mine("ana", "Ana takes her coffee with oat milk");
        let sam = mine("sam", "Sam takes his coffee black with no sugar");
        let ana_entry = e
            .remember(declarative(
                &e,
                "ana",
                "I take coffee with oat milk every morning",
            ))
            .expect("entry")
            .memory;
        let ids = |hits: Vec<muisti::RecallHit>| -> Vec<muisti::MemoryId> {
            hits.into_iter().map(|h| h.memory.id).collect()
        };
        let own = ids(e
            .find_similar(ana.id, None, 10, Filter::default(), false)
            .expect("similar"));
        assert!(!own.contains(&sam.id), "{url}: another user's memory");
        assert!(
            !own.contains(&ana_entry.id),
            "{url}: no user named, no entry"
        );
        let acting = Filter {
            user_id: Some("ana".into()),
            ..Filter::default()
        };
        let as_ana = ids(e
            .find_similar(ana.id, None, 10, acting, false)
            .expect("similar"));
        assert!(as_ana.contains(&ana_entry.id), "{url}: her own entry");
        let everyone = ids(e
            .find_similar(ana.id, None, 10, Filter::default(), true)
            .expect("similar"));
        assert!(everyone.contains(&sam.id), "{url}: asked for every user's");
        assert!(!everyone.contains(&ana_entry.id), "{url}");
    });
}

/// An import writes an agent-learned entry as a proposal its user confirms, unless trusted.
#[test]
fn an_import_passes_the_confirmation_gate_unless_trusted() {
    let source = Engine::open("mem://").expect("engine");
    let mut put = declarative(&source, "ana", "The user is a nurse");
    put.source = Source::AgentLearned;
    put.confidence = Some(60);
    let Err(muisti::Error::ConfirmationRequired(p)) = source.declarative().declare(put) else {
        panic!("a proposal");
    };
    source
        .declarative()
        .confirm(&p.id.to_string(), "ana")
        .expect("confirmed at the source");
    source
        .remember(declarative(&source, "ana", "I live in Porto"))
        .expect("user-stated");
    let mut records = Vec::new();
    source
        .transfer()
        .export(&Selection::default(), false, &mut |_, _| {}, &mut |r| {
            records.push(r);
            Ok(())
        })
        .expect("export");
    let entries = |e: &Engine| -> Vec<String> {
        e.declarative()
            .declarative_entries(&ns("default"), "ana")
            .expect("entries")
            .iter()
            .map(|m| m.text().into_owned())
            .collect()
    };
    let gated = Engine::open("mem://").expect("engine");
    let batch = records.clone();
    gated
        .transfer()
        .import_all(Trust::Gated, |sink| sink(batch))
        .expect("import");
    assert_eq!(entries(&gated), ["I live in Porto"]);
    let pending = gated.declarative().proposals("ana").expect("proposals");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].content, "The user is a nurse");
    let trusted = Engine::open("mem://").expect("engine");
    trusted
        .transfer()
        .import_all(Trust::Trusted, |sink| sink(records))
        .expect("import");
    let mut got = entries(&trusted);
    got.sort();
    assert_eq!(got, ["I live in Porto", "The user is a nurse"]);
}

/// An engine acting as someone records every change it makes in the memory's history: a
/// keyed write and its replace, a batch's, an update, a delete by id, by key, in bulk, by the
/// long-term cap and by a flush.
#[test]
fn an_actor_is_recorded_on_every_change_path() {
    on_every_backend(
        |store| {
            Engine::builder(store)
                .lifetimes(muisti::Lifetimes {
                    long_term_cap: Some(2),
                    ..muisti::Lifetimes::default()
                })
                .build()
                .expect("engine")
        },
        |url, e| {
            let ops = e.with_actor("ops");
            let n = ns("default");
            let events = |id: muisti::MemoryId| -> Vec<(HistoryEvent, String)> {
                e.history(id)
                    .expect("history")
                    .into_iter()
                    .map(|h| (h.event, h.actor))
                    .collect()
            };
            let ops_did = |evs: &[HistoryEvent]| -> Vec<(HistoryEvent, String)> {
                evs.iter().map(|ev| (*ev, "ops".to_owned())).collect()
            };
            // A keyed write, then its replace: an add, then an update with both texts.
            let first = ops.kv().set(&n, "tier", json!("gold"), None).expect("set");
            ops.kv()
                .set(&n, "tier", json!("platinum"), None)
                .expect("replace");
            let h = e.history(first.memory.id).expect("history");
            assert_eq!(
                h.iter()
                    .map(|h| (h.event, h.old.clone(), h.new.clone()))
                    .collect::<Vec<_>>(),
                [
                    (HistoryEvent::Add, None, Some("gold".into())),
                    (
                        HistoryEvent::Update,
                        Some("gold".into()),
                        Some("platinum".into())
                    ),
                ],
                "{url}"
            );
            // A batch: a new record and the replace of an existing one.
            let batch = ops
                .remember_many(vec![
                    keyed(&e, "tier", "diamond"),
                    keyed(&e, "region", "eu"),
                ])
                .expect("batch");
            assert_eq!(
                events(batch[0].memory.id),
                ops_did(&[
                    HistoryEvent::Add,
                    HistoryEvent::Update,
                    HistoryEvent::Update
                ]),
                "{url}"
            );
            assert_eq!(events(batch[1].memory.id), ops_did(&[HistoryEvent::Add]));
            // A delete by key.
            assert!(ops.kv().forget(&n, "region").expect("forget"), "{url}");
            assert_eq!(
                events(batch[1].memory.id),
                ops_did(&[HistoryEvent::Add, HistoryEvent::Delete]),
                "{url}"
            );
            // The long-term cap (2 per user): the third write evicts the least recently
            // used.
            let mine = |text: &str| {
                let mut p = Put::new(e.partition(&n), None, text);
                p.owner.user_id = Some("capped".into());
                p.owner.session_id = Some("s".into());
                ops.remember(p).expect("write").memory
            };
            let oldest = mine("capped one");
            std::thread::sleep(std::time::Duration::from_millis(5));
            mine("capped two");
            std::thread::sleep(std::time::Duration::from_millis(5));
            let third = mine("capped three");
            assert!(e.get_by_id(oldest.id).expect("read").is_none(), "{url}");
            assert_eq!(
                events(oldest.id),
                ops_did(&[HistoryEvent::Add, HistoryEvent::Delete]),
                "{url}: evicted"
            );
            // A bulk delete (one conversation's memories).
            let gone = ops
                .forget_where(
                    &n,
                    &Filter {
                        session_id: Some("s".into()),
                        ..Filter::default()
                    },
                )
                .expect("bulk");
            assert_eq!(gone, 2, "{url}");
            assert_eq!(
                events(third.id),
                ops_did(&[HistoryEvent::Add, HistoryEvent::Delete]),
                "{url}: bulk"
            );
            // A flush.
            ops.kv().flush(&n).expect("flush");
            assert_eq!(
                events(batch[0].memory.id),
                ops_did(&[
                    HistoryEvent::Add,
                    HistoryEvent::Update,
                    HistoryEvent::Update,
                    HistoryEvent::Delete
                ]),
                "{url}: flushed"
            );
        },
    );
}
