//! An in-memory copy of each partition's vectors, so nearest-neighbour search does not read
//! and decode every row's blob on every query.
//!
//! Consistency: this process's writes invalidate the partitions they touch (after commit);
//! commits by other connections or processes show in `PRAGMA data_version` and invalidate
//! everything. A load that raced an invalidation is not kept (generation check).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard},
};

use engram_core::{Filter, MemoryId, Owner, Partition, Scored, Timestamp, text};

/// The vectors of one partition with the fields simple filters look at. Vectors of the
/// partition's length are stored contiguously; rows are indexed by user.
#[derive(Default)]
pub(crate) struct PartVectors {
    rows: Vec<VectorRow>,
    dim: usize,
    /// `rows.len() × dim` values; row `i` at `i × dim`.
    data: Vec<f32>,
    by_user: HashMap<String, Vec<u32>>,
}

pub(crate) struct VectorRow {
    pub(crate) id: MemoryId,
    pub(crate) owner: Owner,
    pub(crate) category: String,
    pub(crate) scope: String,
    pub(crate) created_at: i64,
    pub(crate) expires_at: Option<i64>,
}

impl PartVectors {
    /// Adds a row; a vector of another length than the first is left out (it cannot match a
    /// query of the partition's model anyway).
    pub(crate) fn push(&mut self, row: VectorRow, v: &[f32]) {
        if self.rows.is_empty() {
            self.dim = v.len();
        }
        if v.len() != self.dim {
            return;
        }
        let i = self.rows.len() as u32;
        if let Some(u) = &row.owner.user_id {
            self.by_user.entry(u.clone()).or_default().push(i);
        }
        self.rows.push(row);
        self.data.extend_from_slice(v);
    }

    /// Nearest rows that pass a filter answerable from the cached fields (see
    /// [`answerable`]) and are live at `now`.
    pub(crate) fn nearest(
        &self,
        filter: &Filter,
        query: &[f32],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        if query.len() != self.dim {
            return Vec::new();
        }
        let now = now.as_millis();
        let live = |i: usize| {
            let r = &self.rows[i];
            r.expires_at.is_none_or(|t| t > now) && matches(filter, r)
        };
        let vector = |i: usize| {
            (
                self.rows[i].id,
                &self.data[i * self.dim..(i + 1) * self.dim],
            )
        };
        match &filter.user_id {
            Some(u) => text::nearest(
                self.by_user
                    .get(u)
                    .into_iter()
                    .flatten()
                    .map(|&i| i as usize)
                    .filter(|&i| live(i))
                    .map(vector),
                query,
                limit,
            ),
            None => text::nearest(
                (0..self.rows.len()).filter(|&i| live(i)).map(vector),
                query,
                limit,
            ),
        }
    }
}

/// Whether the cache can apply this filter (tags and metadata need the full record).
pub(crate) fn answerable(filter: &Filter) -> bool {
    filter.tags.is_empty() && filter.metadata.is_empty() && filter.content_hash.is_none()
}

fn matches(f: &Filter, r: &VectorRow) -> bool {
    fn eq(want: &Option<String>, have: &Option<String>) -> bool {
        want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
    }
    eq(&f.user_id, &r.owner.user_id)
        && eq(&f.agent_id, &r.owner.agent_id)
        && eq(&f.session_id, &r.owner.session_id)
        && f.category.as_ref().is_none_or(|c| c.as_str() == r.category)
        && f.scope.is_none_or(|s| s.as_str() == r.scope)
        && f.created_after
            .is_none_or(|t| r.created_at >= t.as_millis())
        && f.created_before
            .is_none_or(|t| r.created_at < t.as_millis())
}

#[derive(Default)]
struct State {
    /// `PRAGMA data_version` of the writer connection when the cache was last validated.
    data_version: Option<i64>,
    generation: u64,
    parts: HashMap<Partition, Arc<PartVectors>>,
}

/// The cache.
#[derive(Default)]
pub(crate) struct VectorCache {
    state: Mutex<State>,
}

impl VectorCache {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets one partition (after this process wrote to it).
    pub(crate) fn invalidate(&self, p: &Partition) {
        let mut s = self.lock();
        s.generation += 1;
        s.parts.remove(p);
    }

    /// Forgets everything.
    pub(crate) fn invalidate_all(&self) {
        let mut s = self.lock();
        s.generation += 1;
        s.parts.clear();
    }

    /// The partition's vectors, loaded with `load` unless cached and still valid for
    /// `data_version` (`None`: not checked this time).
    pub(crate) fn get(
        &self,
        p: &Partition,
        data_version: Option<i64>,
        load: impl FnOnce() -> engram_core::Result<PartVectors>,
    ) -> engram_core::Result<Arc<PartVectors>> {
        let generation = {
            let mut s = self.lock();
            if let Some(v) = data_version
                && s.data_version != Some(v)
            {
                s.data_version = Some(v);
                s.generation += 1;
                s.parts.clear();
            }
            if let Some(part) = s.parts.get(p) {
                return Ok(Arc::clone(part));
            }
            s.generation
        };
        let part = Arc::new(load()?);
        let mut s = self.lock();
        if s.generation == generation {
            s.parts.insert(p.clone(), Arc::clone(&part));
        }
        Ok(part)
    }
}
