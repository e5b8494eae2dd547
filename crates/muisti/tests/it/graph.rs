//! The knowledge graph through the engine, on every backend: offline extraction in the
//! background, entity resolution, invalidation of single-valued facts, as-of queries, and
//! what deleting memories does to the facts they supported.

use muisti::{
    Engine, Filter, Put, Timestamp,
    graph::{GraphExtraction, Relation, RelationQuery},
};

use super::ns;

/// An engine extracting offline over each backend's store: the in-process ones, Redis,
/// and PostgreSQL (`MUISTI_POSTGRES_URL`, a schema of its own) and MySQL/MariaDB
/// (`MUISTI_MYSQL_URL`, default the local server's `test` database, tables of its own) when
/// they answer (a printed skip otherwise; a failure under `MUISTI_REQUIRE_SERVICES=1`).
fn on_each_graph(check: impl Fn(&str, Engine)) {
    let run = |url: &str| {
        let store = muisti::open_store(url).expect("store");
        let engine = Engine::builder(store)
            .graph_extraction(GraphExtraction::Offline)
            .build()
            .expect("engine");
        check(url, engine);
    };
    super::on_each_backend(|url, _| run(url));
    let fresh = muisti::MemoryId::generate().to_string().to_lowercase();
    let with = |base: &str, params: &str| {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}{params}&pool_size=2")
    };
    #[cfg(feature = "postgres")]
    match std::env::var("MUISTI_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(base) => {
            let url = with(&base, &format!("schema=graph_{fresh}"));
            match muisti::PostgresStore::open(&url) {
                Ok(store) => {
                    run(&url);
                    let _ = store.drop_schema();
                }
                Err(e) => muisti_testkit::service_unavailable("postgres", &e.to_string()),
            }
        }
        None => muisti_testkit::service_unavailable("postgres", "MUISTI_POSTGRES_URL is not set"),
    }
    #[cfg(feature = "mysql")]
    {
        let base = std::env::var("MUISTI_MYSQL_URL")
            .ok()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into());
        let url = with(&base, &format!("table_prefix=g{fresh}_"));
        match muisti::MysqlStore::open(&url) {
            Ok(store) => {
                run(&url);
                let _ = store.drop_tables();
            }
            Err(e) => muisti_testkit::service_unavailable("mysql", &e.to_string()),
        }
    }
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
        engine.graph_pending().expect("pending") == 0
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
            .graph_relations(&query("g1", None, Some("works_at"), None))
            .expect("query");
        assert_eq!(
            triples(&works_at),
            [t("Alice", "works_at", "Google")],
            "{url}"
        );
        let alice = engine
            .graph_entity_relations(Some("g1"), "alice", None)
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
            .graph_relations(&query("g1", Some("Bob"), None, None))
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
            .graph_entities(Some("g1"), Some("person"))
            .expect("people");
        let names: Vec<&str> = people.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Alice", "Bob"], "{url}");
        let alice = engine
            .graph_entity(Some("g1"), "Alice")
            .expect("read")
            .expect("alice");
        assert_eq!(alice.mentions, 3, "{url}: named by all three memories");
        assert!(
            engine
                .graph_relations(&query("g2", None, Some("works_at"), None))
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
            triples(&engine.graph_relations(&q).expect("query"))
        };
        assert_eq!(lives(None), [t("Carol", "lives_in", "Berlin")], "{url}");
        assert_eq!(
            lives(Some("2023-06-01T00:00:00Z")),
            [t("Carol", "lives_in", "Paris")],
            "{url}: where Carol lived in 2023"
        );
        assert!(lives(Some("2022-06-01T00:00:00Z")).is_empty(), "{url}");
        let paris = engine
            .graph_relations(&RelationQuery {
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
            .graph_relations(&query("d", None, Some("works_at"), None))
            .expect("q");
        assert!(works.is_empty(), "{url}: {works:?}");
        assert!(
            engine
                .graph_entity(Some("d"), "Initech")
                .expect("read")
                .is_none(),
            "{url}"
        );
        assert_eq!(
            triples(
                &engine
                    .graph_relations(&query("d", None, Some("likes"), None))
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
                .graph_entities(Some("d"), None)
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
                engine.graph_relations(&q).expect("q").is_empty(),
                "{url}: nothing kept, as of {as_of:?}"
            );
        }
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
        if engine.graph_pending().expect("pending") == 0 {
            break;
        }
        engine.drain_graph_queue().expect("a round");
    }
    assert_eq!(engine.graph_pending().expect("pending"), 0, "set aside");
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
            .graph_entities(Some("f"), None)
            .expect("read")
            .is_empty()
    );
}
