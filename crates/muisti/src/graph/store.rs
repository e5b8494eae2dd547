//! The graph as records: writing what an extraction found (entity resolution and
//! invalidation), and the queries.

use muisti_core::{
    Filter, Key, Locator, Memory, MemoryId, Owner, Put, Result, Timestamp, content_hash, list_all,
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

use super::Graph;
use super::keys::{adjacency_key, entity_key, name_tag, tag};
use super::{
    Entity, Extracted, FOCUS_NAMESPACE, Mention, Relation, RelationQuery, SINGLE_VALUED,
    normalize_name, normalize_predicate,
};
use crate::records::{self, Adjacency, Collection, Footprint};

fn object_tag(r: &Relation) -> String {
    match r.object_id {
        Some(id) => tag("o:", &id.to_string()),
        None => tag("o:v:", &normalize_name(&r.object)),
    }
}

impl Graph<'_> {
    fn graph_records<T: DeserializeOwned>(
        &self,
        records: &Collection<T>,
        user: Option<&str>,
        tags: Vec<String>,
    ) -> Result<Vec<T>> {
        let filter = Filter {
            user_id: user.map(str::to_owned),
            tags,
            ..Filter::default()
        };
        list_all(
            self.core.store.as_ref(),
            &records.partition(&self.core.tenant)?,
            &filter,
        )?
        .iter()
        // A record of another user's graph with no user filter: only the user-less graph.
        .filter(|m| user.is_some() || m.owner.user_id.is_none())
        .map(|m| records.decode(m))
        .collect()
    }

    pub(super) fn put_graph_record<T: Serialize>(
        &self,
        records: &Collection<T>,
        key: &str,
        user: Option<&str>,
        value: &T,
        tags: Vec<String>,
    ) -> Result<()> {
        let content = records.encode(value)?;
        let mut put = Put::new(
            records.partition(&self.core.tenant)?,
            Some(Key::new(key)?),
            content,
        );
        put.owner = Owner {
            user_id: user.map(str::to_owned),
            ..Owner::default()
        };
        put.tags = tags;
        self.core.store.put(put)?;
        Ok(())
    }

    pub(super) fn delete_graph_record<T>(
        &self,
        records: &Collection<T>,
        key: &str,
    ) -> Result<bool> {
        self.core.store.delete(&Locator::Key {
            partition: records.partition(&self.core.tenant)?,
            key: Key::new(key)?,
        })
    }

    /// A graph record by its key, decoded.
    pub(super) fn graph_record<T: DeserializeOwned>(
        &self,
        records: &Collection<T>,
        key: &str,
    ) -> Result<Option<T>> {
        let at = Locator::Key {
            partition: records.partition(&self.core.tenant)?,
            key: Key::new(key)?,
        };
        self.core
            .store
            .get(&at)?
            .map(|m| records.decode(&m))
            .transpose()
    }

    /// The relations at `entity`'s ends, by its adjacency record (one read each).
    pub(super) fn adjacent(&self, user: Option<&str>, entity: MemoryId) -> Result<Adjacency> {
        Ok(self
            .graph_record(&records::ADJACENCY, &adjacency_key(user, entity))?
            .unwrap_or_default())
    }

    /// The relations with these ids (those still stored).
    pub(super) fn relations_by_id(&self, ids: &[MemoryId]) -> Result<Vec<Relation>> {
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(r) = self.graph_record(&records::RELATIONS, &id.to_string())? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// A user's entities (of one kind, if given), by name.
    pub fn entities(&self, user: Option<&str>, kind: Option<&str>) -> Result<Vec<Entity>> {
        let tags = kind.map(|k| vec![tag("k:", k)]).unwrap_or_default();
        let mut all: Vec<Entity> = self.graph_records(&records::ENTITIES, user, tags)?;
        all.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        Ok(all)
    }

    /// The relations matching a triple pattern, oldest first: those that hold now, or with
    /// [`RelationQuery::as_of`] those that held then. A pattern naming a subject, or an
    /// object that is an entity, reads that entity's adjacency (its degree, not the graph); one naming
    /// only a predicate or a value scans the user's relations.
    pub fn relations(&self, q: &RelationQuery) -> Result<Vec<Relation>> {
        let user = q.user_id.as_deref();
        let predicate = q.predicate.as_deref().map(normalize_predicate);
        let subject = match &q.subject {
            Some(s) => match self.entity(user, s)? {
                Some(e) => Some(e),
                None => return Ok(Vec::new()),
            },
            None => None,
        };
        let object = match &q.object {
            Some(o) => Some((normalize_name(o), self.entity(user, o)?)),
            None => None,
        };
        let mut found: Vec<Relation> = match (&subject, &object) {
            (Some(s), _) => self.relations_by_id(&self.adjacent(user, s.id)?.out)?,
            (None, Some((_, Some(o)))) => self.relations_by_id(&self.adjacent(user, o.id)?.into)?,
            (None, Some((value, None))) => {
                self.graph_records(&records::RELATIONS, user, vec![tag("o:v:", value)])?
            }
            (None, None) => {
                let tags = predicate.iter().map(|p| tag("p:", p)).collect();
                self.graph_records(&records::RELATIONS, user, tags)?
            }
        };
        found.retain(|r| {
            predicate.as_ref().is_none_or(|p| &r.predicate == p)
                && object
                    .as_ref()
                    .is_none_or(|(value, entity)| match (entity, r.object_id) {
                        // A name that is an entity matches it; otherwise a value.
                        (Some(e), Some(id)) => e.id == id,
                        (Some(_), None) => false,
                        (None, _) => r.object_id.is_none() && &normalize_name(&r.object) == value,
                    })
                && match q.as_of {
                    Some(t) => r.holds_at(t),
                    None => r.is_current(),
                }
        });
        found.sort_by_key(|r| r.id);
        found.dedup_by(|a, b| a.id == b.id);
        Ok(found)
    }

    /// The relations an entity takes part in, as subject or object.
    pub fn entity_relations(
        &self,
        user: Option<&str>,
        name: &str,
        as_of: Option<Timestamp>,
    ) -> Result<Vec<Relation>> {
        let base = RelationQuery {
            user_id: user.map(str::to_owned),
            as_of,
            ..RelationQuery::default()
        };
        let mut all = self.relations(&RelationQuery {
            subject: Some(name.to_owned()),
            ..base.clone()
        })?;
        all.extend(self.relations(&RelationQuery {
            object: Some(name.to_owned()),
            ..base
        })?);
        all.sort_by_key(|r| r.id);
        all.dedup_by(|a, b| a.id == b.id);
        Ok(all)
    }

    /// The neighbourhood of an entity: the relations within `hops` steps of it (one: its
    /// own; two: also those of the entities at their other ends; ...), those that hold now
    /// or, with `as_of`, those that held then, nearest first, at most `limit`. Reads one
    /// adjacency record per entity reached and each relation once.
    pub fn neighbourhood(
        &self,
        user: Option<&str>,
        name: &str,
        hops: usize,
        as_of: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Relation>> {
        let Some(start) = self.entity(user, name)? else {
            return Ok(Vec::new());
        };
        let holds = |r: &Relation| match as_of {
            Some(t) => r.holds_at(t),
            None => r.is_current(),
        };
        let mut reached = std::collections::HashSet::from([start.id]);
        let mut seen = std::collections::HashSet::new();
        let mut frontier = vec![start.id];
        let mut out = Vec::new();
        for _ in 0..hops {
            let mut next = Vec::new();
            for entity in frontier {
                let adj = self.adjacent(user, entity)?;
                let ids: Vec<MemoryId> = adj
                    .out
                    .iter()
                    .chain(&adj.into)
                    .filter(|id| seen.insert(**id))
                    .copied()
                    .collect();
                for r in self.relations_by_id(&ids)?.into_iter().filter(holds) {
                    if out.len() >= limit {
                        return Ok(out);
                    }
                    for end in std::iter::once(r.subject_id).chain(r.object_id) {
                        if reached.insert(end) {
                            next.push(end);
                        }
                    }
                    out.push(r);
                }
            }
            frontier = next;
        }
        Ok(out)
    }

    /// The last person a conversation named (for its next memory's pronouns).
    pub(crate) fn focus(
        &self,
        user: Option<&str>,
        session: Option<&str>,
    ) -> Result<Option<String>> {
        let at = Locator::Key {
            partition: self.core.own_partition(FOCUS_NAMESPACE),
            key: Key::new(focus_key(user, session))?,
        };
        Ok(self
            .core
            .store
            .get(&at)?
            .and_then(|m| m.content.get("last_person")?.as_str().map(str::to_owned)))
    }

    /// Writes what extraction found in `memory`: each name resolved to an entity (created,
    /// or its mentions counted), each triple a relation (the same fact gains a source; a new
    /// value of a single-valued predicate closes the old edge), and the conversation's last
    /// person.
    pub(crate) fn apply_extraction(
        &self,
        memory: &Memory,
        found: &Extracted,
        extractor: Option<&dyn super::GraphExtractor>,
    ) -> Result<()> {
        let text = memory.text();
        let chooser = extractor.map(|extractor| super::resolve::Chooser {
            extractor,
            text: &text,
        });
        let user = memory.owner.user_id.as_deref();
        let at = memory.valid_from.unwrap_or(memory.updated_at);
        let now = self.core.clock.now();
        let mut ids = std::collections::HashMap::new();
        let mut footprint = self.footprint(memory.id)?;
        for m in &found.mentions {
            let e = self.mention(user, m, memory.id, at, chooser)?;
            if !footprint.entities.contains(&e.name) {
                footprint.entities.push(e.name.clone());
            }
            ids.insert(m.name.clone(), e);
        }
        for t in &found.triples {
            let Some(subject) = ids.get(&t.subject.name) else {
                continue;
            };
            let object = (!t.literal).then(|| ids.get(&t.object.name)).flatten();
            let mut r = Relation {
                id: MemoryId::generate(),
                user_id: user.map(str::to_owned),
                subject: subject.name.clone(),
                subject_id: subject.id,
                predicate: normalize_predicate(&t.predicate),
                object: object.map_or_else(|| t.object.name.clone(), |o| o.name.clone()),
                object_id: object.map(|o| o.id),
                confidence: 0.8,
                memory_ids: vec![memory.id],
                valid_at: Some(t.valid_at.unwrap_or(at)),
                invalid_at: None,
                created_at: now,
                expired_at: None,
            };
            let stated = self.add_relation(user, &mut r, now)?;
            if !footprint.relations.contains(&stated) {
                footprint.relations.push(stated);
            }
        }
        if !footprint.entities.is_empty() || !footprint.relations.is_empty() {
            self.put_graph_record(
                &records::SOURCES,
                &memory.id.to_string(),
                user,
                &footprint,
                Vec::new(),
            )?;
        }
        if found.last_person.is_some() {
            // The memory it came from, so its delete takes the name with it.
            let focus =
                json!({"last_person": found.last_person, "memory_id": memory.id.to_string()});
            let mut put = Put::new(
                self.core.own_partition(FOCUS_NAMESPACE),
                Some(Key::new(focus_key(
                    user,
                    memory.owner.session_id.as_deref(),
                ))?),
                focus,
            );
            put.owner.user_id = user.map(str::to_owned);
            put.owner.session_id.clone_from(&memory.owner.session_id);
            self.core.store.put(put)?;
        }
        Ok(())
    }

    /// The entity `m` names, created or counted once more for `memory`.
    fn mention(
        &self,
        user: Option<&str>,
        m: &Mention,
        memory: MemoryId,
        at: Timestamp,
        chooser: Option<super::resolve::Chooser<'_>>,
    ) -> Result<Entity> {
        let found = self.resolve_entity(user, &m.name, &m.kind, chooser)?;
        let new_name = match &found {
            None => true,
            Some(e) => {
                normalize_name(&e.name) != normalize_name(&m.name)
                    && !e
                        .aliases
                        .iter()
                        .any(|a| normalize_name(a) == normalize_name(&m.name))
            }
        };
        let mut e = match found {
            Some(mut e) => {
                if new_name {
                    // Another name of it: kept as an alias, and found under it from now on.
                    e.aliases.push(m.name.clone());
                }
                e
            }
            None => Entity {
                id: MemoryId::generate(),
                user_id: user.map(str::to_owned),
                name: m.name.clone(),
                kind: m.kind.clone(),
                aliases: Vec::new(),
                mentions: 0,
                first_seen: at,
                last_seen: at,
                attributes: serde_json::Map::new(),
                summary: None,
                memory_ids: Vec::new(),
            },
        };
        if e.kind == super::kind::OTHER {
            // A name first seen bare takes the kind a fact gives it.
            e.kind.clone_from(&m.kind);
        }
        if !e.memory_ids.contains(&memory) {
            e.memory_ids.push(memory);
            e.mentions += 1;
        }
        e.first_seen = e.first_seen.min(at);
        e.last_seen = e.last_seen.max(at);
        self.save_entity(&e)?;
        if new_name {
            self.register_aliases(&e, &m.name)?;
        }
        Ok(e)
    }

    pub(super) fn save_entity(&self, e: &Entity) -> Result<()> {
        // Aliases are found through their own records (`graph_aliases`), not tags.
        let tags = vec![name_tag(&e.name), tag("k:", &e.kind)];
        let user = e.user_id.as_deref();
        self.put_graph_record(
            &records::ENTITIES,
            &entity_key(user, &e.name),
            user,
            e,
            tags,
        )
    }

    pub(super) fn save_relation(&self, r: &Relation) -> Result<()> {
        let tags = vec![
            tag("s:", &r.subject_id.to_string()),
            tag("p:", &r.predicate),
            object_tag(r),
        ];
        let key = r.id.to_string();
        self.put_graph_record(&records::RELATIONS, &key, r.user_id.as_deref(), r, tags)
    }

    /// Stores `r`: the same current fact gains `r`'s source instead; a single-valued
    /// predicate's other current values are closed at `r.valid_at`. Reads and updates the
    /// ends' adjacency records. Returns the id of the relation that now states it.
    pub(super) fn add_relation(
        &self,
        user: Option<&str>,
        r: &mut Relation,
        now: Timestamp,
    ) -> Result<MemoryId> {
        let mut subject_adj = self.adjacent(user, r.subject_id)?;
        let key = object_tag(r);
        for mut old in self
            .relations_by_id(&subject_adj.out)?
            .into_iter()
            .filter(|o| o.predicate == r.predicate && o.is_current())
        {
            if object_tag(&old) == key {
                for id in &r.memory_ids {
                    if !old.memory_ids.contains(id) {
                        old.memory_ids.push(*id);
                    }
                }
                self.save_relation(&old)?;
                return Ok(old.id);
            }
            if SINGLE_VALUED.contains(&r.predicate.as_str()) {
                if old.valid_at.is_some() && old.valid_at > r.valid_at {
                    // The stored value is the newer one: this fact held until it did.
                    r.invalid_at = old.valid_at;
                } else {
                    old.invalid_at = r.valid_at.or(Some(now));
                    old.expired_at = Some(now);
                    self.save_relation(&old)?;
                }
            }
        }
        self.save_relation(r)?;
        subject_adj.out.push(r.id);
        self.save_adjacency(user, r.subject_id, &subject_adj)?;
        if let Some(object) = r.object_id {
            let mut object_adj = if object == r.subject_id {
                subject_adj
            } else {
                self.adjacent(user, object)?
            };
            object_adj.into.push(r.id);
            self.save_adjacency(user, object, &object_adj)?;
        }
        Ok(r.id)
    }

    fn save_adjacency(&self, user: Option<&str>, entity: MemoryId, adj: &Adjacency) -> Result<()> {
        let key = adjacency_key(user, entity);
        self.put_graph_record(&records::ADJACENCY, &key, user, adj, Vec::new())
    }
}

impl Graph<'_> {
    /// What the graph holds from a memory (nothing if it was never read).
    fn footprint(&self, memory: MemoryId) -> Result<Footprint> {
        Ok(self
            .graph_record(&records::SOURCES, &memory.to_string())?
            .unwrap_or_default())
    }

    /// Takes deleted memories out of their user's graph: each entity and relation they
    /// supported (read from their footprints, not the graph) loses them as sources, and one
    /// left with no source is deleted (a forgotten memory leaves no fact behind; an entity
    /// goes with its aliases and adjacency, a relation from its ends' adjacency). Returns
    /// how many records changed.
    pub(crate) fn forget(&self, user: Option<&str>, gone: &[MemoryId]) -> Result<u64> {
        let mut changed = 0;
        let mut named = std::collections::HashSet::new();
        let mut any = false;
        for memory in gone {
            let footprint = self.footprint(*memory)?;
            any |= !footprint.entities.is_empty() || !footprint.relations.is_empty();
            named.extend(footprint.entities.iter().map(|n| normalize_name(n)));
            for id in &footprint.relations {
                let Some(mut r) = self.graph_record(&records::RELATIONS, &id.to_string())? else {
                    continue;
                };
                r.memory_ids.retain(|m| m != memory);
                changed += 1;
                if r.memory_ids.is_empty() {
                    self.delete_graph_record(&records::RELATIONS, &r.id.to_string())?;
                    self.unlink(user, &r)?;
                } else {
                    self.save_relation(&r)?;
                }
            }
            for name in &footprint.entities {
                let key = entity_key(user, name);
                let Some(mut e) = self.graph_record(&records::ENTITIES, &key)? else {
                    continue;
                };
                e.memory_ids.retain(|m| m != memory);
                changed += 1;
                if e.memory_ids.is_empty() {
                    self.forget_aliases(&e)?;
                    self.delete_graph_record(&records::ENTITIES, &key)?;
                    self.delete_graph_record(&records::ADJACENCY, &adjacency_key(user, e.id))?;
                } else {
                    e.mentions = e.memory_ids.len() as u64;
                    self.save_entity(&e)?;
                }
            }
            self.delete_graph_record(&records::SOURCES, &memory.to_string())?;
        }
        if any {
            changed += self.forget_focus(user, gone, &named)?;
        }
        Ok(changed)
    }

    /// Deletes the user's conversation focus records that came from one of `gone` (or, when
    /// written before focus records named their memory, that name a person `gone` named):
    /// a deleted memory's person is no conversation's last-named one.
    fn forget_focus(
        &self,
        user: Option<&str>,
        gone: &[MemoryId],
        named: &std::collections::HashSet<String>,
    ) -> Result<u64> {
        let filter = muisti_core::Filter {
            user_id: user.map(str::to_owned),
            ..muisti_core::Filter::default()
        };
        let gone: Vec<String> = gone.iter().map(ToString::to_string).collect();
        let mut deleted = 0;
        let partition = self.core.own_partition(FOCUS_NAMESPACE);
        for record in muisti_core::list_all(self.core.store.as_ref(), &partition, &filter)? {
            if record.owner.user_id.as_deref() != user {
                continue;
            }
            let from_gone = match record.content.get("memory_id").and_then(|v| v.as_str()) {
                Some(id) => gone.iter().any(|g| g == id),
                None => record
                    .content
                    .get("last_person")
                    .and_then(|v| v.as_str())
                    .is_some_and(|p| named.contains(&normalize_name(p))),
            };
            if from_gone {
                deleted += u64::from(self.core.store.delete(&Locator::Id {
                    tenant: self.core.tenant.clone(),
                    id: record.id,
                })?);
            }
        }
        Ok(deleted)
    }

    /// Puts a relation into its ends' adjacency records.
    pub(super) fn link(&self, user: Option<&str>, r: &Relation) -> Result<()> {
        for (end, outgoing) in
            std::iter::once((r.subject_id, true)).chain(r.object_id.map(|o| (o, false)))
        {
            let mut adj = self.adjacent(user, end)?;
            let list = if outgoing {
                &mut adj.out
            } else {
                &mut adj.into
            };
            if !list.contains(&r.id) {
                list.push(r.id);
            }
            self.save_adjacency(user, end, &adj)?;
        }
        Ok(())
    }

    /// Takes a deleted relation out of its ends' adjacency records.
    pub(super) fn unlink(&self, user: Option<&str>, r: &Relation) -> Result<()> {
        for (end, outgoing) in
            std::iter::once((r.subject_id, true)).chain(r.object_id.map(|o| (o, false)))
        {
            let key = adjacency_key(user, end);
            if let Some(mut adj) = self.graph_record(&records::ADJACENCY, &key)? {
                if outgoing {
                    adj.out.retain(|id| *id != r.id);
                } else {
                    adj.into.retain(|id| *id != r.id);
                }
                self.save_adjacency(user, end, &adj)?;
            }
        }
        Ok(())
    }
}

impl Graph<'_> {
    /// Retires what a memory stated before its text changed at `at`: a fact learned
    /// before then that only it supports is closed (`invalid_at` = `at`, kept for
    /// queries as of earlier times), one other memories support too loses it as a source.
    /// (Its new text is read again after.) Returns how many relations changed.
    pub(crate) fn retire(&self, memory: MemoryId, at: Timestamp) -> Result<u64> {
        let now = self.core.clock.now();
        let mut changed = 0;
        let footprint = self.footprint(memory)?;
        for mut r in self.relations_by_id(&footprint.relations)? {
            if !r.memory_ids.contains(&memory) || r.created_at >= at {
                continue;
            }
            if r.memory_ids.len() > 1 {
                r.memory_ids.retain(|id| *id != memory);
            } else if r.is_current() {
                r.invalid_at = Some(r.valid_at.map_or(at, |v| v.max(at)));
                r.expired_at = Some(now);
            } else {
                continue;
            }
            self.save_relation(&r)?;
            changed += 1;
        }
        Ok(changed)
    }
}

/// The focus record's key: the user and the conversation.
fn focus_key(user: Option<&str>, session: Option<&str>) -> String {
    let whole = format!("{}/{}", user.unwrap_or("-"), session.unwrap_or("-"));
    if whole.len() <= 200 {
        whole
    } else {
        content_hash(&whole)
    }
}

impl Graph<'_> {
    /// The graph's facts about what `text` names: the user's entities it names
    /// ([`Graph::named`]), and the relations that hold now at either end of them,
    /// the named entities' own first; at most `limit`. (The agent's graph context block.)
    pub fn context(&self, user: Option<&str>, text: &str, limit: usize) -> Result<Vec<Relation>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut named = self.named(user, text)?;
        // The most mentioned first: they are what the conversation is about.
        named.sort_by(|a, b| b.mentions.cmp(&a.mentions).then(a.name.cmp(&b.name)));
        let mut facts: Vec<Relation> = Vec::new();
        for e in &named {
            for r in self.entity_relations(user, &e.name, None)? {
                if facts.len() >= limit {
                    return Ok(facts);
                }
                if !facts.iter().any(|f| f.id == r.id) {
                    facts.push(r);
                }
            }
        }
        Ok(facts)
    }
}
