//! The copies of a store: each partition's (or one user's rows of it), loaded once however
//! many ask at a time, what a load missed applied before it is read, within a memory budget
//! (least recently used dropped first).

use super::*;

/// Which rows of a partition a copy holds: all of them, or one user's (enough for every query
/// that filters by that user, and read in milliseconds where a large partition takes
/// seconds).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Rows {
    All,
    User(String),
}

pub(super) type Key = (Partition, Rows);

/// What a copy being loaded missed: this process's writes and accesses committed after the
/// load's snapshot, applied to the copy before anyone reads it.
pub(super) enum Missed {
    Write(Box<Fresh>),
    Access(Vec<MemoryId>),
    Delete(MemoryId),
}

/// A copy being loaded.
pub(super) struct Loading {
    pub(super) ticket: u64,
    /// Whether the load's snapshot is being taken or taken: only then are changes recorded
    /// (the ones before are in the snapshot).
    pub(super) armed: bool,
    pub(super) missed: Vec<Missed>,
    pub(super) done: Arc<Done>,
    /// The bytes held for it in the budget while it loads (background loads).
    pub(super) reserved: usize,
}

/// A load's outcome, for the callers that wait for it instead of loading the same rows.
#[derive(Default)]
pub(crate) struct Done {
    /// `None` while loading; then the copy, or `None` if the load failed or was cancelled.
    pub(super) slot: Mutex<Option<Option<Arc<Part>>>>,
    pub(super) ready: Condvar,
}

#[derive(Default)]
pub(super) struct State {
    /// `PRAGMA data_version` of the writer connection when the cache was last validated.
    pub(super) data_version: Option<i64>,
    pub(super) parts: HashMap<Key, Arc<Part>>,
    pub(super) loading: HashMap<Key, Loading>,
    pub(super) next_ticket: u64,
    /// Partitions whose copy of every row was asked for in the background (once until
    /// their copies are dropped).
    pub(super) warming: std::collections::HashSet<Partition>,
}

/// The share of the budget the decoded records get on top of it (one eighth: 256 MiB of the
/// default budget, about 350,000 records of a sentence or two). At one 32nd the records
/// recalls read in a store of 100,000 memories did not fit, each overflow dropped a quarter
/// of them, and a server answered 2,282 recalls a second instead of 3,135 with a larger
/// peak (about 1,160 MiB against 750; `bench http`, medians of three, docs/benchmarks.md).
pub(super) const RECORDS_SHARE: usize = 8;

/// The in-memory copies, within a memory budget: the least recently used copies are dropped
/// to make room, a copy larger than the whole budget answers the query that loaded it and is
/// not kept, and a graph is built only where it fits.
pub(crate) struct PartitionCaches {
    pub(super) state: Mutex<State>,
    /// Decoded records, kept in step by the same hooks as the copies.
    pub(super) records: RecordCache,
    pub(super) budget: usize,
    /// Set when a copy grew (its graph was built): the budget is enforced on the next look-up.
    pub(super) grown: Arc<AtomicBool>,
    pub(super) clock: AtomicU64,
}

/// A load in progress; dropped unfinished (an error), it is abandoned.
pub(crate) struct LoadTicket<'a> {
    pub(super) caches: &'a PartitionCaches,
    pub(super) key: Key,
    pub(super) ticket: u64,
    pub(super) done: Arc<Done>,
    pub(super) finished: bool,
}

impl Rows {
    /// The copy a query with this user filter reads (when no copy of every row is loaded).
    pub(super) fn for_user(user: Option<&str>) -> Self {
        user.map_or(Rows::All, |u| Rows::User(u.to_owned()))
    }

    /// Whether a record of this user belongs in such a copy.
    pub(super) fn holds(&self, user: Option<&str>) -> bool {
        match self {
            Rows::All => true,
            Rows::User(u) => user == Some(u.as_str()),
        }
    }
}

impl Done {
    pub(super) fn set(&self, part: Option<Arc<Part>>) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(part);
        self.ready.notify_all();
    }

    /// The loaded copy, or `None` if the load failed or was cancelled (then load again).
    pub(crate) fn wait(&self) -> Option<Arc<Part>> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(out) = slot.as_ref() {
                return out.clone();
            }
            slot = self.ready.wait(slot).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl State {
    /// Whether no copy is kept or loading (then writes and accesses concern none).
    pub(super) fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.loading.is_empty()
    }

    /// Drops every copy and cancels every load that `drop` selects.
    pub(super) fn drop_where(&mut self, drop: impl Fn(&Key) -> bool) {
        self.parts.retain(|k, _| !drop(k));
        self.warming.retain(|p| !drop(&(p.clone(), Rows::All)));
        self.loading.retain(|k, l| {
            let keep = !drop(k);
            if !keep {
                l.done.set(None);
            }
            keep
        });
    }
}

