//! The knowledge graph: entities, relations, merges.

use super::*;

/// A graph entity on the wire.
pub(super) fn entity_out(e: &muisti::graph::Entity) -> api::GraphEntity {
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
pub(super) fn relation_out(r: &muisti::graph::Relation) -> api::GraphRelation {
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
pub(super) fn graph_name(field: &'static str, value: Option<&str>) -> Result<()> {
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
            .graph()
            .entity(user, name)?
            .into_iter()
            .filter(|e| p.kind.as_ref().is_none_or(|k| &e.kind == k))
            .collect(),
        None => engine.graph().entities(user, p.kind.as_deref())?,
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
    let merged = engine
        .graph()
        .merge(m.user_id.as_deref(), &m.keep, &m.other)?;
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
            1 => engine
                .graph()
                .entity_relations(p.user_id.as_deref(), &entity, as_of)?,
            hops => engine.graph().neighbourhood(
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
        None => engine.graph().relations(&muisti::graph::RelationQuery {
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
pub(super) fn graph_limit(limit: Option<usize>) -> Result<usize> {
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
pub(super) fn at_most<T>(mut items: Vec<T>, limit: usize) -> (Vec<T>, bool) {
    let truncated = items.len() > limit;
    items.truncate(limit);
    (items, truncated)
}
