//! Recall's strategies beside the two retrievers, on hand-written cases, through the engine
//! on every backend: the temporal strategy (a question naming a period finds what is dated
//! in it), neighbourhood evidence (a relevant turn lifts the turn written next in its
//! session) and word matching (a question's word matched by meaning: "cities" and "Tokyo").

use muisti::{Engine, MemoryId, Owner, Put, RecallHit, RecallRequest, Timestamp};

use super::{ns, on_every_backend};

/// 2023-05-10T12:00:00Z and 2023-08-20T12:00:00Z.
const MAY_2023: i64 = 1_683_720_000_000;
const AUGUST_2023: i64 = 1_692_532_800_000;
/// 2023-07-03T12:00:00Z.
const JULY_2023: i64 = 1_688_385_600_000;

fn dated(engine: &Engine, namespace: &str, text: &str, at: i64) -> Put {
    let mut p = Put::new(engine.partition(&ns(namespace)), None, text);
    p.valid_from = Some(Timestamp::from_millis(at));
    p
}

fn turn(engine: &Engine, namespace: &str, session: &str, text: &str) -> Put {
    let mut p = Put::new(engine.partition(&ns(namespace)), None, text);
    p.owner = Owner {
        session_id: Some(session.into()),
        ..Owner::default()
    };
    p
}

/// Checks that `timed` (matched by time) ranks first among `hits` although `other` matches
/// the question's words better, and that the signals show time's part in `timed` only.
fn time_ranks_first(url: &str, hits: &[RecallHit], timed: MemoryId, other: MemoryId) {
    let of = |id| {
        hits.iter()
            .find(|h| h.memory.id == id)
            .unwrap_or_else(|| panic!("{url}: {id} recalled"))
    };
    let (t, o) = (of(timed), of(other));
    assert!(
        t.signals.from_lexical < o.signals.from_lexical,
        "{url}: the other memory matches the words better"
    );
    assert_eq!(
        hits[0].memory.id, timed,
        "{url}: the one of the period ranks first"
    );
    assert_eq!(t.signals.from_time, Some(muisti::DEFAULT_TEMPORAL), "{url}");
    assert_eq!(o.signals.from_time, None, "{url}");
}

/// Two memories say nearly the same; the one dated in the month the question names ranks
/// first although its words match less well, and its signals show what time added.
#[test]
fn a_question_naming_a_period_finds_the_memory_dated_in_it_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "temporal";
            let may = e
                .remember(dated(
                    &e,
                    n,
                    "went hiking in the hills with Sam and the dog and a picnic",
                    MAY_2023,
                ))
                .expect("write")
                .memory;
            let august = e
                .remember(dated(
                    &e,
                    n,
                    "went hiking in the hills with Sam",
                    AUGUST_2023,
                ))
                .expect("write")
                .memory;
            let ask = |q: &str| e.recall(&RecallRequest::new(ns(n), q, 5)).expect("recall");
            let hits = ask("where did we go hiking in the hills in May 2023");
            time_ranks_first(url, &hits, may.id, august.id);
            // Without a period in the question, time adds nothing.
            let plain = ask("where did we go hiking in the hills");
            assert_eq!(plain[0].memory.id, august.id, "{url}");
            assert!(plain.iter().all(|h| h.signals.from_time.is_none()), "{url}");
        },
    );
}

/// Writes a memory telling in July of what happened "last month" and another, dated August,
/// that matches the question's words better; asks about June. Returns both and the hits.
fn june_told_in_july(e: &Engine, n: &str) -> (MemoryId, MemoryId, Vec<RecallHit>) {
    let told = e
        .remember(dated(
            e,
            n,
            "last month we went kayaking on the lake, then had a picnic and a swim",
            JULY_2023,
        ))
        .expect("write")
        .memory;
    let other = e
        .remember(dated(e, n, "went kayaking on the lake", AUGUST_2023))
        .expect("write")
        .memory;
    let hits = e
        .recall(&RecallRequest::new(
            ns(n),
            "where did we go kayaking in June 2023",
            5,
        ))
        .expect("recall");
    (told.id, other.id, hits)
}

