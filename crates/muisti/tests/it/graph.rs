//! The knowledge graph through the engine, on every backend: offline extraction in the
//! background, entity resolution, invalidation of single-valued facts, as-of queries, and
//! what deleting memories does to the facts they supported.

use muisti::{
    Engine, Filter, Put, Timestamp,
    graph::{GraphExtraction, Relation, RelationQuery},
};

use super::ns;

/// An engine extracting offline over every backend's store ([`super::on_every_backend`]).
fn on_each_graph(check: impl Fn(&str, Engine)) {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .graph_extraction(GraphExtraction::Offline)
                .build()
                .expect("engine")
        },
        check,
    );
}

fn say(engine: &Engine, user: &str, session: &str, text: &str, at: Option<&str>) -> muisti::Memory {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.owner.user_id = Some(user.into());
    p.owner.session_id = Some(session.into());
    p.valid_from = at.map(|t| Timestamp::parse(t).expect("time"));
    engine.remember(p).expect("remember").memory
}

/// Waits until the worker has read every queued memory.
fn settled(engine: &Engine) {
    muisti_testkit::wait_until("the graph worker drained its queue", || {
        engine.graph().pending().expect("pending") == 0
    });
}

fn triples(rs: &[Relation]) -> Vec<(String, String, String)> {
    rs.iter()
        .map(|r| (r.subject.clone(), r.predicate.clone(), r.object.clone()))
        .collect()
}

fn t(s: &str, p: &str, o: &str) -> (String, String, String) {
    (s.into(), p.into(), o.into())
}

fn query(user: &str, s: Option<&str>, p: Option<&str>, o: Option<&str>) -> RelationQuery {
    RelationQuery {
        user_id: Some(user.into()),
        subject: s.map(str::to_owned),
        predicate: p.map(str::to_owned),
        object: o.map(str::to_owned),
        as_of: None,
    }
}

/// The seed's example, offline: its entities and its four kinds of edges, and
/// `query(None, "works_at", None)` answers Alice → Google.
#[test]
fn the_seeds_example_gives_its_entities_and_edges_offline() {
    on_each_graph(|url, engine| {
        for text in [
            "Alice works at Google in Mountain View.",
            "She is the manager of the ML team.",
            "Bob reports to Alice and works on TensorFlow.",
        ] {
            say(&engine, "g1", "s1", text, None);
        }
        settled(&engine);
        let works_at = engine
            .graph()
            .relations(&query("g1", None, Some("works_at"), None))
            .expect("query");
        assert_eq!(
            triples(&works_at),
            [t("Alice", "works_at", "Google")],
            "{url}"
        );
        let alice = engine
            .graph()
            .entity_relations(Some("g1"), "alice", None)
            .expect("alice");
        assert_eq!(
            triples(&alice),
            [
                t("Alice", "works_at", "Google"),
                t("Alice", "manager_of", "ML team"),
                t("Bob", "reports_to", "Alice"),
            ],
            "{url}"
        );
        let bob = engine
            .graph()
            .relations(&query("g1", Some("Bob"), None, None))
            .expect("bob");
        assert_eq!(
            triples(&bob),
            [
                t("Bob", "reports_to", "Alice"),
                t("Bob", "works_on", "TensorFlow")
            ],
            "{url}"
        );
        let people = engine
            .graph()
            .entities(Some("g1"), Some("person"))
            .expect("people");
        let names: Vec<&str> = people.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Alice", "Bob"], "{url}");
        let alice = engine
            .graph()
            .entity(Some("g1"), "Alice")
            .expect("read")
            .expect("alice");
        assert_eq!(alice.mentions, 3, "{url}: named by all three memories");
        assert!(
            engine
                .graph()
                .relations(&query("g2", None, Some("works_at"), None))
                .expect("q")
                .is_empty(),
            "{url}: another user's graph is empty"
        );
    });
}

