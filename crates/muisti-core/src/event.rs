//! Events: what observers are told about reads, writes, forgets and searches.
//!
//! Events carry names, counts and sizes, never stored values or message text.

use crate::{Key, Partition, SearchMode, WriteStatus};

/// Something that happened to memory.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// `memory.read`: a record was looked up.
    Read {
        /// Where; `None` for a lookup by id that found nothing.
        partition: Option<Partition>,
        /// The key, when it was looked up by key or found.
        key: Option<Key>,
        /// Whether a record was found.
        found: bool,
    },
    /// `memory.write`: a record was written (or discarded by the privacy wrapper).
    Write {
        /// Where.
        partition: Partition,
        /// The key.
        key: Key,
        /// Serialized size of the content.
        bytes: usize,
        /// What happened.
        status: WriteStatus,
    },
    /// `memory.forget`: a record or a namespace was deleted.
    Forget {
        /// Where.
        partition: Partition,
        /// The key, or `None` for a flush.
        key: Option<Key>,
        /// How many records were deleted.
        count: u64,
    },
    /// `memory.search`: a search ran.
    Search {
        /// Where.
        partition: Partition,
        /// Answered natively or by scanning.
        mode: SearchMode,
        /// The requested limit.
        limit: usize,
        /// How many hits came back.
        hits: usize,
    },
    /// `memory.recalled`: recalled records were injected into a prompt.
    Recalled {
        /// Where.
        partition: Partition,
        /// Their keys.
        keys: Vec<Key>,
        /// How many.
        count: usize,
        /// Size of the injected block in bytes.
        bytes: usize,
    },
    /// `memory.maintained`: a maintenance job ran (one event per job of a run).
    Maintained {
        /// The tenant it ran in.
        tenant: crate::Tenant,
        /// The job: `expire`, `consolidate`, `promote` or `prune`.
        job: &'static str,
        /// How many records it changed (or, dry, would change).
        count: u64,
        /// Whether it only reported.
        dry_run: bool,
    },
}

impl Event {
    /// The hook name: `memory.read`, `memory.write`, `memory.forget`, `memory.search`,
    /// `memory.recalled` or `memory.maintained`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Read { .. } => "memory.read",
            Event::Write { .. } => "memory.write",
            Event::Forget { .. } => "memory.forget",
            Event::Search { .. } => "memory.search",
            Event::Recalled { .. } => "memory.recalled",
            Event::Maintained { .. } => "memory.maintained",
        }
    }
}

/// Receives events. Called synchronously on the thread that caused the event: keep it fast.
pub trait Observer: Send + Sync {
    /// Called once per event.
    fn on_event(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync> Observer for F {
    fn on_event(&self, event: &Event) {
        self(event)
    }
}
