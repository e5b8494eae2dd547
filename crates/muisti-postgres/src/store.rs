//! The store contract over PostgreSQL: each call of [`Store`] on [`PostgresStore`].

use super::*;

impl Store for PostgresStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "postgres",
            location: self.location.clone(),
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
        let slot = self.coherent.slot();
        let written = self.write(|tx| {
            purge_in(tx, now.as_millis())?;
            let w = put_in(tx, &put, now)?;
            copies::bump(tx, slot, &mut copies::by_partition([copies::of(&w.memory)]))?;
            Ok(w)
        })?;
        self.wrote(1);
        Ok(written)
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let now = self.now();
        let slot = self.coherent.slot();
        let written: Vec<Written> = self.write(|tx| {
            purge_in(tx, now.as_millis())?;
            let written = puts
                .iter()
                .map(|p| put_in(tx, p, now))
                .collect::<TxResult<Vec<_>>>()?;
            copies::bump(
                tx,
                slot,
                &mut copies::by_partition(written.iter().map(|w| copies::of(&w.memory))),
            )?;
            Ok(written)
        })?;
        self.wrote(written.len());
        Ok(written)
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let live = Record::admit(records, &self.limits, self.now())?;
        let slot = self.coherent.slot();
        self.write(|tx| {
            let mut changed: Vec<(Partition, MemoryId)> = Vec::with_capacity(live.len());
            for r in &live {
                let m = &r.memory;
                let gone = tx.query(
                    "DELETE FROM memories WHERE tenant = $1 AND (id = $2 OR \
                     (namespace = $3 AND key = $4)) RETURNING id, namespace",
                    &[
                        &m.partition.tenant.as_str(),
                        &m.id.to_string(),
                        &m.partition.namespace.as_str(),
                        &m.key.as_str(),
                    ],
                )?;
                for row in &gone {
                    changed.push(self.located(&m.partition.tenant, row)?);
                }
                let vector = match &r.vector {
                    Some(v) => VectorChange::Set(v.clone()),
                    None => VectorChange::Drop,
                };
                write_row(tx, m, &vector, None)?;
                changed.push((m.partition.clone(), m.id));
            }
            self.bump_located(tx, slot, &changed)?;
            Ok(())
        })?;
        self.wrote(live.len());
        Ok(live.len() as u64)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        let slot = self.coherent.slot();
        self.write(|tx| {
            let memory = self.update_in(tx, req, now)??;
            copies::bump(tx, slot, &mut copies::by_partition([copies::of(&memory)]))?;
            Ok(memory)
        })
    }

    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        let now = self.now();
        let slot = self.coherent.slot();
        // One transaction for the batch (maintenance updates thousands), each request as
        // `update` runs it: one that cannot apply is its own error, the others go on.
        self.write(|tx| {
            let mut out = Vec::with_capacity(reqs.len());
            for req in reqs {
                if let Err(e) = req.validate() {
                    out.push(Err(e));
                    continue;
                }
                out.push(self.update_in(tx, req, now)?);
            }
            let written = out.iter().filter_map(|r| r.as_ref().ok());
            copies::bump(tx, slot, &mut copies::by_partition(written.map(copies::of)))?;
            Ok(out)
        })
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let now = self.now().as_millis();
        let mut sql = Sql::new(format!("SELECT {COLUMNS} FROM memories WHERE tenant = "));
        let t = sql.arg(at.tenant().as_str().to_owned());
        sql.push(&t);
        sql.and_live(now);
        match at {
            Locator::Key { partition, key } => {
                sql.and("namespace = {}", partition.namespace.as_str().to_owned());
                sql.and("key = {}", key.as_str().to_owned());
            }
            Locator::Id { id, .. } => sql.and("id = {}", id.to_string()),
        }
        let rows = self.query(&sql)?;
        rows.first().map(decode).transpose()
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
        // A copy held (made current) answers; no copy is loaded for a list.
        if self.coherent.copies.held(&query.partition).is_some()
            && let Some(copy) = self.copy_of(&query.partition)?
        {
            let items = copy.read().unwrap_or_else(|e| e.into_inner()).list(
                &query.filter,
                query.after,
                size.saturating_add(1),
                self.now(),
            );
            return Ok(Page::from_sorted(items, size));
        }
        let mut sql = Sql::partition(
            COLUMNS,
            &query.partition,
            &query.filter,
            self.now().as_millis(),
        );
        if let Some(after) = query.after {
            sql.and("id > {}", after.to_string());
        }
        let limit = sql.arg((size + 1) as i64);
        sql.push(&format!(" ORDER BY id LIMIT {limit}"));
        let items = Self::decode_all(&self.query(&sql)?)?;
        Ok(Page::from_sorted(items, size))
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        let sql = Sql::partition("count(*)", partition, filter, self.now().as_millis());
        let rows = self.query(&sql)?;
        let n: i64 = rows.first().map(|r| get(r, 0)).transpose()?.unwrap_or(0);
        Ok(n as u64)
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now().as_millis();
        let slot = self.coherent.slot();
        self.write(|tx| {
            let rows = match at {
                Locator::Key { partition, key } => tx.query(
                    &format!(
                        "DELETE FROM memories WHERE tenant = $1 AND namespace = $2 AND key = $3 \
                         AND {} RETURNING id, namespace",
                        live(4)
                    ),
                    &[
                        &partition.tenant.as_str(),
                        &partition.namespace.as_str(),
                        &key.as_str(),
                        &now,
                    ],
                )?,
                Locator::Id { tenant, id } => tx.query(
                    &format!(
                        "DELETE FROM memories WHERE id = $1 AND tenant = $2 AND {} \
                         RETURNING id, namespace",
                        live(3)
                    ),
                    &[&id.to_string(), &tenant.as_str(), &now],
                )?,
            };
            let Some(row) = rows.first() else {
                return Ok(false);
            };
            let (p, id) = self.located(at.tenant(), row)?;
            copies::bump(tx, slot, &mut [(&p, copies::Changed::Ids(vec![&id]))])?;
            Ok(true)
        })
    }

    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.now().as_millis();
        let slot = self.coherent.slot();
        let wanted: Vec<String> = ids.iter().map(MemoryId::to_string).collect();
        // One statement and one transaction for the batch (maintenance deletes thousands).
        let mut gone: std::collections::HashSet<MemoryId> = self.write(|tx| {
            let rows = tx.query(
                &format!(
                    "DELETE FROM memories WHERE tenant = $1 AND id = ANY($2) AND {} \
                     RETURNING id, namespace",
                    live(3)
                ),
                &[&tenant.as_str(), &wanted, &now],
            )?;
            let changed = self.bump_returned(tx, slot, tenant, &rows)?;
            Ok(changed.into_iter().map(|(_, id)| id).collect())
        })?;
        // In the order given, each once (as one delete after another reports them).
        Ok(ids.iter().filter(|id| gone.remove(id)).copied().collect())
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        let now = self.now().as_millis();
        let slot = self.coherent.slot();
        let n = self.write(|tx| {
            let row = tx.query_one(
                "WITH gone AS (DELETE FROM memories WHERE tenant = $1 AND namespace = $2 \
                 RETURNING expires_at) \
                 SELECT count(*) FROM gone WHERE expires_at IS NULL OR expires_at > $3",
                &[
                    &partition.tenant.as_str(),
                    &partition.namespace.as_str(),
                    &now,
                ],
            )?;
            let n: i64 = row.get(0);
            copies::bump(tx, slot, &mut [(partition, copies::Changed::All)])?;
            Ok(n as u64)
        })?;
        self.coherent.copies.drop_copy(partition);
        Ok(n)
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let rows = self.query_with(
            &format!(
                "SELECT DISTINCT namespace FROM memories WHERE tenant = $1 AND {} \
                 ORDER BY namespace",
                live(2)
            ),
            &[&tenant.as_str(), &self.now().as_millis()],
        )?;
        rows.iter()
            .map(|r| {
                Namespace::new(get::<String>(r, 0)?).map_err(|e| Error::Corrupted {
                    location: self.location.clone(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let rows = self.query_with(
            &format!(
                "SELECT DISTINCT tenant FROM memories WHERE {} ORDER BY tenant",
                live(1)
            ),
            &[&self.now().as_millis()],
        )?;
        rows.iter()
            .map(|r| {
                Tenant::new(get::<String>(r, 0)?).map_err(|e| Error::Corrupted {
                    location: self.location.clone(),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        if vectors.is_empty() {
            return Ok(0);
        }
        let now = self.now().as_millis();
        let slot = self.coherent.slot();
        self.write(|tx| {
            let sql = format!(
                "UPDATE memories SET embedding = $1, dims = $2, embedding_model = $3 \
                 WHERE id = $4 AND tenant = $5 AND {} RETURNING id, namespace",
                live(6)
            );
            let mut changed = Vec::new();
            for v in vectors {
                let rows = tx.query(
                    &sql,
                    &[
                        &pgvector::Vector::from(v.vector.clone()),
                        &(v.vector.len() as i32),
                        &v.model,
                        &v.id.to_string(),
                        &tenant.as_str(),
                        &now,
                    ],
                )?;
                for row in &rows {
                    changed.push(self.located(tenant, row)?);
                }
            }
            self.bump_located(tx, slot, &changed)?;
            Ok(changed.len() as u64)
        })
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let ids: Vec<String> = ids.iter().map(MemoryId::to_string).collect();
        let slot = self.coherent.slot();
        // An id given twice counts twice.
        self.write_as(ReadBack::WithinTheBound, |tx| {
            let rows = tx.query(
                "UPDATE memories m SET access_count = m.access_count + c.n, \
                 last_accessed_at = $1 \
                 FROM (SELECT id, count(*) AS n FROM unnest($2::text[]) AS id GROUP BY id) c \
                 WHERE m.id = c.id AND m.tenant = $3 \
                 AND (m.expires_at IS NULL OR m.expires_at > $1) RETURNING m.id, m.namespace",
                &[&at.as_millis(), &ids, &tenant.as_str()],
            )?;
            self.bump_returned(tx, slot, tenant, &rows)?;
            Ok(())
        })
    }

    fn purge_expired(&self) -> Result<u64> {
        let now = self.now().as_millis();
        self.write(|tx| purge_in(tx, now))
    }

    fn count_expired(&self) -> Result<u64> {
        let rows = self.query_with(
            "SELECT COUNT(*) FROM memories WHERE expires_at IS NOT NULL AND expires_at <= $1",
            &[&self.now().as_millis()],
        )?;
        let n: i64 = rows.first().map(|r| get(r, 0)).transpose()?.unwrap_or(0);
        Ok(n.max(0) as u64)
    }

    fn health_check(&self) -> Health {
        let answer = self
            .pool
            .get()
            .and_then(|mut c| c.query_one("SELECT 1", &[]).map_err(|e| self.pool.err(&e)));
        match answer {
            Ok(_) => Health {
                ok: true,
                detail: format!("postgres {}", self.location),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        let mut sql = Sql::partition(
            "id, embedding_model, embedding",
            partition,
            filter,
            self.now().as_millis(),
        );
        sql.push(" AND embedding IS NOT NULL");
        self.query(&sql)?
            .iter()
            .map(|r| {
                let id: String = get(r, 0)?;
                let corrupted = |what: &str| Error::Corrupted {
                    location: format!("postgres row id {id}"),
                    reason: what.to_owned(),
                };
                let model: Option<String> = get(r, 1)?;
                let vector: pgvector::Vector = get(r, 2)?;
                Ok(StoredVector {
                    id: parse_id(&id)?,
                    model: model.ok_or_else(|| corrupted("a vector without a model"))?,
                    vector: vector.to_vec(),
                })
            })
            .collect()
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        if query.limit == 0 || query.vector.is_empty() {
            return Ok(Vec::new());
        }
        let dims = query.vector.len();
        if query.filter.user_id.is_none() {
            // Past the threshold an unfiltered search goes through the database's index.
            self.ann.ensure(dims);
            if self.ann.cached_ready(dims) {
                return self.db_vector_search(query);
            }
        }
        match self.copy_of(&query.partition)? {
            Some(copy) => Ok(copy
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .vector_search(&query.vector, &query.filter, query.limit, self.now())),
            None => self.db_vector_search(query),
        }
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        match self.copy_of(&query.partition)? {
            Some(copy) => Ok(copy.read().unwrap_or_else(|e| e.into_inner()).text_search(
                &query.query,
                &query.filter,
                query.limit,
                self.now(),
            )),
            None => self.db_text_search(query),
        }
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        match self.copy_of(partition)? {
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
}
