//! The operations of the API over a tenant-confined [`Engine`], shared by the REST handlers
//! and the MCP tools: wire types in, wire types out, engine errors unchanged.

use muisti::{
    Category, Engine, Error, Filter, Key, ListQuery, Locator, Memory, MemoryId, MemoryScope,
    MemoryState, Namespace, Owner, Patch, Put, RecallMode, RecallRequest, Result, Source,
    Timestamp, Ttl, UpdateRequest,
};
use muisti_client::api;
use serde_json::Value;

/// Runs store work on tokio's blocking pool (the engine is synchronous) inside the current
/// tracing span, so what it logs carries the request's id.
pub async fn blocking<T, F>(f: F) -> std::result::Result<T, tokio::task::JoinError>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let span = tracing::Span::current();
    tokio::task::spawn_blocking(move || span.in_scope(f)).await
}

/// Most hits a recall returns.
pub const MAX_RECALL: usize = 1000;
/// Most memories in one batch.
pub const MAX_BATCH: usize = 1000;
/// Default page size of a list.
pub const DEFAULT_PAGE: usize = 100;
/// Largest page of a list.
pub const MAX_PAGE: usize = 1000;

/// The API form of a stored record.
pub fn memory_out(m: &muisti::Memory) -> api::Memory {
    api::Memory {
        id: m.id.to_string(),
        namespace: m.partition.namespace.to_string(),
        key: m.key.to_string(),
        content: m.content.clone(),
        context: m.context.clone(),
        category: m.category.to_string(),
        scope: m.scope.to_string(),
        kind: (m.scope == MemoryScope::Declarative).then(|| m.category.to_string()),
        user_id: m.owner.user_id.clone(),
        agent_id: m.owner.agent_id.clone(),
        session_id: m.owner.session_id.clone(),
        tags: m.tags.clone(),
        metadata: m.metadata.clone(),
        importance: m.importance,
        source: m.source.to_string(),
        confidence: m.confidence,
        state: m.state.to_string(),
        valid_from: m.valid_from.map(|t| t.to_string()),
        valid_until: m.valid_until.map(|t| t.to_string()),
        created_at: m.created_at.to_string(),
        updated_at: m.updated_at.to_string(),
        last_accessed_at: m.last_accessed_at.map(|t| t.to_string()),
        access_count: m.access_count,
        expires_at: m.expires_at.map(|t| t.to_string()),
        superseded_by: m.superseded_by.map(|id| id.to_string()),
        version: m.version,
    }
}

/// A namespace name, `default` when absent.
pub fn namespace(name: Option<&str>) -> Result<Namespace> {
    match name {
        None => Ok(Namespace::default_ns()),
        Some(n) if muisti::is_reserved(n) => Err(Error::invalid(
            "namespace",
            format!("{n:?} is reserved for muisti's own records"),
        )),
        Some(n) => Namespace::new(n),
    }
}

/// A memory id from a path or argument: not a ULID is invalid input.
pub fn memory_id(s: &str) -> Result<MemoryId> {
    memory_id_of("id", s)
}

/// A memory id given in `field`.
fn memory_id_of(field: &'static str, s: &str) -> Result<MemoryId> {
    MemoryId::parse(s).map_err(|_| Error::invalid(field, "must be a ULID (26 characters)"))
}

fn timestamp(field: &'static str, s: Option<&str>) -> Result<Option<Timestamp>> {
    s.map(|s| {
        Timestamp::parse(s).map_err(|_| Error::invalid(field, "must be an RFC 3339 timestamp"))
    })
    .transpose()
}

fn ttl(secs: Option<u64>) -> Result<Option<Ttl>> {
    secs.map(|s| Ttl::from_secs(s).map_err(|_| Error::invalid("ttl_seconds", "must be at least 1")))
        .transpose()
}

/// The write a [`api::NewMemory`] asks for (the engine sets the tenant).
pub fn new_put(m: api::NewMemory) -> Result<Put> {
    let partition = muisti::Partition::of(namespace(m.namespace.as_deref())?);
    let key = m.key.as_deref().map(Key::new).transpose()?;
    if let Value::String(s) = &m.content
        && s.trim().is_empty()
    {
        return Err(Error::invalid("content", "must not be empty"));
    }
    if m.content.is_null() {
        return Err(Error::invalid("content", "must not be null"));
    }
    let mut put = Put::new(partition, key, m.content).with_ttl(ttl(m.ttl_seconds)?);
    put.context = m.context;
    let typed = m.category.is_some() || m.kind.is_some();
    match (m.category, m.kind) {
        (Some(c), Some(t)) if c != t => {
            return Err(Error::conflicting(
                "type",
                "a declarative entry's type is its category: give one, or the same in both",
            ));
        }
        (Some(c), _) | (None, Some(c)) => put.category = Category::parse(&c)?,
        (None, None) => {}
    }
    if let Some(s) = m.scope {
        put.scope = MemoryScope::parse(&s)?;
    }
    // A declarative entry given no type is a fact (the default category is no type of one).
    if put.scope == MemoryScope::Declarative && !typed {
        put.category = Category::Fact;
    }
    if let Some(s) = m.source {
        put.source = Source::parse(&s)?;
    }
    put.owner = Owner {
        user_id: m.user_id,
        agent_id: m.agent_id,
        session_id: m.session_id,
    };
    put.tags = m.tags;
    put.metadata = m.metadata;
    put.importance = m.importance;
    put.confidence = m.confidence;
    put.valid_from = timestamp("valid_from", m.valid_from.as_deref())?;
    put.valid_until = timestamp("valid_until", m.valid_until.as_deref())?;
    Ok(put)
}

