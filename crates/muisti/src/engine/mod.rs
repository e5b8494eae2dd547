//! The engine: one API over any store, with events and tracing. The memory API is here;
//! the key-value face, vectors and indexing, and recall are in the submodules.

mod builder;
mod erase;
mod index;
mod kv;
mod learn;
mod order;
mod scopes;
mod search;
pub mod snapshot;
mod supersede;

pub(crate) use crate::core::{Change, Core, Follower, embed_err, own_namespace};
pub use crate::core::{Lifetimes, Maintained, SYSTEM_TENANT};
pub use builder::{EngineBuilder, OnModelMismatch};
pub use kv::{Kv, in_key_space};
pub use order::{ListOrder, OrderedPage};

use std::{collections::BTreeMap, sync::Arc};

use muisti_core::{
    Error, ErrorKind, Event, Filter, Key, ListQuery, Locator, Memory, MemoryId, MemoryScope,
    MemoryState, Namespace, Observer, Page, Partition, Put, Result, SearchMode, Store, StoreInfo,
    StoredVector, Tenant, Ttl, UpdateRequest, WriteStatus, Written, list_all,
};
use muisti_embed::Embedder;
use serde::Serialize;
use serde_json::Value;
use tracing::info_span;

use crate::recall::{self, RecallHit, RecallMode, RecallRequest};

/// What [`Engine::reindex`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReindexReport {
    /// Memories looked at.
    pub scanned: u64,
    /// Memories given a new vector.
    pub reembedded: u64,
}

impl Engine {
    /// The partition of one of the engine's own namespaces ([`own_namespace`]) in its tenant.
    pub(crate) fn own_partition(&self, name: &'static str) -> Partition {
        self.core.own_partition(name)
    }

    /// The memory with `id` as a request acting for `user` sees it
    /// ([`visible_to`](crate::declarative::visible_to)): the read every face of the API makes
    /// by id, so a declarative entry is found only by its own user.
    pub fn get_for(&self, id: MemoryId, user: Option<&str>) -> Result<Option<Memory>> {
        Ok(self
            .get_by_id(id)?
            .filter(|m| crate::declarative::visible_to(user, m)))
    }

    /// A caller's read of the memory with `id` as `user` sees it ([`Engine::get_for`]),
    /// which counts an access on it as a recall does (`Engine::count_access`): the read by
    /// id of every face of the API (REST, MCP, the command line). The engine's own reads
    /// ([`Engine::get`]) count nothing.
    pub fn read_for(&self, id: MemoryId, user: Option<&str>) -> Result<Option<Memory>> {
        let found = self.get_for(id, user)?;
        if let Some(m) = &found {
            let reach = crate::access::Reach {
                kind: crate::access::AccessKind::Read,
                query: None,
                user,
            };
            self.count_access([(m, None)], reach, self.core.clock.now());
        }
        Ok(found)
    }

    /// Counts an access at `at` on each of `reached` (a memory twice counts twice), unless
    /// the recall config turns access tracking off, and with the access log on logs each
    /// (with its score): written in the background, off the caller's path (see
    /// [`Engine::flush_access`]). The one rule for what a recall or a read by id counts.
    pub(crate) fn count_access<'m>(
        &self,
        reached: impl IntoIterator<Item = (&'m Memory, Option<f32>)>,
        reach: crate::access::Reach<'_>,
        at: muisti_core::Timestamp,
    ) {
        if !self.core.recall.track_access {
            return;
        }
        let config = *self.core.access.config();
        let mut ids = Vec::new();
        let mut log = Vec::new();
        for (m, score) in reached {
            ids.push(m.id);
            if config.is_on() {
                log.push(reach.logged(&config, m, score, at));
            }
        }
        if !ids.is_empty() {
            self.core.access.record(&self.core.tenant, ids, log, at);
        }
    }

