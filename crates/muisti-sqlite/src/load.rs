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
    if let (Some((generation, copy)), Rows::User(user)) = (to_keep, &rows) {
        keep_copy(writer, &p, user, generation, &copy);
    }
    Ok(part)
}

/// A packed copy a load built, to keep where the user's row still has this `gen`.
type ToKeep = (i64, Vec<u8>);

/// One user's copy: from the packed copy the store keeps when it has one, else from the
/// rows, then with the packed copy to keep (with the `gen` the snapshot read).
fn load_user(
    conn: &Connection,
    p: &Partition,
    user: &str,
    ann_threshold: usize,
) -> Result<(PartitionCache, Option<ToKeep>)> {
    let kept: Option<(i64, Option<Vec<u8>>)> = conn
        .prepare_cached(
            "SELECT gen, copy FROM user_copies WHERE tenant = ?1 AND namespace = ?2 \
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
    let Some((generation, copy)) = kept else {
        return Ok((load_rows(conn, p, &rows, ann_threshold, None)?, None));
    };
    if let Some(copy) = copy
        && let Some(loaded) = from_packed(conn, &copy, user, ann_threshold)?
    {
        return Ok((loaded, None));
    }
    let mut packer = packed::Writer::new();
    let loaded = load_rows(conn, p, &rows, ann_threshold, Some(&mut packer))?;
    Ok((loaded, Some((generation, packer.finish()))))
}

/// Writes a user's packed copy where the row still has the `gen` its load read (a change
/// since set it aside, and the next load builds it again). Best effort: a copy not kept
/// only makes the next load read the rows.
fn keep_copy(writer: &Mutex<Connection>, p: &Partition, user: &str, generation: i64, copy: &[u8]) {
    let conn = writer.lock().unwrap_or_else(|p| p.into_inner());
    let written = conn
        .prepare_cached(
            "UPDATE user_copies SET copy = ?5 WHERE tenant = ?1 AND namespace = ?2 \
             AND user_id = ?3 AND gen = ?4",
        )
        .and_then(|mut s| {
            s.execute(params![
                p.tenant.as_str(),
                p.namespace.as_str(),
                user,
                generation,
                copy
            ])
        });
    if let Err(e) = written {
        tracing::debug!(error = %e, "a user's copy was not kept; the next load reads the rows");
    }
}

/// A copy from its packed bytes, with the accesses counted since each record was written;
/// `None` if the bytes are not a packed copy this build reads (then the rows are read).
fn from_packed(
    conn: &Connection,
    bytes: &[u8],
    user: &str,
    ann_threshold: usize,
) -> Result<Option<PartitionCache>> {
    let Some(mut reader) = packed::Reader::new(bytes) else {
        return Ok(None);
    };
    let count = reader.len();
    let mut out = PartitionCache::with_capacity(ann_threshold, count);
    let mut rowids = Vec::with_capacity(count);
    while let Some((mut fields, vector)) = reader.next_row() {
        fields.user_id = Some(user);
        rowids.push(fields.rowid);
        let row = cached_row(&fields, fields.stored_accesses)?;
        out.push_as(
            row,
            vector.map(|(q, scale)| cache::RowVector::Quantized(q, scale)),
            fields.terms,
            fields.context_terms,
        );
    }
    // Every row the copy says it holds, or none (bytes cut short).
    if rowids.len() != count {
        return Ok(None);
    }
    // The accesses since each record was written, in one statement.
    let ids = serde_json::to_string(&rowids).map_err(|e| Error::Corrupted {
        location: "sqlite user copy".into(),
        reason: e.to_string(),
    })?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT a.rowid, a.access_count FROM json_each(?1) j \
             JOIN memory_access a ON a.rowid = j.value",
        )
        .map_err(sql_err)?;
    let mut rows = stmt.query(params![ids]).map_err(sql_err)?;
    let mut row_of: Option<HashMap<i64, usize>> = None;
    while let Some(r) = rows.next().map_err(sql_err)? {
        let (rowid, accesses): (i64, i64) =
            (r.get(0).map_err(sql_err)?, r.get(1).map_err(sql_err)?);
        let row_of =
            row_of.get_or_insert_with(|| rowids.iter().enumerate().map(|(i, r)| (*r, i)).collect());
        if let Some(&i) = row_of.get(&rowid) {
            out.add_accesses(i, u64::try_from(accesses).unwrap_or(0));
        }
    }

    Ok(Some(out))
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
    mut packer: Option<&mut packed::Writer>,
) -> Result<PartitionCache> {
    let index = " INDEXED BY memories_user";
    match load_rows_by(conn, p, rows, ann_threshold, index, packer.as_deref_mut()) {
        // A bulk load has the index set aside (see `Store::bulk_load`): the planner's own
        // choice is slower, not wrong.
        Err(Error::Backend { reason, .. }) if reason.contains("no such index") => {
            load_rows_by(conn, p, rows, ann_threshold, "", packer)
        }
        other => other,
    }
}

/// [`load_rows`], one user's rows through the index `user_index` names (an `INDEXED BY`
/// clause, or nothing); each row also packed into `packer`, if given.
pub(crate) fn load_rows_by(
    conn: &Connection,
    p: &Partition,
    rows: &Rows,
    ann_threshold: usize,
    user_index: &str,
    mut packer: Option<&mut packed::Writer>,
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
        if let Some(packer) = packer.as_deref_mut() {
            packer.row(&fields, out.last_vector());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use muisti_core::{Namespace, Tenant};

    /// A load keeps its copy only where the user's row still has the `gen` its snapshot
    /// read: a change committed meanwhile gave the row another, and a user with no row (no
    /// records any more) gets none back.
    #[test]
    fn a_copy_is_kept_only_where_its_gen_is_still_the_rows() {
        let conn = Connection::open_in_memory().expect("opens");
        crate::migrate::migrate(&conn, std::path::Path::new(":memory:")).expect("migrates");
        conn.execute(
            "INSERT INTO user_copies (tenant, namespace, user_id, gen, copy) \
             VALUES ('t', 'n', 'u', 7, NULL)",
            [],
        )
        .expect("a row");
        let writer = Mutex::new(conn);
        let p = Partition::new(
            Tenant::new("t").expect("tenant"),
            Namespace::new("n").expect("namespace"),
        );
        let copy = |user: &str| -> Option<Option<Vec<u8>>> {
            writer
                .lock()
                .expect("lock")
                .query_row(
                    "SELECT copy FROM user_copies WHERE user_id = ?1",
                    [user],
                    |r| r.get(0),
                )
                .optional()
                .expect("reads")
        };
        keep_copy(&writer, &p, "u", 6, b"stale");
        assert_eq!(copy("u"), Some(None));
        keep_copy(&writer, &p, "u", 7, b"fresh");
        assert_eq!(copy("u"), Some(Some(b"fresh".to_vec())));
        keep_copy(&writer, &p, "v", 7, b"nobody");
        assert_eq!(copy("v"), None);
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
        let mut w = packed::Writer::new();
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

        // A copy cut short is no copy at all, not the rows it still holds.
        let conn = Connection::open_in_memory().expect("opens");
        crate::migrate::migrate(&conn, std::path::Path::new(":memory:")).expect("migrates");
        let whole = from_packed(&conn, &bytes, "u", 0).expect("reads");
        assert_eq!(whole.map(|c| c.rows_len()), Some(2));
        let cut = from_packed(&conn, &bytes[..bytes.len() - 3], "u", 0).expect("reads");
        assert!(cut.is_none(), "cut short");
    }
}
