//! Memories: create (one or a batch), read, update, delete, list, recall and similar.

use super::*;

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

/// The one rule of a memory's content over the API, for a write and an update alike: not
/// null, and a text not blank (whitespace of any kind only).
fn check_content(content: &Value) -> Result<()> {
    match content {
        Value::Null => Err(Error::invalid("content", "must not be null")),
        Value::String(s) if s.trim().is_empty() => {
            Err(Error::invalid("content", "must not be empty"))
        }
        _ => Ok(()),
    }
}

/// The write a [`api::NewMemory`] asks for (the engine sets the tenant).
pub fn new_put(m: api::NewMemory) -> Result<Put> {
    let partition = muisti::Partition::of(namespace(m.namespace.as_deref())?);
    let key = m.key.as_deref().map(Key::new).transpose()?;
    check_content(&m.content)?;
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
/// naming the entry it `supersedes` replaces that one ([`Declarative::declare_superseding`](muisti::declarative::Declarative::declare_superseding)).
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
        Some(id) => {
            muisti::declarative::written(engine.declarative().declare_superseding(put, id)?)
        }
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
/// declarative entry only for its own user; for anyone else it is not found): a read that
/// counts an access ([`Engine::read_for`]).
pub fn get(engine: &Engine, id: &str, user: Option<&str>) -> Result<api::Memory> {
    let id = memory_id(id)?;
    muisti::check_owner_field("user_id", &user.map(str::to_owned))?;
    visible_in(engine.read_for(id, user), id, user).map(|m| memory_out(&m))
}

/// The memory with `id` as the request may see it (`NotFound` otherwise): the one check of
/// every route that names a memory by id. The acting user follows the owner-field rules.
pub(super) fn visible(engine: &Engine, id: MemoryId, user: Option<&str>) -> Result<Memory> {
    visible_in(engine.get_by_id(id), id, user)
}

/// What a read found, as the acting user may see it (a declarative entry is its user's
/// only), else `NotFound`; the acting user follows the owner-field rules.
pub(super) fn visible_in(
    found: Result<Option<Memory>>,
    id: MemoryId,
    user: Option<&str>,
) -> Result<Memory> {
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
    if let Some(c) = &content {
        check_content(c)?;
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

/// One page of memories.
pub fn list(engine: &Engine, p: api::ListParams) -> Result<api::MemoryPage> {
    let limit = limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let order = p
        .order
        .as_deref()
        .map(str::parse::<muisti::ListOrder>)
        .transpose()?
        .unwrap_or_default();
    // A plain id continues the store's own order; any other cursor is an ordered listing's.
    let plain = p
        .cursor
        .as_deref()
        .is_none_or(|c| MemoryId::parse(c).is_ok());
    let keyset = order == muisti::ListOrder::Created && plain;
    let after = if keyset {
        cursor(p.cursor.as_deref())?
    } else {
        None
    };
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
    if !keyset {
        let page = engine.list_ordered(query, order, p.cursor.as_deref(), state)?;
        return Ok(api::MemoryPage {
            items: page.items.iter().map(memory_out).collect(),
            next_cursor: page.next,
        });
    }
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
    req.as_of = timestamp("as_of", q.as_of.as_deref())?;
    req.include_superseded = q.include_superseded;
    req.exclude_key_value = q.exclude_key_value;
    Ok(hits_out(engine.recall(&req)?, q.explain))
}

/// Recall hits on the wire; the signals only when asked to explain.
pub(super) fn hits_out(hits: Vec<muisti::RecallHit>, explain: bool) -> api::RecallResult {
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
