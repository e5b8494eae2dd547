//! The file stores: one JSON file per namespace (`file://`), or Markdown files people read
//! and edit by hand (`markdown://`).
//!
//! JSON layout: `ROOT/<tenant>/<namespace>.json`. Markdown layout: `ROOT/<tenant>/<namespace>.md`
//! holds the namespace's memories without a user, `ROOT/<tenant>/<namespace>/<user>.md` each
//! user's, `ROOT/<tenant>/.muisti/<namespace>.vectors.json` the vectors (each with the hash
//! of the text it was made from: a vector whose text was edited by hand is dropped, and the
//! record's `embedding_model` with it, so reindexing makes a new one) and
//! `ROOT/<tenant>/.muisti/<namespace>.lock` the lock. The format of a Markdown file is in
//! `markdown.rs`.
//!
//! Names are encoded so that the mapping is one-to-one even on case-insensitive file
//! systems: `a-z 0-9 _ -` stay as they are, every other byte becomes `%XX` (upper-case
//! hex), so `user:1`, `user.1` and `user_1` are `user%3A1.json`, `user%2E1.json` and
//! `user_1.json`. A user's file name longer than 100 bytes is cut and ends with a hash of
//! the whole name.
//!
//! Writers take an exclusive lock, read the files, write temporary files, `fsync` them and
//! rename them into place (then `fsync` the directory), so readers (which take no lock) see
//! the old or the new file, never a torn one, and writers in several processes lose no
//! write. A file changed by anyone (an editor included) is read again on the next read.

mod store;

use std::{
    collections::{BTreeMap, HashMap},
    fs::{self, File, OpenOptions},
    io::{self, Write},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use muisti_core::{
    Capabilities, Clock, Error, Filter, Health, Limits, ListQuery, Locator, Memory, MemoryId,
    Namespace, Page, Partition, Put, Record, Result, Scored, Store, StoreInfo, StoredVector,
    SystemClock, Tenant, TextQuery, Timestamp, UpdateRequest, Written,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{markdown, table::Table};

const FORMAT: &str = "muisti-file/1";
const VECTORS_FORMAT: &str = "muisti-vectors/1";
/// The directory of a tenant's files that are not namespaces (Markdown layout); no encoded
/// name starts with a dot.
const META_DIR: &str = ".muisti";
/// Longest file name made from a user id, in bytes, before it is cut and hashed.
const MAX_USER_FILE: usize = 100;

/// How a store lays out its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Json,
    Markdown,
}

/// Stores each namespace as files under a directory: one JSON file ([`FileStore::open`]) or
/// Markdown files that people read, grep, keep in git and edit by hand
/// ([`FileStore::open_markdown`]). Suits a script or a single server; several processes on
/// one machine may share it.
pub struct FileStore {
    root: PathBuf,
    format: Format,
    limits: Limits,
    cache: Mutex<HashMap<PathBuf, (Stamps, Arc<Table>)>>,
    clock: Arc<dyn Clock>,
}

/// Identifies one version of a file: a rename always makes a new inode.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

/// The files holding a partition now, each with its stamp, sorted by path.
type Stamps = Vec<(PathBuf, Stamp)>;

/// Partitions with their tables.
type Tables = Vec<(Partition, Arc<Table>)>;

#[derive(Serialize)]
struct FileOut<'a> {
    format: &'static str,
    tenant: &'a Tenant,
    namespace: &'a Namespace,
    records: Vec<&'a Memory>,
    vectors: Vec<VectorRow>,
}

