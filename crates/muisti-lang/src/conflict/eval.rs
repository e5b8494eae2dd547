//! The conflict corpus and how the detector does on it.

use super::*;

/// A labelled pair of the conflict corpus (`crates/muisti-lang/tests/data/conflicts.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub struct LabelledPair {
    /// Its number.
    pub id: u64,
    /// The stored entry.
    pub existing: String,
    /// The new one.
    pub new: String,
    /// Whether the new one should supersede the stored one.
    pub supersede: bool,
    /// `tune` (constants are chosen on it), `test` (held out when they were chosen) or
    /// `fresh` (written later, blind to the rules).
    pub split: String,
}

/// Parses the corpus: one JSON object per line.
pub fn parse_corpus(text: &str) -> Result<Vec<LabelledPair>, serde_json::Error> {
    crate::labelled::parse_jsonl(text)
}

/// How the detector did on some pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scores {
    /// Pairs judged.
    pub total: usize,
    /// Pairs labelled supersede.
    pub positives: usize,
    /// Superseded and labelled so.
    pub true_positives: usize,
    /// Superseded, labelled not to be (a user's fact lost).
    pub false_positives: usize,
    /// Reported as possible conflicts (tier 2), not superseded.
    pub possible: usize,
    /// Labelled supersede and a candidate a conflict judge would be asked about
    /// ([`super::candidates`]): the recall a perfect judge would reach.
    pub positives_to_judge: usize,
    /// Labelled not to supersede and a candidate for the judge.
    pub negatives_to_judge: usize,
}

impl Scores {
    /// Of the pairs superseded, the share labelled so (1 when none were).
    pub fn precision(&self) -> f64 {
        let decided = self.true_positives + self.false_positives;
        if decided == 0 {
            1.0
        } else {
            self.true_positives as f64 / decided as f64
        }
    }

    /// Of the pairs labelled supersede, the share superseded.
    pub fn recall(&self) -> f64 {
        if self.positives == 0 {
            0.0
        } else {
            self.true_positives as f64 / self.positives as f64
        }
    }
}

/// Scores per split of the corpus (`tune`, the held-out `test`, the later `fresh` set).
pub type Evaluation = std::collections::BTreeMap<String, Scores>;

/// Judges every pair (with `cosine` giving the cosine of two texts, if any) and scores the
/// verdicts against the labels, per split: the one evaluation the tests and `muisti bench
/// conflicts` run.
pub fn evaluate(pairs: &[LabelledPair], cosine: impl Fn(&str, &str) -> Option<f32>) -> Evaluation {
    let mut e = Evaluation::new();
    for p in pairs {
        let j = judge(&p.existing, &p.new, cosine(&p.existing, &p.new));
        let to_judge = !super::candidates(std::slice::from_ref(&j)).is_empty();
        let s = e.entry(p.split.clone()).or_default();
        s.total += 1;
        s.positives += usize::from(p.supersede);
        s.positives_to_judge += usize::from(p.supersede && to_judge);
        s.negatives_to_judge += usize::from(!p.supersede && to_judge);
        match j.verdict {
            Verdict::Supersede if p.supersede => s.true_positives += 1,
            Verdict::Supersede => s.false_positives += 1,
            Verdict::Possible => s.possible += 1,
            Verdict::Distinct => {}
        }
    }
    e
}
