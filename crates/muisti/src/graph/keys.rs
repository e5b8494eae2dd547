//! The keys and tags of the graph's records: by user, and by normalised name, so a lookup
//! by name is one read. The one definition every part of the graph builds them with.

use muisti_core::{MemoryId, content_hash};
use muisti_lang::relations::normalize_name;

/// Longest tag the store takes.
pub(super) const TAG_CHARS: usize = 64;

/// An index tag: `prefix` and `value`, the value cut and hashed when the tag would be too
/// long (so two long names still get different tags).
pub(super) fn tag(prefix: &str, value: &str) -> String {
    let whole = format!("{prefix}{value}");
    if whole.chars().count() <= TAG_CHARS {
        return whole;
    }
    let head: String = whole.chars().take(TAG_CHARS - 17).collect();
    format!("{head}#{}", &content_hash(value)[..16])
}

pub(super) fn name_tag(name: &str) -> String {
    tag("n:", &normalize_name(name))
}

/// The user part of a graph key (a user is one to 256 characters; none is `-`).
pub(super) fn user_part(user: Option<&str>) -> String {
    user.map_or_else(|| "-".to_owned(), |u| format!("u={u}"))
}

/// An entity's key: its user and normalised name.
pub(super) fn entity_key(user: Option<&str>, name: &str) -> String {
    format!("e|{}|{}", user_part(user), name_tag(name))
}

/// The key of an entity's adjacency record.
pub(super) fn adjacency_key(user: Option<&str>, entity: MemoryId) -> String {
    format!("a|{}|{entity}", user_part(user))
}
