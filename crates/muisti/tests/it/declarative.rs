//! Declarative memory (seed 003) through the engine, on every backend it is given: the
//! write rules, the confirmation gate, conflicts, history and per-user scoping.

use muisti::{
    Category, Engine, ErrorKind, Filter, ListQuery, Memory, MemoryScope, Owner, Put, RecallRequest,
    Source,
    declarative::{HistoryEvent, Outcome},
};

use super::{ns, on_each_backend};

fn entry(engine: &Engine, user: &str, text: &str, kind: Category) -> Put {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.scope = MemoryScope::Declarative;
    p.category = kind;
    p.owner = Owner {
        user_id: Some(user.into()),
        ..Owner::default()
    };
    p
}

fn learned(engine: &Engine, user: &str, text: &str, kind: Category, confidence: u8) -> Put {
    let mut p = entry(engine, user, text, kind);
    p.source = Source::AgentLearned;
    p.confidence = Some(confidence);
    p
}

/// The user's active declarative entries.
fn entries(engine: &Engine, user: &str) -> Vec<Memory> {
    engine
        .list(ListQuery {
            partition: engine.partition(&ns("default")),
            filter: Filter {
                user_id: Some(user.into()),
                scope: Some(MemoryScope::Declarative),
                ..Filter::default()
            },
            ..ListQuery::default()
        })
        .expect("list")
        .items
}

/// The proposal a write the gate stopped answers.
fn proposal_of(written: muisti::Result<muisti::declarative::Declared>) -> Box<muisti::Proposal> {
    match written {
        Err(muisti::Error::ConfirmationRequired(p)) => p,
        other => panic!("expected a proposal, got {other:?}"),
    }
}

/// A learned write goes through the gate, then its confirmation.
fn confirmed(engine: &Engine, put: Put) -> muisti::declarative::Declared {
    let p = proposal_of(engine.declarative().declare(put));
    engine
        .declarative()
        .confirm(&p.id.to_string(), p.owner.user_id.as_deref().expect("user"))
        .expect("confirm")
}

#[test]
fn a_declarative_write_breaking_a_rule_is_refused_before_storage() {
    on_each_backend(|url, engine| {
        let base = || entry(&engine, "ada", "I live in Lisbon", Category::Fact);
        let mut cases: Vec<(Put, &str)> = Vec::new();
        // Each field alone is valid: the rules are between fields (409 over HTTP), but for a
        // confidence above 100.
        let mut p = base();
        p.category = Category::Core;
        cases.push((p, "type"));
        let mut p = base();
        p.key = Some(muisti::Key::new("home").expect("key"));
        cases.push((p, "key"));
        let mut p = base();
        p.confidence = Some(50);
        cases.push((p, "confidence"));
        let mut p = base();
        p.source = Source::AgentLearned;
        cases.push((p, "confidence"));
        let mut p = base();
        p.source = Source::AgentLearned;
        p.confidence = Some(101);
        cases.push((p, "confidence"));
        let mut p = base();
        p.source = Source::Import;
        cases.push((p, "source"));
        let mut p = base();
        p.owner.user_id = None;
        cases.push((p, "user_id"));
        for (put, field) in cases {
            let errors = [
                engine
                    .declarative()
                    .declare(put.clone())
                    .expect_err("declare refuses"),
                engine.remember(put).expect_err("remember refuses"),
            ];
            for err in errors {
                let kind = if err.to_string().contains("between 0 and 100") {
                    ErrorKind::InvalidInput
                } else {
                    ErrorKind::ConflictingFields
                };
                assert_eq!(err.kind(), kind, "{url}: {err}");
                assert!(err.to_string().contains(field), "{url}: {field}: {err}");
            }
        }
        assert_eq!(
            engine
                .count(&ns("default"), &Filter::default())
                .expect("count"),
            0,
            "{url}"
        );
        assert!(
            engine
                .declarative()
                .proposals("ada")
                .expect("proposals")
                .is_empty()
        );
    });
}

