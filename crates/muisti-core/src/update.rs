//! Atomic updates: a patch of fields applied to one record under an optional version check.

use serde_json::{Map, Value};

use crate::{
    Category, Error, Limits, Locator, Memory, MemoryId, MemoryScope, MemoryState, Result, Source,
    Timestamp, Ttl, content_hash, memory::check_record, value_text,
};

/// The fields an update changes; `None` keeps a field as it is.
///
/// Fields that can be absent on a record take `Some(None)` to clear them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Patch {
    /// New content.
    pub content: Option<Value>,
    /// New context (`Some(None)` removes it).
    pub context: Option<Option<String>>,
    /// New category.
    pub category: Option<Category>,
    /// New retention scope.
    pub scope: Option<MemoryScope>,
    /// Moves the memory to another user (`Some(None)`: to no user).
    pub user_id: Option<Option<String>>,
    /// Moves the memory to another agent (`Some(None)`: to no agent).
    pub agent_id: Option<Option<String>>,
    /// Moves the memory to another session (`Some(None)`: to no session).
    pub session_id: Option<Option<String>>,
    /// New tags (replace the old ones).
    pub tags: Option<Vec<String>>,
    /// New metadata (replaces the old object).
    pub metadata: Option<Map<String, Value>>,
    /// New importance, 0.0 to 1.0.
    pub importance: Option<f32>,
    /// New provenance.
    pub source: Option<Source>,
    /// New confidence, 0 to 100 (`Some(None)` removes it).
    pub confidence: Option<Option<u8>>,
    /// New state. `Superseded` needs `superseded_by` (here or already on the record); any
    /// other state clears `superseded_by`, and a superseded memory made `Active` again is
    /// true again: its `valid_until` is cleared too unless this patch sets one.
    pub state: Option<MemoryState>,
    /// The memory that replaces this one; the record becomes `Superseded` (a patch that
    /// also sets another state is refused with [`Error::ConflictingFields`]).
    pub superseded_by: Option<MemoryId>,
    /// New start of validity (`Some(None)` removes it).
    pub valid_from: Option<Option<Timestamp>>,
    /// New end of validity (`Some(None)` removes it).
    pub valid_until: Option<Option<Timestamp>>,
    /// New expiry, counted from the time of the update (`Some(None)`: never expires).
    pub ttl: Option<Option<Ttl>>,
    /// The vector of the new text and the model that made it. When the text changes and no
    /// vector is given, the old vector is dropped (it no longer describes the record).
    pub embedding: Option<(String, Vec<f32>)>,
    /// Accesses to add to the record's count, in the same atomic step (folding a
    /// duplicate's accesses into the memory it repeats).
    pub add_access: Option<u64>,
}

impl Patch {
    /// Whether the patch changes the text that is indexed (content or context).
    pub fn changes_text(&self) -> bool {
        self.content.is_some() || self.context.is_some()
    }
}

/// An update of one record: where it is, what changes, and the version it must still have.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdateRequest {
    /// The record.
    pub at: Locator,
    /// What changes.
    pub patch: Patch,
    /// The record's [`Memory::version`] the caller last saw: the update is refused with
    /// [`Error::Conflict`] when the record has another. `None` updates whatever version is
    /// stored.
    pub expected_version: Option<u64>,
}

/// What a store does with the vector of an updated record.
#[derive(Clone, Debug, PartialEq)]
pub enum VectorChange {
    /// Keep the stored vector.
    Keep,
    /// Remove it: the text changed and no new vector was given.
    Drop,
    /// Store this one.
    Set(Vec<f32>),
}

impl UpdateRequest {
    /// An unconditional update of the record at `at`.
    pub fn new(at: Locator, patch: Patch) -> Self {
        Self {
            at,
            patch,
            expected_version: None,
        }
    }

    /// Requires the record to still have `version`.
    pub fn expecting(mut self, version: Option<u64>) -> Self {
        self.expected_version = version;
        self
    }

