//! Recall's sources: the queries a recall puts to the store's retrievers, the candidates
//! they give (or a cluster's members and the archive give, ranked the same way), and the
//! seed's token-overlap scan.

use std::collections::HashMap;

use muisti_core::{
    Memory, MemoryId, Partition, Result, Scored, Store, TextQuery, VectorQuery, rank::token_overlap,
};

use super::{RecallHit, RecallMode, RecallRequest, Signals};

/// Recall's candidates from outside the store's indexes (a cluster's members, archived
/// memories): both ranked lists and the records read on the way (by id).
#[derive(Default)]
pub(crate) struct Candidates {
    pub(crate) lexical: Vec<Scored>,
    pub(crate) vector: Vec<Scored>,
    pub(crate) records: HashMap<MemoryId, Memory>,
}

impl Candidates {
    /// Ranks `records` for a query as the store's retrievers would, among themselves: BM25
    /// over their indexed text (unless `lexical` is false) and the nearest of `vectors` to
    /// the query's vector (if any). The one way recall scores memories it read itself.
    pub(crate) fn rank<'a>(
        records: Vec<Memory>,
        vectors: impl IntoIterator<Item = (MemoryId, &'a [f32])>,
        query: &str,
        query_vector: Option<&[f32]>,
        lexical: bool,
        limit: usize,
    ) -> Self {
        let lexical = if lexical {
            let texts: Vec<(MemoryId, String, Option<String>)> = records
                .iter()
                .map(|m| (m.id, m.index_text().into_owned(), m.context.clone()))
                .collect();
            muisti_core::text::Bm25::default().rank(
                texts
                    .iter()
                    .map(|(id, t, c)| (*id, t.as_str(), c.as_deref())),
                query,
                limit,
            )
        } else {
            Vec::new()
        };
        let vector = match query_vector {
            Some(q) => muisti_core::text::nearest(vectors, q, limit),
            None => Vec::new(),
        };
        Self {
            lexical,
            vector,
            records: records.into_iter().map(|m| (m.id, m)).collect(),
        }
    }

    /// The store's own candidates for a recall in `mode`: its full-text index's (unless the
    /// recall is by vector alone) and its vector index's nearest to `query_vector` (when the
    /// recall has one), `n` of each.
    pub(crate) fn from_store(
        store: &dyn Store,
        partition: &Partition,
        req: &RecallRequest,
        query_vector: Option<&[f32]>,
        n: usize,
    ) -> Result<Self> {
        let lexical = if req.mode == RecallMode::Vector {
            Vec::new()
        } else {
            store.text_search(&text_query(partition.clone(), req, n))?
        };
        let vector = match query_vector {
            Some(q) => store.vector_search(&vector_query(partition.clone(), req, q.to_vec(), n))?,
            None => Vec::new(),
        };
        Ok(Self {
            lexical,
            vector,
            records: HashMap::new(),
        })
    }

    /// These candidates and `more`, each list merged best first and cut to `limit`.
    pub(crate) fn merge(mut self, more: Candidates, limit: usize) -> Self {
        self.lexical = merge_scored(self.lexical, more.lexical, limit);
        self.vector = merge_scored(self.vector, more.vector, limit);
        self.records.extend(more.records);
        self
    }
}

/// Merges two lists of scored candidates into one, best first, at most `limit`.
fn merge_scored(mut a: Vec<Scored>, b: Vec<Scored>, limit: usize) -> Vec<Scored> {
    a.extend(b);
    a.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.id.cmp(&y.id)));
    a.truncate(limit);
    a
}

/// The seed's token-overlap ranking as recall hits (relevance = shared words / the best's).
pub(crate) fn overlap(all: Vec<Memory>, query: &str, limit: usize) -> Vec<RecallHit> {
    let hits = token_overlap(all, query, limit);
    let best = hits.first().map_or(1.0, |h| h.score) as f32;
    hits.into_iter()
        .map(|h| {
            let relevance = h.score as f32 / best;
            RecallHit {
                memory: std::sync::Arc::new(h.memory),
                score: relevance,
                signals: Signals {
                    lexical_score: Some(h.score as f32),
                    relevance,
                    ..Signals::default()
                },
            }
        })
        .collect()
}

/// A full-text query for a recall.
fn text_query(p: Partition, req: &RecallRequest, n: usize) -> TextQuery {
    TextQuery {
        partition: p,
        query: req.query.clone(),
        filter: req.filter.clone(),
        limit: n,
    }
}

/// A vector query for a recall.
fn vector_query(p: Partition, req: &RecallRequest, vector: Vec<f32>, n: usize) -> VectorQuery {
    VectorQuery {
        partition: p,
        vector,
        filter: req.filter.clone(),
        limit: n,
    }
}