/// A new value of a single-valued fact closes the old edge instead of deleting it: now it
/// answers the new value, as of an earlier time the old one.
#[test]
fn a_move_closes_the_old_edge_and_as_of_still_finds_it() {
    on_each_graph(|url, engine| {
        say(
            &engine,
            "u",
            "a",
            "Carol lives in Paris.",
            Some("2023-01-10T00:00:00Z"),
        );
        settled(&engine);
        say(
            &engine,
            "u",
            "b",
            "Carol moved to Berlin.",
            Some("2024-03-01T00:00:00Z"),
        );
        settled(&engine);
        let lives = |as_of: Option<&str>| {
            let mut q = query("u", Some("Carol"), Some("lives_in"), None);
            q.as_of = as_of.map(|t| Timestamp::parse(t).expect("time"));
            triples(&engine.graph().relations(&q).expect("query"))
        };
        assert_eq!(lives(None), [t("Carol", "lives_in", "Berlin")], "{url}");
        assert_eq!(
            lives(Some("2023-06-01T00:00:00Z")),
            [t("Carol", "lives_in", "Paris")],
            "{url}: where Carol lived in 2023"
        );
        assert!(lives(Some("2022-06-01T00:00:00Z")).is_empty(), "{url}");
        let paris = engine
            .graph()
            .relations(&RelationQuery {
                as_of: Some(Timestamp::parse("2023-06-01T00:00:00Z").expect("t")),
                ..query("u", None, None, Some("Paris"))
            })
            .expect("by object");
        assert_eq!(paris.len(), 1, "{url}");
        assert!(
            paris[0].invalid_at.is_some() && paris[0].expired_at.is_some(),
            "{url}"
        );
    });
}

/// Deleting the memory that alone supported a fact deletes the fact and the entities no
/// memory names any more; deleting a user's memories empties their graph, as of any time.
#[test]
fn deleting_memories_retires_what_only_they_supported() {
    on_each_graph(|url, engine| {
        let a = say(&engine, "d", "s", "Dana works at Initech.", None);
        say(&engine, "d", "s", "Dana likes jazz.", None);
        settled(&engine);
        assert!(
            engine
                .forget(&muisti::Locator::Id {
                    tenant: engine.tenant().clone(),
                    id: a.id
                })
                .expect("forget")
        );
        let works = engine
            .graph()
            .relations(&query("d", None, Some("works_at"), None))
            .expect("q");
        assert!(works.is_empty(), "{url}: {works:?}");
        assert!(
            engine
                .graph()
                .entity(Some("d"), "Initech")
                .expect("read")
                .is_none(),
            "{url}"
        );
        assert_eq!(
            triples(
                &engine
                    .graph()
                    .relations(&query("d", None, Some("likes"), None))
                    .expect("q")
            ),
            [t("Dana", "likes", "jazz")],
            "{url}"
        );
        let everything = Filter {
            user_id: Some("d".into()),
            ..Filter::default()
        };
        engine
            .forget_where(&ns("default"), &everything)
            .expect("forget user");
        assert!(
            engine
                .graph()
                .entities(Some("d"), None)
                .expect("read")
                .is_empty(),
            "{url}"
        );
        for as_of in [
            None,
            Some("2000-01-01T00:00:00Z"),
            Some("2100-01-01T00:00:00Z"),
        ] {
            let q = RelationQuery {
                as_of: as_of.map(|t| Timestamp::parse(t).expect("time")),
                ..query("d", None, None, None)
            };
            assert!(
                engine.graph().relations(&q).expect("q").is_empty(),
                "{url}: nothing kept, as of {as_of:?}"
            );
        }
        // Nor who the conversation named last: "she" names no one now.
        say(&engine, "d", "s", "She works at Initech.", None);
        settled(&engine);
        assert!(
            engine
                .graph()
                .relations(&query("d", None, Some("works_at"), None))
                .expect("q")
                .is_empty(),
            "{url}: the forgotten user's last person is gone"
        );
    });
}

/// An extractor that always fails.
struct Broken;

impl muisti::graph::GraphExtractor for Broken {
    fn extract(
        &self,
        _: &str,
        _: &muisti::graph::Context<'_>,
    ) -> Result<muisti::graph::Extracted, muisti::graph::ExtractError> {
        Err(muisti::graph::ExtractError("the model is down".into()))
    }

    fn name(&self) -> &str {
        "broken"
    }
}

