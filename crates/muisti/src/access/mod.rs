//! Access tracking off the recall path: recalls queue the ids they returned, and a
//! background thread records them in batches (one store write for many recalls), and
//! with the access log on ([`AccessLog`]) each access itself.

mod log;

pub use log::{
    AccessEntry, AccessKind, AccessLog, AccessLogMode, MAX_ENTRIES, MAX_QUERY_CHARS,
    MAX_RETENTION_DAYS, MemoryAccesses,
};
pub(crate) use log::{
    AccessLogFollower, AccessRecord, Logged, Reach, accesses_of, days_of, forget_namespace,
    forget_user,
};

use std::{
    collections::HashMap,
    sync::{Arc, Condvar, Mutex, MutexGuard, mpsc},
    thread::JoinHandle,
};

use muisti_core::{MemoryId, Store, Tenant, Timestamp};

/// What the recalls queued and the worker has not taken yet.
#[derive(Default)]
struct Queue {
    /// Per tenant, the ids accessed (duplicates count twice) and the latest access time.
    batch: HashMap<Tenant, (Vec<MemoryId>, Timestamp)>,
    /// Per tenant, the accesses for the log (empty with the log off).
    log: HashMap<Tenant, Vec<Logged>>,
    /// How many accesses `log` holds, and how many were dropped for want of room since
    /// the last write ([`MAX_PENDING`]).
    logged: usize,
    dropped: u64,
    /// Callers waiting until what they queued is written.
    flushes: Vec<mpsc::Sender<()>>,
    /// Emptied id lists of written batches, kept with their room: a busy window queues
    /// hundreds of kilobytes of ids, and growing a fresh list each window costs the recalls
    /// a reallocation (and fresh pages from the system) every doubling.
    spare: Vec<Vec<MemoryId>>,
    /// Set when the recorder is dropped: the worker writes what is left and ends.
    closed: bool,
}

impl Queue {
    fn is_empty(&self) -> bool {
        self.batch.is_empty() && self.log.is_empty() && self.flushes.is_empty()
    }
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the worker: for the first access of a window, a flush, or the end.
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Records accesses in the background. Dropping it (with the last engine) writes what is
/// still queued before returning.
pub(crate) struct AccessRecorder {
    shared: Arc<Shared>,
    /// What the log keeps.
    config: AccessLog,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl AccessRecorder {
    pub(crate) fn start(store: Arc<dyn Store>, config: AccessLog) -> Self {
        let shared = Arc::new(Shared::default());
        let worker = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("muisti-access".into())
                .spawn(move || run(&*store, &shared, &config))
                .ok()
        };
        if worker.is_none() {
            // Without a worker nothing would write the queue: accesses are not recorded.
            shared.lock().closed = true;
        }
        Self {
            shared,
            config,
            worker: Mutex::new(worker),
        }
    }

    /// What the log keeps.
    pub(crate) fn config(&self) -> &AccessLog {
        &self.config
    }

    /// Queues an access on each id (duplicates count twice), and `log` for the access log.
    /// Only the first access of a window wakes the worker: the others are a push under a
    /// lock, no system call.
    pub(crate) fn record(
        &self,
        tenant: &Tenant,
        ids: Vec<MemoryId>,
        log: Vec<Logged>,
        at: Timestamp,
    ) {
        let mut q = self.shared.lock();
        if q.closed {
            return;
        }
        let first = q.is_empty();
        let Queue {
            batch,
            spare,
            log: queued,
            logged,
            dropped,
            ..
        } = &mut *q;
        if !ids.is_empty() {
            let e = batch
                .entry(tenant.clone())
                .or_insert_with(|| (spare.pop().unwrap_or_default(), at));
            e.0.extend(ids);
            e.1 = e.1.max(at);
        }
        if !log.is_empty() {
            // A store slower than the recalls loses log entries, never the recalls' time
            // or the process's memory.
            if *logged + log.len() > MAX_PENDING {
                *dropped += log.len() as u64;
            } else {
                *logged += log.len();
                queued.entry(tenant.clone()).or_default().extend(log);
            }
        }
        drop(q);
        if first {
            self.shared.wake.notify_one();
        }
    }

