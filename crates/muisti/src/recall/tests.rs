//! The stages' rules, each on hand-made candidates.

use std::collections::{HashMap, HashSet};

use muisti_core::{MemoryId, Namespace, RankFields, Scored, Timestamp};

use super::{
    fuse::{Fused, fuse},
    rescore::{Lifts, contenders, rescore},
    strategies::{
        graph::with_graph,
        neighbours::{neighbour_seeds, with_neighbours},
        temporal::{speaks_of, with_time},
        words::{with_words, word_pool},
    },
    *,
};

fn ids(n: usize) -> Vec<MemoryId> {
    (0..n).map(|_| MemoryId::generate()).collect()
}

fn scored(ids: &[MemoryId], scores: &[f32]) -> Vec<Scored> {
    ids.iter()
        .zip(scores)
        .map(|(id, score)| Scored {
            id: *id,
            score: *score,
        })
        .collect()
}

#[test]
fn a_blank_query_is_refused_in_every_mode() {
    for mode in RecallMode::ALL {
        for query in ["", " ", "\n\t \u{3000}"] {
            let mut req = RecallRequest::new(Namespace::default_ns(), query, 5);
            req.mode = mode;
            let e = req.validate().expect_err(query);
            assert_eq!(e.kind(), muisti_core::ErrorKind::InvalidInput);
            assert!(e.to_string().contains("query"), "{e}");
        }
    }
    assert!(
        RecallRequest::new(Namespace::default_ns(), " x ", 5)
            .validate()
            .is_ok()
    );
}

#[test]
fn rrf_rewards_agreement_between_lists() {
    let i = ids(3);
    let lexical = scored(&[i[0], i[1]], &[9.0, 5.0]);
    let vector = scored(&[i[1], i[2]], &[0.9, 0.8]);
    let fused = fuse(Fusion::Rrf { k: 60.0 }, &lexical, &vector);
    // i[1] is in both lists: first, with relevance 1.
    assert_eq!(fused[&i[1]].0, 1.0);
    assert!(fused[&i[0]].0 < 1.0 && fused[&i[0]].0 > fused[&i[2]].0);
    assert_eq!(fused[&i[1]].1.lexical_rank, Some(2));
    assert_eq!(fused[&i[1]].1.vector_rank, Some(1));
    assert_eq!(fused[&i[2]].1.lexical_rank, None);
}

#[test]
fn weighted_fusion_normalises_each_list() {
    let i = ids(3);
    let lexical = scored(&[i[0], i[1]], &[20.0, 10.0]);
    let vector = scored(&[i[2], i[1]], &[0.5, 0.3]);
    let fused = fuse(Fusion::Weighted { lexical: 0.7 }, &lexical, &vector);
    // i[0]: 0.7 × 1; i[1]: 0.7 × 0 + 0.3 × 0; i[2]: 0.3 × 1; relevance relative to the best.
    assert_eq!(fused[&i[0]].0, 1.0);
    assert!((fused[&i[2]].0 - 0.3 / 0.7).abs() < 1e-6);
    assert_eq!(fused[&i[1]].0, 0.0);
}

#[test]
fn contenders_keep_exactly_those_that_can_still_win() {
    let relative = RecallConfig {
        fusion: Fusion::Weighted { lexical: 0.7 },
        ..RecallConfig::default()
    };
    assert!(RecallConfig::default().fusion.is_absolute());
    let i = ids(4);
    let fused = |scores: [f32; 4]| {
        let mut fused = Fused::default();
        for (id, r) in i.iter().zip(scores) {
            fused.insert(*id, (r, Signals::default()));
        }
        fused
    };
    // Relative: slack = (0.1 + 0.05 + 0.1) / 1.0 = 0.25: for limit 2 the 2nd best is
    // 0.9, so 0.7 can still overtake it and 0.2 cannot.
    let kept = contenders(&relative, &fused([1.0, 0.9, 0.7, 0.2]), 2, Lifts::default());
    assert_eq!(kept, vec![i[0], i[1], i[2]]);
    assert_eq!(
        contenders(
            &relative,
            &fused([1.0, 0.9, 0.7, 0.2]),
            10,
            Lifts::default()
        )
        .len(),
        4
    );
    // Absolute: the boosts take at most their share (0.25 / 1.25 = 0.2) off relevance,
    // so a candidate must reach 0.8 × 0.9 = 0.72 to overtake the 2nd.
    let absolute = RecallConfig {
        fusion: Fusion::Absolute { lexical: 0.9 },
        ..RecallConfig::default()
    };
    let kept = contenders(
        &absolute,
        &fused([1.0, 0.9, 0.75, 0.7]),
        2,
        Lifts::default(),
    );
    assert_eq!(kept, vec![i[0], i[1], i[2]]);
    // A lift for the three best (word matching's pool) reads the third however far
    // down it is, and nothing below it; a lift for any candidate reads the fourth too.
    let pool = Lifts {
        any: 0.0,
        best: 3,
        best_more: 0.3,
    };
    let kept = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, pool);
    assert_eq!(kept, vec![i[0], i[1], i[2]]);
    let any = Lifts { any: 0.3, ..pool };
    let kept = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, any);
    assert_eq!(kept, vec![i[0], i[1], i[2], i[3]]);
    let none = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, Lifts::default());
    assert_eq!(none, vec![i[0], i[1]]);
}