/// Stores one memory; returns the record and whether it was created. A declarative write
/// naming the entry it `supersedes` replaces that one ([`Engine::declare_superseding`]).
pub fn create(engine: &Engine, m: api::NewMemory) -> Result<(api::Memory, muisti::WriteStatus)> {
    let target = m
        .supersedes
        .as_deref()
        .map(|id| memory_id_of("supersedes", id))
        .transpose()?;
    let put = new_put(m)?;
    let w = match target {
        None => engine.remember(put)?,
        Some(_) if put.scope != MemoryScope::Declarative => {
            return Err(Error::conflicting(
                "supersedes",
                "names the entry a declarative write replaces: give it with scope declarative",
            ));
        }
        Some(id) => muisti::declarative::written(engine.declare_superseding(put, id)?),
    };
    Ok((memory_out(&w.memory), w.status))
}

/// Stores many memories in one transaction.
pub fn create_many(engine: &Engine, batch: api::NewMemories) -> Result<api::Memories> {
    if batch.memories.len() > MAX_BATCH {
        return Err(Error::invalid("memories", "at most 1000 per batch"));
    }
    if batch.memories.iter().any(|m| m.supersedes.is_some()) {
        return Err(Error::conflicting(
            "supersedes",
            "declarative entries are written one at a time, not in a batch",
        ));
    }
    let puts = batch
        .memories
        .into_iter()
        .map(new_put)
        .collect::<Result<Vec<_>>>()?;
    let written = engine.remember_many(puts)?;
    Ok(api::Memories {
        memories: written.iter().map(|w| memory_out(&w.memory)).collect(),
    })
}

/// The memory with `id` in the engine's tenant, as a request acting for `user` sees it (a
/// declarative entry only for its own user; for anyone else it is not found).
pub fn get(engine: &Engine, id: &str, user: Option<&str>) -> Result<api::Memory> {
    let id = memory_id(id)?;
    visible(engine, id, user).map(|m| memory_out(&m))
}

/// The memory with `id` as the request may see it (`NotFound` otherwise): the one check of
/// every route that names a memory by id. The acting user follows the owner-field rules.
fn visible(engine: &Engine, id: MemoryId, user: Option<&str>) -> Result<Memory> {
    visible_in(engine.get_by_id(id), id, user)
}

/// What a read found, as the acting user may see it (a declarative entry is its user's
/// only), else `NotFound`; the acting user follows the owner-field rules.
fn visible_in(found: Result<Option<Memory>>, id: MemoryId, user: Option<&str>) -> Result<Memory> {
    muisti::check_owner_field("user_id", &user.map(str::to_owned))?;
    found?
        .filter(|m| muisti::declarative::visible_to(user, m))
        .ok_or_else(|| Error::NotFound(format!("memory {id}")))
}

/// Applies a patch to the memory with `id` through [`Engine::update`] (atomic; with
/// `expected_version`, only if the memory is still at that version). Absent fields keep
/// their values; owner fields given move the memory to that user, agent or session. A
/// declarative entry stays with its user, so for one `user_id` names the acting user and
/// must be its user (otherwise it is not found).
pub fn update(engine: &Engine, id: &str, patch: api::MemoryPatch) -> Result<api::Memory> {
    let id = memory_id(id)?;
    let api::MemoryPatch {
        content,
        context,
        category,
        scope,
        tags,
        metadata,
        importance,
        confidence,
        ttl_seconds,
        valid_from,
        valid_until,
        user_id,
        agent_id,
        session_id,
        source,
        state,
        superseded_by,
        expected_version,
        actor,
    } = patch;
    if let Some(a) = &actor
        && !muisti::is_open_name(a)
    {
        return Err(Error::invalid(
            "actor",
            "an actor is 1-64 letters, digits and _ . : -",
        ));
    }
    if matches!(content, Some(Value::Null)) {
        return Err(Error::invalid("content", "must not be null"));
    }
    let acting = user_id.clone();
    let patch = Patch {
        content,
        context: context.map(Some),
        category: category.as_deref().map(Category::parse).transpose()?,
        scope: scope.as_deref().map(MemoryScope::parse).transpose()?,
        user_id: user_id.map(Some),
        agent_id: agent_id.map(Some),
        session_id: session_id.map(Some),
        tags,
        metadata,
        importance,
        source: source.as_deref().map(Source::parse).transpose()?,
        confidence: confidence.map(Some),
        state: state.as_deref().map(MemoryState::parse).transpose()?,
        superseded_by: superseded_by.as_deref().map(memory_id).transpose()?,
        valid_from: match valid_from {
            Some(v) => Some(timestamp("valid_from", Some(&v))?),
            None => None,
        },
        valid_until: match valid_until {
            Some(v) => Some(timestamp("valid_until", Some(&v))?),
            None => None,
        },
        ttl: match ttl_seconds {
            Some(s) => Some(ttl(Some(s))?),
            None => None,
        },
        embedding: None,
        // Access counts are the engine's to keep, not a client's to set.
        add_access: None,
    };
    // Scope and user of a declarative entry never change, so the check holds for the update.
    visible(engine, id, acting.as_deref())?;
    let at = Locator::Id {
        tenant: engine.tenant().clone(),
        id,
    };
    let request = UpdateRequest::new(at, patch).expecting(expected_version);
    let m = match actor {
        Some(actor) => engine.with_actor(actor).update(request)?,
        None => engine.update(request)?,
    };
    Ok(memory_out(&m))
}