/// A failing extraction keeps the memory and its queue item (retried), and after five
/// attempts sets the item aside: nothing is lost, nothing waits forever.
#[test]
fn a_failing_extraction_is_retried_then_set_aside() {
    let store = muisti::open_store("mem://").expect("store");
    let engine = Engine::builder(store.clone())
        .graph_extraction(GraphExtraction::With(std::sync::Arc::new(Broken)))
        .build()
        .expect("engine");
    let m = say(&engine, "f", "s", "Fay works at Globex.", None);
    for _ in 0..10 {
        if engine.graph().pending().expect("pending") == 0 {
            break;
        }
        engine.drain_graph_queue().expect("a round");
    }
    assert_eq!(engine.graph().pending().expect("pending"), 0, "set aside");
    let failed = store
        .count(
            &muisti::Partition::new(
                muisti::Tenant::new("_muisti").expect("tenant"),
                ns(muisti::graph::FAILED_NAMESPACE),
            ),
            &Filter::default(),
        )
        .expect("count");
    assert_eq!(failed, 1);
    assert!(
        engine.get_by_id(m.id).expect("read").is_some(),
        "the memory stays"
    );
    assert!(
        engine
            .graph()
            .entities(Some("f"), None)
            .expect("read")
            .is_empty()
    );
}

/// Entity resolution: a first name after the full one, a full name after the first one,
/// initials, an organisation's ending and case are one entity each, kept as aliases; a
/// first name two people share resolves to neither.
#[test]
fn names_resolve_to_one_entity_and_shared_short_forms_to_none() {
    on_each_graph(|url, engine| {
        for text in [
            "I met Priya Sharma at the Massachusetts Institute of Technology.",
            "Later Priya showed me around MIT.",
            "Yesterday I had lunch with Sam.",
            "My friend Sam Okafor got promoted at Acme Corp.",
            "Then Acme hired two more people, and I learned Tensorflow.",
            "I now use TensorFlow every day.",
            "I know Alice Chen from school and Alice Moreno from work.",
        ] {
            say(&engine, "r1", "s1", text, None);
            settled(&engine);
        }
        let id = |name: &str| {
            engine
                .graph()
                .entity(Some("r1"), name)
                .expect("read")
                .map(|e| e.id)
        };
        for (a, b) in [
            ("Priya Sharma", "Priya"),
            ("Priya", "Sharma"),
            ("Massachusetts Institute of Technology", "MIT"),
            ("Sam", "Sam Okafor"),
            ("Okafor", "Sam"),
            ("Acme Corp", "Acme"),
            ("TensorFlow", "tensorflow"),
        ] {
            assert!(id(a).is_some(), "{url}: {a} is an entity");
            assert_eq!(id(a), id(b), "{url}: {a} and {b} are one entity");
        }
        assert_ne!(id("Alice Chen"), id("Alice Moreno"), "{url}");
        assert!(id("Alice Chen").is_some(), "{url}");
        assert_eq!(
            id("Alice"),
            None,
            "{url}: two Alices: a bare Alice is neither"
        );
        let sam = engine
            .graph()
            .entity(Some("r1"), "Okafor")
            .expect("read")
            .expect("sam");
        assert_eq!(sam.name, "Sam", "{url}: named as first seen");
        assert_eq!(sam.aliases, ["Sam Okafor"], "{url}");
        assert_eq!(sam.mentions, 2, "{url}: both memories count");
        assert!(
            engine
                .graph()
                .entity(Some("r2"), "Priya")
                .expect("read")
                .is_none(),
            "{url}: another user's aliases are theirs"
        );
    });
}

/// The resolution corpora, blind-labelled: pairwise precision and recall of which names
/// are one entity (the figures `muisti bench graph-extract` prints; floors just under
/// them, so a regression fails). The first corpus guided the resolver's rules (P 0.897 R
/// 0.782); the held-out one was written blind afterwards and scored once (P 0.897 R 0.814).
#[test]
fn resolution_on_the_labelled_corpora() {
    for (text, precision, recall) in [
        (
            include_str!("../../../muisti-lang/tests/data/graph-resolution.jsonl"),
            0.88,
            0.77,
        ),
        (
            include_str!("../../../muisti-lang/tests/data/graph-resolution-heldout.jsonl"),
            0.88,
            0.8,
        ),
    ] {
        let corpus: Vec<muisti_bench::resolution::LabelledNames> =
            muisti_lang::labelled::parse_jsonl(text).expect("labelled conversations");
        assert!(corpus.len() >= 20);
        let engine = Engine::builder(muisti::open_store("mem://").expect("store"))
            .graph_extraction(GraphExtraction::Offline)
            .build()
            .expect("engine");
        let s = muisti_bench::resolution::evaluate_resolution(&engine, &corpus).expect("evaluate");
        assert!(s.precision() >= precision, "{s:?}");
        assert!(s.recall() >= recall, "{s:?}");
    }
}