impl LoadTicket<'_> {
    /// The rows to load.
    pub(crate) fn key(&self) -> &Key {
        &self.key
    }

    /// This load's entry, unless it was cancelled (dropped, or replaced by a later load).
    pub(super) fn entry<'s>(&self, s: &'s mut State) -> Option<&'s mut Loading> {
        s.loading
            .get_mut(&self.key)
            .filter(|l| l.ticket == self.ticket)
    }

    /// Holds `bytes` of the budget for the copy while it loads: the copies kept meanwhile
    /// make room for it (least recently used first), so loading it does not take the cache
    /// past the budget.
    pub(crate) fn reserve(&self, bytes: usize) {
        let mut s = self.caches.lock();
        if let Some(l) = self.entry(&mut s) {
            l.reserved = bytes;
        }
        self.caches.enforce(&mut s);
    }

    /// Starts recording the changes the load misses. Call while no write of this process can
    /// commit (holding the writer connection), right before the load's snapshot is taken.
    pub(crate) fn arm(&self) {
        if let Some(l) = self.entry(&mut self.caches.lock()) {
            l.armed = true;
        }
    }

    /// The loaded copy with what it missed applied, kept if it was not cancelled meanwhile
    /// and fits the budget.
    pub(crate) fn finish(mut self, mut cache: PartitionCache) -> Arc<Part> {
        self.finished = true;
        let caches = self.caches;
        let mut s = caches.lock();
        if self.entry(&mut s).is_none() {
            // Cancelled: the copy answers the caller's query (its snapshot is older than
            // whatever cancelled it) and is not kept.
            return Arc::new(Part::new(cache, caches.budget, &caches.grown));
        }
        let Some(loading) = s.loading.remove(&self.key) else {
            unreachable!("checked above")
        };
        for m in loading.missed {
            match m {
                // Every write to the partition was recorded: the copy takes those of its
                // rows (a one-user copy also the records that moved to another user).
                Missed::Write(f) => {
                    if f.concerns(&self.key.1) {
                        cache.replace(*f);
                    }
                }
                Missed::Access(ids) => cache.count_access(&ids),
                Missed::Delete(id) => {
                    cache.kill(&id);
                }
            }
        }
        let part = Arc::new(Part::new(cache, caches.budget, &caches.grown));
        part.used(caches.tick());
        caches.keep(&mut s, self.key.clone(), &part);
        loading.done.set(Some(Arc::clone(&part)));
        part
    }
}

impl Drop for LoadTicket<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut s = self.caches.lock();
        if self.entry(&mut s).is_some() {
            s.loading.remove(&self.key);
        }
        self.done.set(None);
    }
}

