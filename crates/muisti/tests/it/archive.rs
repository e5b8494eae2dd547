//! The archive tier and topics through the engine, on every backend: cold memories moved to
//! compressed objects and back (get and recall read them transparently, restore re-indexes),
//! deletes take their objects, a crashed step's orphan is swept; clusters by topic, their
//! labels, cluster-restricted recall, new memories joining a cluster.

use std::{path::Path, sync::Arc, time::Duration};

use muisti::{
    Engine, ErrorKind, Filter, MemoryState, Put, RecallRequest,
    lifecycle::{Job, MaintenanceOptions, archive::ARCHIVED},
};

use super::ns;

fn stored(engine: &Engine, user: &str, text: &str) -> muisti::Memory {
    let mut p = Put::new(engine.partition(&ns("default")), None, text);
    p.owner.user_id = Some(user.into());
    engine.remember(p).expect("remember").memory
}

/// The archive objects under a directory.
fn objects(dir: &Path) -> Vec<std::path::PathBuf> {
    if !dir.exists() {
        return Vec::new();
    }
    muisti_testkit::paths_under(dir)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".json.zst"))
        .collect()
}

/// Archive everything cold at once: any age, never recalled.
fn archive_now(user: &str) -> MaintenanceOptions {
    MaintenanceOptions {
        user_id: Some(user.into()),
        jobs: vec![Job::Archive],
        archive_after: Duration::ZERO,
        archive_max_access: 0,
        lease: Duration::from_millis(1),
        archive_grace: Duration::from_millis(1),
        ..MaintenanceOptions::default()
    }
}

fn recall(engine: &Engine, user: &str, query: &str, archived: bool) -> Vec<muisti::RecallHit> {
    let mut req = RecallRequest::new(ns("default"), query, 5);
    req.filter = Filter {
        user_id: Some(user.into()),
        ..Filter::default()
    };
    req.include_archived = archived;
    engine.recall(&req).expect("recall")
}