#[test]
fn an_agent_learned_entry_waits_for_confirmation() {
    on_each_backend(|url, engine| {
        let put = learned(
            &engine,
            "ada",
            "The user prefers meetings after 10am",
            Category::Preference,
            70,
        );
        let p = proposal_of(engine.declarative().declare(put.clone()));
        assert_eq!(p.confidence, Some(70));
        assert!(p.supersedes.is_none());
        assert!(entries(&engine, "ada").is_empty(), "{url}: nothing stored");
        let err = engine
            .remember(put)
            .expect_err("remember goes through the gate too");
        assert_eq!(err.kind(), ErrorKind::ConfirmationRequired, "{url}");
        let pending = engine.declarative().proposals("ada").expect("proposals");
        assert_eq!(pending.len(), 2, "{url}");
        assert!(
            engine
                .declarative()
                .proposals("bob")
                .expect("bob's")
                .is_empty()
        );
        let d = engine
            .declarative()
            .confirm(&p.id.to_string(), p.owner.user_id.as_deref().expect("user"))
            .expect("confirm");
        assert_eq!(d.outcome, Outcome::Added, "{url}");
        assert_eq!(d.memory.source, Source::AgentLearned);
        assert_eq!(d.memory.confidence, Some(70));
        let again = engine
            .declarative()
            .confirm(&p.id.to_string(), p.owner.user_id.as_deref().expect("user"))
            .expect_err("once");
        assert_eq!(again.kind(), ErrorKind::NotFound, "{url}");
        let other = pending.iter().find(|q| q.id != p.id).expect("the other");
        engine
            .declarative()
            .reject(
                &other.id.to_string(),
                other.owner.user_id.as_deref().expect("user"),
            )
            .expect("reject");
        assert_eq!(
            engine
                .declarative()
                .confirm(
                    &other.id.to_string(),
                    other.owner.user_id.as_deref().expect("user")
                )
                .expect_err("rejected")
                .kind(),
            ErrorKind::NotFound
        );
        assert_eq!(entries(&engine, "ada").len(), 1, "{url}");
        let history = engine.history(d.memory.id).expect("history");
        assert_eq!(history.len(), 1);
        assert_eq!(history[0].event, HistoryEvent::Confirm);
    });
}

#[test]
fn a_restatement_supersedes_in_place_and_keeps_the_old_text() {
    on_each_backend(|url, engine| {
        let a = engine
            .declarative()
            .declare(entry(&engine, "ada", "I am vegetarian", Category::Fact))
            .expect("a");
        let b = engine
            .declarative()
            .declare(entry(&engine, "ada", "I don't eat meat", Category::Fact))
            .expect("b");
        assert_eq!(b.outcome, Outcome::Superseded, "{url}");
        assert_eq!(b.memory.id, a.memory.id, "{url}: same id");
        assert_eq!(b.memory.text(), "I don't eat meat");
        let kept = entries(&engine, "ada");
        assert_eq!(kept.len(), 1, "{url}");
        let history = engine.history(a.memory.id).expect("history");
        let events: Vec<_> = history.iter().map(|h| h.event).collect();
        assert_eq!(
            events,
            [HistoryEvent::Add, HistoryEvent::Supersede],
            "{url}"
        );
        assert_eq!(history[1].old.as_deref(), Some("I am vegetarian"));
        // Another user's restatement is theirs alone.
        let c = engine
            .declarative()
            .declare(entry(&engine, "bob", "I don't eat meat", Category::Fact))
            .expect("bob");
        assert_eq!(c.outcome, Outcome::Added, "{url}");
        assert_eq!(entries(&engine, "ada").len(), 1);
        // A different slot of the same topic is a new entry.
        let d = engine
            .declarative()
            .declare(entry(
                &engine,
                "ada",
                "My sister is vegetarian",
                Category::Fact,
            ))
            .expect("sister");
        assert_eq!(d.outcome, Outcome::Added, "{url}");
    });
}