#[test]
fn absolute_scores_do_not_depend_on_the_other_candidates() {
    let i = ids(3);
    let fusion = Fusion::Absolute { lexical: 0.9 };
    let alone = fuse(fusion, &scored(&[i[0]], &[0.5]), &scored(&[i[0]], &[0.5]));
    let with_better = fuse(
        fusion,
        &scored(&[i[1], i[0]], &[1.7, 0.5]),
        &scored(&[i[1], i[0]], &[0.9, 0.5]),
    );
    // Half the query matched: 0.9 × 0.5 + 0.1 × 0.5 = 0.5, whatever else was found.
    assert!((alone[&i[0]].0 - 0.5).abs() < 1e-6);
    assert!((with_better[&i[0]].0 - 0.5).abs() < 1e-6);
    // More than the whole query (a short memory, repeated terms) counts as all of it.
    assert!((with_better[&i[1]].0 - 0.99).abs() < 1e-6);
    // A candidate only a weak cosine found stays near 0 even when it is the best.
    let weak = fuse(fusion, &[], &scored(&[i[2]], &[0.2]));
    assert!((weak[&i[2]].0 - 0.02).abs() < 1e-6);
}

#[test]
fn every_strategys_part_is_explained_and_they_add_up() {
    let i = ids(3);
    let fusion = Fusion::Absolute { lexical: 0.9 };
    let mut fused = fuse(
        fusion,
        &scored(&[i[0], i[1]], &[0.8, 0.4]),
        &scored(&[i[0], i[2]], &[0.5, 0.6]),
    );
    with_graph(fusion, &mut fused, &HashMap::from([(i[2], 0.5)]), 0.2);
    for (id, (relevance, s)) in &fused {
        let parts = s.from_lexical.unwrap_or(0.0)
            + s.from_vector.unwrap_or(0.0)
            + s.from_graph.unwrap_or(0.0);
        assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
    }
    let both = &fused[&i[0]].1;
    assert!((both.from_lexical.unwrap_or(0.0) - 0.72).abs() < 1e-6);
    assert!((both.from_vector.unwrap_or(0.0) - 0.05).abs() < 1e-6);
    assert_eq!(
        fused[&i[1]].1.from_vector, None,
        "the vectors did not find it"
    );
    assert!((fused[&i[2]].1.from_graph.unwrap_or(0.0) - 0.1).abs() < 1e-6);
}

#[test]
fn time_and_neighbours_are_explained_and_add_up() {
    let i = ids(4);
    let fusion = Fusion::Absolute { lexical: 0.9 };
    let config = RecallConfig {
        fusion,
        temporal: 0.1,
        ..RecallConfig::default()
    };
    let mut fused = fuse(
        fusion,
        &scored(&[i[0], i[1], i[2]], &[0.8, 0.5, 0.1]),
        &scored(&[i[0]], &[0.5]),
    );
    // i[1] is dated 10 May 2023, i[0] in August: "in May 2023" lifts i[1] only.
    let field = |id: MemoryId, time: i64| RankFields {
        id,
        updated_at: Timestamp::from_millis(time),
        access_count: 0,
        importance: 0.5,
        time: Timestamp::from_millis(time),
    };
    let fields = [
        field(i[0], 1_692_532_800_000),
        field(i[1], 1_683_720_000_000),
    ];
    let periods = muisti_lang::time::periods("in May 2023", Timestamp::from_millis(0));
    let matched: HashSet<MemoryId> = fields
        .iter()
        .filter(|f| speaks_of(&config, &periods, f.time, None))
        .map(|f| f.id)
        .collect();
    with_time(&config, &mut fused, &matched);
    assert_eq!(fused[&i[1]].1.from_time, Some(0.1));
    assert_eq!(fused[&i[0]].1.from_time, None);
    // Seeds: the relevant ones only (0.77 and 0.55 of i[0] and i[1]; i[2] is at 0.09).
    let seeds = neighbour_seeds(&fused, &i);
    assert_eq!(
        seeds.iter().map(|s| s.0).collect::<Vec<_>>(),
        vec![i[0], i[1]]
    );
    // i[0] lifts i[3] (no retriever found it) to 0.8 of its relevance, and i[2] above
    // its own; a lift below what a memory already has changes nothing.
    let lifts = [
        (i[3], seeds[0].1),
        (i[2], seeds[1].1),
        (i[1], seeds[0].1 * 0.5),
    ];
    with_neighbours(fusion, &mut fused, &lifts, 0.8);
    assert!((fused[&i[3]].0 - 0.8 * seeds[0].1).abs() < 1e-6);
    assert!(
        fused[&i[3]].0 < fused[&i[0]].0,
        "under the hit that lifted it"
    );
    assert!((fused[&i[2]].0 - 0.8 * seeds[1].1).abs() < 1e-6);
    assert_eq!(fused[&i[1]].1.from_neighbour, None);
    for (id, (relevance, s)) in &fused {
        let parts = s.from_lexical.unwrap_or(0.0)
            + s.from_vector.unwrap_or(0.0)
            + s.from_time.unwrap_or(0.0)
            + s.from_neighbour.unwrap_or(0.0);
        assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
    }
}

