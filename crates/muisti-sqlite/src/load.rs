//! Reading a partition's rows into its in-memory copy.

use rusqlite::OptionalExtension;

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
    let (loaded, to_keep) = match &rows {
        Rows::User(user) => load_user(&tx, &p, user, ann_threshold)?,
        Rows::All => (load_rows(&tx, &p, &rows, ann_threshold, None)?, None),
    };
    tx.finish().map_err(sql_err)?;
    let part = ticket.finish(loaded);
    if let (Some((generation, parts)), Rows::User(user)) = (to_keep, &rows) {
        keep_parts(writer, &p, user, generation, &parts);
    }
    Ok(part)
}

/// A user's parts a load built from the rows, to keep where the user's row still has the
/// `gen` its snapshot read: the `gen`, and each record's rowid and part.
type ToKeep = (i64, Vec<(i64, Vec<u8>)>);

/// One user's copy: from the parts the store keeps when there is one for each of the
/// user's records, else from the rows, then with the parts to keep (with the `gen` the
/// snapshot read).
fn load_user(
    conn: &Connection,
    p: &Partition,
    user: &str,
    ann_threshold: usize,
) -> Result<(PartitionCache, Option<ToKeep>)> {
    let kept: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT gen, records FROM user_copies WHERE tenant = ?1 AND namespace = ?2 \
             AND user_id = ?3",
        )
        .and_then(|mut s| {
            s.query_row(
                params![p.tenant.as_str(), p.namespace.as_str(), user],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })
        .map_err(sql_err)?;
    let rows = Rows::User(user.to_owned());
    // A user with records has a row; without one (no records, or a file changed by other
    // means) the rows are read and nothing is kept.
    let Some((generation, records)) = kept else {
        return Ok((load_rows(conn, p, &rows, ann_threshold, None)?, None));
    };
    if let Some(loaded) = from_parts(conn, p, user, records, ann_threshold)? {
        return Ok((loaded, None));
    }
    let mut parts = Vec::new();
    let loaded = load_rows(conn, p, &rows, ann_threshold, Some(&mut parts))?;
    Ok((loaded, Some((generation, parts))))
}

/// Writes a user's parts (and the count of the user's records they make) where the row
/// still has the `gen` its load read (a change since gave it another, and the next load
/// reads the rows again). Parts of records the rows no longer have go first. Best effort: a
/// copy not kept only makes the next load read the rows.
fn keep_parts(
    writer: &Mutex<Connection>,
    p: &Partition,
    user: &str,
    generation: i64,
    parts: &[(i64, Vec<u8>)],
) {
    let mut conn = writer.lock().unwrap_or_else(|p| p.into_inner());
    let key = params![p.tenant.as_str(), p.namespace.as_str(), user];
    let kept = (|| -> rusqlite::Result<bool> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let current: Option<i64> = tx
            .prepare_cached(
                "SELECT gen FROM user_copies WHERE tenant = ?1 AND namespace = ?2 \
                 AND user_id = ?3",
            )?
            .query_row(key, |r| r.get(0))
            .optional()?;
        if current != Some(generation) {
            return Ok(false);
        }
        tx.prepare_cached(
            "DELETE FROM user_copy_parts WHERE tenant = ?1 AND namespace = ?2 AND user_id = ?3",
        )?
        .execute(key)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO user_copy_parts (tenant, namespace, user_id, record, part) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for (record, part) in parts {
                insert.execute(params![
                    p.tenant.as_str(),
                    p.namespace.as_str(),
                    user,
                    record,
                    part
                ])?;
            }
        }
        tx.prepare_cached(
            "UPDATE user_copies SET records = ?4 WHERE tenant = ?1 AND namespace = ?2 \
             AND user_id = ?3",
        )?
        .execute(params![
            p.tenant.as_str(),
            p.namespace.as_str(),
            user,
            parts.len() as i64
        ])?;
        tx.commit()?;
        Ok(true)
    })();
    if let Err(e) = kept {
        tracing::debug!(error = %e, "a user's copy was not kept; the next load reads the rows");
    }
}

