//! The access log: which memory a recall returned (with its score, and the query's text
//! when asked) or a read by id reached, and when. Off by default ([`AccessLogMode::Off`]):
//! on, it costs the background recorder a read and a write per memory reached in each of
//! its windows, not the recall.
//!
//! One record per memory in the engine's own namespace ([`ACCESS_LOG_NAMESPACE`]), keyed by
//! the memory's id and owned by its user: the accesses of each day of the retention, and
//! the latest [`MAX_ENTRIES`] accesses themselves. Days and entries older than the retention
//! are dropped at each write, and the record expires a retention after its last write, so
//! nothing is kept longer than the retention. A memory's record is deleted with the memory
//! (and so with its user: a user's delete-all deletes each of their memories), and a query's
//! text is kept only on the asking user's own memories, never on a memory shared with
//! others (who would read it there).

use std::collections::BTreeMap;

use muisti_core::{
    Error, Filter, Key, ListQuery, Locator, Memory, MemoryId, Namespace, Owner, Patch, Put, Result,
    Store, Tenant, Timestamp, Ttl, UpdateRequest, list_all,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::analytics::{DAY_MS, DayCount, day_name, day_of};
use crate::core::{Change, Core, Follower, own_record};
use crate::records::{ACCESS_LOG, ACCESS_LOG_NAMESPACE};

/// The most accesses kept per memory (the newest); every access still counts in its day.
/// (A record is rewritten at each window a memory is reached in: its size is the write's
/// cost, and what a store's record cache holds.)
pub const MAX_ENTRIES: usize = 25;

/// The most characters of a query's text kept with an access.
pub const MAX_QUERY_CHARS: usize = 500;

/// The most days the log keeps.
pub const MAX_RETENTION_DAYS: u32 = 3660;

/// What the access log keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessLogMode {
    /// Nothing (the default): each memory's access count and last access time only.
    #[default]
    Off,
    /// Each access's time, kind and score, without the query's text.
    Scores,
    /// As `Scores`, and the text of the query that recalled the asking user's own memory.
    Queries,
}

impl AccessLogMode {
    /// `off`, `scores` or `queries`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "off" => Ok(Self::Off),
            "scores" => Ok(Self::Scores),
            "queries" => Ok(Self::Queries),
            other => Err(Error::invalid(
                "access_log",
                format!("`{other}` is not one of off, scores, queries"),
            )),
        }
    }
}

/// The access log's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessLog {
    /// What it keeps.
    pub mode: AccessLogMode,
    /// Days an access is kept (1 to [`MAX_RETENTION_DAYS`]; default 30).
    pub retention_days: u32,
}

impl Default for AccessLog {
    fn default() -> Self {
        Self {
            mode: AccessLogMode::Off,
            retention_days: 30,
        }
    }
}

impl AccessLog {
    /// Refuses a retention of no day or past [`MAX_RETENTION_DAYS`].
    pub fn validate(&self) -> Result<()> {
        if self.retention_days == 0 || self.retention_days > MAX_RETENTION_DAYS {
            return Err(Error::invalid(
                "access_log_retention_days",
                format!("must be 1 to {MAX_RETENTION_DAYS}"),
            ));
        }
        Ok(())
    }

    /// Whether it keeps anything.
    pub fn is_on(&self) -> bool {
        self.mode != AccessLogMode::Off
    }

    fn retention(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.retention_days) * 86_400)
    }

    /// The oldest time kept when it is `now`.
    fn cutoff(&self, now: Timestamp) -> Timestamp {
        Timestamp::from_millis(
            now.as_millis()
                .saturating_sub(i64::from(self.retention_days) * DAY_MS),
        )
    }
}

/// How a memory was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// A recall returned it.
    Recall,
    /// A caller read it by id.
    Read,
}

impl AccessKind {
    /// Its name: `recall` or `read` (as it is written in JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Recall => "recall",
            Self::Read => "read",
        }
    }
}

