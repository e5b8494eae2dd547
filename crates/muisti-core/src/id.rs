//! Record ids.

use std::{fmt, str::FromStr, sync::Mutex};

use serde::{Deserialize, Serialize};
use ulid::{Generator, Ulid};

use crate::{Error, Result};

/// A map keyed by record id, for the maps a search builds and a copy's index: foldhash
/// (seeded per process), several times faster than SipHash on a 16-byte id.
pub type IdMap<V> = std::collections::HashMap<MemoryId, V, foldhash::fast::RandomState>;

/// A set of record ids, hashed as [`IdMap`] is.
pub type IdSet = std::collections::HashSet<MemoryId, foldhash::fast::RandomState>;

/// The id of a memory record: a ULID, so ids sort by creation time.
///
/// Ids made in one process are strictly increasing, even within one millisecond.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MemoryId(Ulid);

static GENERATOR: Mutex<Generator> = Mutex::new(Generator::new());

impl MemoryId {
    /// A new id, greater than every id made before it in this process.
    pub fn generate() -> Self {
        let mut g = GENERATOR.lock().unwrap_or_else(|p| p.into_inner());
        let id = match g.generate() {
            Ok(id) => id,
            Err(overflow) => overflow.commit_overflow_increment(),
        };
        Self(id)
    }

    /// Parses the 26-character Crockford base32 form.
    pub fn parse(s: &str) -> Result<Self> {
        Ulid::from_string(s)
            .map(Self)
            .map_err(|e| Error::invalid("id", format!("{s:?} is not a ULID: {e}")))
    }

    /// The underlying ULID.
    pub fn ulid(self) -> Ulid {
        self.0
    }

    /// Whether `s` is this id's 26-character form (as `to_string` writes it), without
    /// writing that form to the heap.
    pub fn is_written_as(self, s: &str) -> bool {
        let mut buf = [0; ulid::ULID_LEN];
        s.len() == ulid::ULID_LEN && self.0.array_to_str(&mut buf) == s
    }
}

impl FromStr for MemoryId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_round_trip() {
        let a = MemoryId::generate();
        let b = MemoryId::generate();
        assert!(b > a);
        assert_eq!(MemoryId::parse(&a.to_string()).expect("parses"), a);
        assert!(MemoryId::parse("nope").is_err());
    }

    #[test]
    fn an_id_is_written_as_its_own_form_only() {
        let (a, b) = (MemoryId::generate(), MemoryId::generate());
        assert!(a.is_written_as(&a.to_string()));
        assert!(!a.is_written_as(&b.to_string()));
        assert!(!a.is_written_as(&a.to_string().to_lowercase()));
        assert!(!a.is_written_as(&a.to_string()[..25]));
        assert!(!a.is_written_as(""));
    }
}
