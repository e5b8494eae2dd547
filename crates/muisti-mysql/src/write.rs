//! Writing: transactions retried on deadlocks, rows written and locked, the partitions a
//! write changed (their generation bumped, for the copies).

use super::*;

impl MysqlStore {
    /// Runs `f` in a transaction, again (up to [`WRITE_ATTEMPTS`]) when it failed on a
    /// conflict with a concurrent transaction; then this handle's copies check their
    /// generations before their next use (its own write is read at once).
    pub(crate) fn write<R>(&self, f: impl FnMut(&mut Transaction<'_>) -> TxResult<R>) -> Result<R> {
        let r = self.transact(f)?;
        self.coherent.copies.unconfirm_all();
        Ok(r)
    }

    /// [`MysqlStore::write`] without touching the copies: for a write its caller applies to
    /// them itself.
    pub(crate) fn transact<R>(
        &self,
        mut f: impl FnMut(&mut Transaction<'_>) -> TxResult<R>,
    ) -> Result<R> {
        let mut conn = self.conn()?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = conn
                .start_transaction(TxOpts::default())
                .map_err(|e| self.err(&e))?;
            let result = f(&mut tx).and_then(|r| {
                tx.commit()?;
                Ok(r)
            });
            match result {
                Ok(r) => return Ok(r),
                Err(TxError::Db(e)) if retryable(&e) && attempt < WRITE_ATTEMPTS => {
                    tracing::debug!(error = %e, attempt, "mysql write retried");
                }
                Err(TxError::Db(e)) => return Err(self.err(&e)),
                Err(TxError::Muisti(e)) => return Err(e),
            }
        }
    }

    /// The live or expired row at a locator, locked for the rest of the transaction.
    pub(crate) fn locked(
        &self,
        tx: &mut Transaction<'_>,
        at: &Locator,
    ) -> TxResult<Option<Memory>> {
        let m = &self.q.memories;
        let cols = columns("");
        let row: Option<Row> = match at {
            Locator::Key { partition, key } => tx.exec_first(
                format!(
                    "SELECT {cols} FROM {m} WHERE tenant = ? AND namespace = ? AND `key` = ? \
                     FOR UPDATE"
                ),
                params(vec![
                    bytes(partition.tenant.as_str()),
                    bytes(partition.namespace.as_str()),
                    bytes(key.as_str()),
                ]),
            )?,
            Locator::Id { tenant, id } => tx.exec_first(
                format!("SELECT {cols} FROM {m} WHERE tenant = ? AND id = ? FOR UPDATE"),
                params(vec![bytes(tenant.as_str()), bytes(&id.to_string())]),
            )?,
        };
        Ok(row.map(|mut r| decode(&mut r)).transpose()?)
    }

    /// One update inside a transaction, as `update` and `update_many` run it: the record
    /// locked, the request applied to it if it is live, the row written; with the id of a
    /// record it replaced. The outer error fails the transaction; the inner one is the
    /// request's own (a stale version, no record), which writes nothing.
    pub(crate) fn update_in(
        &self,
        tx: &mut Transaction<'_>,
        req: &UpdateRequest,
        now: Timestamp,
    ) -> TxResult<Result<(Memory, Option<MemoryId>)>> {
        let found = self.locked(tx, &req.at)?;
        let old_id = found.as_ref().map(|m| m.id);
        let live = found.filter(|m| !m.is_expired(now) && req.at.addresses(m));
        let (memory, change) = match req.apply(live.as_ref(), now, &self.limits) {
            Ok(applied) => applied,
            Err(e) => return Ok(Err(e)),
        };
        self.write_row(tx, &memory, &change, old_id)?;
        let replaced = old_id.filter(|old| *old != memory.id);
        Ok(Ok((memory, replaced)))
    }

    /// Writes a record: an insert, or an update of the row whose id was `old`; the vector as
    /// `vector` says (`Keep`: its columns are left as they are); its postings replaced.
    pub(crate) fn write_row(
        &self,
        tx: &mut Transaction<'_>,
        m: &Memory,
        vector: &VectorChange,
        old: Option<MemoryId>,
    ) -> TxResult<()> {
        let Statements {
            memories, postings, ..
        } = &self.q;
        let (terms, doc_len) = sql::postings(m);
        let mut names: Vec<String> = muisti_store::COLUMN_NAMES
            .iter()
            .map(|c| format!("`{c}`"))
            .collect();
        let mut args = values(m);
        names.push("doc_len".into());
        args.push(Value::Int(i64::from(doc_len)));
        match vector {
            VectorChange::Keep => {}
            VectorChange::Set(v) => {
                names.extend(["embedding".into(), "dims".into()]);
                args.extend(vector_values(Some(v)));
            }
            VectorChange::Drop => {
                names.extend(["embedding".into(), "dims".into()]);
                args.extend(vector_values(None));
            }
        }
        let tenant = bytes(m.partition.tenant.as_str());
        match old {
            None => {
                let marks = vec!["?"; names.len()].join(", ");
                tx.exec_drop(
                    format!(
                        "INSERT INTO {memories} ({}) VALUES ({marks})",
                        names.join(", ")
                    ),
                    params(args),
                )?;
            }
            Some(old) => {
                let old = bytes(&old.to_string());
                tx.exec_drop(
                    format!("DELETE FROM {postings} WHERE tenant = ? AND id = ?"),
                    params(vec![tenant.clone(), old.clone()]),
                )?;
                let set: Vec<String> = names.iter().map(|c| format!("{c} = ?")).collect();
                args.extend([tenant.clone(), old]);
                tx.exec_drop(
                    format!(
                        "UPDATE {memories} SET {} WHERE tenant = ? AND id = ?",
                        set.join(", ")
                    ),
                    params(args),
                )?;
            }
        }
        let namespace = bytes(m.partition.namespace.as_str());
        let id = bytes(&m.id.to_string());
        let mut rest = terms.as_slice();
        while !rest.is_empty() {
            // The largest power of two that fits: a handful of statement shapes in all.
            let n = POSTINGS_CHUNK.min(1 << rest.len().ilog2());
            let (chunk, tail) = rest.split_at(n);
            rest = tail;
            let mut args = Vec::with_capacity(n * 6);
            for (term, tf, ctx) in chunk {
                args.extend([
                    tenant.clone(),
                    namespace.clone(),
                    Value::Bytes(term.clone()),
                    id.clone(),
                    Value::Int(i64::from(*tf)),
                    Value::Int(i64::from(*ctx)),
                ]);
            }
            let marks = vec!["(?, ?, ?, ?, ?, ?)"; n].join(", ");
            tx.exec_drop(
                format!(
                    "INSERT INTO {postings} (tenant, namespace, term, id, tf, ctx_tf) \
                     VALUES {marks}"
                ),
                params(args),
            )?;
        }
        Ok(())
    }

    /// Deletes expired records (every write does, as on SQLite and PostgreSQL: the expiry
    /// index makes it cheap when nothing has expired).
    pub(crate) fn purge_in(&self, tx: &mut Transaction<'_>, now: i64) -> TxResult<u64> {
        tx.exec_drop(
            format!(
                "DELETE FROM {} WHERE expires_at IS NOT NULL AND expires_at <= ?",
                self.q.memories
            ),
            (now,),
        )?;
        Ok(tx.affected_rows())
    }

    /// Bumps the generation of each partition in `changes` (sorted, so that two
    /// transactions lock them in one order) and logs what changed under it, trimming the log
    /// to its last [`copies::KEPT`] entries: the last statements of every write transaction
    /// (whether this handle keeps copies or not: another may).
    pub(crate) fn bump(
        &self,
        tx: &mut Transaction<'_>,
        mut changes: Vec<(Partition, copies::Changed)>,
    ) -> TxResult<Vec<(Partition, copies::Version)>> {
        changes.sort_by(|a, b| a.0.cmp(&b.0));
        let Statements {
            generations,
            changes: log,
            ..
        } = &self.q;
        let mut bumped = Vec::with_capacity(changes.len());
        for (p, changed) in changes {
            let (t, n) = (bytes(p.tenant.as_str()), bytes(p.namespace.as_str()));
            tx.exec_drop(
                format!(
                    "INSERT INTO {generations} (tenant, namespace, generation) VALUES (?, ?, 1) \
                     ON DUPLICATE KEY UPDATE generation = generation + 1"
                ),
                params(vec![t.clone(), n.clone()]),
            )?;
            let g: i64 = tx
                .exec_first(
                    format!(
                        "SELECT generation FROM {generations} WHERE tenant = ? AND namespace = ?"
                    ),
                    params(vec![t.clone(), n.clone()]),
                )?
                .unwrap_or(1);
            tx.exec_drop(
                format!(
                    "INSERT INTO {log} (tenant, namespace, generation, ids) VALUES (?, ?, ?, ?)"
                ),
                params(vec![
                    t.clone(),
                    n.clone(),
                    Value::Int(g),
                    bytes(&copies::logged(&changed)),
                ]),
            )?;
            // Trimmed now and then, not on every write.
            if g % 64 == 0 {
                tx.exec_drop(
                    format!(
                        "DELETE FROM {log} WHERE tenant = ? AND namespace = ? AND generation <= ?"
                    ),
                    params(vec![t, n, Value::Int(g - copies::KEPT)]),
                )?;
            }
            bumped.push((p, g));
        }
        Ok(bumped)
    }

    /// The partitions of records of `tenant` with these ids, each with its ids (what a write
    /// by id alone changed, for [`MysqlStore::bump`]).
    pub(crate) fn partitions_of(
        &self,
        tx: &mut Transaction<'_>,
        tenant: &Tenant,
        ids: &[MemoryId],
    ) -> TxResult<Vec<(Partition, copies::Changed)>> {
        Ok(copies::by_partition(self.rows_of(tx, tenant, ids, None)?))
    }

    /// The records of `tenant` with these ids, as (partition, id), a statement per 256 ids;
    /// with `live_at`, only those live then, locked (what a delete is about to change).
    pub(crate) fn rows_of(
        &self,
        tx: &mut Transaction<'_>,
        tenant: &Tenant,
        ids: &[MemoryId],
        live_at: Option<i64>,
    ) -> TxResult<Vec<(Partition, MemoryId)>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(256) {
            let mut sql = Sql::new(format!(
                "SELECT namespace, id FROM {} WHERE tenant = ?",
                self.q.memories
            ));
            sql.args.push(bytes(tenant.as_str()));
            if let Some(now) = live_at {
                sql.and_live("", now);
            }
            sql.text.push_str(" AND id IN ");
            sql.list(chunk.iter().map(|id| bytes(&id.to_string())));
            if live_at.is_some() {
                sql.text.push_str(" FOR UPDATE");
            }
            let rows: Vec<Row> = tx.exec(sql.text, params(sql.args))?;
            for mut r in rows {
                let ns: String = take(&mut r, 0)?;
                let id = parse_id(&take::<String>(&mut r, 1)?)?;
                out.push((Partition::new(tenant.clone(), Namespace::new(ns)?), id));
            }
        }
        Ok(out)
    }