/// One access of a memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccessEntry {
    /// When.
    pub at: Timestamp,
    /// How.
    pub kind: AccessKind,
    /// The recall's score of the memory (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// The recall's query (with [`AccessLogMode::Queries`], on the asking user's own memory;
    /// at most [`MAX_QUERY_CHARS`] characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// A memory's accesses in the log, within its retention.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryAccesses {
    /// The memory.
    pub memory_id: MemoryId,
    /// Accesses per UTC day, oldest first (days with none left out).
    pub days: Vec<DayCount>,
    /// The latest accesses, newest first (at most [`MAX_ENTRIES`]).
    pub entries: Vec<AccessEntry>,
}

/// A memory's record in the log.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct AccessRecord {
    memory_id: Option<MemoryId>,
    /// Accesses per UTC day number.
    #[serde(default)]
    days: BTreeMap<i64, u64>,
    /// Oldest first.
    #[serde(default)]
    entries: Vec<AccessEntry>,
}

impl AccessRecord {
    /// Adds `entries` and drops what is older than `cutoff`.
    fn add(&mut self, entries: impl IntoIterator<Item = AccessEntry>, cutoff: Timestamp) {
        for e in entries {
            *self.days.entry(day_of(e.at)).or_default() += 1;
            self.entries.push(e);
        }
        self.trim(cutoff);
    }

    fn trim(&mut self, cutoff: Timestamp) {
        let first = day_of(cutoff);
        self.days.retain(|day, _| *day >= first);
        self.entries.retain(|e| e.at >= cutoff);
        self.entries.sort_by_key(|e| e.at);
        let extra = self.entries.len().saturating_sub(MAX_ENTRIES);
        self.entries.drain(..extra);
    }
}

/// One access waiting to be written.
pub(crate) struct Logged {
    pub(crate) memory_id: MemoryId,
    /// The memory's namespace and user (what its record is filed under).
    pub(crate) namespace: Namespace,
    pub(crate) user_id: Option<String>,
    pub(crate) entry: AccessEntry,
}

/// Who reached memories, and how: what [`Engine::count_access`](crate::Engine) is told.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reach<'a> {
    pub(crate) kind: AccessKind,
    /// The recall's query.
    pub(crate) query: Option<&'a str>,
    /// The user the caller acts for.
    pub(crate) user: Option<&'a str>,
}

impl Reach<'_> {
    /// The log's entry for memory `m` reached with `score` at `at`, as `config` keeps it:
    /// the query's text only on the asking user's own memory (one with no user is
    /// everyone's, and the text stays out of it unless no user asked).
    pub(crate) fn logged(
        &self,
        config: &AccessLog,
        m: &Memory,
        score: Option<f32>,
        at: Timestamp,
    ) -> Logged {
        let own = m.owner.user_id.as_deref() == self.user;
        let query = self
            .query
            .filter(|_| config.mode == AccessLogMode::Queries && own)
            .map(|q| q.chars().take(MAX_QUERY_CHARS).collect());
        Logged {
            memory_id: m.id,
            namespace: m.partition.namespace.clone(),
            user_id: m.owner.user_id.clone(),
            entry: AccessEntry {
                at,
                kind: self.kind,
                score,
                query,
            },
        }
    }
}

/// The key of memory `id`'s record.
fn key_of(id: MemoryId) -> Result<Key> {
    Key::new(id.to_string())
}

/// The metadata fields a record is found by: its memory's id and namespace.
const MEMORY_ID: &str = "memory_id";
const NAMESPACE: &str = "namespace";

/// The records of `namespace`'s memories (of `user`'s, when given).
fn of_namespace(namespace: &Namespace, user: Option<&str>) -> Filter {
    Filter {
        user_id: user.map(str::to_owned),
        metadata: [(NAMESPACE.to_owned(), json!(namespace.as_str()))]
            .into_iter()
            .collect(),
        ..Filter::default()
    }
}