/// With `temporal_text`, a memory's own time expression counts: "last month", written on 3
/// July 2023, speaks of June 2023, so a question about June finds it although it was
/// written in July and another memory matches the question's words better; without it
/// (the default) only the memories' times count.
#[test]
fn a_memory_speaking_of_the_asked_period_is_found_with_temporal_text_on_every_backend() {
    on_every_backend(
        |store| {
            Engine::builder(store)
                .recall_config(muisti::RecallConfig {
                    temporal_text: true,
                    ..muisti::RecallConfig::default()
                })
                .build()
                .expect("engine")
        },
        |url, e| {
            let (told, other, hits) = june_told_in_july(&e, "temporal-text");
            time_ranks_first(url, &hits, told, other);
        },
    );
    // The default reads only the memories' times: neither is dated in June. (Word matching
    // off: "June" and "month" are near in meaning, and this case is about time alone.)
    on_every_backend(
        |store| {
            Engine::builder(store)
                .recall_config(muisti::RecallConfig {
                    words: 0.0,
                    ..muisti::RecallConfig::default()
                })
                .build()
                .expect("engine")
        },
        |url, e| {
            let (_, other, hits) = june_told_in_july(&e, "temporal-text-off");
            assert_eq!(hits[0].memory.id, other, "{url}");
            assert!(hits.iter().all(|h| h.signals.from_time.is_none()), "{url}");
        },
    );
}

/// A question matches one turn; the reply written next in the same session shares none of
/// its words, yet is recalled just under it. A memory of another session written between
/// the two is not lifted, nor is the turn before a relevant one.
#[test]
fn a_relevant_turn_lifts_the_next_turn_of_its_session_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "neighbours";
            let question = e
                .remember(turn(
                    &e,
                    n,
                    "party",
                    "what did you cook for the birthday party",
                ))
                .expect("write")
                .memory;
            let elsewhere = e
                .remember(turn(
                    &e,
                    n,
                    "garage",
                    "the mechanic replaced the brake pads",
                ))
                .expect("write")
                .memory;
            let reply = e
                .remember(turn(
                    &e,
                    n,
                    "party",
                    "a lasagne with spinach, and a lemon tart",
                ))
                .expect("write")
                .memory;
            e.remember(turn(&e, n, "party", "the neighbours brought wine"))
                .expect("write");
            let hits = e
                .recall(&RecallRequest::new(
                    ns(n),
                    "what did you cook for the birthday party",
                    5,
                ))
                .expect("recall");
            let ids: Vec<_> = hits.iter().map(|h| h.memory.id).collect();
            assert_eq!(ids.first(), Some(&question.id), "{url}");
            assert_eq!(ids.get(1), Some(&reply.id), "{url}: the reply follows");
            // Every memory is a vector candidate: the other session's one may be there, but
            // weak and not lifted.
            if let Some(h) = hits.iter().find(|h| h.memory.id == elsewhere.id) {
                assert!(h.signals.from_neighbour.is_none(), "{url}");
                assert!(h.score < muisti::RELEVANT_SCORE, "{url}: {}", h.score);
            }
            let (q, r) = (&hits[0], &hits[1]);
            assert!(r.signals.from_lexical.is_none(), "{url}: no word in common");
            assert!(r.signals.from_neighbour.is_some(), "{url}: lifted");
            assert!(
                (r.signals.relevance - muisti::DEFAULT_NEIGHBOURS * q.signals.relevance).abs()
                    < 1e-4,
                "{url}: its relevance is the share of the question's"
            );
            assert!(r.score < q.score, "{url}");
            // The reply is asked about: the question before it is not lifted by it.
            let back = e
                .recall(&RecallRequest::new(ns(n), "lasagne with spinach", 5))
                .expect("recall");
            assert_eq!(back.first().map(|h| h.memory.id), Some(reply.id), "{url}");
            assert!(
                back.iter()
                    .filter(|h| h.memory.id == question.id)
                    .all(|h| h.signals.from_neighbour.is_none()),
                "{url}: only the next turn is lifted"
            );
        },
    );
}

