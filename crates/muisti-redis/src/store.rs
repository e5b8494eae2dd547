//! The store contract over Redis: each call of [`Store`] on [`RedisStore`].

use super::*;

impl Store for RedisStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "redis",
            location: format!("{} (prefix {})", self.target, self.prefix),
            capabilities: Capabilities {
                native_text: false,
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
        self.with_conn(Route::Tenant(&put.partition.tenant), |c| {
            let mut w = self.put_batch(c, std::slice::from_ref(&put))?;
            w.pop()
                .ok_or_else(|| Fail::Muisti(Error::backend("redis", "empty transaction result")))
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        let mut out = Vec::with_capacity(puts.len());
        // In a cluster a transaction holds one tenant's keys: a batch is written as runs of
        // one tenant, each chunk its own transaction (so a chunk retried after a failover
        // repeats nothing another committed).
        let same =
            |a: &Put, b: &Put| !self.is_cluster() || a.partition.tenant == b.partition.tenant;
        for run in puts.chunk_by(same) {
            let route = Route::Tenant(&run[0].partition.tenant);
            for chunk in run.chunks(CHUNK) {
                out.extend(self.with_conn(route, |c| self.put_batch(c, chunk))?);
            }
        }
        Ok(out)
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let admitted = Record::admit(records, &self.limits, self.now())?;
        let live: Vec<&Record> = admitted.iter().collect();
        for chunk in live.chunks(CHUNK) {
            let mut tenants: Vec<&Tenant> =
                chunk.iter().map(|r| &r.memory.partition.tenant).collect();
            tenants.sort_unstable();
            tenants.dedup();
            for tenant in tenants {
                let mine: Vec<&Record> = chunk
                    .iter()
                    .copied()
                    .filter(|r| r.memory.partition.tenant == *tenant)
                    .collect();
                self.with_conn(Route::Tenant(tenant), |c| {
                    self.import_batch(c, tenant, &mine)
                })?;
            }
        }
        Ok(live.len() as u64)
    }

    fn vectors_for(&self, records: &[Memory]) -> Result<Vec<Option<Vec<f32>>>> {
        let mut out = Vec::with_capacity(records.len());
        // Runs of one tenant, each read in one MGET per chunk.
        for run in records.chunk_by(|a, b| a.partition.tenant == b.partition.tenant) {
            let tenant = &run[0].partition.tenant;
            out.extend(self.with_conn(Route::Tenant(tenant), |c| self.vectors_of(c, tenant, run))?);
        }
        Ok(out)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let tenant = req.at.tenant();
        self.with_conn(Route::Tenant(tenant), |c| {
            self.update_batch(c, tenant, std::slice::from_ref(req))
        })?
        .pop()
        .unwrap_or_else(|| Err(Error::backend("redis", "empty transaction result")))
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        self.with_conn(Route::Tenant(at.tenant()), |c| {
            Ok(self.find(c, at)?.map(|(_, m)| m))
        })
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        let size = query.page_size();
        let now = self.now();
        self.with_conn(Route::Tenant(&query.partition.tenant), |c| {
            // A copy held and current answers (no copy is loaded for a list).
            let items = match self.current(c, &query.partition)? {
                Some(copy) => copy.read().unwrap_or_else(|e| e.into_inner()).list(
                    &query.filter,
                    query.after,
                    size.saturating_add(1),
                    now,
                ),
                None => {
                    self.scan_index(c, &query.partition, &query.filter, query.after, size + 1)?
                }
            };
            Ok(Page::from_sorted(items, size))
        })
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        let now = self.now();
        self.with_conn(Route::Tenant(&partition.tenant), |c| {
            Ok(match self.current(c, partition)? {
                Some(copy) => copy
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .count(filter, now) as u64,
                None => self
                    .scan_index(c, partition, filter, None, usize::MAX)?
                    .len() as u64,
            })
        })
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        self.with_conn(Route::Tenant(at.tenant()), |c| self.delete_record(c, at))
    }

    fn update_many(&self, reqs: &[UpdateRequest]) -> Result<Vec<Result<Memory>>> {
        let mut out = Vec::with_capacity(reqs.len());
        // One transaction a chunk of one tenant's requests (a cluster's transaction holds
        // one tenant's keys): a chunk run again after a failover repeats no other's.
        for run in reqs.chunk_by(|a, b| a.at.tenant() == b.at.tenant()) {
            let tenant = run[0].at.tenant();
            for chunk in run.chunks(CHUNK) {
                out.extend(self.with_conn(Route::Tenant(tenant), |c| {
                    self.update_batch(c, tenant, chunk)
                })?);
            }
        }
        Ok(out)
    }

    fn delete_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<MemoryId>> {
        let mut out = Vec::with_capacity(ids.len());
        // One transaction a call: a call run again after a failover repeats no other's.
        for chunk in ids.chunks(CHUNK) {
            out.extend(self.with_conn(Route::Tenant(tenant), |c| {
                self.delete_batch(c, tenant, chunk)
            })?);
        }
        // Each once, in the order given, also across chunks.
        let mut seen = std::collections::HashSet::new();
        out.retain(|id| seen.insert(*id));
        Ok(out)
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        // Counted outside the call: run again after a failover, it finds only the records
        // left, and adds their count to those already deleted.
        let mut n = 0;
        self.with_conn(Route::Tenant(&partition.tenant), |c| {
            let live = self.scan_index(c, partition, &Filter::default(), None, usize::MAX)?;
            let index = self.index_key(partition);
            for chunk in live.chunks(CHUNK) {
                let mut pipe = redis::pipe();
                pipe.atomic();
                for m in chunk {
                    pipe.del(self.record_key(partition, m.key.as_str()))
                        .ignore();
                    pipe.del(self.id_key(&partition.tenant, m.id)).ignore();
                    pipe.del(self.vector_key(&partition.tenant, m.id)).ignore();
                    pipe.zrem(&index, index_member(m)).ignore();
                }
                self.queue_bump(&mut pipe, partition, "*");
                pipe.ignore();
                {
                    let _order = self.commit_order();
                    pipe.exec(c)?;
                }
                n += chunk.len() as u64;
                self.replicated(c)?;
            }
            // Remove the index and the namespace entry only if no writer added to it since.
            redis::cmd("WATCH").arg(&index).exec(c)?;
            let left: u64 = c.zcard(&index)?;
            if left == 0 {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .del(&index)
                    .ignore()
                    .srem(
                        self.tenant_key(&partition.tenant),
                        partition.namespace.as_str(),
                    )
                    .ignore();
                let _: Option<()> = pipe.query(c)?;
            } else {
                redis::cmd("UNWATCH").exec(c)?;
            }
            self.copies.drop_copy(partition);
            Ok(())
        })?;
        Ok(n)
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        self.with_conn(Route::Tenant(tenant), |c| {
            let mut out = Vec::new();
            for ns in self.namespaces_of(c, tenant)? {
                let p = Partition::new(tenant.clone(), ns);
                if !self
                    .scan_index(c, &p, &Filter::default(), None, 1)?
                    .is_empty()
                {
                    out.push(p.namespace);
                }
            }
            Ok(out)
        })
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        let counts = muisti_core::touch_counts(ids);
        // One transaction a call: a call run again after a failover repeats no other's.
        for chunk in counts.chunks(CHUNK) {
            self.with_conn(Route::Tenant(tenant), |c| {
                self.touch_batch(c, tenant, chunk, at)
            })?;
        }
        Ok(())
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        self.with_conn(Route::Tenant(&partition.tenant), |c| {
            let live = self.scan_index(c, partition, filter, None, usize::MAX)?;
            let vectors = self.vectors_of(c, &partition.tenant, &live)?;
            Ok(live
                .into_iter()
                .zip(vectors)
                .filter_map(|(m, v)| {
                    Some(StoredVector {
                        id: m.id,
                        model: m.embedding_model?,
                        vector: v?,
                    })
                })
                .collect())
        })
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        let now = self.now();
        self.with_conn(Route::Tenant(&query.partition.tenant), |c| {
            let copy = self.copy_of(c, &query.partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.text_search(&query.query, &query.filter, query.limit, now))
        })
    }

    fn vector_search(&self, query: &VectorQuery) -> Result<Vec<Scored>> {
        let now = self.now();
        self.with_conn(Route::Tenant(&query.partition.tenant), |c| {
            let copy = self.copy_of(c, &query.partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.vector_search(&query.vector, &query.filter, query.limit, now))
        })
    }

    fn rank_fields(&self, partition: &Partition, ids: &[MemoryId]) -> Result<Vec<RankFields>> {
        let now = self.now();
        self.with_conn(Route::Tenant(&partition.tenant), |c| {
            let copy = self.copy_of(c, partition)?;
            let copy = copy.read().unwrap_or_else(|e| e.into_inner());
            Ok(copy.rank_fields(ids, now))
        })
    }

    fn get_many(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        Ok(self
            .get_many_shared(tenant, ids)?
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect())
    }

    fn get_many_shared(&self, tenant: &Tenant, ids: &[MemoryId]) -> Result<Vec<Arc<Memory>>> {
        let now = self.now();
        self.with_conn(Route::Tenant(tenant), |c| {
            // Copies of the tenant's partitions answer if confirmed within the staleness
            // window, or their versions are current; other ids are read one by one.
            let mut fresh = Vec::new();
            let mut unsure = Vec::new();
            for (p, copy, have, recent) in self.copies.held_for(tenant, self.staleness) {
                if recent {
                    fresh.push(copy);
                } else {
                    unsure.push((p, copy, have));
                }
            }
            if !unsure.is_empty() {
                // Their versions in one round trip (recall reads records this way).
                let ps: Vec<&Partition> = unsure.iter().map(|(p, _, _)| p).collect();
                let now = self.versions_now(c, &ps)?;
                for ((_, copy, have), now) in unsure.into_iter().zip(now) {
                    if have == now {
                        fresh.push(copy);
                    }
                }
            }
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let cached = fresh.iter().find_map(|copy| {
                    copy.read()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_shared(id, now)
                });
                let found = match cached {
                    Some(m) => Some(m),
                    None => self
                        .find(
                            c,
                            &Locator::Id {
                                tenant: tenant.clone(),
                                id: *id,
                            },
                        )?
                        .map(|(_, m)| Arc::new(m)),
                };
                out.extend(found);
            }
            Ok(out)
        })
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let mut out = Vec::new();
        for tenant in self.tenant_names()? {
            let live = self.with_conn(Route::Tenant(&tenant), |c| {
                for ns in self.namespaces_of(c, &tenant)? {
                    let p = Partition::new(tenant.clone(), ns);
                    if !self
                        .scan_index(c, &p, &Filter::default(), None, 1)?
                        .is_empty()
                    {
                        return Ok(true);
                    }
                }
                Ok(false)
            })?;
            if live {
                out.push(tenant);
            }
        }
        Ok(out)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        let mut n = 0;
        // One transaction a call: a call run again after a failover repeats no other's.
        for v in vectors {
            let changed = self.with_conn(Route::Tenant(tenant), |c| {
                self.update_by_id(
                    c,
                    tenant,
                    v.id,
                    |m| m.embedding_model = Some(v.model.clone()),
                    |pipe, m| {
                        let mut vset = redis::cmd("SET");
                        vset.arg(self.vector_key(tenant, v.id))
                            .arg(vector_to_bytes(&v.vector));
                        if let Some(exp) = m.expires_at {
                            vset.arg("PXAT").arg(exp.as_millis());
                        }
                        pipe.add_command(vset).ignore();
                    },
                    |copy, m| copy.upsert(m.clone(), Some(&v.vector)),
                )
            })?;
            n += u64::from(changed);
        }
        Ok(n)
    }

    fn purge_expired(&self) -> Result<u64> {
        // Records expire natively; this drops the index entries they leave behind.
        for tenant in self.tenant_names()? {
            self.with_conn(Route::Tenant(&tenant), |c| {
                for ns in self.namespaces_of(c, &tenant)? {
                    let p = Partition::new(tenant.clone(), ns);
                    self.scan_index(c, &p, &Filter::default(), None, usize::MAX)?;
                }
                Ok(())
            })?;
        }
        Ok(0)
    }

    fn count_expired(&self) -> Result<u64> {
        // Records expire natively: none wait for a purge.
        Ok(0)
    }

    fn health_check(&self) -> Health {
        match self.ping() {
            Ok(pong) => Health {
                ok: true,
                detail: format!("{} answered {pong}", self.target),
            },
            Err(e) => Health {
                ok: false,
                detail: e.to_string(),
            },
        }
    }
}
