//! Writing: batches of puts, imports and updates, deletes under `WATCH`, touches; each write
//! queues the bump of its partitions' generations (for the copies).

use super::*;

impl RedisStore {
    /// Validated writes as one WATCH/MULTI transaction, retried until it applies: one round
    /// trip to read what the keys hold, one to write everything.
    pub(crate) fn put_batch(&self, c: &mut Connection, puts: &[Put]) -> Result<Vec<Written>, Fail> {
        let now = self.now();
        let keyed: Vec<Option<String>> = puts
            .iter()
            .map(|p| {
                p.key
                    .as_ref()
                    .map(|k| self.record_key(&p.partition, k.as_str()))
            })
            .collect();
        let mut watched: Vec<&String> = keyed.iter().flatten().collect();
        watched.sort_unstable();
        watched.dedup();
        loop {
            let mut current: HashMap<String, Option<Memory>> = HashMap::new();
            if !watched.is_empty() {
                redis::cmd("WATCH").arg(&watched).exec(c)?;
                let values: Vec<Option<String>> = redis::cmd("MGET").arg(&watched).query(c)?;
                for (k, v) in watched.iter().zip(values) {
                    let m = match v {
                        Some(json) => Some(self.decode(k, &json)?).filter(|m| !m.is_expired(now)),
                        None => None,
                    };
                    current.insert((*k).clone(), m);
                }
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            let mut out = Vec::with_capacity(puts.len());
            let mut vectors = Vec::with_capacity(puts.len());
            for (put, rkey) in puts.iter().zip(&keyed) {
                let existing = rkey
                    .as_ref()
                    .and_then(|k| current.get(k).cloned().flatten());
                let mut put = put.clone();
                let vector = put.embedding.take();
                let memory = put.apply(existing.as_ref(), now);
                let status = if existing.is_some() {
                    WriteStatus::Updated
                } else {
                    WriteStatus::Created
                };
                let rkey = rkey
                    .clone()
                    .unwrap_or_else(|| self.record_key(&memory.partition, memory.key.as_str()));
                self.queue_write(&mut pipe, &rkey, &memory, vector.as_deref())?;
                current.insert(rkey, Some(memory.clone()));
                out.push(Written { memory, status });
                vectors.push(vector);
            }
            let written: Vec<(&Written, Option<&[f32]>)> = out
                .iter()
                .zip(vectors.iter().map(Option::as_deref))
                .collect();
            if self.commit(
                c,
                Ack::Replicated,
                pipe,
                &written,
                |(w, _)| &w.memory,
                |copy, (w, v)| copy.upsert(w.memory.clone(), *v),
            )? {
                return Ok(out);
            }
        }
    }

    /// Whole records of one tenant written as they are (see `Store::import`) in one
    /// WATCH/MULTI transaction, retried until it applies: the record at each key with
    /// another id, and each id's record at another key, are removed in the same transaction.
    pub(crate) fn import_batch(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        records: &[&Record],
    ) -> Result<(), Fail> {
        let rkeys: Vec<String> = records
            .iter()
            .map(|r| self.record_key(&r.memory.partition, r.memory.key.as_str()))
            .collect();
        let ids: Vec<MemoryId> = records.iter().map(|r| r.memory.id).collect();
        let mut watched: Vec<String> = rkeys.clone();
        watched.extend(ids.iter().map(|id| self.id_key(tenant, *id)));
        watched.sort_unstable();
        watched.dedup();
        loop {
            redis::cmd("WATCH").arg(&watched).exec(c)?;
            let at_keys: Vec<Option<String>> = redis::cmd("MGET").arg(&rkeys).query(c)?;
            let located = self.locate(c, tenant, &ids)?;
            let mut pipe = redis::pipe();
            pipe.atomic();
            // (record, its vector, whether it is removed): removals first, so a copy that
            // applies them in order ends with the imported records.
            let mut removed: Vec<Memory> = Vec::new();
            for ((r, rkey), (json, found)) in records
                .iter()
                .zip(&rkeys)
                .zip(at_keys.into_iter().zip(located))
            {
                if let Some(json) = json {
                    let old = self.decode(rkey, &json)?;
                    if old.id != r.memory.id {
                        pipe.del(self.id_key(tenant, old.id))
                            .ignore()
                            .del(self.vector_key(tenant, old.id))
                            .ignore()
                            .zrem(self.index_key(&old.partition), index_member(&old))
                            .ignore();
                        removed.push(old);
                    }
                }
                if let Some((elsewhere, Some(json))) = found
                    && elsewhere != *rkey
                {
                    let old = self.decode(&elsewhere, &json)?;
                    pipe.del(&elsewhere)
                        .ignore()
                        .zrem(self.index_key(&old.partition), index_member(&old))
                        .ignore();
                    removed.push(old);
                }
            }
            for (r, rkey) in records.iter().zip(&rkeys) {
                self.queue_write(&mut pipe, rkey, &r.memory, r.vector.as_deref())?;
            }
            let changed: Vec<(&Memory, Option<&[f32]>, bool)> = removed
                .iter()
                .map(|m| (m, None, true))
                .chain(
                    records
                        .iter()
                        .map(|r| (&r.memory, r.vector.as_deref(), false)),
                )
                .collect();
            if self.commit(
                c,
                Ack::Replicated,
                pipe,
                &changed,
                |(m, _, _)| m,
                |copy, (m, v, gone)| {
                    if *gone {
                        copy.remove(m.id);
                    } else {
                        copy.upsert((*m).clone(), *v);
                    }
                },
            )? {
                return Ok(());
            }
        }
    }

    /// Adds the commands that store `memory` at `rkey` to a transaction.
    pub(crate) fn queue_write(
        &self,
        pipe: &mut redis::Pipeline,
        rkey: &str,
        memory: &Memory,
        vector: Option<&[f32]>,
    ) -> Result<(), Fail> {
        let json =
            serde_json::to_string(memory).map_err(|e| Fail::Muisti(Error::backend("redis", e)))?;
        let p = &memory.partition;
        let mut set = redis::cmd("SET");
        set.arg(rkey).arg(json);
        let mut ptr = redis::cmd("SET");
        ptr.arg(self.id_key(&p.tenant, memory.id))
            .arg(format!("{}/{}", p.namespace, memory.key));
        if let Some(exp) = memory.expires_at {
            set.arg("PXAT").arg(exp.as_millis());
            ptr.arg("PXAT").arg(exp.as_millis());
        }
        let vkey = self.vector_key(&p.tenant, memory.id);
        match vector {
            Some(v) => {
                let mut vset = redis::cmd("SET");
                vset.arg(&vkey).arg(vector_to_bytes(v));
                if let Some(exp) = memory.expires_at {
                    vset.arg("PXAT").arg(exp.as_millis());
                }
                pipe.add_command(vset).ignore();
            }
            None => {
                pipe.del(&vkey).ignore();
            }
        }
        pipe.add_command(set).ignore();
        pipe.add_command(ptr).ignore();
        pipe.cmd("ZADD")
            .arg(self.index_key(p))
            .arg(0)
            .arg(index_member(memory))
            .ignore();
        pipe.cmd("SADD")
            .arg(self.tenant_key(&p.tenant))
            .arg(p.namespace.as_str())
            .ignore();
        if !self.is_cluster() {
            // A cluster lists its tenants by asking each master (the set would be one key
            // of one slot, outside every tenant's transactions).
            pipe.cmd("SADD")
                .arg(self.tenants_key())
                .arg(p.tenant.as_str())
                .ignore();
        }
        Ok(())
    }

    /// Finds the live record a locator addresses and WATCHes its key, re-reading it under
    /// the watch (so a transaction queued next applies only if it did not change since).
    /// `None` when there is no such record (nothing left watched).
    pub(crate) fn watch_record(
        &self,
        c: &mut Connection,
        at: &Locator,
    ) -> Result<Option<(String, Memory)>, Fail> {
        loop {
            let Some((rkey, _)) = self.find(c, at)? else {
                return Ok(None);
            };
            redis::cmd("WATCH").arg(&rkey).exec(c)?;
            let json: Option<String> = c.get(&rkey)?;
            let Some(json) = json else {
                // Gone between the lookup and the watch: look again.
                redis::cmd("UNWATCH").exec(c)?;
                continue;
            };
            let m = self.decode(&rkey, &json)?;
            if !at.addresses(&m) || m.is_expired(self.now()) {
                redis::cmd("UNWATCH").exec(c)?;
                return Ok(None);
            }
            return Ok(Some((rkey, m)));
        }
    }

    /// Updates of one tenant's records as one WATCH/MULTI transaction, retried until it
    /// applies (the one definition of an update's write, one request or many): each
    /// request applied in order to the record it addresses (a later request sees what an
    /// earlier one wrote), with its own outcome. A round trip finds the records of the
    /// requests by id, one reads the records and one their vectors, one writes each changed
    /// record once.
    pub(crate) fn update_batch(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        reqs: &[UpdateRequest],
    ) -> Result<Vec<Result<Memory>>, Fail> {
        loop {
            let now = self.now();
            let ids: Vec<MemoryId> = reqs
                .iter()
                .filter_map(|r| match r.at {
                    Locator::Id { id, .. } => Some(id),
                    Locator::Key { .. } => None,
                })
                .collect();
            // The id pointers are watched before they are read: a record moved or deleted
            // after that makes the transaction run again.
            let mut located = if ids.is_empty() {
                Vec::new()
            } else {
                let pointers: Vec<String> = ids.iter().map(|id| self.id_key(tenant, *id)).collect();
                redis::cmd("WATCH").arg(&pointers).exec(c)?;
                self.locate(c, tenant, &ids)?
            }
            .into_iter();
            let rkeys: Vec<Option<String>> = reqs
                .iter()
                .map(|r| match &r.at {
                    Locator::Key { partition, key } => {
                        Some(self.record_key(partition, key.as_str()))
                    }
                    Locator::Id { .. } => located.next().flatten().map(|(rkey, _)| rkey),
                })
                .collect();
            let mut watched: Vec<&String> = rkeys.iter().flatten().collect();
            watched.sort_unstable();
            watched.dedup();
            // Each record key's record and vector, as the batch has left them so far. The
            // records `locate` read are read again once their keys are watched: a change
            // between the two reads would otherwise go unseen by the transaction.
            let mut current: HashMap<&str, (Memory, Option<Vec<f32>>)> = HashMap::new();
            if !watched.is_empty() {
                redis::cmd("WATCH").arg(&watched).exec(c)?;
                let values: Vec<Option<String>> = redis::cmd("MGET").arg(&watched).query(c)?;
                let mut found = Vec::with_capacity(watched.len());
                for (rkey, json) in watched.iter().zip(values) {
                    if let Some(json) = json {
                        found.push((rkey.as_str(), self.decode(rkey, &json)?));
                    }
                }
                if !found.is_empty() {
                    let vkeys: Vec<String> = found
                        .iter()
                        .map(|(_, m)| self.vector_key(tenant, m.id))
                        .collect();
                    let vectors: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&vkeys).query(c)?;
                    for (((rkey, m), vkey), bytes) in found.into_iter().zip(vkeys).zip(vectors) {
                        let vector = match bytes {
                            Some(b) => Some(vector_from_bytes(&b).ok_or_else(|| {
                                Fail::Muisti(Error::Corrupted {
                                    location: vkey,
                                    reason: "not a vector".into(),
                                })
                            })?),
                            None => None,
                        };
                        current.insert(rkey, (m, vector));
                    }
                }
            }
            let mut out = Vec::with_capacity(reqs.len());
            // The record keys the batch changed.
            let mut written: Vec<&str> = Vec::new();
            for (req, rkey) in reqs.iter().zip(&rkeys) {
                if let Err(e) = req.validate() {
                    out.push(Err(e));
                    continue;
                }
                let held = rkey.as_deref().and_then(|k| {
                    current
                        .get_key_value(k)
                        .filter(|(_, (m, _))| !m.is_expired(now) && req.at.addresses(m))
                });
                let Some((&rkey, (m, stored))) = held else {
                    // Nothing there: the one rule answers (not found).
                    out.push(req.apply(None, now, &self.limits).map(|(m, _)| m));
                    continue;
                };
                match req.apply(Some(m), now, &self.limits) {
                    Err(e) => out.push(Err(e)),
                    Ok((memory, change)) => {
                        let vector = match change {
                            VectorChange::Set(v) => Some(v),
                            VectorChange::Drop => None,
                            VectorChange::Keep => stored.clone(),
                        };
                        written.push(rkey);
                        current.insert(rkey, (memory.clone(), vector));
                        out.push(Ok(memory));
                    }
                }
            }
            // Each changed record is written once, as the batch left it.
            written.sort_unstable();
            written.dedup();
            if written.is_empty() {
                redis::cmd("UNWATCH").exec(c)?;
                return Ok(out);
            }
            let mut pipe = redis::pipe();
            pipe.atomic();
            let mut changed = Vec::with_capacity(written.len());
            for rkey in &written {
                if let Some((memory, vector)) = current.get(rkey) {
                    self.queue_write(&mut pipe, rkey, memory, vector.as_deref())?;
                    changed.push((memory, vector.as_deref()));
                }
            }
            if self.commit(
                c,
                Ack::Replicated,
                pipe,
                &changed,
                |(m, _)| m,
                |copy, (m, v)| copy.upsert((*m).clone(), *v),
            )? {
                return Ok(out);
            }
        }
    }