/// The turn written next after a relevant one was replaced meanwhile (superseded): the
/// look-ahead skips it and lifts the live turn after it, and the replaced one is not lifted.
#[test]
fn a_replaced_next_turn_is_skipped_for_the_one_after_it_on_every_backend() {
    use muisti::{Locator, MemoryState, Patch, UpdateRequest};
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "lookahead";
            let question = e
                .remember(turn(&e, n, "trip", "which museum did you visit in vienna"))
                .expect("write")
                .memory;
            let replaced = e
                .remember(turn(&e, n, "trip", "hold on, let me check my notes"))
                .expect("write")
                .memory;
            let reply = e
                .remember(turn(&e, n, "trip", "the albertina, for the drawings"))
                .expect("write")
                .memory;
            e.update(UpdateRequest::new(
                Locator::Id {
                    tenant: replaced.partition.tenant.clone(),
                    id: replaced.id,
                },
                Patch {
                    superseded_by: Some(reply.id),
                    ..Patch::default()
                },
            ))
            .expect("supersedes");
            let hits = e
                .recall(&RecallRequest::new(
                    ns(n),
                    "which museum did you visit in vienna",
                    5,
                ))
                .expect("recall");
            assert_eq!(
                hits.first().map(|h| h.memory.id),
                Some(question.id),
                "{url}"
            );
            let lifted: Vec<MemoryId> = hits
                .iter()
                .filter(|h| h.signals.from_neighbour.is_some())
                .map(|h| h.memory.id)
                .collect();
            assert_eq!(lifted, vec![reply.id], "{url}: the live turn after it");
            assert!(
                hits.iter()
                    .filter(|h| h.memory.id == replaced.id)
                    .all(|h| h.memory.state == MemoryState::Superseded),
                "{url}"
            );
        },
    );
}

/// "Which cities has John visited?": the memory naming Tokyo and Osaka gains from word
/// matching ("cities" and "Tokyo"), the one about a kitchen little, and the one holding every
/// word nothing (its words are the lexical retriever's part); each score is its parts.
#[test]
fn word_matching_credits_the_memory_that_means_the_asked_words_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "words";
            let put = |text: &str| {
                e.remember(Put::new(e.partition(&ns(n)), None, text))
                    .expect("write")
                    .memory
            };
            let tokyo = put("John: we spent a week in Tokyo and then Osaka");
            let kitchen = put("John: we spent a week painting the kitchen");
            let all = put("John visited three cities");
            let hits = e
                .recall(&RecallRequest::new(
                    ns(n),
                    "Which cities has John visited?",
                    5,
                ))
                .expect("recall");
            let of = |id| {
                hits.iter()
                    .find(|h| h.memory.id == id)
                    .unwrap_or_else(|| panic!("{url}: {id} recalled"))
            };
            let (t, k, a) = (of(tokyo.id), of(kitchen.id), of(all.id));
            assert_eq!(hits[0].memory.id, all.id, "{url}: every word");
            assert_eq!(a.signals.from_words, None, "{url}");
            let words = |h: &RecallHit| h.signals.from_words.unwrap_or(0.0);
            assert!(
                words(t) > words(k) + 0.02,
                "{url}: {} vs {}",
                words(t),
                words(k)
            );
            assert!(words(t) <= muisti::DEFAULT_WORDS, "{url}");
            assert!(t.score > k.score, "{url}: Tokyo above the kitchen");
            // And word matching is what sets them apart: the rest of their relevance differs
            // by less than its part does.
            let rest = |h: &RecallHit| h.signals.relevance - words(h);
            assert!(
                (rest(t) - rest(k)).abs() < words(t) - words(k),
                "{url}: {} and {} without word matching",
                rest(t),
                rest(k)
            );
            for h in &hits {
                let s = &h.signals;
                let parts = s.from_lexical.unwrap_or(0.0)
                    + s.from_vector.unwrap_or(0.0)
                    + s.from_words.unwrap_or(0.0);
                assert!(
                    (parts.min(1.0) - s.relevance).abs() < 1e-5,
                    "{url}: {parts} vs {}",
                    s.relevance
                );
            }
        },
    );
}

/// The ids `req` recalls, best first.
pub(super) fn recalled(e: &Engine, req: &RecallRequest) -> Vec<MemoryId> {
    e.recall(req)
        .expect("recall")
        .iter()
        .map(|h| h.memory.id)
        .collect()
}