    /// One put inside a transaction; with the id of another record it replaced (an expired
    /// one at the key, whose row took the new record).
    pub(crate) fn put_in(
        &self,
        tx: &mut Transaction<'_>,
        put: &Put,
        now: Timestamp,
    ) -> TxResult<(Written, Option<MemoryId>)> {
        let mut put = put.clone();
        // A put replaces the whole record, its vector included.
        let vector = match put.embedding.take() {
            Some(v) => VectorChange::Set(v),
            None => VectorChange::Drop,
        };
        let existing = match &put.key {
            None => None,
            Some(key) => self.locked(
                tx,
                &Locator::Key {
                    partition: put.partition.clone(),
                    key: key.clone(),
                },
            )?,
        };
        let old_id = existing.as_ref().map(|m| m.id);
        let live = existing.filter(|m| !m.is_expired(now));
        let status = if live.is_some() {
            WriteStatus::Updated
        } else {
            WriteStatus::Created
        };
        let memory = put.apply(live.as_ref(), now);
        self.write_row(tx, &memory, &vector, old_id)?;
        let replaced = old_id.filter(|old| *old != memory.id);
        Ok((Written { memory, status }, replaced))
    }

    /// What puts changed, for [`MysqlStore::bump`].
    pub(crate) fn changed_by(
        written: &[(Written, Option<MemoryId>)],
    ) -> Vec<(Partition, copies::Changed)> {
        copies::by_partition(written.iter().flat_map(|(w, replaced)| {
            let p = &w.memory.partition;
            std::iter::once((p.clone(), w.memory.id)).chain(replaced.map(|old| (p.clone(), old)))
        }))
    }
}