/// Deletes the memory with `id` as a request acting for `user`; a missing one (or a
/// declarative entry of another user) is `NotFound`.
pub fn delete(engine: &Engine, id: &str, user: Option<&str>) -> Result<()> {
    let id = memory_id(id)?;
    let at = Locator::Id {
        tenant: engine.tenant().clone(),
        id,
    };
    // The record as stored (an archived memory's text is not read: deleting it works with
    // its archive out of reach, or its object gone).
    visible_in(engine.store().get(&at), id, user)?;
    if engine.forget(&at)? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("memory {id}")))
    }
}

/// The filter of the owner fields and [`api::Filters`].
pub fn filter(
    user_id: Option<String>,
    session_id: Option<String>,
    more: Option<api::Filters>,
) -> Result<Filter> {
    let more = more.unwrap_or_default();
    let filter = Filter {
        user_id,
        agent_id: more.agent_id,
        session_id,
        category: more.category.as_deref().map(Category::parse).transpose()?,
        scope: more.scope.as_deref().map(MemoryScope::parse).transpose()?,
        tags: more.tags,
        metadata: more.metadata,
        created_after: timestamp("created_after", more.created_after.as_deref())?,
        created_before: timestamp("created_before", more.created_before.as_deref())?,
        ..Filter::default()
    };
    filter.validate()?;
    Ok(filter)
}

/// A `limit` as given or `default`, refused outside 1 to `max` (every limit of the API).
fn limit(given: Option<usize>, default: usize, max: usize) -> Result<usize> {
    let limit = given.unwrap_or(default);
    if limit == 0 || limit > max {
        return Err(Error::invalid("limit", format!("must be 1 to {max}")));
    }
    Ok(limit)
}

/// A page cursor: the previous page's `next_cursor`.
fn cursor(given: Option<&str>) -> Result<Option<MemoryId>> {
    given
        .map(|c| MemoryId::parse(c).map_err(|_| Error::invalid("cursor", "not a cursor")))
        .transpose()
}

/// One page of memories.
pub fn list(engine: &Engine, p: api::ListParams) -> Result<api::MemoryPage> {
    let limit = limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let after = cursor(p.cursor.as_deref())?;
    let more = api::Filters {
        agent_id: p.agent_id,
        category: p.category,
        scope: p.scope,
        tags: p.tag,
        created_after: p.created_after,
        created_before: p.created_before,
        ..api::Filters::default()
    };
    let state = p.state.as_deref().map(MemoryState::parse).transpose()?;
    let query = ListQuery {
        filter: filter(p.user_id, p.session_id, Some(more))?,
        after,
        limit,
        ..ListQuery::all(engine.partition(&namespace(p.namespace.as_deref())?))
    };
    let page = match state {
        Some(state) => engine.list_in_state(query, state)?,
        None => engine.list(query)?,
    };
    Ok(api::MemoryPage {
        items: page.items.iter().map(memory_out).collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    })
}

/// A recall.
pub fn recall(engine: &Engine, q: api::RecallQuery) -> Result<api::RecallResult> {
    let limit = limit(q.limit, 10, MAX_RECALL)?;
    if let Some(s) = q.min_score
        && !(0.0..=1.0).contains(&s)
    {
        return Err(Error::invalid("min_score", "must be between 0 and 1"));
    }
    let mode = match q.mode.as_deref() {
        None => RecallMode::Hybrid,
        Some(m) => m.parse()?,
    };
    let mut req = RecallRequest::new(namespace(q.namespace.as_deref())?, q.query, limit);
    req.filter = filter(q.user_id, q.session_id, q.filters)?;
    req.min_score = q.min_score;
    req.mode = mode;
    req.include_archived = q.include_archived;
    req.cluster = q.cluster;
    Ok(hits_out(engine.recall(&req)?, q.explain))
}

/// Recall hits on the wire; the signals only when asked to explain.
fn hits_out(hits: Vec<muisti::RecallHit>, explain: bool) -> api::RecallResult {
    api::RecallResult {
        hits: hits
            .into_iter()
            .map(|h| api::RecallHit {
                memory: memory_out(&h.memory),
                score: h.score,
                signals: explain
                    .then(|| serde_json::to_value(&h.signals).ok())
                    .flatten(),
            })
            .collect(),
    }
}

/// The memories closest in meaning to the one with `id` (itself excluded), best first: the
/// acting user's when the request names one (the memory must be visible to them), else the
/// memory's own user's unless `all_users`.
pub fn similar(engine: &Engine, id: &str, p: api::SimilarParams) -> Result<api::RecallResult> {
    let id = memory_id(id)?;
    let limit = limit(p.limit, 5, MAX_RECALL)?;
    let namespace = p
        .namespace
        .as_deref()
        .map(|n| namespace(Some(n)))
        .transpose()?;
    let across_users = p.all_users.unwrap_or(false);
    if across_users && p.user_id.is_some() {
        return Err(Error::conflicting(
            "all_users",
            "similar memories are the user_id's, or every user's: not both",
        ));
    }
    visible(engine, id, p.user_id.as_deref())?;
    let filter = muisti::Filter {
        user_id: p.user_id,
        ..muisti::Filter::default()
    };
    Ok(hits_out(
        engine.find_similar(id, namespace.as_ref(), limit, filter, across_users)?,
        false,
    ))
}