/// Archive → recall → restore on every backend: the record stays with its metadata and no
/// text or vector; get and recall with `include_archived` read it back; restore re-indexes
/// it and deletes the object; a rerun archives nothing twice; a dry run moves nothing.
#[test]
fn archive_round_trip_on_every_backend() {
    let dirs = tempfile::tempdir().expect("temp dir");
    super::on_every_backend(
        |store| {
            let dir = dirs.path().join(muisti::MemoryId::generate().to_string());
            let archive =
                muisti::lifecycle::archive::Archive::open(&format!("file://{}", dir.display()))
                    .expect("archive");
            Engine::builder(store)
                .archive(Some(Arc::new(archive)))
                .build()
                .expect("engine")
        },
        |url, engine| {
            let dir = Path::new(
                engine
                    .archive()
                    .expect("archive")
                    .location()
                    .trim_start_matches("file://"),
            )
            .to_path_buf();
            let seats = stored(&engine, "a1", "Alice prefers window seats on long flights");
            let peanuts = stored(&engine, "a1", "Bob is allergic to peanuts");
            let used = stored(&engine, "a1", "The team meets every Tuesday morning");
            engine
                .store()
                .touch(engine.tenant(), &[used.id], muisti::Timestamp::now())
                .expect("touch");
            let other = stored(&engine, "a2", "Carol plays the cello in an orchestra");

            let dry = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    dry_run: true,
                    ..archive_now("a1")
                })
                .expect("dry run");
            assert_eq!(dry.archived, 2, "{url}: two cold, one recalled");
            assert!(objects(&dir).is_empty(), "{url}: a dry run writes nothing");

            let done = engine
                .lifecycle()
                .run_maintenance(&archive_now("a1"))
                .expect("archive");
            assert_eq!(done.archived, 2, "{url}");
            assert_eq!(objects(&dir).len(), 2, "{url}: one object per memory");
            let raw = engine
                .store()
                .get(&muisti::Locator::Id {
                    tenant: engine.tenant().clone(),
                    id: seats.id,
                })
                .expect("get")
                .expect("the record stays");
            assert_eq!(raw.state, MemoryState::Archived, "{url}");
            assert_eq!(raw.text(), "", "{url}: no text in the store");
            assert_eq!(raw.owner.user_id.as_deref(), Some("a1"), "{url}");
            assert!(raw.metadata.contains_key(ARCHIVED), "{url}");
            let vectors = engine
                .store()
                .vectors(&engine.partition(&ns("default")), &Filter::default())
                .expect("vectors");
            assert!(
                vectors
                    .iter()
                    .all(|v| v.id != seats.id && v.id != peanuts.id),
                "{url}: no vector for an archived memory"
            );
            assert!(
                recall(&engine, "a1", "window seats on flights", false)
                    .iter()
                    .all(|h| h.memory.id != seats.id),
                "{url}: plain recall leaves archived memories out"
            );

            let back = engine.get_by_id(seats.id).expect("get").expect("found");
            assert_eq!(back.text(), seats.text(), "{url}: get reads the archive");
            assert_eq!(back.state, MemoryState::Archived, "{url}");
            let listed = engine
                .list(muisti::ListQuery {
                    filter: Filter {
                        user_id: Some("a1".into()),
                        ..Filter::default()
                    },
                    ..muisti::ListQuery::all(engine.partition(&ns("default")))
                })
                .expect("list");
            let seen = listed
                .items
                .iter()
                .find(|m| m.id == seats.id)
                .expect("listed");
            assert_eq!(
                seen.text(),
                seats.text(),
                "{url}: a listed one has its text"
            );
            let hits = recall(&engine, "a1", "window seats on flights", true);
            assert_eq!(hits.first().map(|h| h.memory.id), Some(seats.id), "{url}");
            assert_eq!(hits[0].memory.text(), seats.text(), "{url}: with its text");

            let again = engine
                .lifecycle()
                .run_maintenance(&archive_now("a1"))
                .expect("rerun");
            assert_eq!(
                (again.archived, again.swept),
                (0, 0),
                "{url}: nothing twice"
            );

            let restored = engine.lifecycle().restore(seats.id).expect("restore");
            assert_eq!(restored.state, MemoryState::Active, "{url}");
            assert_eq!(restored.text(), seats.text(), "{url}");
            assert!(!restored.metadata.contains_key(ARCHIVED), "{url}");
            assert_eq!(objects(&dir).len(), 1, "{url}: its object is gone");
            let hit = recall(&engine, "a1", "window seats on flights", false);
            let hit = hit.first().expect("found again");
            assert_eq!(hit.memory.id, seats.id, "{url}");
            assert!(
                hit.signals.lexical_rank.is_some() && hit.signals.vector_rank.is_some(),
                "{url}: indexed again, both ways: {:?}",
                hit.signals
            );

            // Changing an archived memory brings it back first.
            let changed = engine
                .update(muisti::UpdateRequest::new(
                    muisti::Locator::Id {
                        tenant: engine.tenant().clone(),
                        id: peanuts.id,
                    },
                    muisti::Patch {
                        importance: Some(0.9),
                        ..muisti::Patch::default()
                    },
                ))
                .expect("update");
            assert_eq!(changed.state, MemoryState::Active, "{url}");
            assert_eq!(changed.text(), peanuts.text(), "{url}");
            assert!(objects(&dir).is_empty(), "{url}");

            // Deleting an archived memory deletes its object.
            engine
                .lifecycle()
                .run_maintenance(&archive_now("a2"))
                .expect("archive");
            assert_eq!(objects(&dir).len(), 1, "{url}");
            assert!(
                engine
                    .forget(&muisti::Locator::Id {
                        tenant: engine.tenant().clone(),
                        id: other.id,
                    })
                    .expect("forget"),
                "{url}"
            );
            assert!(objects(&dir).is_empty(), "{url}: forgotten with its object");
        },
    );
}

