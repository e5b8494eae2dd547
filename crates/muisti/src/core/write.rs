//! Storing: embedding writes with the engine's embedder (and recording it as the store's),
//! storing them, updating in place, and the one bulk-delete loop. These only store: what
//! follows a change is the caller's [`Core::after_write`] or [`Core::after_delete`].

use std::{collections::HashMap, sync::atomic::Ordering};

use muisti_core::{
    Error, ErrorKind, Filter, Key, ListQuery, Locator, Memory, Namespace, Put, Result,
    UpdateRequest, Written,
};
use muisti_embed::{EmbedError, Embedder};
use tracing::{debug, info_span};

use super::{Core, embed_err, system_partition};
use crate::recall;

impl Core {
    /// The record with `id` in the tenant, as the store holds it (no event; an archived
    /// memory's text is not read back).
    pub(crate) fn read(&self, id: muisti_core::MemoryId) -> Result<Option<Memory>> {
        self.store.get(&Locator::Id {
            tenant: self.tenant.clone(),
            id,
        })
    }

    /// Embeds and stores a write (what follows it is the caller's [`Engine::after_write`]).
    pub(crate) fn put_embedded(&self, mut put: Put) -> Result<Written> {
        self.note_model()?;
        self.embed_puts(std::slice::from_mut(&mut put))?;
        let span = info_span!("memory.write", namespace = %put.partition.namespace);
        let _g = span.enter();
        let w = self.store.put(put)?;
        debug!(id = %w.memory.id, status = ?w.status, "written");
        Ok(w)
    }

    /// [`Engine::update`] without the declarative rules (the declarative write's own
    /// supersede comes here); what follows it is the caller's [`Engine::after_write`].
    pub(crate) fn update_unchecked(&self, mut req: UpdateRequest) -> Result<Memory> {
        req.at = self.confine(&req.at);
        let _span = info_span!("memory.update").entered();
        let given = req.expected_version;
        let mut attempts = 0;
        let m = loop {
            if req.patch.changes_text()
                && let Some(embedder) = &self.embedder
            {
                let current = self
                    .store
                    .get(&req.at)?
                    .ok_or_else(|| Error::NotFound(req.at.describe()))?;
                let content = req
                    .patch
                    .content
                    .clone()
                    .unwrap_or_else(|| current.content.clone());
                let mut put = Put::new(
                    current.partition.clone(),
                    current.writer_key().cloned(),
                    content,
                );
                put.context = match &req.patch.context {
                    Some(c) => c.clone(),
                    None => current.context.clone(),
                };
                self.note_model()?;
                self.embed_puts(std::slice::from_mut(&mut put))?;
                req.patch.embedding = put.embedding.map(|v| (embedder.id().to_owned(), v));
                req.expected_version = Some(given.unwrap_or(current.version));
            }
            match self.store.update(&req) {
                Err(e) if e.kind() == ErrorKind::Conflict && given.is_none() && attempts < 8 => {
                    attempts += 1;
                }
                other => break other?,
            }
        };
        debug!(id = %m.id, version = m.version, "updated");
        Ok(m)
    }

    /// Embeds and stores a batch in one transaction where the store has them (what follows
    /// it is the caller's [`Engine::after_write`]).
    pub(crate) fn put_many_embedded(&self, mut puts: Vec<Put>) -> Result<Vec<Written>> {
        self.note_model()?;
        self.embed_puts(&mut puts)?;
        let _span = info_span!("memory.write_many", count = puts.len()).entered();
        self.store.put_many(puts)
    }

    pub(crate) fn confine(&self, at: &Locator) -> Locator {
        match at {
            Locator::Key { partition, key } => Locator::Key {
                partition: self.partition(&partition.namespace),
                key: key.clone(),
            },
            Locator::Id { id, .. } => Locator::Id {
                tenant: self.tenant.clone(),
                id: *id,
            },
        }
    }

    pub(crate) fn model_locator() -> Result<Locator> {
        Ok(Locator::Key {
            partition: system_partition("meta")?,
            key: Key::new("embedder")?,
        })
    }

