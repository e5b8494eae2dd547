//! Stores with light dependencies, and the pieces that compose stores.
//!
//! * [`MemStore`]: in-process, for tests and scratch data.
//! * [`FileStore`]: one JSON file per namespace under a directory (`file://`), or Markdown
//!   files people read and edit by hand (`markdown://`).
//! * [`RouterStore`]: sends each namespace to a store (exact match, else a default).
//! * [`PrivacyStore`]: drops every write; reads, delete and flush pass through.
//! * [`Columns`]: a record as the columns of a SQL row (the SQL backends' one codec).
//! * [`copy`]: in-process copies of partitions for stores shared by many processes.
//! * [`StoreRegistry`]: opens stores from URLs (`mem://`, `file:///dir`, `markdown:///dir`,
//!   and any scheme an
//!   application registers).
//!
//! ```
//! use muisti_core::{Key, Locator, Namespace, Partition, Put, Store};
//! use muisti_store::StoreRegistry;
//!
//! let store = StoreRegistry::new().open("mem://")?;
//! let p = Partition::of(Namespace::new("user:1")?);
//! store.put(Put::new(p.clone(), Some(Key::new("city")?), "Lisbon"))?;
//! let got = store.get(&Locator::Key { partition: p, key: Key::new("city")? })?;
//! assert_eq!(got.map(|m| m.content), Some("Lisbon".into()));
//! # Ok::<(), muisti_core::Error>(())
//! ```

mod columns;
pub mod copy;
mod file;
pub mod markdown;
mod mem;
mod privacy;
mod router;
mod table;
mod url;

pub use columns::{COLUMN_NAMES, Columns, parse_id, state_str};
pub use file::{FileStore, decode_name, encode_name};
pub use mem::MemStore;
pub use privacy::PrivacyStore;
pub use router::RouterStore;
pub use url::{StoreFactory, StoreRegistry, StoreUrl};
