//! The engine over real stores (in-process, file, SQLite, and Redis when it runs): the
//! key-value contract, events, tenant confinement, recall, dedupe and reindex.

use std::sync::{Arc, Mutex};

use muisti::{Engine, Event, Filter, Locator, Namespace, SearchMode, Tenant, Ttl, WriteStatus};
use muisti_testkit::redis_keys::KeyPrefix;
use serde_json::json;

mod access_log;
mod analytics;
mod archive;
mod conversations;
mod declarative;
mod facts;
mod graph;
mod history;
mod lifecycle;
mod scopes;
mod security;
mod strategies;
mod supersede;
mod transfer;

fn ns(s: &str) -> Namespace {
    Namespace::new(s).expect("valid")
}

/// A Redis store URL with a fresh key prefix (deleted afterwards), or `None` (with a printed
/// line) when Redis does not answer; under `MUISTI_REQUIRE_SERVICES=1` a missing Redis fails.
fn redis_url() -> Option<(String, KeyPrefix)> {
    let base = muisti_testkit::redis_keys::base_url();
    if let Err(e) = muisti::open_store(&base) {
        muisti_testkit::service_unavailable("redis", &e.to_string());
        return None;
    }
    let keys = KeyPrefix::fresh(base, "muisti-engine-test");
    Some((keys.store_url(), keys))
}

/// A PostgreSQL store URL with a schema of its own (dropped with the guard), or `None`
/// (with a printed line; a failure under `MUISTI_REQUIRE_SERVICES=1`) when
/// `MUISTI_POSTGRES_URL` is not set or does not answer.
#[cfg(feature = "postgres")]
fn postgres_url(tag: &str) -> Option<(String, PgSchema)> {
    let Some(base) = std::env::var("MUISTI_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        muisti_testkit::service_unavailable("postgres", "MUISTI_POSTGRES_URL is not set");
        return None;
    };
    let fresh = muisti::MemoryId::generate().to_string().to_lowercase();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema={tag}_{fresh}&pool_size=2");
    match muisti::PostgresStore::open(&url) {
        Ok(store) => Some((url, PgSchema(store))),
        Err(e) => {
            muisti_testkit::service_unavailable("postgres", &e.to_string());
            None
        }
    }
}

#[cfg(not(feature = "postgres"))]
fn postgres_url(_tag: &str) -> Option<(String, ())> {
    muisti_testkit::service_unavailable("postgres", "the postgres feature is off");
    None
}

/// Drops its schema when dropped.
#[cfg(feature = "postgres")]
struct PgSchema(muisti::PostgresStore);

#[cfg(feature = "postgres")]
impl Drop for PgSchema {
    fn drop(&mut self) {
        let _ = self.0.drop_schema();
    }
}

/// Runs `check` against an engine on each backend.
fn on_each_backend(check: impl Fn(&str, Engine)) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut urls = vec![
        "mem://".to_string(),
        format!("file://{}", dir.path().join("files").display()),
        format!("sqlite://{}", dir.path().join("muisti.db").display()),
    ];
    let redis = redis_url();
    if let Some((url, _)) = &redis {
        urls.push(url.clone());
    }
    for url in urls {
        check(&url, Engine::open(&url).expect("opens"));
    }
}

/// Runs `check` on the engine `build` makes over each backend's store: the in-process
/// ones, Redis, and PostgreSQL (`MUISTI_POSTGRES_URL`, a schema of its own) and
/// MySQL/MariaDB (`MUISTI_MYSQL_URL`, default the local server's `test` database, tables of
/// its own) when they answer (a printed skip otherwise; a failure under
/// `MUISTI_REQUIRE_SERVICES=1`).
fn on_every_backend(
    build: impl Fn(Arc<dyn muisti::Store>) -> Engine,
    check: impl Fn(&str, Engine),
) {
    let run = |url: &str| check(url, build(muisti::open_store(url).expect("store")));
    on_each_backend(|url, _| run(url));
    on_database_backends("", build, check);
}

