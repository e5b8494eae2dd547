//! The access log over every backend: each recall's and read's access kept with its score
//! (and the asking user's query on their own memory), within the retention, counted per day
//! by analytics, and gone with the memory and with its user.

use std::sync::Arc;

use muisti::{
    AccessKind, AccessLog, AccessLogMode, Engine, Filter, Locator, ManualClock, Namespace,
    Partition, Put, Timestamp, analytics::AnalyticsQuery,
};

use super::ns;

fn log_partition(engine: &Engine) -> Partition {
    Partition::new(
        engine.tenant().clone(),
        Namespace::new("_muisti.access_log").expect("valid"),
    )
}

fn records(engine: &Engine) -> u64 {
    engine
        .store()
        .count(&log_partition(engine), &Filter::default())
        .expect("counts")
}

fn alice() -> Filter {
    Filter {
        user_id: Some("alice".into()),
        ..Filter::default()
    }
}

const DAY_MS: i64 = 86_400_000;

#[test]
fn the_access_log_keeps_each_access_and_goes_with_the_memory_and_the_user() {
    let start = Timestamp::from_millis(Timestamp::now().as_millis() / DAY_MS * DAY_MS + 3_600_000);
    let clock = Arc::new(ManualClock::new(start));
    super::on_every_backend(
        |store| {
            Engine::builder(store)
                .clock(clock.clone())
                .access_log(AccessLog {
                    mode: AccessLogMode::Queries,
                    retention_days: 30,
                })
                .build()
                .expect("engine")
        },
        |url, e| {
            clock.set(start);
            let n = ns("default");
            let put = |user: &str, text: &str| {
                let mut p = Put::new(e.partition(&n), None, text);
                p.owner.user_id = Some(user.into());
                e.remember(p).expect("remembers").memory
            };
            let sister = put("alice", "Alice's sister lives in Porto");
            let dentist = put("alice", "Alice sees her dentist every March");
            let bob = put("bob", "Bob's sister lives in Oslo");

            let asked = e
                .search(&n, "where does my sister live", 3, alice())
                .expect("recalls");
            assert_eq!(asked[0].memory.id, sister.id, "{url}");
            // A recall for no user reaches Alice's memory: her record keeps no query of it.
            let anyone = e
                .search(&n, "sister Porto", 5, Filter::default())
                .expect("recalls");
            assert!(anyone.iter().any(|h| h.memory.id == sister.id), "{url}");
            e.read_for(sister.id, Some("alice"))
                .expect("reads")
                .expect("present");
            let dentist_hits = e.search(&n, "dentist", 1, alice()).expect("recalls");
            e.flush_access();
            // Every access of Alice's memories: the hits of her recalls, the anonymous
            // recall's hits of hers, and the read.
            let hers = |hits: &[muisti::RecallHit]| {
                hits.iter()
                    .filter(|h| h.memory.owner.user_id.as_deref() == Some("alice"))
                    .count() as u64
            };
            let expected = hers(&asked) + hers(&anyone) + hers(&dentist_hits) + 1;

            let a = e
                .accesses(sister.id, Some("alice"))
                .expect("reads")
                .expect("hers");
            let kinds: Vec<AccessKind> = a.entries.iter().map(|x| x.kind).collect();
            assert_eq!(
                kinds,
                [AccessKind::Read, AccessKind::Recall, AccessKind::Recall],
                "{url}: newest first"
            );
            assert_eq!(a.entries[0].score, None, "{url}: a read has no score");
            assert!(a.entries[1].score.is_some_and(|s| s > 0.0), "{url}");
            assert_eq!(
                a.entries[1].query, None,
                "{url}: a query for no user is not kept on Alice's memory"
            );
            assert_eq!(
                a.entries[2].query.as_deref(),
                Some("where does my sister live"),
                "{url}"
            );
            assert_eq!(a.days.len(), 1, "{url}");
            assert_eq!(a.days[0].count, 3, "{url}");
            // Bob sees nothing of Alice's memory, nor of its accesses.
            assert!(e.accesses(sister.id, Some("bob")).expect("reads").is_none());
            let bobs = e
                .accesses(bob.id, Some("bob"))
                .expect("reads")
                .expect("his");
            assert!(
                bobs.entries.iter().all(|x| x.query.is_none()),
                "{url}: {bobs:?}"
            );

            // Analytics counts every access of the day, not memories last accessed.
            let q = AnalyticsQuery {
                filter: alice(),
                days: 7,
                top: 0,
            };
            let stats = e.insights().analytics(&n, &q).expect("aggregates");
            assert!(stats.access_log, "{url}");
            let total: u64 = stats.accesses.iter().map(|d| d.count).sum();
            assert_eq!(
                total, expected,
                "{url}: every access of her memories that day"
            );

            // A memory moved to another user leaves its accesses (and Alice's queries)
            // behind.
            let held = records(&e);
            let moved = e
                .update(muisti::UpdateRequest::new(
                    Locator::Id {
                        tenant: e.tenant().clone(),
                        id: dentist.id,
                    },
                    muisti::Patch {
                        user_id: Some(Some("carol".into())),
                        ..muisti::Patch::default()
                    },
                ))
                .expect("moves");
            assert_eq!(moved.owner.user_id.as_deref(), Some("carol"));
            let carols = e
                .accesses(dentist.id, Some("carol"))
                .expect("reads")
                .expect("hers now");
            assert!(carols.entries.is_empty(), "{url}: {carols:?}");
            assert_eq!(
                records(&e),
                held - 1,
                "{url}: the moved memory's record is gone"
            );

            // A month on, the old accesses are past the retention.
            clock.advance(std::time::Duration::from_secs(31 * 86_400));
            e.search(&n, "where does my sister live", 1, alice())
                .expect("recalls");
            e.flush_access();
            let later = e
                .accesses(sister.id, Some("alice"))
                .expect("reads")
                .expect("hers");
            assert_eq!(later.entries.len(), 1, "{url}: {later:?}");
            assert_eq!(later.days.len(), 1, "{url}");
            assert_eq!(later.days[0].count, 1, "{url}");
            // The stored record itself dropped what the retention no longer covers.
            let stored = e
                .store()
                .get(&Locator::Key {
                    partition: log_partition(&e),
                    key: muisti::Key::new(sister.id.to_string()).expect("key"),
                })
                .expect("reads")
                .expect("the record");
            let kept = stored.metadata["log"]["entries"].as_array().map(Vec::len);
            assert_eq!(kept, Some(1), "{url}: {:?}", stored.metadata);
            let stats = e.insights().analytics(&n, &q).expect("aggregates");
            let total: u64 = stats.accesses.iter().map(|d| d.count).sum();
            assert_eq!(total, 1, "{url}: only the day within the window");

            // A deleted memory's record goes with it; a user's delete-all takes the rest.
            let before = records(&e);
            assert!(before >= 2, "{url}: {before}");
            assert!(
                e.forget(&Locator::Id {
                    tenant: e.tenant().clone(),
                    id: sister.id,
                })
                .expect("deletes")
            );
            assert_eq!(records(&e), before - 1, "{url}");
            // Many memories deleted at once (a batch past the per-key deletes).
            for i in 0..20 {
                put("alice", &format!("Alice's note number {i} about gardening"));
            }
            let found = e
                .search(&n, "gardening note", 20, alice())
                .expect("recalls");
            assert_eq!(found.len(), 20, "{url}");
            e.flush_access();
            assert_eq!(records(&e), before - 1 + 20, "{url}");
            e.forget_where(&n, &alice()).expect("deletes");
            let left = e
                .store()
                .count(
                    &log_partition(&e),
                    &Filter {
                        user_id: Some("alice".into()),
                        ..Filter::default()
                    },
                )
                .expect("counts");
            assert_eq!(left, 0, "{url}: nothing of Alice's accesses is left");
        },
    );
}

#[test]
fn the_access_log_is_off_unless_asked() {
    super::on_each_backend(|url, e| {
        let n = ns("default");
        let mut p = Put::new(e.partition(&n), None, "Alice's sister lives in Porto");
        p.owner.user_id = Some("alice".into());
        let m = e.remember(p).expect("remembers").memory;
        e.search(&n, "sister", 1, alice()).expect("recalls");
        e.flush_access();
        let a = e.accesses(m.id, None).expect("reads").expect("present");
        assert!(a.entries.is_empty() && a.days.is_empty(), "{url}: {a:?}");
        assert_eq!(records(&e), 0, "{url}");
        let counted = e.get_by_id(m.id).expect("reads").expect("present");
        assert_eq!(
            counted.access_count, 1,
            "{url}: the count is kept all the same"
        );
    });
}
