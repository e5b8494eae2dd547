//! The SQL of the store: the column list (with the access statistics merged on read), the
//! statements used on every path, and filters as SQL conditions.

use muisti_core::{Category, Filter, MemoryScope, Partition, Timestamp};
use rusqlite::types::Value as SqlValue;

/// The columns of a record, in the order [`decode`](crate::row::decode) reads them, with the two access
/// statistics given as expressions (their stored columns when writing, merged with
/// `memory_access` when reading).
macro_rules! columns {
    ($last_accessed_at:literal, $access_count:literal) => {
        concat!(
            "id, tenant, namespace, key, content, content_is_json, category, scope, \
             user_id, agent_id, session_id, tags, metadata, importance, source, confidence, \
             content_hash, state, superseded_by, valid_from, valid_until, created_at, updated_at, ",
            $last_accessed_at,
            ", ",
            $access_count,
            ", expires_at, embedding_model, context, version"
        )
    };
    (read) => {
        columns!(
            "COALESCE((SELECT a.last_accessed_at FROM memory_access a \
             WHERE a.rowid = memories.rowid), last_accessed_at)",
            "access_count + IFNULL((SELECT a.access_count FROM memory_access a \
             WHERE a.rowid = memories.rowid), 0)"
        )
    };
    (write) => {
        columns!("last_accessed_at", "access_count")
    };
}

macro_rules! live {
    () => {
        "(expires_at IS NULL OR expires_at > ?)"
    };
}

/// The columns a read selects from `memories` (unaliased: the access statistics refer to
/// it by name).
pub(crate) const COLUMNS: &str = columns!(read);
/// The index of a `rowid` selected right after [`COLUMNS`].
pub(crate) const ROWID_AFTER_COLUMNS: usize = 29;

pub(crate) const LIVE: &str = live!();
pub(crate) const GET_BY_KEY: &str = concat!(
    "SELECT ",
    columns!(read),
    " FROM memories WHERE tenant = ? AND namespace = ? AND key = ? AND ",
    live!()
);
pub(crate) const GET_BY_ID: &str = concat!(
    "SELECT ",
    columns!(read),
    " FROM memories WHERE id = ? AND tenant = ? AND ",
    live!()
);
pub(crate) const GET_FOR_WRITE: &str = concat!(
    "SELECT ",
    columns!(read),
    ", rowid FROM memories WHERE tenant = ? AND namespace = ? AND key = ?"
);
pub(crate) const GET_BY_ID_FOR_WRITE: &str = concat!(
    "SELECT ",
    columns!(read),
    ", rowid FROM memories WHERE id = ? AND tenant = ?"
);
/// The columns a write sets, in the order of its values: the record's, then its vector.
pub(crate) const WRITE_COLUMNS: &str = concat!(columns!(write), ", vector");
pub(crate) const INSERT: &str = concat!(
    "INSERT INTO memories (",
    columns!(write),
    ", vector) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
     ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30)"
);

/// The SQL conditions for the fields a filter can be checked on in SQL; tags and metadata
/// (JSON columns) are checked in Rust by [`Filter::matches`] when [`needs_rust_filter`].
pub(crate) fn filter_sql(filter: &Filter, sql: &mut String, args: &mut Vec<SqlValue>) {
    let Filter {
        user_id,
        without_user,
        agent_id,
        session_id,
        category,
        scope,
        tags: _,
        metadata: _,
        created_after,
        created_before,
        content_hash,
    } = filter;
    if *without_user {
        sql.push_str(" AND user_id IS NULL");
    }
    let mut cond = |condition: &str, v: Option<SqlValue>| {
        if let Some(v) = v {
            sql.push_str(" AND ");
            sql.push_str(condition);
            args.push(v);
        }
    };
    let text = |v: Option<&str>| v.map(|v| SqlValue::Text(v.to_owned()));
    cond("user_id = ?", text(user_id.as_deref()));
    cond("agent_id = ?", text(agent_id.as_deref()));
    cond("session_id = ?", text(session_id.as_deref()));
    cond(
        "category = ?",
        text(category.as_ref().map(Category::as_str)),
    );
    cond("scope = ?", text(scope.map(MemoryScope::as_str)));
    cond("content_hash = ?", text(content_hash.as_deref()));
    let millis = |t: Option<Timestamp>| t.map(|t| SqlValue::Integer(t.as_millis()));
    cond("created_at >= ?", millis(*created_after));
    cond("created_at < ?", millis(*created_before));
}

/// Tenant, namespace and the current time: the arguments of a live-partition condition.
pub(crate) fn partition_args(p: &Partition, now: i64) -> Vec<SqlValue> {
    vec![
        SqlValue::Text(p.tenant.as_str().to_owned()),
        SqlValue::Text(p.namespace.as_str().to_owned()),
        SqlValue::Integer(now),
    ]
}

/// Whether a filter has conditions [`filter_sql`] leaves to [`Filter::matches`].
pub(crate) fn needs_rust_filter(filter: &Filter) -> bool {
    // Whole, so that a new field must be placed on one side or the other of filter_sql.
    let Filter {
        user_id: _,
        without_user: _,
        agent_id: _,
        session_id: _,
        category: _,
        scope: _,
        tags,
        metadata,
        created_after: _,
        created_before: _,
        content_hash: _,
    } = filter;
    !tags.is_empty() || !metadata.is_empty()
}
