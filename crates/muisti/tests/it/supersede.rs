//! The newer fact first, on every write path and every backend: a user's memory that a
//! later one replaces ("I live in Lisbon" / "Moved to Porto") is marked superseded when
//! either is written, whichever order they come in; recall leaves it out, puts the newer in
//! its place, and returns it when asked for superseded memories or as of a time it was true.

use muisti::{
    Category, Engine, Memory, MemoryId, MemoryState, Put, RecallRequest, Timestamp, WriteStatus,
    declarative::HistoryEvent,
};

use super::{ns, on_every_backend, strategies::recalled};

/// 2023-05-10T12:00:00Z, 2023-06-10T12:00:00Z and 2023-08-20T12:00:00Z.
const MAY_2023: i64 = 1_683_720_000_000;
const JUNE_2023: i64 = 1_686_398_400_000;
const AUGUST_2023: i64 = 1_692_532_800_000;
/// 2023-11-20T12:00:00Z.
const NOVEMBER_2023: i64 = 1_700_481_600_000;

const LISBON: &str = "I live in Lisbon, in a flat near the river.";
const PORTO: &str = "Moved to Porto last week: a little house by the sea.";

fn put(e: &Engine, namespace: &str, user: &str, text: &str, at: i64) -> Put {
    let mut p = Put::new(e.partition(&ns(namespace)), None, text);
    p.owner.user_id = Some(user.into());
    p.valid_from = Some(Timestamp::from_millis(at));
    p
}

fn read(e: &Engine, id: MemoryId) -> Memory {
    e.get_by_id(id).expect("read").expect("present")
}

/// `old` is superseded by `new`, true until `new`'s date; `new` is active.
fn replaced(url: &str, e: &Engine, old: MemoryId, new: MemoryId) {
    let (o, n) = (read(e, old), read(e, new));
    assert_eq!(o.state, MemoryState::Superseded, "{url}: {}", o.text());
    assert_eq!(o.superseded_by, Some(new), "{url}");
    assert_eq!(
        o.valid_until, n.valid_from,
        "{url}: true until the newer's date"
    );
    assert_eq!(n.state, MemoryState::Active, "{url}");
}

fn question(namespace: &str, user: &str, text: &str) -> RecallRequest {
    let mut req = RecallRequest::new(ns(namespace), text, 10);
    req.filter.user_id = Some(user.into());
    req
}

/// One `remember` after another: the older is superseded, recall answers with the newer
/// even for a question worded as the old fact, and the old one comes back when asked for
/// or as of a time it was true.
#[test]
fn a_newer_memory_supersedes_the_one_it_changes_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "supersede_remember";
            let lisbon = e
                .remember(put(&e, n, "maya", LISBON, MAY_2023))
                .expect("write");
            let porto = e
                .remember(put(&e, n, "maya", PORTO, AUGUST_2023))
                .expect("write");
            let (lisbon, porto) = (lisbon.memory.id, porto.memory.id);
            replaced(url, &e, lisbon, porto);

            let mut req = question(n, "maya", "Do I still live in Lisbon near the river?");
            let ids = recalled(&e, &req);
            assert_eq!(
                ids.first(),
                Some(&porto),
                "{url}: the newer in the older's place"
            );
            assert!(!ids.contains(&lisbon), "{url}: {ids:?}");
            req.include_superseded = true;
            let all = recalled(&e, &req);
            assert!(
                all.contains(&lisbon) && all.contains(&porto),
                "{url}: {all:?}"
            );
            req.include_superseded = false;
            req.as_of = Some(Timestamp::from_millis(JUNE_2023));
            let then = recalled(&e, &req);
            assert_eq!(
                then,
                vec![lisbon],
                "{url}: in June Lisbon was true, Porto unsaid"
            );
        },
    );
}

/// Dates decide, not the order of writing: in one batch, or one write after another, the
/// memory dated earlier is the one superseded.
#[test]
fn the_earlier_dated_memory_is_superseded_whatever_the_order_of_writing_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "supersede_batch";
            let written = e
                .remember_many(vec![
                    put(&e, n, "maya", PORTO, AUGUST_2023),
                    put(&e, n, "maya", LISBON, MAY_2023),
                ])
                .expect("batch");
            let (porto, lisbon) = (written[0].memory.id, written[1].memory.id);
            replaced(url, &e, lisbon, porto);
            assert_eq!(
                written[1].memory.state,
                MemoryState::Superseded,
                "{url}: the batch returns the state it left"
            );

            let n = "supersede_late";
            let porto = e
                .remember(put(&e, n, "maya", PORTO, AUGUST_2023))
                .expect("write");
            let lisbon = e
                .remember(put(&e, n, "maya", LISBON, MAY_2023))
                .expect("write");
            assert_eq!(lisbon.status, WriteStatus::Created, "{url}");
            assert_eq!(lisbon.memory.state, MemoryState::Superseded, "{url}");
            replaced(url, &e, lisbon.memory.id, porto.memory.id);
        },
    );
}

