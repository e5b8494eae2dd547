//! Moving memory between stores: an export read back into another backend keeps every
//! field of every record (declarative entries, proposals, history and the graph included),
//! through SQLite → JSON Lines → Redis → Markdown → SQLite (→ PostgreSQL); the Markdown
//! store's hand edits and broken files.

use std::sync::Arc;

use muisti::{
    Category, Engine, ErrorKind, Filter, Memory, MemoryScope, Owner, Patch, Put, RecallRequest,
    Source, Store, Tenant, UpdateRequest,
    graph::GraphExtraction,
    list_all,
    transfer::{JsonlReader, JsonlWriter, Selection, Trust},
};
use serde_json::json;

use super::{ns, redis_url};

/// Every record of every tenant with its vector, in a stable order; the engine's record of
/// its embedder (each store keeps its own) left out.
fn everything(store: &dyn Store) -> Vec<(Memory, Option<Vec<f32>>)> {
    let mut out = Vec::new();
    for tenant in store.tenants().expect("tenants") {
        for namespace in store.namespaces(&tenant).expect("namespaces") {
            let p = muisti::Partition::new(tenant.clone(), namespace);
            let vectors = store.vectors(&p, &Filter::default()).expect("vectors");
            for m in list_all(store, &p, &Filter::default()).expect("list") {
                if m.partition.tenant.as_str() == muisti::SYSTEM_TENANT
                    && m.key.as_str() == "embedder"
                {
                    continue;
                }
                let v = vectors
                    .iter()
                    .find(|v| v.id == m.id)
                    .map(|v| v.vector.clone());
                out.push((m, v));
            }
        }
    }
    out.sort_by(|a, b| (&a.0.partition, a.0.id).cmp(&(&b.0.partition, b.0.id)));
    out
}

/// Memories of every kind: plain ones with every field, a key-value entry, declarative
/// entries and a pending proposal, an update (history), recalls (access counts), graph facts
/// read by the offline extractor, in a second tenant too.
fn seed(store: Arc<dyn Store>) {
    let engine = Engine::builder(store)
        .graph_extraction(GraphExtraction::Offline)
        .build()
        .expect("engine");
    let mut p = Put::new(
        engine.partition(&ns("default")),
        None,
        "Alice works at Google",
    );
    p.owner = Owner {
        user_id: Some("ana".into()),
        agent_id: Some("planner".into()),
        session_id: Some("s1".into()),
    };
    p.tags = vec!["work".into()];
    p.metadata.insert("dia_id".into(), json!("D1:1"));
    p.importance = Some(0.9);
    p.context = Some("Where does Alice work?".into());
    let first = engine.remember(p).expect("remember").memory;
    let mut p = Put::new(
        engine.partition(&ns("default")),
        None,
        "Our staging database lives in Frankfurt",
    );
    p.owner.user_id = Some("ana".into());
    engine.remember(p).expect("remember");
    engine
        .kv()
        .set(
            &ns("settings"),
            "theme",
            json!({"mode": "dark", "n": [1, 2.5]}),
            None,
        )
        .expect("kv");
    let mut stated = Put::new(engine.partition(&ns("default")), None, "I live in Lisbon");
    stated.scope = MemoryScope::Declarative;
    stated.category = Category::Fact;
    stated.owner.user_id = Some("ana".into());
    engine.declarative().declare(stated).expect("stated");
    let mut learned = Put::new(
        engine.partition(&ns("default")),
        None,
        "Ana prefers window seats",
    );
    learned.scope = MemoryScope::Declarative;
    learned.category = Category::Preference;
    learned.source = Source::AgentLearned;
    learned.confidence = Some(70);
    learned.owner.user_id = Some("ana".into());
    assert!(
        engine.declarative().declare(learned).is_err(),
        "a learned entry waits for confirmation"
    );
    engine
        .update(UpdateRequest::new(
            muisti::Locator::Id {
                tenant: first.partition.tenant.clone(),
                id: first.id,
            },
            Patch {
                tags: Some(vec!["work".into(), "employer".into()]),
                ..Patch::default()
            },
        ))
        .expect("update");
    let mut ask = RecallRequest::new(ns("default"), "where does Alice work", 3);
    ask.filter.user_id = Some("ana".into());
    assert!(!engine.recall(&ask).expect("recall").is_empty());
    muisti_testkit::wait_until("the graph worker drained its queue", || {
        engine.graph().pending().expect("pending") == 0
    });
    let other = engine.with_tenant(Tenant::new("acme").expect("valid"));
    other
        .remember(Put::new(
            other.partition(&ns("default")),
            None,
            "Acme ships on Fridays",
        ))
        .expect("remember");
}

