//! The store contract over MySQL and MariaDB: each call of [`Store`] on [`MysqlStore`].

use super::*;

impl Store for MysqlStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "mysql",
            location: self.location.clone(),
            capabilities: Capabilities {
                native_text: true,
                native_vector: false,
                persistent: true,
                multi_process: true,
            },
        }
    }

    fn limits(&self) -> Limits {
        self.limits
    }

    fn put(&self, put: Put) -> Result<Written> {
        put.validate(&self.limits)?;
        let now = self.now();
        self.write(|tx| {
            self.purge_in(tx, now.as_millis())?;
            let done = self.put_in(tx, &put, now)?;
            self.bump(tx, Self::changed_by(std::slice::from_ref(&done)))?;
            Ok(done.0)
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        self.write(|tx| {
            self.purge_in(tx, now.as_millis())?;
            let done = puts
                .iter()
                .map(|p| self.put_in(tx, p, now))
                .collect::<TxResult<Vec<_>>>()?;
            self.bump(tx, Self::changed_by(&done))?;
            Ok(done.into_iter().map(|(w, _)| w).collect())
        })
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let live = Record::admit(records, &self.limits, self.now())?;
        let memories = &self.q.memories;
        self.write(|tx| {
            for r in &live {
                let m = &r.memory;
                // Postings go with their records (ON DELETE CASCADE).
                tx.exec_drop(
                    format!(
                        "DELETE FROM {memories} WHERE tenant = ? AND (id = ? OR \
                         (namespace = ? AND `key` = ?))"
                    ),
                    params(vec![
                        bytes(m.partition.tenant.as_str()),
                        bytes(&m.id.to_string()),
                        bytes(m.partition.namespace.as_str()),
                        bytes(m.key.as_str()),
                    ]),
                )?;
                let vector = match &r.vector {
                    Some(v) => VectorChange::Set(v.clone()),
                    None => VectorChange::Drop,
                };
                self.write_row(tx, m, &vector, None)?;
            }
            // Rows replaced by key are not named: copies of these partitions reload.
            let mut partitions: Vec<&Partition> =
                live.iter().map(|r| &r.memory.partition).collect();
            partitions.sort();
            partitions.dedup();
            self.bump(
                tx,
                partitions
                    .into_iter()
                    .map(|p| (p.clone(), copies::Changed::All))
                    .collect(),
            )
        })?;
        Ok(live.len() as u64)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        self.write(|tx| {
            let (memory, replaced) = self.update_in(tx, req, now)??;
            self.bump(
                tx,
                Self::changed_by(&[(
                    Written {
                        memory: memory.clone(),
                        status: WriteStatus::Updated,
                    },
                    replaced,
                )]),
            )?;
            Ok(memory)
        })
    }

    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        let now = self.now();
        // One transaction for the batch (maintenance updates thousands), each request as
        // `update` runs it: one that cannot apply is its own error, the others go on.
        self.write(|tx| {
            let mut out = Vec::with_capacity(reqs.len());
            let mut written = Vec::new();
            for req in reqs {
                if let Err(e) = req.validate() {
                    out.push(Err(e));
                    continue;
                }
                match self.update_in(tx, req, now)? {
                    Ok((memory, replaced)) => {
                        let status = WriteStatus::Updated;
                        written.push((
                            Written {
                                memory: memory.clone(),
                                status,
                            },
                            replaced,
                        ));
                        out.push(Ok(memory));
                    }
                    Err(e) => out.push(Err(e)),
                }
            }
            self.bump(tx, Self::changed_by(&written))?;
            Ok(out)
        })
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let now = self.now().as_millis();
        let mut sql = Sql::new(format!(
            "SELECT {} FROM {} WHERE tenant = ?",
            columns(""),
            self.q.memories
        ));
        sql.args.push(bytes(at.tenant().as_str()));
        sql.and_live("", now);
        match at {
            Locator::Key { partition, key } => {
                sql.and("namespace = ?", bytes(partition.namespace.as_str()));
                sql.and("`key` = ?", bytes(key.as_str()));
            }
            Locator::Id { id, .. } => sql.and("id = ?", bytes(&id.to_string())),
        }
        let mut rows = self.query(sql)?;
        rows.first_mut().map(decode).transpose()
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
        // A copy held (made current) answers; no copy is loaded for a list.
        if let Some(copy) = self.copy_of(&query.partition, false)? {
            let items = copy.read().unwrap_or_else(|e| e.into_inner()).list(
                &query.filter,
                query.after,
                size.saturating_add(1),
                self.now(),
            );
            return Ok(Page::from_sorted(items, size));
        }
        let residual = Residual::of(&query.filter);
        let now = self.now().as_millis();
        let mut items: Vec<Memory> = Vec::new();
        let mut after = query.after;
        // Rows that fail the residual filter are skipped: read on until a page is full.
        loop {
            let mut sql = Sql::new(format!(
                "SELECT {} FROM {} WHERE ",
                columns(""),
                self.q.memories
            ));
            sql.append(Sql::live_in("", &query.partition, &query.filter, now));
            if let Some(after) = after {
                sql.and("id > ?", bytes(&after.to_string()));
            }
            let want = size + 1 - items.len();
            sql.push(&format!(" ORDER BY id LIMIT {want}"));
            let rows = self.query(sql)?;
            let got = rows.len();
            for mut r in rows {
                let m = decode(&mut r)?;
                after = Some(m.id);
                if residual.keeps_memory(&m) {
                    items.push(m);
                }
            }
            if got < want || items.len() > size {
                break;
            }
        }
        Ok(Page::from_sorted(items, size))
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        if let Some(copy) = self.copy_of(partition, false)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.count(filter, self.now()) as u64);
        }
        let residual = Residual::of(filter);
        let what = if residual.any() {
            "tags, metadata".to_owned()
        } else {
            "COUNT(*)".to_owned()
        };
        let mut sql = Sql::new(format!("SELECT {what} FROM {} WHERE ", self.q.memories));
        sql.append(Sql::live_in("", partition, filter, self.now().as_millis()));
        let rows = self.query(sql)?;
        if residual.any() {
            let mut n = 0;
            for mut r in rows {
                n += u64::from(residual.keeps(&mut r, 0)?);
            }
            Ok(n)
        } else {
            let n: i64 = match rows.into_iter().next() {
                Some(mut r) => take(&mut r, 0)?,
                None => 0,
            };
            Ok(n.max(0) as u64)
        }
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now();
        let m = &self.q.memories;
        self.write(|tx| {
            // The row (locked), so that its partition and id are logged.
            let Some(found) = self.locked(tx, at)?.filter(|f| !f.is_expired(now)) else {
                return Ok(false);
            };
            tx.exec_drop(
                format!("DELETE FROM {m} WHERE tenant = ? AND id = ?"),
                params(vec![
                    bytes(found.partition.tenant.as_str()),
                    bytes(&found.id.to_string()),
                ]),
            )?;
            let deleted = tx.affected_rows() > 0;
            if deleted {
                self.bump(
                    tx,
                    vec![(found.partition, copies::Changed::Ids(vec![found.id]))],
                )?;
            }
            Ok(deleted)
        })
    }

    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now().as_millis();
        let m = &self.q.memories;
        // One transaction for the batch and two statements a chunk, not a transaction a
        // record (maintenance deletes thousands).
        let mut gone: std::collections::HashSet<MemoryId> = self.write(|tx| {
            // The live rows (locked), so that their partitions and ids are logged.
            let live = self.rows_of(tx, tenant, ids, Some(now))?;
            for chunk in live.chunks(256) {
                let mut sql = Sql::new(format!("DELETE FROM {m} WHERE tenant = ? AND id IN "));
                sql.args.push(bytes(tenant.as_str()));
                sql.list(chunk.iter().map(|(_, id)| bytes(&id.to_string())));
                tx.exec_drop(sql.text, params(sql.args))?;
            }
            let ids = live.iter().map(|(_, id)| *id).collect();
            self.bump(tx, copies::by_partition(live))?;
            Ok(ids)
        })?;
        // In the order given, each once (as one delete after another reports them).
        Ok(ids.iter().filter(|id| gone.remove(id)).copied().collect())
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let now = self.now().as_millis();
        let m = &self.q.memories;
        let where_ = "WHERE tenant = ? AND namespace = ?";
        let args = || {
            vec![
                bytes(partition.tenant.as_str()),
                bytes(partition.namespace.as_str()),
            ]
        };
        self.write(|tx| {
            // The live ones are counted, under the locks the delete then takes.
            let mut count = args();
            count.push(Value::Int(now));
            let live: Option<i64> = tx.exec_first(
                format!(
                    "SELECT COUNT(*) FROM (SELECT id, expires_at FROM {m} {where_} FOR UPDATE) \
                     r WHERE r.expires_at IS NULL OR r.expires_at > ?"
                ),
                params(count),
            )?;
            tx.exec_drop(format!("DELETE FROM {m} {where_}"), params(args()))?;
            self.bump(tx, vec![(partition.clone(), copies::Changed::All)])?;
            Ok(live.unwrap_or(0).max(0) as u64)
        })
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let mut sql = Sql::new(format!(
            "SELECT DISTINCT namespace FROM {} WHERE tenant = ?",
            self.q.memories
        ));
        sql.args.push(bytes(tenant.as_str()));
        sql.and_live("", self.now().as_millis());
        sql.push(" ORDER BY namespace");
        let rows = self.query(sql)?;
        self.names(rows, "namespace", Namespace::new)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let mut sql = Sql::new(format!(
            "SELECT DISTINCT tenant FROM {} WHERE TRUE",
            self.q.memories
        ));
        sql.and_live("", self.now().as_millis());
        sql.push(" ORDER BY tenant");
        let rows = self.query(sql)?;
        self.names(rows, "tenant", Tenant::new)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let now = self.now().as_millis();
        let sql = format!(
            "UPDATE {} SET embedding = ?, dims = ?, embedding_model = ? \
             WHERE tenant = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)",
            self.q.memories
        );
        self.write(|tx| {
            let mut n = 0;
            for v in vectors {
                let [embedding, dims] = vector_values(Some(&v.vector));
                tx.exec_drop(
                    &sql,
                    params(vec![
                        embedding,
                        dims,
                        bytes(&v.model),
                        bytes(tenant.as_str()),
                        bytes(&v.id.to_string()),
                        Value::Int(now),
                    ]),
                )?;
                n += tx.affected_rows();
            }
            let ids: Vec<MemoryId> = vectors.iter().map(|v| v.id).collect();
            let changed = self.partitions_of(tx, tenant, &ids)?;
            self.bump(tx, changed)?;
            Ok(n)
        })
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let counts = muisti_core::touch_counts(ids);
        let sql = format!(
            "UPDATE {} SET access_count = access_count + ?, last_accessed_at = ? \
             WHERE tenant = ? AND id = ? AND (expires_at IS NULL OR expires_at > ?)",
            self.q.memories
        );
        let when = at;
        let at = at.as_millis();
        let bumped = self.transact(|tx| {
            for (id, n) in &counts {
                tx.exec_drop(
                    &sql,
                    params(vec![
                        Value::UInt(*n),
                        Value::Int(at),
                        bytes(tenant.as_str()),
                        bytes(&id.to_string()),
                        Value::Int(at),
                    ]),
                )?;
            }
            let ids: Vec<MemoryId> = counts.iter().map(|(id, _)| *id).collect();
            let changed = self.partitions_of(tx, tenant, &ids)?;
            self.bump(tx, changed)
        })?;
        // Applied to this handle's copies in place when nothing else changed the partition
        // meanwhile (else the copy checks before its next use), so recall's access counts
        // cost the next recall no catch-up.
        for (p, g) in bumped {
            self.coherent.copies.apply(
                &p,
                |have| (*have + 1 == g).then_some(g),
                |copy| {
                    for (id, n) in &counts {
                        copy.count_access(*id, *n, when);
                    }
                },
            );
        }
        Ok(())
    }

    fn purge_expired(&self) -> Result<u64> {
        let now = self.now().as_millis();
        self.write(|tx| self.purge_in(tx, now))
    }

    fn count_expired(&self) -> Result<u64> {
        let mut sql = Sql::new(format!(
            "SELECT COUNT(*) AS n FROM {} WHERE TRUE",
            self.q.memories
        ));
        sql.and(
            "expires_at IS NOT NULL AND expires_at <= ?",
            mysql::Value::Int(self.now().as_millis()),
        );
        let rows = self.query(sql)?;
        Ok(rows
            .first()
            .and_then(|r| r.get::<i64, _>("n"))
            .unwrap_or(0)
            .max(0) as u64)
    }

    fn health_check(&self) -> Health {
        let answer = self
            .conn()
            .and_then(|mut c| c.query_drop("SELECT 1").map_err(|e| self.err(&e)));
        match answer {
            Ok(()) => Health {
                ok: true,
                detail: format!("mysql {}", self.location),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.read_vectors(partition, filter, None)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        if query.limit == 0 || query.vector.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(copy) = self.copy_of(&query.partition, true)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.vector_search(&query.vector, &query.filter, query.limit, self.now()));
        }
        let vectors =
            self.read_vectors(&query.partition, &query.filter, Some(query.vector.len()))?;
        Ok(nearest(
            vectors.iter().map(|v| (v.id, v.vector.as_slice())),
            &query.vector,
            query.limit,
        ))
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        if query_terms(&query.query).is_empty() || query.limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(copy) = self.copy_of(&query.partition, true)? {
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            return Ok(copy.text_search(&query.query, &query.filter, query.limit, self.now()));
        }
        // Misspelled words corrected by two look-ups ([`search_terms`]).
        let asked = correctable_terms(&query.query);
        let held = self.db_held(query, &asked)?;
        let unknown: Vec<String> = asked.into_iter().filter(|t| !held.contains(t)).collect();
        let variants = self.db_held(query, &correction_variants(&query.query, &unknown))?;
        let terms = search_terms(&query.query, |t| held.contains(t) || variants.contains(t));
        let now = self.now().as_millis();
        let residual = Residual::of(&query.filter);
        let Statements {
            memories, postings, ..
        } = &self.q;
        // The corpus statistics of the filter's records...
        let mut stats = if residual.any() {
            Sql::new(format!(
                "SELECT doc_len, tags, metadata FROM {memories} WHERE "
            ))
        } else {
            Sql::new(format!(
                "SELECT COUNT(*), CAST(COALESCE(SUM(doc_len), 0) AS SIGNED) FROM {memories} \
                 WHERE "
            ))
        };
        stats.append(Sql::live_in("", &query.partition, &query.filter, now));
        // ...and the postings of the query's terms in them.
        let keys: Vec<Vec<u8>> = terms.iter().map(|t| term_key(t)).collect();
        let mut hits = Sql::new(format!(
            "SELECT m.id, m.doc_len, p.term, p.tf, p.ctx_tf{} FROM {postings} p \
             JOIN {memories} m ON m.tenant = p.tenant AND m.id = p.id \
             WHERE p.tenant = ? AND p.namespace = ? AND p.term IN ",
            residual.columns("m.")
        ));
        hits.args.push(bytes(query.partition.tenant.as_str()));
        hits.args.push(bytes(query.partition.namespace.as_str()));
        hits.list(keys.iter().cloned().map(Value::Bytes));
        hits.push(" AND ");
        hits.append(Sql::live_in("m.", &query.partition, &query.filter, now));
        // One snapshot for both.
        let mut conn = self.conn()?;
        let mut tx = conn
            .start_transaction(
                TxOpts::default()
                    .set_isolation_level(Some(IsolationLevel::RepeatableRead))
                    .set_with_consistent_snapshot(true)
                    .set_access_mode(Some(AccessMode::ReadOnly)),
            )
            .map_err(|e| self.err(&e))?;
        let stat_rows: Vec<Row> = tx
            .exec(stats.text, params(stats.args))
            .map_err(|e| self.err(&e))?;
        let hit_rows: Vec<Row> = tx
            .exec(hits.text, params(hits.args))
            .map_err(|e| self.err(&e))?;
        tx.commit().map_err(|e| self.err(&e))?;
        let mut corpus = CorpusStats {
            docs: 0,
            total_len: 0,
        };
        if residual.any() {
            for mut r in stat_rows {
                if residual.keeps(&mut r, 1)? {
                    let len: i64 = take(&mut r, 0)?;
                    corpus.docs += 1;
                    corpus.total_len += len.max(0) as u64;
                }
            }
        } else if let Some(mut r) = stat_rows.into_iter().next() {
            corpus.docs = take::<i64>(&mut r, 0)?.max(0) as u64;
            corpus.total_len = take::<i64>(&mut r, 1)?.max(0) as u64;
        }
        let index: HashMap<&[u8], usize> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_slice(), i))
            .collect();
        let mut candidates: HashMap<MemoryId, TermCounts> = HashMap::new();
        for mut r in hit_rows {
            if !residual.keeps(&mut r, 5)? {
                continue;
            }
            let id = parse_id(&take::<String>(&mut r, 0)?)?;
            let len: i64 = take(&mut r, 1)?;
            let term: Vec<u8> = take(&mut r, 2)?;
            let tf: i64 = take(&mut r, 3)?;
            let ctx: i64 = take(&mut r, 4)?;
            let Some(&k) = index.get(term.as_slice()) else {
                continue;
            };
            let c = candidates.entry(id).or_insert_with(|| TermCounts {
                id,
                len: len.clamp(0, i64::from(u32::MAX)) as u32,
                content: vec![0; terms.len()],
                context: vec![0; terms.len()],
            });
            c.content[k] = tf.clamp(0, i64::from(u32::MAX)) as u32;
            c.context[k] = ctx.clamp(0, i64::from(u32::MAX)) as u32;
        }
        Ok(Bm25::default().rank_counts(candidates.into_values(), &terms, corpus, query.limit))
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        Ok(self
            .get_many_shared(tenant, ids)?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        // Copies confirmed within the staleness window (or this read run) answer with the
        // records they hold; the rest is read.
        self.coherent.copies.get_many_shared(
            tenant,
            ids,
            self.coherent.staleness,
            self.now(),
            |missing| self.db_get_many(tenant, missing),
        )
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        match self.copy_of(partition, true)? {
            Some(copy) => Ok(copy
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .rank_fields(ids, self.now())),
            None => Ok(self
                .db_get_many(&partition.tenant, ids)?
                .iter()
                .filter(|m| m.partition == *partition)
                .map(RankFields::of)
                .collect()),
        }
    }
}