    /// The accesses the log holds of the memory with `id`, within the log's retention;
    /// empty unless the log is (or was) on (see [`AccessLog`](crate::AccessLog)). Acting for
    /// `user`, only of their own memories and of those with no user (`None` for another
    /// user's: the accesses of a memory carry its user's queries).
    pub fn accesses(
        &self,
        id: MemoryId,
        user: Option<&str>,
    ) -> Result<Option<crate::access::MemoryAccesses>> {
        let theirs = |m: &Memory| {
            user.is_none() || m.owner.user_id.is_none() || m.owner.user_id.as_deref() == user
        };
        if !self.get_for(id, user)?.is_some_and(|m| theirs(&m)) {
            return Ok(None);
        }
        crate::access::accesses_of(&self.core, id).map(Some)
    }

    /// The history of a memory, oldest first (also after it was deleted, for
    /// [`DELETED_HISTORY_RETENTION`](crate::declarative::DELETED_HISTORY_RETENTION)): its
    /// add, then every update, supersede, confirmation and delete, whoever made them; empty
    /// for an id that never was a memory (or whose history has run out).
    pub fn history(&self, id: MemoryId) -> Result<Vec<crate::declarative::HistoryEntry>> {
        let filter = Filter {
            metadata: [("memory_id".to_owned(), serde_json::json!(id.to_string()))]
                .into_iter()
                .collect(),
            ..Filter::default()
        };
        let partition = self
            .core
            .own_partition(crate::declarative::HISTORY_NAMESPACE);
        let mut records = list_all(self.core.store.as_ref(), &partition, &filter)?;
        records.sort_by(|a, b| a.key.cmp(&b.key));
        let mut entries = records
            .into_iter()
            .map(|r| crate::records::HISTORY.decode(&r))
            .collect::<Result<Vec<_>>>()?;
        // A plain memory's add is its record's first version, not a record of the history:
        // it is read from the memory (its text then, the first change's old text).
        let begun = entries.first().is_some_and(|e| e.event.begins());
        if !begun && let Some(m) = self.get_by_id(id)? {
            let text = match entries.first() {
                Some(first) => first.old.clone(),
                None => Some(m.text().into_owned()),
            };
            entries.insert(0, crate::declarative::first_entry(&m, text));
        }
        Ok(entries)
    }

    /// The archive (none: archiving and reading archived text are refused).
    pub fn archive(&self) -> Option<&Arc<crate::lifecycle::archive::Archive>> {
        self.archive.as_ref()
    }

    /// The lifecycle of memories: the maintenance jobs, archived memories read back and
    /// restored, and each user's topics.
    pub fn lifecycle(&self) -> crate::lifecycle::Lifecycle<'_> {
        crate::lifecycle::Lifecycle {
            core: &self.core,
            archive: self.archive.as_deref(),
        }
    }

    /// Extracts every queued memory, oldest first (with an interval, a conversation's
    /// memories together, however few); an item is removed once its facts are written (or
    /// its memory is gone), and kept with one more attempt when it fails. Returns how many
    /// were done.
    pub fn drain_graph_queue(&self) -> Result<u64> {
        self.graph().drain(true, self.archive.as_deref())
    }

    /// Moving memory between stores: exports, and imports gated by the declarative rules.
    pub fn transfer(&self) -> crate::transfer::Transfer<'_> {
        crate::transfer::Transfer {
            core: &self.core,
            judge: self.conflict_judge.as_ref(),
        }
    }

    /// Reports over a namespace's memories: aggregates, and how alike memories are.
    pub fn insights(&self) -> crate::analytics::Insights<'_> {
        crate::analytics::Insights { core: &self.core }
    }

    /// Declarative memory: a user's permanent entries, always in their prompt, and the
    /// confirmation gate for what an agent learned.
    pub fn declarative(&self) -> crate::declarative::Declarative<'_> {
        crate::declarative::Declarative {
            core: &self.core,
            judge: self.conflict_judge.as_ref(),
        }
    }

    /// Conversations: their messages in order, and a header each.
    pub fn conversations(&self) -> crate::conversation::Conversations<'_> {
        crate::conversation::Conversations { core: &self.core }
    }

    /// The knowledge graph of this engine's tenant.
    pub fn graph(&self) -> crate::graph::Graph<'_> {
        crate::graph::Graph {
            core: &self.core,
            state: &self.graph_state,
        }
    }
}

