//! Moving memory between stores: an export is a stream of whole records (every field, the
//! history, graph, declarative and conversation records of the engine's own namespaces
//! included, since they are records too), an import writes them back through
//! [`Store::import`](muisti_core::Store::import), idempotent by id.
//!
//! The JSON Lines format: a header line (`{"format":"muisti-export/1",...}`), then one
//! record per line, its fields as [`Memory`] serializes them plus `vector` when the export
//! carries vectors. Embeddings are optional: an import embeds again every record that had
//! a vector (`embedding_model` set) when the export carries none, or one made by another
//! model than the engine's.
//!
//! ```
//! use muisti::{Engine, Namespace, transfer::{JsonlReader, JsonlWriter, Selection}};
//!
//! let a = Engine::open("mem://")?;
//! a.kv().set(&Namespace::default_ns(), "city", "Lisbon".into(), None)?;
//! let mut out = Vec::new();
//! let mut w = JsonlWriter::new(&mut out, a.store_model()?, false)?;
//! a.transfer().export(&Selection::default(), false, &mut |_, _| {}, &mut |r| w.write(&r))?;
//! let b = Engine::open("mem://")?;
//! for batch in JsonlReader::new(&out[..]).batches(500) {
//!     b.transfer().import(batch?)?;
//! }
//! assert_eq!(b.kv().get(&Namespace::default_ns(), "city")?, Some("Lisbon".into()));
//! # Ok::<(), muisti::Error>(())
//! ```

use std::io::{BufRead, Write};

use muisti_core::{
    Error, Filter, ListQuery, Memory, MemoryScope, MemoryState, Namespace, Partition, Record,
    Result, Source, Tenant, Timestamp,
};
use serde::{Deserialize, Serialize};

use crate::core::{Core, SYSTEM_TENANT, system_partition};

pub use muisti_store::markdown;

/// The format name in an export's header.
pub const FORMAT: &str = "muisti-export/1";

/// How an import treats what the records claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Agent-learned declarative entries wait for their user's confirmation: each becomes a
    /// proposal (as an agent's write of it would), not an entry. `muisti import`'s default.
    Gated,
    /// Every record as it is (a restore of the store's own snapshot; `muisti import
    /// --trusted`).
    Trusted,
}

/// Records read and written per batch by the CLI's import.
pub const BATCH: usize = 5_000;

/// What an export covers.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// These tenants; every tenant of the store when `None` (muisti's own included: its API
    /// keys, leases and queues, so a snapshot restores a whole server).
    pub tenants: Option<Vec<Tenant>>,
    /// Only this namespace.
    pub namespace: Option<Namespace>,
    /// Only this user's records.
    pub user_id: Option<String>,
}

/// The first line of a JSON Lines export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// The embedder the exported store's vectors were made with, if recorded.
    #[serde(default)]
    pub embedding_model: Option<String>,
    /// Whether records carry their vectors.
    #[serde(default)]
    pub with_vectors: bool,
    /// When the export was made.
    pub exported_at: Timestamp,
}

#[derive(Serialize)]
struct LineOut<'a> {
    #[serde(flatten)]
    memory: &'a Memory,
    #[serde(skip_serializing_if = "Option::is_none")]
    vector: Option<&'a [f32]>,
}

#[derive(Deserialize)]
struct LineIn {
    #[serde(flatten)]
    memory: Memory,
    #[serde(default)]
    vector: Option<Vec<f32>>,
}

/// Moving memory between stores ([`Engine::transfer`](crate::Engine::transfer)): exports,
/// and imports gated by the declarative rules. A handle over what the engine's parts share
/// and the conflict judge; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Transfer<'a> {
    pub(crate) core: &'a Core,
    pub(crate) judge: Option<&'a std::sync::Arc<dyn crate::declarative::ConflictJudge>>,
}

