//! The operations of the API over a tenant-confined [`Engine`], shared by the REST handlers
//! and the MCP tools: wire types in, wire types out, engine errors unchanged.

use muisti::{
    Category, Engine, Error, Filter, Key, ListQuery, Locator, Memory, MemoryId, MemoryScope,
    MemoryState, Namespace, Owner, Patch, Put, RecallMode, RecallRequest, Result, Source,
    Timestamp, Ttl, UpdateRequest,
};
use muisti_client::api;
use serde_json::Value;

mod analytics;
mod conversations;
mod declarative;
mod facts;
mod graph;
mod kv;
mod lifecycle;
mod memories;

pub use analytics::*;
pub use conversations::*;
pub use declarative::*;
pub use facts::*;
pub use graph::*;
pub use kv::*;
pub use lifecycle::*;
pub use memories::*;

/// Runs store work on tokio's blocking pool (the engine is synchronous) inside the current
/// tracing span, so what it logs carries the request's id.
pub async fn blocking<T, F>(f: F) -> std::result::Result<T, tokio::task::JoinError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f)).await
}

/// Most hits a recall returns.
pub const MAX_RECALL: usize = 1000;
/// Most memories in one batch.
pub const MAX_BATCH: usize = 1000;
/// Default page size of a list.
pub const DEFAULT_PAGE: usize = 100;
/// Largest page of a list.
pub const MAX_PAGE: usize = 1000;

/// A namespace name, `default` when absent.
pub fn namespace(name: Option<&str>) -> Result<Namespace> {
    match name {
        None => Ok(Namespace::default_ns()),
        Some(n) if muisti::is_reserved(n) => Err(Error::invalid(
            "namespace",
            format!("{n:?} is reserved for muisti's own records"),
        )),
        Some(n) => Namespace::new(n),
    }
}

/// A memory id from a path or argument: not a ULID is invalid input.
pub fn memory_id(s: &str) -> Result<MemoryId> {
    memory_id_of("id", s)
}

/// A memory id given in `field`.
fn memory_id_of(field: &'static str, s: &str) -> Result<MemoryId> {
    MemoryId::parse(s).map_err(|_| Error::invalid(field, "must be a ULID (26 characters)"))
}

pub(crate) fn timestamp(field: &'static str, s: Option<&str>) -> Result<Option<Timestamp>> {
    s.map(|s| {
        Timestamp::parse(s).map_err(|_| Error::invalid(field, "must be an RFC 3339 timestamp"))
    })
    .transpose()
}

fn ttl(secs: Option<u64>) -> Result<Option<Ttl>> {
    secs.map(|s| Ttl::from_secs(s).map_err(|_| Error::invalid("ttl_seconds", "must be at least 1")))
        .transpose()
}

/// The filter of the owner fields and [`api::Filters`].
pub fn filter(
    user_id: Option<String>,
    session_id: Option<String>,
    more: Option<api::Filters>,
) -> Result<Filter> {
    let more = more.unwrap_or_default();
    let filter = Filter {
        user_id,
        agent_id: more.agent_id,
        session_id,
        category: more.category.as_deref().map(Category::parse).transpose()?,
        scope: more.scope.as_deref().map(MemoryScope::parse).transpose()?,
        tags: more.tags,
        metadata: more.metadata,
        created_after: timestamp("created_after", more.created_after.as_deref())?,
        created_before: timestamp("created_before", more.created_before.as_deref())?,
        ..Filter::default()
    };
    filter.validate()?;
    Ok(filter)
}

/// A `limit` as given or `default`, refused outside 1 to `max` (every limit of the API).
fn limit(given: Option<usize>, default: usize, max: usize) -> Result<usize> {
    let limit = given.unwrap_or(default);
    if limit == 0 || limit > max {
        return Err(Error::invalid("limit", format!("must be 1 to {max}")));
    }
    Ok(limit)
}

/// A page cursor: the previous page's `next_cursor`.
fn cursor(given: Option<&str>) -> Result<Option<MemoryId>> {
    given
        .map(|c| MemoryId::parse(c).map_err(|_| Error::invalid("cursor", "not a cursor")))
        .transpose()
}
