//! Snapshots of a whole store: every tenant, muisti's own records included (API keys,
//! queues), kept as files in a directory, listed and restored.
//!
//! A snapshot of a store with an online backup ([`Store::backup`](muisti_core::Store::backup):
//! SQLite's, one read transaction, so the copy is the database at one commit while writers
//! go on) is that backup, a file in the backup's format, opened again through the store
//! registry by its scheme; of any other store, an export with vectors in JSON Lines
//! ([`crate::transfer`]), consistent per page, not across the store: writes during it may
//! be in it or not. Each snapshot is a data file `<id>.<format>` (`sqlite`, `jsonl`) and
//! its manifest `<id>.json`.
//!
//! Restoring replaces the store's whole content with the snapshot's: every partition is
//! emptied, then the snapshot's records are imported (every field kept; vectors made again
//! when another model made them).

use std::{
    fs::{self, File},
    io::{BufReader, BufWriter},
    path::{Path, PathBuf},
};

use muisti_core::{Error, Partition, Result, Timestamp};
use serde::{Deserialize, Serialize};

use crate::{
    Engine, OnModelMismatch,
    transfer::{JsonlWriter, Selection, Trust},
};

/// What a snapshot holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// Its id: the time it was made, `YYYYMMDDTHHMMSSmmmZ`.
    pub id: String,
    /// When it was made.
    pub created_at: Timestamp,
    /// The backend of the store it was made from.
    pub backend: String,
    /// `sqlite` (an online backup, a SQLite file) or `jsonl` (an export).
    pub format: String,
    /// Records in it.
    pub records: u64,
    /// Size of its data file in bytes.
    pub bytes: u64,
}

/// What a restore did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    /// Records deleted from the store first.
    pub deleted: u64,
    /// Records written from the snapshot.
    pub restored: u64,
}

/// The snapshots in one directory.
pub struct Snapshots {
    dir: PathBuf,
}