/// Runs `check` on the engine `build` makes over PostgreSQL and MySQL/MariaDB (as
/// [`on_every_backend`] does), their URLs given `extra` parameters (`&cache_mb=0`: every
/// search a statement on the database).
fn on_database_backends(
    extra: &str,
    build: impl Fn(Arc<dyn muisti::Store>) -> Engine,
    check: impl Fn(&str, Engine),
) {
    let run = |url: &str| check(url, build(muisti::open_store(url).expect("store")));
    let fresh = muisti::MemoryId::generate().to_string().to_lowercase();
    let with = |base: &str, params: &str| {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}{params}&pool_size=2{extra}")
    };
    #[cfg(feature = "postgres")]
    match std::env::var("MUISTI_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        Some(base) => {
            let url = with(&base, &format!("schema=engine_{fresh}"));
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
        let url = with(&base, &format!("table_prefix=e{fresh}_"));
        match muisti::MysqlStore::open(&url) {
            Ok(store) => {
                run(&url);
                let _ = store.drop_tables();
            }
            Err(e) => muisti_testkit::service_unavailable("mysql", &e.to_string()),
        }
    }
    #[cfg(not(any(feature = "postgres", feature = "mysql")))]
    let _ = (fresh, with);
}

#[test]
fn kv_contract() {
    on_each_backend(|url, e| {
        let n = ns("user:1");
        assert_eq!(e.kv().get(&n, "k").expect("reads"), None, "{url}");
        assert!(!e.kv().has(&n, "k").expect("reads"));
        e.kv().set(&n, "k", json!("v"), None).expect("writes");
        e.kv()
            .set(&n, "n", json!({"a": [1, 2]}), None)
            .expect("writes");
        e.kv()
            .set(&ns("user_1"), "k", json!("w"), None)
            .expect("writes");
        assert_eq!(
            e.kv().get(&n, "k").expect("reads"),
            Some(json!("v")),
            "{url}"
        );
        assert!(e.kv().has(&n, "k").expect("reads"));
        let all = e.kv().all(&n).expect("reads");
        assert_eq!(all.len(), 2);
        assert_eq!(all["n"], json!({"a": [1, 2]}));
        assert!(e.kv().forget(&n, "k").expect("deletes"));
        assert!(!e.kv().forget(&n, "k").expect("deletes"));
        assert_eq!(e.kv().flush(&n).expect("flushes"), 1);
        assert!(e.kv().all(&n).expect("reads").is_empty());
        assert_eq!(
            e.kv().get(&ns("user_1"), "k").expect("reads"),
            Some(json!("w")),
            "{url}"
        );
        // TTL through the engine.
        let ttl = Ttl::new(std::time::Duration::from_millis(600)).expect("valid");
        e.kv().set(&n, "t", json!(1), Some(ttl)).expect("writes");
        assert!(e.kv().has(&n, "t").expect("reads"));
        std::thread::sleep(std::time::Duration::from_millis(900));
        assert!(!e.kv().has(&n, "t").expect("reads"), "{url}");
        assert!(e.kv().all(&n).expect("reads").is_empty(), "{url}");
    });
}

#[test]
fn bad_keys_are_typed_errors() {
    on_each_backend(|_, e| {
        let n = ns("default");
        for bad in ["", "a\0b", "line\nbreak"] {
            let err = e.kv().set(&n, bad, json!(1), None).expect_err(bad);
            assert_eq!(err.kind(), muisti::ErrorKind::InvalidInput);
        }
        assert_eq!(e.stats().expect("stats").total, 0);
    });
}

