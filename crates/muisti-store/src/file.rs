//! The file store: one JSON file per namespace.
//!
//! Layout: `ROOT/<tenant>/<namespace>.json`, names encoded so that the mapping is one-to-one
//! even on case-insensitive file systems: `a-z 0-9 _ -` stay as they are, every other
//! character becomes `%XX` (upper-case hex), so `user:1`, `user.1` and `user_1` are
//! `user%3A1.json`, `user%2E1.json` and `user_1.json`.
//!
//! Writers take an exclusive lock on `<namespace>.lock`, read the file, write a temporary
//! file, `fsync` it and rename it into place, so readers (which take no lock) see the old or
//! the new file, never a torn one, and writers in several processes lose no write.

use std::{
    collections::HashMap,
    fs::{self, File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, Result, Scored, Store, StoreInfo, StoredVector, SystemClock,
    Tenant, TextQuery, Timestamp, UpdateRequest, Written,
};
use serde::{Deserialize, Serialize};

use crate::table::Table;

const FORMAT: &str = "muisti-file/1";

/// Stores each namespace as one JSON file under a directory. Suits a script or a single
/// server; several processes on one machine may share it.
pub struct FileStore {
    root: PathBuf,
    limits: Limits,
    cache: Mutex<HashMap<PathBuf, (Stamp, Arc<Table>)>>,
    clock: Arc<dyn Clock>,
}

/// Identifies one version of a file: a rename always makes a new inode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'static str,
    tenant: &'a Tenant,
    namespace: &'a Namespace,
    records: Vec<&'a Memory>,
    vectors: Vec<VectorRow>,
}

/// A vector as the file holds it.
#[derive(Serialize, Deserialize)]
struct VectorRow {
    id: MemoryId,
    model: String,
    vector: Vec<f32>,
}

#[derive(Deserialize)]
struct FileIn {
    format: String,
    tenant: Tenant,
    namespace: Namespace,
    records: Vec<Memory>,
    #[serde(default)]
    vectors: Vec<VectorRow>,
}

/// Encodes a validated name as a file name (see the module docs).
pub fn encode_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            out.push(c);
        } else {
            // Valid names are ASCII, so one byte.
            out.push_str(&format!("%{:02X}", c as u32));
        }
    }
    out
}

/// The inverse of [`encode_name`]; `None` if `s` is not an encoding.
pub fn decode_name(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            let hex: String = chars.by_ref().take(2).collect();
            let b = u8::from_str_radix(&hex, 16).ok()?;
            out.push(b as char);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::backend("file", format!("{}: {e}", path.display()))
}