    pub(crate) fn delete_record(&self, c: &mut Connection, at: &Locator) -> Result<bool, Fail> {
        loop {
            let Some((rkey, m)) = self.watch_record(c, at)? else {
                return Ok(false);
            };
            let mut pipe = redis::pipe();
            pipe.atomic()
                .del(&rkey)
                .ignore()
                .del(self.id_key(&m.partition.tenant, m.id))
                .ignore()
                .del(self.vector_key(&m.partition.tenant, m.id))
                .ignore()
                .zrem(self.index_key(&m.partition), index_member(&m))
                .ignore();
            if self.commit(
                c,
                Ack::Replicated,
                pipe,
                &[m],
                |m| m,
                |copy, m| copy.remove(m.id),
            )? {
                return Ok(true);
            }
        }
    }

    /// Deletes the tenant's live records of `ids` as one WATCH/MULTI transaction, retried
    /// until it applies: the ids of those deleted, in the order given, each once.
    pub(crate) fn delete_batch(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        ids: &[MemoryId],
    ) -> Result<Vec<MemoryId>, Fail> {
        loop {
            let found: Vec<(MemoryId, String)> = ids
                .iter()
                .zip(self.locate(c, tenant, ids)?)
                .filter_map(|(id, f)| f.map(|(rkey, _)| (*id, rkey)))
                .collect();
            if found.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Vec<&String> = found.iter().map(|(_, k)| k).collect();
            redis::cmd("WATCH").arg(&keys).exec(c)?;
            let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(c)?;
            let now = self.now();
            let mut gone: Vec<Memory> = Vec::new();
            let mut pipe = redis::pipe();
            pipe.atomic();
            for ((id, rkey), json) in found.iter().zip(values) {
                let Some(json) = json else { continue };
                let m = self.decode(rkey, &json)?;
                if m.id != *id || m.is_expired(now) || gone.iter().any(|g| g.id == m.id) {
                    continue;
                }
                pipe.del(rkey)
                    .ignore()
                    .del(self.id_key(tenant, m.id))
                    .ignore()
                    .del(self.vector_key(tenant, m.id))
                    .ignore()
                    .zrem(self.index_key(&m.partition), index_member(&m))
                    .ignore();
                gone.push(m);
            }
            if gone.is_empty() {
                redis::cmd("UNWATCH").exec(c)?;
                return Ok(Vec::new());
            }
            if self.commit(
                c,
                Ack::Replicated,
                pipe,
                &gone,
                |m| m,
                |copy, m| copy.remove(m.id),
            )? {
                return Ok(gone.into_iter().map(|m| m.id).collect());
            }
        }
    }