#[test]
fn events_carry_names_and_sizes_never_values() {
    on_each_backend(|url, store_engine| {
        let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let e = Engine::builder(store_engine.store().clone())
            .observer(Arc::new(move |ev: &Event| {
                sink.lock().expect("lock").push(ev.clone())
            }))
            .build()
            .expect("builds");
        let n = ns("default");
        let secret = "the secret launch code is swordfish";
        e.kv().set(&n, "code", json!(secret), None).expect("writes");
        e.kv().get(&n, "code").expect("reads");
        e.kv().get(&n, "missing").expect("reads");
        let hits = e
            .search(&n, "what is the launch code", 5, Filter::default())
            .expect("searches");
        assert_eq!(hits.len(), 1);
        e.kv().forget(&n, "code").expect("deletes");
        e.kv().flush(&n).expect("flushes");
        let events = seen.lock().expect("lock").clone();
        let names: Vec<_> = events.iter().map(Event::name).collect();
        assert_eq!(
            names,
            [
                "memory.write",
                "memory.read",
                "memory.read",
                "memory.search",
                "memory.forget",
                "memory.forget"
            ],
            "{url}"
        );
        match &events[0] {
            Event::Write {
                key, bytes, status, ..
            } => {
                assert_eq!(key.as_str(), "code");
                assert_eq!(*bytes, secret.len());
                assert_eq!(*status, WriteStatus::Created);
            }
            other => panic!("{other:?}"),
        }
        match &events[2] {
            Event::Read { found, .. } => assert!(!found),
            other => panic!("{other:?}"),
        }
        match &events[3] {
            Event::Search {
                mode, limit, hits, ..
            } => {
                let native = e.store().info().capabilities.native_text;
                assert_eq!(*mode == SearchMode::Search, native, "{url}");
                assert_eq!((*limit, *hits), (5, 1));
            }
            other => panic!("{other:?}"),
        }
        for ev in &events {
            let text = format!("{ev:?}");
            assert!(!text.contains("swordfish"), "{text}");
            assert!(!text.contains("launch"), "{text}");
        }
    });
}

/// Recall leaves key-value entries out when asked, and still fills its page with memories.
#[test]
fn recall_can_leave_key_value_entries_out() {
    use muisti::RecallRequest;
    on_each_backend(|url, e| {
        let n = ns("default");
        e.kv()
            .set(
                &n,
                "lisbon-flat",
                json!("flat in Lisbon: door code 4812"),
                None,
            )
            .expect("writes");
        e.kv()
            .set(&n, "lisbon-trip", json!("Lisbon trip booked for May"), None)
            .expect("writes");
        let memory = e
            .remember(muisti::Put::new(
                e.partition(&n),
                None,
                "I moved to Lisbon in March",
            ))
            .expect("writes")
            .memory
            .id;
        let mut req = RecallRequest::new(n.clone(), "Lisbon", 3);
        assert_eq!(
            e.recall(&req).expect("recalls").len(),
            3,
            "{url}: all three"
        );
        req.exclude_key_value = true;
        req.limit = 1;
        let hits = e.recall(&req).expect("recalls");
        let ids: Vec<_> = hits.iter().map(|h| h.memory.id).collect();
        assert_eq!(ids, [memory], "{url}: the memory, not an entry");
    });
}

#[test]
fn search_counts_an_access_on_each_hit() {
    on_each_backend(|url, e| {
        let n = ns("default");
        let w = e
            .kv()
            .set(&n, "city", json!("I moved to Lisbon"), None)
            .expect("writes");
        e.search(&n, "moved to lisbon", 3, Filter::default())
            .expect("searches");
        e.search(&n, "lisbon", 3, Filter::default())
            .expect("searches");
        // Accesses are written in the background; wait for them.
        e.flush_access();
        let m = e.get_by_id(w.memory.id).expect("reads").expect("present");
        assert_eq!(m.access_count, 2, "{url}");
        assert!(m.last_accessed_at.is_some());
    });
}

#[test]
fn a_read_by_id_counts_an_access_and_the_engines_own_reads_do_not() {
    on_each_backend(|url, e| {
        let n = ns("default");
        let w = e
            .kv()
            .set(&n, "city", json!("I moved to Lisbon"), None)
            .expect("writes");
        let id = w.memory.id;
        for _ in 0..2 {
            let read = e.read_for(id, None).expect("reads").expect("present");
            assert_eq!(read.id, id);
        }
        e.get_by_id(id).expect("reads").expect("present");
        // An id that names nothing finds nothing.
        assert!(
            e.read_for(muisti::MemoryId::generate(), None)
                .expect("reads")
                .is_none()
        );
        e.flush_access();
        let m = e.get_by_id(id).expect("reads").expect("present");
        assert_eq!(
            m.access_count, 2,
            "{url}: two reads by id, not the engine's"
        );
        assert!(m.last_accessed_at.is_some(), "{url}");
    });
}

