//! The full-text side: the terms FTS5 matches on, and the scope terms that narrow a match
//! to a partition or an owner.

use muisti_core::{Memory, Partition, text::query_terms};

/// FNV-1a, 64 bits: a stable hash for scope terms.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in p.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The full-text term of a partition.
pub(crate) fn partition_term(p: &Partition) -> String {
    format!("p{:016x}", fnv(&[p.tenant.as_str(), p.namespace.as_str()]))
}

/// The full-text term of an owner field (`kind` u, a or s).
pub(crate) fn owner_term(kind: char, value: &str) -> String {
    format!("{kind}{:016x}", fnv(&[value]))
}

/// The scope column of a record: its partition and owner terms. Matching on them only
/// narrows; the SQL conditions still decide.
pub(crate) fn scope_terms(m: &Memory) -> String {
    let mut out = partition_term(&m.partition);
    for (kind, value) in [
        ('u', &m.owner.user_id),
        ('a', &m.owner.agent_id),
        ('s', &m.owner.session_id),
    ] {
        if let Some(v) = value {
            out.push(' ');
            out.push_str(&owner_term(kind, v));
        }
    }
    out
}

/// An FTS5 query matching any of the text's tokens, each quoted; `None` without tokens.
pub(crate) fn fts_query(text: &str) -> Option<String> {
    let tokens = query_terms(text);
    if tokens.is_empty() {
        return None;
    }
    Some(
        tokens
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}
