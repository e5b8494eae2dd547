//! A second opinion on which entry a declarative write replaces: a [`ConflictJudge`] (an LLM
//! when one is configured, `muisti_agent::LlmJudge`) decides among the candidates the
//! offline detector finds, and the detector's verdict stands whenever the judge fails.

use std::fmt;

use muisti_core::{Category, Result};
use muisti_lang::conflict::{self as detect, Judgement};

use crate::core::Core;

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

/// The detector's judgement of `text` against each of `texts` (with their cosines when the
/// engine embeds): the one reading of a pair that declarative writes and the supersede rule
/// of long-term memories both start from.
pub(crate) fn judgements(core: &Core, text: &str, texts: &[String]) -> Result<Vec<Judgement>> {
    let cosines = core.cosines(text, texts)?;
    Ok(texts
        .iter()
        .enumerate()
        .map(|(i, theirs)| detect::judge(theirs, text, cosines.as_ref().map(|c| c[i])))
        .collect())
}

/// The judge's opinion among the detector's candidates ([`detect::candidates`] of
/// `judgements`, over `texts`): `Some(Some(i))` the one `text` replaces (an index into
/// `texts`), `Some(None)` none; `None` when it has no opinion (no candidates, an answer
/// naming none of them, or a failure, both logged): the caller's own verdict stands.
pub(crate) fn second_opinion(
    judge: &dyn ConflictJudge,
    text: &str,
    kind: &Category,
    texts: &[String],
    judgements: &[Judgement],
) -> Option<Option<usize>> {
    let picked = detect::candidates(judgements);
    if picked.is_empty() {
        return None;
    }
    let shown: Vec<&str> = picked.iter().map(|&i| texts[i].as_str()).collect();
    match judge.judge(text, kind, &shown) {
        Ok(Some(k)) if k < picked.len() => Some(Some(picked[k])),
        Ok(Some(k)) => {
            tracing::warn!(
                judge = judge.name(),
                answer = k,
                "the conflict judge named no candidate; the rules decide"
            );
            None
        }
        Ok(None) => Some(None),
        Err(e) => {
            tracing::warn!(judge = judge.name(), error = %e, "the conflict judge failed; the rules decide");
            None
        }
    }
}