#[test]
fn an_engine_sees_only_its_tenant() {
    on_each_backend(|url, e| {
        let acme = e.with_tenant(Tenant::new("acme").expect("valid"));
        let n = ns("default");
        let w = acme
            .kv()
            .set(&n, "plan", json!("acme plan"), None)
            .expect("writes");
        assert_eq!(e.kv().get(&n, "plan").expect("reads"), None, "{url}");
        assert!(e.get_by_id(w.memory.id).expect("reads").is_none());
        let by_id = Locator::Id {
            tenant: Tenant::new("acme").expect("valid"),
            id: w.memory.id,
        };
        // Even a locator naming the other tenant is confined to the engine's own.
        assert!(e.get(&by_id).expect("reads").is_none(), "{url}");
        assert!(!e.forget(&by_id).expect("deletes"));
        assert!(
            e.search(&n, "acme plan", 5, Filter::default())
                .expect("searches")
                .is_empty()
        );
        assert_eq!(e.stats().expect("stats").total, 0);
        assert_eq!(acme.stats().expect("stats").total, 1);
    });
}

/// A duplicate write loses nothing it brought: its new tags, metadata fields and higher
/// importance are merged into the existing record (status `Merged`, one more version).
#[test]
fn a_duplicate_write_merges_what_it_adds() {
    use muisti::Put;
    on_each_backend(|url, e| {
        let n = ns("default");
        let mut first = Put::new(e.partition(&n), None, "Alice likes jazz");
        first.tags = vec!["music".into()];
        first.metadata = json!({"source": "chat"})
            .as_object()
            .cloned()
            .expect("object");
        let first = e.remember(first).expect("writes");
        let same = e
            .remember(Put::new(e.partition(&n), None, "alice likes JAZZ"))
            .expect("writes");
        assert_eq!(same.status, WriteStatus::Deduplicated, "{url}: nothing new");
        let mut more = Put::new(e.partition(&n), None, "Alice likes jazz");
        more.tags = vec!["music".into(), "preferences".into()];
        more.metadata = json!({"confidence_note": "said twice"})
            .as_object()
            .cloned()
            .expect("object");
        more.importance = Some(0.9);
        let merged = e.remember(more).expect("writes");
        assert_eq!(merged.status, WriteStatus::Merged, "{url}");
        assert_eq!(merged.memory.id, first.memory.id);
        assert_eq!(merged.memory.tags, ["music", "preferences"], "{url}");
        assert_eq!(merged.memory.metadata["source"], "chat");
        assert_eq!(merged.memory.metadata["confidence_note"], "said twice");
        assert!((merged.memory.importance - 0.9).abs() < 1e-6);
        assert_eq!(merged.memory.version, first.memory.version + 1);
        let stored = e
            .get_by_id(first.memory.id)
            .expect("reads")
            .expect("present");
        assert_eq!(
            stored.tags, merged.memory.tags,
            "{url}: stored, not only answered"
        );
        assert_eq!(e.count(&n, &Filter::default()).expect("counts"), 1);
    });
}

#[test]
fn identical_content_for_the_same_owner_is_stored_once() {
    use muisti::{Owner, Put};
    on_each_backend(|url, e| {
        let n = ns("default");
        let put = |text: &str, user: &str| {
            let mut p = Put::new(e.partition(&n), None, text);
            p.owner = Owner {
                user_id: Some(user.into()),
                ..Owner::default()
            };
            e.remember(p).expect("writes")
        };
        let first = put("I moved to Lisbon in March", "alice");
        assert_eq!(first.status, WriteStatus::Created, "{url}");
        // Same text up to case and spacing: the same memory, one more access.
        let again = put("i moved to  LISBON in March", "alice");
        assert_eq!(again.status, WriteStatus::Deduplicated, "{url}");
        assert_eq!(again.memory.id, first.memory.id);
        // Another owner, or other text: a new memory.
        assert_eq!(
            put("I moved to Lisbon in March", "bob").status,
            WriteStatus::Created
        );
        assert_eq!(
            put("I moved to Porto in March", "alice").status,
            WriteStatus::Created
        );
        assert_eq!(e.count(&n, &Filter::default()).expect("counts"), 3, "{url}");
        let m = e
            .get_by_id(first.memory.id)
            .expect("reads")
            .expect("present");
        assert_eq!(m.access_count, 1, "{url}");
        // Keyed writes are upserts, never deduplicated.
        let kv = e
            .kv()
            .set(&n, "k", json!("I moved to Lisbon in March"), None)
            .expect("writes");
        assert_eq!(kv.status, WriteStatus::Created);
    });
}