#[test]
fn user_stated_wins_and_learned_needs_a_higher_confidence() {
    on_each_backend(|url, engine| {
        let home = engine
            .declarative()
            .declare(entry(&engine, "ada", "I live in Paris", Category::Fact))
            .expect("home");
        let d = confirmed(
            &engine,
            learned(
                &engine,
                "ada",
                "The user lives in Berlin",
                Category::Fact,
                95,
            ),
        );
        assert_eq!(d.outcome, Outcome::Unchanged, "{url}");
        assert_eq!(d.memory.id, home.memory.id);
        assert_eq!(entries(&engine, "ada")[0].text(), "I live in Paris");

        let drink = |text: &str, confidence: u8| {
            confirmed(
                &engine,
                learned(&engine, "ada", text, Category::Preference, confidence),
            )
        };
        let tea = drink("My favourite drink is tea", 60);
        assert_eq!(tea.outcome, Outcome::Added, "{url}");
        let weaker = drink("My favourite drink is coffee now", 50);
        assert_eq!(weaker.outcome, Outcome::Unchanged, "{url}");
        let stronger = drink("My favourite drink is coffee now", 80);
        assert_eq!(stronger.outcome, Outcome::Superseded, "{url}");
        assert_eq!(stronger.memory.id, tea.memory.id);
        assert_eq!(stronger.memory.confidence, Some(80));
        // The user's own word supersedes a learned entry.
        let own = engine
            .declarative()
            .declare(entry(
                &engine,
                "ada",
                "My favorite drink is green tea",
                Category::Preference,
            ))
            .expect("own");
        assert_eq!(own.outcome, Outcome::Superseded, "{url}");
        assert_eq!(own.memory.source, Source::UserStated);
        assert_eq!(own.memory.confidence, None);
    });
}

#[test]
fn edits_and_deletes_take_effect_and_are_kept_in_the_history() {
    on_each_backend(|url, engine| {
        let d = confirmed(
            &engine,
            learned(&engine, "ada", "Keep answers short", Category::Rule, 40),
        );
        let at = muisti::Locator::Id {
            tenant: engine.tenant().clone(),
            id: d.memory.id,
        };
        let edited = engine
            .update(muisti::UpdateRequest::new(
                at.clone(),
                muisti::Patch {
                    content: Some("Keep answers under five sentences".into()),
                    ..Default::default()
                },
            ))
            .expect("edit");
        assert_eq!(
            edited.source,
            Source::UserStated,
            "{url}: an edit is the user's word"
        );
        assert_eq!(edited.confidence, None);
        let moved = engine.update(muisti::UpdateRequest::new(
            at.clone(),
            muisti::Patch {
                scope: Some(MemoryScope::LongTerm),
                ..Default::default()
            },
        ));
        assert_eq!(
            moved.expect_err("stays").kind(),
            ErrorKind::ConflictingFields
        );
        assert!(engine.forget(&at).expect("forget"), "{url}");
        let events: Vec<_> = engine
            .history(d.memory.id)
            .expect("history")
            .iter()
            .map(|h| h.event)
            .collect();
        assert_eq!(
            events,
            [
                HistoryEvent::Confirm,
                HistoryEvent::Update,
                HistoryEvent::Delete
            ],
            "{url}"
        );
        // Deleting the user's data takes the history and pending proposals with it.
        let _ = engine.declarative().declare(learned(
            &engine,
            "ada",
            "Use metric units",
            Category::Rule,
            50,
        ));
        assert_eq!(
            engine
                .declarative()
                .proposals("ada")
                .expect("pending")
                .len(),
            1
        );
        engine
            .forget_where(
                &ns("default"),
                &Filter {
                    user_id: Some("ada".into()),
                    ..Filter::default()
                },
            )
            .expect("forget ada");
        assert!(
            engine.history(d.memory.id).expect("history").is_empty(),
            "{url}"
        );
        assert!(
            engine
                .declarative()
                .proposals("ada")
                .expect("pending")
                .is_empty(),
            "{url}"
        );
    });
}

