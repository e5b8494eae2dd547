//! The `Memory` adapter and the async engine beyond the interface's own examples.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use muisti::{ErrorKind, Namespace, Put, RecallRequest};
use muisti_async::{
    AsyncEngine,
    memory::{Memory, MemoryCategory, MemoryConfig, create_memory_backend},
};

async fn filled(backend: &dyn Memory) {
    let entries = [
        (
            "seat",
            "Prefers the window seat on long flights",
            MemoryCategory::Core,
            None,
        ),
        (
            "log-1",
            "Booked a flight to Porto for May",
            MemoryCategory::Daily,
            Some("s1"),
        ),
        (
            "log-2",
            "Asked about vegetarian restaurants",
            MemoryCategory::Daily,
            Some("s2"),
        ),
        (
            "note",
            "Allergic to peanuts",
            MemoryCategory::Custom("health".into()),
            Some("s1"),
        ),
    ];
    for (key, content, category, session) in entries {
        backend
            .store(key, content, category, session)
            .await
            .expect("store");
    }
}

#[tokio::test]
async fn every_method_over_sqlite_and_markdown_from_the_factory() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (backend, path, name) in [
        ("sqlite", dir.path().join("m.db"), "sqlite"),
        ("markdown", dir.path().join("md"), "markdown"),
    ] {
        let config = MemoryConfig {
            path: Some(path.display().to_string()),
            namespace: None,
        };
        let memory = create_memory_backend(backend, &config)
            .await
            .expect("backend");
        assert_eq!(memory.name(), name);
        assert!(memory.health_check().await);
        filled(memory.as_ref()).await;
        assert_eq!(memory.count().await.expect("count"), 4);

        let hits = memory
            .recall("where does she like to sit on a plane", 2, None)
            .await
            .expect("recall");
        assert_eq!(hits[0].key, "seat", "{backend}");
        assert!(hits[0].score.is_some_and(|s| s > 0.0 && s <= 1.0));
        let s1 = memory
            .recall("flight", 10, Some("s1"))
            .await
            .expect("recall");
        assert!(s1.iter().all(|e| e.session_id.as_deref() == Some("s1")));
        assert!(s1.iter().any(|e| e.key == "log-1"));

        let daily = memory
            .list(Some(&MemoryCategory::Daily), None)
            .await
            .expect("list");
        let keys: Vec<&str> = daily.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["log-1", "log-2"]);
        let health = memory
            .list(Some(&MemoryCategory::Custom("health".into())), Some("s1"))
            .await
            .expect("list");
        assert_eq!(health.len(), 1);
        assert_eq!(health[0].category, MemoryCategory::Custom("health".into()));
        assert_eq!(health[0].category.to_string(), "health");

        // Storing at a key replaces; forgetting answers whether there was one.
        memory
            .store("seat", "Prefers the aisle seat", MemoryCategory::Core, None)
            .await
            .expect("store");
        assert_eq!(
            memory
                .get("seat")
                .await
                .expect("get")
                .expect("there")
                .content,
            "Prefers the aisle seat"
        );
        assert_eq!(memory.count().await.expect("count"), 4);
        assert!(memory.forget("seat").await.expect("forget"));
        assert!(!memory.forget("seat").await.expect("forget"));
        assert!(memory.get("seat").await.expect("get").is_none());

        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let done = memory
            .reindex(Some(Box::new(move |_, _| {
                seen.fetch_add(1, Ordering::SeqCst);
            })))
            .await
            .expect("reindex");
        assert_eq!(done, 3);
        assert!(calls.load(Ordering::SeqCst) > 0, "progress was reported");
    }
}

#[tokio::test]
async fn bad_names_and_keys_are_typed_errors() {
    let unknown = create_memory_backend("qdrant", &MemoryConfig::default()).await;
    assert_eq!(
        unknown.err().map(|e| e.kind()),
        Some(ErrorKind::InvalidInput)
    );
    let memory = create_memory_backend("in_memory", &MemoryConfig::default())
        .await
        .expect("backend");
    let bad = memory
        .store("k", "x", MemoryCategory::Custom("not a name!".into()), None)
        .await;
    assert_eq!(bad.err().map(|e| e.kind()), Some(ErrorKind::InvalidInput));
    let bad_key = memory
        .store("a\u{0}b", "x", MemoryCategory::Core, None)
        .await;
    assert_eq!(
        bad_key.err().map(|e| e.kind()),
        Some(ErrorKind::InvalidInput)
    );
    assert_eq!(memory.count().await.expect("count"), 0, "nothing written");
}

/// The async engine on a single-threaded runtime: the engine runs on the blocking pool, so
/// other tasks of the one runtime thread go on while it works.
#[test]
fn the_async_engine_runs_beside_other_tasks_on_one_thread() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let engine = AsyncEngine::open("mem://").await.expect("open");
        let ns = Namespace::new("default").expect("namespace");
        let puts: Vec<Put> = (0..2_000)
            .map(|i| {
                Put::new(
                    engine.partition(&ns),
                    None,
                    format!("memory number {i} about boats"),
                )
            })
            .collect();
        let ticks = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ticks);
        let ticker = tokio::spawn(async move {
            loop {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::task::yield_now().await;
            }
        });
        let written = engine.remember_many(puts).await.expect("write");
        ticker.abort();
        assert_eq!(written.len(), 2_000);
        assert!(
            ticks.load(Ordering::SeqCst) > 1,
            "the runtime thread was not blocked"
        );
        let hits = engine
            .recall(RecallRequest::new(ns, "memory number 7 about boats", 3))
            .await
            .expect("recall");
        assert_eq!(hits.len(), 3);
    });
}