/// An entity's neighbourhood: one step is its own facts, two also those of the entities
/// at their other ends; as of a past time, the facts that held then.
#[test]
fn the_neighbourhood_of_an_entity_by_steps() {
    on_each_graph(|url, engine| {
        for text in [
            "Alice works at Google in Mountain View.",
            "Bob reports to Alice.",
            "Carol reports to Bob.",
        ] {
            say(&engine, "n1", "s1", text, Some("2024-01-01T00:00:00Z"));
        }
        say(
            &engine,
            "n1",
            "s1",
            "Alice works at Initech.",
            Some("2025-01-01T00:00:00Z"),
        );
        settled(&engine);
        let hood = |hops: usize, as_of: Option<&str>| {
            let mut got = triples(
                &engine
                    .graph()
                    .neighbourhood(
                        Some("n1"),
                        "Bob",
                        hops,
                        as_of.map(|t| Timestamp::parse(t).expect("time")),
                        100,
                    )
                    .expect("neighbourhood"),
            );
            got.sort();
            got
        };
        assert_eq!(
            hood(1, None),
            [
                t("Bob", "reports_to", "Alice"),
                t("Carol", "reports_to", "Bob")
            ],
            "{url}"
        );
        assert_eq!(
            hood(2, None),
            [
                t("Alice", "works_at", "Initech"),
                t("Bob", "reports_to", "Alice"),
                t("Carol", "reports_to", "Bob")
            ],
            "{url}"
        );
        assert_eq!(
            hood(3, Some("2024-06-01T00:00:00Z")),
            [
                t("Alice", "works_at", "Google"),
                t("Bob", "reports_to", "Alice"),
                t("Carol", "reports_to", "Bob"),
                t("Google", "located_in", "Mountain View"),
            ],
            "{url}: in 2024 Alice was at Google"
        );
        let capped = engine
            .graph()
            .neighbourhood(Some("n1"), "Bob", 3, None, 2)
            .expect("capped");
        assert_eq!(capped.len(), 2, "{url}: at most the limit");
        assert!(
            engine
                .graph()
                .neighbourhood(Some("n1"), "Nobody", 2, None, 100)
                .expect("none")
                .is_empty(),
            "{url}"
        );
    });
}

/// Graph-aware recall: with a graph weight, a memory the graph links to what the query
/// names (here a step away: the query names Google, the memory Alice, who works there)
/// joins the hits with its graph signal, within the request's filter; with weight 0 the
/// graph plays no part.
#[test]
fn graph_aware_recall_pulls_linked_memories_within_the_filter() {
    on_each_graph(|url, plain| {
        let store = plain.store().clone();
        let with_graph = |weight: f32| {
            Engine::builder(store.clone())
                .recall_config(muisti::RecallConfig {
                    graph: weight,
                    // Bob's memory is the turn after Alice's: neighbourhood evidence would
                    // lift it too; this test is about the graph alone.
                    neighbours: 0.0,
                    ..muisti::RecallConfig::default()
                })
                .build()
                .expect("engine")
        };
        say(&plain, "q1", "s1", "Alice works at Google.", None);
        let linked = say(&plain, "q1", "s1", "Bob reports to Alice.", None);
        let mut other = Put::new(
            plain.partition(&ns("default")),
            None,
            "Dana reports to Alice.",
        );
        other.owner.user_id = Some("q1".into());
        other.category = muisti::Category::Custom("notes".into());
        let other = plain.remember(other).expect("remember").memory;
        say(&plain, "q1", "s1", "The weather was sunny all week.", None);
        settled(&plain);
        let recall = |engine: &Engine, category: Option<muisti::Category>| {
            let mut req = muisti::RecallRequest::new(ns("default"), "What is Google like?", 10);
            req.mode = muisti::RecallMode::Lexical;
            req.filter = Filter {
                user_id: Some("q1".into()),
                category,
                ..Filter::default()
            };
            engine.recall(&req).expect("recall")
        };
        let ids = |hits: &[muisti::RecallHit]| -> Vec<muisti::MemoryId> {
            hits.iter().map(|h| h.memory.id).collect()
        };
        let off = recall(&with_graph(0.0), None);
        assert!(!ids(&off).contains(&linked.id), "{url}: no word in common");
        assert!(off.iter().all(|h| h.signals.graph.is_none()), "{url}");
        let on = recall(&with_graph(0.5), None);
        let hit = on
            .iter()
            .find(|h| h.memory.id == linked.id)
            .unwrap_or_else(|| panic!("{url}: the graph links Bob's memory to Google"));
        assert!(hit.signals.graph.is_some_and(|g| g > 0.0), "{url}");
        assert!(ids(&on).contains(&other.id), "{url}: Dana's too");
        let filtered = recall(&with_graph(0.5), Some(muisti::Category::default()));
        assert!(
            !ids(&filtered).contains(&other.id),
            "{url}: the graph's memories meet the filter"
        );
        let all_conversation = filtered
            .iter()
            .all(|h| h.memory.category == muisti::Category::default());
        assert!(all_conversation, "{url}");
    });
}