impl MysqlStore {
    /// Which of `words` a live record of the search's partition that passes its filter's
    /// columns holds: the two look-ups a search in the database corrects its misspelled
    /// words by ([`search_terms`]).
    fn db_held(&self, query: &TextQuery, words: &[String]) -> Result<HashSet<String>> {
        if words.is_empty() {
            return Ok(HashSet::new());
        }
        let now = self.now().as_millis();
        let by_key: HashMap<Vec<u8>, &String> = words.iter().map(|w| (term_key(w), w)).collect();
        let Statements {
            memories, postings, ..
        } = &self.q;
        let mut sql = Sql::new(format!(
            "SELECT DISTINCT p.term FROM {postings} p \
             JOIN {memories} m ON m.tenant = p.tenant AND m.id = p.id \
             WHERE p.tenant = ? AND p.namespace = ? AND p.term IN "
        ));
        sql.args.push(bytes(query.partition.tenant.as_str()));
        sql.args.push(bytes(query.partition.namespace.as_str()));
        sql.list(by_key.keys().cloned().map(Value::Bytes));
        sql.push(" AND ");
        sql.append(Sql::live_in("m.", &query.partition, &query.filter, now));
        let rows: Vec<Row> = self
            .conn()?
            .exec(sql.text, params(sql.args))
            .map_err(|e| self.err(&e))?;
        let mut held = HashSet::new();
        for mut r in rows {
            let key: Vec<u8> = take(&mut r, 0)?;
            if let Some(word) = by_key.get(&key) {
                held.insert((*word).clone());
            }
        }
        Ok(held)
    }
}
