//! The archive's objects: an [`Archive`] over the `object_store` crate (a local directory,
//! memory, or an S3-compatible bucket), one zstd-compressed JSON object per memory, written
//! durably and verified, read and deleted; the sweep of staged objects.

use std::{future::Future, sync::Arc};

use futures_util::StreamExt;
use muisti_core::{Error, Memory, MemoryId, Partition, Result, Timestamp};
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, path::Path};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Vector;

/// The format an archive object declares.
pub(super) const FORMAT: &str = "muisti.archive.v1";

/// Where archived memories are kept: an object store and the prefix of every object's path.
///
/// Opened from a URL ([`Archive::open`]): `file:///dir` (a local directory, files and
/// directory fsynced), `memory:` (this process only; for tests), or `s3://bucket/prefix`
/// (with the `s3` feature) with `endpoint`, `region` and `allow_http` as query parameters and
/// the credentials from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`).
pub struct Archive {
    /// What the URL names; the object store is made on first use, so opening writes nothing.
    place: Place,
    objects: std::sync::OnceLock<Arc<dyn ObjectStore>>,
    prefix: Path,
    location: String,
    /// Runs the object store's futures, so the engine stays synchronous (ADR 0001); started
    /// on first use.
    runtime: std::sync::Mutex<Option<tokio::runtime::Runtime>>,
}

/// Where an archive's objects live.
pub(super) enum Place {
    Memory,
    Directory(std::path::PathBuf),
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    Remote(Arc<dyn ObjectStore>),
}

impl std::fmt::Debug for Archive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archive")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime: let it go instead.
        let rt = match self.runtime.get_mut() {
            Ok(rt) => rt.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(rt) = rt {
            rt.shutdown_background();
        }
    }
}

impl Archive {
    /// Opens the archive a URL names (see [`Archive`]). Nothing is written or started until
    /// it is used: a local directory is made by the first object written.
    pub fn open(url: &str) -> Result<Self> {
        let bad = |why: &str| Error::invalid("archive url", format!("{why} (got {url:?})"));
        let (place, prefix) = if url == "memory:" {
            (Place::Memory, Path::default())
        } else if let Some(dir) = url.strip_prefix("file://") {
            if dir.is_empty() || !dir.starts_with('/') {
                return Err(bad("file:// needs an absolute directory"));
            }
            (Place::Directory(dir.into()), Path::default())
        } else if let Some(rest) = url.strip_prefix("s3://") {
            let (store, prefix) = s3(url, rest)?;
            (Place::Remote(store), prefix)
        } else {
            return Err(bad(
                "an archive is file:///dir, memory: or s3://bucket/prefix",
            ));
        };
        Ok(Self {
            place,
            objects: std::sync::OnceLock::new(),
            prefix,
            location: redact(url),
            runtime: std::sync::Mutex::new(None),
        })
    }

    /// The object store; `None` for a local directory not made yet when `create` is false
    /// (nothing was ever archived there).
    pub(super) fn objects(&self, create: bool) -> Result<Option<Arc<dyn ObjectStore>>> {
        if let Some(o) = self.objects.get() {
            return Ok(Some(Arc::clone(o)));
        }
        let made: Arc<dyn ObjectStore> = match &self.place {
            Place::Memory => Arc::new(object_store::memory::InMemory::new()),
            Place::Remote(o) => Arc::clone(o),
            Place::Directory(dir) => {
                if !dir.exists() {
                    if !create {
                        return Ok(None);
                    }
                    std::fs::create_dir_all(dir).map_err(|e| Error::Unavailable {
                        target: self.location.clone(),
                        reason: e.to_string(),
                    })?;
                }
                Arc::new(
                    object_store::local::LocalFileSystem::new_with_prefix(dir)
                        .map_err(|e| backend(&self.location, e))?
                        .with_fsync(true),
                )
            }
        };
        Ok(Some(Arc::clone(self.objects.get_or_init(|| made))))
    }

    /// The URL it was opened from (no credentials are ever in it).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs a future of the object store on the archive's runtime and waits for it (from any
    /// thread, inside another runtime too).
    pub(super) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<T> {
        let rx = {
            let mut rt = self
                .runtime
                .lock()
                .map_err(|_| self.unavailable("the archive's runtime failed"))?;
            if rt.is_none() {
                *rt = Some(
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .thread_name("muisti-archive")
                        .enable_all()
                        .build()
                        .map_err(|e| backend(&self.location, e))?,
                );
            }
            let Some(rt) = rt.as_ref() else {
                return Err(self.unavailable("the archive is closing"));
            };
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            rt.spawn(async move {
                // The receiver waits; if it is gone, nobody wants the answer.
                let _ = tx.send(fut.await);
            });
            rx
        };
        rx.recv()
            .map_err(|_| self.unavailable("the archive stopped"))?
            .map_err(|e| self.error(e))
    }

