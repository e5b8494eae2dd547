//! The store contract over files: each call of [`Store`] on [`FileStore`].

use super::*;

impl Store for FileStore {
    fn info(&self) -> StoreInfo {
        let backend = match self.format {
            Format::Json => "file",
            Format::Markdown => "markdown",
        };
        StoreInfo {
            backend,
            location: format!("{backend}://{}", self.root.display()),
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
        let partition = put.partition.clone();
        self.mutate(&partition, |t| {
            let now = self.now();
            t.purge(now);
            (t.put(put, now), true)
        })
    }

    fn put_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        Put::validate_all(&puts, &self.limits)?;
        // One rewrite per partition, results in input order.
        let mut groups: Vec<(Partition, Vec<(usize, Put)>)> = Vec::new();
        let n = puts.len();
        for (i, put) in puts.into_iter().enumerate() {
            match groups.iter_mut().find(|(p, _)| *p == put.partition) {
                Some((_, g)) => g.push((i, put)),
                None => groups.push((put.partition.clone(), vec![(i, put)])),
            }
        }
        let mut out: Vec<Option<Written>> = vec![None; n];
        for (partition, group) in groups {
            let written = self.mutate(&partition, |t| {
                let now = self.now();
                t.purge(now);
                let w: Vec<_> = group
                    .into_iter()
                    .map(|(i, put)| (i, t.put(put, now)))
                    .collect();
                (w, true)
            })?;
            for (i, w) in written {
                out[i] = Some(w);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn import(&self, records: Vec<Record>) -> Result<u64> {
        let now = self.now();
        let records = Record::admit(records, &self.limits, now)?;
        let n = records.len() as u64;
        let mut groups: Vec<(Partition, Vec<Record>)> = Vec::new();
        // Where each id of the tenants met so far is now, read once per tenant.
        let mut located: HashMap<MemoryId, Partition> = HashMap::new();
        let mut tenants: Vec<Tenant> = Vec::new();
        for r in records {
            let p = &r.memory.partition;
            if !tenants.contains(&p.tenant) {
                for (q, t) in self.tables_of(&p.tenant)?.0 {
                    located.extend(t.records().map(|m| (m.id, q.clone())));
                }
                tenants.push(p.tenant.clone());
            }
            // The same id elsewhere in the tenant is replaced: removed there first.
            if let Some(q) = located.get(&r.memory.id).filter(|q| *q != p) {
                let id = r.memory.id;
                self.mutate(q, |t| ((), t.remove_id(id, now).is_some()))?;
            }
            located.insert(r.memory.id, p.clone());
            match groups.iter_mut().find(|(q, _)| q == p) {
                Some((_, g)) => g.push(r),
                None => groups.push((p.clone(), vec![r])),
            }
        }
        for (p, group) in groups {
            self.import_into(&p, group)?;
        }
        Ok(n)
    }

    fn update(&self, req: &UpdateRequest) -> Result<Memory> {
        req.validate()?;
        let now = self.now();
        let found = match &req.at {
            Locator::Key { partition, key } => self
                .load(partition)?
                .get_by_key(key, now)
                .map(|m| (partition.clone(), m.id)),
            Locator::Id { tenant, id } => {
                self.find_id(tenant, *id, now)?.map(|m| (m.partition, *id))
            }
        };
        let Some((partition, id)) = found else {
            return req.apply(None, now, &self.limits).map(|(m, _)| m);
        };
        // Under the partition's lock the record is looked up again: a writer in another
        // process may have changed or removed it since.
        self.mutate(&partition, |t| {
            let now = self.now();
            match t.update(id, req, now, &self.limits) {
                Ok(m) => (Ok(m), true),
                Err(e) => (Err(e), false),
            }
        })?
    }

    fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let now = self.now();
        match at {
            Locator::Key { partition, key } => {
                Ok(self.load(partition)?.get_by_key(key, now).cloned())
            }
            Locator::Id { tenant, id } => self.find_id(tenant, *id, now),
        }
    }

    fn list(&self, query: &ListQuery) -> Result<Page> {
        Ok(self.load(&query.partition)?.list(query, self.now()))
    }

    fn count(&self, partition: &Partition, filter: &Filter) -> Result<u64> {
        Ok(self.load(partition)?.count(filter, self.now()))
    }

    fn delete(&self, at: &Locator) -> Result<bool> {
        let now = self.now();
        let (partition, id) = match at {
            Locator::Key { partition, key } => match self.load(partition)?.get_by_key(key, now) {
                Some(m) => (partition.clone(), m.id),
                None => return Ok(false),
            },
            Locator::Id { tenant, id } => match self.find_id(tenant, *id, now)? {
                Some(m) => (m.partition, *id),
                None => return Ok(false),
            },
        };
        self.mutate(&partition, |t| {
            let removed = t.remove_id(id, now).is_some();
            (removed, removed)
        })
    }

    fn flush(&self, partition: &Partition) -> Result<u64> {
        self.mutate(partition, |t| {
            let n = t.live_len(self.now());
            let had_any = t.records().next().is_some();
            *t = Table::default();
            (n, had_any)
        })
    }

    fn namespaces(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let now = self.now();
        let mut out = Vec::new();
        for ns in self.files_of(tenant)? {
            let p = Partition::new(tenant.clone(), ns);
            // A namespace whose files are broken is listed: it holds records.
            if self.load(&p).map_or(true, |t| !t.is_empty(now)) {
                out.push(p.namespace);
            }
        }
        Ok(out)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        for (p, here) in self.tables_of(tenant)?.0 {
            if ids.iter().any(|id| here.get_by_id(*id, at).is_some()) {
                self.mutate(&p, |t| {
                    let changed = t.touch(ids, at);
                    ((), changed)
                })?;
            }
        }
        Ok(())
    }

    fn vectors(&self, partition: &Partition, filter: &Filter) -> Result<Vec<StoredVector>> {
        Ok(self.load(partition)?.vectors(filter, self.now()))
    }

    fn text_search(&self, query: &TextQuery) -> Result<Vec<Scored>> {
        Ok(self.load(&query.partition)?.text_search(query, self.now()))
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let mut out = Vec::new();
        for t in FileStore::tenants(self)? {
            if !self.namespaces(&t)?.is_empty() {
                out.push(t);
            }
        }
        out.sort();
        Ok(out)
    }

    fn set_vectors(&self, tenant: &Tenant, vectors: &[StoredVector]) -> Result<u64> {
        let now = self.now();
        let mut n = 0;
        for (p, here) in self.tables_of(tenant)?.0 {
            let mine: Vec<StoredVector> = vectors
                .iter()
                .filter(|v| here.get_by_id(v.id, now).is_some())
                .cloned()
                .collect();
            if !mine.is_empty() {
                n += self.mutate(&p, |t| {
                    let k = t.set_vectors(&mine, now);
                    (k, k > 0)
                })?;
            }
        }
        Ok(n)
    }

    fn purge_expired(&self) -> Result<u64> {
        let now = self.now();
        let mut n = 0;
        for tenant in FileStore::tenants(self)? {
            for (p, here) in self.tables_of(&tenant)?.0 {
                if !here.any_expired(now) {
                    continue;
                }
                n += self.mutate(&p, |t| {
                    let purged = t.purge(now).len() as u64;
                    (purged, purged > 0)
                })?;
            }
        }
        Ok(n)
    }

    fn count_expired(&self) -> Result<u64> {
        let now = self.now();
        let mut n = 0;
        for tenant in FileStore::tenants(self)? {
            for (_, here) in self.tables_of(&tenant)?.0 {
                n += here.count_expired(now);
            }
        }
        Ok(n)
    }

    fn health_check(&self) -> Health {
        match fs::metadata(&self.root) {
            Ok(md) if md.is_dir() && !md.permissions().readonly() => Health {
                ok: true,
                detail: format!("directory {}", self.root.display()),
            },
            Ok(_) => Health {
                ok: false,
                detail: format!("{} is not a writable directory", self.root.display()),
            },
            Err(e) => Health {
                ok: false,
                detail: format!("{}: {e}", self.root.display()),
            },
        }
    }
}
