//! The one retry loop of muisti's HTTP clients (embedding services and the agent's model
//! providers): back-off that doubles and saturates, a server's `Retry-After` honoured within
//! bounds, and a fixed number of attempts.

use std::{thread, time::Duration};

/// The longest single wait between attempts, whatever the server asks.
pub const MAX_WAIT: Duration = Duration::from_secs(60);

/// How often and how patiently to try.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts in all (at least 1).
    pub max_attempts: u32,
    /// The wait after the first failure; doubled after each further one.
    pub first: Duration,
}

/// What one attempt came to.
#[derive(Debug)]
pub enum Attempt<T, E, R> {
    /// Done: return this.
    Done(T),
    /// Failed for good: return this error without trying again.
    Failed(E),
    /// Failed, worth another try: `last` describes it (kept for the final error), `after`
    /// is the server's `Retry-After` if it gave one.
    Retry {
        /// What went wrong.
        last: R,
        /// The wait the server asked for.
        after: Option<Duration>,
    },
}

/// The wait a `Retry-After` header asks for, in seconds (fractions allowed), at most an
/// hour; `None` for anything that is not a finite, non-negative number (`-1`, `inf`, a date).
/// The one reading of the header for every HTTP client of muisti.
pub fn retry_after(value: &str) -> Option<Duration> {
    let secs = value.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

/// Runs `attempt(n)` (n from 1) until it is done or failed for good, or `policy.max_attempts`
/// attempts asked to retry: then `give_up(attempts, last, after)` makes the error. Between
/// attempts it calls `waiting(n, wait, &last)` and sleeps `wait`: the server's `Retry-After`
/// if given, else the back-off (doubling, saturating), never more than 60 s.
pub fn retry<T, E, R>(
    policy: Backoff,
    mut attempt: impl FnMut(u32) -> Attempt<T, E, R>,
    mut waiting: impl FnMut(u32, Duration, &R),
    give_up: impl FnOnce(u32, R, Option<Duration>) -> E,
) -> Result<T, E> {
    let mut delay = policy.first;
    let mut n = 0u32;
    loop {
        n = n.saturating_add(1);
        match attempt(n) {
            Attempt::Done(v) => return Ok(v),
            Attempt::Failed(e) => return Err(e),
            Attempt::Retry { last, after } => {
                if n >= policy.max_attempts.max(1) {
                    return Err(give_up(n, last, after));
                }
                let wait = after.unwrap_or(delay).min(MAX_WAIT);
                waiting(n, wait, &last);
                thread::sleep(wait);
                delay = delay.saturating_mul(2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_retry_after_values_never_panic() {
        assert_eq!(retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(retry_after("1e30"), Some(Duration::from_secs(3600)));
        for bad in [
            "-1",
            "inf",
            "-inf",
            "NaN",
            "",
            "Wed, 21 Oct 2015 07:28:00 GMT",
        ] {
            assert_eq!(retry_after(bad), None, "{bad}");
        }
    }

    #[test]
    fn retries_until_done_with_growing_waits_and_the_servers_wait_first() {
        let mut waits = Vec::new();
        let got: Result<u32, String> = retry(
            Backoff {
                max_attempts: 5,
                first: Duration::from_millis(1),
            },
            |n| match n {
                1 => Attempt::Retry {
                    last: "a",
                    after: Some(Duration::from_millis(3)),
                },
                2 | 3 => Attempt::Retry {
                    last: "b",
                    after: None,
                },
                n => Attempt::Done(n),
            },
            |_, wait, _| waits.push(wait),
            |_, last, _| last.to_owned(),
        );
        assert_eq!(got, Ok(4));
        // The server's 3 ms, then the back-off: 2 ms after one doubling, then 4 ms.
        assert_eq!(
            waits,
            [3, 2, 4].map(Duration::from_millis).to_vec(),
            "{waits:?}"
        );
    }

    #[test]
    fn gives_up_after_the_last_attempt_and_stops_at_a_final_failure() {
        let mut calls = 0;
        let got: Result<(), String> = retry(
            Backoff {
                max_attempts: 3,
                first: Duration::ZERO,
            },
            |_| {
                calls += 1;
                Attempt::Retry {
                    last: "busy",
                    after: None,
                }
            },
            |_, _, _| {},
            |n, last, _| format!("{last} after {n}"),
        );
        assert_eq!(got, Err("busy after 3".to_owned()));
        assert_eq!(calls, 3);
        let got: Result<(), &str> = retry(
            Backoff {
                max_attempts: 3,
                first: Duration::ZERO,
            },
            |_| Attempt::<(), _, ()>::Failed("no"),
            |_, _, _| {},
            |_, _, _| "gave up",
        );
        assert_eq!(got, Err("no"));
    }
}