/// Word matching scores the most relevant candidates only, adds its part as explained,
/// and leaves a memory it credits nothing as it was.
#[test]
fn word_matching_is_explained_and_adds_up() {
    let i = ids(WORD_POOL + 3);
    let fusion = Fusion::Absolute { lexical: 0.9 };
    let scores: Vec<f32> = (0..i.len()).map(|k| 0.9 - k as f32 * 0.02).collect();
    let mut fused = fuse(fusion, &scored(&i, &scores), &[]);
    let pool = word_pool(&fused, i.iter().rev().copied().chain([i[0]]), WORD_POOL);
    assert_eq!(
        pool,
        i[..WORD_POOL].to_vec(),
        "the most relevant, best first, once"
    );
    let before = fused.clone();
    with_words(fusion, &mut fused, &[(i[1], 0.5), (i[2], 0.0)], 0.3);
    assert!((fused[&i[1]].0 - (before[&i[1]].0 + 0.15)).abs() < 1e-6);
    assert_eq!(fused[&i[1]].1.from_words, Some(0.3 * 0.5));
    assert_eq!(fused[&i[2]], before[&i[2]], "no credit, no change");
    // At most 1 with absolute scores.
    with_words(fusion, &mut fused, &[(i[0], 1.0)], 0.3);
    assert_eq!(fused[&i[0]].0, 1.0);
    for (id, (relevance, s)) in &fused {
        let parts = s.from_lexical.unwrap_or(0.0) + s.from_words.unwrap_or(0.0);
        assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
    }
}

#[test]
fn absolute_rescoring_never_lifts_a_memory_above_its_relevance() {
    let now = Timestamp::from_millis(0);
    let p = muisti_core::Partition::default();
    let mut m = muisti_core::Put::new(p, None, "m").apply(None, now);
    m.importance = 1.0;
    m.access_count = 1_000;
    for relevance in [0.05f32, 0.5, 1.0] {
        let mut fused = Fused::default();
        fused.insert(
            m.id,
            (
                relevance,
                Signals {
                    relevance,
                    ..Signals::default()
                },
            ),
        );
        let config = RecallConfig {
            fusion: Fusion::Absolute { lexical: 0.9 },
            ..RecallConfig::default()
        };
        let hits = rescore(&config, vec![RankFields::of(&m)], fused, now, 10);
        // Every boost at its best: the score is the relevance itself, never more.
        assert!((hits[0].score - relevance).abs() < 1e-6, "{relevance}");
        let boost = hits[0].signals.boost.unwrap_or(0.0);
        assert!(
            (hits[0].score - relevance * boost).abs() < 1e-6,
            "explained"
        );
    }
}

#[test]
fn rescoring_adds_recency_access_and_importance() {
    let now = Timestamp::from_millis(100 * 24 * 3600 * 1000);
    let p = muisti_core::Partition::default();
    let mut old =
        muisti_core::Put::new(p.clone(), None, "old").apply(None, Timestamp::from_millis(0));
    old.importance = 0.5;
    let mut fresh = muisti_core::Put::new(p, None, "fresh").apply(None, now);
    fresh.importance = 0.5;
    let mut fused = Fused::default();
    fused.insert(
        old.id,
        (
            1.0,
            Signals {
                relevance: 1.0,
                ..Signals::default()
            },
        ),
    );
    fused.insert(
        fresh.id,
        (
            1.0,
            Signals {
                relevance: 1.0,
                ..Signals::default()
            },
        ),
    );
    let hits = rescore(
        &RecallConfig::default(),
        vec![RankFields::of(&old), RankFields::of(&fresh)],
        fused,
        now,
        10,
    );
    assert_eq!(hits[0].id, fresh.id, "same relevance: the recent one first");
    assert!((hits[0].signals.recency - 1.0).abs() < 1e-6);
    // 100 days at a 30-day half-life.
    assert!((hits[1].signals.recency - 0.5f32.powf(100.0 / 30.0)).abs() < 1e-4);
    assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0));
}