impl Snapshots {
    /// The snapshots in `dir` (created when the first is made).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn io(&self, path: &Path, e: impl std::fmt::Display) -> Error {
        Error::backend("snapshot", format!("{}: {e}", path.display()))
    }

    /// Makes a snapshot of the whole store `engine` works on.
    pub fn create(&self, engine: &Engine) -> Result<SnapshotInfo> {
        fs::create_dir_all(&self.dir).map_err(|e| self.io(&self.dir, e))?;
        let created_at = Timestamp::now();
        let id = self.fresh_id(created_at);
        let store = engine.store();
        let (format, data, records) = if let Some(backup) = store.backup() {
            let format = backup.format();
            let path = self.dir.join(format!("{id}.{format}"));
            backup.backup_to(&path)?;
            let records = count_all(&open_copy(format, &path)?)?;
            (format, path, records)
        } else {
            let path = self.dir.join(format!("{id}.jsonl"));
            let file = File::create(&path).map_err(|e| self.io(&path, e))?;
            let mut w = JsonlWriter::new(BufWriter::new(file), engine.store_model()?, true)?;
            let written =
                engine
                    .transfer()
                    .export(&Selection::default(), true, &mut |_, _| {}, &mut |r| {
                        w.write(&r)
                    });
            let done = written.and_then(|n| {
                w.finish()?
                    .into_inner()
                    .map_err(|e| self.io(&path, e))?
                    .sync_all()
                    .map_err(|e| self.io(&path, e))?;
                Ok(n)
            });
            match done {
                Ok(n) => ("jsonl", path, n),
                Err(e) => {
                    let _ = fs::remove_file(&path);
                    return Err(e);
                }
            }
        };
        let bytes = fs::metadata(&data).map_err(|e| self.io(&data, e))?.len();
        let info = SnapshotInfo {
            id: id.clone(),
            created_at,
            backend: store.info().backend.to_owned(),
            format: format.to_owned(),
            records,
            bytes,
        };
        let manifest = self.dir.join(format!("{id}.json"));
        let json = serde_json::to_vec_pretty(&info).map_err(|e| self.io(&manifest, e))?;
        fs::write(&manifest, json).map_err(|e| self.io(&manifest, e))?;
        Ok(info)
    }

    /// An id for a snapshot made at `t`, not yet taken.
    fn fresh_id(&self, t: Timestamp) -> String {
        let base = t.to_string().replace(['-', ':', '.'], "");
        let mut id = base.clone();
        let mut n = 1;
        while self.dir.join(format!("{id}.json")).exists() {
            n += 1;
            id = format!("{base}-{n}");
        }
        id
    }

    /// The snapshots, oldest first.
    pub fn list(&self) -> Result<Vec<SnapshotInfo>> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io(&self.dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| self.io(&self.dir, e))?.path();
            if path.extension().is_some_and(|x| x == "json") {
                let bytes = fs::read(&path).map_err(|e| self.io(&path, e))?;
                let info: SnapshotInfo =
                    serde_json::from_slice(&bytes).map_err(|e| Error::Corrupted {
                        location: path.display().to_string(),
                        reason: e.to_string(),
                    })?;
                out.push(info);
            }
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    /// The snapshot with this id.
    pub fn get(&self, id: &str) -> Result<SnapshotInfo> {
        let valid = !id.is_empty()
            && id.len() <= 64
            && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !valid {
            return Err(Error::invalid(
                "snapshot",
                format!("{id:?} is not a snapshot id"),
            ));
        }
        self.list()?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| Error::NotFound(format!("snapshot {id}")))
    }

    /// Deletes snapshot `id` (its data file, then its manifest): what the store deleted
    /// since it was made leaves this copy too. Returns what it held.
    pub fn delete(&self, id: &str) -> Result<SnapshotInfo> {
        let info = self.get(id)?;
        let data = self.dir.join(format!("{}.{}", info.id, info.format));
        let manifest = self.dir.join(format!("{}.json", info.id));
        match fs::remove_file(&data) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io(&data, e)),
        }
        fs::remove_file(&manifest).map_err(|e| self.io(&manifest, e))?;
        Ok(info)
    }

    /// Deletes every snapshot made before `before` (a retention: the snapshots of a store
    /// whose users' deletes must leave every copy within a known time); returns them.
    pub fn prune(&self, before: Timestamp) -> Result<Vec<SnapshotInfo>> {
        let old: Vec<String> = self
            .list()?
            .into_iter()
            .filter(|s| s.created_at < before)
            .map(|s| s.id)
            .collect();
        old.iter().map(|id| self.delete(id)).collect()
    }

    /// Replaces everything in the store `engine` works on with snapshot `id`'s records.
    pub fn restore(&self, engine: &Engine, id: &str) -> Result<RestoreReport> {
        let info = self.get(id)?;
        let data = self.dir.join(format!("{}.{}", info.id, info.format));
        let store = engine.store();
        let mut report = RestoreReport::default();
        for tenant in store.tenants()? {
            for ns in store.namespaces(&tenant)? {
                report.deleted += store.flush(&Partition::new(tenant.clone(), ns))?;
            }
        }
        report.restored = match info.format.as_str() {
            "jsonl" => {
                let file = File::open(&data).map_err(|e| self.io(&data, e))?;
                engine.transfer().import_jsonl(
                    BufReader::new(file),
                    Trust::Trusted,
                    &mut |_, _| {},
                )?
            }
            // A backup: a store of its own format, opened by that scheme.
            format => engine.transfer().import_from(
                open_copy(format, &data)?.transfer(),
                Trust::Trusted,
                &mut |_, _| {},
            )?,
        };
        if let Some(embedder) = engine.embedder() {
            engine.core.record_model(&**embedder)?;
        }
        Ok(report)
    }
}

/// An engine over a SQLite snapshot file, reading only.
/// The backup in `format` at `path`, opened as a store by that scheme (without a model:
/// its records are read as they are).
fn open_copy(format: &str, path: &Path) -> Result<Engine> {
    let store = crate::open_store(&format!("{format}://{}", path.display()))?;
    Engine::builder(store)
        .embedder(None)
        .on_model_mismatch(OnModelMismatch::Ignore)
        .build()
}

fn count_all(engine: &Engine) -> Result<u64> {
    let store = engine.store();
    let mut n = 0;
    for tenant in store.tenants()? {
        for ns in store.namespaces(&tenant)? {
            n += store.count(&Partition::new(tenant.clone(), ns), &Default::default())?;
        }
    }
    Ok(n)
}