    /// Changes the live record with `id` in place (its expiry kept) under WATCH/MULTI,
    /// retried on conflict; `also` adds commands to the same transaction; `copied` applies
    /// the change to the partition's copy. `false` if there is no such record.
    pub(crate) fn update_by_id(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        id: MemoryId,
        change: impl Fn(&mut Memory),
        also: impl Fn(&mut redis::Pipeline, &Memory),
        copied: impl Fn(&mut Copy<Version>, &Memory),
    ) -> Result<bool, Fail> {
        let locator = Locator::Id {
            tenant: tenant.clone(),
            id,
        };
        loop {
            let Some((rkey, mut m)) = self.watch_record(c, &locator)? else {
                return Ok(false);
            };
            change(&mut m);
            let json =
                serde_json::to_string(&m).map_err(|e| Fail::Muisti(Error::backend("redis", e)))?;
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("SET")
                .arg(&rkey)
                .arg(json)
                .arg("KEEPTTL")
                .ignore();
            also(&mut pipe, &m);
            if self.commit(c, Ack::Replicated, pipe, &[m], |m| m, &copied)? {
                return Ok(true);
            }
        }
    }

    /// Counts accesses to records as one WATCH/MULTI transaction, retried until it applies:
    /// one round trip to find the records, one to watch and read them, one to write them.
    pub(crate) fn touch_batch(
        &self,
        c: &mut Connection,
        tenant: &Tenant,
        counts: &[(MemoryId, u64)],
        at: Timestamp,
    ) -> Result<(), Fail> {
        loop {
            let ids: Vec<MemoryId> = counts.iter().map(|(id, _)| *id).collect();
            let located: Vec<(u64, MemoryId, String)> = counts
                .iter()
                .zip(self.locate(c, tenant, &ids)?)
                .filter_map(|((id, n), f)| f.map(|(rkey, _)| (*n, *id, rkey)))
                .collect();
            if located.is_empty() {
                return Ok(());
            }
            let keys: Vec<&String> = located.iter().map(|(_, _, k)| k).collect();
            redis::cmd("WATCH").arg(&keys).exec(c)?;
            let values: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query(c)?;
            let now = self.now();
            let mut pipe = redis::pipe();
            pipe.atomic();
            let mut changed: Vec<Memory> = Vec::new();
            for ((n, id, rkey), json) in located.iter().zip(values) {
                let Some(json) = json else { continue };
                let mut m = self.decode(rkey, &json)?;
                if m.id != *id || m.is_expired(now) {
                    continue;
                }
                m.access_count += n;
                m.last_accessed_at = Some(at);
                let json = serde_json::to_string(&m)
                    .map_err(|e| Fail::Muisti(Error::backend("redis", e)))?;
                pipe.cmd("SET").arg(rkey).arg(json).arg("KEEPTTL").ignore();
                changed.push(m);
            }
            if changed.is_empty() {
                redis::cmd("UNWATCH").exec(c)?;
                return Ok(());
            }
            if self.commit(
                c,
                Ack::Local,
                pipe,
                &changed,
                |m| m,
                Copy::<Version>::touched,
            )? {
                return Ok(());
            }
        }
    }
}