/// A recall as of a time knows only what was true then: a memory dated after it is not
/// returned, one that stopped being true by then is not either, and a period the question
/// names ("last month") is read from that time, not from now.
#[test]
fn a_recall_as_of_a_time_knows_what_was_true_then_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "as_of";
            let lisbon = e
                .remember(dated(&e, n, "I live in Lisbon, near the river", MAY_2023))
                .expect("write")
                .memory
                .id;
            let porto = e
                .remember(dated(&e, n, "I live in Porto now, by the sea", AUGUST_2023))
                .expect("write")
                .memory
                .id;
            let mut ended = dated(&e, n, "I live in a rented flat in Faro", MAY_2023);
            ended.valid_until = Some(Timestamp::from_millis(JULY_2023));
            let faro = e.remember(ended).expect("write").memory.id;
            let ids = |req: &RecallRequest| recalled(&e, req);
            let mut req = RecallRequest::new(ns(n), "where do I live", 10);
            let now = ids(&req);
            assert!(
                now.contains(&lisbon) && now.contains(&porto),
                "{url}: {now:?}"
            );
            // 2023-06-10: Porto was not yet said, Faro was still true.
            req.as_of = Some(Timestamp::from_millis(MAY_2023 + 31 * 86_400_000));
            let then = ids(&req);
            assert!(
                then.contains(&lisbon) && then.contains(&faro),
                "{url}: {then:?}"
            );
            assert!(!then.contains(&porto), "{url}: Porto came later: {then:?}");
            // "last month" as of 2023-09-15 is August 2023: Porto's month.
            let mut month = RecallRequest::new(ns(n), "where did I live last month", 10);
            month.as_of = Some(Timestamp::from_millis(AUGUST_2023 + 26 * 86_400_000));
            let hits = e.recall(&month).expect("recall");
            assert_eq!(
                hits[0].memory.id,
                porto,
                "{url}: {:?}",
                hits.iter().map(|h| h.memory.text()).collect::<Vec<_>>()
            );
            assert!(
                hits[0].signals.from_time.is_some(),
                "{url}: the period is read as of then"
            );
        },
    );
}

/// A memory a newer one replaced (state superseded) is left out of recall unless asked for:
/// what it said is no longer so.
#[test]
fn a_superseded_memory_is_recalled_only_when_asked_for_on_every_backend() {
    on_every_backend(
        |store| Engine::builder(store).build().expect("engine"),
        |url, e| {
            let n = "superseded";
            let old = e
                .remember(dated(&e, n, "I work as a hospital pharmacist", MAY_2023))
                .expect("write")
                .memory;
            let new = e
                .remember(dated(
                    &e,
                    n,
                    "I work as a medical information manager now",
                    AUGUST_2023,
                ))
                .expect("write")
                .memory;
            let patch = muisti::Patch {
                state: Some(muisti::MemoryState::Superseded),
                superseded_by: Some(new.id),
                ..muisti::Patch::default()
            };
            e.update(muisti::UpdateRequest::new(
                muisti::Locator::Id {
                    tenant: e.tenant().clone(),
                    id: old.id,
                },
                patch,
            ))
            .expect("superseded");
            let mut req = RecallRequest::new(ns(n), "where do I work as a pharmacist", 10);
            let ids = |req: &RecallRequest| recalled(&e, req);
            let default = ids(&req);
            assert!(default.contains(&new.id), "{url}: {default:?}");
            assert!(
                !default.contains(&old.id),
                "{url}: superseded left out: {default:?}"
            );
            req.include_superseded = true;
            let all = ids(&req);
            assert!(
                all.contains(&old.id) && all.contains(&new.id),
                "{url}: {all:?}"
            );
            req.include_superseded = false;
            req.mode = muisti::RecallMode::Overlap;
            assert!(!ids(&req).contains(&old.id), "{url}: overlap recall too");
        },
    );
}

/// A second model that knows one thing: a text speaking of a home (the question, or a
/// memory naming Porto) points one way, anything else the other.
struct Homes;

