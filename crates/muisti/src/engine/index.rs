//! Vectors: which embedder indexed the store, embedding writes, reindexing, and the
//! duplicate check of keyless writes.

use std::{collections::HashMap, sync::atomic::Ordering};

use super::*;

impl Engine {
    pub(super) fn model_locator() -> Result<Locator> {
        Ok(Locator::Key {
            partition: system_partition("meta")?,
            key: Key::new("embedder")?,
        })
    }

    /// The id of the embedder the store's vectors were made with, if recorded.
    pub fn store_model(&self) -> Result<Option<String>> {
        Ok(self.core.store.get(&Self::model_locator()?)?.and_then(|m| {
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
        self.core.store.put(Put::new(partition, Some(key), value))?;
        Ok(())
    }

    /// Checks the store's recorded embedder against the engine's at opening. A store with
    /// none recorded yet gets this engine's at its first write ([`Engine::note_model`]), so
    /// opening never writes.
    pub(super) fn check_model(&self, on_mismatch: OnModelMismatch) -> Result<()> {
        let Some(embedder) = &self.core.embedder else {
            return Ok(());
        };
        let checked = match self.store_model()? {
            None => false,
            Some(id) if id == embedder.id() => true,
            Some(id) => match on_mismatch {
                OnModelMismatch::Error => return Err(self.model_mismatch(&id, &**embedder)),
                OnModelMismatch::Reindex => {
                    self.reindex(false, &mut |_, _| {})?;
                    true
                }
                OnModelMismatch::Ignore => true,
            },
        };
        self.core.model_checked.store(checked, Ordering::Relaxed);
        Ok(())
    }

    /// Before a write that stores vectors: records the engine's embedder in a store that has
    /// none yet, or refuses if another engine recorded a different one since this one opened.
    pub(crate) fn note_model(&self) -> Result<()> {
        let Some(embedder) = &self.core.embedder else {
            return Ok(());
        };
        if self.core.model_checked.load(Ordering::Relaxed) {
            return Ok(());
        }
        match self.store_model()? {
            None => self.record_model(&**embedder)?,
            Some(id) if id == embedder.id() => {}
            Some(id) => return Err(self.model_mismatch(&id, &**embedder)),
        }
        self.core.model_checked.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn model_mismatch(&self, recorded: &str, embedder: &dyn Embedder) -> Error {
        Error::Conflict(format!(
            "the store {} was indexed with the embedder {recorded:?}, but this engine embeds \
             with {:?}; run `muisti reindex` to re-embed every memory with it, or choose the \
             embedder {recorded:?}",
            self.core.store.info().location,
            embedder.id()
        ))
    }

    /// Re-embeds the memories of every tenant whose vector was made by another model (or
    /// all of them with `force`), then records the engine's embedder as the store's.
    /// `progress(done, total)` is called as batches complete.
    pub fn reindex(
        &self,
        force: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReindexReport> {
        let tenants: Vec<Tenant> = self
            .core
            .store
            .tenants()?
            .into_iter()
            .filter(|t| t.as_str() != SYSTEM_TENANT)
            .collect();
        let report = self.reindex_tenants(&tenants, force, progress)?;
        if let Some(embedder) = &self.core.embedder {
            self.record_model(&**embedder)?;
        }
        Ok(report)
    }

    /// [`Engine::reindex`] of the engine's own tenant only (what a tenant's admin may
    /// start): the store's record of its embedder stays as it is, since other tenants'
    /// vectors are not made again.
    pub fn reindex_tenant(
        &self,
        force: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReindexReport> {
        self.reindex_tenants(std::slice::from_ref(&self.core.tenant), force, progress)
    }

    fn reindex_tenants(
        &self,
        tenants: &[Tenant],
        force: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReindexReport> {
        let Some(embedder) = &self.core.embedder else {
            return Err(Error::invalid("embedder", "reindex needs an embedder"));
        };
        let _span = info_span!("memory.reindex", model = embedder.id()).entered();
        let mut partitions = Vec::new();
        let mut total = 0;
        for tenant in tenants {
            for ns in self.core.store.namespaces(tenant)? {
                let p = Partition::new(tenant.clone(), ns);
                total += self.core.store.count(&p, &Filter::default())?;
                partitions.push(p);
            }
        }
        let mut report = ReindexReport::default();
        progress(0, total);
        for p in partitions {
            let all = list_all(&*self.core.store, &p, &Filter::default())?;
            for chunk in all.chunks(256) {
                report.scanned += chunk.len() as u64;
                let todo: Vec<&Memory> = chunk
                    .iter()
                    .filter(|m| force || m.embedding_model.as_deref() != Some(embedder.id()))
                    .collect();
                if !todo.is_empty() {
                    let vectors: Vec<StoredVector> = todo
                        .iter()
                        .zip(self.embed_memories(todo.iter().copied())?)
                        .filter(|(_, vector)| !vector.is_empty())
                        .map(|(m, vector)| StoredVector {
                            id: m.id,
                            model: embedder.id().to_owned(),
                            vector,
                        })
                        .collect();
                    report.reembedded += self.core.store.set_vectors(&p.tenant, &vectors)?;
                }
                progress(report.scanned, total);
            }
        }
        Ok(report)
    }

    /// The live memory a keyless write duplicates: same partition, owner and context, same
    /// normalised content (see [`RecallConfig::dedupe`]). Batches
    /// ([`Engine::remember_many`]) are imports and are not deduplicated.
    pub(super) fn duplicate_of(&self, put: &Put) -> Result<Option<Memory>> {
        if !self.core.recall.dedupe || put.key.is_some() {
            return Ok(None);
        }
        put.validate(&self.core.store.limits())?;
        let filter = Filter {
            user_id: put.owner.user_id.clone(),
            agent_id: put.owner.agent_id.clone(),
            session_id: put.owner.session_id.clone(),
            content_hash: Some(muisti_core::content_hash(&muisti_core::value_text(
                &put.content,
            ))),
            ..Filter::default()
        };
        let query = ListQuery {
            partition: put.partition.clone(),
            filter,
            after: None,
            limit: 16,
        };
        Ok(self
            .core
            .store
            .list(&query)?
            .items
            .into_iter()
            .find(|m| m.owner == put.owner && m.context == put.context))
    }

    /// Adds vectors to writes that have none, with the engine's embedder (one batch).
    pub(crate) fn embed_puts(&self, puts: &mut [Put]) -> Result<()> {
        let Some(embedder) = &self.core.embedder else {
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
        if self.core.recall.words > 0.0 {
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

    /// The embedder, if recall uses vectors.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.core.embedder.as_ref()
    }
}

/// Embeds `texts`, each distinct text once (a conversation turn is the next turn's context,
/// so a batch of turns holds most texts twice), in one call to the embedder.
fn embed_distinct(embedder: &dyn Embedder, texts: &[String]) -> Result<Vec<Vec<f32>>> {
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Records the texts it is asked to embed (and those whose words it is given to read); a
    /// text's vector is its length.
    #[derive(Default)]
    struct Recording(Mutex<Vec<String>>, Mutex<Vec<String>>);

    impl Embedder for Recording {
        fn id(&self) -> &str {
            "recording"
        }
        fn dimensions(&self) -> usize {
            1
        }
        fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
            let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
            seen.extend(texts.iter().map(|t| (*t).to_owned()));
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
        fn prepare_words(&self, texts: &[&str], skip: fn(&str) -> bool) {
            assert!(skip("the") && !skip("seats"), "recall's skip");
            let mut seen = self.1.lock().unwrap_or_else(|p| p.into_inner());
            seen.extend(texts.iter().map(|t| (*t).to_owned()));
        }
    }

    /// A written memory's words are given to the embedder to read with the text recall's
    /// word matching scores (key and content, not the context), when word matching is on.
    #[test]
    fn written_words_are_read_ahead_only_for_word_matching() -> Result<()> {
        for words in [0.3, 0.0] {
            let e = Arc::new(Recording::default());
            let engine = Engine::builder(crate::open_store("mem://")?)
                .embedder(Some(Arc::clone(&e) as Arc<dyn Embedder>))
                .recall_config(RecallConfig {
                    words,
                    ..RecallConfig::default()
                })
                .build()?;
            let partition = engine.partition(&Namespace::new("travel")?);
            let mut put = Put::new(
                partition,
                Some(Key::new("seat")?),
                serde_json::json!("Alice prefers window seats"),
            );
            put.context = Some("booking a flight".into());
            let written = engine.remember(put)?;
            let prepared = e.1.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if words > 0.0 {
                assert_eq!(prepared, [written.memory.index_text().into_owned()]);
                assert_eq!(prepared, ["seat Alice prefers window seats"]);
            } else {
                assert!(prepared.is_empty(), "{prepared:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn each_distinct_text_is_embedded_once_and_every_text_gets_its_vector() {
        let e = Recording::default();
        let texts: Vec<String> = ["one", "three", "one", "sixteen", "three"]
            .into_iter()
            .map(String::from)
            .collect();
        let got = embed_distinct(&e, &texts).expect("embeds");
        assert_eq!(
            *e.0.lock().expect("lock"),
            ["one", "three", "sixteen"].map(String::from)
        );
        let want: Vec<Vec<f32>> = texts.iter().map(|t| vec![t.len() as f32]).collect();
        assert_eq!(got, want);
    }
}
