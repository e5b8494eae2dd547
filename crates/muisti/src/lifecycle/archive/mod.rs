//! The archive tier (seed 002: "move rarely accessed memories to cold storage, keep metadata
//! in the primary database, load from archive only when needed").
//!
//! A cold memory (not used for [`MaintenanceOptions::archive_after`], recalled at most
//! [`MaintenanceOptions::archive_max_access`] times, no expiry) is written whole, with its
//! vector, as one zstd-compressed JSON object to an [`Archive`] (a local directory, memory, or
//! an S3-compatible bucket, through the `object_store` crate); the object is made durable
//! (local files and their directory are fsynced) and read back and compared before the store
//! is touched. Then one conditional update leaves the record in the store as
//! [`MemoryState::Archived`] with its metadata, owner, tags and statistics, its text emptied
//! (so no full-text entry) and its vector dropped, and `metadata.archived` naming the object
//! and its SHA-256. [`Engine::get`](crate::Engine::get) reads such a memory back from its object transparently,
//! recall reads archived memories only when asked (`include_archived`), and
//! [`Lifecycle::restore`](crate::lifecycle::Lifecycle::restore) puts the text back and re-indexes it (embedding it again), then deletes
//! the object. Deleting an archived memory deletes its object.
//!
//! Crashes: an object written whose record was not changed (a crash, or a record changed
//! meanwhile) is an orphan; a restore that crashed before deleting its object leaves one too.
//! Each archive run sweeps the namespaces it works on: an object whose record does not name it
//! and that is older than the run's lease (no run can still be about to name it) is deleted.

use std::{collections::HashMap, sync::Arc, time::Duration};

use muisti_core::{
    Error, Locator, Memory, MemoryId, MemoryState, Namespace, Partition, Patch, Result, Timestamp,
    UpdateRequest,
};
use object_store::path::Path;
use serde_json::{Value, json};

mod objects;

pub use objects::Archive;
use objects::*;

use super::{MaintenanceOptions, kept_by_jobs};
use crate::recall::Candidates;

/// A vector with the model that made it.
type Vector = (String, Vec<f32>);

/// Where an archived memory's record names its object: `{"object", "sha256", "bytes",
/// "archived_at"}` in its metadata.
pub const ARCHIVED: &str = "archived";

/// Where an archived record's object is and its checksum (`None` for a record that is not
/// archived, or was marked archived without an object: it is then read as it is). A
/// marker counts only when it names the memory's own object (`metadata` can be written by
/// a client: a forged one must not read or delete another memory's object).
fn marker(m: &Memory) -> Option<(String, String)> {
    if m.state != MemoryState::Archived {
        return None;
    }
    let a = m.metadata.get(ARCHIVED)?;
    let object = a.get("object")?.as_str()?;
    let own = own_path(&m.partition, Some(m.id)).to_string();
    // The archive's prefix comes first; the rest is the memory's own path.
    if !(object == own || object.ends_with(&format!("/{own}"))) {
        return None;
    }
    Some((object.to_owned(), a.get("sha256")?.as_str()?.to_owned()))
}

/// Whether a record is archived (its marker names its own object): it is read through the
/// archive and restored before it changes.
pub(crate) fn is_archived(m: &Memory) -> bool {
    marker(m).is_some()
}

/// Whether a memory is one the archive job moves: one the jobs keep, without an expiry (it
/// goes by itself), recalled at most `max_access` times and not written or recalled for
/// `after`.
pub fn is_cold(m: &Memory, now: Timestamp, after: Duration, max_access: u64) -> bool {
    let last_used = m
        .last_accessed_at
        .map_or(m.updated_at, |a| a.max(m.updated_at));
    kept_by_jobs(m)
        && m.expires_at.is_none()
        && m.access_count <= max_access
        && last_used.plus(after) <= now
}

