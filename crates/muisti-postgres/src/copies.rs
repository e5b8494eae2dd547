//! In-process copies of partitions ([`muisti_store::copy`]), kept coherent with the database
//! by generations and a change log that every write transaction advances.
//!
//! A partition's version is `SLOTS` generations (table `generations`): a write transaction
//! bumps one slot of each partition it changes (chosen round-robin, so concurrent writers
//! seldom wait on one row) and logs the ids it changed under that slot's new generation
//! (table `changes`), as its last statements before it commits. A slot's generations are
//! therefore committed in order and without gaps. Before a copy answers, the store reads the
//! partition's generations (one statement): equal, the copy is current; ahead, the copy
//! reads the log entries after its own, reads those records again and applies them; a gap
//! (the log is trimmed to the last 1,000 entries per slot), a flush or more than 1,000
//! entries: the copy is reloaded, in one repeatable-read snapshot with its version. A copy
//! confirmed less than `staleness_ms` ago answers without asking. This process's writes are
//! not applied in place: the next read catches up on them like any other.

use std::{
    collections::HashMap,
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use muisti_core::{Error, Memory, MemoryId, Partition, Result};
use muisti_store::copy::{Copies, Copy, Shared};

use crate::{
    pool::{Cached, Tx},
    sql::{COLUMNS, decode, get, live},
};

/// Generation slots per partition.
pub(crate) const SLOTS: usize = 8;
/// Log entries kept per slot (a copy further behind than [`CATCH_UP_MAX`] entries in all is
/// reloaded anyway).
const KEPT: i64 = 1_000;
/// Log entries a copy catches up on at once; further behind, it is reloaded.
const CATCH_UP_MAX: usize = 1_000;

/// A copy's version: the generation of each slot.
pub(crate) type Version = Vec<i64>;

/// What a write changed in a partition, for its log entry.
pub(crate) enum Changed<'a> {
    /// These records.
    Ids(Vec<&'a MemoryId>),
    /// Everything (a flush).
    All,
}

/// The copies of one store handle and how they are kept.
pub(crate) struct Coherent {
    pub(crate) copies: Copies<Version>,
    pub(crate) staleness: Duration,
    next_slot: AtomicUsize,
    /// Held while a copy's version is checked, caught up or loaded: one at a time, so that
    /// concurrent readers wait for one catch-up instead of racing (and reloading).
    pub(crate) checking: Mutex<()>,
}

impl Coherent {
    pub(crate) fn new(budget: usize, staleness: Duration) -> Self {
        Self {
            copies: Copies::new(budget),
            staleness,
            next_slot: AtomicUsize::new(0),
            checking: Mutex::new(()),
        }
    }

    /// The slot this transaction bumps.
    pub(crate) fn slot(&self) -> i16 {
        (self.next_slot.fetch_add(1, Ordering::Relaxed) % SLOTS) as i16
    }
}

/// Bumps `slot` of each partition in `changes` (sorted, so that two transactions lock them
/// in one order) and logs what changed. The last statements of every write transaction.
pub(crate) fn bump(
    tx: &mut Tx<'_>,
    slot: i16,
    changes: &mut [(&Partition, Changed<'_>)],
) -> std::result::Result<(), postgres::Error> {
    changes.sort_by(|a, b| a.0.cmp(b.0));
    for (p, changed) in changes.iter() {
        let ids: Vec<String> = match changed {
            Changed::Ids(ids) => ids.iter().map(|id| id.to_string()).collect(),
            Changed::All => vec!["*".to_owned()],
        };
        tx.execute(
            "WITH g AS (INSERT INTO generations AS t (tenant, namespace, slot, generation) \
             VALUES ($1, $2, $3, 1) ON CONFLICT (tenant, namespace, slot) \
             DO UPDATE SET generation = t.generation + 1 RETURNING generation), \
             logged AS (INSERT INTO changes (tenant, namespace, slot, generation, ids) \
             SELECT $1, $2, $3, generation, $4 FROM g) \
             DELETE FROM changes WHERE tenant = $1 AND namespace = $2 AND slot = $3 \
             AND generation <= (SELECT generation FROM g) - $5",
            &[
                &p.tenant.as_str(),
                &p.namespace.as_str(),
                &slot,
                &ids,
                &KEPT,
            ],
        )?;
    }
    Ok(())
}

/// Merges the changes of several records (their partitions and ids) into one entry per
/// partition.
pub(crate) fn by_partition<'a>(
    records: impl IntoIterator<Item = (&'a Partition, &'a MemoryId)>,
) -> Vec<(&'a Partition, Changed<'a>)> {
    let mut out: Vec<(&Partition, Changed<'_>)> = Vec::new();
    for (p, id) in records {
        match out.iter_mut().find(|(q, _)| *q == p) {
            Some((_, Changed::Ids(ids))) => ids.push(id),
            Some((_, Changed::All)) => {}
            None => out.push((p, Changed::Ids(vec![id]))),
        }
    }
    out
}

/// A record's partition and id, as [`by_partition`] takes them.
pub(crate) fn of(m: &Memory) -> (&Partition, &MemoryId) {
    (&m.partition, &m.id)
}

/// The partition's generations now.
pub(crate) fn version_of(
    conn: &mut impl Cached,
    p: &Partition,
) -> std::result::Result<Version, postgres::Error> {
    let mut v = vec![0; SLOTS];
    for row in conn.query(
        "SELECT slot, generation FROM generations WHERE tenant = $1 AND namespace = $2",
        &[&p.tenant.as_str(), &p.namespace.as_str()],
    )? {
        let slot: i16 = row.get(0);
        if let Some(g) = v.get_mut(slot.max(0) as usize) {
            *g = row.get(1);
        }
    }
    Ok(v)
}

/// A record and its vector.
pub(crate) type Loaded = (Memory, Option<Vec<f32>>);

/// The live records of a partition (with these ids, when given) and their vectors; a
/// database error as `err` makes it.
pub(crate) fn records(
    conn: &mut impl Cached,
    p: &Partition,
    ids: Option<&[String]>,
    now: i64,
    err: impl Fn(postgres::Error) -> Error,
) -> Result<Vec<Loaded>> {
    let rows = match ids {
        None => conn.query(
            &format!(
                "SELECT {COLUMNS}, embedding FROM memories WHERE tenant = $1 AND namespace = $2 \
                 AND {}",
                live(3)
            ),
            &[&p.tenant.as_str(), &p.namespace.as_str(), &now],
        ),
        Some(ids) => conn.query(
            &format!(
                "SELECT {COLUMNS}, embedding FROM memories WHERE tenant = $1 AND namespace = $2 \
                 AND {} AND id = ANY($4)",
                live(3)
            ),
            &[&p.tenant.as_str(), &p.namespace.as_str(), &now, &ids],
        ),
    };
    rows.map_err(err)?
        .iter()
        .map(|r| {
            let v: Option<pgvector::Vector> = get(r, 29)?;
            Ok((decode(r)?, v.map(|v| v.to_vec())))
        })
        .collect()
}

/// What a catch-up found in the log after `have`: the ids to read again and the version
/// they bring the copy to; `None` when the copy must be reloaded.
pub(crate) fn changes_after(
    conn: &mut impl Cached,
    p: &Partition,
    have: &Version,
) -> std::result::Result<Option<(Vec<String>, Version)>, postgres::Error> {
    let rows = conn.query(
        "SELECT slot, generation, ids FROM changes WHERE tenant = $1 AND namespace = $2 \
         AND generation > ($3::bigint[])[slot + 1] ORDER BY slot, generation LIMIT $4",
        &[
            &p.tenant.as_str(),
            &p.namespace.as_str(),
            have,
            &(CATCH_UP_MAX as i64 + 1),
        ],
    )?;
    if rows.len() > CATCH_UP_MAX {
        return Ok(None);
    }
    let mut next = have.clone();
    let mut ids: Vec<String> = Vec::new();
    for row in &rows {
        let slot: i16 = row.get(0);
        let g: i64 = row.get(1);
        let logged: Vec<String> = row.get(2);
        let Some(at) = next.get_mut(slot.max(0) as usize) else {
            return Ok(None);
        };
        // A gap (entries trimmed away) or a flush: reload.
        if g != *at + 1 || logged.iter().any(|i| i == "*") {
            return Ok(None);
        }
        *at = g;
        ids.extend(logged);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(Some((ids, next)))
}

/// Applies re-read records to a copy that was at `have`: those found replace theirs, the
/// other ids are removed. `false` if another thread moved the copy meanwhile to a version
/// not at least `next`.
pub(crate) fn apply_caught_up(
    copy: &Shared<Version>,
    have: &Version,
    next: Version,
    ids: &[String],
    found: Vec<Loaded>,
) -> Result<bool> {
    let mut copy = copy.write().unwrap_or_else(|e| e.into_inner());
    if copy.version() != have {
        return Ok(copy
            .version()
            .iter()
            .zip(&next)
            .all(|(now, want)| now >= want));
    }
    let mut found: HashMap<MemoryId, Loaded> =
        found.into_iter().map(|(m, v)| (m.id, (m, v))).collect();
    for id in ids {
        let id = muisti_store::parse_id("postgres", id)?;
        match found.remove(&id) {
            Some((m, v)) => copy.upsert(m, v.as_deref()),
            None => copy.remove(id),
        }
    }
    copy.caught_up(next);
    Ok(true)
}

/// A copy of `records` at `version`.
pub(crate) fn new_copy(version: Version, records: Vec<Loaded>) -> Copy<Version> {
    Copy::new(version, records)
}
