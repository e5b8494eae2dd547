//! The labelled corpora under `crates/muisti/tests/data` (extraction, resolution,
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