    /// Waits until everything queued so far is written.
    pub(crate) fn flush(&self) {
        let (done, wait) = mpsc::channel();
        {
            let mut q = self.shared.lock();
            if q.closed {
                return;
            }
            q.flushes.push(done);
        }
        self.shared.wake.notify_one();
        let _ = wait.recv();
    }
}

impl Drop for AccessRecorder {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(worker) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = worker.join();
        }
    }
}

/// How many emptied id lists the queue keeps ([`Queue::spare`]).
const SPARE_LISTS: usize = 4;

/// The most ids a kept list has room for (one grown past it by a burst is dropped): with
/// [`SPARE_LISTS`], at most 16 MiB held.
const SPARE_IDS_MAX: usize = 1 << 18;

/// The most accesses waiting for the log: past it, a window's further accesses are left
/// out of the log (and counted in a warning); their counts are still recorded.
const MAX_PENDING: usize = 1 << 16;

/// How long accesses are gathered before they are written.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(250);

fn run(store: &dyn Store, shared: &Shared, config: &AccessLog) {
    loop {
        let mut q = shared.lock();
        while q.is_empty() && !q.closed {
            q = shared.wake.wait(q).unwrap_or_else(|p| p.into_inner());
        }
        if q.is_empty() {
            return;
        }
        // Gather for a short window: one commit for every recall in it. Each commit makes
        // every reader connection drop its page cache, so committing per recall would slow
        // the recalls themselves. A flush request or the end closes the window at once.
        let deadline = std::time::Instant::now() + COALESCE;
        while q.flushes.is_empty() && !q.closed {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            q = shared
                .wake
                .wait_timeout(q, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let batch = std::mem::take(&mut q.batch);
        let log = std::mem::take(&mut q.log);
        let dropped = std::mem::take(&mut q.dropped);
        q.logged = 0;
        let waiting = std::mem::take(&mut q.flushes);
        drop(q);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "access log: the store fell behind; accesses left out"
            );
        }
        let mut emptied = Vec::new();
        for (tenant, (mut ids, at)) in batch {
            if let Err(e) = store.touch(&tenant, &ids, at) {
                tracing::warn!(kind = %e.kind(), error = %e, "recording accesses failed");
            }
            if ids.capacity() <= SPARE_IDS_MAX {
                ids.clear();
                emptied.push(ids);
            }
        }
        for (tenant, log) in log {
            if let Err(e) = log::write(store, &tenant, log, config) {
                tracing::warn!(kind = %e.kind(), error = %e, "writing the access log failed");
            }
        }
        {
            let mut q = shared.lock();
            q.spare.extend(emptied);
            q.spare.truncate(SPARE_LISTS);
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use muisti_core::{Key, Locator, Namespace, Partition, Put};

    use super::*;

    /// Accesses queued over several windows are each counted once: a list kept from a
    /// written window starts the next one empty.
    #[test]
    fn every_window_counts_its_own_accesses() {
        let store: Arc<dyn Store> = Arc::new(muisti_store::MemStore::new());
        let p = Partition::of(Namespace::default_ns());
        let put = |k: &str| {
            store
                .put(Put::new(p.clone(), Some(Key::new(k).expect("key")), "x"))
                .expect("put")
                .memory
                .id
        };
        let (a, b) = (put("a"), put("b"));
        let recorder = AccessRecorder::start(Arc::clone(&store), AccessLog::default());
        let now = Timestamp::now();
        recorder.record(&p.tenant, vec![a, a, b], Vec::new(), now);
        recorder.flush();
        assert_eq!(
            recorder.shared.lock().spare.len(),
            1,
            "the written list is kept"
        );
        recorder.record(&p.tenant, vec![b], Vec::new(), now);
        recorder.flush();
        let count = |id| {
            store
                .get(&Locator::Id {
                    tenant: p.tenant.clone(),
                    id,
                })
                .expect("get")
                .expect("there")
                .access_count
        };
        assert_eq!((count(a), count(b)), (2, 2));
    }
}
