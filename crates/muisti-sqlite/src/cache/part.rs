//! Reading a copy: nearest neighbours (exactly, or by HNSW above the threshold), BM25 and
//! the rescoring fields of the rows a filter admits.

use super::*;

impl Part {
    pub(super) fn new(cache: PartitionCache, budget: usize, grown: &Arc<AtomicBool>) -> Self {
        Self {
            bytes: AtomicUsize::new(cache.bytes()),
            data: RwLock::new(cache),
            ann: OnceLock::new(),
            ann_started: AtomicBool::new(false),
            ann_searches: AtomicU64::new(0),
            graph_bytes: AtomicUsize::new(0),
            budget,
            kept: AtomicBool::new(false),
            last_used: AtomicU64::new(0),
            grown: Arc::clone(grown),
        }
    }

    /// Its bytes per row (estimated, graph excluded).
    pub(crate) fn bytes_per_row(&self) -> usize {
        self.bytes.load(Ordering::Relaxed) / self.read().rows.len().max(1)
    }

    /// Marks it used at `tick`.
    pub(super) fn used(&self, tick: u64) {
        self.last_used.fetch_max(tick, Ordering::Relaxed);
    }

    /// The copy's bytes by what they are for, and the graph's (estimated).
    pub(crate) fn memory(&self) -> (super::CopyMemory, usize) {
        (
            self.read().memory(),
            self.graph_bytes.load(Ordering::Relaxed),
        )
    }