#[test]
fn no_read_without_a_user_sees_declarative_entries() {
    on_each_backend(|url, engine| {
        engine
            .declarative()
            .declare(entry(
                &engine,
                "ada",
                "I am allergic to peanuts",
                Category::Fact,
            ))
            .expect("fact");
        let mut other = Put::new(engine.partition(&ns("default")), None, "peanuts are cheap");
        other.owner.user_id = Some("ada".into());
        engine.remember(other).expect("long-term");
        let all = engine
            .list(ListQuery::all(engine.partition(&ns("default"))))
            .expect("list");
        assert_eq!(all.items.len(), 1, "{url}: only the long-term memory");
        let asked = engine.list(ListQuery {
            partition: engine.partition(&ns("default")),
            filter: Filter {
                scope: Some(MemoryScope::Declarative),
                ..Filter::default()
            },
            ..ListQuery::default()
        });
        assert_eq!(
            asked.expect_err("needs a user").kind(),
            ErrorKind::ConflictingFields
        );
        let hits = engine
            .recall(&RecallRequest::new(ns("default"), "peanuts allergy", 10))
            .expect("recall");
        assert!(
            hits.iter()
                .all(|h| h.memory.scope != MemoryScope::Declarative),
            "{url}"
        );
        let mut mine = RecallRequest::new(ns("default"), "peanuts allergy", 10);
        mine.filter.user_id = Some("ada".into());
        let hits = engine.recall(&mine).expect("recall");
        assert!(
            hits.iter()
                .any(|h| h.memory.scope == MemoryScope::Declarative)
        );
        mine.filter.user_id = Some("bob".into());
        assert!(engine.recall(&mine).expect("recall").is_empty(), "{url}");
    });
}

mod isolation {
    //! Property: whatever two users do at once, each user's declarative entries end as
    //! they would had the other done nothing (no read, supersede or delete crosses users).

    use muisti::{Category, Engine, MemoryScope, Put, Source};
    use proptest::prelude::*;

    /// Statements that restate, update or sit beside each other, so supersedes happen.
    const TEXTS: [(&str, Category); 10] = [
        ("I live in Paris", Category::Fact),
        ("I moved to Berlin", Category::Fact),
        ("I am vegetarian", Category::Fact),
        ("I don't eat meat", Category::Fact),
        ("My sister lives in Rome", Category::Fact),
        ("My favourite colour is blue", Category::Preference),
        ("My favorite color is green now", Category::Preference),
        ("I prefer window seats", Category::Preference),
        ("Always answer in French", Category::Rule),
        ("Reply in English from now on", Category::Rule),
    ];

    #[derive(Clone, Debug)]
    enum Op {
        /// Declare text `i`, user-stated or learned with a confidence.
        Declare(usize, Option<u8>),
        /// Delete the user's `n`th entry (modulo their count).
        Delete(usize),
        /// Rewrite the user's `n`th entry with text `i`.
        Edit(usize, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => (0..TEXTS.len(), prop::option::of(0u8..=100)).prop_map(|(i, c)| Op::Declare(i, c)),
            1 => (0..8usize).prop_map(Op::Delete),
            1 => (0..8usize, 0..TEXTS.len()).prop_map(|(n, i)| Op::Edit(n, i)),
        ]
    }

