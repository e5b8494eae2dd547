//! The store contract over SQLite: each call of [`Store`] on [`SqliteStore`], and the
//! online backup.

use super::*;

impl muisti_core::Backup for SqliteStore {
    fn format(&self) -> &'static str {
        "sqlite"
    }

    /// `VACUUM INTO` on a connection of its own: one read transaction, so the copy is the
    /// database at one commit while writers go on (WAL), compacted.
    fn backup_to(&self, to: &Path) -> Result<()> {
        if to.exists() {
            return Err(Error::invalid(
                "backup",
                format!("{} exists already", to.display()),
            ));
        }
        let conn = Connection::open_with_flags(&self.path, OpenFlags::SQLITE_OPEN_READ_ONLY)
            .map_err(sql_err)?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(sql_err)?;
        let target = to
            .to_str()
            .ok_or_else(|| Error::invalid("backup", format!("{} is not UTF-8", to.display())))?;
        conn.execute("VACUUM INTO ?1", [target]).map_err(sql_err)?;
        Ok(())
    }
}

impl Store for SqliteStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "sqlite",
            location: self.location(),
            capabilities: Capabilities {
                native_text: true,
                native_vector: true,
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
        self.write_fresh(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            let (written, fresh) = put_in(tx, put, now)?;
            Ok((purged, written, vec![fresh]))
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        self.write_fresh(|tx| {
            let purged = purge_in(tx, now.as_millis())?;
            let (written, fresh): (Vec<Written>, Vec<Fresh>) = puts
                .into_iter()
                .map(|p| put_in(tx, p, now))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .unzip();
            Ok((purged, written, fresh))
        })
    }

    fn backup(&self) -> Option<&dyn muisti_core::Backup> {
        Some(self)
    }

    /// Sets the secondary indexes aside when the store holds fewer than
    /// 10,000 rows (`BULK_LOAD_MAX_ROWS`), and builds them again at the end (see
    /// `migrate::set_indexes_aside`). At a million records this takes an import from keeping
    /// six B-trees in step, one at random (the content hashes), to appending rows and
    /// sorting each index once.
    fn bulk_load(&self, load: &mut dyn FnMut() -> Result<u64>) -> Result<u64> {
        let set_aside = set_indexes_aside(&mut self.writer(), BULK_LOAD_MAX_ROWS)?;
        let loaded = load();
        if set_aside {
            let restored = restore_indexes(&mut self.writer());
            let n = loaded?;
            restored?;
            return Ok(n);
        }
        loaded
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let records = Record::admit(records, &self.limits, self.now())?;
        // Rows are removed and replaced wholesale: the in-memory copies are dropped, as
        // after a purge, and loaded again when next used.
        self.write_then(
            |tx| {
                for r in &records {
                    import_in(tx, r)?;
                }
                Ok(records.len() as u64)
            },
            |_| self.cache.invalidate_all(),
        )
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        self.write_fresh(|tx| {
            let (memory, fresh) = update_in(tx, req, now, &self.limits)?;
            Ok((0, memory, vec![fresh]))
        })
    }

    /// One transaction for the batch: an update that fails on its request (its checks run
    /// before it writes anything) leaves the others; any other error writes nothing.
    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now();
        self.write_fresh(|tx| {
            let mut out = Vec::with_capacity(reqs.len());
            let mut fresh = Vec::with_capacity(reqs.len());
            for req in reqs {
                match req
                    .validate()
                    .and_then(|()| update_in(tx, req, now, &self.limits))
                {
                    Ok((memory, f)) => {
                        out.push(Ok(memory));
                        fresh.push(f);
                    }
                    Err(e) if e.kind().is_of_the_request() => out.push(Err(e)),
                    Err(e) => return Err(e),
                }
            }
            Ok((0, out, fresh))
        })
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let (partition, key) = match at {
            Locator::Id { tenant, id } => {
                return Ok(self.get_many(tenant, std::slice::from_ref(id))?.pop());
            }
            Locator::Key { partition, key } => (partition, key),
        };
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(GET_BY_KEY).map_err(sql_err)?;
            stmt.query_row(
                params![
                    partition.tenant.as_str(),
                    partition.namespace.as_str(),
                    key.as_str(),
                    self.now_ms()
                ],
                decode,
            )
            .optional()
            .map_err(sql_err)?
            .transpose()
        })
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        self.list_checked(query, &mut None)
    }

    /// One check for other processes' writes for all the queries, then [`Store::list`]'s
    /// reading of each.
    fn list_many(&self, queries: &[ListQuery]) -> Result<Vec<Page>> {
        let mut version = None;
        queries
            .iter()
            .map(|q| self.list_checked(q, &mut version))
            .collect()
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        if needs_rust_filter(filter) {
            return Ok(muisti_core::list_all(self, partition, filter)?.len() as u64);
        }
        self.read(|conn| {
            let mut sql = format!(
                "SELECT COUNT(*) FROM memories WHERE tenant = ? AND namespace = ? AND {LIVE}"
            );
            let mut args = vec![
                SqlValue::Text(partition.tenant.as_str().to_owned()),
                SqlValue::Text(partition.namespace.as_str().to_owned()),
                SqlValue::Integer(self.now_ms()),
            ];
            filter_sql(filter, &mut sql, &mut args);
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let n: i64 = stmt
                .query_row(rusqlite::params_from_iter(args), |r| r.get(0))
                .map_err(sql_err)?;
            Ok(n as u64)
        })
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now_ms();
        Ok(!self.delete_rows(std::slice::from_ref(at), now)?.is_empty())
    }

    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let at: Vec<Locator> = ids
            .iter()
            .map(|id| Locator::Id {
                tenant: tenant.clone(),
                id: *id,
            })
            .collect();
        let now = self.now_ms();
        self.delete_rows(&at, now)
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let out = self.flush_rows(partition);
        self.cache.invalidate(partition);
        if out.as_ref().is_ok_and(|n| *n > 0) {
            self.eraser.deleted(&self.writer);
        }
        out
    }

    fn erase_deleted(&self) -> Result<()> {
        // What the checkpoint cannot finish now (readers hold it) the eraser's thread does.
        if !self.eraser.now(&self.writer) {
            self.eraser.deleted(&self.writer);
        }
        Ok(())
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.namespaces_of(tenant)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // A small row per record in `memory_access`, not a rewrite of the record.
        let write = |tx: &rusqlite::Transaction<'_>| {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO memory_access (rowid, access_count, last_accessed_at) \
                     SELECT rowid, 1, ?1 FROM memories WHERE id = ?2 AND tenant = ?3 \
                     AND (expires_at IS NULL OR expires_at > ?1) \
                     ON CONFLICT (rowid) DO UPDATE SET access_count = access_count + 1, \
                     last_accessed_at = excluded.last_accessed_at",
                )
                .map_err(sql_err)?;
            for id in ids {
                stmt.execute(params![at.as_millis(), id.to_string(), tenant.as_str()])
                    .map_err(sql_err)?;
            }
            Ok(())
        };
        self.write_then(write, |_| self.cache.count_access(tenant, ids, at))
    }

    fn count_expired(&self) -> Result<u64> {
        let now = self.now_ms();
        self.read(|conn| {
            conn.prepare_cached(
                "SELECT COUNT(*) FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?",
            )
            .and_then(|mut stmt| stmt.query_row([now], |r| r.get::<_, i64>(0)))
            .map(|n| n.max(0) as u64)
            .map_err(sql_err)
        })
    }

    fn purge_expired(&self) -> Result<u64> {
        let n = self.write(|tx| purge_in(tx, self.now_ms()))?;
        if n > 0 {
            self.cache.invalidate_all();
            self.eraser.deleted(&self.writer);
        }
        Ok(n)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT DISTINCT tenant FROM memories WHERE {LIVE} ORDER BY tenant"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([self.now_ms()], |r| r.get::<_, String>(0))
                .map_err(sql_err)?;
            let mut out = Vec::new();
            for r in rows {
                let name = r.map_err(sql_err)?;
                out.push(Tenant::new(name).map_err(|e| Error::Corrupted {
                    location: self.path.display().to_string(),
                    reason: e.to_string(),
                })?);
            }
            Ok(out)
        })
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let now = self.now_ms();
        let n = self.write(|tx| {
            let mut stmt = tx
                .prepare_cached(&format!(
                    "UPDATE memories SET vector = ?, embedding_model = ? \
                     WHERE id = ? AND tenant = ? AND {LIVE}"
                ))
                .map_err(sql_err)?;
            let mut n = 0;
            for v in vectors {
                n += stmt
                    .execute(params![
                        vector_to_bytes(&v.vector),
                        v.model,
                        v.id.to_string(),
                        tenant.as_str(),
                        now
                    ])
                    .map_err(sql_err)? as u64;
            }
            Ok(n)
        })?;
        self.cache.invalidate_all();
        Ok(n)
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        let part = self.cached(&query.partition, query.filter.user_id.as_deref())?;
        Ok(part.nearest(&query.filter, &query.vector, query.limit, self.now()))
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        Ok(self
            .get_many_shared(tenant, ids)?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    /// The decoded records this store keeps, handed out as they are kept.
    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        // After checking that no other process wrote.
        self.cache.validate(self.data_version()?);
        self.read_records(tenant, ids)
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.read(|conn| {
            let mut sql = format!(
                "SELECT id, embedding_model, vector, {COLUMNS} FROM memories \
                 WHERE tenant = ? AND namespace = ? AND {LIVE} AND vector IS NOT NULL"
            );
            let mut args = partition_args(partition, self.now_ms());
            filter_sql(filter, &mut sql, &mut args);
            let rust_filter = needs_rust_filter(filter);
            let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
            let mut rows = stmt
                .query(rusqlite::params_from_iter(args))
                .map_err(sql_err)?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().map_err(sql_err)? {
                if rust_filter {
                    let m = decode_from(row, 3).map_err(sql_err)??;
                    if !filter.matches(&m) {
                        continue;
                    }
                }
                let id: String = row.get(0).map_err(sql_err)?;
                let model: Option<String> = row.get(1).map_err(sql_err)?;
                let blob: Vec<u8> = row.get(2).map_err(sql_err)?;
                let corrupted = |what: &str| Error::Corrupted {
                    location: format!("sqlite row id {id}"),
                    reason: what.to_owned(),
                };
                out.push(StoredVector {
                    id: MemoryId::parse(&id).map_err(|_| corrupted("bad id"))?,
                    model: model.ok_or_else(|| corrupted("a vector without a model"))?,
                    vector: vector_from_bytes(&blob).ok_or_else(|| corrupted("bad vector"))?,
                });
            }
            Ok(out)
        })
    }

    fn vectors_for(&self, records: &[Memory]) -> Result<Vec<Option<Vec<f32>>>> {
        let now = self.now_ms();
        let mut found: HashMap<String, Vec<f32>> = HashMap::with_capacity(records.len());
        self.read(|conn| {
            for chunk in records.chunks(500) {
                let marks = vec!["(?, ?)"; chunk.len()].join(", ");
                let sql = format!(
                    "SELECT id, vector FROM memories WHERE (tenant, id) IN (VALUES {marks}) \
                     AND vector IS NOT NULL AND {LIVE}"
                );
                let mut args: Vec<SqlValue> = Vec::with_capacity(chunk.len() * 2 + 1);
                for m in chunk {
                    args.push(SqlValue::Text(m.partition.tenant.as_str().to_owned()));
                    args.push(SqlValue::Text(m.id.to_string()));
                }
                args.push(SqlValue::Integer(now));
                let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(args))
                    .map_err(sql_err)?;
                while let Some(row) = rows.next().map_err(sql_err)? {
                    let id: String = row.get(0).map_err(sql_err)?;
                    let blob: Vec<u8> = row.get(1).map_err(sql_err)?;
                    let vector = vector_from_bytes(&blob).ok_or_else(|| Error::Corrupted {
                        location: format!("sqlite row id {id}"),
                        reason: "bad vector".into(),
                    })?;
                    found.insert(id, vector);
                }
            }
            Ok(())
        })?;
        Ok(records
            .iter()
            .map(|m| {
                found
                    .remove(&m.id.to_string())
                    .filter(|_| m.embedding_model.is_some())
            })
            .collect())
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let terms = query_terms(&query.query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let part = self.cached(&query.partition, query.filter.user_id.as_deref())?;
        let terms = part.corrected(&query.query, terms, &query.filter, self.now());
        Ok(part.bm25(&query.filter, &terms, query.limit, self.now()))
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        // From the copies the searches just used; the database for ids no copy holds (a
        // copy dropped meanwhile, or ids from elsewhere).
        let now = self.now();
        let cached = self.cache.rank_fields(partition, ids, now);
        if cached.iter().all(Option::is_some) {
            return Ok(cached.into_iter().flatten().flatten().collect());
        }
        // Those as the store's records say (the store contract's own reading).
        let missing: Vec<MemoryId> = ids
            .iter()
            .zip(&cached)
            .filter(|(_, c)| c.is_none())
            .map(|(id, _)| *id)
            .collect();
        let read: HashMap<MemoryId, RankFields> = self
            .get_many(&partition.tenant, &missing)?
            .iter()
            .filter(|m| m.partition == *partition)
            .map(|m| (m.id, RankFields::of(m)))
            .collect();
        Ok(ids
            .iter()
            .zip(cached)
            .filter_map(|(id, c)| c.unwrap_or_else(|| read.get(id).cloned()))
            .collect())
    }

    fn health_check(&self) -> Health {
        match self.read(|c| {
            c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))
                .map_err(sql_err)
        }) {
            Ok(_) => Health {
                ok: true,
                detail: format!("sqlite {}", self.path.display()),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }
}
