//! Merging two entities that are one: both histories kept on the one that stays.

use muisti_core::{Error, MemoryId, Result};
use serde_json::{Value, json};

use super::Graph;
use super::keys::{adjacency_key, entity_key};
use super::{Entity, Relation, normalize_name};
use crate::records::{self, Adjacency};

impl Graph<'_> {
    /// Merges the entity `other` into `keep` (both a user's names or aliases): `keep` takes
    /// `other`'s name and aliases as aliases, its memories, its mentions and the span of
    /// when it was seen; every relation at `other` is moved to `keep`, current ones as new
    /// facts of `keep` (the same fact twice becomes one with both sources; a single-valued
    /// one closes the older value), past ones as they were; the merge is recorded in
    /// `keep`'s attributes (`merged`: `other`'s id, name and the time). Returns `keep` as
    /// it is after. Not found: either name; conflict: both are one entity already.
    pub fn merge(&self, user: Option<&str>, keep: &str, other: &str) -> Result<Entity> {
        let missing = |name: &str| Error::NotFound(format!("entity {name:?}"));
        let mut kept = self.entity(user, keep)?.ok_or_else(|| missing(keep))?;
        let gone = self.entity(user, other)?.ok_or_else(|| missing(other))?;
        if kept.id == gone.id {
            return Err(Error::conflicting(
                "other",
                "names the same entity as keep: nothing to merge",
            ));
        }
        let now = self.core.clock.now();
        // `other` goes first, so its names can lead to `keep`.
        self.forget_aliases(&gone)?;
        self.delete_graph_record(&records::ENTITIES, &entity_key(user, &gone.name))?;
        let adjacency: Adjacency = self
            .graph_record(&records::ADJACENCY, &adjacency_key(user, gone.id))?
            .unwrap_or_default();
        self.delete_graph_record(&records::ADJACENCY, &adjacency_key(user, gone.id))?;

        for name in std::iter::once(&gone.name).chain(&gone.aliases) {
            let taken = normalize_name(name) == normalize_name(&kept.name)
                || kept
                    .aliases
                    .iter()
                    .any(|a| normalize_name(a) == normalize_name(name));
            if !taken {
                kept.aliases.push(name.clone());
            }
        }
        for id in &gone.memory_ids {
            if !kept.memory_ids.contains(id) {
                kept.memory_ids.push(*id);
            }
        }
        kept.mentions = kept.memory_ids.len() as u64;
        kept.first_seen = kept.first_seen.min(gone.first_seen);
        kept.last_seen = kept.last_seen.max(gone.last_seen);
        for (k, v) in &gone.attributes {
            kept.attributes
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
        let record = json!({"id": gone.id, "name": gone.name, "at": now});
        match kept.attributes.get_mut("merged") {
            Some(Value::Array(all)) => all.push(record),
            _ => {
                kept.attributes
                    .insert("merged".into(), Value::Array(vec![record]));
            }
        }
        self.save_entity(&kept)?;
        for name in std::iter::once(&gone.name).chain(&gone.aliases) {
            self.register_aliases(&kept, name)?;
        }

        // Its relations, moved to `keep`.
        let mut ids: Vec<MemoryId> = adjacency
            .out
            .iter()
            .chain(&adjacency.into)
            .copied()
            .collect();
        ids.sort();
        ids.dedup();
        for mut r in self.relations_by_id(&ids)? {
            // Out of the graph under its old ends first.
            self.delete_graph_record(&records::RELATIONS, &r.id.to_string())?;
            self.unlink(user, &r)?;
            let old_id = r.id;
            rewire(&mut r, &gone, &kept);
            let stated = if r.is_current() {
                self.add_relation(user, &mut r, now)?
            } else {
                self.save_relation(&r)?;
                self.link(user, &r)?;
                r.id
            };
            if stated != old_id {
                self.repoint_footprints(user, &r.memory_ids, old_id, stated)?;
            }
        }
        // The memories that named `other` now name `keep`.
        for memory in &gone.memory_ids {
            let key = memory.to_string();
            if let Some(mut f) = self.graph_record(&records::SOURCES, &key)? {
                f.entities.retain(|n| *n != gone.name);
                if !f.entities.contains(&kept.name) {
                    f.entities.push(kept.name.clone());
                }
                self.put_graph_record(&records::SOURCES, &key, user, &f, Vec::new())?;
            }
        }
        self.entity(user, &kept.name)?
            .ok_or_else(|| missing(&kept.name))
    }

    /// Replaces relation `old` by `new` in these memories' footprints.
    fn repoint_footprints(
        &self,
        user: Option<&str>,
        memories: &[MemoryId],
        old: MemoryId,
        new: MemoryId,
    ) -> Result<()> {
        for memory in memories {
            let key = memory.to_string();
            let Some(mut f) = self.graph_record(&records::SOURCES, &key)? else {
                continue;
            };
            f.relations.retain(|id| *id != old);
            if !f.relations.contains(&new) {
                f.relations.push(new);
            }
            self.put_graph_record(&records::SOURCES, &key, user, &f, Vec::new())?;
        }
        Ok(())
    }
}

/// `r` with its ends at `from` moved to `to`.
fn rewire(r: &mut Relation, from: &Entity, to: &Entity) {
    if r.subject_id == from.id {
        r.subject_id = to.id;
        r.subject.clone_from(&to.name);
    }
    if r.object_id == Some(from.id) {
        r.object_id = Some(to.id);
        r.object.clone_from(&to.name);
    }
}