    fn apply(engine: &Engine, user: &str, op: &Op) {
        let mine = || {
            let mut e = engine
                .declarative()
                .declarative_entries(&muisti::Namespace::default_ns(), user)
                .expect("entries");
            // The same order in every engine: ids differ between them (and within a
            // millisecond their order is random), so entries of one text are told apart by
            // source and confidence too.
            let key = |m: &muisti::Memory| {
                (
                    m.category.to_string(),
                    m.text().into_owned(),
                    m.source.to_string(),
                    m.confidence,
                )
            };
            e.sort_by_key(key);
            e
        };
        match op {
            Op::Declare(i, confidence) => {
                let (text, kind) = &TEXTS[*i];
                let mut p = Put::new(
                    engine.partition(&muisti::Namespace::default_ns()),
                    None,
                    *text,
                );
                p.scope = MemoryScope::Declarative;
                p.category = kind.clone();
                p.owner.user_id = Some(user.into());
                if let Some(c) = confidence {
                    p.source = Source::AgentLearned;
                    p.confidence = Some(*c);
                }
                match engine.declarative().declare(p) {
                    Ok(_) => {}
                    Err(muisti::Error::ConfirmationRequired(proposal)) => {
                        engine
                            .declarative()
                            .confirm(
                                &proposal.id.to_string(),
                                proposal.owner.user_id.as_deref().expect("user"),
                            )
                            .expect("confirm");
                    }
                    Err(e) => panic!("declare: {e}"),
                }
            }
            Op::Delete(n) => {
                let entries = mine();
                if let Some(m) = entries.get(n % entries.len().max(1)) {
                    engine
                        .forget(&muisti::Locator::Id {
                            tenant: engine.tenant().clone(),
                            id: m.id,
                        })
                        .expect("forget");
                }
            }
            Op::Edit(n, i) => {
                let entries = mine();
                if let Some(m) = entries.get(n % entries.len().max(1)) {
                    engine
                        .update(muisti::UpdateRequest::new(
                            muisti::Locator::Id {
                                tenant: engine.tenant().clone(),
                                id: m.id,
                            },
                            muisti::Patch {
                                content: Some(TEXTS[*i].0.into()),
                                ..Default::default()
                            },
                        ))
                        .expect("edit");
                }
            }
        }
    }

    /// A user's entries as (type, text, source, confidence), in a stable order.
    fn state(engine: &Engine, user: &str) -> Vec<(String, String, String, Option<u8>)> {
        let mut s: Vec<_> = engine
            .declarative()
            .declarative_entries(&muisti::Namespace::default_ns(), user)
            .expect("entries")
            .into_iter()
            .map(|m| {
                (
                    m.category.to_string(),
                    m.text().into_owned(),
                    m.source.to_string(),
                    m.confidence,
                )
            })
            .collect();
        s.sort();
        s
    }

    fn engine() -> Engine {
        Engine::builder(std::sync::Arc::new(muisti::MemStore::new()))
            .build()
            .expect("engine")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn no_user_reads_supersedes_or_deletes_anothers(
            ops in prop::collection::vec((prop::bool::ANY, op()), 1..24)
        ) {
            let shared = engine();
            let (alone_a, alone_b) = (engine(), engine());
            for (first, op) in &ops {
                let user = if *first { "ada" } else { "bob" };
                apply(&shared, user, op);
                apply(if *first { &alone_a } else { &alone_b }, user, op);
            }
            prop_assert_eq!(state(&shared, "ada"), state(&alone_a, "ada"));
            prop_assert_eq!(state(&shared, "bob"), state(&alone_b, "bob"));
            // Reads without a user see none of it; with a user, only theirs.
            let all = shared
                .list(muisti::ListQuery::all(shared.partition(&muisti::Namespace::default_ns())))
                .expect("list");
            prop_assert!(all.items.iter().all(|m| m.scope != MemoryScope::Declarative));
        }
    }
}