/// A fact dates itself by the text ("in 2019", "last month"), resolved against the
/// memory's time: a move told late takes its place in the past, closed by the newer
/// value already known.
#[test]
fn a_fact_is_dated_by_its_text() {
    on_each_graph(|url, engine| {
        say(
            &engine,
            "d1",
            "s1",
            "Alice lives in Berlin.",
            Some("2024-06-01T00:00:00Z"),
        );
        say(
            &engine,
            "d1",
            "s1",
            "Alice moved to Lisbon in 2019.",
            Some("2025-01-10T00:00:00Z"),
        );
        say(
            &engine,
            "d1",
            "s1",
            "Bob joined Initech last month.",
            Some("2025-01-10T00:00:00Z"),
        );
        settled(&engine);
        let at = |t: &str| {
            let mut q = query("d1", Some("Alice"), Some("lives_in"), None);
            q.as_of = Some(Timestamp::parse(t).expect("time"));
            triples(&engine.graph().relations(&q).expect("query"))
        };
        assert_eq!(
            at("2020-01-01T00:00:00Z"),
            [t("Alice", "lives_in", "Lisbon")],
            "{url}"
        );
        assert_eq!(at("2018-01-01T00:00:00Z"), [], "{url}: before 2019");
        assert_eq!(
            triples(
                &engine
                    .graph()
                    .relations(&query("d1", Some("Alice"), Some("lives_in"), None))
                    .expect("now")
            ),
            [t("Alice", "lives_in", "Berlin")],
            "{url}: the newer value holds"
        );
        let bob = engine
            .graph()
            .relations(&query("d1", Some("Bob"), Some("works_at"), None))
            .expect("bob");
        assert_eq!(
            bob.first().and_then(|r| r.valid_at).map(|t| t.to_string()),
            Some("2024-12-10T00:00:00.000Z".to_owned()),
            "{url}: last month"
        );
    });
}

/// A memory whose text changes: what it stated before is closed (still found as of
/// earlier), what it states now is read; a declarative entry is read into the graph and
/// superseding it does the same; a memory moved to another user leaves its old graph.
#[test]
fn changed_memories_are_read_again_and_their_old_facts_closed() {
    on_each_graph(|url, engine| {
        let m = say(&engine, "c1", "s1", "Alice likes green tea.", None);
        settled(&engine);
        let before = engine
            .graph()
            .relations(&query("c1", Some("Alice"), Some("likes"), None));
        assert_eq!(
            triples(&before.expect("q")),
            [t("Alice", "likes", "green tea")],
            "{url}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        let patch = muisti::Patch {
            content: Some("Alice likes black coffee.".into()),
            ..muisti::Patch::default()
        };
        let at = muisti::Locator::Id {
            tenant: engine.tenant().clone(),
            id: m.id,
        };
        let updated = engine
            .update(muisti::UpdateRequest::new(at.clone(), patch))
            .expect("update");
        settled(&engine);
        let now = engine
            .graph()
            .relations(&query("c1", Some("Alice"), Some("likes"), None))
            .expect("now");
        assert_eq!(
            triples(&now),
            [t("Alice", "likes", "black coffee")],
            "{url}"
        );
        let mut then = query("c1", Some("Alice"), Some("likes"), None);
        then.as_of = Some(m.created_at);
        let then = engine.graph().relations(&then).expect("then");
        assert_eq!(triples(&then), [t("Alice", "likes", "green tea")], "{url}");
        assert_eq!(then[0].invalid_at, Some(updated.updated_at), "{url}");

        // A declarative entry, then one superseding it.
        let mut p = Put::new(engine.partition(&ns("default")), None, "I live in Berlin");
        p.scope = muisti::MemoryScope::Declarative;
        p.category = muisti::Category::Fact;
        p.owner.user_id = Some("c1".into());
        engine.declarative().declare(p.clone()).expect("declare");
        settled(&engine);
        let lives = |engine: &Engine| {
            triples(
                &engine
                    .graph()
                    .relations(&query("c1", Some("c1"), Some("lives_in"), None))
                    .expect("q"),
            )
        };
        assert_eq!(lives(&engine), [t("c1", "lives_in", "Berlin")], "{url}");
        p.content = "I live in Lisbon now".into();
        let d = engine.declarative().declare(p).expect("supersede");
        assert_eq!(
            d.outcome,
            muisti::declarative::Outcome::Superseded,
            "{url}: the detector pairs them"
        );
        settled(&engine);
        assert_eq!(lives(&engine), [t("c1", "lives_in", "Lisbon")], "{url}");

        // Moved to another user: out of c1's graph, into c2's.
        let moved = muisti::Patch {
            user_id: Some(Some("c2".into())),
            ..muisti::Patch::default()
        };
        engine
            .update(muisti::UpdateRequest::new(at, moved))
            .expect("move");
        settled(&engine);
        assert!(
            engine
                .graph()
                .relations(&query("c1", Some("Alice"), None, None))
                .expect("q")
                .is_empty(),
            "{url}"
        );
        assert_eq!(
            triples(
                &engine
                    .graph()
                    .relations(&query("c2", Some("Alice"), None, None))
                    .expect("q")
            ),
            [t("Alice", "likes", "black coffee")],
            "{url}"
        );
    });
}