    /// The id of the embedder the store's vectors were made with, if recorded.
    pub(crate) fn store_model(&self) -> Result<Option<String>> {
        Ok(self.store.get(&Self::model_locator()?)?.and_then(|m| {
            m.content
                .get("id")
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        }))
    }

    pub(crate) fn record_model(&self, embedder: &dyn Embedder) -> Result<()> {
        let Locator::Key { partition, key } = Self::model_locator()? else {
            return Ok(());
        };
        let value = serde_json::json!({"id": embedder.id(), "dimensions": embedder.dimensions()});
        self.store.put(Put::new(partition, Some(key), value))?;
        Ok(())
    }

    /// Before a write that stores vectors: records the engine's embedder in a store that has
    /// none yet, or refuses if another engine recorded a different one since this one opened.
    pub(crate) fn note_model(&self) -> Result<()> {
        let Some(embedder) = &self.embedder else {
            return Ok(());
        };
        if self.model_checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.store_model()? {
            None => self.record_model(&**embedder)?,
            Some(id) if id == embedder.id() => {}
            Some(id) => return Err(self.model_mismatch(&id, &**embedder)),
        }
        self.model_checked.store(true, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn model_mismatch(&self, recorded: &str, embedder: &dyn Embedder) -> Error {
        Error::Conflict(format!(
            "the store {} was indexed with the embedder {recorded:?}, but this engine embeds \
             with {:?}; run `muisti reindex` to re-embed every memory with it, or choose the \
             embedder {recorded:?}",
            self.store.info().location,
            embedder.id()
        ))
    }

    /// Adds vectors to writes that have none, with the engine's embedder (one batch).
    pub(crate) fn embed_puts(&self, puts: &mut [Put]) -> Result<()> {
        let Some(embedder) = &self.embedder else {
            return Ok(());
        };
        let todo: Vec<usize> = (0..puts.len())
            .filter(|&i| puts[i].embedding.is_none())
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        // The content (and the key, when the writer gave one: an id is noise to a model),
        // plus each context at a lower weight: one batch. This is the one definition of
        // what a memory's vector describes.
        let mut texts: Vec<String> = todo
            .iter()
            .map(|&i| puts[i].index_text().into_owned())
            .collect();
        let with_context: Vec<usize> = todo
            .iter()
            .copied()
            .filter(|&i| {
                puts[i]
                    .context
                    .as_deref()
                    .is_some_and(|c| !c.trim().is_empty())
            })
            .collect();
        if self.recall.words > 0.0 {
            let index_texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.prepare_words(&index_texts, recall::WORD_SKIP);
        }
        texts.extend(with_context.iter().filter_map(|&i| puts[i].context.clone()));
        let mut vectors = embed_distinct(embedder.as_ref(), &texts)?;
        // `with_context` is in the order of `todo`, so its vectors are met in turn.
        let mut context_vectors = with_context
            .iter()
            .copied()
            .zip(vectors.split_off(todo.len()))
            .peekable();
        for (i, mut v) in todo.iter().copied().zip(vectors) {
            if let Some((_, cv)) = context_vectors.next_if(|(c, _)| *c == i) {
                for (x, c) in v.iter_mut().zip(&cv) {
                    *x += muisti_core::text::CONTEXT_WEIGHT * c;
                }
                muisti_core::text::normalize(&mut v);
            }
            puts[i].embedding = Some(v);
            puts[i].embedding_model = Some(embedder.id().to_owned());
        }
        Ok(())
    }
}

/// Embeds `texts`, each distinct text once (a conversation turn is the next turn's context,
/// so a batch of turns holds most texts twice), in one call to the embedder.
pub(crate) fn embed_distinct(embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>> {
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(texts.len());
    let mut distinct: Vec<&str> = Vec::with_capacity(texts.len());
    let slots: Vec<usize> = texts
        .iter()
        .map(|t| {
            *first.entry(t.as_str()).or_insert_with(|| {
                distinct.push(t.as_str());
                distinct.len() - 1
            })
        })
        .collect();
    let mut vectors = embedder.embed(&distinct).map_err(embed_err)?;
    if vectors.len() != distinct.len() {
        return Err(embed_err(EmbedError::Model(format!(
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            distinct.len()
        ))));
    }
    // A vector is copied for each earlier use of its text and moved to the last one.
    let mut last = vec![0; distinct.len()];
    for (k, &i) in slots.iter().enumerate() {
        last[i] = k;
    }
    Ok(slots
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            if last[i] == k {
                std::mem::take(&mut vectors[i])
            } else {
                vectors[i].clone()
            }
        })
        .collect())
}

impl Core {
    /// The vectors of memories' texts (content and context, as when they were written), by
    /// the engine's embedder, in order; empty vectors without one.
    pub(crate) fn embed_memories<'a>(
        &self,
        memories: impl IntoIterator<Item = &'a Memory>,
    ) -> Result<Vec<Vec<f32>>> {
        let mut puts: Vec<Put> = memories
            .into_iter()
            .map(|m| {
                let mut put = Put::new(
                    m.partition.clone(),
                    m.writer_key().cloned(),
                    m.content.clone(),
                );
                put.context = m.context.clone();
                put
            })
            .collect();
        self.embed_puts(&mut puts)?;
        Ok(puts
            .into_iter()
            .map(|p| p.embedding.unwrap_or_default())
            .collect())
    }