#[test]
fn a_store_indexed_by_another_embedder_is_refused_or_reindexed() {
    use muisti::{Embedder, OnModelMismatch, StaticEmbedder};
    let model_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../muisti-embed/model");
    let other: Arc<dyn Embedder> =
        Arc::new(StaticEmbedder::from_dir("other-model", &model_dir).expect("loads"));
    on_each_backend(|url, e| {
        let n = ns("default");
        for text in ["I moved to Lisbon", "I like sardines", "My sister has cats"] {
            e.remember(muisti::Put::new(e.partition(&n), None, text))
                .expect("writes");
        }
        let builtin = e.embedder().expect("has one").id().to_owned();
        assert_eq!(
            e.store_model().expect("reads").as_deref(),
            Some(builtin.as_str())
        );
        // Another model: refused, with both names.
        let err = Engine::builder(e.store().clone())
            .embedder(Some(other.clone()))
            .build()
            .err()
            .expect("refused");
        assert_eq!(err.kind(), muisti::ErrorKind::Conflict, "{url}");
        let msg = err.to_string();
        assert!(
            msg.contains("other-model") && msg.contains(&builtin),
            "{msg}"
        );
        // Or reindexed on request, every memory re-embedded, nothing else changed.
        let before = e.kv().all(&n).expect("reads");
        let mut seen = Vec::new();
        let b = Engine::builder(e.store().clone())
            .embedder(Some(other.clone()))
            .on_model_mismatch(OnModelMismatch::Ignore)
            .build()
            .expect("opens");
        let report = b
            .reindex(false, &mut |done, total| seen.push((done, total)))
            .expect("reindexes");
        assert_eq!((report.scanned, report.reembedded), (3, 3), "{url}");
        assert_eq!(seen.last(), Some(&(3, 3)));
        assert_eq!(
            b.store_model().expect("reads").as_deref(),
            Some("other-model")
        );
        let vectors = e
            .store()
            .vectors(&e.partition(&n), &Filter::default())
            .expect("reads");
        assert_eq!(vectors.len(), 3);
        assert!(vectors.iter().all(|v| v.model == "other-model"));
        assert_eq!(b.kv().all(&n).expect("reads"), before);
        // A second run finds nothing to do; the first engine's model is now the stranger.
        assert_eq!(
            b.reindex(false, &mut |_, _| {}).expect("runs").reembedded,
            0
        );
        let again = Engine::builder(e.store().clone()).build();
        assert_eq!(
            again.err().map(|e| e.kind()),
            Some(muisti::ErrorKind::Conflict)
        );
        let auto = Engine::builder(e.store().clone())
            .on_model_mismatch(OnModelMismatch::Reindex)
            .build()
            .expect("reindexes while opening");
        assert_eq!(
            auto.store_model().expect("reads").as_deref(),
            Some(builtin.as_str())
        );
    });
}