/// Deletes every memory of one user in a namespace (only one agent's or session's, if given).
pub fn forget_owner(engine: &Engine, p: api::ForgetParams) -> Result<api::Deleted> {
    let more = api::Filters {
        agent_id: p.agent_id,
        ..api::Filters::default()
    };
    let filter = filter(Some(p.user_id), p.session_id, Some(more))?;
    let ns = namespace(p.namespace.as_deref())?;
    Ok(api::Deleted {
        deleted: engine.forget_where(&ns, &filter)?,
    })
}

fn conversation_out(c: muisti::conversation::ConversationInfo) -> api::ConversationSummary {
    api::ConversationSummary {
        id: c.id,
        user_id: c.user_id,
        messages: c.messages,
        created_at: c.created_at.to_string(),
        updated_at: c.updated_at.to_string(),
    }
}

/// The conversations (of a user), oldest first.
pub fn conversations(engine: &Engine, p: api::ConversationParams) -> Result<api::Conversations> {
    Ok(api::Conversations {
        conversations: engine
            .conversations(p.user_id.as_deref())?
            .into_iter()
            .map(conversation_out)
            .collect(),
    })
}

/// A conversation with its messages; an unknown id is not found.
pub fn conversation(engine: &Engine, id: &str) -> Result<api::ConversationDetail> {
    let info = engine
        .conversation_info(id)?
        .ok_or_else(|| Error::NotFound(format!("conversation {id}")))?;
    let items = engine
        .conversation_messages(id)?
        .into_iter()
        .map(message_out)
        .collect();
    Ok(api::ConversationDetail {
        summary: conversation_out(info),
        items,
    })
}

fn message_out(m: muisti::conversation::StoredMessage) -> api::ConversationMessage {
    api::ConversationMessage {
        seq: m.seq,
        role: m.message.role,
        content: m.message.content,
        name: m.message.name,
        extra: m.message.extra,
        created_at: m.created_at.to_string(),
    }
}

/// Appends messages to a conversation, made on first use. A conversation with a user keeps
/// it: another `user_id` conflicts, none means its own.
pub fn append_messages(
    engine: &Engine,
    id: &str,
    req: api::AppendMessages,
) -> Result<api::AppendedMessages> {
    let messages: Vec<muisti::conversation::NewMessage> = req
        .messages
        .into_iter()
        .map(|m| muisti::conversation::NewMessage {
            role: m.role,
            content: m.content,
            name: m.name,
            extra: m.extra,
        })
        .collect();
    muisti::conversation::check_new_messages(&messages)?;
    muisti::check_owner_field("user_id", &req.user_id)?;
    muisti::check_owner_field("agent_id", &req.agent_id)?;
    let mut user_id = req.user_id;
    if let Some(info) = engine.conversation_info(id)? {
        match (&user_id, info.user_id) {
            (Some(asked), Some(own)) if *asked != own => {
                return Err(Error::conflicting(
                    "user_id",
                    "the conversation is another user's",
                ));
            }
            (None, own) => user_id = own,
            _ => {}
        }
    }
    let owner = muisti::Owner {
        user_id,
        agent_id: req.agent_id,
        ..muisti::Owner::default()
    };
    let stored = engine.append_messages(id, &owner, messages)?;
    Ok(api::AppendedMessages {
        items: stored.into_iter().map(message_out).collect(),
    })
}

/// Deletes a conversation: its messages, its header, its scratch and short-term memories.
pub fn delete_conversation(engine: &Engine, id: &str) -> Result<api::Deleted> {
    Ok(api::Deleted {
        deleted: engine.delete_conversation(id)?,
    })
}

/// Ends a conversation: deletes its scratch and short-term memories in every namespace.
pub fn end_conversation(engine: &Engine, id: &str) -> Result<api::Deleted> {
    Ok(api::Deleted {
        deleted: engine.end_conversation(id)?,
    })
}

/// Runs the scopes' lifetimes now: expired records (every tenant's) and episodic memories
/// past the retention (the caller's tenant).
pub fn maintain(engine: &Engine) -> Result<api::Maintained> {
    let done = engine.maintain()?;
    Ok(api::Maintained {
        expired: done.expired,
        episodic: done.episodic,
    })
}