/// An object written for a memory whose record never named it (a run killed between the
/// two steps) is swept by the next run; an archived memory whose object went missing reads
/// as corrupted, never as an empty memory.
#[test]
fn orphans_are_swept_and_a_missing_object_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archive = muisti::lifecycle::archive::Archive::open(&format!(
        "file://{}",
        dir.path().join("archive").display()
    ))
    .expect("archive");
    let engine = Engine::builder(muisti::open_store("mem://").expect("store"))
        .archive(Some(Arc::new(archive)))
        .build()
        .expect("engine");
    let first = stored(&engine, "o1", "The garden needs water every evening");
    let second = stored(&engine, "o2", "The car is due for service in May");
    engine
        .lifecycle()
        .run_maintenance(&archive_now("o1"))
        .expect("archive");
    let [object] = objects(dir.path()).try_into().expect("one object");
    // A copy named for the other, still active memory: what a killed run leaves.
    let orphan = object.with_file_name(format!("{}.json.zst", second.id));
    std::fs::copy(&object, &orphan).expect("copy");
    std::thread::sleep(Duration::from_millis(5));
    let swept = engine
        .lifecycle()
        .run_maintenance(&archive_now("nobody"))
        .expect("sweep");
    assert_eq!(swept.swept, 1);
    assert!(!orphan.exists() && object.exists());
    assert_eq!(
        engine.get_by_id(second.id).expect("get").map(|m| m.state),
        Some(MemoryState::Active)
    );
    // A forged marker (state and metadata a client may write) naming another memory's
    // object neither reads nor deletes it.
    let forger = stored(&engine, "o2", "A note of my own");
    let first_raw = engine
        .store()
        .get(&muisti::Locator::Id {
            tenant: engine.tenant().clone(),
            id: first.id,
        })
        .expect("get")
        .expect("archived");
    let mut forged = forger.metadata.clone();
    forged.insert(ARCHIVED.into(), first_raw.metadata[ARCHIVED].clone());
    engine
        .store()
        .update(&muisti::UpdateRequest::new(
            muisti::Locator::Id {
                tenant: engine.tenant().clone(),
                id: forger.id,
            },
            muisti::Patch {
                state: Some(MemoryState::Archived),
                metadata: Some(forged),
                ..muisti::Patch::default()
            },
        ))
        .expect("forge");
    let read = engine.get_by_id(forger.id).expect("get").expect("found");
    assert_eq!(
        read.text(),
        "A note of my own",
        "not the other memory's text"
    );
    engine
        .forget(&muisti::Locator::Id {
            tenant: engine.tenant().clone(),
            id: forger.id,
        })
        .expect("forget");
    assert!(object.exists(), "the other memory's object stays");
    std::fs::remove_file(&object).expect("remove");
    let err = engine
        .get_by_id(first.id)
        .expect_err("the object is missing");
    assert_eq!(err.kind(), ErrorKind::Corrupted);
    // Recall within a cluster reads no archive; overlap recall neither.
    let mut both = RecallRequest::new(ns("default"), "garden", 5);
    both.filter.user_id = Some("o1".into());
    both.include_archived = true;
    both.cluster = Some(0);
    assert_eq!(
        engine.recall(&both).expect_err("both").kind(),
        ErrorKind::ConflictingFields
    );
    both.cluster = None;
    both.mode = muisti::RecallMode::Overlap;
    assert_eq!(
        engine.recall(&both).expect_err("overlap").kind(),
        ErrorKind::ConflictingFields
    );
    // A changed object fails its checksum.
    let third = stored(&engine, "o3", "The dentist appointment is on Friday");
    engine
        .lifecycle()
        .run_maintenance(&archive_now("o3"))
        .expect("archive");
    let [object] = objects(dir.path()).try_into().expect("one object");
    std::fs::write(&object, b"not what was written").expect("write");
    let err = engine.get_by_id(third.id).expect_err("changed");
    assert_eq!(err.kind(), ErrorKind::Corrupted);
}

/// Without an archive the job is refused with a clear error, and nothing is stripped.
#[test]
fn archiving_without_an_archive_is_refused() {
    let engine = Engine::builder(muisti::open_store("mem://").expect("store"))
        .build()
        .expect("engine");
    let m = stored(&engine, "n1", "The boiler was serviced in March");
    let err = engine
        .lifecycle()
        .run_maintenance(&archive_now("n1"))
        .expect_err("no archive");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        engine.get_by_id(m.id).expect("get").map(|m| m.state),
        Some(MemoryState::Active)
    );
}