impl FileStore {
    /// Opens (creating if needed) the store under `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        Ok(Self {
            root,
            limits: Limits::default(),
            cache: Mutex::new(HashMap::new()),
            clock: Arc::new(SystemClock),
        })
    }

    /// Enforces `limits` on writes.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Reads the time from `clock` (expiry, timestamps of writes).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The directory the store lives in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn tenant_dir(&self, tenant: &Tenant) -> PathBuf {
        self.root.join(encode_name(tenant.as_str()))
    }

    fn data_path(&self, p: &Partition) -> PathBuf {
        self.tenant_dir(&p.tenant)
            .join(format!("{}.json", encode_name(p.namespace.as_str())))
    }

    fn stamp(path: &Path) -> Result<Option<Stamp>> {
        match fs::metadata(path) {
            Ok(md) => Ok(Some(Stamp {
                len: md.len(),
                modified: md.modified().ok(),
                inode: inode(&md),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(path, e)),
        }
    }

    /// The table of a partition as it is on disk now (empty if there is no file).
    fn load(&self, p: &Partition) -> Result<Arc<Table>> {
        let path = self.data_path(p);
        loop {
            let Some(stamp) = Self::stamp(&path)? else {
                return Ok(Arc::new(Table::default()));
            };
            if let Some((s, t)) = self.cache().get(&path)
                && *s == stamp
            {
                return Ok(Arc::clone(t));
            }
            let bytes = match fs::read(&path) {
                Ok(b) => b,
                // Replaced or removed between stat and read: look again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&path, e)),
            };
            if Self::stamp(&path)? != Some(stamp) {
                continue;
            }
            let table = Arc::new(parse(&path, &bytes, p)?);
            self.cache().insert(path, (stamp, Arc::clone(&table)));
            return Ok(table);
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Stamp, Arc<Table>)>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the partition's table under the exclusive lock and writes the result back
    /// if `f` reports a change.
    fn mutate<R>(&self, p: &Partition, f: impl FnOnce(&mut Table) -> (R, bool)) -> Result<R> {
        let dir = self.tenant_dir(&p.tenant);
        fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        let path = self.data_path(p);
        let lock_path = path.with_extension("lock");
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| io_err(&lock_path, e))?;
        lock.lock().map_err(|e| io_err(&lock_path, e))?;
        let mut table = (*self.load(p)?).clone();
        let (out, changed) = f(&mut table);
        if changed {
            self.write_table(p, &path, &table)?;
        }
        drop(lock);
        Ok(out)
    }

    fn write_table(&self, p: &Partition, path: &Path, table: &Table) -> Result<()> {
        if table.records().next().is_none() {
            match fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(path, e)),
            }
            self.cache().remove(path);
            return Ok(());
        }
        let doc = FileOut {
            format: FORMAT,
            tenant: &p.tenant,
            namespace: &p.namespace,
            records: table.records().collect(),
            vectors: table
                .all_vectors()
                .map(|v| VectorRow {
                    id: v.id,
                    model: v.model,
                    vector: v.vector,
                })
                .collect(),
        };
        let bytes = serde_json::to_vec(&doc).map_err(|e| Error::backend("file", e))?;
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let write = || -> io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, path)?;
            if let Some(dir) = path.parent() {
                // Make the rename durable; not every platform can open a directory.
                if let Ok(d) = File::open(dir) {
                    let _ = d.sync_all();
                }
            }
            Ok(())
        };
        if let Err(e) = write() {
            let _ = fs::remove_file(&tmp);
            return Err(io_err(path, e));
        }
        if let Some(stamp) = Self::stamp(path)? {
            self.cache()
                .insert(path.to_path_buf(), (stamp, Arc::new(table.clone())));
        }
        Ok(())
    }

    /// The namespaces of a tenant that have a file.
    fn files_of(&self, tenant: &Tenant) -> Result<Vec<Namespace>> {
        let dir = self.tenant_dir(tenant);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(&dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if let Some(ns) = decode_name(stem).and_then(|n| Namespace::new(n).ok()) {
                out.push(ns);
            }
        }
        out.sort();
        Ok(out)
    }

    fn tenants(&self) -> Result<Vec<Tenant>> {
        let entries = fs::read_dir(&self.root).map_err(|e| io_err(&self.root, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err(&self.root, e))?;
            if let Some(t) = entry
                .file_name()
                .to_str()
                .and_then(decode_name)
                .and_then(|n| Tenant::new(n).ok())
            {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// Finds the partition holding a live id, scanning the tenant's namespaces.
    fn find_id(&self, tenant: &Tenant, id: MemoryId, now: Timestamp) -> Result<Option<Memory>> {
        for ns in self.files_of(tenant)? {
            let p = Partition::new(tenant.clone(), ns);
            if let Some(m) = self.load(&p)?.get_by_id(id, now) {
                return Ok(Some(m.clone()));
            }
        }
        Ok(None)
    }
}

fn parse(path: &Path, bytes: &[u8], p: &Partition) -> Result<Table> {
    let corrupted = |reason: String| Error::Corrupted {
        location: path.display().to_string(),
        reason,
    };
    let doc: FileIn = serde_json::from_slice(bytes).map_err(|e| corrupted(e.to_string()))?;
    if doc.format != FORMAT {
        return Err(corrupted(format!("unknown format {:?}", doc.format)));
    }
    if doc.tenant != p.tenant || doc.namespace != p.namespace {
        return Err(corrupted(format!(
            "holds {}/{} instead of {p}",
            doc.tenant, doc.namespace
        )));
    }
    if let Some(m) = doc.records.iter().find(|m| &m.partition != p) {
        return Err(corrupted(format!(
            "record {} belongs to {}",
            m.id, m.partition
        )));
    }
    let vectors = doc
        .vectors
        .into_iter()
        .map(|v| StoredVector {
            id: v.id,
            model: v.model,
            vector: v.vector,
        })
        .collect();
    Ok(Table::from_records(doc.records, vectors))
}

#[cfg(unix)]
fn inode(md: &fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(md)
}

#[cfg(not(unix))]
fn inode(_md: &fs::Metadata) -> u64 {
    0
}

impl Store for FileStore {
    fn info(&self) -> StoreInfo {
        StoreInfo {
            backend: "file",
            location: format!("file://{}", self.root.display()),
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
            if !self.load(&p)?.is_empty(now) {
                out.push(p.namespace);
            }
        }
        Ok(out)
    }

    fn touch(&self, tenant: &Tenant, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        for ns in self.files_of(tenant)? {
            let p = Partition::new(tenant.clone(), ns);
            let here = self.load(&p)?;
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
        for ns in self.files_of(tenant)? {
            let p = Partition::new(tenant.clone(), ns);
            let here = self.load(&p)?;
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
            for ns in self.files_of(&tenant)? {
                let p = Partition::new(tenant.clone(), ns);
                n += self.mutate(&p, |t| {
                    let purged = t.purge(now).len() as u64;
                    (purged, purged > 0)
                })?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_one_to_one_and_reversible() {
        let names = ["user:1", "user.1", "user_1", "User_1", "a-b", "default"];
        let encoded: Vec<_> = names.iter().map(|n| encode_name(n)).collect();
        for (n, e) in names.iter().zip(&encoded) {
            assert_eq!(decode_name(e).as_deref(), Some(*n));
        }
        let folded: std::collections::HashSet<_> =
            encoded.iter().map(|e| e.to_lowercase()).collect();
        assert_eq!(folded.len(), names.len(), "{encoded:?}");
    }
}