/// A maintenance run as the request asks: the one check of its fields on every face.
pub fn maintenance(
    engine: &Engine,
    req: api::MaintenanceRequest,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<api::MaintenanceReport> {
    let options = maintenance_options(req)?;
    Ok(report_out(
        &engine.run_maintenance_with(&options, progress)?,
    ))
}

/// The options a maintenance request asks for, checked (before a run starts, so a
/// background run fails only for what happens while it runs).
pub fn maintenance_options(
    req: api::MaintenanceRequest,
) -> Result<muisti::lifecycle::MaintenanceOptions> {
    filter(req.user_id.clone(), None, None)?;
    let namespace = req
        .namespace
        .as_deref()
        .map(|n| namespace(Some(n)))
        .transpose()?;
    let jobs = req
        .jobs
        .iter()
        .map(|j| j.parse::<muisti::lifecycle::Job>())
        .collect::<Result<Vec<_>>>()?;
    if let Some(i) = req.min_importance
        && !(0.0..=1.0).contains(&i)
    {
        return Err(Error::invalid(
            "min_importance",
            "0 to 1: prune deletes only memories of importance below it",
        ));
    }
    if req.max_memories.is_none() && jobs.contains(&muisti::lifecycle::Job::Prune) {
        return Err(Error::conflicting(
            "jobs",
            "prune needs max_memories, the cap a user's memories are pruned to",
        ));
    }
    let defaults = muisti::lifecycle::MaintenanceOptions::default();
    let options = muisti::lifecycle::MaintenanceOptions {
        near_duplicates: req.near_duplicates.unwrap_or(defaults.near_duplicates),
        archive_after: req
            .archive_after_days
            .map_or(defaults.archive_after, muisti::lifecycle::days),
        archive_max_access: req
            .archive_max_access
            .unwrap_or(defaults.archive_max_access),
        archive_grace: defaults.archive_grace,
        user_id: req.user_id,
        namespace,
        jobs,
        max_memories: req.max_memories,
        min_importance: req
            .min_importance
            .unwrap_or(muisti::lifecycle::DEFAULT_MIN_IMPORTANCE),
        promote_after: req
            .promote_after
            .unwrap_or(muisti::lifecycle::DEFAULT_PROMOTE_AFTER),
        dry_run: req.dry_run,
        lease: match req.lease_secs {
            None => muisti::lifecycle::DEFAULT_LEASE,
            Some(s @ 1..=3600) => std::time::Duration::from_secs(s),
            Some(_) => {
                return Err(Error::invalid(
                    "lease_secs",
                    "how long a dead run holds a user: 1 to 3600 seconds",
                ));
            }
        },
    };
    // The engine's rules, before a background run starts.
    options.validate()?;
    Ok(options)
}

/// A maintenance report on the wire.
pub fn report_out(r: &muisti::lifecycle::MaintenanceReport) -> api::MaintenanceReport {
    api::MaintenanceReport {
        expired: r.expired,
        episodic: r.episodic,
        consolidated: r.consolidated,
        promoted: r.promoted,
        pruned: r.pruned,
        archived: r.archived,
        swept: r.swept,
        clustered: r.clustered,
        users: r.users,
        busy: r.busy,
        dry_run: r.dry_run,
    }
}

/// What a maintenance run changed, job by job (none for a dry run), as metrics count it.
pub fn maintained_counts(r: &api::MaintenanceReport) -> Vec<(&'static str, u64)> {
    if r.dry_run {
        return Vec::new();
    }
    vec![
        ("expire", r.expired + r.episodic),
        ("consolidate", r.consolidated),
        ("promote", r.promoted),
        ("prune", r.pruned),
        ("archive", r.archived),
        ("cluster", r.clustered),
    ]
}

/// Brings an archived memory back (text, vector, full-text entry); another memory is
/// returned as it is.
pub fn restore(engine: &Engine, id: &str) -> Result<api::Memory> {
    let id = memory_id(id)?;
    // What the caller may see by id (a declarative entry is its user's only).
    visible(engine, id, None)?;
    Ok(memory_out(&engine.restore(id)?))
}

/// A user's memories grouped by topic, with each cluster's size now.
pub fn clusters(engine: &Engine, p: api::ClusterParams) -> Result<api::Clusters> {
    let user = cluster_user(&p)?;
    let ns = namespace(p.namespace.as_deref())?;
    let (clustering, members) = engine.cluster_members(&ns, Some(&user))?;
    Ok(api::Clusters {
        namespace: ns.to_string(),
        user_id: user,
        clusters: clustering
            .clusters
            .iter()
            .map(|c| api::ClusterInfo {
                id: c.id,
                label: c.label.clone(),
                terms: c.terms.clone(),
                size: members.get(&c.id).map_or(0, |m| m.len() as u64),
                fitted_size: c.size,
            })
            .collect(),
        silhouette: clustering.silhouette,
        fitted_on: clustering.memories,
        computed_at: clustering.computed_at.to_string(),
    })
}

/// One page of a cluster's memories, in id order.
pub fn cluster_memories(
    engine: &Engine,
    cluster: u32,
    p: api::ClusterParams,
) -> Result<api::MemoryPage> {
    let user = cluster_user(&p)?;
    let ns = namespace(p.namespace.as_deref())?;
    let limit = limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let after = cursor(p.cursor.as_deref())?;
    let (items, next) = cluster_page(engine, &ns, &user, cluster, after, limit)?;
    Ok(api::MemoryPage {
        items: items.iter().map(memory_out).collect(),
        next_cursor: next.map(|id| id.to_string()),
    })
}

/// One page of a cluster's memories, in id order, and the cursor of the next.
fn cluster_page(
    engine: &Engine,
    ns: &Namespace,
    user: &str,
    cluster: u32,
    after: Option<MemoryId>,
    limit: usize,
) -> Result<(Vec<Memory>, Option<MemoryId>)> {
    let ids: Vec<MemoryId> = engine
        .cluster_ids(ns, Some(user), cluster)?
        .into_iter()
        .filter(|id| after.is_none_or(|a| *id > a))
        .collect();
    let (page, rest) = ids.split_at(ids.len().min(limit));
    let mut items = Vec::with_capacity(page.len());
    for id in page {
        items.extend(engine.get_by_id(*id)?);
    }
    let next = (!rest.is_empty()).then(|| page.last().copied()).flatten();
    Ok((items, next))
}

/// The user of a cluster request, checked as every owner field.
fn cluster_user(p: &api::ClusterParams) -> Result<String> {
    filter(Some(p.user_id.clone()), None, None)?;
    Ok(p.user_id.clone())
}

/// The API form of a proposal.
pub fn proposal_out(p: &muisti::Proposal) -> api::Proposal {
    api::Proposal {
        id: p.id.to_string(),
        namespace: p.namespace.to_string(),
        content: p.content.clone(),
        kind: p.kind.to_string(),
        source: p.source.to_string(),
        confidence: p.confidence,
        user_id: p.owner.user_id.clone(),
        agent_id: p.owner.agent_id.clone(),
        supersedes: p.supersedes.as_ref().map(|s| api::ProposalTarget {
            id: s.id.to_string(),
            content: s.content.clone(),
            source: s.source.to_string(),
            confidence: s.confidence,
        }),
        created_at: p.created_at.to_string(),
        expires_at: p.expires_at.to_string(),
    }
}

/// Applies a proposal of the deciding user's; the entry as stored and what happened.
pub fn confirm(
    engine: &Engine,
    id: &str,
    by: api::ProposalDecision,
) -> Result<(api::Memory, muisti::WriteStatus)> {
    let d = engine.confirm(id, &by.user_id)?;
    Ok((memory_out(&d.memory), d.outcome.status()))
}

/// Drops a proposal of the deciding user's; returns it.
pub fn reject(engine: &Engine, id: &str, by: api::ProposalDecision) -> Result<api::Proposal> {
    Ok(proposal_out(&engine.reject(id, &by.user_id)?))
}

/// The proposals waiting for a user.
pub fn proposals(engine: &Engine, p: api::ProposalParams) -> Result<api::Proposals> {
    Ok(api::Proposals {
        proposals: engine
            .proposals(&p.user_id)?
            .iter()
            .map(proposal_out)
            .collect(),
    })
}

/// A memory's declarative history, oldest first, as a request acting for `user` sees it.
pub fn history(engine: &Engine, id: &str, user: Option<&str>) -> Result<api::History> {
    let id = memory_id(id)?;
    // Over HTTP a deleted memory is gone, its history with it (the library's
    // `Engine::history` still reads the delete). A history is read by the entry's id, as
    // mem0's `history(id)`; naming a user, only that user's entry's.
    match user {
        Some(_) => visible(engine, id, user).map(drop)?,
        None if engine.get_by_id(id)?.is_some() => {}
        None => return Err(Error::NotFound(format!("memory {id}"))),
    }
    let history = engine
        .history(id)?
        .into_iter()
        .map(|h| api::HistoryEntry {
            event: h.event.as_str().to_owned(),
            old: h.old,
            new: h.new,
            source: h.source.to_string(),
            confidence: h.confidence,
            actor: h.actor,
            at: h.at.to_string(),
        })
        .collect();
    Ok(api::History { history })
}

/// Deletes expired records now, in the whole store (every tenant: an admin operation).
pub fn purge(engine: &Engine) -> Result<api::Purged> {
    Ok(api::Purged {
        purged: engine.purge_expired()?,
    })
}

/// The value at a key.
pub fn kv_get(engine: &Engine, ns: &str, key: &str) -> Result<api::KvEntry> {
    let ns = namespace(Some(ns))?;
    let at = Locator::Key {
        partition: engine.partition(&ns),
        key: Key::new(key)?,
    };
    let m = engine
        .get(&at)?
        .ok_or_else(|| Error::NotFound(format!("key in namespace {ns}")))?;
    Ok(kv_entry(m))
}

/// A record as a key-value entry: the one shape of a key's value on every face.
pub fn kv_entry(m: muisti::Memory) -> api::KvEntry {
    api::KvEntry {
        id: m.id.to_string(),
        key: m.key.to_string(),
        value: m.content,
        expires_at: m.expires_at.map(|t| t.to_string()),
    }
}

/// Stores a value at a key.
pub fn kv_set(engine: &Engine, ns: &str, key: &str, v: api::KvValue) -> Result<api::KvEntry> {
    let ns = namespace(Some(ns))?;
    if v.value.is_null() {
        return Err(Error::invalid("value", "must not be null"));
    }
    let w = engine.kv_set(&ns, key, v.value, ttl(v.ttl_seconds)?)?;
    Ok(kv_entry(w.memory))
}

/// Deletes a key; a missing one is `NotFound`.
pub fn kv_forget(engine: &Engine, ns: &str, key: &str) -> Result<()> {
    let ns = namespace(Some(ns))?;
    if engine.kv_forget(&ns, key)? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("key in namespace {ns}")))
    }
}