/// Opening writes nothing: the embedder is recorded by the first write, and an engine opened
/// with another one before that write is refused at its own first write.
#[test]
fn the_embedder_is_recorded_by_the_first_write_not_by_opening() {
    use muisti::{Embedder, StaticEmbedder};
    let model_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../muisti-embed/model");
    let other: Arc<dyn Embedder> =
        Arc::new(StaticEmbedder::from_dir("other-model", &model_dir).expect("loads"));
    on_each_backend(|url, e| {
        let b = Engine::builder(e.store().clone())
            .embedder(Some(other.clone()))
            .build()
            .expect("an empty store opens with any embedder");
        assert_eq!(e.store_model().expect("reads"), None, "{url}");
        assert_eq!(e.stats().expect("stats").total, 0, "opening wrote nothing");
        let n = ns("default");
        e.remember(muisti::Put::new(e.partition(&n), None, "I moved to Lisbon"))
            .expect("writes");
        assert_eq!(
            e.store_model().expect("reads").as_deref(),
            e.embedder().map(|m| m.id())
        );
        let err = b
            .remember(muisti::Put::new(b.partition(&n), None, "I like sardines"))
            .expect_err("another embedder's write is refused");
        assert_eq!(err.kind(), muisti::ErrorKind::Conflict, "{url}");
        assert_eq!(e.stats().expect("stats").total, 1);
    });
}

#[test]
fn recall_modes_filters_and_similar_on_every_backend() {
    use muisti::{Category, Put, RecallMode, RecallRequest};
    on_each_backend(|url, e| {
        let n = ns("default");
        let put = |text: &str, user: &str, category: Category, tag: &str| {
            let mut p = Put::new(e.partition(&n), None, text);
            p.owner.user_id = Some(user.into());
            p.category = category;
            p.tags = vec![tag.into()];
            p.metadata.insert(
                "lang".into(),
                json!(if user == "alice" { "en" } else { "pt" }),
            );
            e.remember(p).expect("writes").memory
        };
        let lisbon = put(
            "I moved to Lisbon in March",
            "alice",
            Category::Core,
            "home",
        );
        let sardines = put(
            "My favourite food is grilled sardines",
            "alice",
            Category::Daily,
            "food",
        );
        let porto = put("I moved to Porto last year", "bob", Category::Core, "home");
        let recall = |query: &str, filter: Filter, mode: RecallMode| {
            let mut req = RecallRequest::new(n.clone(), query, 5);
            req.filter = filter;
            req.mode = mode;
            e.recall(&req)
                .expect("recalls")
                .into_iter()
                .map(|h| h.memory.id)
                .collect::<Vec<_>>()
        };
        let alice = Filter {
            user_id: Some("alice".into()),
            ..Filter::default()
        };
        for mode in [RecallMode::Hybrid, RecallMode::Lexical, RecallMode::Overlap] {
            let got = recall("where have I moved to", alice.clone(), mode);
            assert_eq!(got.first(), Some(&lisbon.id), "{url} {mode:?}");
            assert!(
                !got.contains(&porto.id),
                "{url} {mode:?}: another user's memory"
            );
        }
        assert_eq!(
            recall("grilled fish", alice.clone(), RecallMode::Vector)[0],
            sardines.id
        );
        let daily = Filter {
            category: Some(Category::Daily),
            ..Filter::default()
        };
        assert_eq!(
            recall("moved food", daily, RecallMode::Hybrid),
            vec![sardines.id],
            "{url}"
        );
        let home = Filter {
            tags: vec!["home".into()],
            ..Filter::default()
        };
        let got = recall("moved", home, RecallMode::Hybrid);
        assert_eq!(got.len(), 2, "{url}");
        let mut pt = serde_json::Map::new();
        pt.insert("lang".into(), json!("pt"));
        let by_meta = Filter {
            metadata: pt,
            ..Filter::default()
        };
        assert_eq!(
            recall("moved", by_meta, RecallMode::Hybrid),
            vec![porto.id],
            "{url}"
        );
        let future = Filter {
            created_after: Some(muisti::Timestamp::now().plus(std::time::Duration::from_secs(60))),
            ..Filter::default()
        };
        assert!(
            recall("moved", future, RecallMode::Hybrid).is_empty(),
            "{url}"
        );
        // min_score keeps only strong hits; every hit explains itself.
        let mut req = RecallRequest::new(n.clone(), "I moved to Lisbon in March", 5);
        req.min_score = Some(0.9);
        let hits = e.recall(&req).expect("recalls");
        assert!(hits.iter().all(|h| h.score >= 0.9), "{url}");
        assert!(hits.len() < 3, "{url}: weak hits are left out");
        assert_eq!(hits.first().map(|h| h.memory.id), Some(lisbon.id));
        assert!(hits[0].signals.lexical_rank.is_some() && hits[0].signals.similarity.is_some());
        // Similar in meaning to a memory, itself left out: among every user's when asked,
        // else among its own user's only.
        let similar = e
            .find_similar(lisbon.id, None, 2, Filter::default(), true)
            .expect("finds");
        assert_eq!(
            similar.first().map(|h| h.memory.id),
            Some(porto.id),
            "{url}"
        );
        assert!(similar.iter().all(|h| h.memory.id != lisbon.id));
        let own = e
            .find_similar(lisbon.id, None, 2, Filter::default(), false)
            .expect("finds");
        assert_eq!(
            own.iter().map(|h| h.memory.id).collect::<Vec<_>>(),
            [sardines.id],
            "{url}: alice's only"
        );
    });
}