/// Memory for agents over one store, confined to one tenant. Cheap to clone.
#[derive(Clone)]
pub struct Engine {
    /// What every part shares.
    core: Core,
    /// Decides declarative conflicts the detector finds candidates for (none: the
    /// detector's verdict).
    conflict_judge: Option<Arc<dyn crate::declarative::ConflictJudge>>,
    /// Reads facts from conversations (none: the offline extractor).
    fact_extractor: Option<Arc<dyn crate::facts::FactExtractor>>,
    /// The graph's own state ([`Engine::graph`]).
    graph_state: crate::graph::GraphState,
    /// Where cold memories are archived (none: archiving is refused).
    archive: Option<Arc<crate::lifecycle::archive::Archive>>,
}

/// How much a namespace holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamespaceStats {
    /// The namespace.
    pub namespace: Namespace,
    /// Live records in it.
    pub count: u64,
}

/// What [`Engine::stats`] reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// The store.
    pub store: StoreInfo,
    /// Whether it answered its health check.
    pub healthy: bool,
    /// The tenant the engine is confined to.
    pub tenant: Tenant,
    /// Per namespace of memories.
    pub namespaces: Vec<NamespaceStats>,
    /// The records of those namespaces.
    pub total: u64,
    /// Namespaces of applications' own state ([`muisti_core::STATE_PREFIX`]), not memories.
    pub state_namespaces: u64,
    /// The records in them.
    pub state_records: u64,
}

impl Engine {
    /// An engine over the store a URL names, in the default tenant, with the store's default
    /// archive ([`crate::default_archive_url`]).
    pub fn open(url: &str) -> Result<Self> {
        Self::builder(crate::open_store(url)?)
            .archive(crate::open_archive(url, None)?)
            .build()
    }

    /// The same engine with `judge` deciding which entry a declarative write replaces,
    /// among the candidates the offline detector finds (its verdict stands whenever the
    /// judge fails).
    pub fn with_conflict_judge(&self, judge: Arc<dyn crate::declarative::ConflictJudge>) -> Self {
        Self {
            conflict_judge: Some(judge),
            ..self.clone()
        }
    }

    /// The same engine acting as `actor` (for example the memory manager's command): every
    /// write, update and delete it makes, of any memory, is recorded in that memory's
    /// history ([`Engine::history`]) with `actor` as who made it.
    pub fn with_actor(&self, actor: impl Into<String>) -> Self {
        let mut e = self.clone();
        e.core.actor = Some(actor.into());
        e
    }

    /// The same engine confined to another tenant.
    pub fn with_tenant(&self, tenant: Tenant) -> Self {
        let mut e = self.clone();
        e.core = self.core.with_tenant(tenant);
        e
    }

    /// The same engine with one more observer (for example an agent's), which is told of
    /// every event of this engine and its clones made after this call.
    pub fn with_observer(&self, observer: Arc<dyn Observer>) -> Self {
        let mut observers: Vec<Arc<dyn Observer>> = self.core.observers.iter().cloned().collect();
        observers.push(observer);
        let mut e = self.clone();
        e.core.observers = observers.into();
        e
    }

    /// The same engine over `wrap(store)`: same tenant, embedder, recall settings and
    /// observers. Used to put a wrapper such as the privacy store in front of the store.
    pub fn map_store(&self, wrap: impl FnOnce(Arc<dyn Store>) -> Arc<dyn Store>) -> Self {
        let store = wrap(Arc::clone(&self.core.store));
        let mut e = self.clone();
        e.core.native_text = store.info().capabilities.native_text;
        e.core.store = store;
        e
    }

