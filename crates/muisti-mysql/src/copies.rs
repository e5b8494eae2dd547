//! In-process copies of partitions ([`muisti_store::copy`]), kept coherent with the database
//! by one generation per partition and a change log that every write transaction advances.
//!
//! A write transaction bumps the generation of each partition it changes (table
//! `generations`; the partitions in one order, so two transactions lock them alike) and logs
//! the ids it changed under the new generation (table `changes`), as its last statements
//! before it commits: the row lock on a partition's generation makes its generations commit
//! in order and without gaps. MariaDB and MySQL push no change signal, so before a copy
//! answers the store reads the partition's generation (one statement, once per read run):
//! equal, the copy is current; ahead, the copy reads the log entries after its own, reads
//! those records again and applies them; a gap (the log keeps the last 1,000 entries of a
//! partition), a flush, an import or more than 1,000 entries: the copy is reloaded, in one
//! consistent snapshot with its generation. This process's writes are not applied in place:
//! the next read catches up on them like any other.

use std::{collections::HashMap, sync::Mutex, time::Duration};

use muisti_core::{Memory, MemoryId, Partition};
use muisti_store::copy::{Copies, Copy, Shared};

/// Log entries kept per partition.
pub(crate) const KEPT: i64 = 1_000;
/// Log entries a copy catches up on at once; further behind, it is reloaded.
pub(crate) const CATCH_UP_MAX: usize = 1_000;

/// A copy's version: its partition's generation.
pub(crate) type Version = i64;

/// What a write changed in a partition, for its log entry.
pub(crate) enum Changed {
    /// These records.
    Ids(Vec<MemoryId>),
    /// Anything (a flush, an import): copies reload.
    All,
}

/// The log entry's text of a change: the ids, comma-separated, or `*`.
pub(crate) fn logged(changed: &Changed) -> String {
    match changed {
        Changed::Ids(ids) => ids
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
        Changed::All => "*".to_owned(),
    }
}

/// Merges what several records' writes changed into one entry per partition.
pub(crate) fn by_partition(
    records: impl IntoIterator<Item = (Partition, MemoryId)>,
) -> Vec<(Partition, Changed)> {
    let mut out: Vec<(Partition, Changed)> = Vec::new();
    for (p, id) in records {
        match out.iter_mut().find(|(q, _)| *q == p) {
            Some((_, Changed::Ids(ids))) => ids.push(id),
            Some((_, Changed::All)) => {}
            None => out.push((p, Changed::Ids(vec![id]))),
        }
    }
    out
}

/// The copies of one store handle and how they are kept.
pub(crate) struct Coherent {
    pub(crate) copies: Copies<Version>,
    pub(crate) staleness: Duration,
    /// Held while a copy's version is checked, caught up or loaded: one at a time, so that
    /// concurrent readers wait for one catch-up instead of racing (and reloading).
    pub(crate) checking: Mutex<()>,
}

impl Coherent {
    pub(crate) fn new(budget: usize, staleness: Duration) -> Self {
        Self {
            copies: Copies::new(budget),
            staleness,
            checking: Mutex::new(()),
        }
    }
}

/// What a catch-up found in the log entries after the copy's generation: the ids to read
/// again and the generation they bring the copy to; `None` when the copy must be reloaded
/// (a gap, a flush or an import, too many entries).
pub(crate) fn changes_after(
    have: Version,
    entries: &[(i64, String)],
) -> Option<(Vec<MemoryId>, Version)> {
    if entries.len() > CATCH_UP_MAX {
        return None;
    }
    let mut next = have;
    let mut ids = Vec::new();
    for (g, logged) in entries {
        if *g != next + 1 || logged == "*" {
            return None;
        }
        next = *g;
        for id in logged.split(',').filter(|s| !s.is_empty()) {
            ids.push(MemoryId::parse(id).ok()?);
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Some((ids, next))
}

/// A record and its vector.
pub(crate) type Loaded = (Memory, Option<Vec<f32>>);

/// Applies re-read records to a copy that was at `have`: those found replace theirs, the
/// other ids are removed. `false` if another thread moved the copy meanwhile to a version
/// before `next`.
pub(crate) fn apply_caught_up(
    copy: &Shared<Version>,
    have: Version,
    next: Version,
    ids: &[MemoryId],
    found: Vec<Loaded>,
) -> bool {
    let mut copy = copy.write().unwrap_or_else(|e| e.into_inner());
    if *copy.version() != have {
        return *copy.version() >= next;
    }
    let mut found: HashMap<MemoryId, Loaded> =
        found.into_iter().map(|(m, v)| (m.id, (m, v))).collect();
    for id in ids {
        match found.remove(id) {
            Some((m, v)) => copy.upsert(m, v.as_deref()),
            None => copy.remove(*id),
        }
    }
    copy.caught_up(next);
    true
}

/// A copy of `records` at `version`.
pub(crate) fn new_copy(version: Version, records: Vec<Loaded>) -> Copy<Version> {
    Copy::new(version, records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catch_up_follows_the_log_without_gaps() {
        let a = MemoryId::generate();
        let b = MemoryId::generate();
        let entries = vec![(4, a.to_string()), (5, format!("{b},{a}"))];
        let (ids, next) = changes_after(3, &entries).expect("in order");
        assert_eq!((ids.len(), next), (2, 5));
        assert!(changes_after(2, &entries).is_none(), "a gap");
        assert!(changes_after(3, &[(4, "*".into())]).is_none(), "a flush");
        assert_eq!(changes_after(7, &[]), Some((Vec::new(), 7)));
    }
}