/// One page of the entries of a namespace (the records written with a key), oldest first;
/// a page may hold fewer than `limit` entries while `next_cursor` says there are more.
pub fn kv_page(engine: &Engine, ns: &str, p: api::KvPageParams) -> Result<api::KvEntries> {
    let ns = namespace(Some(ns))?;
    let limit = limit(p.limit, MAX_PAGE, MAX_PAGE)?;
    let after = cursor(p.cursor.as_deref())?;
    let page = engine.list(ListQuery {
        partition: engine.partition(&ns),
        filter: muisti::Filter::default(),
        after,
        limit,
    })?;
    Ok(api::KvEntries {
        // Only the key space: a memory written without a key is found by its id.
        entries: page
            .items
            .into_iter()
            .filter(muisti::in_key_space)
            .map(|m| (m.key.to_string(), m.content))
            .collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    })
}

/// Deletes every entry of a namespace.
pub fn kv_flush(engine: &Engine, ns: &str) -> Result<api::Deleted> {
    let ns = namespace(Some(ns))?;
    Ok(api::Deleted {
        deleted: engine.kv_flush(&ns)?,
    })
}

/// What the tenant holds.
pub fn stats(engine: &Engine) -> Result<api::Stats> {
    let s = engine.stats()?;
    Ok(api::Stats {
        tenant: s.tenant.to_string(),
        backend: s.store.backend.to_owned(),
        healthy: s.healthy,
        namespaces: s
            .namespaces
            .iter()
            .map(|n| api::NamespaceCount {
                namespace: n.namespace.to_string(),
                count: n.count,
            })
            .collect(),
        total: s.total,
    })
}