    /// Tells this engine's observers of an event that happened outside the engine (an
    /// agent reports `memory.recalled` this way).
    pub fn notify(&self, event: Event) {
        self.emit(event);
    }

    /// The store underneath.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.core.store
    }

    /// The tenant this engine is confined to.
    pub fn tenant(&self) -> &Tenant {
        &self.core.tenant
    }

    /// The partition of `namespace` in this engine's tenant.
    pub fn partition(&self, namespace: &Namespace) -> Partition {
        self.core.partition(namespace)
    }

    pub(crate) fn emit(&self, event: Event) {
        self.core.emit(event);
    }

    // ---- key-value contract ----

    // ---- memory contract ----

    /// Writes a memory (the put's tenant is replaced by the engine's).
    pub fn remember(&self, put: Put) -> Result<Written> {
        self.remember_replacing(put).map(|(w, _)| w)
    }

    /// [`Engine::remember`], with the memories the write marked superseded
    /// (the supersede rule of this module's `supersede`): what a newer fact replaced.
    pub(crate) fn remember_replacing(&self, mut put: Put) -> Result<(Written, Vec<Memory>)> {
        put.partition.tenant = self.core.tenant.clone();
        self.core.scope_put(&mut put)?;
        if put.scope == MemoryScope::Declarative {
            return self
                .declarative()
                .declare(put)
                .map(|d| (crate::declarative::written(d), Vec::new()));
        }
        self.check_key_free(&put)?;
        if let Some(existing) = self.duplicate_of(&put)? {
            return Ok((self.merge_duplicate(&put, existing)?, Vec::new()));
        }
        let before = self.records_before(std::slice::from_ref(&put))?;
        let w = self.core.put_embedded(put)?;
        let before = before.into_iter().next().flatten();
        self.core.after_write(&[Change::written(&w, before)])?;
        let mut written = [w];
        let replaced = self.mark_superseded(&mut written)?;
        let [w] = written;
        Ok((w, replaced))
    }

    /// The records at the keys of `puts` before they are written: a replace's history
    /// keeps what it replaced (a keyless write replaces nothing, and nothing is read).
    fn records_before(&self, puts: &[Put]) -> Result<Vec<Option<Memory>>> {
        puts.iter()
            .map(|p| match &p.key {
                Some(key) => self.core.store.get(&Locator::Key {
                    partition: p.partition.clone(),
                    key: key.clone(),
                }),
                None => Ok(None),
            })
            .collect()
    }

    /// A keyless write whose content this owner already has: the existing record counts an
    /// access, and what the write brought that it lacks ([`Put::merge_patch`]) is merged into
    /// it atomically (retried if another writer changed it meanwhile).
    fn merge_duplicate(&self, put: &Put, mut existing: Memory) -> Result<Written> {
        self.core
            .store
            .touch(&self.core.tenant, &[existing.id], self.core.clock.now())?;
        let mut status = WriteStatus::Deduplicated;
        let mut attempts = 0;
        while let Some(patch) = put.merge_patch(&existing) {
            let at = Locator::Id {
                tenant: self.core.tenant.clone(),
                id: existing.id,
            };
            match self
                .update(UpdateRequest::new(at.clone(), patch).expecting(Some(existing.version)))
            {
                Ok(m) => {
                    existing = m;
                    status = WriteStatus::Merged;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Conflict && attempts < 8 => {
                    attempts += 1;
                    match self.core.store.get(&at)? {
                        Some(m) => existing = m,
                        None => break,
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let w = Written {
            memory: existing,
            status,
        };
        self.core.after_write(&[Change::written(&w, None)])?;
        Ok(w)
    }

    /// Changes fields of one memory atomically, the only way a stored memory is updated
    /// (REST `PATCH`, the MCP `update` tool and the CLI all come here). The locator's
    /// tenant is replaced by the engine's.
    ///
    /// When the text changes and the engine has an embedder, the new text is embedded and
    /// the update is made conditional on the version that text was read from; if another
    /// writer got in between (and the caller set no `expected_version`), it is read and
    /// embedded again. With `expected_version`, a stale version is
    /// [`Error::Conflict`]; an absent memory is [`Error::NotFound`].
    ///
    /// A declarative entry stays declarative and with its user; an edit makes it
    /// user-stated with no confidence (the seed's rule) and is kept in its history.
    pub fn update(&self, mut req: UpdateRequest) -> Result<Memory> {
        req.at = self.core.confine(&req.at);
        req.validate()?;
        let Some(mut current) = self.reachable(&req.at, self.core.store.get(&req.at)?) else {
            return Err(Error::NotFound(req.at.describe()));
        };
        // Addressed by id from here, so the checks above hold for the record changed.
        req.at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: current.id,
        };
        // An archived memory comes back before it changes (the version it was read at
        // stands for the restored one).
        if crate::lifecycle::archive::is_archived(&current) {
            if req.expected_version.is_some_and(|v| v != current.version) {
                return Err(Error::Conflict(format!(
                    "{} is at version {}",
                    req.at.describe(),
                    current.version
                )));
            }
            let archived_at = current.version;
            current = self.lifecycle().restore(current.id)?;
            if req.expected_version == Some(archived_at) {
                req.expected_version = Some(current.version);
            }
        }
        let declarative = current.scope == MemoryScope::Declarative;
        if declarative != (req.patch.scope.unwrap_or(current.scope) == MemoryScope::Declarative) {
            return Err(Error::conflicting(
                "scope",
                "a memory enters the declarative scope by a declarative write and leaves it \
                 by a delete, not by an update",
            ));
        }
        let scope = req.patch.scope.unwrap_or(current.scope);
        let session = match &req.patch.session_id {
            Some(s) => s.as_ref(),
            None => current.owner.session_id.as_ref(),
        };
        if matches!(scope, MemoryScope::Scratch | MemoryScope::ShortTerm) && session.is_none() {
            return Err(Error::conflicting(
                "session_id",
                format!("a {scope} memory belongs to a conversation: it keeps a session_id"),
            ));
        }
        if declarative {
            Self::declarative_update(&current, &mut req)?;
        }
        let m = self.core.update_unchecked(req)?;
        self.core.after_write(&[Change::updated(&m, current)])?;
        Ok(m)
    }

    /// The rules of an update of declarative entry `current`: it stays with its user and
    /// takes no TTL, a new type must be one of the declarative ones, and an edit makes it
    /// user-stated with no confidence, conditional on the version read.
    fn declarative_update(current: &Memory, req: &mut UpdateRequest) -> Result<()> {
        if req
            .patch
            .user_id
            .as_ref()
            .is_some_and(|u| u != &current.owner.user_id)
        {
            return Err(Error::conflicting(
                "user_id",
                "a declarative entry stays with its user",
            ));
        }
        if req.patch.ttl.as_ref().is_some_and(Option::is_some) {
            return Err(Error::conflicting(
                "ttl",
                "declarative memories are permanent: they take no TTL",
            ));
        }
        if let Some(kind) = &req.patch.category {
            let mut probe = Put::new(current.partition.clone(), None, current.content.clone());
            probe.category = kind.clone();
            crate::declarative::check(&probe)?;
        }
        req.patch.source = Some(muisti_core::Source::UserStated);
        req.patch.confidence = Some(None);
        req.expected_version = Some(req.expected_version.unwrap_or(current.version));
        Ok(())
    }

    /// Writes many memories in one batch (one transaction where the store has them).
    pub fn remember_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        let puts: Vec<Put> = puts
            .into_iter()
            .map(|mut p| {
                p.partition.tenant = self.core.tenant.clone();
                self.core.scope_put(&mut p)?;
                if p.scope == MemoryScope::Declarative {
                    return Err(Error::conflicting(
                        "scope",
                        "declarative entries are written one at a time (each is judged against \
                         the user's entries), not in a batch",
                    ));
                }
                self.check_key_free(&p)?;
                Ok(p)
            })
            .collect::<Result<_>>()?;
        let before = self.records_before(&puts)?;
        let mut written = self.core.put_many_embedded(puts)?;
        let changes: Vec<Change<'_>> = written
            .iter()
            .zip(before)
            .map(|(w, before)| Change::written(w, before))
            .collect();
        self.core.after_write(&changes)?;
        self.mark_superseded(&mut written)?;
        Ok(written)
    }

    /// What a read at `at` found, as the locator may reach it: by key, only a record in the
    /// key space ([`in_key_space`]); by id, any record of the tenant.
    fn reachable(&self, at: &Locator, found: Option<Memory>) -> Option<Memory> {
        match at {
            Locator::Key { .. } => found.filter(in_key_space),
            Locator::Id { .. } => found,
        }
    }

    /// The memory a locator addresses (its tenant is replaced by the engine's).
    pub fn get(&self, at: &Locator) -> Result<Option<Memory>> {
        let at = self.core.confine(at);
        let _span = info_span!("memory.read").entered();
        let found = match self.reachable(&at, self.core.store.get(&at)?) {
            Some(m) => Some(self.lifecycle().hydrate(m)?),
            None => None,
        };
        let (partition, key) = match (&at, &found) {
            (_, Some(m)) => (Some(m.partition.clone()), Some(m.key.clone())),
            (Locator::Key { partition, key }, None) => (Some(partition.clone()), Some(key.clone())),
            (Locator::Id { .. }, None) => (None, None),
        };
        self.emit(Event::Read {
            partition,
            key,
            found: found.is_some(),
        });
        Ok(found)
    }

    /// The memory with `id`.
    pub fn get_by_id(&self, id: MemoryId) -> Result<Option<Memory>> {
        self.get(&Locator::Id {
            tenant: self.core.tenant.clone(),
            id,
        })
    }

    /// One page of a namespace's memories (the query's tenant is replaced by the engine's);
    /// archived ones with their text, read back from the archive.
    pub fn list(&self, mut query: ListQuery) -> Result<Page> {
        query.partition.tenant = self.core.tenant.clone();
        crate::declarative::check_read(&query.filter)?;
        let _span = info_span!("memory.list", namespace = %query.partition.namespace).entered();
        let mut page = self.core.store.list(&query)?;
        page.items
            .retain(|m| crate::declarative::readable(&query.filter, m));
        // Archived memories with their text, read back from their objects.
        page.items = self
            .lifecycle()
            .hydrate_many(std::mem::take(&mut page.items))?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        Ok(page)
    }

    /// One page of a namespace's memories in `state` (see [`Engine::list`]): the store is
    /// read page by page until `query`'s page size of them are found or the namespace ends,
    /// so a page is short only at the end, and its `next` is the last one returned.
    pub fn list_in_state(&self, mut query: ListQuery, state: MemoryState) -> Result<Page> {
        query.partition.tenant = self.core.tenant.clone();
        crate::declarative::check_read(&query.filter)?;
        let _span = info_span!("memory.list", namespace = %query.partition.namespace).entered();
        let want = query.page_size();
        let mut kept = Vec::with_capacity(want);
        let mut scan = ListQuery {
            limit: 0,
            ..query.clone()
        };
        let next = loop {
            let page = self.core.store.list(&scan)?;
            let room = want - kept.len();
            kept.extend(
                page.items
                    .into_iter()
                    .filter(|m| m.state == state && crate::declarative::readable(&query.filter, m))
                    .take(room),
            );
            if kept.len() == want {
                break kept.last().map(|m| m.id);
            }
            match page.next {
                Some(n) => scan.after = Some(n),
                None => break None,
            }
        };
        let items = self
            .lifecycle()
            .hydrate_many(kept)?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        Ok(Page { items, next })
    }

    /// Deletes the addressed memory; `true` if it existed.
    pub fn forget(&self, at: &Locator) -> Result<bool> {
        let at = self.core.confine(at);
        let _span = info_span!("memory.forget").entered();
        let Some(target) = self.reachable(&at, self.core.store.get(&at)?) else {
            return Ok(false);
        };
        self.core.forget_record(target)
    }

    /// Deletes every memory of a namespace that matches `filter` (for example all of one
    /// user's), each through [`Store::delete`] so every derived copy goes with it; returns how
    /// many. A filter that names no owner (user, agent or session) is refused: emptying a
    /// namespace is [`Store::flush`]'s job, not a filter's accident.
    pub fn forget_where(&self, namespace: &Namespace, filter: &Filter) -> Result<u64> {
        if filter.user_id.is_none() && filter.agent_id.is_none() && filter.session_id.is_none() {
            return Err(Error::invalid(
                "filter",
                "name the user_id, agent_id or session_id whose memories to delete",
            ));
        }
        let _span = info_span!("memory.forget_where", namespace = %namespace).entered();
        let deleted = self.core.delete_matching(namespace, filter)?;
        // Who the user's (or the conversation's) last-named person was goes too.
        if filter.user_id.is_some() || filter.session_id.is_some() {
            let focus = Filter {
                user_id: filter.user_id.clone(),
                session_id: filter.session_id.clone(),
                ..Filter::default()
            };
            self.core
                .delete_matching(&own_namespace(crate::graph::FOCUS_NAMESPACE), &focus)?;
        }
        // And their topics of this namespace.
        if let Some(user) = &filter.user_id
            && filter.agent_id.is_none()
            && filter.session_id.is_none()
        {
            self.lifecycle().forget_clustering(namespace, user)?;
        }
        // A user's data goes with their declarative entries' history and proposals, and
        // the access log's records of their memories.
        if let Some(user) = &filter.user_id
            && filter.agent_id.is_none()
            && filter.session_id.is_none()
        {
            self.declarative().forget_declarative_of(namespace, user)?;
            crate::access::forget_user(&self.core, namespace, user)?;
        }
        // A delete-all leaves the store's files at once, not within seconds.
        self.core.store.erase_deleted()?;
        Ok(deleted)
    }

    /// How many memories of a namespace match `filter`.
    pub fn count(&self, namespace: &Namespace, filter: &Filter) -> Result<u64> {
        self.core.store.count(&self.partition(namespace), filter)
    }

    /// Deletes expired memories now.
    pub fn purge_expired(&self) -> Result<u64> {
        self.core.store.purge_expired()
    }

    /// Per-namespace counts of memories (not the engine's own records: histories, proposals,
    /// the graph; applications' state namespaces in sum), the store and its health.
    pub fn stats(&self) -> Result<Stats> {
        let health = self.core.store.health_check();
        if !health.ok {
            return Err(Error::Unavailable {
                target: self.core.store.info().location,
                reason: health.detail,
            });
        }
        let mut namespaces = Vec::new();
        let (mut total, mut state_namespaces, mut state_records) = (0, 0, 0);
        for ns in self.core.store.namespaces(&self.core.tenant)? {
            // The engine's own records (histories, proposals, the graph) are not memories.
            if ns.is_reserved() {
                continue;
            }
            let count = self.count(&ns, &Filter::default())?;
            // Nor are an application's (a framework's checkpoints): counted apart, in sum.
            if ns.is_state() {
                state_namespaces += 1;
                state_records += count;
                continue;
            }
            total += count;
            namespaces.push(NamespaceStats {
                namespace: ns,
                count,
            });
        }
        Ok(Stats {
            store: self.core.store.info(),
            healthy: health.ok,
            tenant: self.core.tenant.clone(),
            namespaces,
            total,
            state_namespaces,
            state_records,
        })
    }
}
