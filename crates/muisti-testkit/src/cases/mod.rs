//! The conformance cases, by topic. Each `pub fn NAME(h: &dyn Harness)` of these files is a
//! case every store runs (those of `processes.rs`: every store that outlives the process;
//! `pub fn NAME(h: &dyn Harness, child_test: &str)` there: every multi-process store). The
//! build derives the lists from the files (see `build.rs`), so a case cannot be forgotten,
//! and any other `pub fn` here fails the build.

mod concurrency;
mod expiry;
mod import;
mod listing;
mod processes;
mod records;
mod search;
mod update;

pub use concurrency::*;
pub use expiry::*;
pub use import::*;
pub use listing::*;
pub use processes::*;
pub use records::*;
pub use search::*;
pub use update::*;

use std::{
    collections::BTreeSet,
    process::{Command, Stdio},
    sync::Arc,
    thread,
    time::{Duration, Instant},
};

use muisti_core::{
    Category, ErrorKind, Filter, Key, Limits, ListQuery, Locator, Memory, MemoryId, MemoryScope,
    Namespace, Owner, Partition, Patch, Put, Source, Store, Tenant, TextQuery, Timestamp, Ttl,
    UpdateRequest, WriteStatus, list_all,
};
use serde_json::{Value, json};

use crate::Harness;

/// A TTL long enough that a record is surely still there right after it is written, even on
/// a busy machine, and the wait after which it has surely expired.
const SHORT_TTL: Duration = Duration::from_millis(600);

const PAST_SHORT_TTL: Duration = Duration::from_millis(900);

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

fn key(s: &str) -> Key {
    Key::new(s).unwrap()
}

fn part(s: &str) -> Partition {
    Partition::of(ns(s))
}

fn at(p: &Partition, k: &str) -> Locator {
    Locator::Key {
        partition: p.clone(),
        key: key(k),
    }
}

fn set(store: &dyn Store, p: &Partition, k: &str, v: impl Into<Value>) -> Memory {
    store
        .put(Put::new(p.clone(), Some(key(k)), v))
        .unwrap()
        .memory
}

fn get_value(store: &dyn Store, p: &Partition, k: &str) -> Option<Value> {
    store.get(&at(p, k)).unwrap().map(|m| m.content)
}

fn keys_of(items: &[Memory]) -> Vec<String> {
    items.iter().map(|m| m.key.to_string()).collect()
}

fn listed(s: &dyn Store, p: &Partition, filter: Filter) -> Vec<String> {
    keys_of(&list_all(s, p, &filter).unwrap())
}

/// The records a full-text search of `query` finds in `p`, best first.
fn text_hits(s: &dyn Store, p: &Partition, query: &str, filter: Filter) -> Vec<Memory> {
    let found = s
        .text_search(&TextQuery {
            partition: p.clone(),
            query: query.into(),
            filter,
            limit: 10,
        })
        .unwrap();
    let ids: Vec<MemoryId> = found.iter().map(|f| f.id).collect();
    s.get_many(&p.tenant, &ids).unwrap()
}

/// Reads the counter record, adds one with a conditional update, and retries on conflict;
/// returns how many conflicts it met.
fn increment(s: &dyn Store, p: &Partition) -> usize {
    let mut conflicts = 0;
    loop {
        let m = s.get(&at(p, "counter")).unwrap().unwrap();
        let n = m.content.as_u64().unwrap();
        let req = UpdateRequest::new(
            at(p, "counter"),
            Patch {
                content: Some(json!(n + 1)),
                ..Patch::default()
            },
        )
        .expecting(Some(m.version));
        match s.update(&req) {
            Ok(_) => return conflicts,
            Err(e) if e.kind() == ErrorKind::Conflict => conflicts += 1,
            Err(e) => panic!("update failed: {e}"),
        }
    }
}

const INCREMENTS: usize = 40;