/// Scores are absolute: a query sharing nothing with the memories scores below
/// `RELEVANT_SCORE` on every backend, however it ranks them, while a query the memory
/// answers scores above it; the same match scores alike whatever else the store holds.
#[test]
fn an_unrelated_query_scores_below_the_relevant_threshold_on_every_backend() {
    use muisti::RecallRequest;
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = ns("scores");
            let alice = e
                .remember(muisti::Put::new(
                    e.partition(&n),
                    None,
                    "Alice prefers window seats",
                ))
                .expect("write")
                .memory;
            e.remember(muisti::Put::new(
                e.partition(&n),
                None,
                "Bob is allergic to peanuts",
            ))
            .expect("write");
            e.kv().set(&n, "theme", json!("dark"), None).expect("kv");
            let recall = |q: &str| {
                e.recall(&RecallRequest::new(n.clone(), q, 5))
                    .expect("recall")
            };
            let unrelated = recall("quantum chromodynamics lattice");
            assert!(
                unrelated.iter().all(|h| h.score < muisti::RELEVANT_SCORE),
                "{url}: {:?}",
                unrelated.iter().map(|h| h.score).collect::<Vec<_>>()
            );
            let mut strict = RecallRequest::new(n.clone(), "quantum chromodynamics lattice", 5);
            strict.min_score = Some(muisti::RELEVANT_SCORE);
            assert!(e.recall(&strict).expect("recall").is_empty(), "{url}");
            let answered = recall("which seats does Alice prefer");
            assert_eq!(answered[0].memory.id, alice.id, "{url}");
            assert!(
                answered[0].score >= muisti::RELEVANT_SCORE,
                "{url}: {}",
                answered[0].score
            );
            // The same match in a store with a thousand more memories scores about the same.
            let filler: Vec<muisti::Put> = (0..1000)
                .map(|i| {
                    muisti::Put::new(e.partition(&n), None, format!("note {i} about the garden"))
                })
                .collect();
            e.remember_many(filler).expect("write");
            let again = recall("which seats does Alice prefer");
            assert_eq!(again[0].memory.id, alice.id, "{url}");
            assert!(
                (again[0].score - answered[0].score).abs() < 0.15,
                "{url}: {} then {}",
                answered[0].score,
                again[0].score
            );
        },
    );
}

/// Time comes from the clock the engine and store are given: expiry is tested by moving a
/// manual clock, never by sleeping.
#[test]
fn a_manual_clock_drives_expiry_without_sleeping() {
    let clock = Arc::new(muisti::ManualClock::new(muisti::Timestamp::from_millis(
        1_700_000_000_000,
    )));
    let store = Arc::new(muisti::MemStore::new().with_clock(clock.clone()));
    let engine = Engine::builder(store)
        .embedder(None)
        .clock(clock.clone())
        .build()
        .expect("engine");
    let n = ns("default");
    engine
        .kv()
        .set(&n, "k", json!("v"), Some(Ttl::from_secs(10).expect("ttl")))
        .expect("set");
    clock.advance(std::time::Duration::from_secs(9));
    assert_eq!(engine.kv().get(&n, "k").expect("get"), Some(json!("v")));
    clock.advance(std::time::Duration::from_secs(1));
    assert_eq!(engine.kv().get(&n, "k").expect("get"), None);
}