impl crate::lifecycle::Lifecycle<'_> {
    fn archive_or_refuse(&self) -> Result<&Archive> {
        self.archive.ok_or_else(|| {
            Error::invalid(
                "archive",
                "no archive is configured (archive_url: file:///dir or s3://bucket/prefix)",
            )
        })
    }

    /// Moves a user's cold memories ([`is_cold`]) to the archive, each in turn: object
    /// written and verified, then the record stripped in one conditional update. Returns how
    /// many; `memories` keeps the ones left hot.
    pub(crate) fn archive_cold(
        &self,
        memories: &mut Vec<Memory>,
        options: &MaintenanceOptions,
    ) -> Result<u64> {
        let now = self.core.clock.now();
        let cold: Vec<usize> = (0..memories.len())
            .filter(|&i| {
                is_cold(
                    &memories[i],
                    now,
                    options.archive_after,
                    options.archive_max_access,
                )
            })
            .collect();
        if cold.is_empty() || options.dry_run {
            let n = cold.len() as u64;
            return Ok(n);
        }
        let archive = self.archive_or_refuse()?;
        // The user's vectors, read once (the object keeps its memory's).
        let first = &memories[cold[0]];
        let vectors: HashMap<MemoryId, Vector> = self
            .core
            .store
            .vectors(
                &first.partition,
                &muisti_core::Filter {
                    user_id: first.owner.user_id.clone(),
                    ..muisti_core::Filter::default()
                },
            )?
            .into_iter()
            .map(|v| (v.id, (v.model, v.vector)))
            .collect();
        let mut moved = Vec::new();
        for i in cold {
            let m = &memories[i];
            let path = archive.object_path(&m.partition, m.id);
            let body = encode(m, vectors.get(&m.id).cloned())?;
            let checksum = sha256(&body);
            let bytes = body.len();
            archive.put_verified(&path, body)?;
            let mut metadata = m.metadata.clone();
            metadata.insert(
                ARCHIVED.into(),
                json!({"object": path.to_string(), "sha256": checksum, "bytes": bytes,
                    "archived_at": now}),
            );
            let patch = Patch {
                content: Some(Value::String(String::new())),
                context: Some(None),
                state: Some(MemoryState::Archived),
                metadata: Some(metadata),
                ..Patch::default()
            };
            let at = Locator::Id {
                tenant: self.core.tenant.clone(),
                id: m.id,
            };
            match self
                .core
                .store
                .update(&UpdateRequest::new(at, patch).expecting(Some(m.version)))
            {
                Ok(_) => moved.push(m.id),
                // Changed or gone meanwhile: the object goes unless the record names it now
                // (another run that outlived its lease archived it first); the next run
                // decides about the memory.
                Err(e)
                    if matches!(
                        e.kind(),
                        muisti_core::ErrorKind::Conflict | muisti_core::ErrorKind::NotFound
                    ) =>
                {
                    let now_named = self
                        .core
                        .store
                        .get(&Locator::Id {
                            tenant: self.core.tenant.clone(),
                            id: m.id,
                        })?
                        .and_then(|fresh| marker(&fresh))
                        .is_some();
                    if !now_named {
                        archive.delete(&path)?;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        memories.retain(|m| !moved.contains(&m.id));
        Ok(moved.len() as u64)
    }

    /// Deletes the objects of `namespace` that no record names and that are older than
    /// `grace` (no run of the archive job can still be about to name them). Returns how many.
    pub(crate) fn sweep_archive(
        &self,
        namespace: &Namespace,
        lease: Duration,
        grace: Duration,
    ) -> Result<u64> {
        let Some(archive) = self.archive else {
            return Ok(0);
        };
        let partition = self.core.partition(namespace);
        let folder = archive.partition_path(&partition);
        let listed = archive.list(&folder)?;
        let ago = |d: Duration| {
            Timestamp::from_millis(
                self.core
                    .clock
                    .now()
                    .as_millis()
                    .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            )
        };
        // Staging files are this machine's (its clock): older than a lease, their writer is
        // gone. Objects carry the object store's clock: they wait out the grace as well.
        let mut swept = archive.sweep_staged(&folder, ago(lease))?;
        let before = ago(grace.max(lease)).as_millis();
        for chunk in listed.chunks(500) {
            let ids: Vec<MemoryId> = chunk
                .iter()
                .filter_map(|(p, _)| p.filename()?.strip_suffix(".json.zst")?.parse().ok())
                .collect();
            let named: std::collections::HashSet<String> = self
                .core
                .store
                .get_many(&self.core.tenant, &ids)?
                .iter()
                .filter_map(|m| marker(m).map(|(object, _)| object))
                .collect();
            for (path, written) in chunk {
                if !named.contains(&path.to_string()) && written.as_millis() < before {
                    archive.delete(path)?;
                    swept += 1;
                }
            }
        }
        Ok(swept)
    }

    /// The objects of the archived records among `records` (`None` for the others), read at
    /// once and each checked against its record's checksum: the one way an object is read.
    fn read_objects(&self, records: &[&Memory]) -> Result<Vec<Option<Object>>> {
        let wanted: Vec<Option<(String, String)>> = records.iter().map(|m| marker(m)).collect();
        if wanted.iter().all(Option::is_none) {
            return Ok(records.iter().map(|_| None).collect());
        }
        let archive = self.archive_or_refuse()?;
        let paths: Vec<Path> = wanted
            .iter()
            .flatten()
            .map(|(o, _)| Path::from(o.as_str()))
            .collect();
        let mut bodies = archive.get_many(&paths)?.into_iter();
        let mut out = Vec::with_capacity(records.len());
        for (m, want) in records.iter().zip(wanted) {
            let Some((object, checksum)) = want else {
                out.push(None);
                continue;
            };
            let location = format!("{}/{object}", archive.location());
            let bytes = bodies.next().flatten().ok_or_else(|| Error::Corrupted {
                location: location.clone(),
                reason: format!(
                    "memory {} is archived there, but the object is missing",
                    m.id
                ),
            })?;
            if sha256(&bytes) != checksum {
                return Err(Error::Corrupted {
                    location,
                    reason: "the archive object's checksum differs from the record's".into(),
                });
            }
            out.push(Some(decode(&location, &bytes)?));
        }
        Ok(out)
    }

    /// An archived record with its text read back from its object (state still
    /// `archived`, `metadata.archived` naming the object); any other record as it is.
    pub fn hydrate(&self, m: Memory) -> Result<Memory> {
        let object = self.read_objects(&[&m])?.pop().flatten();
        Ok(match object {
            Some(o) => with_text_of(m, &o.memory),
            None => m,
        })
    }

    /// Archived records of many, with their text and stored vector; others as they are.
    pub(crate) fn hydrate_many(
        &self,
        records: Vec<Memory>,
    ) -> Result<Vec<(Memory, Option<Vector>)>> {
        let objects = self.read_objects(&records.iter().collect::<Vec<_>>())?;
        Ok(records
            .into_iter()
            .zip(objects)
            .map(|(m, o)| match o {
                Some(o) => (with_text_of(m, &o.memory), o.vector),
                None => (m, None),
            })
            .collect())
    }

    /// Brings an archived memory back: its text, context and metadata from its object, state
    /// active, embedded and indexed again, in one conditional update; then the object is
    /// deleted. A memory that is not archived is returned as it is.
    pub fn restore(&self, id: MemoryId) -> Result<Memory> {
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id,
        };
        let _span = tracing::info_span!("memory.restore").entered();
        let Some(m) = self.core.store.get(&at)? else {
            return Err(Error::NotFound(at.describe()));
        };
        let (Some((object, _)), Some(archived)) =
            (marker(&m), self.read_objects(&[&m])?.pop().flatten())
        else {
            return Ok(m);
        };
        let was = archived.memory;
        let mut put = muisti_core::Put::new(m.partition.clone(), None, was.content.clone());
        put.context = was.context.clone();
        self.core.note_model()?;
        self.core.embed_puts(std::slice::from_mut(&mut put))?;
        let embedding = match (&self.core.embedder, put.embedding) {
            (Some(e), Some(v)) => Some((e.id().to_owned(), v)),
            _ => None,
        };
        let patch = Patch {
            content: Some(was.content.clone()),
            context: Some(was.context.clone()),
            state: Some(MemoryState::Active),
            metadata: Some(was.metadata.clone()),
            embedding,
            ..Patch::default()
        };
        let restored = self
            .core
            .store
            .update(&UpdateRequest::new(at, patch).expecting(Some(m.version)))?;
        // A crash here leaves an object no record names: the next archive run sweeps it.
        self.archive_or_refuse()?
            .delete(&Path::from(object.as_str()))?;
        self.core.emit(muisti_core::Event::Write {
            partition: restored.partition.clone(),
            key: restored.key.clone(),
            bytes: restored.text().len(),
            status: muisti_core::WriteStatus::Updated,
        });
        Ok(restored)
    }

    /// After a namespace was emptied: every archive object of it goes too.
    pub(crate) fn drop_archived_namespace(&self, namespace: &Namespace) -> Result<()> {
        let Some(archive) = self.archive else {
            return Ok(());
        };
        let partition = self.core.partition(namespace);
        for (path, _) in archive.list(&archive.partition_path(&partition))? {
            archive.delete(&path)?;
        }
        Ok(())
    }

    /// Recall's candidates among the archived memories of `partition` that `filter` admits:
    /// each object read, its text ranked among them and its vector (when made by this
    /// engine's model) against the query's.
    pub(crate) fn archived_candidates(
        &self,
        partition: &Partition,
        filter: &muisti_core::Filter,
        query: &str,
        vector: Option<&[f32]>,
        lexical: bool,
        limit: usize,
    ) -> Result<Candidates> {
        let archived: Vec<Memory> =
            muisti_core::list_all(self.core.store.as_ref(), partition, filter)?
                .into_iter()
                .filter(|m| marker(m).is_some())
                .collect();
        if archived.is_empty() {
            return Ok(Candidates::default());
        }
        let model = self.core.embedder.as_ref().map(|e| e.id().to_owned());
        let (records, vectors): (Vec<Memory>, Vec<Option<Vector>>) =
            self.hydrate_many(archived)?.into_iter().unzip();
        let ids: Vec<MemoryId> = records.iter().map(|m| m.id).collect();
        Ok(Candidates::rank(
            records,
            ids.iter().zip(&vectors).filter_map(|(id, v)| match v {
                Some((made_by, v)) if Some(made_by) == model.as_ref() => Some((*id, v.as_slice())),
                _ => None,
            }),
            query,
            vector,
            lexical,
            limit,
        ))
    }
}

/// The hot record `m` with the text of the record as it was archived.
fn with_text_of(mut m: Memory, archived: &Memory) -> Memory {
    m.content = archived.content.clone();
    m.context = archived.context.clone();
    m.content_hash = archived.content_hash.clone();
    m
}

/// [`Follower`](crate::core::Follower): a deleted memory's archive object goes with it.
pub(crate) struct ArchiveFollower(pub(crate) Option<Arc<Archive>>);

impl crate::core::Follower for ArchiveFollower {
    fn deleted(&self, _: &crate::core::Core, gone: &[Memory]) -> Result<()> {
        if let Some(archive) = self.0.as_deref() {
            for m in gone {
                drop_archived(archive, m)?;
            }
        }
        Ok(())
    }
}

/// After `m` was deleted from the store: its archive object goes too. (A run that archived
/// the memory between the caller's read and the delete leaves an object no record names:
/// the next archive run's sweep deletes it.)
fn drop_archived(archive: &Archive, m: &Memory) -> Result<()> {
    if let Some((object, _)) = marker(m) {
        archive.delete(&Path::from(object.as_str()))?;
    }
    Ok(())
}
