//! Timestamps and time-to-live.

use std::{
    fmt,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Error, Result};

/// A point in time with millisecond precision, stored as milliseconds since the Unix epoch
/// and written as RFC 3339 (`2026-11-29T13:42:34.123Z`) in JSON.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Self(ms)
    }

    /// From milliseconds since the Unix epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// This time plus `d` (saturating).
    pub fn plus(self, d: Duration) -> Self {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(ms))
    }

    /// Parses RFC 3339 (`2026-11-29T13:42:34Z`, with or without fraction or offset).
    pub fn parse(s: &str) -> Result<Self> {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|dt| Self(dt.timestamp_millis()))
            .map_err(|e| Error::invalid("timestamp", format!("{s:?} is not RFC 3339: {e}")))
    }
}

/// RFC 3339 in UTC with milliseconds, as `strftime`'s `%Y-%m-%dT%H:%M:%S%.3fZ`.
const FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use chrono::{Datelike, Timelike};
        match chrono::DateTime::from_timestamp_millis(self.0) {
            // Field by field: a response carries several timestamps a record, and reading
            // the format string again for each was a few per cent of a server's recall.
            Some(dt) if (0..=9999).contains(&dt.year()) => write!(
                f,
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                dt.year(),
                dt.month(),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second(),
                dt.timestamp_subsec_millis()
            ),
            // Years of five digits or before year 0 take a sign.
            Some(dt) => write!(f, "{}", dt.format(FORMAT)),
            None => write!(f, "@{}ms", self.0),
        }
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// How long an entry lives after it is written: strictly positive, millisecond precision.
///
/// No TTL means the entry never expires, on every backend. An expired entry is never
/// returned by any read, listing, count or search, and backends prune it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ttl(Duration);

impl Ttl {
    /// The longest TTL: 100 years (3,155,760,000 s), so that every expiry is a date RFC 3339
    /// can write. Omit the TTL for an entry that never expires.
    pub const MAX: Duration = Duration::from_secs(3_155_760_000);

    /// A TTL of `d`; zero and more than [`Ttl::MAX`] are rejected (omit the TTL to never
    /// expire).
    pub fn new(d: Duration) -> Result<Self> {
        if d.as_millis() == 0 {
            return Err(Error::invalid(
                "ttl",
                "must be at least 1 ms; omit it for an entry that never expires",
            ));
        }
        if d > Self::MAX {
            return Err(Error::invalid(
                "ttl",
                "must be at most 100 years (3155760000 s); omit it for an entry that never expires",
            ));
        }
        Ok(Self(d))
    }

    /// A TTL in whole seconds.
    pub fn from_secs(secs: u64) -> Result<Self> {
        Self::new(Duration::from_secs(secs))
    }

    /// The duration.
    pub fn duration(self) -> Duration {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields written one by one read as the format string writes them, at the ends of
    /// the four-digit years and beyond them.
    #[test]
    fn display_is_the_rfc3339_format() {
        let ms = [
            0,
            1,
            -1,
            999,
            1_764_423_754_123,
            -62_167_219_200_000, // 0000-01-01
            -62_167_219_200_001, // just before
            253_402_300_799_999, // 9999-12-31T23:59:59.999
            253_402_300_800_000, // 10000-01-01
            951_782_400_000,     // 2000-02-29
        ];
        for m in ms
            .into_iter()
            .chain((0..1000).map(|i| i * 7_919_123_457 - 3_000_000_000_000))
        {
            let dt = chrono::DateTime::from_timestamp_millis(m).expect("in range");
            assert_eq!(
                Timestamp::from_millis(m).to_string(),
                dt.format(FORMAT).to_string(),
                "{m}"
            );
        }
    }

    #[test]
    fn rfc3339_round_trip() {
        let t = Timestamp::from_millis(1_764_423_754_123);
        let s = t.to_string();
        assert_eq!(s, "2025-11-29T13:42:34.123Z");
        assert_eq!(Timestamp::parse(&s).expect("parses"), t);
        assert!(Timestamp::parse("yesterday").is_err());
    }

    #[test]
    fn zero_and_out_of_range_ttls_are_rejected() {
        assert!(Ttl::from_secs(0).is_err());
        assert!(Ttl::new(Duration::from_millis(1)).is_ok());
        assert!(Ttl::from_secs(3_155_760_000).is_ok());
        for secs in [3_155_760_001, 1_000_000_000_000, u64::MAX] {
            assert!(Ttl::from_secs(secs).is_err(), "{secs}");
        }
        // The longest TTL from now is still a date RFC 3339 writes.
        let t = Timestamp::now().plus(Ttl::MAX);
        assert!(!t.to_string().starts_with('@'), "{t}");
    }
}