/// A write may name the entry it replaces (`supersedes`), where the detector would not
/// match the two: the named entry is replaced in place, as the rules allow, and only an
/// active entry of the same user, namespace and type can be named.
#[test]
fn a_write_naming_the_entry_it_supersedes_replaces_exactly_that_one() {
    on_each_backend(|url, engine| {
        let tea = engine
            .declarative()
            .declare(entry(
                &engine,
                "ada",
                "Oolong is my tea",
                Category::Preference,
            ))
            .expect("tea")
            .memory;
        let coffee = engine
            .declarative()
            .declare(entry(
                &engine,
                "ada",
                "Flat white, always",
                Category::Preference,
            ))
            .expect("coffee")
            .memory;
        let named = engine
            .declarative()
            .declare_superseding(
                entry(
                    &engine,
                    "ada",
                    "Mostly sencha these days",
                    Category::Preference,
                ),
                tea.id,
            )
            .expect("named");
        assert_eq!(named.outcome, Outcome::Superseded, "{url}");
        assert_eq!(named.memory.id, tea.id, "{url}: in place");
        assert_eq!(named.memory.text(), "Mostly sencha these days");
        let history = engine.history(tea.id).expect("history");
        let events: Vec<HistoryEvent> = history.iter().map(|h| h.event).collect();
        assert_eq!(
            events,
            [HistoryEvent::Add, HistoryEvent::Supersede],
            "{url}"
        );
        assert_eq!(entries(&engine, "ada").len(), 2, "{url}: coffee untouched");

        // Only an active entry of the user, namespace and type can be named; nothing is
        // written otherwise.
        let bob = engine
            .declarative()
            .declare(entry(&engine, "bob", "Earl Grey", Category::Preference))
            .expect("bob")
            .memory;
        let refused = [
            (
                entry(&engine, "ada", "Rooibos", Category::Preference),
                bob.id,
                ErrorKind::NotFound,
            ),
            (
                entry(&engine, "ada", "Rooibos", Category::Fact),
                coffee.id,
                ErrorKind::ConflictingFields,
            ),
        ];
        for (put, target, kind) in refused {
            let e = engine
                .declarative()
                .declare_superseding(put, target)
                .expect_err("refused");
            assert_eq!(e.kind(), kind, "{url}: {e}");
        }
        assert_eq!(entries(&engine, "bob")[0].text(), "Earl Grey", "{url}");
        assert_eq!(entries(&engine, "ada").len(), 2, "{url}");

        // A learned write names it too: the proposal carries the target, and confirming
        // replaces exactly it. Learned never replaces the user's word, even when named.
        let learned_coffee = learned(
            &engine,
            "ada",
            "Switched to oat cortados",
            Category::Preference,
            80,
        );
        let p = proposal_of(
            engine
                .declarative()
                .declare_superseding(learned_coffee, coffee.id),
        );
        assert_eq!(
            p.supersedes.as_ref().map(|s| s.id),
            Some(coffee.id),
            "{url}"
        );
        let kept = engine
            .declarative()
            .confirm(&p.id.to_string(), p.owner.user_id.as_deref().expect("user"))
            .expect("confirm");
        assert_eq!(
            kept.outcome,
            Outcome::Unchanged,
            "{url}: the user's word stands"
        );
        assert_eq!(kept.memory.text(), "Flat white, always", "{url}");
        let guess = learned(&engine, "cy", "Likes oolong", Category::Preference, 40);
        let first = confirmed(&engine, guess).memory;
        let better = learned(&engine, "cy", "Prefers sencha", Category::Preference, 90);
        let b = proposal_of(engine.declarative().declare_superseding(better, first.id));
        let replaced = engine
            .declarative()
            .confirm(&b.id.to_string(), b.owner.user_id.as_deref().expect("user"))
            .expect("confirm");
        assert_eq!(replaced.outcome, Outcome::Superseded, "{url}");
        assert_eq!(replaced.memory.id, first.id, "{url}");
        assert_eq!(replaced.memory.confidence, Some(90), "{url}");
    });
}