    pub(super) fn unavailable(&self, why: &str) -> Error {
        Error::Unavailable {
            target: self.location.clone(),
            reason: why.to_owned(),
        }
    }

    pub(super) fn error(&self, e: object_store::Error) -> Error {
        match e {
            object_store::Error::NotFound { path, .. } => {
                Error::NotFound(format!("archive object {path}"))
            }
            other => Error::Unavailable {
                target: self.location.clone(),
                reason: other.to_string(),
            },
        }
    }

    /// The path of a memory's object: the archive's prefix, then [`own_path`].
    pub(super) fn object_path(&self, partition: &Partition, id: MemoryId) -> Path {
        self.under_prefix(own_path(partition, Some(id)))
    }

    /// The folder of a partition's objects.
    pub(super) fn partition_path(&self, partition: &Partition) -> Path {
        self.under_prefix(own_path(partition, None))
    }

    pub(super) fn under_prefix(&self, path: Path) -> Path {
        Path::from_iter(
            self.prefix
                .parts()
                .chain(path.parts())
                .map(|p| p.as_ref().to_owned()),
        )
    }

    /// Writes an object and reads it back: it returns only once the bytes are stored (local
    /// files fsynced with their directory) and read back equal.
    pub(super) fn put_verified(&self, path: &Path, body: Vec<u8>) -> Result<()> {
        let Some(objects) = self.objects(true)? else {
            return Err(self.unavailable("no archive directory"));
        };
        let at = path.clone();
        let payload = PutPayload::from(body.clone());
        self.run(async move { objects.put(&at, payload).await.map(|_| ()) })?;
        match self.get(path)? {
            Some(back) if back == body => Ok(()),
            _ => Err(Error::Corrupted {
                location: format!("{}/{path}", self.location),
                reason: "the archive object read back differs from what was written".into(),
            }),
        }
    }