/// Exports everything of `from` (with vectors or not) as JSON Lines.
fn export(from: &Engine, with_vectors: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = JsonlWriter::new(&mut out, from.store_model().expect("model"), with_vectors)
        .expect("header");
    from.transfer()
        .export(
            &Selection::default(),
            with_vectors,
            &mut |_, _| {},
            &mut |r| w.write(&r),
        )
        .expect("export");
    w.finish().expect("flush");
    out
}

/// Imports JSON Lines in batches of 7, in one bulk load (as `muisti import` does).
fn import(into: &Engine, lines: &[u8]) -> u64 {
    into.transfer()
        .import_all(Trust::Trusted, |sink| {
            for batch in JsonlReader::new(lines).batches(7) {
                sink(batch?)?;
            }
            Ok(())
        })
        .expect("import")
}

#[test]
fn every_field_of_every_record_survives_a_tour_of_the_stores() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source_url = format!("sqlite://{}", dir.path().join("source.db").display());
    seed(muisti::open_store(&source_url).expect("store"));
    let source = Engine::open(&source_url).expect("opens");
    let want = everything(&**source.store());
    assert!(want.len() > 12, "seeded {} records", want.len());
    assert!(
        want.iter().any(
            |(m, _)| m.partition.namespace.as_str().starts_with("_muisti")
                || m.partition.tenant.as_str() == muisti::SYSTEM_TENANT
        ),
        "the engine's own records (graph, history) are part of the tour"
    );
    assert!(
        want.iter().any(|(m, _)| m.access_count > 0),
        "access counts"
    );
    assert!(want.iter().any(|(m, _)| m.version > 1), "an updated record");
    let mut stops = vec![
        format!("markdown://{}", dir.path().join("md").display()),
        format!("sqlite://{}", dir.path().join("back.db").display()),
    ];
    let redis = redis_url();
    if let Some((url, _)) = &redis {
        stops.insert(0, url.clone());
    }
    let pg = super::postgres_url("tour");
    if let Some((url, _)) = &pg {
        stops.push(url.clone());
    }
    let mut from = source;
    for url in stops {
        let to = Engine::open(&url).expect("opens");
        let lines = export(&from, true);
        let n = import(&to, &lines);
        // Every record but the source's record of its embedder (the store keeps its own).
        assert_eq!(n as usize, want.len(), "{url}");
        // Twice changes nothing.
        import(&to, &lines);
        assert_eq!(everything(&**to.store()), want, "{url}");
        from = to;
    }
}

#[test]
fn an_export_without_vectors_is_embedded_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source_url = format!("sqlite://{}", dir.path().join("source.db").display());
    seed(muisti::open_store(&source_url).expect("store"));
    let source = Engine::open(&source_url).expect("opens");
    let want = everything(&**source.store());
    let lines = export(&source, false);
    assert!(!String::from_utf8_lossy(&lines).contains("\"vector\""));
    let to = Engine::open("mem://").expect("opens");
    import(&to, &lines);
    // The same built-in model makes the same vectors.
    assert_eq!(everything(&**to.store()), want);
    // A bad line is refused with its number, and nothing of it is written.
    let bad = b"{\"format\":\"muisti-export/1\",\"exported_at\":\"2026-01-01T00:00:00Z\"}\n{\"id\":\"nope\"}\n";
    let err = JsonlReader::new(&bad[..])
        .next()
        .expect("a line")
        .expect_err("not a record");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn a_bulk_import_stopped_by_its_source_or_its_store_says_why_and_keeps_what_it_wrote() {
    let dir = tempfile::tempdir().expect("temp dir");
    let source_url = format!("sqlite://{}", dir.path().join("source.db").display());
    seed(muisti::open_store(&source_url).expect("store"));
    let source = Engine::open(&source_url).expect("opens");
    let lines = export(&source, true);
    // Records of the users' tenants (the engine's own record of its embedder is not imported).
    let records: Vec<_> = JsonlReader::new(&lines[..])
        .collect::<muisti::Result<Vec<_>>>()
        .expect("records")
        .into_iter()
        .filter(|r| r.memory.partition.tenant.as_str() != muisti::SYSTEM_TENANT)
        .collect();
    let to_url = format!("sqlite://{}", dir.path().join("to.db").display());
    let to = Engine::open(&to_url).expect("opens");
    // The source fails after its first batch: its error comes back, the batch is written.
    let err = to
        .transfer()
        .import_all(Trust::Trusted, |sink| {
            sink(records[..3].to_vec())?;
            Err(muisti::Error::invalid("input", "line 4 is not a record"))
        })
        .expect_err("stops");
    assert!(err.to_string().contains("line 4"), "{err}");
    for r in &records[..3] {
        let at = muisti::Locator::Id {
            tenant: r.memory.partition.tenant.clone(),
            id: r.memory.id,
        };
        assert!(to.store().get(&at).expect("reads").is_some());
    }
    // The store refuses a batch: its error comes back, not the source's.
    let mut bad = records[3].clone();
    bad.memory.importance = 2.0;
    let err = to
        .transfer()
        .import_all(Trust::Trusted, |sink| {
            sink(vec![bad])?;
            // The writer may still be taking the batch: keep offering until it has stopped.
            loop {
                sink(records[4..5].to_vec())?;
            }
        })
        .expect_err("stops");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("importance"), "{err}");
    // And the store is whole afterwards: importing everything gives the source's records.
    import(&to, &lines);
    assert_eq!(everything(&**to.store()), everything(&**source.store()));
}

