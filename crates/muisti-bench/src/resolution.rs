//! The resolution corpus (`crates/muisti-lang/tests/data/graph-resolution.jsonl`) and the one
//! evaluation of entity resolution on it, through the engine's public graph API: the tests
//! and `muisti bench graph-extract --names` run it.

use muisti::{Engine, Result};
use muisti_lang::labelled::ratio;
use serde::{Deserialize, Serialize};

/// A conversation of the resolution corpus:
/// one user's messages in order and, as an annotator grouped them, the names that mean the
/// same thing.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct LabelledNames {
    /// The conversation's user.
    pub user: String,
    /// Its messages, in order.
    pub messages: Vec<String>,
    /// Each entity's names, as written in the messages.
    pub clusters: Vec<Vec<String>>,
}

/// Pairwise figures of entity resolution on a labelled corpus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ResolutionScores {
    /// Labelled names.
    pub names: usize,
    /// Of them, those the graph resolves to an entity at all.
    pub names_found: usize,
    /// Pairs of names the labels give one entity.
    pub same_pairs: usize,
    /// Pairs the graph resolves to one entity.
    pub pairs_joined: usize,
    /// Pairs the graph joined that the labels join too.
    pub pairs_right: usize,
}

impl ResolutionScores {
    /// Of the pairs joined, the share the labels join.
    pub fn precision(&self) -> f64 {
        ratio(self.pairs_right, self.pairs_joined)
    }
    /// Of the pairs the labels join, the share joined.
    pub fn recall(&self) -> f64 {
        ratio(self.pairs_right, self.same_pairs)
    }
}

/// Reads each conversation into `engine`'s graph (its messages remembered in order in its
/// default namespace, each waited for), then asks which entity each labelled name means,
/// and scores every pair of labelled names of a conversation: joined when both resolve to
/// one entity. The engine must extract (its worker reads the queue).
pub fn evaluate_resolution(engine: &Engine, corpus: &[LabelledNames]) -> Result<ResolutionScores> {
    let mut s = ResolutionScores::default();
    let partition = engine.partition(&muisti::Namespace::default_ns());
    for c in corpus {
        for m in &c.messages {
            let mut put = muisti::Put::new(partition.clone(), None, m.as_str());
            put.owner.user_id = Some(c.user.clone());
            put.owner.session_id = Some("s".to_owned());
            engine.remember(put)?;
            while engine.graph().pending()? > 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        let mut resolved = Vec::new();
        for (cluster, names) in c.clusters.iter().enumerate() {
            for n in names {
                let e = engine.graph().entity(Some(&c.user), n)?;
                s.names += 1;
                s.names_found += usize::from(e.is_some());
                resolved.push((cluster, e.map(|e| e.id)));
            }
        }
        for (i, (ca, ea)) in resolved.iter().enumerate() {
            for (cb, eb) in &resolved[i + 1..] {
                let joined = ea.is_some() && ea == eb;
                s.same_pairs += usize::from(ca == cb);
                s.pairs_joined += usize::from(joined);
                s.pairs_right += usize::from(joined && ca == cb);
            }
        }
    }
    Ok(s)
}