const TOPICS: [&[&str]; 3] = [
    &[
        "I baked sourdough bread with a crisp crust this weekend",
        "My favourite recipe is a slow cooked tomato pasta sauce",
        "I roasted vegetables with garlic and rosemary for dinner",
        "The cake recipe needs two cups of flour and three eggs",
        "I cooked a spicy curry with coconut milk and lentils",
        "Kneading the dough for pizza takes ten minutes",
        "I love grilling fish with lemon and butter",
        "My soup recipe uses onions, carrots and celery",
    ],
    &[
        "We hiked up the mountain trail to the summit at dawn",
        "The hiking boots I bought are great on rocky trails",
        "Camping by the lake after a long hike in the forest",
        "The mountain path was steep and covered in snow",
        "I climbed the ridge and saw the valley below",
        "Our trek through the alpine meadows took six hours",
        "Backpacking in the hills with a tent and a map",
        "The trail along the river leads to a waterfall",
    ],
    &[
        "I fixed a bug in the Rust compiler error messages",
        "The Python script parses JSON files from the API",
        "Writing unit tests for the database layer in Go",
        "The program crashed with a null pointer exception",
        "Refactoring the code to use async functions and futures",
        "Debugging a memory leak in the C++ server",
        "The function returns an error when the input is empty",
        "Compiling the project takes two minutes with cargo",
    ],
];

/// A user's memories of three topics fall into clusters that keep each topic together,
/// labelled by their words; recall within a cluster returns only its memories; a memory
/// written later joins the cluster of its topic; a rerun with few new memories does not
/// refit; a forgotten user's clusters go with them.
#[test]
fn clusters_group_a_users_memories_by_topic() {
    super::on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, engine| {
            let mut by_topic = Vec::new();
            for topic in TOPICS {
                by_topic.push(
                    topic
                        .iter()
                        .map(|t| stored(&engine, "c1", t).id)
                        .collect::<Vec<_>>(),
                );
            }
            stored(&engine, "c2", "Another user's note about sourdough bread");
            let options = MaintenanceOptions {
                user_id: Some("c1".into()),
                jobs: vec![Job::Cluster],
                ..MaintenanceOptions::default()
            };
            let dry = engine
                .lifecycle()
                .run_maintenance(&MaintenanceOptions {
                    dry_run: true,
                    ..options.clone()
                })
                .expect("dry");
            assert_eq!(dry.clustered, 1, "{url}");
            assert!(
                engine
                    .lifecycle()
                    .clustering(&ns("default"), Some("c1"))
                    .expect("read")
                    .is_none(),
                "{url}: a dry run stores nothing"
            );
            let done = engine
                .lifecycle()
                .run_maintenance(&options)
                .expect("cluster");
            assert_eq!(done.clustered, 1, "{url}");
            let (clustering, members) = engine
                .lifecycle()
                .cluster_members(&ns("default"), Some("c1"))
                .expect("members");
            let k = clustering.clusters.len();
            assert!(
                (2..=muisti::lifecycle::cluster::MAX_K).contains(&k),
                "{url}: k {k}"
            );
            // Each topic's memories mostly in one cluster (purity).
            let cluster_of = |id: &muisti::MemoryId| {
                members
                    .iter()
                    .find(|(_, ids)| ids.contains(id))
                    .map(|(c, _)| *c)
            };
            let mut together = 0;
            for ids in &by_topic {
                let mut counts = std::collections::HashMap::new();
                for id in ids {
                    *counts.entry(cluster_of(id)).or_insert(0) += 1;
                }
                together += counts.values().max().copied().unwrap_or(0);
            }
            assert!(
                together >= 18,
                "{url}: {together} of 24 with their topic's cluster: {:?}",
                clustering
                    .clusters
                    .iter()
                    .map(|c| &c.label)
                    .collect::<Vec<_>>()
            );
            let hiking = cluster_of(&by_topic[1][0]).expect("in a cluster");
            let label = &clustering.clusters[hiking as usize].terms;
            assert!(!label.is_empty(), "{url}");
            // Recall within the hiking cluster: only its members, whatever the query says.
            let mut req = RecallRequest::new(ns("default"), "bread recipe trail", 10);
            req.filter.user_id = Some("c1".into());
            req.cluster = Some(hiking);
            let hits = engine.recall(&req).expect("recall");
            assert!(!hits.is_empty(), "{url}");
            let inside = &members[&hiking];
            assert!(
                hits.iter().all(|h| inside.contains(&h.memory.id)),
                "{url}: only the cluster's memories"
            );
            // Incremental: a new hiking memory is in the hiking cluster at once.
            let late = stored(&engine, "c1", "We hiked the mountain trail above the lake");
            let ids = engine
                .lifecycle()
                .cluster_ids(&ns("default"), Some("c1"), hiking)
                .expect("ids");
            assert!(ids.contains(&late.id), "{url}: joins its topic's cluster");
            let rerun = engine.lifecycle().run_maintenance(&options).expect("rerun");
            assert_eq!(rerun.clustered, 0, "{url}: one more memory does not refit");
            // Recall within a cluster names its user; an unknown cluster is not found.
            let mut bad = RecallRequest::new(ns("default"), "trail", 5);
            bad.cluster = Some(hiking);
            assert_eq!(
                engine.recall(&bad).expect_err("no user").kind(),
                ErrorKind::ConflictingFields,
                "{url}"
            );
            bad.filter.user_id = Some("c1".into());
            bad.cluster = Some(99);
            assert_eq!(
                engine.recall(&bad).expect_err("no cluster").kind(),
                ErrorKind::NotFound,
                "{url}"
            );
            engine
                .forget_where(
                    &ns("default"),
                    &Filter {
                        user_id: Some("c1".into()),
                        ..Filter::default()
                    },
                )
                .expect("forget user");
            assert!(
                engine
                    .lifecycle()
                    .clustering(&ns("default"), Some("c1"))
                    .expect("read")
                    .is_none(),
                "{url}: the clusters go with the user"
            );
        },
    );
}

