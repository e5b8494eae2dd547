//! Benches of the engine's own work: maintenance and the graph.

use super::*;

/// `muisti bench maintain`: seeds the corpus through the store (no dedupe, no vectors),
/// then times one full maintenance pass.
pub(super) fn maintain_bench(
    engine: &muisti::Engine,
    memories: usize,
    per_user: u64,
    max_memories: u64,
    with_recalls: bool,
    full: bool,
    exact_only: bool,
) -> Result<serde_json::Value> {
    let partition = engine.partition(&muisti::Namespace::default_ns());
    let started = std::time::Instant::now();
    let mut recalled = Vec::new();
    let mut once = Vec::new();
    for chunk in (0..memories as u64).collect::<Vec<_>>().chunks(1_000) {
        let mut puts: Vec<muisti::Put> = chunk
            .iter()
            .map(|i| {
                let user = i / per_user;
                let n = i % per_user;
                // One in twenty repeats the memory before it.
                let topic = if n % 20 == 19 { n - 1 } else { n };
                let mut p = muisti::Put::new(
                    partition.clone(),
                    None,
                    format!("user {user} noted item {topic}: something worth keeping"),
                );
                p.owner.user_id = Some(format!("u{user}"));
                p.importance = Some(0.3);
                p
            })
            .collect();
        if let Some(e) = engine.embedder().filter(|_| full) {
            let texts: Vec<String> = puts.iter().map(|p| p.index_text().into_owned()).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            for (p, v) in puts.iter_mut().zip(e.embed(&refs)?) {
                p.embedding = Some(v);
                p.embedding_model = Some(e.id().to_owned());
            }
        }
        for (w, i) in engine.store().put_many(puts)?.into_iter().zip(chunk) {
            if i % 10 == 3 {
                recalled.push(w.memory.id);
            } else if full && i % 10 != 7 {
                once.push(w.memory.id);
            }
        }
    }
    for ids in once.chunks(1_000) {
        engine
            .store()
            .touch(engine.tenant(), ids, muisti::Timestamp::now())?;
    }
    for ids in recalled.chunks(1_000) {
        let twelve: Vec<muisti::MemoryId> = ids.iter().flat_map(|id| [*id; 12]).collect();
        engine
            .store()
            .touch(engine.tenant(), &twelve, muisti::Timestamp::now())?;
    }
    let seeded = started.elapsed();
    let users = (memories as u64).div_ceil(per_user).max(1);
    // Recall of a random user, as an agent would ask, timed in milliseconds.
    let mut rng = crate::scale::Rng(0x243f_6a88_85a3_08d3);
    let mut recall = move || -> Result<f64> {
        let user = rng.next() % users;
        let mut req = muisti::RecallRequest::new(
            muisti::Namespace::default_ns(),
            format!(
                "what did user {user} note about item {}",
                rng.next() % per_user
            ),
            5,
        );
        req.filter.user_id = Some(format!("u{user}"));
        let t = std::time::Instant::now();
        engine.recall(&req)?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let quantiles = |mut ms: Vec<f64>| -> serde_json::Value {
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| {
            ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        serde_json::json!({"recalls": ms.len(), "p50_ms": at(0.5), "p99_ms": at(0.99)})
    };
    let quiet: Vec<f64> = if with_recalls {
        (0..1_000).map(|_| recall()).collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let started = std::time::Instant::now();
    // The pass on a thread of its own; recalls go on beside it until it ends.
    let (report, during) = std::thread::scope(|scope| -> Result<_> {
        let pass = scope.spawn(|| {
            engine
                .lifecycle()
                .run_maintenance(&muisti::lifecycle::MaintenanceOptions {
                    max_memories: Some(max_memories),
                    jobs: if full {
                        muisti::lifecycle::Job::ALL.to_vec()
                    } else {
                        Vec::new()
                    },
                    archive_after: std::time::Duration::ZERO,
                    archive_max_access: 0,
                    near_duplicates: !exact_only,
                    ..Default::default()
                })
        });
        let mut during = Vec::new();
        while with_recalls && !pass.is_finished() {
            during.push(recall()?);
        }
        let report = pass
            .join()
            .map_err(|_| anyhow::anyhow!("the maintenance pass panicked"))??;
        Ok((report, during))
    })?;
    let pass = started.elapsed();
    Ok(serde_json::json!({
        "memories": memories,
        "users": report.users,
        "seed_s": seeded.as_secs_f64(),
        "maintenance_s": pass.as_secs_f64(),
        "memories_per_s": memories as f64 / pass.as_secs_f64().max(1e-9),
        "peak_rss_mib": crate::locomo::peak_rss_mib(),
        "recall_without_pass": with_recalls.then(|| quantiles(quiet)),
        "recall_during_pass": with_recalls.then(|| quantiles(during)),
        "report": report,
    }))
}

/// `muisti bench graph`: writes `edges` memories of one user, waits for the worker to read
/// them into the graph, then times the three kinds of query.
pub(super) fn graph_bench(
    engine: &muisti::Engine,
    edges: usize,
    queries: usize,
) -> Result<serde_json::Value> {
    use muisti::graph::RelationQuery;
    const COMPANIES: usize = 500;
    let partition = engine.partition(&muisti::Namespace::default_ns());
    let started = std::time::Instant::now();
    for chunk in (0..edges).collect::<Vec<_>>().chunks(1_000) {
        let puts = chunk
            .iter()
            .map(|i| {
                let mut p = muisti::Put::new(
                    partition.clone(),
                    None,
                    format!("Person{i} works at Company{}.", i % COMPANIES),
                );
                p.owner.user_id = Some("u".into());
                p
            })
            .collect();
        engine.remember_many(puts)?;
    }
    let written = started.elapsed();
    super::settle_graph(engine)?;
    let extracted = started.elapsed();
    let mut rng = crate::scale::Rng(0x6a09_e667_f3bc_c908);
    let mut time = |f: &mut dyn FnMut(usize) -> Result<usize>| -> Result<serde_json::Value> {
        let mut ms = Vec::with_capacity(queries);
        let mut found = 0;
        for _ in 0..queries {
            let i = (rng.next() % edges.max(1) as u64) as usize;
            let t = std::time::Instant::now();
            found += f(i)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| {
            ms.get(((ms.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        Ok(
            serde_json::json!({"p50_ms": at(0.5), "p95_ms": at(0.95), "mean_found": found as f64 / queries.max(1) as f64}),
        )
    };
    let user = Some("u".to_owned());
    let by_subject = time(&mut |i| {
        Ok(engine
            .graph()
            .relations(&RelationQuery {
                user_id: user.clone(),
                subject: Some(format!("Person{i}")),
                ..RelationQuery::default()
            })?
            .len())
    })?;
    let by_object = time(&mut |i| {
        Ok(engine
            .graph()
            .relations(&RelationQuery {
                user_id: user.clone(),
                predicate: Some("works_at".into()),
                object: Some(format!("Company{}", i % COMPANIES)),
                ..RelationQuery::default()
            })?
            .len())
    })?;
    let neighbourhood = time(&mut |i| {
        Ok(engine
            .graph()
            .entity_relations(user.as_deref(), &format!("Person{i}"), None)?
            .len())
    })?;
    let two_hops = time(&mut |i| {
        Ok(engine
            .graph()
            .neighbourhood(
                user.as_deref(),
                &format!("Person{i}"),
                2,
                None,
                muisti::graph::MAX_NEIGHBOURHOOD,
            )?
            .len())
    })?;
    let evidence = time(&mut |i| {
        Ok(engine
            .graph()
            .evidence(
                user.as_deref(),
                &format!("Where does Person{i} work these days?"),
            )?
            .len())
    })?;
    Ok(serde_json::json!({
        "edges": edges,
        "write_s": written.as_secs_f64(),
        "extracted_s": extracted.as_secs_f64(),
        "memories_read_per_s": edges as f64 / extracted.as_secs_f64().max(1e-9),
        "triple_by_subject": by_subject,
        "triple_by_predicate_and_object": by_object,
        "entity_relations": neighbourhood,
        "neighbourhood_2_hops": two_hops,
        "recall_graph_evidence": evidence,
    }))
}

/// `muisti bench graph-extract`: the offline extractor's figures on a labelled corpus.
/// The engine a bench runs on: the given store, else a fresh SQLite file `file` in `dir`,
/// with the CLI's embedder.
pub(super) fn bench_engine(
    cli: &crate::Cli,
    store: Option<&str>,
    dir: &tempfile::TempDir,
    file: &str,
) -> Result<muisti::Engine> {
    let url = match store {
        Some(u) => u.to_owned(),
        None => format!("sqlite://{}/{file}", dir.path().display()),
    };
    let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
    Ok(muisti::Engine::builder(muisti::open_store(&url)?)
        .embedder(embedder)
        .build()?)
}
