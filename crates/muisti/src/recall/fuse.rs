//! Fusion: the retrievers' ranked lists made one relevance per candidate (0 to 1), and the
//! one rule every strategy calls to make relevance again after adding its part.

use muisti_core::{IdMap, Scored};

use super::{Fusion, Signals};

/// Fused candidates: per id, its relevance (0 to 1) and what produced it.
pub(super) type Fused = IdMap<(f32, Signals)>;

/// The candidates of both retrievers, fused into one relevance per id (0 to 1).
pub(super) fn fuse(fusion: Fusion, lexical: &[Scored], vector: &[Scored]) -> Fused {
    let mut out: Fused =
        Fused::with_capacity_and_hasher(lexical.len() + vector.len(), Default::default());
    let weight = |lexical_list: bool| match fusion {
        Fusion::Rrf { .. } => 1.0,
        Fusion::Weighted { lexical } | Fusion::Absolute { lexical } if lexical_list => lexical,
        Fusion::Weighted { lexical } | Fusion::Absolute { lexical } => 1.0 - lexical,
    };
    for (i, (s, part)) in lexical
        .iter()
        .zip(contributions(fusion, lexical, weight(true)))
        .enumerate()
    {
        let e = out.entry(s.id).or_default();
        e.1.lexical_rank = Some(i as u32 + 1);
        e.1.lexical_score = Some(s.score);
        e.1.from_lexical = Some(part);
        e.0 += part;
    }
    for (i, (s, part)) in vector
        .iter()
        .zip(contributions(fusion, vector, weight(false)))
        .enumerate()
    {
        let e = out.entry(s.id).or_default();
        e.1.vector_rank = Some(i as u32 + 1);
        e.1.similarity = Some(s.score);
        e.1.from_vector = Some(part);
        e.0 += part;
    }
    normalise(fusion, &mut out);
    out
}

/// Relevance from fused scores: relative to the best candidate (RRF, weighted), or as it is,
/// at most 1 (absolute).
pub(super) fn normalise(fusion: Fusion, fused: &mut Fused) {
    let best = fused.values().map(|(f, _)| *f).fold(0.0f32, f32::max);
    for (f, sig) in fused.values_mut() {
        *f = if fusion.is_absolute() {
            f.clamp(0.0, 1.0)
        } else if best > 0.0 {
            *f / best
        } else {
            0.0
        };
        sig.relevance = *f;
    }
}

/// What each entry of one ranked list adds to its candidate's fused score: `1 / (k + rank)`
/// for RRF, `weight ×` the min-max normalised score for a weighted sum, `weight ×` the score
/// itself, at most 1, for absolute fusion.
fn contributions(fusion: Fusion, list: &[Scored], weight: f32) -> Vec<f32> {
    match fusion {
        // Both scores are on a fixed scale already: the share of the query matched, and
        // cosine similarity.
        Fusion::Absolute { .. } => list
            .iter()
            .map(|s| weight * s.score.clamp(0.0, 1.0))
            .collect(),
        Fusion::Rrf { k } => (0..list.len())
            .map(|i| 1.0 / (k + i as f32 + 1.0))
            .collect(),
        Fusion::Weighted { .. } => {
            let max = list.iter().map(|s| s.score).fold(f32::MIN, f32::max);
            let min = list.iter().map(|s| s.score).fold(f32::MAX, f32::min);
            let span = max - min;
            list.iter()
                .map(|s| {
                    weight
                        * if span > 0.0 {
                            (s.score - min) / span
                        } else {
                            1.0
                        }
                })
                .collect()
        }
    }
}