/// How long a record written at `now` for memory `m` lives: the retention, and never past
/// the memory's own expiry (an expired memory is purged without telling its followers).
fn ttl_for(config: &AccessLog, m: &Memory, now: Timestamp) -> Result<Ttl> {
    let mut ttl = config.retention();
    if let Some(end) = m.expires_at {
        let left = end.as_millis().saturating_sub(now.as_millis()).max(1_000);
        ttl = ttl.min(std::time::Duration::from_millis(left as u64));
    }
    Ttl::new(ttl)
}

/// Writes `log` (a window's accesses in `tenant`) to the memories' records: one read and
/// one write per memory, a record another writer changed meanwhile read again (three
/// tries). Accesses of memories deleted since are dropped.
pub(crate) fn write(
    store: &dyn Store,
    tenant: &Tenant,
    log: Vec<Logged>,
    config: &AccessLog,
) -> Result<()> {
    let Some(latest) = log.iter().map(|l| l.entry.at).max() else {
        return Ok(());
    };
    let partition = ACCESS_LOG.partition(tenant)?;
    let cutoff = config.cutoff(latest);
    let mut by_memory: BTreeMap<MemoryId, Vec<Logged>> = BTreeMap::new();
    for l in log {
        by_memory.entry(l.memory_id).or_default().push(l);
    }
    // A memory deleted since it was reached leaves nothing behind (one deleted between
    // this read and the write below leaves its record until the record expires).
    let ids: Vec<MemoryId> = by_memory.keys().copied().collect();
    let live: std::collections::HashMap<MemoryId, Memory> = store
        .get_many(tenant, &ids)?
        .into_iter()
        .map(|m| (m.id, m))
        .collect();
    by_memory.retain(|id, _| live.contains_key(id));
    for _ in 0..3 {
        let mut puts = Vec::new();
        let mut updates = Vec::new();
        for (id, events) in &by_memory {
            let at = Locator::Key {
                partition: partition.clone(),
                key: key_of(*id)?,
            };
            let found = store.get(&at)?;
            let mut record = match &found {
                Some(r) => ACCESS_LOG.decode(r).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "an access record did not decode: begun again");
                    AccessRecord::default()
                }),
                None => AccessRecord::default(),
            };
            record.memory_id = Some(*id);
            record.add(events.iter().map(|l| l.entry.clone()), cutoff);
            let ttl = match live.get(id) {
                Some(m) => ttl_for(config, m, latest)?,
                None => continue,
            };
            let mut metadata = serde_json::Map::new();
            metadata.insert(MEMORY_ID.into(), json!(id.to_string()));
            metadata.insert(NAMESPACE.into(), json!(events[0].namespace.as_str()));
            ACCESS_LOG.encode_into(&record, &mut metadata)?;
            match found {
                Some(r) => updates.push(UpdateRequest {
                    at,
                    patch: Patch {
                        metadata: Some(metadata),
                        ttl: Some(Some(ttl)),
                        ..Patch::default()
                    },
                    expected_version: Some(r.version),
                }),
                None => {
                    let mut put =
                        Put::new(partition.clone(), Some(key_of(*id)?), json!("access log"));
                    put.owner = Owner {
                        user_id: events[0].user_id.clone(),
                        ..Owner::default()
                    };
                    put.metadata = metadata;
                    put.ttl = Some(ttl);
                    puts.push(put);
                }
            }
        }
        if !puts.is_empty() {
            store.put_many(puts)?;
        }
        let results = store.update_many(&updates)?;
        let mut again = std::collections::HashSet::new();
        for (req, result) in updates.iter().zip(results) {
            match result {
                Ok(_) => {}
                // Another writer changed (or expiry removed) the record since it was read.
                Err(Error::Conflict(_) | Error::NotFound(_)) => {
                    if let Locator::Key { key, .. } = &req.at {
                        again.insert(key.as_str().to_owned());
                    }
                }
                Err(e) => return Err(e),
            }
        }
        by_memory.retain(|id, _| again.contains(&id.to_string()));
        if by_memory.is_empty() {
            return Ok(());
        }
    }
    tracing::warn!(
        memories = by_memory.len(),
        "access log: records kept changing under the writer; this window's accesses of them dropped"
    );
    Ok(())
}