/// A memory evicted by the long-term cap leaves no fact behind, as a forgotten one.
#[test]
fn an_evicted_memory_leaves_the_graph() {
    let engine = Engine::builder(muisti::open_store("mem://").expect("store"))
        .graph_extraction(GraphExtraction::Offline)
        .lifetimes(muisti::Lifetimes {
            long_term_cap: Some(1),
            ..muisti::Lifetimes::default()
        })
        .build()
        .expect("engine");
    say(&engine, "e1", "s1", "Alice works at Google.", None);
    settled(&engine);
    say(&engine, "e1", "s1", "Bob likes chess.", None);
    settled(&engine);
    assert!(
        engine
            .graph()
            .entity(Some("e1"), "Google")
            .expect("read")
            .is_none(),
        "the evicted memory's entities went"
    );
    assert!(
        engine
            .graph()
            .relations(&query("e1", None, Some("works_at"), None))
            .expect("q")
            .is_empty()
    );
    assert_eq!(
        triples(
            &engine
                .graph()
                .relations(&query("e1", Some("Bob"), None, None))
                .expect("q")
        ),
        [t("Bob", "likes", "chess")]
    );
}

/// Two entities that are one, merged: the one kept takes the other's names, memories and
/// facts (a single-valued fact keeps the newer value, the older closed), the merge is
/// recorded, and forgetting a memory of the merged one still takes its fact away.
#[test]
fn merging_two_entities_keeps_both_histories() {
    on_each_graph(|url, engine| {
        say(
            &engine,
            "m1",
            "s1",
            "Bob reports to Alice.",
            Some("2024-01-01T00:00:00Z"),
        );
        say(
            &engine,
            "m1",
            "s1",
            "Bob lives in Bergen.",
            Some("2024-01-01T00:00:00Z"),
        );
        let initech = say(
            &engine,
            "m1",
            "s2",
            "Robert Smith works at Initech.",
            Some("2024-03-01T00:00:00Z"),
        );
        say(
            &engine,
            "m1",
            "s2",
            "Robert Smith lives in Oslo.",
            Some("2024-06-01T00:00:00Z"),
        );
        settled(&engine);
        let merged = engine
            .graph()
            .merge(Some("m1"), "Bob", "Robert Smith")
            .expect("merge");
        assert_eq!(merged.name, "Bob", "{url}");
        assert!(merged.aliases.contains(&"Robert Smith".to_owned()), "{url}");
        assert_eq!(merged.mentions, 4, "{url}");
        assert_eq!(
            merged.attributes["merged"][0]["name"], "Robert Smith",
            "{url}"
        );
        let by_alias = engine
            .graph()
            .entity(Some("m1"), "Robert Smith")
            .expect("read")
            .expect("the alias leads to Bob");
        assert_eq!(by_alias.id, merged.id, "{url}");
        let mut now = triples(
            &engine
                .graph()
                .relations(&query("m1", Some("Bob"), None, None))
                .expect("now"),
        );
        now.sort();
        assert_eq!(
            now,
            [
                t("Bob", "lives_in", "Oslo"),
                t("Bob", "reports_to", "Alice"),
                t("Bob", "works_at", "Initech"),
            ],
            "{url}"
        );
        let mut then = query("m1", Some("Bob"), Some("lives_in"), None);
        then.as_of = Some(Timestamp::parse("2024-02-01T00:00:00Z").expect("time"));
        assert_eq!(
            triples(&engine.graph().relations(&then).expect("then")),
            [t("Bob", "lives_in", "Bergen")],
            "{url}: the older home, closed"
        );
        assert_eq!(
            engine
                .graph()
                .merge(Some("m1"), "Bob", "Robert Smith")
                .expect_err("one already")
                .kind(),
            muisti::ErrorKind::ConflictingFields,
            "{url}"
        );
        assert_eq!(
            engine
                .graph()
                .merge(Some("m1"), "Bob", "Nobody")
                .expect_err("none")
                .kind(),
            muisti::ErrorKind::NotFound,
            "{url}"
        );
        engine
            .forget(&muisti::Locator::Id {
                tenant: engine.tenant().clone(),
                id: initech.id,
            })
            .expect("forget");
        assert!(
            engine
                .graph()
                .relations(&query("m1", Some("Bob"), Some("works_at"), None))
                .expect("q")
                .is_empty(),
            "{url}: the forgotten memory's fact went with it"
        );
    });
}

