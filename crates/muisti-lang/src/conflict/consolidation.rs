//! Consolidation's near-duplicate rule (the words, or the vectors' cosine) and how it does
//! on the labelled pairs: the threshold chosen by precision and cross-validated by fold.

use super::{LabelledDuplicate, near_duplicate};

/// How the near-duplicate rule did on some pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DuplicateScores {
    /// Pairs judged.
    pub pairs: usize,
    /// Pairs labelled duplicates.
    pub duplicates: usize,
    /// Judged duplicates, labelled so.
    pub right: usize,
    /// Judged duplicates, labelled not (a memory that would be lost).
    pub wrong: usize,
}

impl DuplicateScores {
    /// Of the pairs judged duplicates, the share labelled so (1 when none were).
    pub fn precision(&self) -> f64 {
        crate::labelled::ratio(self.right, self.right + self.wrong)
    }

    /// Of the pairs labelled duplicates, the share judged so.
    pub fn recall(&self) -> f64 {
        if self.duplicates == 0 {
            0.0
        } else {
            self.right as f64 / self.duplicates as f64
        }
    }

    fn add(&mut self, other: DuplicateScores) {
        self.pairs += other.pairs;
        self.duplicates += other.duplicates;
        self.right += other.right;
        self.wrong += other.wrong;
    }
}

/// The near-duplicate rule of consolidation: two memories state the same fact in other
/// words ([`near_duplicate`]: the same words once their form is
/// set aside), or their vectors' cosine reaches `cosine_at_least` (off at more than 1).
pub fn near_duplicates(a: &str, b: &str, cosine: Option<f32>, cosine_at_least: f32) -> bool {
    near_duplicate(a, b) || cosine.is_some_and(|c| c >= cosine_at_least)
}

/// Scores [`near_duplicates`] at `threshold` on `pairs` (`cosines`: each pair's cosine, in
/// order, if an embedder gave one).
pub fn score_duplicates(
    pairs: &[&LabelledDuplicate],
    cosines: &[Option<f32>],
    threshold: f32,
) -> DuplicateScores {
    let mut s = DuplicateScores::default();
    for (p, c) in pairs.iter().zip(cosines) {
        let judged = near_duplicates(&p.a, &p.b, *c, threshold);
        s.pairs += 1;
        s.duplicates += usize::from(p.duplicate);
        s.right += usize::from(judged && p.duplicate);
        s.wrong += usize::from(judged && !p.duplicate);
    }
    s
}

/// The cosine thresholds the near-duplicate rule is chosen among (the last turns the
/// cosine path off).
pub const DUPLICATE_THRESHOLDS: [f32; 11] = [
    0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94, 0.96, 0.98, 1.01,
];

/// The precision the threshold must keep on the pairs it is chosen on.
pub const DUPLICATE_PRECISION: f64 = 0.95;

/// Chooses the threshold on `pairs`: the highest recall among those keeping
/// [`DUPLICATE_PRECISION`], the higher threshold on ties (off if none does).
pub fn choose_duplicate_threshold(pairs: &[&LabelledDuplicate], cosines: &[Option<f32>]) -> f32 {
    let mut best = (f64::MIN, *DUPLICATE_THRESHOLDS.last().unwrap_or(&1.01));
    for t in DUPLICATE_THRESHOLDS {
        let s = score_duplicates(pairs, cosines, t);
        if s.precision() >= DUPLICATE_PRECISION && s.recall() >= best.0 {
            best = (s.recall(), t);
        }
    }
    best.1
}

/// K-fold cross-validation of the threshold (folds by pair number): each fold scored with
/// the threshold chosen on the others. Returns the held-out scores and the thresholds.
pub fn cross_validate_duplicates(
    pairs: &[LabelledDuplicate],
    cosines: &[Option<f32>],
    folds: u64,
) -> (DuplicateScores, Vec<f32>) {
    let mut held_out = DuplicateScores::default();
    let mut chosen = Vec::new();
    for fold in 0..folds.max(1) {
        let split = |inside: bool| -> (Vec<&LabelledDuplicate>, Vec<Option<f32>>) {
            pairs
                .iter()
                .zip(cosines)
                .filter(|(p, _)| (p.id % folds.max(1) == fold) == inside)
                .map(|(p, c)| (p, *c))
                .unzip()
        };
        let (train, train_cos) = split(false);
        let (test, test_cos) = split(true);
        let t = choose_duplicate_threshold(&train, &train_cos);
        chosen.push(t);
        held_out.add(score_duplicates(&test, &test_cos, t));
    }
    (held_out, chosen)
}
