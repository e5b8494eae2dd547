//! Deleted text leaves the files soon: `secure_delete` zeroes a deleted record's space in the
//! database file, but the write-ahead log still holds the pages as they were before the
//! delete until a checkpoint resets it. After a delete (or flush, or purge) commits, a
//! background thread checkpoints with `TRUNCATE` once deletes have been quiet for
//! [`QUIET`], and never later than [`AT_MOST`] after the first one it has not yet covered;
//! a checkpoint that readers hold up is tried again. So a deleted record's text is gone
//! from the database file, its `-wal` and its `-shm` within about [`AT_MOST`] while the
//! process runs; [`Eraser::now`] checkpoints at once (a user's delete-all).

use std::{
    sync::{Arc, Condvar, Mutex, Weak},
    time::{Duration, Instant},
};

use rusqlite::Connection;

/// How long deletes must be quiet before the checkpoint.
pub(crate) const QUIET: Duration = Duration::from_millis(300);
/// The latest the checkpoint comes after a delete it covers (while readers let it).
pub(crate) const AT_MOST: Duration = Duration::from_secs(2);
/// How long a checkpoint waits for readers before it is tried again later: short, since it
/// holds this process's writer meanwhile.
const WAIT_FOR_READERS: Duration = Duration::from_millis(200);
/// The connections' usual busy timeout, restored after a checkpoint.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Pending {
    /// The first and the last delete not yet checkpointed.
    since: Option<(Instant, Instant)>,
    /// Whether the thread runs.
    running: bool,
    /// The store is gone: the thread ends.
    closed: bool,
}

/// The checkpoints after deletes of one store.
#[derive(Default)]
pub(crate) struct Eraser {
    pending: Mutex<Pending>,
    wake: Condvar,
}

impl Eraser {
    /// A delete committed on `writer`: a checkpoint is due (the thread starts on the first).
    pub(crate) fn deleted(self: &Arc<Self>, writer: &Arc<Mutex<Connection>>) {
        let Ok(mut p) = self.pending.lock() else {
            return;
        };
        let now = Instant::now();
        p.since = Some(p.since.map_or((now, now), |(first, _)| (first, now)));
        if !p.running {
            p.running = true;
            let me = Arc::clone(self);
            let writer = Arc::downgrade(writer);
            let started = std::thread::Builder::new()
                .name("muisti-sqlite-erase".into())
                .spawn(move || me.run(writer));
            if started.is_err() {
                p.running = false;
            }
        }
        self.wake.notify_all();
    }

    /// Checkpoints now (waiting briefly for readers); what it cannot finish is left to the
    /// thread. Returns whether the log was emptied.
    pub(crate) fn now(&self, writer: &Mutex<Connection>) -> bool {
        let conn = writer.lock().unwrap_or_else(|p| p.into_inner());
        let done = checkpoint(&conn);
        if done && let Ok(mut p) = self.pending.lock() {
            p.since = None;
        }
        done
    }

    /// Ends the thread (the store is dropped).
    pub(crate) fn close(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.closed = true;
        }
        self.wake.notify_all();
    }

    fn run(&self, writer: Weak<Mutex<Connection>>) {
        let Ok(mut p) = self.pending.lock() else {
            return;
        };
        loop {
            if p.closed {
                return;
            }
            let Some((first, last)) = p.since else {
                p = match self.wake.wait(p) {
                    Ok(p) => p,
                    Err(_) => return,
                };
                continue;
            };
            let due = (last + QUIET).min(first + AT_MOST);
            let now = Instant::now();
            if now < due {
                p = match self.wake.wait_timeout(p, due - now) {
                    Ok((p, _)) => p,
                    Err(_) => return,
                };
                continue;
            }
            p.since = None;
            drop(p);
            let done = match writer.upgrade() {
                Some(w) => {
                    let conn = w.lock().unwrap_or_else(|e| e.into_inner());
                    checkpoint(&conn)
                }
                None => return,
            };
            p = match self.pending.lock() {
                Ok(p) => p,
                Err(_) => return,
            };
            if !done {
                // Readers held it up: again shortly, as if a delete had just come.
                let again = Instant::now();
                p.since = Some(
                    p.since
                        .map_or((again, again), |(f, _)| (f.min(again), again)),
                );
            }
        }
    }
}

/// A `TRUNCATE` checkpoint: every page of the log written to the database and the log
/// emptied. `false` when readers kept it from finishing within [`WAIT_FOR_READERS`].
fn checkpoint(conn: &Connection) -> bool {
    let _ = conn.busy_timeout(WAIT_FOR_READERS);
    let done = conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|busy| busy == 0);
    let _ = conn.busy_timeout(BUSY_TIMEOUT);
    match done {
        Ok(done) => done,
        Err(e) => {
            tracing::debug!(error = %e, "checkpoint after a delete failed; tried again later");
            false
        }
    }
}
