//! Scopes and their lifetimes (seed 003), through the engine on every backend it is given.

use std::{sync::Arc, time::Duration};

use muisti::{
    Engine, ErrorKind, Filter, Lifetimes, ManualClock, MemStore, MemoryScope, Owner, Put,
    Timestamp, Ttl,
};

use super::{ns, on_each_backend};

fn put(engine: &Engine, namespace: &str, text: &str, scope: MemoryScope, owner: Owner) -> Put {
    let mut p = Put::new(engine.partition(&ns(namespace)), None, text);
    p.scope = scope;
    p.owner = owner;
    p
}

fn session(s: &str) -> Owner {
    Owner {
        session_id: Some(s.into()),
        ..Owner::default()
    }
}

fn user(u: &str) -> Owner {
    Owner {
        user_id: Some(u.into()),
        ..Owner::default()
    }
}

fn count(engine: &Engine, namespace: &str, filter: Filter) -> u64 {
    engine.count(&ns(namespace), &filter).expect("count")
}

#[test]
fn a_write_breaking_its_scope_rules_is_refused_before_storage() {
    on_each_backend(|url, engine| {
        let cases = [
            (MemoryScope::Scratch, Owner::default(), None, "session_id"),
            (MemoryScope::ShortTerm, user("u"), None, "session_id"),
            (MemoryScope::Declarative, session("c"), None, "user_id"),
            (
                MemoryScope::Declarative,
                user("u"),
                Some(Ttl::from_secs(60).expect("ttl")),
                "ttl",
            ),
        ];
        for (scope, owner, ttl, field) in cases {
            let p = put(&engine, "default", "a note", scope, owner).with_ttl(ttl);
            let err = engine.remember(p.clone()).expect_err("refused");
            assert_eq!(
                err.kind(),
                ErrorKind::ConflictingFields,
                "{url} {scope}: {err}"
            );
            assert!(err.to_string().contains(field), "{url} {scope}: {err}");
            let err = engine.remember_many(vec![p]).expect_err("refused");
            assert!(err.to_string().contains(field), "{url} {scope}: {err}");
        }
        assert_eq!(count(&engine, "default", Filter::default()), 0, "{url}");
        // An update keeps the rules: no scratch memory without its conversation.
        let plain = engine
            .remember(put(
                &engine,
                "default",
                "a plain note",
                MemoryScope::LongTerm,
                user("u"),
            ))
            .expect("long-term");
        let at = muisti::Locator::Id {
            tenant: engine.tenant().clone(),
            id: plain.memory.id,
        };
        let moved = engine.update(muisti::UpdateRequest::new(
            at.clone(),
            muisti::Patch {
                scope: Some(MemoryScope::Scratch),
                ..Default::default()
            },
        ));
        assert_eq!(
            moved.expect_err("no session").kind(),
            ErrorKind::ConflictingFields,
            "{url}"
        );
        let moved = engine
            .update(muisti::UpdateRequest::new(
                at,
                muisti::Patch {
                    scope: Some(MemoryScope::Scratch),
                    session_id: Some(Some("c9".into())),
                    ..Default::default()
                },
            ))
            .expect("with its conversation");
        assert_eq!(moved.scope, MemoryScope::Scratch);
    });
}

#[test]
fn a_turn_clears_its_scratch_and_the_conversation_end_its_short_term() {
    on_each_backend(|url, engine| {
        for namespace in ["default", "work"] {
            for conversation in ["c1", "c2"] {
                for scope in [
                    MemoryScope::Scratch,
                    MemoryScope::ShortTerm,
                    MemoryScope::LongTerm,
                ] {
                    engine
                        .remember(put(
                            &engine,
                            namespace,
                            &format!("{scope} note of {conversation}"),
                            scope,
                            session(conversation),
                        ))
                        .expect("remember");
                }
            }
        }
        let of = |scope, conversation: &str| Filter {
            scope: Some(scope),
            session_id: Some(conversation.into()),
            ..Filter::default()
        };
        assert_eq!(engine.end_turn("c1").expect("end turn"), 2, "{url}");
        for namespace in ["default", "work"] {
            assert_eq!(count(&engine, namespace, of(MemoryScope::Scratch, "c1")), 0);
            assert_eq!(count(&engine, namespace, of(MemoryScope::Scratch, "c2")), 1);
            assert_eq!(
                count(&engine, namespace, of(MemoryScope::ShortTerm, "c1")),
                1
            );
        }
        assert_eq!(engine.end_conversation("c1").expect("end"), 2, "{url}");
        assert_eq!(engine.end_conversation("c1").expect("again"), 0, "{url}");
        for namespace in ["default", "work"] {
            assert_eq!(
                count(&engine, namespace, of(MemoryScope::ShortTerm, "c1")),
                0
            );
            assert_eq!(
                count(&engine, namespace, of(MemoryScope::LongTerm, "c1")),
                1
            );
            assert_eq!(
                count(&engine, namespace, of(MemoryScope::ShortTerm, "c2")),
                1
            );
            assert_eq!(count(&engine, namespace, of(MemoryScope::Scratch, "c2")), 1);
        }
        let err = engine.end_conversation("").expect_err("no such id");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{url}");
    });
}

