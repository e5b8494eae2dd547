//! Time as the engine and the stores see it.
//!
//! Everything that depends on the current time (expiry, recency, retention, the lifecycle
//! jobs) reads it from a [`Clock`], never from the system directly, so tests move time
//! forward with a [`ManualClock`] instead of sleeping.

use std::{
    fmt,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use crate::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock (the default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// The system clock as a shared [`Clock`].
pub fn system_clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to: for tests of anything that depends on time.
#[derive(Debug)]
pub struct ManualClock {
    millis: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `at`.
    pub fn new(at: Timestamp) -> Self {
        Self {
            millis: AtomicI64::new(at.as_millis()),
        }
    }

    /// Moves the clock to `at` (backwards too).
    pub fn set(&self, at: Timestamp) {
        self.millis.store(at.as_millis(), Ordering::SeqCst);
    }

    /// Moves the clock forward by `by`, saturating.
    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        let mut cur = self.millis.load(Ordering::SeqCst);
        loop {
            let next = cur.saturating_add(ms);
            match self
                .millis
                .compare_exchange(cur, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return,
                Err(seen) => cur = seen,
            }
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_millis(self.millis.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(Timestamp::from_millis(1_000));
        assert_eq!(c.now(), Timestamp::from_millis(1_000));
        c.advance(Duration::from_secs(2));
        assert_eq!(c.now(), Timestamp::from_millis(3_000));
        c.set(Timestamp::from_millis(5));
        assert_eq!(c.now(), Timestamp::from_millis(5));
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Timestamp::from_millis(i64::MAX));
    }
}