/// The file of `user`'s memories in namespace `default` of a Markdown store at `root`.
fn user_file(root: &std::path::Path, user: &str) -> std::path::PathBuf {
    root.join("default")
        .join("default")
        .join(format!("{user}.md"))
}

#[test]
fn a_hand_edit_is_recalled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("markdown://{}", dir.path().display());
    let engine = Engine::open(&url).expect("opens");
    let mut p = Put::new(
        engine.partition(&ns("default")),
        None,
        "Our staging database lives in Frankfurt",
    );
    p.owner.user_id = Some("ana".into());
    let m = engine.remember(p).expect("remember").memory;
    let file = user_file(dir.path(), "ana");
    let text = std::fs::read_to_string(&file).expect("the user's file");
    assert!(
        text.contains("Our staging database lives in Frankfurt"),
        "{text}"
    );
    std::fs::write(&file, text.replace("Frankfurt", "Reykjavik")).expect("edit");
    let mut ask = RecallRequest::new(ns("default"), "which city hosts the staging database", 3);
    ask.filter.user_id = Some("ana".into());
    let hits = engine.recall(&ask).expect("recall");
    assert_eq!(
        hits.first()
            .map(|h| (h.memory.id, h.memory.text().into_owned())),
        Some((m.id, "Our staging database lives in Reykjavik".to_owned()))
    );
    // The edited text is indexed by its words: the old one finds nothing.
    let old = engine
        .search(&ns("default"), "Frankfurt", 3, Default::default())
        .expect("search");
    assert!(old.iter().all(|h| !h.memory.text().contains("Frankfurt")));
    // A reindex embeds the edited text again.
    let report = engine.reindex(false, &mut |_, _| {}).expect("reindex");
    assert!(report.reembedded >= 1, "{report:?}");
    let vectors = engine
        .store()
        .vectors(&engine.partition(&ns("default")), &Filter::default())
        .expect("vectors");
    assert!(vectors.iter().any(|v| v.id == m.id));
}

#[test]
fn a_broken_file_names_its_line_and_other_namespaces_keep_working() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("markdown://{}", dir.path().display());
    let engine = Engine::open(&url).expect("opens");
    for (namespace, user, text) in [
        ("default", "ana", "Ana's cat is called Miso"),
        ("work", "ana", "The deploy window is on Tuesdays"),
    ] {
        let mut p = Put::new(engine.partition(&ns(namespace)), None, text);
        p.owner.user_id = Some(user.into());
        engine.remember(p).expect("remember");
    }
    let file = user_file(dir.path(), "ana");
    let text = std::fs::read_to_string(&file).expect("file");
    let broken = text.replace("importance: 0.5", "importance: very");
    std::fs::write(&file, &broken).expect("break");
    let line = broken
        .lines()
        .position(|l| l.starts_with("importance"))
        .expect("the field")
        + 1;
    let err = engine
        .search(&ns("default"), "cat", 3, Default::default())
        .expect_err("a broken file");
    assert_eq!(err.kind(), ErrorKind::Corrupted);
    let message = err.to_string();
    assert!(
        message.contains(&format!("ana.md:{line}")) && message.contains("importance"),
        "{message}"
    );
    let work = engine
        .search(&ns("work"), "deploy window", 3, Default::default())
        .expect("another namespace answers");
    assert_eq!(work.len(), 1);
    let listed = engine
        .store()
        .namespaces(engine.tenant())
        .expect("namespaces");
    assert_eq!(listed, vec![ns("default"), ns("work")]);
    // Mended, it reads again; nothing was lost.
    std::fs::write(&file, &text).expect("mend");
    let hits = engine
        .search(&ns("default"), "cat", 3, Default::default())
        .expect("reads again");
    assert_eq!(hits.len(), 1);
}