/// The offline extractor, counting its calls and keeping the texts it was given.
#[derive(Default)]
struct Counting(std::sync::Mutex<Vec<String>>);

impl muisti::graph::GraphExtractor for Counting {
    fn extract(
        &self,
        text: &str,
        context: &muisti::graph::Context<'_>,
    ) -> Result<muisti::graph::Extracted, muisti::graph::ExtractError> {
        self.0.lock().expect("lock").push(text.to_owned());
        Ok(muisti_lang::relations::offline(text, context))
    }

    fn name(&self) -> &str {
        "counting"
    }
}

/// An extraction interval: a conversation's memories wait until three are queued, then
/// are read in one extraction, each fact credited to the memory that states it; a lone
/// memory of another conversation waits too, until the queue is drained.
#[test]
fn an_interval_reads_a_conversation_in_one_extraction() {
    let counting = std::sync::Arc::new(Counting::default());
    let engine = Engine::builder(muisti::open_store("mem://").expect("store"))
        .graph_extraction(GraphExtraction::With(counting.clone()))
        .graph_interval(muisti::graph::GraphInterval {
            messages: 3,
            wait: std::time::Duration::from_secs(3600),
        })
        .build()
        .expect("engine");
    let first = say(&engine, "i1", "s1", "Alice works at Google.", None);
    say(
        &engine,
        "i1",
        "s1",
        "She is the manager of the ML team.",
        None,
    );
    say(&engine, "i1", "s2", "Carol likes chess.", None);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(
        engine.graph().pending().expect("pending"),
        3,
        "held for the batch"
    );
    assert!(counting.0.lock().expect("lock").is_empty());
    let third = say(&engine, "i1", "s1", "Bob reports to Alice.", None);
    muisti_testkit::wait_until("the batch is read", || {
        engine.graph().pending().expect("pending") == 1
    });
    assert_eq!(
        *counting.0.lock().expect("lock"),
        ["Alice works at Google.\nShe is the manager of the ML team.\nBob reports to Alice."]
    );
    let source = |subject: &str, predicate: &str| {
        engine
            .graph()
            .relations(&query("i1", Some(subject), Some(predicate), None))
            .expect("q")
            .first()
            .map(|r| r.memory_ids.clone())
            .unwrap_or_default()
    };
    assert_eq!(source("Alice", "works_at"), [first.id]);
    assert_eq!(source("Bob", "reports_to"), [third.id]);
    assert_eq!(
        source("Alice", "manager_of").len(),
        1,
        "the pronoun resolved"
    );
    assert_eq!(
        engine.drain_graph_queue().expect("drain"),
        1,
        "the lone one"
    );
    assert_eq!(source("Carol", "likes").len(), 1);
    assert!(
        Engine::builder(muisti::open_store("mem://").expect("store"))
            .graph_interval(muisti::graph::GraphInterval {
                messages: 0,
                wait: std::time::Duration::ZERO,
            })
            .build()
            .is_err(),
        "an interval of none is refused"
    );
}
