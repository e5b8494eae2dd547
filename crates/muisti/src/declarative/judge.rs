//! A second opinion on which entry a declarative write replaces: a [`ConflictJudge`] (an LLM
//! when one is configured, `muisti_agent::LlmJudge`) decides among the candidates the
//! offline detector finds, and the detector's verdict stands whenever the judge fails.

use std::fmt;

use muisti_core::Category;

use super::detect::{Judgement, Verdict};

/// Most candidates one judgement is asked about (the most similar first).
pub const MAX_CANDIDATES: usize = 5;

/// The static-model cosine at or above which an entry is a candidate for the judge even with
/// no other evidence: it kept 97% of the true targets of the labelled corpus (research note,
/// finding 4), so the judge, not the threshold, makes the decision.
pub const CANDIDATE_COSINE: f32 = 0.29;

/// Why a judgement could not be made (the model was unreachable, or its answer unreadable).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("conflict judge: {0}")]
pub struct JudgeError(pub String);

/// Decides which stored entry a new declarative entry replaces.
pub trait ConflictJudge: Send + Sync {
    /// Of `candidates` (texts of the user's active entries of type `kind`, the most similar
    /// first), the index of the one `new` restates or gives a new value of, or `None` when
    /// it replaces none (both can hold at once).
    fn judge(
        &self,
        new: &str,
        kind: &Category,
        candidates: &[&str],
    ) -> Result<Option<usize>, JudgeError>;

    /// A name for logs (for example the model's).
    fn name(&self) -> &str;
}

impl fmt::Debug for dyn ConflictJudge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConflictJudge")
            .field("name", &self.name())
            .finish()
    }
}

/// Which of the detector's judgements go to the judge, best first: no veto (other person,
/// addition, past state, different slots or scopes: the vetoes held on held-out pairs), and
/// some evidence of a shared subject (a slot, a topic term, or a cosine of at least
/// [`CANDIDATE_COSINE`]); at most [`MAX_CANDIDATES`]. Returns indexes into `judgements`.
pub fn candidates(judgements: &[Judgement]) -> Vec<usize> {
    let mut picked: Vec<usize> = judgements
        .iter()
        .enumerate()
        .filter(|(_, j)| {
            j.veto.is_none()
                && (j.verdict != Verdict::Distinct
                    || j.shared_slot.is_some()
                    || j.shared_objects > 0
                    || j.cosine.is_some_and(|c| c >= CANDIDATE_COSINE))
        })
        .map(|(i, _)| i)
        .collect();
    picked.sort_by(|&a, &b| judgements[b].rank().cmp(&judgements[a].rank()));
    picked.truncate(MAX_CANDIDATES);
    picked
}