impl PartitionCaches {
    /// Copies within `budget` bytes (estimated).
    pub(crate) fn new(budget: usize) -> Self {
        Self {
            state: Mutex::default(),
            records: RecordCache::new(budget / RECORDS_SHARE),
            budget,
            grown: Arc::default(),
            clock: AtomicU64::new(0),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps `part` under `key` if it fits the budget, dropping the least recently used
    /// copies to make room; a copy of every row replaces the partition's one-user copies.
    pub(super) fn keep(&self, s: &mut State, key: Key, part: &Arc<Part>) {
        if key.1 == Rows::All {
            s.parts.retain(|(p, _), _| p != &key.0);
        }
        if part.bytes() > self.budget {
            return;
        }
        part.kept.store(true, Ordering::Relaxed);
        s.parts.insert(key, Arc::clone(part));
        self.enforce(s);
    }

    /// Drops the least recently used copies until the rest fit the budget.
    pub(super) fn enforce(&self, s: &mut State) {
        let mut total: usize = s.parts.values().map(|p| p.bytes()).sum::<usize>()
            + s.loading.values().map(|l| l.reserved).sum::<usize>();
        while total > self.budget {
            let Some(oldest) = s
                .parts
                .iter()
                .min_by_key(|(_, p)| p.last_used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(p) = s.parts.remove(&oldest) {
                p.kept.store(false, Ordering::Relaxed);
                total = total.saturating_sub(p.bytes());
            }
        }
    }

    /// The budget, in bytes.
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Whether the background load of `p`'s copy of every row is to start now (`false` if
    /// it was already asked for).
    pub(crate) fn start_warming(&self, p: &Partition) -> bool {
        self.lock().warming.insert(p.clone())
    }

    /// Whether the copy of every row of `p` is kept.
    pub(crate) fn holds_all(&self, p: &Partition) -> bool {
        self.lock().parts.contains_key(&(p.clone(), Rows::All))
    }

    /// What the kept copies and the decoded records hold (estimated), by part.
    pub(crate) fn memory(&self) -> crate::CacheMemory {
        let parts: Vec<Arc<Part>> = self.lock().parts.values().cloned().collect();
        let (mut copies, mut graphs) = (super::CopyMemory::default(), 0);
        for part in parts {
            let (copy, graph) = part.memory();
            copies += copy;
            graphs += graph;
        }
        let (records, records_budget) = self.records.bytes();
        crate::CacheMemory {
            budget: self.budget,
            copies,
            graphs,
            records,
            records_budget,
        }
    }

    /// The bytes the kept copies hold (estimated), graphs included.
    pub(crate) fn bytes(&self) -> usize {
        self.lock().parts.values().map(|p| p.bytes()).sum()
    }

    /// Forgets one partition's copies (after this process deleted from it), and the
    /// decoded records.
    pub(crate) fn invalidate(&self, p: &Partition) {
        self.records.clear();
        self.lock().drop_where(|(q, _)| q == p);
    }

    /// Forgets everything.
    pub(crate) fn invalidate_all(&self) {
        self.records.clear();
        self.lock().drop_where(|_| true);
    }

    /// The decoded records, kept in step with this process's writes by the hooks here.
    pub(crate) fn records(&self) -> &RecordCache {
        &self.records
    }

    /// Forgets everything if another process wrote since `data_version` (`None`: not
    /// checked this time). The store checks once when it opens, before anything is kept, so
    /// that the writes of this process kept before its first read are not forgotten then.
    pub(crate) fn validate(&self, data_version: Option<i64>) {
        let mut s = self.lock();
        self.validate_locked(&mut s, data_version);
    }

    pub(super) fn validate_locked(&self, s: &mut State, data_version: Option<i64>) {
        if let Some(v) = data_version
            && s.data_version != Some(v)
        {
            s.data_version = Some(v);
            s.drop_where(|_| true);
            self.records.clear();
        }
    }

    /// Adds one access at `at` to each id in the tenant's copies and decoded records. Call
    /// while the writer connection is still held (after the commit), so loads record exactly
    /// the accesses they missed.
    pub(crate) fn count_access(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) {
        self.records.touch(tenant, ids, at);
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        for (_, part) in s.parts.iter().filter(|((p, _), _)| &p.tenant == tenant) {
            part.read().count_access(ids);
        }
        for (_, l) in s
            .loading
            .iter_mut()
            .filter(|((p, _), l)| &p.tenant == tenant && l.armed)
        {
            l.missed.push(Missed::Access(ids.to_vec()));
        }
    }

    /// Applies committed writes of this process to the copies that hold their records, and
    /// records them for the loads that missed them. Call while the writer connection is still
    /// held, so copies see writes in commit order.
    pub(crate) fn apply(&self, fresh: Vec<Fresh>) {
        self.records.keep(fresh.iter().map(|f| &*f.memory));
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        let mut by_key: HashMap<Key, Vec<Fresh>> = HashMap::new();
        for f in fresh {
            // The copy of every row, its user's, and the one of the user of the record it
            // replaced (its user changed).
            let users = [
                f.row.owner.user_id.clone(),
                f.replaced_user.clone().flatten(),
            ];
            let keys = std::iter::once(Rows::All)
                .chain(users.into_iter().flatten().map(Rows::User))
                .map(|rows| (f.partition.clone(), rows));
            for key in keys {
                if s.parts.contains_key(&key) && f.concerns(&key.1) {
                    by_key.entry(key).or_default().push(f.clone());
                }
            }
            for (_, l) in s
                .loading
                .iter_mut()
                .filter(|((p, _), l)| p == &f.partition && l.armed)
            {
                l.missed.push(Missed::Write(Box::new(f.clone())));
            }
        }
        for (key, fresh) in by_key {
            if let Some(part) = s.parts.get(&key)
                && !part.apply(fresh)
            {
                s.parts.remove(&key);
            }
        }
    }

    /// Applies a committed delete of this process to the copies that hold the record (the
    /// partition's and its user's), in place, and records it for the loads that missed it.
    /// Call while the writer connection is still held, as [`PartitionCaches::apply`].
    pub(crate) fn delete(&self, p: &Partition, id: MemoryId, user: Option<&str>) {
        self.records.forget(&[id]);
        let mut s = self.lock();
        if s.is_empty() {
            return;
        }
        let keys = std::iter::once(Rows::All)
            .chain(user.map(|u| Rows::User(u.to_owned())))
            .map(|rows| (p.clone(), rows));
        for key in keys {
            if let Some(part) = s.parts.get(&key)
                && !part.kill(&id)
            {
                s.parts.remove(&key);
            }
        }
        for (_, l) in s.loading.iter_mut().filter(|((q, _), l)| q == p && l.armed) {
            l.missed.push(Missed::Delete(id));
        }
    }

    /// The partition's copies.
    pub(crate) fn peek(&self, p: &Partition) -> Vec<Arc<Part>> {
        self.lock()
            .parts
            .iter()
            .filter(|((q, _), _)| q == p)
            .map(|(_, part)| Arc::clone(part))
            .collect()
    }

    /// The rescoring fields of these ids from the partition's copies: per id, `None` if no
    /// copy holds it, else its fields if live.
    pub(crate) fn rank_fields(
        &self,
        p: &Partition,
        ids: &[MemoryId],
        now: Timestamp,
    ) -> Vec<Option<Option<RankFields>>> {
        // The copy of every row, or the one-user copies most recently used first (the
        // search that found these ids used one of them).
        let all = self.lock().parts.get(&(p.clone(), Rows::All)).cloned();
        let parts = match all {
            Some(all) => vec![all],
            None => {
                let mut parts = self.peek(p);
                parts.sort_by_key(|c| std::cmp::Reverse(c.last_used.load(Ordering::Relaxed)));
                parts
            }
        };
        ids.iter()
            .map(|id| parts.iter().find_map(|c| c.read().rank_field(id, now)))
            .collect()
    }

    /// The kept copy that answers a query over `p` filtered by `user`, if one is loaded
    /// (none is loaded for it), checking first as [`PartitionCaches::lookup`] does.
    pub(crate) fn loaded(
        &self,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Option<Arc<Part>> {
        self.kept(&mut self.lock(), p, user, data_version)
    }

    /// [`PartitionCaches::loaded`] on the locked state.
    pub(super) fn kept(
        &self,
        s: &mut State,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Option<Arc<Part>> {
        self.validate_locked(s, data_version);
        if self.grown.swap(false, Ordering::Relaxed) {
            self.enforce(s);
        }
        let all = (p.clone(), Rows::All);
        let key = (p.clone(), Rows::for_user(user));
        [&all, &key].into_iter().find_map(|k| {
            let part = s.parts.get(k)?;
            part.used(self.tick());
            Some(Arc::clone(part))
        })
    }

    /// The copy that answers a query over `p` filtered by `user` (the partition's copy of
    /// every row when loaded, else the user's), checking first that no other process wrote
    /// since `data_version` (`None`: not checked this time).
    pub(crate) fn lookup(
        &self,
        p: &Partition,
        user: Option<&str>,
        data_version: Option<i64>,
    ) -> Lookup<'_> {
        let mut s = self.lock();
        if let Some(part) = self.kept(&mut s, p, user, data_version) {
            return Lookup::Ready(part);
        }
        let key = (p.clone(), Rows::for_user(user));
        if let Some(l) = s.loading.get(&key) {
            return Lookup::Wait(Arc::clone(&l.done));
        }
        s.next_ticket += 1;
        let ticket = s.next_ticket;
        let done = Arc::new(Done::default());
        s.loading.insert(
            key.clone(),
            Loading {
                ticket,
                armed: false,
                missed: Vec::new(),
                done: Arc::clone(&done),
                reserved: 0,
            },
        );
        Lookup::Load(LoadTicket {
            caches: self,
            key,
            ticket,
            done,
            finished: false,
        })
    }
}
