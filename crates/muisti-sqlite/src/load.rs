//! Reading a partition's rows into its in-memory copy.

use super::*;

/// Loads the rows a ticket names on `conn`: a partition's, one user's rows next to each
/// other (a user-filtered query then reads its rows in sequence instead of one cache miss
/// per row), or one user's. The snapshot is taken while holding the writer connection, after
/// the ticket starts recording what this process commits later.
pub(crate) fn load_on(
    conn: &Connection,
    writer: &Mutex<Connection>,
    ticket: cache::LoadTicket<'_>,
    ann_threshold: usize,
) -> Result<Arc<cache::Part>> {
    let (p, rows) = ticket.key().clone();
    let tx = conn.unchecked_transaction().map_err(sql_err)?;
    {
        let _writer = writer.lock().unwrap_or_else(|p| p.into_inner());
        ticket.arm();
        // The first read takes the snapshot.
        tx.query_row(
            "SELECT count(*) FROM memory_access WHERE rowid = 0",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(sql_err)?;
    }
    let loaded = load_rows(&tx, &p, &rows, ann_threshold)?;
    tx.finish().map_err(sql_err)?;
    Ok(ticket.finish(loaded))
}

pub(crate) fn load_rows(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
) -> Result<PartitionCache> {
    match load_rows_by(conn, p, rows, ann_threshold, " INDEXED BY memories_user") {
        // A bulk load has the index set aside (see `Store::bulk_load`): the planner's own
        // choice is slower, not wrong.
        Err(Error::Backend { reason, .. }) if reason.contains("no such index") => {
            load_rows_by(conn, p, rows, ann_threshold, "")
        }
        other => other,
    }
}

/// [`load_rows`], one user's rows through the index `user_index` names (an `INDEXED BY`
/// clause, or nothing).
pub(crate) fn load_rows_by(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
    user_index: &str,
) -> Result<PartitionCache> {
    const SELECT: &str = "SELECT m.id, m.user_id, m.agent_id, m.session_id, m.category, \
         m.scope, m.created_at, m.expires_at, m.vector, f.tokens, f.context, m.tags, \
         m.metadata, m.content_hash, m.updated_at, m.importance, \
         m.access_count + IFNULL(a.access_count, 0), IFNULL(m.valid_from, m.created_at) \
         FROM o CROSS JOIN memories m ON m.rowid = o.r \
         CROSS JOIN memory_terms f ON f.rowid = m.rowid \
         LEFT JOIN memory_access a ON a.rowid = m.rowid";
    // Only (user, rowid) pairs are sorted; the rows are then read in that order
    // (sorting the whole rows would hold them all in the sorter).
    let (sql, user) = match rows {
        Rows::All => (
            format!(
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories \
                 WHERE tenant = ?1 AND namespace = ?2 ORDER BY user_id, id) {SELECT}"
            ),
            None,
        ),
        Rows::User(u) => (
            format!(
                // By the user index: the planner otherwise prefers the partition's
                // (tenant, namespace, id) index, which skips the sort but reads every
                // row of the partition.
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories{user_index} \
                 WHERE tenant = ?1 AND user_id = ?3 AND namespace = ?2 ORDER BY id) {SELECT}"
            ),
            Some(u.as_str()),
        ),
    };
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let mut rows = match user {
        None => stmt.query(params![p.tenant.as_str(), p.namespace.as_str()]),
        Some(u) => stmt.query(params![p.tenant.as_str(), p.namespace.as_str(), u]),
    }
    .map_err(sql_err)?;
    let mut out = PartitionCache::new(ann_threshold);
    while let Some(r) = rows.next().map_err(sql_err)? {
        let id: String = r.get(0).map_err(sql_err)?;
        let blob: Option<Vec<u8>> = r.get(8).map_err(sql_err)?;
        let terms: String = r.get(9).map_err(sql_err)?;
        let context_terms: Option<String> = r.get(10).map_err(sql_err)?;
        let corrupted = |what: &str| Error::Corrupted {
            location: format!("sqlite row id {id}"),
            reason: what.to_owned(),
        };
        let category: String = r.get(4).map_err(sql_err)?;
        let scope: String = r.get(5).map_err(sql_err)?;
        let tags: String = r.get(11).map_err(sql_err)?;
        let metadata: String = r.get(12).map_err(sql_err)?;
        let access_count: i64 = r.get(16).map_err(sql_err)?;
        let row = CachedRow {
            id: MemoryId::parse(&id).map_err(|_| corrupted("bad id"))?,
            owner: Owner {
                user_id: r.get(1).map_err(sql_err)?,
                agent_id: r.get(2).map_err(sql_err)?,
                session_id: r.get(3).map_err(sql_err)?,
            },
            category: Category::parse(&category).map_err(|_| corrupted("bad category"))?,
            scope: MemoryScope::parse(&scope).map_err(|_| corrupted("bad scope"))?,
            tags: serde_json::from_str(&tags).map_err(|_| corrupted("bad tags"))?,
            metadata: serde_json::from_str(&metadata).map_err(|_| corrupted("bad metadata"))?,
            content_hash: r.get(13).map_err(sql_err)?,
            created_at: Timestamp::from_millis(r.get(6).map_err(sql_err)?),
            updated_at: Timestamp::from_millis(r.get(14).map_err(sql_err)?),
            // RankFields::time_of, in SQL.
            time: Timestamp::from_millis(r.get(17).map_err(sql_err)?),
            importance: r.get::<_, f64>(15).map_err(sql_err)? as f32,
            expires_at: r.get(7).map_err(sql_err)?,
            access_count: u64::try_from(access_count).unwrap_or(0).into(),
        };
        let vector = blob
            .map(|b| vector_from_bytes(&b).ok_or_else(|| corrupted("bad vector")))
            .transpose()?;
        out.push(row, vector.as_deref(), &terms, context_terms.as_deref());
    }
    Ok(out)
}