/// A judge with answers given in order, recording what it was asked.
struct ScriptedJudge {
    answers: std::sync::Mutex<Vec<Result<Option<usize>, muisti::declarative::JudgeError>>>,
    asked: std::sync::Mutex<Vec<(String, Vec<String>)>>,
}

impl muisti::declarative::ConflictJudge for ScriptedJudge {
    fn judge(
        &self,
        new: &str,
        _kind: &Category,
        candidates: &[&str],
    ) -> Result<Option<usize>, muisti::declarative::JudgeError> {
        self.asked.lock().expect("lock").push((
            new.to_owned(),
            candidates.iter().map(|c| (*c).to_owned()).collect(),
        ));
        self.answers.lock().expect("lock").remove(0)
    }

    fn name(&self) -> &str {
        "scripted"
    }
}

/// With a judge, the judge decides among the detector's candidates (not the vetoed ones);
/// when it fails, or names no candidate, the detector's verdict stands.
#[test]
fn a_conflict_judge_decides_among_the_detectors_candidates() {
    on_each_backend(|url, engine| {
        let judge = std::sync::Arc::new(ScriptedJudge {
            answers: std::sync::Mutex::new(vec![
                Ok(Some(0)),
                Ok(None),
                Err(muisti::declarative::JudgeError("down".into())),
                Ok(Some(7)),
            ]),
            asked: std::sync::Mutex::new(Vec::new()),
        });
        let engine = engine.with_conflict_judge(judge.clone());
        let fact = |text: &str| entry(&engine, "ada", text, Category::Fact);
        let tea = engine
            .declarative()
            .declare(fact("Oolong tea, every afternoon"))
            .expect("tea");
        // No cue, no slot: the detector would add it; the judge says it replaces the tea.
        let sencha = engine
            .declarative()
            .declare(fact("Sencha tea these afternoons"))
            .expect("sencha");
        assert_eq!(sencha.outcome, Outcome::Superseded, "{url}");
        assert_eq!(sencha.memory.id, tea.memory.id, "{url}");
        // The detector would supersede the home; the judge says both hold.
        let paris = engine
            .declarative()
            .declare(fact("I live in Paris"))
            .expect("paris");
        let berlin = engine
            .declarative()
            .declare(fact("I moved to Berlin"))
            .expect("berlin");
        assert_eq!(berlin.outcome, Outcome::Added, "{url}: the judge decided");
        // The judge fails: the detector decides (the diet slot).
        engine
            .declarative()
            .declare(fact("I am vegetarian"))
            .expect("diet");
        let meat = engine
            .declarative()
            .declare(fact("I don't eat meat"))
            .expect("meat");
        assert_eq!(
            meat.outcome,
            Outcome::Superseded,
            "{url}: the detector decided"
        );
        // The judge names no candidate: the detector decides (no evidence: added).
        let chess = engine
            .declarative()
            .declare(fact("Plays chess on weekends"))
            .expect("chess");
        let go = engine
            .declarative()
            .declare(fact("Plays go on weekends"))
            .expect("go");
        assert_ne!(go.memory.id, chess.memory.id, "{url}");
        // Another person's fact is vetoed: the judge is not asked.
        let asked_before = judge.asked.lock().expect("lock").len();
        engine
            .declarative()
            .declare(fact("My sister lives in Paris"))
            .expect("sister");
        assert_eq!(
            judge.asked.lock().expect("lock").len(),
            asked_before,
            "{url}"
        );
        let asked = judge.asked.lock().expect("lock").clone();
        assert_eq!(
            asked.len(),
            4,
            "{url}: every answer was asked for: {asked:?}"
        );
        assert_eq!(asked[0].0, "Sencha tea these afternoons", "{url}");
        assert_eq!(asked[0].1, ["Oolong tea, every afternoon"], "{url}");
        assert!(
            asked[1].1.contains(&"I live in Paris".to_owned()),
            "{url}: {asked:?}"
        );
        assert!(paris.memory.id != berlin.memory.id, "{url}");
    });
}