/// `Engine::update` re-embeds changed text, keeps the vector when only other fields change,
/// and refuses a stale version.
#[test]
fn engine_update_re_embeds_and_checks_versions() {
    on_each_backend(|url, engine| {
        let n = ns("default");
        let w = engine
            .remember(muisti::Put::new(
                engine.partition(&n),
                None,
                "Rex is a labrador",
            ))
            .expect("remember");
        let at = Locator::Id {
            tenant: engine.tenant().clone(),
            id: w.memory.id,
        };
        let vector = |engine: &Engine| {
            engine
                .store()
                .vectors(&engine.partition(&n), &Filter::default())
                .expect("vectors")
                .into_iter()
                .find(|v| v.id == w.memory.id)
                .map(|v| v.vector)
        };
        let before = vector(&engine).expect("embedded");
        let m = engine
            .update(muisti::UpdateRequest::new(
                at.clone(),
                muisti::Patch {
                    importance: Some(0.8),
                    ..Default::default()
                },
            ))
            .expect("update");
        assert_eq!(m.version, 2, "{url}");
        assert_eq!(vector(&engine).as_ref(), Some(&before), "{url}");
        let m = engine
            .update(
                muisti::UpdateRequest::new(
                    at.clone(),
                    muisti::Patch {
                        content: Some(json!("Rex is a poodle who loves the beach")),
                        ..Default::default()
                    },
                )
                .expecting(Some(2)),
            )
            .expect("update");
        assert_eq!(m.version, 3, "{url}");
        let after = vector(&engine).expect("re-embedded");
        assert_ne!(after, before, "{url}");
        let stale = engine.update(
            muisti::UpdateRequest::new(
                at,
                muisti::Patch {
                    content: Some(json!("lost")),
                    ..Default::default()
                },
            )
            .expecting(Some(2)),
        );
        assert_eq!(
            stale.expect_err("stale").kind(),
            muisti::ErrorKind::Conflict,
            "{url}"
        );
    });
}

/// A misspelled query word finds its memory by full text alone on every backend: the word
/// the partition holds one edit away is searched for it (`text::search_terms`), a slip in
/// an inflected word's ending finds the word's stem, and a query of words the partition
/// holds is searched as asked.
#[test]
fn a_misspelled_word_finds_its_memory_on_every_backend() {
    let build = |store| Engine::builder(store).build().expect("engine");
    on_every_backend(build, misspelled_words_are_found);
    // MySQL without copies: each search a statement on the database (PostgreSQL's search
    // in the database does not correct: see its `db_text_search`).
    on_database_backends("&cache_mb=0", build, |url, e| {
        if url.starts_with("mysql") {
            misspelled_words_are_found(url, e);
        }
    });
}

fn misspelled_words_are_found(url: &str, e: Engine) {
    let n = ns("default");
    for text in [
        "My dentist appointment is every March",
        "The boat is moored at the harbour",
        "Grandma bakes apple strudel on Sundays",
    ] {
        let mut p = muisti::Put::new(e.partition(&n), None, text);
        p.owner.user_id = Some("ana".into());
        e.remember(p).expect("remembers");
    }
    // Another user's word never stands in the way: Bo's "strudle" is not Ana's word, so
    // her "strudle" is still read as her "strudel".
    let mut p = muisti::Put::new(e.partition(&n), None, "Bo's recipe card says strudle");
    p.owner.user_id = Some("bo".into());
    e.remember(p).expect("remembers");
    for query in ["when is my dnetist", "harbuor", "strudle", "mooerd"] {
        let mut req = muisti::RecallRequest::new(n.clone(), query, 3);
        req.filter.user_id = Some("ana".into());
        req.mode = muisti::RecallMode::Lexical;
        let hits = e.recall(&req).expect("recalls");
        let first = hits.first().map(|h| h.memory.text().into_owned());
        let meant = match query {
            "when is my dnetist" => "dentist",
            "strudle" => "strudel",
            "mooerd" => "moored",
            _ => "harbour",
        };
        assert!(
            first.as_deref().is_some_and(|t| t.contains(meant)),
            "{url}: {query:?} found {first:?}"
        );
    }
}