/// The record of memory `id`, if any.
pub(crate) fn record_of(core: &Core, id: MemoryId) -> Result<Option<AccessRecord>> {
    let at = Locator::Key {
        partition: ACCESS_LOG.partition(&core.tenant)?,
        key: key_of(id)?,
    };
    core.store
        .get(&at)?
        .map(|r| ACCESS_LOG.decode(&r))
        .transpose()
}

/// Memory `id`'s accesses within the retention (none recorded: empty).
pub(crate) fn accesses_of(core: &Core, id: MemoryId) -> Result<MemoryAccesses> {
    let mut record = record_of(core, id)?.unwrap_or_default();
    record.trim(core.access.config().cutoff(core.clock.now()));
    Ok(MemoryAccesses {
        memory_id: id,
        days: record
            .days
            .iter()
            .map(|(day, count)| DayCount {
                day: day_name(*day),
                scope: None,
                count: *count,
            })
            .collect(),
        entries: record.entries.into_iter().rev().collect(),
    })
}

/// The accesses per UTC day number within the retention of the memories of `namespace`
/// whose user `filter` names (every user's when it names none), by memory: what analytics
/// counts accesses per day from. Read a page of records at a time, each day counts kept
/// (never the accesses themselves); empty when the log holds nothing.
pub(crate) fn days_of(
    core: &Core,
    namespace: &Namespace,
    filter: &Filter,
) -> Result<std::collections::HashMap<MemoryId, BTreeMap<i64, u64>>> {
    let mut out = std::collections::HashMap::new();
    let partition = ACCESS_LOG.partition(&core.tenant)?;
    if core.store.count(&partition, &Filter::default())? == 0 {
        return Ok(out);
    }
    let cutoff = core.access.config().cutoff(core.clock.now());
    let mut list = ListQuery {
        filter: of_namespace(namespace, filter.user_id.as_deref()),
        ..ListQuery::all(partition)
    };
    loop {
        let page = core.store.list(&list)?;
        for r in &page.items {
            if let Ok(mut rec) = ACCESS_LOG.decode(r) {
                rec.trim(cutoff);
                if let Some(id) = rec.memory_id {
                    out.insert(id, rec.days);
                }
            }
        }
        match page.next {
            Some(next) => list.after = Some(next),
            None => return Ok(out),
        }
    }
}

/// Deletes the records of `user`'s memories of `namespace` (a user's delete-all: also a
/// record whose memory went without telling, by expiry).
pub(crate) fn forget_user(core: &Core, namespace: &Namespace, user: &str) -> Result<()> {
    core.delete_where(
        &crate::core::own_namespace(ACCESS_LOG_NAMESPACE),
        &of_namespace(namespace, Some(user)),
        |_| false,
    )?;
    Ok(())
}

/// Deletes the records of `namespace`'s memories (after the store's own flush of it).
pub(crate) fn forget_namespace(core: &Core, namespace: &Namespace) -> Result<()> {
    core.delete_where(
        &crate::core::own_namespace(ACCESS_LOG_NAMESPACE),
        &of_namespace(namespace, None),
        |_| false,
    )?;
    Ok(())
}

/// [`Follower`]: a deleted memory's record goes with it, and a memory moved to another
/// user leaves its record behind (deleted: its accesses, queries with them, were the
/// user's before).
pub(crate) struct AccessLogFollower;

/// Up to this many memories deleted at once, their records are deleted by key; past it, by
/// one read of their users' records and one batch delete.
const DELETE_BY_KEY: usize = 16;