    /// Deletes `target` (a record of the tenant the caller read and may delete), then what
    /// follows the delete, and tells the observers; `true` if it was still there.
    pub(crate) fn forget_record(&self, target: Memory) -> Result<bool> {
        Ok(self.forget_records(vec![target])? == 1)
    }

    /// Deletes `targets` (records of the tenant the caller read and may delete) in one
    /// batch of the store's, then what follows the deletes, and tells the observers of
    /// each; how many were still there.
    pub(crate) fn forget_records(&self, targets: Vec<Memory>) -> Result<u64> {
        if targets.is_empty() {
            return Ok(0);
        }
        // By id: what the caller checked is what is deleted.
        let ids: Vec<muisti_core::MemoryId> = targets.iter().map(|m| m.id).collect();
        let deleted: std::collections::HashSet<muisti_core::MemoryId> = self
            .store
            .delete_many(&self.tenant, &ids)?
            .into_iter()
            .collect();
        let (gone, kept): (Vec<Memory>, Vec<Memory>) =
            targets.into_iter().partition(|m| deleted.contains(&m.id));
        self.after_delete(&gone)?;
        for (target, count) in gone
            .into_iter()
            .map(|m| (m, 1))
            .chain(kept.into_iter().map(|m| (m, 0)))
        {
            self.emit(muisti_core::Event::Forget {
                partition: target.partition,
                key: Some(target.key),
                count,
            });
        }
        Ok(deleted.len() as u64)
    }

    /// Deletes the tenant's records of `ids` as [`Core::forget_records`] does; how many
    /// existed.
    pub(crate) fn forget_ids(&self, ids: &[muisti_core::MemoryId]) -> Result<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let targets = self.store.get_many(&self.tenant, ids)?;
        self.forget_records(targets)
    }

    /// Deletes every record of a namespace that `filter` matches and `keep` does not keep,
    /// each through [`muisti_core::Store::delete`] and [`Engine::after_delete`]; returns how
    /// many (the caller tells the observers).
    pub(crate) fn delete_where(
        &self,
        namespace: &Namespace,
        filter: &Filter,
        keep: impl Fn(&Memory) -> bool,
    ) -> Result<u64> {
        let partition = self.partition(namespace);
        let mut gone = Vec::new();
        let mut after = None;
        loop {
            let page = self.store.list(&ListQuery {
                partition: partition.clone(),
                filter: filter.clone(),
                after,
                limit: 0,
            })?;
            for m in page.items {
                if keep(&m) {
                    continue;
                }
                if self.store.delete(&Locator::Id {
                    tenant: self.tenant.clone(),
                    id: m.id,
                })? {
                    gone.push(m);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        self.after_delete(&gone)?;
        Ok(gone.len() as u64)
    }
}