    /// An object's bytes (`None` if there is none).
    pub(super) fn get(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        let Some(objects) = self.objects(false)? else {
            return Ok(None);
        };
        let at = path.clone();
        match self.run(async move { objects.get(&at).await?.bytes().await }) {
            Ok(b) => Ok(Some(b.to_vec())),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Many objects' bytes at once, in order.
    pub(super) fn get_many(&self, paths: &[Path]) -> Result<Vec<Option<Vec<u8>>>> {
        let Some(objects) = self.objects(false)? else {
            return Ok(vec![None; paths.len()]);
        };
        let paths = paths.to_vec();
        let all = self.run(async move {
            let reads = paths.into_iter().map(move |p| {
                let objects = Arc::clone(&objects);
                async move {
                    match objects.get(&p).await {
                        Ok(r) => r.bytes().await.map(|b| Some(b.to_vec())),
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(e),
                    }
                }
            });
            let got: Vec<object_store::Result<Option<Vec<u8>>>> = futures_util::stream::iter(reads)
                .buffered(16)
                .collect()
                .await;
            got.into_iter().collect::<object_store::Result<Vec<_>>>()
        })?;
        Ok(all)
    }

    /// Deletes an object; one that is not there is no error.
    pub(super) fn delete(&self, path: &Path) -> Result<()> {
        let Some(objects) = self.objects(false)? else {
            return Ok(());
        };
        let at = path.clone();
        match self.run(async move { objects.delete(&at).await }) {
            Ok(()) | Err(Error::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The paths of a partition's objects (what is archived of a namespace), sorted.
    pub fn objects_in(&self, partition: &Partition) -> Result<Vec<String>> {
        let mut paths: Vec<String> = self
            .list(&self.partition_path(partition))?
            .into_iter()
            .map(|(p, _)| p.to_string())
            .collect();
        paths.sort();
        Ok(paths)
    }

    /// Deletes what a killed write left in a local directory's folder: the object store's
    /// staging files (`<object>#<n>`, never listed as objects) last written before `before`.
    /// Nothing to do elsewhere (an object store's uploads are whole or absent).
    pub(super) fn sweep_staged(&self, folder: &Path, before: Timestamp) -> Result<u64> {
        let Place::Directory(root) = &self.place else {
            return Ok(0);
        };
        let dir = folder.parts().fold(root.clone(), |d, p| d.join(p.as_ref()));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(0);
        };
        let mut swept = 0;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let staged = name.rsplit_once('#').is_some_and(|(object, n)| {
                object.ends_with(".json.zst") && n.bytes().all(|b| b.is_ascii_digit())
            });
            let written = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            if staged && written.is_some_and(|w| w < before.as_millis()) {
                std::fs::remove_file(entry.path()).map_err(|e| Error::Unavailable {
                    target: self.location.clone(),
                    reason: e.to_string(),
                })?;
                swept += 1;
            }
        }
        Ok(swept)
    }

    /// The objects under a folder, with when each was last written.
    pub(super) fn list(&self, folder: &Path) -> Result<Vec<(Path, Timestamp)>> {
        let Some(objects) = self.objects(false)? else {
            return Ok(Vec::new());
        };
        let at = folder.clone();
        self.run(async move {
            let mut out = Vec::new();
            let mut listing = objects.list(Some(&at));
            while let Some(meta) = listing.next().await {
                let meta = meta?;
                out.push((
                    meta.location,
                    Timestamp::from_millis(meta.last_modified.timestamp_millis()),
                ));
            }
            Ok(out)
        })
    }
}

#[cfg(feature = "s3")]
pub(super) fn s3(url: &str, rest: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    use object_store::aws::AmazonS3Builder;
    let (place, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (bucket, prefix) = place.split_once('/').unwrap_or((place, ""));
    if bucket.is_empty() {
        return Err(Error::invalid(
            "archive url",
            format!("s3:// needs a bucket (got {:?})", redact(url)),
        ));
    }
    // The HTTP client's TLS needs the process's rustls provider: ring, the workspace's one
    // (a provider installed before, by this or another part of the program, stays).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        b = match k {
            "endpoint" => b.with_endpoint(v),
            "region" => b.with_region(v),
            "allow_http" => b.with_allow_http(v == "true" || v == "1"),
            _ => {
                return Err(Error::invalid(
                    "archive url",
                    format!("{k:?} is not endpoint, region or allow_http"),
                ));
            }
        };
    }
    let store = b.build().map_err(|e| backend(url, e))?;
    Ok((Arc::new(store), Path::from(prefix)))
}

#[cfg(not(feature = "s3"))]
pub(super) fn s3(url: &str, _rest: &str) -> Result<(Arc<dyn ObjectStore>, Path)> {
    Err(Error::invalid(
        "archive url",
        format!(
            "{:?}: an S3 archive needs muisti built with the `s3` feature",
            redact(url)
        ),
    ))
}

pub(super) fn backend(url: &str, e: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        target: redact(url),
        reason: e.to_string(),
    }
}

/// A URL without anything after `?` that could carry a secret a user put there.
pub(super) fn redact(url: &str) -> String {
    match url.split_once('?') {
        Some((base, q)) => {
            let keys: Vec<&str> = q
                .split('&')
                .map(|p| p.split_once('=').map_or(p, |(k, _)| k))
                .collect();
            format!("{base}?{}", keys.join("&"))
        }
        None => url.to_owned(),
    }
}

/// Where a memory's object lives below the archive's prefix: `v1/`, tenant and namespace as
/// hex (one-to-one, any name), then `<id>.json.zst` (without an id: the partition's folder).
/// The one rule for it: writing, sweeping and checking a record's marker all read it.
pub(super) fn own_path(partition: &Partition, id: Option<MemoryId>) -> Path {
    let mut parts = vec![
        "v1".to_owned(),
        hex(partition.tenant.as_str()),
        hex(partition.namespace.as_str()),
    ];
    parts.extend(id.map(|id| format!("{id}.json.zst")));
    Path::from_iter(parts)
}

pub(super) fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// What an archive object holds: the record as it was archived and its vector.
#[derive(Serialize, Deserialize)]
pub(super) struct Object {
    pub(super) format: String,
    pub(super) memory: Memory,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) vector: Option<Vector>,
}

pub(super) fn encode(memory: &Memory, vector: Option<Vector>) -> Result<Vec<u8>> {
    let object = Object {
        format: FORMAT.to_owned(),
        memory: memory.clone(),
        vector,
    };
    let json = serde_json::to_vec(&object).map_err(|e| Error::backend("archive", e))?;
    zstd::bulk::compress(&json, 3).map_err(|e| Error::backend("archive", e))
}

pub(super) fn decode(location: &str, bytes: &[u8]) -> Result<Object> {
    let corrupted = |reason: String| Error::Corrupted {
        location: location.to_owned(),
        reason,
    };
    // The record's own size limit bounds what a memory's object can decompress to.
    let json = zstd::stream::decode_all(bytes).map_err(|e| corrupted(e.to_string()))?;
    let object: Object = serde_json::from_slice(&json).map_err(|e| corrupted(e.to_string()))?;
    if object.format != FORMAT {
        return Err(corrupted(format!("format {:?}", object.format)));
    }
    Ok(object)
}

pub(super) fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