impl AccessLogFollower {
    /// Deletes the records of `memories`.
    fn forget(core: &Core, memories: &[&Memory]) -> Result<()> {
        if memories.is_empty() {
            return Ok(());
        }
        let partition = ACCESS_LOG.partition(&core.tenant)?;
        // Most stores never had the log on: one count, not a delete per memory.
        if core.store.count(&partition, &Filter::default())? == 0 {
            return Ok(());
        }
        if memories.len() <= DELETE_BY_KEY {
            for m in memories {
                core.store.delete(&Locator::Key {
                    partition: partition.clone(),
                    key: key_of(m.id)?,
                })?;
            }
            return Ok(());
        }
        let gone: std::collections::HashSet<String> =
            memories.iter().map(|m| m.id.to_string()).collect();
        let mut users: Vec<Option<&str>> = memories
            .iter()
            .map(|m| m.owner.user_id.as_deref())
            .collect();
        users.sort_unstable();
        users.dedup();
        let mut records = Vec::new();
        for user in users {
            let filter = Filter {
                user_id: user.map(str::to_owned),
                without_user: user.is_none(),
                ..Filter::default()
            };
            for r in list_all(core.store.as_ref(), &partition, &filter)? {
                if r.metadata
                    .get(MEMORY_ID)
                    .and_then(|v| v.as_str())
                    .is_some_and(|id| gone.contains(id))
                {
                    records.push(r.id);
                }
            }
        }
        core.store.delete_many(&core.tenant, &records)?;
        Ok(())
    }
}

impl Follower for AccessLogFollower {
    fn written(&self, core: &Core, changes: &[Change<'_>]) -> Result<()> {
        let moved: Vec<&Memory> = changes
            .iter()
            .filter(|c| !own_record(c.memory))
            .filter_map(|c| c.moved_from())
            .collect();
        Self::forget(core, &moved)
    }

    fn deleted(&self, core: &Core, gone: &[Memory]) -> Result<()> {
        let gone: Vec<&Memory> = gone.iter().filter(|m| !own_record(m)).collect();
        Self::forget(core, &gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at: i64) -> AccessEntry {
        AccessEntry {
            at: Timestamp::from_millis(at),
            kind: AccessKind::Recall,
            score: Some(0.5),
            query: None,
        }
    }

    #[test]
    fn a_record_keeps_the_retention_and_the_newest_entries() {
        let mut r = AccessRecord::default();
        let day = DAY_MS;
        r.add((0..3).map(entry), Timestamp::from_millis(0));
        assert_eq!(r.days.get(&0), Some(&3));
        // Ten days on, with a retention reaching back five: day 0 and its entries go.
        r.add(
            (0..MAX_ENTRIES as i64 + 5).map(|i| entry(10 * day + i)),
            Timestamp::from_millis(5 * day),
        );
        assert_eq!(r.days.keys().copied().collect::<Vec<_>>(), [10]);
        assert_eq!(r.days[&10], MAX_ENTRIES as u64 + 5, "every access counts");
        assert_eq!(r.entries.len(), MAX_ENTRIES, "only the newest are kept");
        assert_eq!(r.entries[0].at, Timestamp::from_millis(10 * day + 5));
    }

    #[test]
    fn a_kind_is_named_as_in_json() {
        for kind in [AccessKind::Recall, AccessKind::Read] {
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::json!(kind.as_str()))
            );
        }
    }

    #[test]
    fn modes_parse_and_a_retention_is_checked() {
        assert_eq!(
            AccessLogMode::parse("queries").ok(),
            Some(AccessLogMode::Queries)
        );
        assert!(AccessLogMode::parse("all").is_err());
        let zero = AccessLog {
            retention_days: 0,
            ..AccessLog::default()
        };
        assert!(zero.validate().is_err());
        assert!(AccessLog::default().validate().is_ok());
    }
}