/// A batch that moves the user twice marks each earlier home once, by a later one: the
/// first home is compared first (by date) and marked by a later home; the second, compared
/// next, is not paired with the first again (a memory the batch marks is no candidate of
/// the later comparisons, as recall leaves a superseded memory out) and is marked by the
/// third. Each mark is in its memory's history, once.
#[test]
fn a_batch_of_two_moves_supersedes_each_home_by_the_next_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "supersede_chain";
            // The second home worded as the first, so that the first is its most similar.
            const PORTO_FLAT: &str = "I live in Porto, in a flat near the river.";
            const BERLIN: &str = "Moved to Berlin in November: a small flat in Kreuzberg.";
            let written = e
                .remember_many(vec![
                    put(&e, n, "maya", BERLIN, NOVEMBER_2023),
                    put(&e, n, "maya", LISBON, MAY_2023),
                    put(&e, n, "maya", PORTO_FLAT, AUGUST_2023),
                ])
                .expect("batch");
            let (berlin, lisbon, porto) = (
                written[0].memory.id,
                written[1].memory.id,
                written[2].memory.id,
            );
            let first = read(&e, lisbon);
            assert_eq!(first.state, MemoryState::Superseded, "{url}");
            let by = first.superseded_by.expect("lisbon superseded");
            assert!(by == porto || by == berlin, "{url}: {by}");
            assert_eq!(first.valid_until, read(&e, by).valid_from, "{url}");
            replaced(url, &e, porto, berlin);
            let states: Vec<MemoryState> = written.iter().map(|w| w.memory.state).collect();
            assert_eq!(
                states,
                [
                    MemoryState::Active,
                    MemoryState::Superseded,
                    MemoryState::Superseded
                ],
                "{url}: the batch returns the states it left"
            );
            for id in [lisbon, porto] {
                let events: Vec<HistoryEvent> = e
                    .history(id)
                    .expect("history")
                    .into_iter()
                    .map(|h| h.event)
                    .collect();
                assert_eq!(
                    events
                        .iter()
                        .filter(|&&ev| ev == HistoryEvent::Supersede)
                        .count(),
                    1,
                    "{url}: {events:?}"
                );
            }
        },
    );
}

/// What is not the same user's fact stays as it is: another user's home, someone the user
/// speaks of ("Mama lives in Casablanca"), an addition ("also"), and what was said in a
/// conversation.
#[test]
fn only_the_same_persons_changed_fact_is_superseded_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "supersede_other";
            let ana = e
                .remember(put(&e, n, "ana", LISBON, MAY_2023))
                .expect("write");
            let mama = e
                .remember(put(
                    &e,
                    n,
                    "maya",
                    "Mama lives in Casablanca, near the sea.",
                    MAY_2023,
                ))
                .expect("write");
            let peanuts = e
                .remember(put(&e, n, "maya", "I'm allergic to peanuts.", MAY_2023))
                .expect("write");
            let mut said = put(&e, n, "maya", "I live in Lisbon, near the river.", MAY_2023);
            said.category = Category::Conversation;
            let said = e.remember(said).expect("write");
            e.remember(put(&e, n, "maya", PORTO, AUGUST_2023))
                .expect("write");
            e.remember(put(
                &e,
                n,
                "maya",
                "I'm also allergic to shellfish.",
                AUGUST_2023,
            ))
            .expect("write");
            for w in [ana, mama, peanuts, said] {
                assert_eq!(
                    read(&e, w.memory.id).state,
                    MemoryState::Active,
                    "{url}: {}",
                    w.memory.text()
                );
            }
        },
    );
}

/// A wrong supersede undone: the memory made active again is true again, its link and the
/// end its superseding gave it cleared, so recall finds it now and as of any later time;
/// an update that gives an end keeps that one.
#[test]
fn a_superseded_memory_made_active_again_is_true_again_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "supersede_undo";
            let lisbon = e
                .remember(put(&e, n, "maya", LISBON, MAY_2023))
                .expect("write")
                .memory
                .id;
            let porto = e
                .remember(put(&e, n, "maya", PORTO, AUGUST_2023))
                .expect("write")
                .memory
                .id;
            replaced(url, &e, lisbon, porto);
            let at = |id| muisti::Locator::Id {
                tenant: e.tenant().clone(),
                id,
            };
            let undone = e
                .update(muisti::UpdateRequest::new(
                    at(lisbon),
                    muisti::Patch {
                        state: Some(MemoryState::Active),
                        ..muisti::Patch::default()
                    },
                ))
                .expect("undo");
            assert_eq!(
                (undone.state, undone.superseded_by, undone.valid_until),
                (MemoryState::Active, None, None),
                "{url}"
            );
            let mut req = question(n, "maya", "Do I still live in Lisbon near the river?");
            req.as_of = Some(Timestamp::from_millis(AUGUST_2023 + 86_400_000));
            assert!(
                recalled(&e, &req).contains(&lisbon),
                "{url}: true after Porto's date again"
            );
            // Superseded again, then made active with an end of its own: that end stays.
            e.update(muisti::UpdateRequest::new(
                at(lisbon),
                muisti::Patch {
                    superseded_by: Some(porto),
                    valid_until: Some(Some(Timestamp::from_millis(AUGUST_2023))),
                    ..muisti::Patch::default()
                },
            ))
            .expect("supersede");
            let ended = e
                .update(muisti::UpdateRequest::new(
                    at(lisbon),
                    muisti::Patch {
                        state: Some(MemoryState::Active),
                        valid_until: Some(Some(Timestamp::from_millis(JUNE_2023))),
                        ..muisti::Patch::default()
                    },
                ))
                .expect("active with an end");
            assert_eq!(
                ended.valid_until,
                Some(Timestamp::from_millis(JUNE_2023)),
                "{url}"
            );
        },
    );
}
