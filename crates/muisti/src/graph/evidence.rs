//! What the graph knows about a text: the entities it names (found by point reads of its
//! word n-grams, never a scan of the user's entities) and the memories that support them,
//! for graph-aware recall and the agent's context block.

use std::collections::HashMap;

use muisti_core::{MemoryId, Result};

use super::Graph;
use super::{Entity, Relation};

/// Longest name looked up, in words ("Bank of New York").
const NAME_WORDS: usize = 4;

/// Words of a query read at most (a pasted document is not looked up word by word).
const QUERY_WORDS: usize = 64;

/// How specific an entity is to the memories that name it: 1 for a name one memory
/// gives, falling with its mentions (`1 / (1 + log2 m)`), so the user's own name, which
/// most of their memories carry, adds little.
pub fn specificity(mentions: u64) -> f32 {
    1.0 / (1.0 + (mentions.max(1) as f32).log2())
}

impl Graph<'_> {
    /// The user's entities that `text` names: each run of one to four words looked up as
    /// a name or an alias (point reads), the longest match first where two overlap. In
    /// the order first named.
    pub fn named(&self, user: Option<&str>, text: &str) -> Result<Vec<Entity>> {
        let words: Vec<&str> = text
            .split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
            .map(|w| w.trim_matches(|c: char| c == '\'' || c == '-'))
            .filter(|w| !w.is_empty())
            .take(QUERY_WORDS)
            .collect();
        let mut found: Vec<Entity> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let mut step = 1;
            for n in (1..=NAME_WORDS.min(words.len() - i)).rev() {
                let phrase = &words[i..i + n];
                if n == 1 && !could_be_name(phrase[0]) {
                    continue;
                }
                if let Some(e) = self.entity(user, &phrase.join(" "))? {
                    if !found.iter().any(|f| f.id == e.id) {
                        found.push(e);
                    }
                    step = n;
                    break;
                }
            }
            i += step;
        }
        Ok(found)
    }

    /// The memories the graph links to what `query` names, each with a weight from 0 to 1:
    /// a memory naming a named entity gets the entity's [`specificity`]; a memory stating a
    /// fact at its ends, or naming the entity at the fact's other end, half the smaller
    /// specificity of the two (the one-hop neighbourhood, for questions whose answer is a
    /// step away from what they name). Weights of several entities add up, capped at 1.
    pub fn evidence(&self, user: Option<&str>, query: &str) -> Result<HashMap<MemoryId, f32>> {
        let mut weight: HashMap<MemoryId, f32> = HashMap::new();
        let mut add = |ids: &[MemoryId], w: f32| {
            for id in ids {
                let e = weight.entry(*id).or_default();
                *e = (*e + w).min(1.0);
            }
        };
        for e in self.named(user, query)? {
            let own = specificity(e.mentions);
            add(&e.memory_ids, own);
            let adjacency = self.adjacent(user, e.id)?;
            let edges: Vec<MemoryId> = adjacency
                .out
                .iter()
                .chain(&adjacency.into)
                .copied()
                .collect();
            for r in self.relations_by_id(&edges)? {
                let other = self.other_end(user, &r, e.id)?;
                let hop = other
                    .as_ref()
                    .map_or(own, |o| own.min(specificity(o.mentions)))
                    / 2.0;
                add(&r.memory_ids, hop);
                if let Some(o) = other {
                    add(&o.memory_ids, hop);
                }
            }
        }
        Ok(weight)
    }

    /// The entity at the end of `r` that is not `from` (none for a value).
    fn other_end(
        &self,
        user: Option<&str>,
        r: &Relation,
        from: MemoryId,
    ) -> Result<Option<Entity>> {
        let name = if r.subject_id == from {
            match r.object_id {
                Some(_) => &r.object,
                None => return Ok(None),
            }
        } else {
            &r.subject
        };
        self.entity(user, name)
    }
}

/// Whether one word may be a name by itself: not a short or common function word.
fn could_be_name(word: &str) -> bool {
    const COMMON: &[&str] = &[
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "did", "do", "does", "for",
        "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "in", "is", "it",
        "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them",
        "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
        "will", "with", "would", "you", "your",
    ];
    word.chars().count() > 1 && !COMMON.contains(&word.to_lowercase().as_str())
}
