//! The labelled corpora under `crates/muisti-lang/tests/data` (extraction, resolution,
//! conflicts, near-duplicates): one JSON object per line, blank lines skipped. The one
//! reader every evaluation, test and bench uses.

use serde::de::DeserializeOwned;

/// The records of a JSON-lines text, in order.
pub fn parse_jsonl<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, serde_json::Error> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

/// `a / b`, the share of `b` an evaluation got right (1 when there was nothing to get): the
/// one definition every score of the corpora uses.
pub fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}
