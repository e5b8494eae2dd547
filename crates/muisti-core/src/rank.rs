//! The token-overlap rule of the seed: the compatibility ranking every store can fall back
//! to.

use std::collections::HashSet;

use crate::{Hit, Memory};

/// The distinct lower-cased words of three or more letters or digits in `text`.
pub fn overlap_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect()
}

/// Ranks `entries` by how many distinct words of three or more characters their content
/// shares with `query`. The key is never matched. Entries sharing no word are dropped; ties
/// go to the most recently updated, then to the smaller key. At most `limit` hits.
pub fn token_overlap(
    entries: impl IntoIterator<Item = Memory>,
    query: &str,
    limit: usize,
) -> Vec<Hit> {
    let words = overlap_words(query);
    if words.is_empty() || limit == 0 {
        return Vec::new();
    }
    let mut hits: Vec<Hit> = entries
        .into_iter()
        .filter_map(|m| {
            let shared = overlap_words(&m.text()).intersection(&words).count();
            (shared > 0).then_some(Hit {
                memory: m,
                score: shared as f64,
            })
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.memory.updated_at.cmp(&a.memory.updated_at))
            .then(a.memory.key.cmp(&b.memory.key))
    });
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Key, Namespace, Partition, Put, Timestamp};

    fn mem(key: &str, value: &str) -> Memory {
        Put::new(
            Partition::of(Namespace::default_ns()),
            Some(Key::new(key).expect("valid")),
            value,
        )
        .apply(None, Timestamp::from_millis(0))
    }

    #[test]
    fn seed_example() {
        let entries = vec![
            mem("customer_tier", "gold tier customer"),
            mem("discount_rule", "gold customer discount is 10 percent"),
            mem("preferred_language", "French language preferred"),
        ];
        let hits = token_overlap(entries, "What discount do I get for my customer tier?", 3);
        let keys: Vec<_> = hits.iter().map(|h| h.memory.key.as_str()).collect();
        // customer_tier shares "customer" and "tier"; discount_rule "discount" and "customer".
        assert_eq!(keys.len(), 2);
        assert!(keys.contains(&"customer_tier"));
        assert!(keys.contains(&"discount_rule"));
    }

    #[test]
    fn key_is_never_matched() {
        let hits = token_overlap(vec![mem("customer_tier", "gold")], "customer tier?", 3);
        assert!(hits.is_empty());
    }
}
