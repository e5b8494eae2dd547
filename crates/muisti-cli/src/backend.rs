//! The one interface the memory and key-value commands run on, whether the store is opened in
//! this process or reached through `--server URL`. Both sides speak the API's wire types: the
//! local side runs the server's own operations (`muisti_server::ops`), the remote side the
//! typed client, so a command validates its input and prints its output the same way in both
//! modes.

use anyhow::Result;
use muisti::{Engine, Key, Locator, MemoryId, Namespace, declarative::visible_to};
use muisti_client::{
    Client, ClusterParams, Clusters, ConversationDetail, ConversationParams, Conversations,
    ForgetParams, GraphEntities, GraphEntity, GraphEntityParams, GraphMerge, GraphRelationParams,
    GraphRelations, History, KvEntries, KvEntry, KvValue, ListParams, MaintenanceReport,
    MaintenanceRequest, Memory, MemoryAccesses, MemoryPage, MemoryPatch, NewMemory, Proposal,
    ProposalDecision, ProposalParams, Proposals, RecallQuery, RecallResult, SimilarParams, Stats,
    StatsParams,
};
use muisti_server::ops;

/// The memory and key-value operations of the CLI.
pub(crate) trait Memories {
    /// Stores a memory.
    fn remember(&self, m: NewMemory) -> Result<Memory>;
    /// The memory with this id, else the one at this key in `ns`, as `user` sees it (a
    /// declarative entry only for its own user).
    fn get(&self, target: &str, ns: &str, user: Option<&str>) -> Result<Option<Memory>>;
    /// Deletes the memory with this id, else the one at this key in `ns`, as `user` (a
    /// declarative entry only for its own user); `false` if none.
    fn forget(&self, target: &str, ns: &str, user: Option<&str>) -> Result<bool>;
    /// Deletes every memory of one owner; returns how many.
    fn forget_owner(&self, p: ForgetParams) -> Result<u64>;
    /// One page of memories.
    fn list(&self, p: ListParams) -> Result<MemoryPage>;
    /// Changes fields of a memory by id, atomically.
    fn update(&self, id: &str, patch: MemoryPatch) -> Result<Memory>;
    /// Hybrid recall.
    fn recall(&self, q: RecallQuery) -> Result<RecallResult>;
    /// The memories closest in meaning to one.
    fn similar(&self, id: &str, p: SimilarParams) -> Result<RecallResult>;
    /// What the tenant holds; with a namespace or user, their memories summed up.
    fn stats(&self, p: StatsParams) -> Result<Stats>;
    /// The entry at a key, if any.
    fn kv_get(&self, ns: &str, key: &str) -> Result<Option<KvEntry>>;
    /// Stores a value at a key.
    fn kv_set(&self, ns: &str, key: &str, v: KvValue) -> Result<KvEntry>;
    /// Deletes a key; `false` if there was none.
    fn kv_forget(&self, ns: &str, key: &str) -> Result<bool>;
    /// Every entry of a namespace.
    fn kv_all(&self, ns: &str) -> Result<KvEntries>;
    /// Deletes every entry of a namespace; how many.
    fn kv_flush(&self, ns: &str) -> Result<u64>;
    /// Deletes expired records of the whole store now; how many.
    fn purge(&self) -> Result<u64>;
    fn end_conversation(&self, id: &str) -> Result<u64>;
    fn proposals(&self, user_id: &str) -> Result<Proposals>;
    fn conversations(&self, user_id: Option<&str>) -> Result<Conversations>;
    fn conversation(&self, id: &str) -> Result<ConversationDetail>;
    fn delete_conversation(&self, id: &str) -> Result<u64>;
    fn confirm(&self, id: &str, user_id: &str) -> Result<Memory>;
    fn reject(&self, id: &str, user_id: &str) -> Result<Proposal>;
    fn history(&self, id: &str, user: Option<&str>) -> Result<History>;
    fn accesses(&self, id: &str, user: Option<&str>) -> Result<MemoryAccesses>;
    fn graph_entities(&self, p: GraphEntityParams) -> Result<GraphEntities>;
    fn graph_relations(&self, p: GraphRelationParams) -> Result<GraphRelations>;
    fn graph_merge(&self, m: GraphMerge) -> Result<GraphEntity>;
    fn maintenance(&self, req: MaintenanceRequest) -> Result<MaintenanceReport>;
    /// Brings an archived memory back.
    fn restore(&self, id: &str) -> Result<Memory>;
    /// Remembers a conversation (facts, or messages as said).
    fn extract(&self, req: muisti_client::ExtractRequest)
    -> Result<muisti_client::ExtractResponse>;
    /// A user's memories grouped by topic.
    fn clusters(&self, p: ClusterParams) -> Result<Clusters>;
    /// One page of a cluster's memories.
    fn cluster_memories(&self, cluster: u32, p: ClusterParams) -> Result<MemoryPage>;
}