    /// Checks what can be checked without the record (field rules and vector shape). Stores
    /// call [`UpdateRequest::apply`], which checks this and the merged record.
    pub fn validate(&self) -> Result<()> {
        let p = &self.patch;
        if matches!(p.content, Some(Value::Null)) {
            return Err(Error::invalid("content", "must not be null"));
        }
        if let Some((model, v)) = &p.embedding {
            if model.is_empty() {
                return Err(Error::invalid(
                    "embedding",
                    "a vector needs the id of the model that made it (embedding_model)",
                ));
            }
            crate::memory::check_vector(v)?;
        }
        if p.superseded_by.is_some() && p.state.is_some_and(|s| s != MemoryState::Superseded) {
            return Err(Error::conflicting(
                "superseded_by",
                "only a superseded memory names what superseded it",
            ));
        }
        Ok(())
    }

    /// The single definition of update semantics, called by every store inside its atomic
    /// step: given the live record the locator addresses (`None` if absent or expired), the
    /// updated record and what to do with its vector.
    ///
    /// * absent → [`Error::NotFound`]; another version than expected → [`Error::Conflict`];
    /// * identity (`id`, partition, key), `created_at` and access statistics are kept (the
    ///   access count grows by `add_access`);
    ///   `version` goes up by one and `updated_at` becomes `now`;
    /// * the merged record must pass the same field rules and size limit as a write.
    pub fn apply(
        &self,
        existing: Option<&Memory>,
        now: Timestamp,
        limits: &Limits,
    ) -> Result<(Memory, VectorChange)> {
        self.validate()?;
        let Some(old) = existing else {
            return Err(Error::NotFound(self.at.describe()));
        };
        if let Some(want) = self.expected_version
            && want != old.version
        {
            return Err(Error::Conflict(format!(
                "{} is at version {}, not {want}",
                self.at.describe(),
                old.version
            )));
        }
        let Patch {
            content,
            context,
            category,
            scope,
            user_id,
            agent_id,
            session_id,
            tags,
            metadata,
            importance,
            source,
            confidence,
            state,
            superseded_by,
            valid_from,
            valid_until,
            ttl,
            embedding,
            add_access,
        } = &self.patch;
        let mut m = old.clone();
        if let Some(c) = content {
            m.content = c.clone();
            m.content_hash = content_hash(&value_text(&m.content));
        }
        if let Some(c) = context {
            m.context = c.clone();
        }
        if let Some(c) = category {
            m.category = c.clone();
        }
        if let Some(s) = scope {
            m.scope = *s;
        }
        if let Some(u) = user_id {
            m.owner.user_id = u.clone();
        }
        if let Some(a) = agent_id {
            m.owner.agent_id = a.clone();
        }
        if let Some(s) = session_id {
            m.owner.session_id = s.clone();
        }
        if let Some(t) = tags {
            m.tags = t.clone();
        }
        if let Some(md) = metadata {
            m.metadata = md.clone();
        }
        if let Some(i) = importance {
            m.importance = *i;
        }
        if let Some(n) = add_access {
            m.access_count = m.access_count.saturating_add(*n);
        }
        if let Some(s) = source {
            m.source = s.clone();
        }
        if let Some(c) = confidence {
            m.confidence = *c;
        }
        if let Some(s) = state {
            m.state = *s;
        }
        if let Some(by) = superseded_by {
            m.superseded_by = Some(*by);
            m.state = MemoryState::Superseded;
        }
        if m.state != MemoryState::Superseded {
            m.superseded_by = None;
        } else if m.superseded_by.is_none() {
            return Err(Error::conflicting(
                "superseded_by",
                "a superseded memory must name the memory that replaced it",
            ));
        }
        if m.superseded_by == Some(m.id) {
            return Err(Error::conflicting(
                "superseded_by",
                "a memory cannot supersede itself",
            ));
        }
        if let Some(v) = valid_from {
            m.valid_from = *v;
        }
        if let Some(v) = valid_until {
            m.valid_until = *v;
        } else if old.state == MemoryState::Superseded && m.state == MemoryState::Active {
            // A superseded memory made active again is true again: the end its superseding
            // gave it goes with the link, unless this update gives one.
            m.valid_until = None;
        }
        if let Some(t) = ttl {
            m.expires_at = t.map(|t| now.plus(t.duration()));
        }
        let vector = match embedding {
            Some((model, v)) => {
                m.embedding_model = Some(model.clone());
                VectorChange::Set(v.clone())
            }
            None if self.patch.changes_text() => {
                m.embedding_model = None;
                VectorChange::Drop
            }
            None => VectorChange::Keep,
        };
        check_record(&m, limits)?;
        m.version = old.version.saturating_add(1);
        m.updated_at = now;
        Ok((m, vector))
    }
}
