//! The data model and the storage contract of muisti, with no IO.
//!
//! * [`Memory`] is the one record: a fact, a preference, a conversation turn or a key-value
//!   entry, addressed by [`MemoryId`] or by [`Key`] within a [`Partition`] (tenant +
//!   [`Namespace`]).
//! * [`Put`] is a write; [`Put::apply`] is the single definition of upsert semantics.
//! * [`Store`] is the trait every backend implements; its contract is in its docs.
//! * [`Error`] is the error of every store, with a coarse [`ErrorKind`].
//! * [`Event`] and [`Observer`] are how the engine reports activity.
//!
//! ```
//! use muisti_core::{Key, Namespace, Partition, Put, Timestamp};
//!
//! let ns = Namespace::new("user:1")?;
//! let put = Put::new(Partition::of(ns), Some(Key::new("city")?), "Lisbon");
//! put.validate(&Default::default())?;
//! let memory = put.apply(None, Timestamp::now());
//! assert_eq!(memory.text(), "Lisbon");
//! assert!(Namespace::new("../etc").is_err());
//! # Ok::<(), muisti_core::Error>(())
//! ```

mod clock;
mod error;
mod event;
mod id;
mod memory;
mod name;
mod proposal;
pub mod quant;
mod query;
pub mod rank;
mod record;
mod store;
pub mod text;
mod time;
mod update;

pub use clock::{Clock, ManualClock, SystemClock, system_clock};
pub use error::{Error, ErrorKind, Result};
pub use event::{Event, Observer};
pub use id::{IdMap, IdSet, MemoryId};
pub use memory::{
    Category, Limits, MAX_TAGS, Memory, MemoryScope, MemoryState, Owner, Put, Source,
    check_owner_field, check_tags, content_hash, is_open_name, value_text,
};
pub use name::{
    Key, MAX_KEY_CHARS, MAX_NAME_CHARS, Namespace, Partition, RESERVED_PREFIX, STATE_PREFIX,
    Tenant, check_name, is_reserved, is_state, redact_url,
};
pub use proposal::{Proposal, Superseded};
pub use query::{
    Filter, Filterable, Hit, ListQuery, Locator, MAX_PAGE, Page, RankFields, Scored, SearchMode,
    TextQuery, VectorQuery, same_tag, tag_key,
};
pub use record::Record;
pub use store::{
    Backup, Capabilities, Health, ReadRun, Store, StoreInfo, StoredVector, WriteStatus, Written,
    delete_each, exact_vector_search, list_all, touch_counts, update_each,
};
pub use time::{Timestamp, Ttl};
pub use update::{Patch, UpdateRequest, VectorChange};