/// A vector as a file holds it; `hash` (Markdown layout) is the content hash of the text it
/// was made from.
#[derive(Serialize, Deserialize)]
struct VectorRow {
    id: MemoryId,
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hash: Option<String>,
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

#[derive(Serialize, Deserialize)]
struct VectorsFile {
    format: String,
    vectors: Vec<VectorRow>,
}

/// Encodes a name as a file name (see the module docs).
pub fn encode_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode_name`]; `None` if `s` is not an encoding.
pub fn decode_name(s: &str) -> Option<String> {
    let mut out = Vec::with_capacity(s.len());
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The file name of a user's Markdown file.
fn user_file(user: &str) -> String {
    let encoded = encode_name(user);
    if encoded.len() <= MAX_USER_FILE {
        return format!("{encoded}.md");
    }
    let digest = Sha256::digest(user.as_bytes());
    let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    // Encoded names are ASCII, so any byte index is a char boundary.
    format!("{}~{hash}.md", &encoded[..MAX_USER_FILE - 17])
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::backend("file", format!("{}: {e}", path.display()))
}

/// Writes `bytes` to `path` atomically: a temporary file, `fsync`, rename, `fsync` of the
/// directory.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{}.tmp.{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let write = || -> io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
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
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io_err(path, e)
    })
}

fn remove_if_there(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path, e)),
    }
}

impl FileStore {
    /// Opens (creating if needed) the JSON store under `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        Self::open_as(root.into(), Format::Json)
    }

    /// Opens (creating if needed) the Markdown store under `root`.
    pub fn open_markdown(root: impl Into<PathBuf>) -> Result<Self> {
        Self::open_as(root.into(), Format::Markdown)
    }

    fn open_as(root: PathBuf, format: Format) -> Result<Self> {
        fs::create_dir_all(&root).map_err(|e| io_err(&root, e))?;
        Ok(Self {
            root,
            format,
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

    fn extension(&self) -> &'static str {
        match self.format {
            Format::Json => "json",
            Format::Markdown => "md",
        }
    }

    /// The partition's main file (its only one in the JSON layout): the cache's key.
    fn data_path(&self, p: &Partition) -> PathBuf {
        self.tenant_dir(&p.tenant).join(format!(
            "{}.{}",
            encode_name(p.namespace.as_str()),
            self.extension()
        ))
    }

    /// The directory of a partition's users' files (Markdown layout).
    fn users_dir(&self, p: &Partition) -> PathBuf {
        self.tenant_dir(&p.tenant)
            .join(encode_name(p.namespace.as_str()))
    }

    fn meta_file(&self, p: &Partition, suffix: &str) -> PathBuf {
        self.tenant_dir(&p.tenant)
            .join(META_DIR)
            .join(format!("{}.{suffix}", encode_name(p.namespace.as_str())))
    }

    fn lock_path(&self, p: &Partition) -> PathBuf {
        match self.format {
            Format::Json => self.data_path(p).with_extension("lock"),
            Format::Markdown => self.meta_file(p, "lock"),
        }
    }

    fn vectors_path(&self, p: &Partition) -> PathBuf {
        self.meta_file(p, "vectors.json")
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

    /// The files holding the partition now, with their stamps.
    fn stamps(&self, p: &Partition) -> Result<Stamps> {
        let mut paths = vec![self.data_path(p)];
        if self.format == Format::Markdown {
            let dir = self.users_dir(p);
            match fs::read_dir(&dir) {
                Ok(entries) => {
                    for entry in entries {
                        let path = entry.map_err(|e| io_err(&dir, e))?.path();
                        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(".");
                        if name.ends_with(".md") && !name.starts_with('.') {
                            paths.push(path);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&dir, e)),
            }
            paths.push(self.vectors_path(p));
        }
        let mut out = Vec::with_capacity(paths.len());
        for path in paths {
            if let Some(stamp) = Self::stamp(&path)? {
                out.push((path, stamp));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// The table of a partition as it is on disk now (empty if there is no file).
    fn load(&self, p: &Partition) -> Result<Arc<Table>> {
        let key = self.data_path(p);
        loop {
            let stamps = self.stamps(p)?;
            if stamps.is_empty() {
                return Ok(Arc::new(Table::default()));
            }
            if let Some((s, t)) = self.cache().get(&key)
                && *s == stamps
            {
                return Ok(Arc::clone(t));
            }
            let mut files = Vec::with_capacity(stamps.len());
            let mut gone = false;
            for (path, _) in &stamps {
                match fs::read(path) {
                    Ok(b) => files.push((path.as_path(), b)),
                    // Replaced or removed between stat and read: look again.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => gone = true,
                    Err(e) => return Err(io_err(path, e)),
                }
            }
            if gone || self.stamps(p)? != stamps {
                continue;
            }
            let table = Arc::new(match self.format {
                Format::Json => parse_json(files[0].0, &files[0].1, p)?,
                Format::Markdown => self.parse_markdown(&files, p)?,
            });
            self.cache().insert(key, (stamps, Arc::clone(&table)));
            return Ok(table);
        }
    }

    /// The table of a partition's Markdown files and vectors.
    fn parse_markdown(&self, files: &[(&Path, Vec<u8>)], p: &Partition) -> Result<Table> {
        let vectors_path = self.vectors_path(p);
        let mut records: HashMap<MemoryId, Memory> = HashMap::new();
        let mut rows = Vec::new();
        for (path, bytes) in files {
            if *path == vectors_path {
                let doc: VectorsFile =
                    serde_json::from_slice(bytes).map_err(|e| Error::Corrupted {
                        location: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                rows = doc.vectors;
                continue;
            }
            let text = std::str::from_utf8(bytes).map_err(|e| Error::Corrupted {
                location: path.display().to_string(),
                reason: format!("not UTF-8 text: {e}"),
            })?;
            for m in markdown::parse(path, text, p)? {
                // The same record in two files (a write interrupted while it moved it to
                // another user's file): the later version wins.
                match records.get(&m.id) {
                    Some(had) if (had.version, had.updated_at) >= (m.version, m.updated_at) => {}
                    _ => {
                        records.insert(m.id, m);
                    }
                }
            }
        }
        let mut vectors = Vec::with_capacity(rows.len());
        for row in rows {
            let Some(m) = records.get_mut(&row.id) else {
                continue;
            };
            if row.hash.as_deref() == Some(m.content_hash.as_str())
                && m.embedding_model.as_deref() == Some(row.model.as_str())
            {
                vectors.push(StoredVector {
                    id: row.id,
                    model: row.model,
                    vector: row.vector,
                });
            } else {
                // Edited by hand since it was embedded: no vector until reindexed.
                m.embedding_model = None;
            }
        }
        Ok(Table::from_records(
            records.into_values().collect(),
            vectors,
        ))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (Stamps, Arc<Table>)>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the partition's table under the exclusive lock and writes the result back
    /// if `f` reports a change.
    fn mutate<R>(&self, p: &Partition, f: impl FnOnce(&mut Table) -> (R, bool)) -> Result<R> {
        let lock_path = self.lock_path(p);
        if let Some(dir) = lock_path.parent() {
            fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        }
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
            let written = match self.format {
                Format::Json => self.write_json(p, &table),
                Format::Markdown => self.write_markdown(p, &table),
            };
            if let Err(e) = written {
                self.cache().remove(&self.data_path(p));
                return Err(e);
            }
            let stamps = self.stamps(p)?;
            self.cache()
                .insert(self.data_path(p), (stamps, Arc::new(table)));
        }
        drop(lock);
        Ok(out)
    }

    fn write_json(&self, p: &Partition, table: &Table) -> Result<()> {
        let path = self.data_path(p);
        if table.records().next().is_none() {
            return remove_if_there(&path);
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
                    hash: None,
                    vector: v.vector,
                })
                .collect(),
        };
        let bytes = serde_json::to_vec(&doc).map_err(|e| Error::backend("file", e))?;
        write_atomic(&path, &bytes)
    }

    /// Writes the files of a partition that changed: vectors first, then each file that
    /// gains or changes records, then those that lose all of theirs are removed.
    fn write_markdown(&self, p: &Partition, table: &Table) -> Result<()> {
        let hashes: HashMap<MemoryId, &str> = table
            .records()
            .map(|m| (m.id, m.content_hash.as_str()))
            .collect();
        let mut rows: Vec<VectorRow> = table
            .all_vectors()
            .map(|v| VectorRow {
                hash: hashes.get(&v.id).map(|h| (*h).to_owned()),
                id: v.id,
                model: v.model,
                vector: v.vector,
            })
            .collect();
        rows.sort_by_key(|r| r.id);
        let vectors_path = self.vectors_path(p);
        if rows.is_empty() {
            remove_if_there(&vectors_path)?;
        } else {
            let doc = VectorsFile {
                format: VECTORS_FORMAT.into(),
                vectors: rows,
            };
            let bytes = serde_json::to_vec(&doc).map_err(|e| Error::backend("file", e))?;
            write_atomic(&vectors_path, &bytes)?;
        }
        let mut by_user: BTreeMap<Option<&str>, Vec<&Memory>> = BTreeMap::new();
        for m in table.records() {
            by_user
                .entry(m.owner.user_id.as_deref())
                .or_default()
                .push(m);
        }
        let main = self.data_path(p);
        let users = self.users_dir(p);
        let mut wanted = Vec::with_capacity(by_user.len());
        for (user, records) in &by_user {
            let path = match user {
                None => main.clone(),
                Some(u) => users.join(user_file(u)),
            };
            let text = markdown::render(p, *user, records);
            if fs::read(&path).ok().as_deref() != Some(text.as_bytes()) {
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
                }
                write_atomic(&path, text.as_bytes())?;
            }
            wanted.push(path);
        }
        for (path, _) in self.stamps(p)? {
            if path != vectors_path && !wanted.contains(&path) {
                remove_if_there(&path)?;
            }
        }
        if by_user.keys().all(Option::is_none) {
            // Empty now (or never made): leave no empty directory behind.
            let _ = fs::remove_dir(&users);
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
        let suffix = format!(".{}", self.extension());
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|n| !n.starts_with('.')) else {
                continue;
            };
            let stem = match name.strip_suffix(&suffix) {
                Some(stem) => stem,
                // A directory of users' files (Markdown layout).
                None if self.format == Format::Markdown
                    && entry.file_type().is_ok_and(|t| t.is_dir()) =>
                {
                    name
                }
                None => continue,
            };
            if let Some(ns) = decode_name(stem).and_then(|n| Namespace::new(n).ok()) {
                out.push(ns);
            }
        }
        out.sort();
        out.dedup();
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
                .filter(|n| !n.starts_with('.'))
                .and_then(decode_name)
                .and_then(|n| Tenant::new(n).ok())
            {
                out.push(t);
            }
        }
        Ok(out)
    }

    /// The partitions of a tenant with their tables; a partition whose files cannot be read
    /// is skipped, and its error returned by `first_error` when nothing else answers.
    fn tables_of(&self, tenant: &Tenant) -> Result<(Tables, Option<Error>)> {
        let mut out = Vec::new();
        let mut first_error = None;
        for ns in self.files_of(tenant)? {
            let p = Partition::new(tenant.clone(), ns);
            match self.load(&p) {
                Ok(t) => out.push((p, t)),
                Err(e) => {
                    tracing::warn!(partition = %p, error = %e, "a namespace's files cannot be read");
                    first_error.get_or_insert(e);
                }
            }
        }
        Ok((out, first_error))
    }

    /// Finds the partition holding a live id, scanning the tenant's namespaces. A namespace
    /// whose files are broken does not hide the others' records; its error is returned only
    /// when the id is nowhere else.
    fn find_id(&self, tenant: &Tenant, id: MemoryId, now: Timestamp) -> Result<Option<Memory>> {
        let (tables, error) = self.tables_of(tenant)?;
        for (_, t) in &tables {
            if let Some(m) = t.get_by_id(id, now) {
                return Ok(Some(m.clone()));
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    /// Writes whole records of one partition (see [`Store::import`]).
    fn import_into(&self, p: &Partition, records: Vec<Record>) -> Result<()> {
        self.mutate(p, |t| {
            for r in records {
                t.import(r);
            }
            ((), true)
        })
    }
}

fn parse_json(path: &Path, bytes: &[u8], p: &Partition) -> Result<Table> {
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