impl muisti::Embedder for Homes {
    fn id(&self) -> &str {
        "homes"
    }
    fn dimensions(&self) -> usize {
        2
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, muisti_embed::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let home = t.contains("Porto") || t.contains("home");
                if home { vec![1.0, 0.0] } else { vec![0.0, 1.0] }
            })
            .collect())
    }
}

/// An engine on `store` whose reranker is [`Homes`] at weight 0.9, re-scoring a question
/// whose best word match covers less than `trust` of it.
fn with_homes(store: std::sync::Arc<dyn muisti::Store>, trust: f32) -> Engine {
    Engine::builder(store)
        .reranker(Some(std::sync::Arc::new(Homes)))
        .recall_config(muisti::RecallConfig {
            rerank: 0.9,
            rerank_trust: trust,
            ..muisti::RecallConfig::default()
        })
        .build()
        .expect("engine")
}

/// A memory matching "the new café near the old station" word for word, and one naming
/// Porto (a home, to [`Homes`]), written in `n`: their ids.
fn cafe_and_porto(e: &Engine, n: &str) -> (muisti::MemoryId, muisti::MemoryId) {
    let write = |text| {
        e.remember(dated(e, n, text, MAY_2023))
            .expect("write")
            .memory
            .id
    };
    (
        write("The new café near the old station has great cake"),
        write("Moved to Porto last week"),
    )
}

/// With a reranker, recall's best hits are ordered by its cosine (weighted
/// `RecallConfig::rerank`, here 0.9): the memory it finds by meaning comes first although another
/// matches the question's words better; its signals show the reranker's part, and
/// `min_score` applies to the score it gives.
#[test]
fn a_reranker_orders_recalls_best_hits_by_meaning_on_every_backend() {
    on_every_backend(
        // Every question re-scored, whatever its words find.
        |store| with_homes(store, 1.0),
        |url, e| {
            let n = "rerank";
            let (words, porto) = cafe_and_porto(&e, n);
            let mut req = RecallRequest::new(ns(n), "what is my new home near the station", 10);
            let hits = e.recall(&req).expect("recall");
            assert_eq!(
                hits[0].memory.id, porto,
                "{url}: the reranker's choice first"
            );
            let w = 0.9;
            assert_eq!(hits[0].signals.rerank, Some(1.0), "{url}");
            assert!(hits[0].score >= w, "{url}: {:?}", hits[0]);
            let other = hits
                .iter()
                .find(|h| h.memory.id == words)
                .expect("recalled");
            assert_eq!(other.signals.rerank, Some(0.0), "{url}");
            assert!(other.score < 1.0 - w + 1e-6, "{url}: {}", other.score);
            req.min_score = Some(0.5);
            let kept: Vec<_> = e
                .recall(&req)
                .expect("recall")
                .iter()
                .map(|h| h.memory.id)
                .collect();
            assert_eq!(kept, vec![porto], "{url}: min_score on the reranked score");
        },
    );
}

/// The reranker is asked only when a question's words are not found
/// (`RecallConfig::rerank_trust`): a question whose words a memory repeats keeps recall's
/// order and no hit carries the reranker's signal; one asked in other words is re-scored.
#[test]
fn the_reranker_is_asked_only_when_the_words_are_not_found_on_every_backend() {
    on_every_backend(
        |store| with_homes(store, 0.5),
        |url, e| {
            let n = "rerank-trust";
            let (cafe, porto) = cafe_and_porto(&e, n);
            let words = e
                .recall(&RecallRequest::new(
                    ns(n),
                    "the new café near the old station",
                    10,
                ))
                .expect("recall");
            assert_eq!(words[0].memory.id, cafe, "{url}: the words' match first");
            assert!(
                words.iter().all(|h| h.signals.rerank.is_none()),
                "{url}: the reranker was not asked: {words:?}"
            );
            let meaning = e
                .recall(&RecallRequest::new(ns(n), "tell me about my home", 10))
                .expect("recall");
            assert_eq!(
                meaning[0].memory.id, porto,
                "{url}: the reranker's choice first"
            );
            assert_eq!(meaning[0].signals.rerank, Some(1.0), "{url}");
        },
    );
}
