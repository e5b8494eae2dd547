//! Vectors: which embedder indexed the store, embedding writes, reindexing, and the
//! duplicate check of keyless writes.

use std::sync::atomic::Ordering;

use super::*;

impl Engine {
    /// The id of the embedder the store's vectors were made with, if recorded.
    pub fn store_model(&self) -> Result<Option<String>> {
        self.core.store_model()
    }

    /// Takes the lease `name` for `holder` for `ttl`, unless another holder's claim on it
    /// is live: `true` if `holder` holds it now. Calling it again while holding renews it.
    /// A lease is held by at most one holder at a time across every process and server on
    /// the store.
    pub fn acquire_lease(
        &self,
        name: &str,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<bool> {
        self.core.acquire_lease(name, holder, ttl)
    }

    /// Gives up `holder`'s claim on the lease `name` (nothing if it holds none).
    pub fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        self.core.release_lease(name, holder)
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
                OnModelMismatch::Error => return Err(self.core.model_mismatch(&id, &**embedder)),
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
            self.core.record_model(&**embedder)?;
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
                // A history entry is never searched: it needs no vector.
                if ns.as_str() == crate::records::HISTORY_NAMESPACE {
                    continue;
                }
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
                        .zip(self.core.embed_memories(todo.iter().copied())?)
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

    /// The embedder, if recall uses vectors.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.core.embedder.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use muisti_embed::EmbedError;

    use super::*;
    use crate::core::embed_distinct;
    use crate::recall::RecallConfig;

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

#[cfg(test)]
mod lease_tests {
    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use std::time::Duration;

    use super::*;

    #[test]
    fn one_holder_at_a_time_until_released_or_expired() -> Result<()> {
        let store = crate::open_store("mem://")?;
        let a = Engine::builder(Arc::clone(&store)).build()?;
        let b = Engine::builder(Arc::clone(&store)).build()?;
        let long = Duration::from_secs(60);
        assert!(a.acquire_lease("reindex", "job-a", long)?);
        assert!(!b.acquire_lease("reindex", "job-b", long)?, "held by a");
        assert!(a.acquire_lease("reindex", "job-a", long)?, "a renews");
        b.release_lease("reindex", "job-b")?;
        assert!(
            !b.acquire_lease("reindex", "job-b", long)?,
            "b cannot release a's"
        );
        a.release_lease("reindex", "job-a")?;
        assert!(b.acquire_lease("reindex", "job-b", Duration::from_millis(30))?);
        std::thread::sleep(Duration::from_millis(60));
        assert!(
            a.acquire_lease("reindex", "job-a", long)?,
            "b's time ran out"
        );
        Ok(())
    }

    /// Contenders racing for a free lease: never two holders (all may lose; then a lone
    /// contender gets it).
    #[test]
    fn racing_acquirers_never_both_hold_it() -> Result<()> {
        let store = crate::open_store("mem://")?;
        let won = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let engine = Engine::builder(Arc::clone(&store)).build();
                let won = Arc::clone(&won);
                std::thread::spawn(move || -> Result<()> {
                    if engine?.acquire_lease("race", &format!("h{i}"), Duration::from_secs(60))? {
                        won.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(())
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread")?;
        }
        let won = won.load(Ordering::SeqCst);
        assert!(won <= 1, "{won} holders");
        if won == 0 {
            let lone = Engine::builder(Arc::clone(&store)).build()?;
            assert!(lone.acquire_lease("race", "lone", Duration::from_secs(60))?);
        }
        Ok(())
    }
}