/// The cap holds after every write; the least recently used go first (here the oldest
/// written, except one rewritten since); other users and scopes are untouched.
#[test]
fn the_long_term_cap_evicts_the_least_recently_used_on_write() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Arc::new(MemStore::new().with_clock(clock.clone()));
    let engine = Engine::builder(store)
        .embedder(None)
        .clock(clock.clone())
        .lifetimes(Lifetimes {
            long_term_cap: Some(3),
            ..Lifetimes::default()
        })
        .build()
        .expect("engine");
    let ada = Filter {
        user_id: Some("ada".into()),
        scope: Some(MemoryScope::LongTerm),
        ..Filter::default()
    };
    let mut first = None;
    for i in 0..5 {
        clock.advance(Duration::from_secs(1));
        let w = engine
            .remember(put(
                &engine,
                "default",
                &format!("fact {i}"),
                MemoryScope::LongTerm,
                user("ada"),
            ))
            .expect("remember");
        first.get_or_insert(w.memory);
        engine
            .remember(put(
                &engine,
                "default",
                &format!("episode {i}"),
                MemoryScope::Episodic,
                user("ada"),
            ))
            .expect("episodic");
        engine
            .remember(put(
                &engine,
                "default",
                &format!("other fact {i}"),
                MemoryScope::LongTerm,
                user("bob"),
            ))
            .expect("bob");
        assert!(
            count(&engine, "default", ada.clone()) <= 3,
            "after write {i}"
        );
        if i == 2 {
            // Used again: changed (by id: a keyless memory is not in the key space), it is
            // now the most recently used.
            let first = first.as_ref().expect("first");
            clock.advance(Duration::from_secs(1));
            let at = muisti::Locator::Id {
                tenant: engine.tenant().clone(),
                id: first.id,
            };
            let patch = muisti::Patch {
                content: Some(serde_json::json!("fact 0, again")),
                ..muisti::Patch::default()
            };
            engine
                .update(muisti::UpdateRequest::new(at, patch))
                .expect("rewrite");
        }
    }
    let mut kept: Vec<String> = muisti::list_all(
        engine.store().as_ref(),
        &engine.partition(&ns("default")),
        &ada,
    )
    .expect("list")
    .into_iter()
    .map(|m| m.text().into_owned())
    .collect();
    kept.sort();
    assert_eq!(kept, ["fact 0, again", "fact 3", "fact 4"]);
    let bob = Filter {
        user_id: Some("bob".into()),
        ..Filter::default()
    };
    let bobs: Vec<String> = muisti::list_all(
        engine.store().as_ref(),
        &engine.partition(&ns("default")),
        &bob,
    )
    .expect("list")
    .into_iter()
    .map(|m| m.text().into_owned())
    .collect();
    assert_eq!(bobs.len(), 3, "each user has a cap of their own: {bobs:?}");
    assert!(
        bobs.iter()
            .all(|t| t != "other fact 0" && t != "other fact 1")
    );
    let episodic = Filter {
        scope: Some(MemoryScope::Episodic),
        ..Filter::default()
    };
    assert_eq!(
        count(&engine, "default", episodic),
        5,
        "only long-term is capped"
    );
}

/// An episodic memory expires after the retention; maintenance also removes those written
/// under a longer one.
#[test]
fn episodic_memories_last_the_retention() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Arc::new(MemStore::new().with_clock(clock.clone()));
    let engine = |days| {
        Engine::builder(store.clone())
            .embedder(None)
            .clock(clock.clone())
            .lifetimes(Lifetimes {
                episodic_retention_days: Some(days),
                ..Lifetimes::default()
            })
            .build()
            .expect("engine")
    };
    let (short, long) = (engine(1), engine(10));
    let a = short
        .remember(put(
            &short,
            "default",
            "met Ada",
            MemoryScope::Episodic,
            user("u"),
        ))
        .expect("a");
    let b = long
        .remember(put(
            &long,
            "default",
            "met Bob",
            MemoryScope::Episodic,
            user("u"),
        ))
        .expect("b");
    let kept = long
        .remember(put(
            &long,
            "default",
            "Bob's number",
            MemoryScope::LongTerm,
            user("u"),
        ))
        .expect("long-term");
    clock.advance(Duration::from_secs(86_400 - 1));
    assert!(short.get_by_id(a.memory.id).expect("get").is_some());
    clock.advance(Duration::from_secs(1));
    assert!(
        short.get_by_id(a.memory.id).expect("get").is_none(),
        "expired"
    );
    assert!(short.get_by_id(b.memory.id).expect("get").is_some());
    let done = short.maintain().expect("maintain");
    assert_eq!(done.episodic, 1, "written under 10 days, older than 1");
    assert!(short.get_by_id(b.memory.id).expect("get").is_none());
    assert!(short.get_by_id(kept.memory.id).expect("get").is_some());
    assert_eq!(
        long.maintain().expect("again"),
        muisti::Maintained::default()
    );
    let none = Engine::builder(store.clone())
        .embedder(None)
        .lifetimes(Lifetimes {
            long_term_cap: Some(0),
            ..Lifetimes::default()
        })
        .build();
    assert!(none.is_err(), "a cap of 0 is refused");
}
