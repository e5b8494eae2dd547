//! A second opinion on which entry a declarative write replaces: a [`ConflictJudge`] (an LLM
//! when one is configured, `muisti_agent::LlmJudge`) decides among the candidates the
//! offline detector finds, and the detector's verdict stands whenever the judge fails.

use std::fmt;

use muisti_core::Category;

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