/// The archive on an S3-compatible server (`MUISTI_S3_URL`, for example
/// `s3://muisti-test/ci?endpoint=http://127.0.0.1:PORT&region=us-east-1&allow_http=true`,
/// credentials in `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`; `.ci/run` starts moto's
/// server for it), over SQLite and the in-process store: archive, read back, recall, restore,
/// delete, each object where it should be.
#[test]
fn archive_round_trip_on_s3() {
    #[cfg(feature = "s3")]
    {
        let Some(base) = std::env::var("MUISTI_S3_URL")
            .ok()
            .filter(|u| !u.is_empty())
        else {
            muisti_testkit::service_unavailable("s3", "MUISTI_S3_URL is not set");
            return;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        for store in [
            "mem://".to_owned(),
            format!("sqlite://{}", dir.path().join("s3.db").display()),
        ] {
            // A prefix of its own under the bucket's.
            let (place, query) = base.split_once('?').unwrap_or((base.as_str(), ""));
            let url = format!(
                "{}/{}?{query}",
                place.trim_end_matches('/'),
                muisti::MemoryId::generate()
            );
            let archive =
                Arc::new(muisti::lifecycle::archive::Archive::open(&url).expect("archive"));
            let engine = Engine::builder(muisti::open_store(&store).expect("store"))
                .archive(Some(Arc::clone(&archive)))
                .build()
                .expect("engine");
            let partition = engine.partition(&ns("default"));
            let seats = stored(&engine, "s1", "Alice prefers window seats on long flights");
            let other = stored(&engine, "s1", "Bob is allergic to peanuts");
            let done = engine
                .lifecycle()
                .run_maintenance(&archive_now("s1"))
                .expect("archive");
            assert_eq!(done.archived, 2, "{store}");
            assert_eq!(
                archive.objects_in(&partition).expect("list").len(),
                2,
                "{store}"
            );
            let back = engine.get_by_id(seats.id).expect("get").expect("found");
            assert_eq!(back.text(), seats.text(), "{store}");
            let hits = recall(&engine, "s1", "window seats", true);
            assert_eq!(hits.first().map(|h| h.memory.id), Some(seats.id), "{store}");
            let restored = engine.lifecycle().restore(seats.id).expect("restore");
            assert_eq!(restored.state, MemoryState::Active, "{store}");
            assert_eq!(recall(&engine, "s1", "window seats", false).len(), 1);
            engine
                .forget(&muisti::Locator::Id {
                    tenant: engine.tenant().clone(),
                    id: other.id,
                })
                .expect("forget");
            assert!(
                archive.objects_in(&partition).expect("list").is_empty(),
                "{store}: restored and forgotten, no object left"
            );
        }
    }
    #[cfg(not(feature = "s3"))]
    muisti_testkit::service_unavailable("s3", "muisti was built without the s3 feature");
}
