//! History for every memory: a plain memory's add, its updates (without an actor), its
//! supersede and its delete are in its history on every backend; a deleted memory's history
//! keeps no text and runs out after the documented retention.

use std::{sync::Arc, time::Duration};

use muisti::declarative::{DELETED_HISTORY_RETENTION, HistoryEvent};
use muisti::{Engine, Locator, ManualClock, MemStore, Patch, Put, Timestamp, UpdateRequest};

use super::{ns, on_every_backend};

fn put(e: &Engine, user: &str, text: &str, at: i64) -> Put {
    let mut p = Put::new(e.partition(&ns("history_plain")), None, text);
    p.owner.user_id = Some(user.into());
    p.valid_from = Some(Timestamp::from_millis(at));
    p
}

#[test]
fn every_change_of_a_plain_memory_is_in_its_history_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let civic = e
                .remember(put(
                    &e,
                    "hh",
                    "I drive a 2015 Honda Civic",
                    1_600_000_000_000,
                ))
                .expect("write")
                .memory;
            // Written, never changed: its history is its add, with its text.
            let h = e.history(civic.id).expect("history");
            assert_eq!(
                h.iter()
                    .map(|x| (x.event, x.new.as_deref()))
                    .collect::<Vec<_>>(),
                [(HistoryEvent::Add, Some("I drive a 2015 Honda Civic"))],
                "{url}"
            );
            assert_eq!(h[0].at, civic.created_at, "{url}");
            assert_eq!(h[0].actor, "user", "{url}");
            // An update without an actor: recorded, with what it was and what it became.
            let at = Locator::Id {
                tenant: e.tenant().clone(),
                id: civic.id,
            };
            let patch = Patch {
                content: Some("I drive a 2023 Toyota Prius".into()),
                ..Patch::default()
            };
            e.update(UpdateRequest::new(at.clone(), patch))
                .expect("update");
            // A newer memory replaces it: its supersede is recorded.
            let bike = e
                .remember(put(
                    &e,
                    "hh",
                    "Traded in the Prius for an e-bike.",
                    1_700_000_000_000,
                ))
                .expect("write")
                .memory;
            let h = e.history(civic.id).expect("history");
            let seen: Vec<_> = h
                .iter()
                .map(|x| (x.event, x.old.as_deref(), x.new.as_deref()))
                .collect();
            assert_eq!(
                seen,
                [
                    (HistoryEvent::Add, None, Some("I drive a 2015 Honda Civic")),
                    (
                        HistoryEvent::Update,
                        Some("I drive a 2015 Honda Civic"),
                        Some("I drive a 2023 Toyota Prius")
                    ),
                    (
                        HistoryEvent::Supersede,
                        Some("I drive a 2023 Toyota Prius"),
                        Some("I drive a 2023 Toyota Prius")
                    ),
                ],
                "{url}: {h:?} (the bike: {})",
                bike.text()
            );
            // Deleted: the history says it was added, changed and deleted, keeps no text,
            // and runs out after the retention.
            assert!(e.forget(&at).expect("forget"), "{url}");
            let h = e.history(civic.id).expect("history");
            assert_eq!(
                h.iter().map(|x| x.event).collect::<Vec<_>>(),
                [
                    HistoryEvent::Add,
                    HistoryEvent::Update,
                    HistoryEvent::Supersede,
                    HistoryEvent::Delete
                ],
                "{url}"
            );
            assert!(
                h.iter().all(|x| x.old.is_none() && x.new.is_none()),
                "{url}: {h:?}"
            );
            // A memory deleted without ever changing: its add and its delete.
            let note = e
                .remember(put(&e, "hh", "Dentist on the 4th", 1_700_000_000_000))
                .expect("write")
                .memory;
            let at = Locator::Id {
                tenant: e.tenant().clone(),
                id: note.id,
            };
            assert!(e.forget(&at).expect("forget"), "{url}");
            let h = e.history(note.id).expect("history");
            assert_eq!(
                h.iter()
                    .map(|x| (x.event, x.new.as_deref()))
                    .collect::<Vec<_>>(),
                [(HistoryEvent::Add, None), (HistoryEvent::Delete, None)],
                "{url}"
            );
            assert_eq!(h[0].at, note.created_at, "{url}");
        },
    );
}

/// A deleted memory's history runs out after [`DELETED_HISTORY_RETENTION`]; a live one's
/// stays.
#[test]
fn a_deleted_memorys_history_runs_out_after_the_retention() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_700_000_000_000)));
    let store = Arc::new(MemStore::new().with_clock(clock.clone()));
    let e = Engine::builder(store)
        .embedder(None)
        .clock(clock.clone())
        .build()
        .expect("engine");
    let gone = e
        .remember(put(&e, "hr", "Dentist on the 4th", 1_700_000_000_000))
        .expect("write")
        .memory;
    let kept = e
        .remember(put(&e, "hr", "I drive a Honda Civic", 1_700_000_000_000))
        .expect("write")
        .memory;
    let at = |id| Locator::Id {
        tenant: e.tenant().clone(),
        id,
    };
    let patch = Patch {
        content: Some("I drive a Toyota Prius".into()),
        ..Patch::default()
    };
    e.update(UpdateRequest::new(at(kept.id), patch))
        .expect("update");
    assert!(e.forget(&at(gone.id)).expect("forget"));
    clock.advance(DELETED_HISTORY_RETENTION - Duration::from_secs(3600));
    e.purge_expired().expect("purge");
    assert_eq!(
        e.history(gone.id).expect("history").len(),
        2,
        "kept until then"
    );
    clock.advance(Duration::from_secs(2 * 3600));
    e.purge_expired().expect("purge");
    assert!(e.history(gone.id).expect("history").is_empty(), "run out");
    assert_eq!(
        e.history(kept.id)
            .expect("history")
            .iter()
            .map(|h| h.event)
            .collect::<Vec<_>>(),
        [HistoryEvent::Add, HistoryEvent::Update],
        "a live memory's history stays"
    );
}