/// A graph entity on the wire.
fn entity_out(e: &muisti::graph::Entity) -> api::GraphEntity {
    api::GraphEntity {
        id: e.id.to_string(),
        name: e.name.clone(),
        kind: e.kind.clone(),
        aliases: e.aliases.clone(),
        mentions: e.mentions,
        first_seen: e.first_seen.to_string(),
        last_seen: e.last_seen.to_string(),
        attributes: e.attributes.clone(),
        memory_ids: e.memory_ids.iter().map(ToString::to_string).collect(),
    }
}

/// A graph relation on the wire.
fn relation_out(r: &muisti::graph::Relation) -> api::GraphRelation {
    api::GraphRelation {
        id: r.id.to_string(),
        subject: r.subject.clone(),
        predicate: r.predicate.clone(),
        object: r.object.clone(),
        subject_id: r.subject_id.to_string(),
        object_id: r.object_id.map(|id| id.to_string()),
        confidence: r.confidence,
        memory_ids: r.memory_ids.iter().map(ToString::to_string).collect(),
        valid_at: r.valid_at.map(|t| t.to_string()),
        invalid_at: r.invalid_at.map(|t| t.to_string()),
        created_at: r.created_at.to_string(),
        expired_at: r.expired_at.map(|t| t.to_string()),
    }
}

/// Longest entity name, predicate or value a graph query takes.
pub const MAX_GRAPH_NAME_CHARS: usize = 256;

/// A name, predicate or value of a graph query: an owner field's rule (1-256 characters,
/// no control characters).
fn graph_name(field: &'static str, value: Option<&str>) -> Result<()> {
    muisti::check_owner_field(field, &value.map(str::to_owned))
}

/// A user's entities (of one kind, or the one with a name).
pub fn graph_entities(engine: &Engine, p: api::GraphEntityParams) -> Result<api::GraphEntities> {
    let user = p.user_id.as_deref();
    filter(p.user_id.clone(), None, None)?;
    graph_name("name", p.name.as_deref())?;
    if let Some(kind) = &p.kind
        && !muisti::is_open_name(kind)
    {
        return Err(Error::invalid(
            "type",
            "a kind is 1-64 letters, digits and _ . : - (person, organization, ...)",
        ));
    }
    let entities = match &p.name {
        Some(name) => engine
            .graph_entity(user, name)?
            .into_iter()
            .filter(|e| p.kind.as_ref().is_none_or(|k| &e.kind == k))
            .collect(),
        None => engine.graph_entities(user, p.kind.as_deref())?,
    };
    let (entities, truncated) = at_most(entities, graph_limit(p.limit)?);
    Ok(api::GraphEntities {
        entities: entities.iter().map(entity_out).collect(),
        truncated,
    })
}

/// Merges one of a user's entities into another.
pub fn graph_merge(engine: &Engine, m: api::GraphMerge) -> Result<api::GraphEntity> {
    filter(m.user_id.clone(), None, None)?;
    graph_name("keep", Some(&m.keep))?;
    graph_name("other", Some(&m.other))?;
    let merged = engine.graph_merge(m.user_id.as_deref(), &m.keep, &m.other)?;
    Ok(entity_out(&merged))
}

/// The relations matching a triple pattern (or an entity's), now or as of a time.
pub fn graph_relations(
    engine: &Engine,
    p: api::GraphRelationParams,
) -> Result<api::GraphRelations> {
    filter(p.user_id.clone(), None, None)?;
    for (field, v) in [
        ("subject", &p.subject),
        ("predicate", &p.predicate),
        ("object", &p.object),
        ("entity", &p.entity),
    ] {
        graph_name(field, v.as_deref())?;
    }
    let as_of = timestamp("as_of", p.as_of.as_deref())?;
    let limit = graph_limit(p.limit)?;
    if let Some(h) = p.hops
        && !(1..=muisti::graph::MAX_HOPS).contains(&h)
    {
        return Err(Error::invalid(
            "hops",
            format!("steps from the entity: 1 to {}", muisti::graph::MAX_HOPS),
        ));
    }
    let relations = match p.entity {
        Some(_) if p.subject.is_some() || p.object.is_some() => {
            return Err(Error::conflicting(
                "entity",
                "matches either end of a relation: give it, or subject and object",
            ));
        }
        Some(entity) => match p.hops.unwrap_or(1) {
            1 => engine.graph_entity_relations(p.user_id.as_deref(), &entity, as_of)?,
            hops => engine.graph_neighbourhood(
                p.user_id.as_deref(),
                &entity,
                hops,
                as_of,
                muisti::graph::MAX_NEIGHBOURHOOD,
            )?,
        },
        None if p.hops.is_some() => {
            return Err(Error::conflicting(
                "hops",
                "a neighbourhood is an entity's: give `entity` with `hops`",
            ));
        }
        None => engine.graph_relations(&muisti::graph::RelationQuery {
            user_id: p.user_id,
            subject: p.subject,
            predicate: p.predicate,
            object: p.object,
            as_of,
        })?,
    };
    let (relations, truncated) = at_most(relations, limit);
    Ok(api::GraphRelations {
        relations: relations.iter().map(relation_out).collect(),
        truncated,
    })
}

/// Most entities or relations one graph answer holds when asked for a `limit`.
pub const MAX_GRAPH_ANSWER: usize = 10_000;

/// A graph answer's `limit`, checked (none: all).
fn graph_limit(limit: Option<usize>) -> Result<usize> {
    match limit {
        None => Ok(usize::MAX),
        Some(n) if (1..=MAX_GRAPH_ANSWER).contains(&n) => Ok(n),
        Some(_) => Err(Error::invalid(
            "limit",
            format!("must be 1 to {MAX_GRAPH_ANSWER}"),
        )),
    }
}

