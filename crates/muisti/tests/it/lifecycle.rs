//! Maintenance through the engine, on every backend: prune to a cap by the seed's score,
//! consolidate exact duplicates, promote what is recalled, dry runs, reruns after a crash,
//! statistics.

use muisti::{
    Engine, Locator, MemoryScope, Put,
    lifecycle::{Job, MERGED_FROM, MaintenanceOptions, PROMOTED_AT},
};

use super::ns;

/// A memory of `user` written through the store (no dedupe), with `importance`.
fn stored(engine: &Engine, user: &str, text: &str, importance: f32) -> muisti::Memory {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.owner.user_id = Some(user.into());
    p.importance = Some(importance);
    engine.store().put(p).expect("put").memory
}

fn get(engine: &Engine, id: muisti::MemoryId) -> Option<muisti::Memory> {
    engine.get_by_id(id).expect("get")
}

fn recalled(engine: &Engine, id: muisti::MemoryId, times: usize) {
    engine
        .store()
        .touch(engine.tenant(), &vec![id; times], muisti::Timestamp::now())
        .expect("touch");
}

fn count(engine: &Engine, user: &str) -> u64 {
    engine
        .count(
            &ns("default"),
            &muisti::Filter {
                user_id: Some(user.into()),
                ..Default::default()
            },
        )
        .expect("count")
}

/// Prune keeps a user to the cap: the least relevant of the memories below the importance
/// floor go (one recalled often stays), never a declarative entry nor an important memory,
/// and a dry run only reports.
#[test]
fn prune_keeps_a_user_to_the_cap_by_relevance() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let low: Vec<_> = (0..30)
                .map(|i| stored(&engine, "p1", &format!("passing remark {i}"), 0.1))
                .collect();
            let kept = stored(&engine, "p1", "an important one", 0.9);
            recalled(&engine, low[0].id, 20);
            let mut d = Put::new(
                engine.partition(&ns("default")),
                None,
                "I am allergic to peanuts",
            );
            d.scope = MemoryScope::Declarative;
            d.category = muisti::Category::Fact;
            d.owner.user_id = Some("p1".into());
            engine.declarative().declare(d).expect("declare");
            stored(&engine, "p2", "another user's remark", 0.1);
            let options = MaintenanceOptions {
                user_id: Some("p1".into()),
                jobs: vec![Job::Prune],
                max_memories: Some(10),
                dry_run: true,
                ..MaintenanceOptions::default()
            };
            let dry = engine
                .lifecycle()
                .run_maintenance(&options)
                .expect("dry run");
            assert_eq!(dry.pruned, 21, "{url}: 31 beyond a cap of 10");
            assert_eq!(
                count(&engine, "p1"),
                32,
                "{url}: the dry run changed nothing"
            );
            let done = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    dry_run: false,
                    ..options.clone()
                })
                .expect("prune");
            assert_eq!(done.pruned, 21, "{url}");
            assert_eq!(
                count(&engine, "p1"),
                11,
                "{url}: ten and the declarative entry"
            );
            assert!(
                get(&engine, kept.id).is_some(),
                "{url}: important memories stay"
            );
            assert!(
                get(&engine, low[0].id).is_some(),
                "{url}: the recalled one stays"
            );
            assert_eq!(count(&engine, "p2"), 1, "{url}: another user untouched");
            let again = engine.lifecycle().run_maintenance(&options).expect("rerun");
            assert_eq!(again.pruned, 0, "{url}: at the cap");
        },
    );
}

