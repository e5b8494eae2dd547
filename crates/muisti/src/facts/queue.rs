//! Extraction in the background, debounced: a conversation's messages gather per user and
//! conversation and are read together once [`Debounce::messages`] have gathered or the
//! conversation has been quiet for [`Debounce::quiet`], on a thread of the queue's own, so
//! a chat never waits for it. Dropping the queue (or [`ExtractionQueue::flush`]) reads
//! what is gathered before it returns.
//!
//! What is gathered lives in this process until it is read: a process killed in between
//! loses those messages' extraction (the messages themselves are stored by whoever sent
//! them, so a later `add_messages` can read them again).

use std::{
    collections::BTreeMap,
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

use muisti_core::Result;

use super::{AddReport, AddRequest};

/// What the queue hands a gathered conversation to: the engine, which remembers it
/// ([`Engine::add_messages`](crate::Engine::add_messages)) in its tenant.
pub trait Learner: Send + Sync {
    /// The tenant the conversations are remembered in (they are gathered per tenant).
    fn tenant(&self) -> &muisti_core::Tenant;

    /// Remembers a conversation.
    fn add_messages(&self, req: &AddRequest) -> Result<AddReport>;
}

/// When gathered messages are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Debounce {
    /// Read once this many messages have gathered (at least 1).
    pub messages: usize,
    /// Read once the conversation has been quiet this long.
    pub quiet: Duration,
}

impl Default for Debounce {
    /// 10 messages or 30 seconds of quiet.
    fn default() -> Self {
        Self {
            messages: 10,
            quiet: Duration::from_secs(30),
        }
    }
}

/// What the queue reports after each read (for logs and metrics).
pub type OnRead = Box<dyn Fn(&AddRequest, &Result<AddReport>) + Send + Sync>;

struct Gathered {
    learner: Box<dyn Learner>,
    req: AddRequest,
    last: Instant,
}

#[derive(Default)]
struct State {
    pending: BTreeMap<(String, String, String, String), Gathered>,
    stopping: bool,
    /// Reads under way (so `flush` waits for them too).
    running: usize,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    debounce: Debounce,
    on_read: OnRead,
}

/// A debounced background extraction queue (module docs). Cheap to share behind an `Arc`.
pub struct ExtractionQueue {
    shared: Arc<Shared>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl ExtractionQueue {
    /// Starts the queue's thread.
    pub fn start(debounce: Debounce, on_read: OnRead) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            debounce: Debounce {
                messages: debounce.messages.max(1),
                quiet: debounce.quiet,
            },
            on_read,
        });
        let worker = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("muisti-extract".into())
                .spawn(move || run(&shared))
                .ok()
        };
        Self {
            shared,
            worker: Mutex::new(worker),
        }
    }

    /// Gathers `req`'s messages (with inference) for `learner`'s tenant; returns at once.
    pub fn push<L: Learner + Clone + 'static>(&self, learner: &L, req: AddRequest) {
        let key = (
            learner.tenant().as_str().to_owned(),
            req.namespace.as_str().to_owned(),
            req.user_id.clone(),
            req.session_id.clone().unwrap_or_default(),
        );
        let mut state = lock(&self.shared.state);
        let now = Instant::now();
        match state.pending.get_mut(&key) {
            Some(g) => {
                g.req.messages.extend(req.messages);
                g.last = now;
            }
            None => {
                state.pending.insert(
                    key,
                    Gathered {
                        learner: Box::new(learner.clone()),
                        req: AddRequest { infer: true, ..req },
                        last: now,
                    },
                );
            }
        }
        self.shared.wake.notify_all();
    }

    /// How many conversations have messages waiting.
    pub fn waiting(&self) -> usize {
        lock(&self.shared.state).pending.len()
    }

    /// Reads everything gathered now and waits until every read under way is done.
    pub fn flush(&self) {
        let all: Vec<Gathered> = {
            let mut state = lock(&self.shared.state);
            state.running += 1;
            std::mem::take(&mut state.pending).into_values().collect()
        };
        for g in all {
            read(&self.shared, g);
        }
        let mut state = lock(&self.shared.state);
        state.running -= 1;
        while state.running > 0 {
            state = self
                .shared
                .wake
                .wait_timeout(state, Duration::from_millis(50))
                .map(|(s, _)| s)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}

impl Drop for ExtractionQueue {
    fn drop(&mut self) {
        lock(&self.shared.state).stopping = true;
        self.shared.wake.notify_all();
        let worker = self
            .worker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(w) = worker {
            let _ = w.join();
        }
        self.flush();
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The queue's thread: reads each conversation that is due, sleeps until the next one is.
fn run(shared: &Shared) {
    let mut state = lock(&shared.state);
    loop {
        if state.stopping {
            return;
        }
        let now = Instant::now();
        let due: Vec<_> = state
            .pending
            .iter()
            .filter(|(_, g)| {
                g.req.messages.len() >= shared.debounce.messages
                    || now.duration_since(g.last) >= shared.debounce.quiet
            })
            .map(|(k, _)| k.clone())
            .collect();
        if due.is_empty() {
            let next = state
                .pending
                .values()
                .map(|g| (g.last + shared.debounce.quiet).saturating_duration_since(now))
                .min()
                .unwrap_or(Duration::from_secs(3600));
            state = shared
                .wake
                .wait_timeout(state, next.max(Duration::from_millis(5)))
                .map(|(s, _)| s)
                .unwrap_or_else(|e| e.into_inner().0);
            continue;
        }
        let batch: Vec<Gathered> = due.iter().filter_map(|k| state.pending.remove(k)).collect();
        state.running += 1;
        drop(state);
        for g in batch {
            read(shared, g);
        }
        state = lock(&shared.state);
        state.running -= 1;
        shared.wake.notify_all();
    }
}

fn read(shared: &Shared, g: Gathered) {
    let result = g.learner.add_messages(&g.req);
    if let Err(e) = &result {
        tracing::warn!(kind = %e.kind(), error = %e, user = %g.req.user_id, "background extraction failed");
    }
    (shared.on_read)(&g.req, &result);
}