impl Transfer<'_> {
    /// Streams every live record the selection covers to `out`, partition by partition, a
    /// page at a time (memory stays constant however large the store), with its vector when
    /// `with_vectors`. `progress(done, total)` is called after each page. Returns how many
    /// records were exported.
    pub fn export(
        &self,
        selection: &Selection,
        with_vectors: bool,
        progress: &mut dyn FnMut(u64, u64),
        out: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<u64> {
        let store = &*self.core.store;
        let filter = Filter {
            user_id: selection.user_id.clone(),
            ..Filter::default()
        };
        filter.validate()?;
        let tenants = match &selection.tenants {
            Some(t) => t.clone(),
            None => store.tenants()?,
        };
        let mut partitions = Vec::new();
        let mut total = 0;
        for tenant in tenants {
            for ns in store.namespaces(&tenant)? {
                if selection.namespace.as_ref().is_some_and(|want| *want != ns) {
                    continue;
                }
                let p = Partition::new(tenant.clone(), ns);
                total += store.count(&p, &filter)?;
                partitions.push(p);
            }
        }
        progress(0, total);
        let mut done = 0;
        for p in partitions {
            let mut query = ListQuery {
                partition: p.clone(),
                filter: filter.clone(),
                after: None,
                limit: 0,
            };
            loop {
                let page = store.list(&query)?;
                let vectors = if with_vectors {
                    store.vectors_for(&page.items)?
                } else {
                    vec![None; page.items.len()]
                };
                for (memory, vector) in page.items.into_iter().zip(vectors) {
                    out(Record { memory, vector })?;
                    done += 1;
                }
                progress(done, total.max(done));
                match page.next {
                    Some(next) => query.after = Some(next),
                    None => break,
                }
            }
        }
        Ok(done)
    }

    /// Writes whole records to the store as they are ([`Store::import`](muisti_core::Store::import): idempotent by id,
    /// every field kept). With an embedder, a record that had a vector (`embedding_model`
    /// set) but comes without one, or with one of another model, is embedded again; the
    /// store's record of its embedder stays this engine's. Returns how many were written.
    pub fn import(&self, records: Vec<Record>) -> Result<u64> {
        let records = self.prepare_import(records)?;
        self.core.store.import(records)
    }

    /// Imports every batch `source` hands to its sink, as [`Transfer::import`] would, in one
    /// bulk load ([`Store::bulk_load`](muisti_core::Store::bulk_load): a store the load
    /// fills may build its indexes once, at the end). The store writes a batch on a thread
    /// of its own while `source` reads (and this engine embeds) the next. Returns how many
    /// records were written; `source`'s error, or the store's, stops the load (what was
    /// written stays: importing again is idempotent).
    pub fn import_all(
        &self,
        trust: Trust,
        source: impl FnOnce(&mut dyn FnMut(Vec<Record>) -> Result<()>) -> Result<()>,
    ) -> Result<u64> {
        let (to_writer, batches) = std::sync::mpsc::sync_channel::<Vec<Record>>(1);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || {
                let store = &self.core.store;
                store.bulk_load(&mut || {
                    let mut n = 0;
                    for batch in batches.iter() {
                        n += store.import(batch)?;
                    }
                    Ok(n)
                })
            });
            let read = source(&mut |batch| {
                let batch = self.gate(batch, trust)?;
                let batch = self.prepare_import(batch)?;
                // The writer stopped: its error is the one to report.
                to_writer
                    .send(batch)
                    .map_err(|_| Error::backend("import", "the store stopped writing"))
            });
            drop(to_writer);
            let written = writer
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            read?;
            Ok(written)
        })
    }

    /// Imports every record of `source`'s store (every tenant, with vectors) in one bulk
    /// load ([`Transfer::import_all`]); `progress` as [`Transfer::export`]'s.
    pub fn import_from(
        &self,
        source: Transfer<'_>,
        trust: Trust,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64> {
        self.import_all(trust, |sink| {
            let mut batch = Vec::with_capacity(BATCH);
            source.export(&Selection::default(), true, progress, &mut |r| {
                batch.push(r);
                if batch.len() == BATCH {
                    sink(std::mem::take(&mut batch))?;
                }
                Ok(())
            })?;
            sink(batch)
        })
    }

    /// Imports a JSON Lines export (see [`JsonlReader`]) in batches of [`BATCH`], in one bulk
    /// load ([`Transfer::import_all`]); `progress` gets the records read so far (twice, as
    /// [`Transfer::export`]'s done and total).
    pub fn import_jsonl(
        &self,
        input: impl BufRead,
        trust: Trust,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<u64> {
        self.import_all(trust, |sink| {
            let mut read = 0;
            for batch in JsonlReader::new(input).batches(BATCH) {
                let batch = batch?;
                read += batch.len() as u64;
                sink(batch)?;
                progress(read, read);
            }
            Ok(())
        })
    }

    /// What an import of `trust` writes of `records`: with [`Trust::Gated`], each active
    /// agent-learned declarative entry becomes a proposal its user confirms (as the agent's
    /// own write would), the rest as they are. Either way a declarative record with a key
    /// is refused: entries are reached by id, never through the key space.
    fn gate(&self, records: Vec<Record>, trust: Trust) -> Result<Vec<Record>> {
        let mut kept = Vec::with_capacity(records.len());
        for r in records {
            let m = &r.memory;
            let users = m.partition.tenant.as_str() != SYSTEM_TENANT
                && !m.partition.namespace.is_reserved();
            if !users || m.scope != MemoryScope::Declarative {
                kept.push(r);
                continue;
            }
            if m.writer_key().is_some() {
                return Err(Error::conflicting(
                    "key",
                    format!("declarative record {} has a key: entries have none", m.id),
                ));
            }
            if trust == Trust::Gated
                && m.source == Source::AgentLearned
                && m.state == MemoryState::Active
            {
                crate::declarative::Declarative {
                    core: &self.core.with_tenant(m.partition.tenant.clone()),
                    judge: self.judge,
                }
                .propose_imported(&r.memory)?;
                continue;
            }
            kept.push(r);
        }
        Ok(kept)
    }

    /// Embeds again what [`Transfer::import`] must (see there) and drops the store's record
    /// of the exporting engine's embedder.
    fn prepare_import(&self, mut records: Vec<Record>) -> Result<Vec<Record>> {
        if let Some(embedder) = &self.core.embedder {
            let meta = system_partition("meta")?;
            records
                .retain(|r| !(r.memory.partition == meta && r.memory.key.as_str() == "embedder"));
            let todo: Vec<usize> = (0..records.len())
                .filter(|&i| {
                    let m = &records[i].memory;
                    m.embedding_model.is_some()
                        && m.partition.tenant.as_str() != SYSTEM_TENANT
                        && (records[i].vector.is_none()
                            || m.embedding_model.as_deref() != Some(embedder.id()))
                })
                .collect();
            if !todo.is_empty() {
                self.core.note_model()?;
                let vectors = self
                    .core
                    .embed_memories(todo.iter().map(|&i| &records[i].memory))?;
                for (&i, v) in todo.iter().zip(vectors) {
                    let r = &mut records[i];
                    if v.is_empty() {
                        r.vector = None;
                        r.memory.embedding_model = None;
                    } else {
                        r.vector = Some(v);
                        r.memory.embedding_model = Some(embedder.id().to_owned());
                    }
                }
            }
        }
        Ok(records)
    }
}

/// Writes an export as JSON Lines: the header at creation, then one line per record.
pub struct JsonlWriter<W: Write> {
    out: W,
}

impl<W: Write> JsonlWriter<W> {
    /// Writes the header to `out`.
    pub fn new(mut out: W, embedding_model: Option<String>, with_vectors: bool) -> Result<Self> {
        let header = Header {
            format: FORMAT.into(),
            embedding_model,
            with_vectors,
            exported_at: Timestamp::now(),
        };
        serde_json::to_writer(&mut out, &header).map_err(io_error)?;
        out.write_all(b"\n").map_err(io_error)?;
        Ok(Self { out })
    }

    /// Writes one record as a line.
    pub fn write(&mut self, r: &Record) -> Result<()> {
        let line = LineOut {
            memory: &r.memory,
            vector: r.vector.as_deref(),
        };
        serde_json::to_writer(&mut self.out, &line).map_err(io_error)?;
        self.out.write_all(b"\n").map_err(io_error)
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> Result<W> {
        self.out.flush().map_err(io_error)?;
        Ok(self.out)
    }
}

fn io_error(e: impl std::fmt::Display) -> Error {
    Error::backend("export", e.to_string())
}

/// Reads a JSON Lines export: the header (optional) and the records, each error naming its
/// line.
pub struct JsonlReader<R: BufRead> {
    input: R,
    line: usize,
    buf: String,
    header: Option<Header>,
}

impl<R: BufRead> JsonlReader<R> {
    /// Reads from `input`.
    pub fn new(input: R) -> Self {
        Self {
            input,
            line: 0,
            buf: String::new(),
            header: None,
        }
    }

    /// The header, once the first line was read.
    pub fn header(&self) -> Option<&Header> {
        self.header.as_ref()
    }

    /// The records in batches of at most `size`.
    pub fn batches(self, size: usize) -> impl Iterator<Item = Result<Vec<Record>>> {
        let mut records = self;
        let size = size.max(1);
        std::iter::from_fn(move || {
            let mut batch = Vec::with_capacity(size.min(BATCH));
            for r in records.by_ref() {
                match r {
                    Ok(r) => batch.push(r),
                    Err(e) => return Some(Err(e)),
                }
                if batch.len() == size {
                    break;
                }
            }
            (!batch.is_empty()).then_some(Ok(batch))
        })
    }

    fn invalid(&self, reason: impl std::fmt::Display) -> Error {
        Error::invalid("import", format!("line {}: {reason}", self.line))
    }
}

impl<R: BufRead> Iterator for JsonlReader<R> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        loop {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => self.line += 1,
                Err(e) => return Some(Err(self.invalid(e))),
            }
            let text = self.buf.trim();
            if text.is_empty() {
                continue;
            }
            if self.line == 1 && text.contains("\"format\"") && !text.contains("\"content_hash\"") {
                match serde_json::from_str::<Header>(text) {
                    Ok(h) if h.format == FORMAT => {
                        self.header = Some(h);
                        continue;
                    }
                    Ok(h) => {
                        return Some(Err(
                            self.invalid(format!("the format {:?} is not {FORMAT}", h.format))
                        ));
                    }
                    Err(e) => return Some(Err(self.invalid(e))),
                }
            }
            return Some(
                serde_json::from_str::<LineIn>(text)
                    .map(|l| Record {
                        memory: l.memory,
                        vector: l.vector,
                    })
                    .map_err(|e| self.invalid(e)),
            );
        }
    }
}