/// `NotFound` as `None`, any other error kept.
fn found<T>(r: muisti::Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == muisti::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A store opened in this process.
pub(crate) struct Local(pub(crate) Engine);

impl Local {
    /// The memory with this id (in the engine's tenant), else the key in `ns`.
    fn locate(&self, target: &str, ns: &str) -> Result<Locator> {
        if let Ok(id) = MemoryId::parse(target)
            && self.0.get_by_id(id)?.is_some()
        {
            return Ok(Locator::Id {
                tenant: self.0.tenant().clone(),
                id,
            });
        }
        Ok(Locator::Key {
            partition: self.0.partition(&Namespace::new(ns)?),
            key: Key::new(target)?,
        })
    }
}

impl Memories for Local {
    fn remember(&self, m: NewMemory) -> Result<Memory> {
        Ok(ops::create(&self.0, m)?.0)
    }

    fn get(&self, target: &str, ns: &str, user: Option<&str>) -> Result<Option<Memory>> {
        let found = match self.locate(target, ns)? {
            // A read by id counts an access, as over HTTP.
            Locator::Id { id, .. } => self.0.read_for(id, user)?,
            at => self.0.get(&at)?.filter(|m| visible_to(user, m)),
        };
        Ok(found.as_ref().map(ops::memory_out))
    }

    fn forget(&self, target: &str, ns: &str, user: Option<&str>) -> Result<bool> {
        let at = self.locate(target, ns)?;
        match self.0.get(&at)? {
            Some(m) if visible_to(user, &m) => Ok(self.0.forget(&at)?),
            _ => Ok(false),
        }
    }

    fn forget_owner(&self, p: ForgetParams) -> Result<u64> {
        Ok(ops::forget_owner(&self.0, p)?.deleted)
    }

    fn list(&self, p: ListParams) -> Result<MemoryPage> {
        Ok(ops::list(&self.0, p)?)
    }

    fn update(&self, id: &str, patch: MemoryPatch) -> Result<Memory> {
        Ok(ops::update(&self.0, id, patch)?)
    }

    fn recall(&self, q: RecallQuery) -> Result<RecallResult> {
        Ok(ops::recall(&self.0, q)?)
    }

    fn similar(&self, id: &str, p: SimilarParams) -> Result<RecallResult> {
        Ok(ops::similar(&self.0, id, p)?)
    }

    fn stats(&self, p: StatsParams) -> Result<Stats> {
        Ok(ops::stats(&self.0, p)?)
    }

    fn kv_get(&self, ns: &str, key: &str) -> Result<Option<KvEntry>> {
        found(ops::kv_get(&self.0, ns, key))
    }

    fn kv_set(&self, ns: &str, key: &str, v: KvValue) -> Result<KvEntry> {
        Ok(ops::kv_set(&self.0, ns, key, v)?)
    }

    fn kv_forget(&self, ns: &str, key: &str) -> Result<bool> {
        Ok(found(ops::kv_forget(&self.0, ns, key))?.is_some())
    }

    fn kv_all(&self, ns: &str) -> Result<KvEntries> {
        Ok(KvEntries::collect(|cursor| {
            ops::kv_page(
                &self.0,
                ns,
                muisti_client::KvPageParams {
                    limit: None,
                    cursor,
                },
            )
        })?)
    }

    fn kv_flush(&self, ns: &str) -> Result<u64> {
        Ok(ops::kv_flush(&self.0, ns)?.deleted)
    }

    fn purge(&self) -> Result<u64> {
        Ok(ops::purge(&self.0)?.purged)
    }

    fn end_conversation(&self, id: &str) -> Result<u64> {
        Ok(ops::end_conversation(&self.0, id)?.deleted)
    }

    fn conversations(&self, user_id: Option<&str>) -> Result<Conversations> {
        let p = ConversationParams {
            user_id: user_id.map(str::to_owned),
        };
        Ok(ops::conversations(&self.0, p)?)
    }

    fn conversation(&self, id: &str) -> Result<ConversationDetail> {
        Ok(ops::conversation(&self.0, id)?)
    }

    fn delete_conversation(&self, id: &str) -> Result<u64> {
        Ok(ops::delete_conversation(&self.0, id)?.deleted)
    }

    fn proposals(&self, user_id: &str) -> Result<Proposals> {
        let p = ProposalParams {
            user_id: user_id.to_owned(),
        };
        Ok(ops::proposals(&self.0, p)?)
    }

    fn confirm(&self, id: &str, user_id: &str) -> Result<Memory> {
        let by = ProposalDecision {
            user_id: user_id.to_owned(),
        };
        Ok(ops::confirm(&self.0, id, by)?.0)
    }

    fn reject(&self, id: &str, user_id: &str) -> Result<Proposal> {
        let by = ProposalDecision {
            user_id: user_id.to_owned(),
        };
        Ok(ops::reject(&self.0, id, by)?)
    }

    fn history(&self, id: &str, user: Option<&str>) -> Result<History> {
        Ok(ops::history(&self.0, id, user)?)
    }

    fn accesses(&self, id: &str, user: Option<&str>) -> Result<MemoryAccesses> {
        Ok(ops::accesses(&self.0, id, user)?)
    }

    fn graph_entities(&self, p: GraphEntityParams) -> Result<GraphEntities> {
        Ok(ops::graph_entities(&self.0, p)?)
    }

    fn graph_relations(&self, p: GraphRelationParams) -> Result<GraphRelations> {
        Ok(ops::graph_relations(&self.0, p)?)
    }

    fn graph_merge(&self, m: GraphMerge) -> Result<GraphEntity> {
        Ok(ops::graph_merge(&self.0, m)?)
    }

    fn extract(
        &self,
        req: muisti_client::ExtractRequest,
    ) -> Result<muisti_client::ExtractResponse> {
        Ok(ops::extract(&self.0, req)?)
    }

    fn maintenance(&self, req: MaintenanceRequest) -> Result<MaintenanceReport> {
        let mut bar = crate::progress_bar("maintaining users");
        let report = ops::maintenance(&self.0, req, &mut bar);
        crate::progress_done();
        Ok(report?)
    }

    fn restore(&self, id: &str) -> Result<Memory> {
        Ok(ops::restore(&self.0, id)?)
    }

    fn clusters(&self, p: ClusterParams) -> Result<Clusters> {
        Ok(ops::clusters(&self.0, p)?)
    }

    fn cluster_memories(&self, cluster: u32, p: ClusterParams) -> Result<MemoryPage> {
        Ok(ops::cluster_memories(&self.0, cluster, p)?)
    }
}

/// A `muisti serve` server.
pub(crate) struct Remote(pub(crate) Client);

impl Remote {
    /// Checks a memory id before it is put into a URL, as the local side does.
    fn id(id: &str) -> Result<()> {
        MemoryId::parse(id).map_err(|_| {
            muisti::Error::invalid("id", format!("{id:?} is not a memory id (a ULID)"))
        })?;
        Ok(())
    }
}

impl Memories for Remote {
    fn remember(&self, m: NewMemory) -> Result<Memory> {
        Ok(self.0.create(&m)?)
    }

    fn get(&self, target: &str, ns: &str, user: Option<&str>) -> Result<Option<Memory>> {
        if MemoryId::parse(target).is_ok()
            && let Some(m) = self.0.get_for(target, user)?
        {
            return Ok(Some(m));
        }
        Key::new(target)?;
        match self.0.kv_get(ns, target)? {
            Some(e) => Ok(self.0.get_for(&e.id, user)?),
            None => Ok(None),
        }
    }

    fn forget(&self, target: &str, ns: &str, user: Option<&str>) -> Result<bool> {
        if MemoryId::parse(target).is_ok() && self.0.delete_for(target, user)? {
            return Ok(true);
        }
        Key::new(target)?;
        Ok(self.0.kv_forget(ns, target)?)
    }

    fn forget_owner(&self, p: ForgetParams) -> Result<u64> {
        Ok(self.0.delete_owner(&p)?)
    }

    fn list(&self, p: ListParams) -> Result<MemoryPage> {
        Ok(self.0.list(&p)?)
    }

    fn update(&self, id: &str, patch: MemoryPatch) -> Result<Memory> {
        Self::id(id)?;
        Ok(self.0.update(id, &patch)?)
    }

    fn recall(&self, q: RecallQuery) -> Result<RecallResult> {
        Ok(self.0.recall(&q)?)
    }

    fn similar(&self, id: &str, p: SimilarParams) -> Result<RecallResult> {
        Self::id(id)?;
        Ok(self.0.similar(id, &p)?)
    }

    fn stats(&self, p: StatsParams) -> Result<Stats> {
        Ok(self.0.stats_of(&p)?)
    }

    fn kv_get(&self, ns: &str, key: &str) -> Result<Option<KvEntry>> {
        Ok(self.0.kv_get(ns, key)?)
    }

    fn kv_set(&self, ns: &str, key: &str, v: KvValue) -> Result<KvEntry> {
        Ok(self.0.kv_set(ns, key, v.value, v.ttl_seconds)?)
    }

    fn kv_forget(&self, ns: &str, key: &str) -> Result<bool> {
        Ok(self.0.kv_forget(ns, key)?)
    }

    fn kv_all(&self, ns: &str) -> Result<KvEntries> {
        Ok(self.0.kv_all(ns)?)
    }

    fn kv_flush(&self, ns: &str) -> Result<u64> {
        Ok(self.0.kv_flush(ns)?)
    }

    fn purge(&self) -> Result<u64> {
        Ok(self.0.purge()?.purged)
    }

    fn end_conversation(&self, id: &str) -> Result<u64> {
        Ok(self.0.end_conversation(id)?.deleted)
    }

    fn proposals(&self, user_id: &str) -> Result<Proposals> {
        Ok(self.0.proposals(user_id)?)
    }

    fn conversations(&self, user_id: Option<&str>) -> Result<Conversations> {
        Ok(self.0.conversations(user_id)?)
    }

    fn conversation(&self, id: &str) -> Result<ConversationDetail> {
        Ok(self.0.conversation(id)?)
    }

    fn delete_conversation(&self, id: &str) -> Result<u64> {
        Ok(self.0.delete_conversation(id)?.deleted)
    }

    fn confirm(&self, id: &str, user_id: &str) -> Result<Memory> {
        Ok(self.0.confirm(id, user_id)?)
    }

    fn reject(&self, id: &str, user_id: &str) -> Result<Proposal> {
        Ok(self.0.reject(id, user_id)?)
    }

    fn history(&self, id: &str, user: Option<&str>) -> Result<History> {
        Self::id(id)?;
        Ok(self.0.history(id, user)?)
    }

    fn accesses(&self, id: &str, user: Option<&str>) -> Result<MemoryAccesses> {
        Self::id(id)?;
        Ok(self.0.accesses(id, user)?)
    }

    fn graph_entities(&self, p: GraphEntityParams) -> Result<GraphEntities> {
        Ok(self.0.graph_entities(&p)?)
    }

    fn graph_relations(&self, p: GraphRelationParams) -> Result<GraphRelations> {
        Ok(self.0.graph_relations(&p)?)
    }

    fn graph_merge(&self, m: GraphMerge) -> Result<GraphEntity> {
        Ok(self.0.graph_merge(&m)?)
    }

    fn extract(
        &self,
        req: muisti_client::ExtractRequest,
    ) -> Result<muisti_client::ExtractResponse> {
        // The same checks as the server, before the request goes.
        ops::add_request(req.clone())?;
        Ok(self.0.extract_memories(&req)?)
    }

    fn maintenance(&self, req: MaintenanceRequest) -> Result<MaintenanceReport> {
        // A job on the server, polled: the same progress bar as a run here.
        let mut bar = crate::progress_bar("maintaining users");
        let job = crate::remote::wait_for(&self.0, self.0.start_maintenance(&req)?, &mut bar)?;
        crate::progress_done();
        match (job.report, job.state.as_str()) {
            (Some(report), "done") => Ok(report),
            _ => Err(muisti_client::ClientError::Api {
                status: job.error_status.unwrap_or(500),
                code: job.error_code.unwrap_or_else(|| "internal".into()),
                message: job.error.unwrap_or_else(|| "the run failed".into()),
            }
            .into()),
        }
    }

    fn restore(&self, id: &str) -> Result<Memory> {
        Self::id(id)?;
        Ok(self.0.restore(id)?)
    }

    fn clusters(&self, p: ClusterParams) -> Result<Clusters> {
        Ok(self.0.clusters(&p)?)
    }

    fn cluster_memories(&self, cluster: u32, p: ClusterParams) -> Result<MemoryPage> {
        Ok(self.0.cluster_memories(cluster, &p)?)
    }
}
