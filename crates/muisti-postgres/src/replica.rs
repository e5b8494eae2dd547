//! Reads from a streaming replica (`replica=` in the URL), with read-your-writes and a bound
//! on staleness.
//!
//! Writes go to the primary. A read goes to the replica only when the replica has replayed
//! (`pg_last_wal_replay_lsn()`) a position the primary had (`pg_current_wal_insert_lsn()`)
//! after this handle's last write or primary read and at most `replica_lag_ms` ago (the
//! primary is asked about twice per that period, and after each write or primary read of
//! this handle; with 0, at every read's start): so a handle reads its own writes, no read
//! goes back in time, and a write of another handle or server is seen by every read that
//! starts `replica_lag_ms` after it. Otherwise (a replica behind, paused or unreachable; one
//! that failed is not asked again for a second) the read goes to the primary. Access counts,
//! which every recall writes, are not read back at once (`ReadBack::WithinTheBound`): they
//! reach reads within the bound, so that recalls keep reading from the replica. The replay
//! position read last is remembered, since it only grows: while it covers what a read
//! needs, the read costs no extra statement.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use muisti_core::Result;
use postgres::types::PgLsn;

use crate::pool::{Cached, Pool};

/// The default `replica_lag_ms`.
pub const DEFAULT_REPLICA_LAG_MS: usize = 1_000;

/// A replica and what this handle knows of the positions.
pub(crate) struct Replica {
    pub(crate) pool: Arc<Pool>,
    max_lag: Duration,
    /// The replica's replay position as last read.
    replayed: AtomicU64,
    /// A position the primary had and when it was asked (the question's start), and the
    /// instant before which no mark counts (this handle's last write).
    mark: Mutex<Mark>,
    /// Reads the replica served, and reads sent to the primary because it was behind or
    /// unreachable.
    pub(crate) served: AtomicU64,
    pub(crate) passed: AtomicU64,
    /// Until when a replica that failed is not asked (so that each read does not wait for
    /// its connection to time out).
    resting: Mutex<Option<Instant>>,
}

/// How long a replica that failed is not asked.
const REST: Duration = Duration::from_secs(1);

struct Mark {
    asked: Option<(Instant, u64)>,
    valid_from: Instant,
}

impl Replica {
    pub(crate) fn new(pool: Arc<Pool>, max_lag: Duration) -> Self {
        Self {
            pool,
            max_lag,
            replayed: AtomicU64::new(0),
            mark: Mutex::new(Mark {
                asked: None,
                valid_from: Instant::now(),
            }),
            served: AtomicU64::new(0),
            passed: AtomicU64::new(0),
            resting: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Mark> {
        self.mark.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks the replica answers and is one (in recovery).
    pub(crate) fn check(&self) -> Result<()> {
        let mut conn = self.pool.get()?;
        let in_recovery: bool = conn
            .query_one("SELECT pg_is_in_recovery()", &[])
            .map_err(|e| self.pool.err(&e))?
            .get(0);
        if in_recovery {
            Ok(())
        } else {
            Err(muisti_core::Error::invalid(
                "store url",
                format!(
                    "replica {} is not a replica (pg_is_in_recovery() is false): reads there \
                     could not be bounded by the primary's writes",
                    self.pool.target
                ),
            ))
        }
    }

    /// After the replica failed (a read, or its check): reads go to the primary for a while.
    pub(crate) fn failed(&self) {
        *self.resting.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now() + REST);
    }

    /// After a read the primary served: later reads on the replica must see at least what it
    /// saw (no read goes back in time), as after a write.
    pub(crate) fn read_primary(&self) {
        self.wrote();
    }

    /// After a write of this handle committed: no position the primary had before counts.
    pub(crate) fn wrote(&self) {
        self.lock().valid_from = Instant::now();
    }

    /// Whether a read starting now may go to the replica.
    pub(crate) fn usable(&self, primary: &Pool) -> bool {
        let resting = self
            .resting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some_and(|until| Instant::now() < until);
        let ok = !resting
            && self
                .mark(primary)
                .is_some_and(|need| self.replayed_at_least(need));
        let counter = if ok { &self.served } else { &self.passed };
        counter.fetch_add(1, Ordering::Relaxed);
        ok
    }

    fn replayed_at_least(&self, need: u64) -> bool {
        if self.replayed.load(Ordering::Relaxed) >= need {
            return true;
        }
        let replayed = self
            .pool
            .get()
            .and_then(|mut c| {
                c.query_one("SELECT pg_last_wal_replay_lsn()", &[])
                    .map_err(|e| self.pool.err(&e))
            })
            .map(|r| r.get::<_, Option<PgLsn>>(0).map(u64::from));
        let replayed = match replayed {
            Ok(at) => at,
            Err(e) => {
                tracing::debug!(error = %e, "postgres replica did not answer; the primary serves reads");
                self.failed();
                None
            }
        };
        replayed.is_some_and(|at| self.replayed.fetch_max(at, Ordering::Relaxed).max(at) >= need)
    }

    /// A position the primary had after this handle's last write and at most half the bound
    /// ago (at the read's start with a bound of 0); `None` when the primary does not answer.
    fn mark(&self, primary: &Pool) -> Option<u64> {
        {
            let mark = self.lock();
            if let Some((at, lsn)) = mark.asked
                && at >= mark.valid_from
                && !self.max_lag.is_zero()
                && at.elapsed() < self.max_lag / 2
            {
                return Some(lsn);
            }
        }
        let asked = Instant::now();
        let lsn = current_lsn(primary).ok()?;
        let mut mark = self.lock();
        if mark.asked.is_none_or(|(at, _)| at < asked) {
            mark.asked = Some((asked, lsn));
        }
        Some(lsn)
    }
}

/// The primary's WAL position now: where its next record goes, so past every commit made so
/// far, flushed or not (`synchronous_commit = off` acknowledges a commit before its flush).
fn current_lsn(primary: &Pool) -> Result<u64> {
    let mut conn = primary.get()?;
    let lsn: PgLsn = conn
        .query_one("SELECT pg_current_wal_insert_lsn()", &[])
        .map_err(|e| primary.err(&e))?
        .get(0);
    Ok(u64::from(lsn))
}