/// A user's copy from the user's kept parts, each row's count with the accesses counted
/// since its record was written (read in the same statement); `None` unless there is one
/// part for each of the user's `records` and each reads as one row of this build's layout
/// (then the rows are read).
fn from_parts(
    conn: &Connection,
    p: &Partition,
    user: &str,
    records: i64,
    ann_threshold: usize,
) -> Result<Option<PartitionCache>> {
    let Ok(count) = usize::try_from(records) else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT c.part, IFNULL(a.access_count, 0) FROM user_copy_parts c \
             LEFT JOIN memory_access a ON a.rowid = c.record \
             WHERE c.tenant = ?1 AND c.namespace = ?2 AND c.user_id = ?3 ORDER BY c.record",
        )
        .map_err(sql_err)?;
    let mut parts = stmt
        .query(params![p.tenant.as_str(), p.namespace.as_str(), user])
        .map_err(sql_err)?;
    let mut out: Option<PartitionCache> = None;
    let mut rows = 0;
    while let Some(r) = parts.next().map_err(sql_err)? {
        let bytes = r
            .get_ref(0)
            .and_then(|v| Ok(v.as_blob()?))
            .map_err(sql_err)?;
        let since: i64 = r.get(1).map_err(sql_err)?;
        let Some(mut reader) = packed::Reader::new(bytes).filter(|r| r.len() == 1) else {
            return Ok(None);
        };
        let Some((mut fields, vector)) = reader.next_row() else {
            return Ok(None);
        };
        if rows == count {
            return Ok(None);
        }
        rows += 1;
        // Sized on the first part: a user without parts costs no allocation.
        let out = out
            .get_or_insert_with(|| PartitionCache::with_capacity(ann_threshold, count).one_user());
        fields.user_id = Some(user);
        let row = cached_row(&fields, fields.stored_accesses.saturating_add(since))?;
        out.push_as(
            row,
            vector.map(|(q, scale)| cache::RowVector::Quantized(q, scale)),
            fields.terms,
            fields.context_terms,
        );
    }
    // A part for each of the user's records, or no copy.
    Ok(out.filter(|_| rows == count))
}

/// The cached row of a load's fields, with `accesses` as its count.
fn cached_row(f: &packed::Fields<'_>, accesses: i64) -> Result<CachedRow> {
    let corrupted = |what: &str| corrupted(f.id, what);
    Ok(CachedRow {
        id: MemoryId::parse(f.id).map_err(|_| corrupted("bad id"))?,
        owner: Owner {
            user_id: f.user_id.map(str::to_owned),
            agent_id: f.agent_id.map(str::to_owned),
            session_id: f.session_id.map(str::to_owned),
        },
        category: Category::parse(f.category).map_err(|_| corrupted("bad category"))?,
        scope: MemoryScope::parse(f.scope).map_err(|_| corrupted("bad scope"))?,
        tags: serde_json::from_str(f.tags).map_err(|_| corrupted("bad tags"))?,
        metadata: serde_json::from_str(f.metadata).map_err(|_| corrupted("bad metadata"))?,
        content_hash: f.content_hash.to_owned(),
        created_at: Timestamp::from_millis(f.created_at),
        updated_at: Timestamp::from_millis(f.updated_at),
        // RankFields::time_of, in SQL.
        time: Timestamp::from_millis(f.time),
        importance: f.importance as f32,
        expires_at: f.expires_at,
        access_count: u64::try_from(accesses).unwrap_or(0).into(),
    })
}

/// A row of the store that does not read as a record.
fn corrupted(id: &str, what: &str) -> Error {
    Error::Corrupted {
        location: format!("sqlite row id {id}"),
        reason: what.to_owned(),
    }
}

pub(crate) fn load_rows(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
    mut parts: Option<&mut Vec<(i64, Vec<u8>)>>,
) -> Result<PartitionCache> {
    let index = " INDEXED BY memories_user";
    match load_rows_by(conn, p, rows, ann_threshold, index, parts.as_deref_mut()) {
        // A bulk load has the index set aside (see `Store::bulk_load`): the planner's own
        // choice is slower, not wrong.
        Err(Error::Backend { reason, .. }) if reason.contains("no such index") => {
            load_rows_by(conn, p, rows, ann_threshold, "", parts)
        }
        other => other,
    }
}