    /// Its bytes (estimated), graph included.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed) + self.graph_bytes.load(Ordering::Relaxed)
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, PartitionCache> {
        self.data.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the HNSW graph is built.
    pub(crate) fn ann_ready(&self) -> bool {
        self.ann.get().is_some()
    }

    /// Whether the HNSW graph is being built.
    pub(crate) fn ann_building(&self) -> bool {
        self.ann_started.load(Ordering::Relaxed) && !self.ann_ready()
    }

    /// How many searches the graph answered.
    pub(crate) fn ann_searches(&self) -> u64 {
        self.ann_searches.load(Ordering::Relaxed)
    }

    /// The ids of the first `take` live records after `after` that pass `filter` (which
    /// names `session`), in id order.
    pub(crate) fn session_page(
        &self,
        filter: &Filter,
        session: &str,
        after: Option<MemoryId>,
        take: usize,
        now: Timestamp,
    ) -> Vec<MemoryId> {
        self.read()
            .session_page(filter, session, after, take, now.as_millis())
    }

    /// The terms a search among the rows that pass `filter` looks for, of `query`'s
    /// `terms` ([`corrected`](muisti_core::text::corrected) with those rows' words).
    pub(crate) fn corrected(
        &self,
        query: &str,
        terms: Vec<String>,
        filter: &Filter,
        now: Timestamp,
    ) -> Vec<String> {
        let data = self.read();
        muisti_core::text::corrected(query, terms, |t| data.holds(filter, t, now))
    }

    /// See [`PartitionCache::bm25`].
    pub(crate) fn bm25(
        &self,
        filter: &Filter,
        terms: &[String],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        self.read().bm25(filter, terms, limit, now)
    }

    /// Nearest rows that pass a filter and are live at `now`. Exact while the rows in scope
    /// are fewer than the ANN threshold; above it, through the HNSW graph once built (the
    /// first such query starts building it in the background and is answered exactly
    /// meanwhile; rows added after the build are scanned exactly).
    pub(crate) fn nearest(
        self: &Arc<Self>,
        filter: &Filter,
        query: &[f32],
        limit: usize,
        now: Timestamp,
    ) -> Vec<Scored> {
        let data = self.read();
        if query.len() != data.dim {
            return Vec::new();
        }
        let now = now.as_millis();
        if data.wants_ann(filter) {
            match self.ann.get() {
                Some((graph, covered)) => {
                    if let Some(found) =
                        data.nearest_ann(graph, *covered, filter, query, limit, now)
                    {
                        self.ann_searches.fetch_add(1, Ordering::Relaxed);
                        return found;
                    }
                }
                // Only a copy the cache keeps gets a graph, and only if both fit the budget.
                None if self.kept.load(Ordering::Relaxed)
                    && self.bytes() + data.graph_bytes() <= self.budget
                    && !self.ann_started.swap(true, Ordering::AcqRel) =>
                {
                    let me = Arc::clone(self);
                    let _ =
                        std::thread::Builder::new()
                            .name("muisti-ann".into())
                            .spawn(move || {
                                // The vectors are copied under the lock; the graph is built
                                // without it, so writes are not held up.
                                let (input, covered, graph_bytes) = {
                                    let data = me.read();
                                    (data.ann_input(), data.rows.len(), data.graph_bytes())
                                };
                                if me.ann.set((build_ann(&input), covered)).is_ok() {
                                    me.graph_bytes.store(graph_bytes, Ordering::Relaxed);
                                    me.grown.store(true, Ordering::Relaxed);
                                }
                            });
                }
                None => {}
            }
        }
        data.nearest_exact(filter, query, limit, now)
    }

    /// Applies this process's committed writes; `false` if the copy has so many replaced
    /// rows that it should be loaded afresh instead.
    pub(super) fn apply(&self, fresh: Vec<Fresh>) -> bool {
        let mut data = self.data.write().unwrap_or_else(|p| p.into_inner());
        for f in fresh {
            data.replace(f);
        }
        self.bytes.store(data.bytes(), Ordering::Relaxed);
        data.dead <= 1_000.max(data.rows.len() / 4)
    }

    /// Applies this process's committed delete of `id`; `false` if the copy has so many
    /// dead rows that it should be loaded afresh instead.
    pub(super) fn kill(&self, id: &MemoryId) -> bool {
        let mut data = self.data.write().unwrap_or_else(|p| p.into_inner());
        data.kill(id);
        self.bytes.store(data.bytes(), Ordering::Relaxed);
        data.dead <= 1_000.max(data.rows.len() / 4)
    }
}

/// An HNSW graph over these vectors (ids are row indexes).
pub(super) fn build_ann(vectors: &[(Vec<f32>, usize)]) -> Hnsw<'static, f32, DistDot> {
    let hnsw = Hnsw::<f32, DistDot>::new(16, vectors.len().max(1), 16, 100, DistDot {});
    let refs: Vec<(&Vec<f32>, usize)> = vectors.iter().map(|(v, i)| (v, *i)).collect();
    hnsw.parallel_insert(&refs);
    let mut hnsw = hnsw;
    hnsw.set_searching_mode(true);
    hnsw
}

/// Rows scored against a query vector: each row with its vector's slot, and its score.
#[derive(Default)]
pub(super) struct Scores {
    pub(super) rows: Vec<(usize, usize)>,
    pub(super) scores: Vec<f32>,
}

/// The rows a filter can match ([`PartitionCache::scope`]).
pub(super) enum Scope<'a> {
    /// One user's.
    Rows(std::slice::Iter<'a, u32>),
    /// Every row.
    All(std::ops::Range<usize>),
}

/// What is left of `filter` to check on the rows [`PartitionCache::scope`] yields: `None`
/// when it asks for nothing but the user (then only liveness is checked).
pub(super) fn rest_of(filter: &Filter) -> Option<std::borrow::Cow<'_, Filter>> {
    let rest = if filter.user_id.is_some() {
        std::borrow::Cow::Owned(Filter {
            user_id: None,
            ..filter.clone()
        })
    } else {
        std::borrow::Cow::Borrowed(filter)
    };
    (*rest != Filter::default()).then_some(rest)
}

impl Iterator for Scope<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Scope::Rows(rows) => rows.next().map(|&i| i as usize),
            Scope::All(rows) => rows.next(),
        }
    }
}