/// Exact duplicates fold into the oldest: it takes their accesses, tags and metadata and
/// records them; a rerun after a crash between the fold and the delete deletes without
/// counting twice.
#[test]
fn consolidation_folds_duplicates_into_the_oldest_once() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let oldest = stored(&engine, "c1", "Likes window seats", 0.3);
            let mut second = Put::new(engine.partition(&ns("default")), None, "Likes window seats");
            second.owner.user_id = Some("c1".into());
            second.tags = vec!["travel".into()];
            let second = engine.store().put(second).expect("put").memory;
            let third = stored(&engine, "c1", "Likes window seats", 0.6);
            stored(&engine, "c1", "Likes aisle seats", 0.3);
            // Two duplicates folded in one update: each adds what it brings.
            let mut fourth = Put::new(engine.partition(&ns("default")), None, "Likes window seats");
            fourth.owner.user_id = Some("c1".into());
            fourth.tags = vec!["window".into(), "travel".into()];
            fourth.importance = Some(0.2);
            let fourth = engine.store().put(fourth).expect("put").memory;
            recalled(&engine, second.id, 2);
            recalled(&engine, third.id, 3);
            recalled(&engine, fourth.id, 1);
            // A run that stopped after folding `third` but before deleting it.
            let third_now = get(&engine, third.id).expect("third");
            let mut metadata = serde_json::Map::new();
            metadata.insert(
                MERGED_FROM.into(),
                serde_json::json!([{"id": third.id, "access_count": 3}]),
            );
            let patch = muisti::Patch {
                metadata: Some(metadata),
                importance: Some(third_now.importance),
                add_access: Some(third_now.access_count),
                ..muisti::Patch::default()
            };
            engine
                .store()
                .update(&muisti::UpdateRequest::new(
                    Locator::Id {
                        tenant: engine.tenant().clone(),
                        id: oldest.id,
                    },
                    patch,
                ))
                .expect("half a fold");
            let report = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    user_id: Some("c1".into()),
                    jobs: vec![Job::Consolidate],
                    ..MaintenanceOptions::default()
                })
                .expect("consolidate");
            assert_eq!(report.consolidated, 3, "{url}");
            assert!(get(&engine, second.id).is_none(), "{url}");
            assert!(get(&engine, third.id).is_none(), "{url}");
            assert!(get(&engine, fourth.id).is_none(), "{url}");
            let kept = get(&engine, oldest.id).expect("the oldest stays");
            assert_eq!(
                kept.access_count, 6,
                "{url}: 2 + 3 + 1, the crashed fold counted once"
            );
            assert_eq!(kept.tags, ["travel", "window"], "{url}");
            assert!(
                (kept.importance - 0.6).abs() < 1e-6,
                "{url}: the highest importance"
            );
            let merged = kept.metadata[MERGED_FROM].as_array().expect("recorded");
            assert_eq!(merged.len(), 3, "{url}");
            assert_eq!(
                count(&engine, "c1"),
                2,
                "{url}: the aisle seat is no duplicate"
            );
            let again = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    user_id: Some("c1".into()),
                    jobs: vec![Job::Consolidate],
                    ..MaintenanceOptions::default()
                })
                .expect("rerun");
            assert_eq!(again.consolidated, 0, "{url}");
        },
    );
}

/// Promotion raises importance by 0.1 each time a memory was recalled `promote_after`
/// more times, once per crossing: a rerun promotes nothing again.
#[test]
fn promotion_follows_recalls_once_per_threshold() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let m = stored(&engine, "r1", "Prefers tea", 0.3);
            let quiet = stored(&engine, "r1", "Mentioned rain once", 0.3);
            recalled(&engine, m.id, 12);
            let options = MaintenanceOptions {
                user_id: Some("r1".into()),
                jobs: vec![Job::Promote],
                ..MaintenanceOptions::default()
            };
            assert_eq!(
                engine
                    .lifecycle()
                    .run_maintenance(&options)
                    .expect("promote")
                    .promoted,
                1,
                "{url}"
            );
            let now = get(&engine, m.id).expect("m");
            assert!(
                (now.importance - 0.4).abs() < 1e-6,
                "{url}: {}",
                now.importance
            );
            assert_eq!(now.metadata[PROMOTED_AT], 12, "{url}");
            assert_eq!(
                engine
                    .lifecycle()
                    .run_maintenance(&options)
                    .expect("again")
                    .promoted,
                0,
                "{url}"
            );
            recalled(&engine, m.id, 10);
            assert_eq!(
                engine
                    .lifecycle()
                    .run_maintenance(&options)
                    .expect("more")
                    .promoted,
                1,
                "{url}"
            );
            let now = get(&engine, m.id).expect("m");
            assert!(
                (now.importance - 0.5).abs() < 1e-6,
                "{url}: {}",
                now.importance
            );
            assert!(
                (get(&engine, quiet.id).expect("quiet").importance - 0.3).abs() < 1e-6,
                "{url}"
            );
        },
    );
}

/// A user's memories in numbers.
#[test]
fn statistics_of_a_user() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let a = stored(&engine, "s1", "one", 0.2);
            stored(&engine, "s1", "two", 0.4);
            stored(&engine, "s2", "other", 0.9);
            recalled(&engine, a.id, 4);
            let s = engine
                .lifecycle()
                .memory_stats(&ns("default"), Some("s1"))
                .expect("stats");
            assert_eq!(s.total, 2, "{url}");
            assert_eq!(s.by_scope["long_term"], 2, "{url}");
            assert!((s.avg_importance - 0.3).abs() < 1e-6, "{url}");
            assert_eq!(s.max_access, 4, "{url}");
            assert_eq!(s.most_accessed, [(a.id, 4)], "{url}");
            assert_eq!(s.bytes, 6, "{url}");
            assert_eq!(s.growth_per_day.values().sum::<u64>(), 2, "{url}");
        },
    );
}

