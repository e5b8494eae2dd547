//! Access tracking off the recall path: recalls queue the ids they returned, and a
//! background thread records them in batches (one store write for many recalls).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, mpsc},
    thread::JoinHandle,
};

use muisti_core::{MemoryId, Store, Tenant, Timestamp};

enum Msg {
    Touch(Tenant, Vec<MemoryId>, Timestamp),
    Flush(mpsc::Sender<()>),
}

/// Records accesses in the background. Dropping it (with the last engine) writes what is
/// still queued before returning.
pub(crate) struct AccessRecorder {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl AccessRecorder {
    pub(crate) fn start(store: Arc<dyn Store>) -> Self {
        let (tx, rx) = mpsc::channel::<Msg>();
        let worker = std::thread::Builder::new()
            .name("muisti-access".into())
            .spawn(move || run(&*store, &rx))
            .ok();
        Self {
            tx: Mutex::new(Some(tx)),
            worker: Mutex::new(worker),
        }
    }

    /// Queues an access on each id (duplicates count twice).
    pub(crate) fn record(&self, tenant: &Tenant, ids: Vec<MemoryId>, at: Timestamp) {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = tx.as_ref() {
            let _ = tx.send(Msg::Touch(tenant.clone(), ids, at));
        }
    }

    /// Waits until everything queued so far is written.
    pub(crate) fn flush(&self) {
        let (done, wait) = mpsc::channel();
        {
            let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
            match tx.as_ref() {
                Some(tx) if tx.send(Msg::Flush(done)).is_ok() => {}
                _ => return,
            }
        }
        let _ = wait.recv();
    }
}

impl Drop for AccessRecorder {
    fn drop(&mut self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(worker) = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = worker.join();
        }
    }
}

/// How long accesses are gathered before they are written.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(250);

fn run(store: &dyn Store, rx: &mpsc::Receiver<Msg>) {
    while let Ok(first) = rx.recv() {
        let mut batch: HashMap<Tenant, (Vec<MemoryId>, Timestamp)> = HashMap::new();
        let mut waiting = Vec::new();
        // Gather for a short window: one commit for every recall in it. Each commit makes
        // every reader connection drop its page cache, so committing per recall would slow
        // the recalls themselves. A flush request ends the window at once.
        let deadline = std::time::Instant::now() + COALESCE;
        let mut next = Some(first);
        while let Some(msg) = next {
            match msg {
                Msg::Touch(tenant, ids, at) => {
                    let e = batch.entry(tenant).or_insert_with(|| (Vec::new(), at));
                    e.0.extend(ids);
                    e.1 = e.1.max(at);
                }
                Msg::Flush(done) => waiting.push(done),
            }
            next = if waiting.is_empty() {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                rx.recv_timeout(left).ok()
            } else {
                rx.try_recv().ok()
            };
        }
        for (tenant, (ids, at)) in batch {
            if let Err(e) = store.touch(&tenant, &ids, at) {
                tracing::warn!(kind = %e.kind(), error = %e, "recording accesses failed");
            }
        }
        for done in waiting {
            let _ = done.send(());
        }
    }
}