/// The first `limit` items, and whether any were left out.
fn at_most<T>(mut items: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let truncated = items.len() > limit;
    items.truncate(limit);
    (items, truncated)
}

/// The engine's request for a conversation to remember: the one reading of its fields on
/// every face (REST, MCP, the CLI in both modes).
pub fn add_request(req: api::ExtractRequest) -> Result<muisti::facts::AddRequest> {
    let messages = req
        .messages
        .into_iter()
        .map(|m| {
            Ok(muisti::facts::ChatMessage {
                role: m.role,
                content: m.content,
                name: m.name,
                created_at: timestamp("created_at", m.created_at.as_deref())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let add = muisti::facts::AddRequest {
        namespace: namespace(req.namespace.as_deref())?,
        user_id: req.user_id,
        agent_id: req.agent_id,
        session_id: req.session_id,
        messages,
        infer: req.infer.unwrap_or(true),
    };
    add.validate()?;
    if req.background == Some(true) && !add.infer {
        return Err(Error::conflicting(
            "background",
            "background extraction reads facts: it needs infer true",
        ));
    }
    Ok(add)
}

/// Remembers a conversation ([`muisti::Engine::add_messages`]).
pub fn extract(engine: &Engine, req: api::ExtractRequest) -> Result<api::ExtractResponse> {
    Ok(extract_out(&engine.add_messages(&add_request(req)?)?))
}

/// What an extraction did, on the wire.
pub fn extract_out(r: &muisti::facts::AddReport) -> api::ExtractResponse {
    api::ExtractResponse {
        results: r
            .results
            .iter()
            .map(|x| api::ExtractResult {
                id: x.id.to_string(),
                memory: x.memory.clone(),
                event: x.event.as_str().to_owned(),
                previous_memory: x.previous_memory.clone(),
                kind: x.kind.to_string(),
                speaker: x.speaker.clone(),
                source: x.source.to_string(),
                confidence: x.confidence,
                at: x.at.map(|t| t.to_string()),
            })
            .collect(),
        extractor: r.extractor.clone(),
        usage: api::ModelUsage {
            calls: r.usage.calls,
            input_tokens: r.usage.input_tokens,
            output_tokens: r.usage.output_tokens,
        },
    }
}

/// Counts an extraction's model use and decisions in the metrics.
pub fn count_extraction(metrics: &crate::metrics::Metrics, done: &api::ExtractResponse) {
    metrics.model_usage(
        "extract",
        u64::from(done.usage.calls),
        done.usage.input_tokens,
        done.usage.output_tokens,
    );
    metrics.facts(done.results.iter().map(|r| r.event.as_str()));
}

/// Most of the most accessed memories an analytics answer lists.
pub const MAX_TOP_ACCESSED: usize = 100;

/// The aggregates of a namespace's memories.
pub fn analytics(engine: &Engine, p: api::AnalyticsParams) -> Result<api::Analytics> {
    let more = api::Filters {
        agent_id: p.agent_id,
        category: p.category,
        scope: p.scope,
        ..api::Filters::default()
    };
    let query = muisti::analytics::AnalyticsQuery {
        filter: filter(p.user_id, None, Some(more))?,
        days: p.days.unwrap_or(30),
        top: match p.top {
            None => 10,
            Some(n) if n <= MAX_TOP_ACCESSED => n,
            Some(_) => {
                return Err(Error::invalid(
                    "top",
                    format!("must be 0 to {MAX_TOP_ACCESSED}"),
                ));
            }
        },
    };
    let a = engine.analytics(&namespace(p.namespace.as_deref())?, &query)?;
    let days = |v: Vec<muisti::analytics::DayCount>| {
        v.into_iter()
            .map(|d| api::DayCount {
                day: d.day,
                scope: d.scope,
                count: d.count,
            })
            .collect()
    };
    Ok(api::Analytics {
        total: a.total,
        by_scope: a.by_scope,
        by_state: a.by_state,
        by_category: a.by_category,
        growth: days(a.growth),
        last_accessed: days(a.last_accessed),
        top_accessed: a.top_accessed.iter().map(memory_out).collect(),
    })
}

/// How alike a page of a user's memories (or of one of their clusters) are.
pub fn similarity(engine: &Engine, p: api::SimilarityParams) -> Result<api::Similarity> {
    let size = p.limit.unwrap_or(20);
    if !(2..=muisti::analytics::MAX_SIMILARITY).contains(&size) {
        return Err(Error::invalid(
            "limit",
            format!("must be 2 to {}", muisti::analytics::MAX_SIMILARITY),
        ));
    }
    let ns = namespace(p.namespace.as_deref())?;
    let after = cursor(p.cursor.as_deref())?;
    let owner = filter(Some(p.user_id.clone()), None, None)?;
    let (records, next) = match p.cluster {
        Some(cluster) => cluster_page(engine, &ns, &p.user_id, cluster, after, size)?,
        None => {
            let query = ListQuery {
                filter: owner,
                after,
                limit: size,
                ..ListQuery::all(engine.partition(&ns))
            };
            let page = engine.list_in_state(query, MemoryState::Active)?;
            (page.items, page.next)
        }
    };
    Ok(api::Similarity {
        matrix: engine.similarity(&records)?,
        items: records.iter().map(memory_out).collect(),
        next_cursor: next.map(|id| id.to_string()),
    })
}