/// [`load_rows`], one user's rows through the index `user_index` names (an `INDEXED BY`
/// clause, or nothing); each row's part also added to `parts`, if given.
pub(crate) fn load_rows_by(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
    user_index: &str,
    mut parts: Option<&mut Vec<(i64, Vec<u8>)>>,
) -> Result<PartitionCache> {
    const SELECT: &str = "SELECT m.id, m.user_id, m.agent_id, m.session_id, m.category, \
         m.scope, m.created_at, m.expires_at, m.vector, f.tokens, f.context, m.tags, \
         m.metadata, m.content_hash, m.updated_at, m.importance, \
         m.access_count, IFNULL(a.access_count, 0), IFNULL(m.valid_from, m.created_at), \
         m.rowid \
         FROM o CROSS JOIN memories m ON m.rowid = o.r \
         CROSS JOIN memory_terms f ON f.rowid = m.rowid \
         LEFT JOIN memory_access a ON a.rowid = m.rowid";
    // Only (user, rowid) pairs are sorted; the rows are then read in that order
    // (sorting the whole rows would hold them all in the sorter).
    let (sql, user) = match rows {
        Rows::All => (
            format!(
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories \
                 WHERE tenant = ?1 AND namespace = ?2 ORDER BY user_id, rowid) {SELECT}"
            ),
            None,
        ),
        Rows::User(u) => (
            format!(
                // By the user index (the user's entries of the partition only, then their
                // rowids sorted): the planner otherwise prefers the partition's (tenant,
                // namespace, id) index, which reads every row of the partition.
                "WITH o AS MATERIALIZED (SELECT rowid AS r FROM memories{user_index} \
                 WHERE tenant = ?1 AND user_id = ?3 AND namespace = ?2 ORDER BY rowid) {SELECT}"
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
    if user.is_some() {
        out = out.one_user();
    }
    while let Some(r) = rows.next().map_err(sql_err)? {
        let text = |i: usize| -> Result<&str> {
            r.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(sql_err)
        };
        let opt_text = |i: usize| -> Result<Option<&str>> {
            r.get_ref(i)
                .and_then(|v| Ok(v.as_str_or_null()?))
                .map_err(sql_err)
        };
        let fields = packed::Fields {
            rowid: r.get(19).map_err(sql_err)?,
            id: text(0)?,
            user_id: opt_text(1)?,
            agent_id: opt_text(2)?,
            session_id: opt_text(3)?,
            category: text(4)?,
            scope: text(5)?,
            created_at: r.get(6).map_err(sql_err)?,
            expires_at: r.get(7).map_err(sql_err)?,
            tags: text(11)?,
            metadata: text(12)?,
            content_hash: text(13)?,
            updated_at: r.get(14).map_err(sql_err)?,
            importance: r.get(15).map_err(sql_err)?,
            stored_accesses: r.get(16).map_err(sql_err)?,
            time: r.get(18).map_err(sql_err)?,
            terms: text(9)?,
            context_terms: opt_text(10)?,
        };
        let since: i64 = r.get(17).map_err(sql_err)?;
        let row = cached_row(&fields, fields.stored_accesses.saturating_add(since))?;
        let blob = r
            .get_ref(8)
            .and_then(|v| Ok(v.as_blob_or_null()?))
            .map_err(sql_err)?;
        let vector = blob
            .map(|b| vector_from_bytes(b).ok_or_else(|| corrupted(fields.id, "bad vector")))
            .transpose()?;
        out.push(row, vector.as_deref(), fields.terms, fields.context_terms);
        if let Some(parts) = parts.as_deref_mut() {
            parts.push((fields.rowid, packed::part(&fields, out.last_vector())));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use muisti_core::{Namespace, Tenant};

    /// A load keeps its parts only where the user's row still has the `gen` its snapshot
    /// read: a change committed meanwhile gave the row another, and a user with no row (no
    /// records any more) gets none back. Parts the rows no longer have go.
    #[test]
    fn parts_are_kept_only_where_their_gen_is_still_the_rows() {
        let conn = Connection::open_in_memory().expect("opens");
        crate::migrate::migrate(&conn, std::path::Path::new(":memory:")).expect("migrates");
        conn.execute_batch(
            "INSERT INTO user_copies (tenant, namespace, user_id, gen, records) \
             VALUES ('t', 'n', 'u', 7, 5); \
             INSERT INTO user_copy_parts (tenant, namespace, user_id, record, part) \
             VALUES ('t', 'n', 'u', 9, x'00');",
        )
        .expect("a row");
        let writer = Mutex::new(conn);
        let p = Partition::new(
            Tenant::new("t").expect("tenant"),
            Namespace::new("n").expect("namespace"),
        );
        let kept = |user: &str| -> (Vec<(i64, Vec<u8>)>, Option<i64>) {
            let conn = writer.lock().expect("lock");
            let parts = conn
                .prepare(
                    "SELECT record, part FROM user_copy_parts WHERE user_id = ?1 \
                     ORDER BY record",
                )
                .and_then(|mut s| {
                    s.query_map([user], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .expect("reads");
            let records = conn
                .query_row(
                    "SELECT records FROM user_copies WHERE user_id = ?1",
                    [user],
                    |r| r.get(0),
                )
                .optional()
                .expect("reads");
            (parts, records)
        };
        let fresh = vec![(1, b"one".to_vec()), (2, b"two".to_vec())];
        keep_parts(&writer, &p, "u", 6, &[(1, b"stale".to_vec())]);
        assert_eq!(kept("u"), (vec![(9, vec![0])], Some(5)), "gen moved on");
        keep_parts(&writer, &p, "u", 7, &fresh);
        assert_eq!(
            kept("u"),
            (fresh.clone(), Some(2)),
            "kept, the old part gone"
        );
        keep_parts(&writer, &p, "v", 7, &fresh);
        assert_eq!(kept("v"), (Vec::new(), None), "no row, nothing kept");
    }

    /// A packed copy reads back as written; bytes of another layout or cut short read as
    /// no copy (the rows are read instead).
    #[test]
    fn a_packed_copy_reads_back_and_a_damaged_one_reads_as_none() {
        let fields = packed::Fields {
            rowid: 42,
            id: "01J0000000000000000000000A",
            user_id: None,
            agent_id: Some("agent"),
            session_id: None,
            category: "fact",
            scope: "long_term",
            created_at: 1,
            expires_at: Some(9),
            tags: "[\"a\"]",
            metadata: "{}",
            content_hash: "h",
            updated_at: 2,
            importance: 0.5,
            stored_accesses: 3,
            time: 4,
            terms: "river bank",
            context_terms: None,
        };
        let mut w = packed::Writer::with_capacity(0);
        w.row(&fields, Some((&[1, -2, 3], 0.25)));
        w.row(&fields, None);
        let bytes = w.finish();
        let mut r = packed::Reader::new(&bytes).expect("a copy");
        assert_eq!(r.len(), 2);
        let (read, vector) = r.next_row().expect("a row");
        assert_eq!(
            (read.rowid, read.id, read.agent_id),
            (42, fields.id, Some("agent"))
        );
        assert_eq!(
            (read.expires_at, read.terms, read.context_terms),
            (Some(9), "river bank", None)
        );
        assert_eq!(vector, Some((&[1u8, 254, 3][..], 0.25)));
        assert!(r.next_row().expect("a row").1.is_none());
        assert!(r.next_row().is_none());
        let mut cut = packed::Reader::new(&bytes[..bytes.len() - 3]).expect("a header");
        assert!(cut.next_row().is_some());
        assert!(cut.next_row().is_none(), "cut short");
        let mut other = bytes.clone();
        other[0] = 99;
        assert!(packed::Reader::new(&other).is_none(), "another layout");

        // The parts make a copy only with one part for each of the user's records, each
        // read whole.
        let conn = Connection::open_in_memory().expect("opens");
        crate::migrate::migrate(&conn, std::path::Path::new(":memory:")).expect("migrates");
        let p = Partition::of(muisti_core::Namespace::default_ns());
        let set_parts = |parts: &[Vec<u8>]| {
            conn.execute("DELETE FROM user_copy_parts", [])
                .expect("deletes");
            for (i, part) in parts.iter().enumerate() {
                conn.execute(
                    "INSERT INTO user_copy_parts (tenant, namespace, user_id, record, part) \
                     VALUES (?1, ?2, 'u', ?3, ?4)",
                    params![p.tenant.as_str(), p.namespace.as_str(), i as i64, part],
                )
                .expect("inserts");
            }
        };
        let rows = |records: i64| {
            from_parts(&conn, &p, "u", records, 0)
                .expect("reads")
                .map(|c| c.rows_len())
        };
        let one = packed::part(&fields, Some((&[1, -2, 3], 0.25)));
        set_parts(&[one.clone(), one.clone()]);
        assert_eq!(rows(2), Some(2), "a part for each record");
        assert_eq!(rows(3), None, "a record without its part");
        assert_eq!(rows(1), None, "a part of a record the user no longer has");
        // Each row's count is the part's plus the accesses counted since (record 1's).
        conn.execute(
            "INSERT INTO memory_access (rowid, access_count, last_accessed_at) VALUES (1, 5, 0)",
            [],
        )
        .expect("inserts");
        let copy = from_parts(&conn, &p, "u", 2, 0)
            .expect("reads")
            .expect("a copy");
        assert_eq!(copy.access_counts(), [3, 8]);
        set_parts(&[bytes.clone(), one.clone()]);
        assert_eq!(rows(3), None, "a part of two rows is not a record's");
        set_parts(&[bytes[..bytes.len() - 3].to_vec(), one.clone()]);
        assert_eq!(rows(3), None, "a part cut short");
        set_parts(&[]);
        assert_eq!(rows(1), None, "no parts");
        assert_eq!(rows(0), None, "no rows at all: read as rows");
    }
}