/// Near-duplicates (the same fact in other words) fold into the oldest unless turned off,
/// taking its accesses; memories that differ in a value, a number or a negation stay.
#[test]
fn near_duplicates_fold_unless_turned_off() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let first = stored(&engine, "n1", "User prefers aisle seats on trains", 0.3);
            let said = stored(
                &engine,
                "n1",
                "The user said that they prefer aisle seats on trains",
                0.3,
            );
            recalled(&engine, said.id, 4);
            let chess = stored(&engine, "n1", "User plays chess on weekends", 0.3);
            let again = stored(
                &engine,
                "n1",
                "As the user mentioned earlier, they play chess on weekends",
                0.3,
            );
            let kept = [
                stored(&engine, "n1", "User prefers window seats on trains", 0.3),
                stored(&engine, "n1", "User plays chess on Sundays", 0.3),
                stored(&engine, "n1", "User does not play chess on weekends", 0.3),
                stored(&engine, "n1", "User's cat Luna is 7 years old", 0.3),
                stored(&engine, "n1", "User's cat Luna is 8 years old", 0.3),
            ];
            let run = |near: bool| {
                engine
                    .lifecycle()
                    .run_maintenance(&MaintenanceOptions {
                        user_id: Some("n1".into()),
                        jobs: vec![Job::Consolidate],
                        near_duplicates: near,
                        ..MaintenanceOptions::default()
                    })
                    .expect("consolidate")
            };
            assert_eq!(run(false).consolidated, 0, "{url}: turned off");
            assert_eq!(run(true).consolidated, 2, "{url}");
            assert!(get(&engine, said.id).is_none(), "{url}");
            assert!(get(&engine, again.id).is_none(), "{url}");
            assert!(get(&engine, chess.id).is_some(), "{url}");
            for m in kept {
                assert!(get(&engine, m.id).is_some(), "{url}: {} stays", m.text());
            }
            let first = get(&engine, first.id).expect("kept");
            assert_eq!(first.access_count, 4, "{url}: its accesses taken");
            assert_eq!(
                first.metadata[MERGED_FROM].as_array().map(Vec::len),
                Some(1),
                "{url}"
            );
        },
    );
}

/// The near-duplicate rule on the labelled pairs: the set that guided it (precision 1.000,
/// recall 0.545), and the one written blind before the rule (scored once: 1.000 and 0.156;
/// the target is a precision of 0.95). Floors just under the figures.
#[test]
fn the_near_duplicate_rule_on_the_labelled_pairs() {
    for (text, precision, recall) in [
        (
            include_str!("../../../muisti-lang/tests/data/near-duplicates.jsonl"),
            0.99,
            0.54,
        ),
        (
            include_str!("../../../muisti-lang/tests/data/near-duplicates-heldout.jsonl"),
            0.95,
            0.15,
        ),
    ] {
        let pairs: Vec<muisti_lang::conflict::LabelledDuplicate> =
            muisti_lang::labelled::parse_jsonl(text).expect("labelled pairs");
        assert!(pairs.len() >= 200);
        let all: Vec<&muisti_lang::conflict::LabelledDuplicate> = pairs.iter().collect();
        let s =
            muisti_lang::conflict::score_duplicates(&all, &vec![None; pairs.len()], f32::INFINITY);
        assert!(s.precision() >= precision, "{s:?}");
        assert!(s.recall() >= recall, "{s:?}");
    }
}

/// A dry run of the expiry reports what the real run then deletes, and deletes nothing.
#[test]
fn a_dry_run_of_the_expiry_reports_what_the_run_deletes() {
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .embedder(None)
                .build()
                .expect("engine")
        },
        |url, engine| {
            let ttl = muisti::Ttl::new(std::time::Duration::from_millis(100)).expect("ttl");
            for i in 0..2 {
                let mut p = Put::new(
                    engine.partition(&ns("dry_expiry")),
                    None,
                    format!("a passing note {i}"),
                );
                p.ttl = Some(ttl);
                engine.remember(p).expect("write");
            }
            stored(&engine, "dx", "a lasting note", 0.5);
            std::thread::sleep(std::time::Duration::from_millis(250));
            let options = MaintenanceOptions {
                jobs: vec![Job::Expire],
                dry_run: true,
                ..MaintenanceOptions::default()
            };
            let dry = engine
                .lifecycle()
                .run_maintenance(&options)
                .expect("dry run");
            let again = engine
                .lifecycle()
                .run_maintenance(&options)
                .expect("dry run");
            assert_eq!(
                dry.expired, again.expired,
                "{url}: the dry run deleted nothing"
            );
            let done = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    dry_run: false,
                    ..options.clone()
                })
                .expect("run");
            assert_eq!(done.expired, dry.expired, "{url}");
            // Redis expires records itself: none wait there, on either run.
            if !url.starts_with("redis") {
                assert!(dry.expired >= 2, "{url}: {dry:?}");
            }
        },
    );
}
