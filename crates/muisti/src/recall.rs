//! Hybrid recall: full-text and vector candidates, fused, then rescored by recency, access
//! and importance.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use muisti_core::{
    Filter, IdMap, Memory, MemoryId, Namespace, RankFields, Scored, TextQuery, Timestamp,
    VectorQuery, rank::token_overlap,
};
use serde::{Deserialize, Serialize};

/// Which retrievers a recall uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecallMode {
    /// Full-text and vector candidates, fused (the default).
    #[default]
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Vectors only.
    Vector,
    /// The seed's token-overlap rule (shared words of three or more letters), for
    /// compatibility.
    Overlap,
}

impl RecallMode {
    /// Every mode.
    pub const ALL: [RecallMode; 4] = [
        RecallMode::Hybrid,
        RecallMode::Lexical,
        RecallMode::Vector,
        RecallMode::Overlap,
    ];
}

impl std::str::FromStr for RecallMode {
    type Err = muisti_core::Error;

    /// `hybrid`, `lexical`, `vector` or `overlap`: the one spelling of every face.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hybrid" => Ok(Self::Hybrid),
            "lexical" => Ok(Self::Lexical),
            "vector" => Ok(Self::Vector),
            "overlap" => Ok(Self::Overlap),
            _ => Err(muisti_core::Error::invalid(
                "mode",
                "must be hybrid, lexical, vector or overlap",
            )),
        }
    }
}

/// How full-text and vector rankings are combined.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fusion {
    /// Reciprocal rank fusion: `Σ 1 / (k + rank)`. Needs no score calibration.
    Rrf {
        /// The damping constant (60 in the literature).
        k: f32,
    },
    /// `lexical × bm25_normalised + (1 − lexical) × cosine`, BM25 min-max normalised per
    /// query.
    Weighted {
        /// The weight of the lexical score, 0 to 1.
        lexical: f32,
    },
    /// Relevance on a fixed scale, not relative to the query's best candidate: `lexical ×
    /// min(bm25, 1) + (1 − lexical) × max(cosine, 0)`, where the full-text score is already
    /// the share of the query a memory matches ([`Bm25::finish`](muisti_core::text::Bm25::finish)),
    /// so a memory that matches all of the query scores near 1 and one nothing in the query
    /// matches near 0, whatever else is there, in a store of any size. Recency, access and
    /// importance then scale relevance down by at most their share of the weights
    /// ([`Fusion::is_absolute`]). The default ([`RELEVANT_SCORE`] says what a score means).
    Absolute {
        /// The weight of the lexical score, 0 to 1.
        lexical: f32,
    },
}

impl Fusion {
    /// Whether scores are absolute (comparable across queries; [`Fusion::Absolute`]) rather
    /// than relative to the best candidate of the query.
    pub fn is_absolute(self) -> bool {
        matches!(self, Fusion::Absolute { .. })
    }
}

/// Weights of the signals in the final score (normalised by their sum).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// Semantic and lexical relevance to the query.
    pub relevance: f32,
    /// How recently the memory was written (exponential decay).
    pub recency: f32,
    /// How often it was recalled (log-scaled).
    pub access: f32,
    /// Its importance (0 to 1).
    pub importance: f32,
}

/// Recall settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallConfig {
    /// How the two rankings are combined.
    pub fusion: Fusion,
    /// Candidates taken from each retriever (at least the requested limit).
    pub candidates: usize,
    /// Signal weights.
    pub weights: Weights,
    /// Recency half-life.
    pub half_life: Duration,
    /// Count an access on every recalled memory.
    pub track_access: bool,
    /// A memory written without a key whose content (normalised) already exists for the
    /// same owner in the namespace is not stored again: the existing one is returned and
    /// counts an access.
    pub dedupe: bool,
    /// Graph-aware recall: the weight of the graph's evidence in relevance (0, the
    /// default, leaves the graph out). A memory the graph links to an entity the query
    /// names (or to a fact at its ends) gains `graph ×` its evidence weight
    /// ([`Engine::graph_evidence`](crate::Engine::graph_evidence)) before relevance is
    /// normalised, and such memories join the candidates even when neither retriever found
    /// them.
    #[serde(default)]
    pub graph: f32,
    /// The temporal strategy: the weight in relevance of a memory's time falling in a
    /// period the query names ("in May 2023", "last summer": [`crate::temporal`]); 0 leaves
    /// it out. A candidate whose time ([`RankFields::time`]) is in such a period, or up to
    /// [`RecallConfig::temporal_after`] later, gains this much.
    #[serde(default)]
    pub temporal: f32,
    /// How long after a period a memory still counts as speaking of it (people tell of
    /// events after they happen).
    #[serde(default)]
    pub temporal_after: Duration,
    /// The temporal strategy also reads the contenders' own time expressions ("last month",
    /// "in May"), resolved against each one's time: a memory whose text names a period
    /// that meets one the query names ([`Period::overlaps`](crate::temporal::Period::overlaps))
    /// matches as one dated in it does.
    /// Costs one read of the contenders' records, only for queries that name a period.
    /// Off by default: on the LoCoMo dev set it changed one question's recall, for the
    /// worse (docs/recall.md).
    #[serde(default)]
    pub temporal_text: bool,
    /// Neighbourhood evidence: how relevant the memory written next in the same session as a
    /// relevant hit is at least, as a share of that hit's relevance (a conversation's answer
    /// follows its question). Each of the [`NEIGHBOUR_SEEDS`] most relevant candidates at or
    /// above [`RELEVANT_SCORE`] raises its session's next memory to this times its own
    /// relevance; 0 leaves it out, below 1 keeps a neighbour under the hit that lifted it.
    #[serde(default)]
    pub neighbours: f32,
    /// Word-level matching by meaning: the weight in relevance of the share of the query's
    /// words that a memory matches by meaning but not by the words themselves ("cities" and
    /// "Tokyo"), token by token with the embedder's vectors of single tokens
    /// ([`muisti_embed::WordMatcher`]; a static model has them, the built-in one does). The
    /// [`RecallConfig::words_pool`] most relevant contenders are scored (their records are
    /// read); 0 leaves it out, as does an embedder without token vectors or a lexical-only
    /// recall.
    #[serde(default = "default_words")]
    pub words: f32,
    /// Word-level matching's floor: a cosine between two tokens' vectors at or below it
    /// counts nothing, above it `(c − floor) / (1 − floor)`.
    #[serde(default = "default_words_floor")]
    pub words_floor: f32,
    /// How many of the most relevant contenders word-level matching scores (default
    /// [`WORD_POOL`]): more finds more, and each costs a record read and its tokens'
    /// cosines.
    #[serde(default = "default_words_pool")]
    pub words_pool: usize,
}

fn default_words() -> f32 {
    DEFAULT_WORDS
}

fn default_words_floor() -> f32 {
    DEFAULT_WORDS_FLOOR
}

fn default_words_pool() -> usize {
    WORD_POOL
}

/// The score at and above which a hit is a match (with the default, absolute scores): the
/// memory holds a fair share of the query's words, weighted by how rare each is.
///
/// What a score means with the default (`Fusion::Absolute { lexical: 0.9 }`): 0.9 × the share
/// of the query the memory matches (BM25 over the query's attainable score, at most 1) + 0.1
/// × the cosine of their vectors, then scaled down by at most a fifth for an old,
/// never-recalled, unimportant memory. About 0.8 and above: the memory holds (nearly) all of
/// the query's words; 0.5: about half of the query's weight; below 0.3: a weak or incidental
/// match; below 0.1: no word in common (a match by meaning alone, which the built-in model's
/// vectors give only weakly). On the LoCoMo dev set a question's best hit scores 0.60
/// (median; p10 0.29) and the best hit of another conversation's question asked of the same
/// memories 0.20 (median; p90 0.34) (`muisti bench locomo` prints these quantiles).
pub const RELEVANT_SCORE: f32 = 0.3;

/// The temporal strategy's default weight ([`RecallConfig::temporal`]): chosen by
/// leave-one-conversation-out on the LoCoMo dev set among 0, 0.05, 0.1, 0.2 and 0.4 (0.1 on
/// four folds of five, 0.2 on the other; docs/recall.md). Small beside lexical relevance, so
/// a memory of the named period gains order among comparable matches and an unrelated one
/// stays below [`RELEVANT_SCORE`] unless it already scores 0.2.
pub const DEFAULT_TEMPORAL: f32 = 0.1;

/// Neighbourhood evidence's default weight ([`RecallConfig::neighbours`]), chosen by
/// leave-one-conversation-out on the LoCoMo dev set (docs/recall.md).
pub const DEFAULT_NEIGHBOURS: f32 = 0.8;

/// Word-level matching's default weight ([`RecallConfig::words`]), chosen by
/// leave-one-conversation-out on the LoCoMo dev set (docs/recall.md).
pub const DEFAULT_WORDS: f32 = 0.5;

/// Word-level matching's default cosine floor ([`RecallConfig::words_floor`]), chosen with
/// its weight.
pub const DEFAULT_WORDS_FLOOR: f32 = 0.2;

/// How many of the most relevant contenders word-level matching scores by default
/// ([`RecallConfig::words_pool`]), chosen by leave-one-conversation-out on the LoCoMo dev
/// set (docs/recall.md).
pub const WORD_POOL: usize = 30;

/// How many of the most relevant candidates lift the memory written after them in their
/// session ([`RecallConfig::neighbours`]).
pub const NEIGHBOUR_SEEDS: usize = 5;

impl Default for RecallConfig {
    fn default() -> Self {
        Self {
            // Chosen leave-one-conversation-out on the LoCoMo dev set (docs/recall.md).
            fusion: Fusion::Absolute { lexical: 0.9 },
            candidates: 50,
            weights: Weights {
                relevance: 1.0,
                recency: 0.1,
                access: 0.05,
                importance: 0.1,
            },
            half_life: Duration::from_secs(30 * 24 * 3600),
            track_access: true,
            dedupe: true,
            graph: 0.0,
            temporal: DEFAULT_TEMPORAL,
            temporal_after: Duration::ZERO,
            temporal_text: false,
            neighbours: DEFAULT_NEIGHBOURS,
            words: DEFAULT_WORDS,
            words_floor: DEFAULT_WORDS_FLOOR,
            words_pool: WORD_POOL,
        }
    }
}

/// A recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecallRequest {
    /// Where to look.
    pub namespace: Namespace,
    /// The message or question.
    pub query: String,
    /// How many memories at most.
    pub limit: usize,
    /// Which memories may be returned.
    #[serde(default)]
    pub filter: Filter,
    /// Drop hits scoring below this (scores are 0 to 1).
    #[serde(default)]
    pub min_score: Option<f32>,
    /// Retrievers.
    #[serde(default)]
    pub mode: RecallMode,
    /// Archived memories too: their objects are read and scored beside the others (slower:
    /// one object read per archived memory the filter admits).
    #[serde(default)]
    pub include_archived: bool,
    /// Only the memories of this cluster of the filter's user
    /// ([`crate::lifecycle::cluster`]; needs `filter.user_id`).
    #[serde(default)]
    pub cluster: Option<u32>,
}

impl RecallRequest {
    /// The rules of a recall every face shares: a query that is not blank (a blank one has
    /// nothing to be relevant to; list memories to read them all).
    pub fn validate(&self) -> muisti_core::Result<()> {
        if self.query.trim().is_empty() {
            return Err(muisti_core::Error::invalid(
                "query",
                "must not be empty: give the message or question to recall for (list memories to read them all)",
            ));
        }
        Ok(())
    }

    /// The top `limit` of `namespace` for `query`, hybrid, no filter.
    pub fn new(namespace: Namespace, query: impl Into<String>, limit: usize) -> Self {
        Self {
            namespace,
            query: query.into(),
            limit,
            filter: Filter::default(),
            min_score: None,
            mode: RecallMode::Hybrid,
            include_archived: false,
            cluster: None,
        }
    }
}

/// Why a memory was recalled: every signal of its score.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Rank in the full-text results (1 is best), if it was there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical_rank: Option<u32>,
    /// BM25 score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lexical_score: Option<f32>,
    /// Rank in the vector results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<u32>,
    /// Cosine similarity to the query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f32>,
    /// The graph's evidence for it, 0 to 1 (graph-aware recall only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<f32>,
    /// What the full-text strategy added to the fused score (its weight × its score on the
    /// fusion's scale), if it found the memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_lexical: Option<f32>,
    /// What the vector strategy added to the fused score, if it found the memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_vector: Option<f32>,
    /// What the graph added to the fused score (graph-aware recall only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_graph: Option<f32>,
    /// What the temporal strategy added: the memory's time is in a period the query names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_time: Option<f32>,
    /// What neighbourhood evidence added: the memory written just before it in its session
    /// is a relevant hit ([`RecallConfig::neighbours`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_neighbour: Option<f32>,
    /// What word-level matching added: the memory matches some of the query's words by
    /// meaning ([`RecallConfig::words`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_words: Option<f32>,
    /// Fused relevance, 0 to 1: the strategies' parts summed, as they are (at most 1) with
    /// [`Fusion::Absolute`], else relative to the query's most relevant candidate (1).
    pub relevance: f32,
    /// With [`Fusion::Absolute`]: what recency, access and importance multiply relevance by
    /// (between 1 minus their share of the weights and 1); the score is `relevance × boost`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost: Option<f32>,
    /// Recency, 0 to 1 (1 now, 0.5 one half-life ago).
    pub recency: f32,
    /// Access frequency, 0 to 1, log-scaled.
    pub access: f32,
    /// Importance, 0 to 1.
    pub importance: f32,
}

/// A recalled memory with its score and signals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RecallHit {
    /// The memory: shared with the store's record cache where it keeps one, so a recall
    /// copies no record (`Arc::unwrap_or_clone` gives one of your own).
    pub memory: std::sync::Arc<Memory>,
    /// The final score, 0 to 1.
    pub score: f32,
    /// What produced the score.
    pub signals: Signals,
}

/// Fused candidates: per id, its relevance (0 to 1) and what produced it.
pub(crate) type Fused = IdMap<(f32, Signals)>;

/// The candidates of both retrievers, fused into one relevance per id (0 to 1).
pub(crate) fn fuse(fusion: Fusion, lexical: &[Scored], vector: &[Scored]) -> Fused {
    let mut out: Fused =
        Fused::with_capacity_and_hasher(lexical.len() + vector.len(), Default::default());
    let weight = |lexical_list: bool| match fusion {
        Fusion::Rrf { .. } => 1.0,
        Fusion::Weighted { lexical } | Fusion::Absolute { lexical } if lexical_list => lexical,
        Fusion::Weighted { lexical } | Fusion::Absolute { lexical } => 1.0 - lexical,
    };
    for (i, (s, part)) in lexical
        .iter()
        .zip(contributions(fusion, lexical, weight(true)))
        .enumerate()
    {
        let e = out.entry(s.id).or_default();
        e.1.lexical_rank = Some(i as u32 + 1);
        e.1.lexical_score = Some(s.score);
        e.1.from_lexical = Some(part);
        e.0 += part;
    }
    for (i, (s, part)) in vector
        .iter()
        .zip(contributions(fusion, vector, weight(false)))
        .enumerate()
    {
        let e = out.entry(s.id).or_default();
        e.1.vector_rank = Some(i as u32 + 1);
        e.1.similarity = Some(s.score);
        e.1.from_vector = Some(part);
        e.0 += part;
    }
    normalise(fusion, &mut out);
    out
}

/// Relevance from fused scores: relative to the best candidate (RRF, weighted), or as it is,
/// at most 1 (absolute).
fn normalise(fusion: Fusion, fused: &mut Fused) {
    let best = fused.values().map(|(f, _)| *f).fold(0.0f32, f32::max);
    for (f, sig) in fused.values_mut() {
        *f = if fusion.is_absolute() {
            f.clamp(0.0, 1.0)
        } else if best > 0.0 {
            *f / best
        } else {
            0.0
        };
        sig.relevance = *f;
    }
}

/// Adds the graph's evidence to fused candidates: each memory with evidence `g` gains
/// `weight × g` (a memory only the graph found joins with that alone), and relevance is
/// made again by the fusion's rule ([`normalise`]).
pub(crate) fn with_graph(
    fusion: Fusion,
    fused: &mut Fused,
    evidence: &HashMap<MemoryId, f32>,
    weight: f32,
) {
    for (id, g) in evidence {
        let e = fused.entry(*id).or_default();
        e.1.graph = Some(*g);
        e.1.from_graph = Some(weight * g);
        e.0 += weight * g;
    }
    normalise(fusion, fused);
}

/// Whether a memory speaks of one of `periods` (the temporal strategy's one rule): its
/// time falls in one (or up to `config.temporal_after` later), or, when `text` is given, a
/// period its text names, resolved against its time ("last week", said on 12 June), meets
/// one ([`told_of`]).
pub(crate) fn speaks_of(
    config: &RecallConfig,
    periods: &[crate::temporal::Period],
    time: Timestamp,
    text: Option<&str>,
) -> bool {
    periods
        .iter()
        .any(|p| p.contains(time, config.temporal_after))
        || text.is_some_and(|text| told_of(periods, time, text))
}

/// The text half of [`speaks_of`]: whether a period `text` names, resolved against the
/// memory's `time`, meets one of `periods`.
pub(crate) fn told_of(periods: &[crate::temporal::Period], time: Timestamp, text: &str) -> bool {
    crate::temporal::periods(text, time)
        .iter()
        .any(|own| periods.iter().any(|p| p.overlaps(own)))
}

/// Adds the temporal strategy's part to fused candidates: each of `matched` (those that
/// [`speaks_of`] a period the query names) gains `config.temporal`, and relevance is made
/// again by the fusion's rule ([`normalise`]).
pub(crate) fn with_time(config: &RecallConfig, fused: &mut Fused, matched: &HashSet<MemoryId>) {
    for id in matched {
        if let Some(e) = fused.get_mut(id) {
            e.1.from_time = Some(config.temporal);
            e.0 += config.temporal;
        }
    }
    normalise(config.fusion, fused);
}

/// The seeds of neighbourhood evidence: the [`NEIGHBOUR_SEEDS`] most relevant of `ids` whose
/// relevance is at least [`RELEVANT_SCORE`], best first.
pub(crate) fn neighbour_seeds(fused: &Fused, ids: &[MemoryId]) -> Vec<(MemoryId, f32)> {
    let mut seeds: Vec<(MemoryId, f32)> = ids
        .iter()
        .filter_map(|id| fused.get(id).map(|(_, s)| (*id, s.relevance)))
        .filter(|(_, r)| *r >= RELEVANT_SCORE)
        .collect();
    seeds.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    seeds.truncate(NEIGHBOUR_SEEDS);
    seeds
}

/// Adds neighbourhood evidence to fused candidates: each `(next, seed relevance)` raises the
/// relevance of the memory `next` to `weight × seed relevance` if it is lower (the highest
/// when several seeds name it; a memory no retriever found joins with that alone). With a
/// weight below 1 a neighbour ranks under the hit that lifted it, so the best hit stays
/// first. Relevance is made again by the fusion's rule ([`normalise`]).
pub(crate) fn with_neighbours(
    fusion: Fusion,
    fused: &mut Fused,
    lifts: &[(MemoryId, f32)],
    weight: f32,
) {
    let mut best: IdMap<f32> = IdMap::default();
    for (id, seed) in lifts {
        let lift = weight * seed;
        let e = best.entry(*id).or_insert(lift);
        *e = e.max(lift);
    }
    for (id, lift) in best {
        let e = fused.entry(id).or_default();
        if lift > e.0 {
            e.1.from_neighbour = Some(lift - e.0);
            e.0 = lift;
        }
    }
    normalise(fusion, fused);
}

/// The words word-level matching leaves out ([`muisti_embed::Embedder::word_matcher`]'s
/// `skip`): stop words. The one definition recall and the reading of memories' words as they
/// are written ([`muisti_embed::Embedder::prepare_words`]) share.
pub(crate) const WORD_SKIP: fn(&str) -> bool = muisti_core::text::is_stop_word;

/// The pool word-level matching scores: the `len` ([`RecallConfig::words_pool`]) most
/// relevant of `ids`, best first (ties by id).
pub(crate) fn word_pool(
    fused: &Fused,
    ids: impl IntoIterator<Item = MemoryId>,
    len: usize,
) -> Vec<MemoryId> {
    let mut pool: Vec<(MemoryId, f32)> = ids
        .into_iter()
        .filter_map(|id| fused.get(&id).map(|(r, _)| (id, *r)))
        .collect();
    pool.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    pool.dedup_by_key(|(id, _)| *id);
    pool.truncate(len);
    pool.into_iter().map(|(id, _)| id).collect()
}

/// Adds word-level matching to fused candidates: each `(id, share)` (the share of the query
/// it matches by meaning, 0 to 1) gains `weight × share`, and relevance is made again by the
/// fusion's rule ([`normalise`]).
pub(crate) fn with_words(
    fusion: Fusion,
    fused: &mut Fused,
    shares: &[(MemoryId, f32)],
    weight: f32,
) {
    for (id, share) in shares {
        let part = weight * share;
        if part > 0.0
            && let Some(e) = fused.get_mut(id)
        {
            e.1.from_words = Some(part);
            e.0 += part;
        }
    }
    normalise(fusion, fused);
}

/// The candidates that can still reach the top `limit` once recency, access and importance
/// are added: those whose relevance is within `(w_recency + w_access + w_importance) /
/// w_relevance` of the `limit`-th best (the others cannot overtake it), or within what later
/// strategies may still add to them ([`Lifts`]). Only these are read. Best first (ties by id).
pub(crate) fn contenders(
    config: &RecallConfig,
    fused: &Fused,
    limit: usize,
    lifts: Lifts,
) -> Vec<MemoryId> {
    let w = config.weights;
    let order = |a: &(MemoryId, f32), b: &(MemoryId, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    let mut by_relevance: Vec<(MemoryId, f32)> =
        fused.iter().map(|(id, (r, _))| (*id, *r)).collect();
    let k = limit.saturating_sub(1);
    if by_relevance.len() <= k {
        by_relevance.sort_by(order);
        return by_relevance.into_iter().map(|(id, _)| id).collect();
    }
    // The k-th best alone is needed to know who is in; only those are sorted.
    let kth = by_relevance.select_nth_unstable_by(k, order).1.1;
    // Absolute: a score is relevance scaled by a factor in [1 − boost share, 1], so a
    // candidate can overtake the k-th only if its relevance is at least (1 − share) × kth.
    let floor = if config.fusion.is_absolute() {
        kth * (1.0 - boost_share(&w))
    } else if w.relevance > 0.0 {
        kth - (w.recency + w.access + w.importance) / w.relevance
    } else {
        f32::NEG_INFINITY
    } - lifts.any;
    by_relevance.retain(|(_, r)| *r >= floor - lifts.best_more);
    by_relevance.sort_by(order);
    by_relevance
        .into_iter()
        .enumerate()
        .filter(|(rank, (_, r))| *rank < lifts.best || *r >= floor)
        .map(|(_, (id, _))| id)
        .collect()
}

/// What strategies applied after [`contenders`] are chosen may still add to a candidate's
/// relevance: a candidate they can lift into the top must be read.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lifts {
    /// What any candidate may gain (the temporal strategy's weight).
    pub(crate) any: f32,
    /// How many of the most relevant may gain [`Lifts::best_more`] besides (word matching
    /// scores only the [`RecallConfig::words_pool`] best: the others cannot gain its part).
    pub(crate) best: usize,
    pub(crate) best_more: f32,
}

/// The share of the weights that recency, access and importance hold: with absolute scores,
/// the most they can take off a memory's relevance.
fn boost_share(w: &Weights) -> f32 {
    let boosts = w.recency + w.access + w.importance;
    let total = (w.relevance + boosts).max(f32::EPSILON);
    (boosts / total).clamp(0.0, 1.0)
}

/// What each entry of one ranked list adds to its candidate's fused score: `1 / (k + rank)`
/// for RRF, `weight ×` the min-max normalised score for a weighted sum, `weight ×` the score
/// itself, at most 1, for absolute fusion.
fn contributions(fusion: Fusion, list: &[Scored], weight: f32) -> Vec<f32> {
    match fusion {
        // Both scores are on a fixed scale already: the share of the query matched, and
        // cosine similarity.
        Fusion::Absolute { .. } => list
            .iter()
            .map(|s| weight * s.score.clamp(0.0, 1.0))
            .collect(),
        Fusion::Rrf { k } => (0..list.len())
            .map(|i| 1.0 / (k + i as f32 + 1.0))
            .collect(),
        Fusion::Weighted { .. } => {
            let max = list.iter().map(|s| s.score).fold(f32::MIN, f32::max);
            let min = list.iter().map(|s| s.score).fold(f32::MAX, f32::min);
            let span = max - min;
            list.iter()
                .map(|s| {
                    weight
                        * if span > 0.0 {
                            (s.score - min) / span
                        } else {
                            1.0
                        }
                })
                .collect()
        }
    }
}

/// A candidate with its final score, before its record is read.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ranked {
    pub(crate) id: MemoryId,
    pub(crate) score: f32,
    pub(crate) signals: Signals,
}

/// Recency of a memory last written at `written`, 0 to 1: 1 now, 0.5 one half-life ago.
pub(crate) fn recency(written: Timestamp, now: Timestamp, half_life: Duration) -> f32 {
    let age_ms = (now.as_millis() - written.as_millis()).max(0) as f64;
    let half_life_ms = half_life.as_millis().max(1) as f64;
    0.5f64.powf(age_ms / half_life_ms) as f32
}

/// Access frequency of a memory recalled `count` times, 0 to 1, log-scaled (1 at 100).
pub(crate) fn access(count: u64) -> f32 {
    ((1.0 + count as f32).ln() / 101f32.ln()).min(1.0)
}

/// Rescores fused candidates with recency, access and importance: the best `limit`, best
/// first (the rest are left out).
pub(crate) fn rescore(
    config: &RecallConfig,
    candidates: Vec<RankFields>,
    mut fused: Fused,
    now: Timestamp,
    limit: usize,
) -> Vec<Ranked> {
    let w = config.weights;
    let total = (w.relevance + w.recency + w.access + w.importance).max(f32::EPSILON);
    let boosts = (w.recency + w.access + w.importance).max(f32::EPSILON);
    let share = boost_share(&w);
    let mut ranked: Vec<Ranked> = candidates
        .into_iter()
        .filter_map(|m| {
            let (_, mut signals) = fused.remove(&m.id)?;
            signals.recency = recency(m.updated_at, now, config.half_life);
            signals.access = access(m.access_count);
            signals.importance = m.importance.clamp(0.0, 1.0);
            let boost = (w.recency * signals.recency
                + w.access * signals.access
                + w.importance * signals.importance)
                / boosts;
            let score = if config.fusion.is_absolute() {
                // Bounded: the boosts scale relevance within [1 − share, 1], so they order
                // equally relevant memories and never lift an irrelevant one.
                let factor = 1.0 - share + share * boost;
                signals.boost = Some(factor);
                signals.relevance * factor
            } else {
                (w.relevance * signals.relevance + boosts * boost) / total
            };
            Some(Ranked {
                id: m.id,
                score,
                signals,
            })
        })
        .collect();
    muisti_core::text::keep_best(&mut ranked, limit, |a, b| {
        b.score
            .total_cmp(&a.score)
            .then(b.signals.relevance.total_cmp(&a.signals.relevance))
            .then(a.id.cmp(&b.id))
    });
    ranked
}

/// The ranked candidates as hits, with the records `read` returns for their ids (in any
/// order); a candidate whose record is gone meanwhile is left out.
pub(crate) fn with_records(
    ranked: Vec<Ranked>,
    mut records: IdMap<std::sync::Arc<Memory>>,
) -> Vec<RecallHit> {
    ranked
        .into_iter()
        .filter_map(|r| {
            Some(RecallHit {
                memory: records.remove(&r.id)?,
                score: r.score,
                signals: r.signals,
            })
        })
        .collect()
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
pub(crate) fn text_query(p: muisti_core::Partition, req: &RecallRequest, n: usize) -> TextQuery {
    TextQuery {
        partition: p,
        query: req.query.clone(),
        filter: req.filter.clone(),
        limit: n,
    }
}

/// A vector query for a recall.
pub(crate) fn vector_query(
    p: muisti_core::Partition,
    req: &RecallRequest,
    vector: Vec<f32>,
    n: usize,
) -> VectorQuery {
    VectorQuery {
        partition: p,
        vector,
        filter: req.filter.clone(),
        limit: n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(n: usize) -> Vec<MemoryId> {
        (0..n).map(|_| MemoryId::generate()).collect()
    }

    fn scored(ids: &[MemoryId], scores: &[f32]) -> Vec<Scored> {
        ids.iter()
            .zip(scores)
            .map(|(id, score)| Scored {
                id: *id,
                score: *score,
            })
            .collect()
    }

    #[test]
    fn a_blank_query_is_refused_in_every_mode() {
        for mode in RecallMode::ALL {
            for query in ["", " ", "\n\t \u{3000}"] {
                let mut req = RecallRequest::new(Namespace::default_ns(), query, 5);
                req.mode = mode;
                let e = req.validate().expect_err(query);
                assert_eq!(e.kind(), muisti_core::ErrorKind::InvalidInput);
                assert!(e.to_string().contains("query"), "{e}");
            }
        }
        assert!(
            RecallRequest::new(Namespace::default_ns(), " x ", 5)
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn rrf_rewards_agreement_between_lists() {
        let i = ids(3);
        let lexical = scored(&[i[0], i[1]], &[9.0, 5.0]);
        let vector = scored(&[i[1], i[2]], &[0.9, 0.8]);
        let fused = fuse(Fusion::Rrf { k: 60.0 }, &lexical, &vector);
        // i[1] is in both lists: first, with relevance 1.
        assert_eq!(fused[&i[1]].0, 1.0);
        assert!(fused[&i[0]].0 < 1.0 && fused[&i[0]].0 > fused[&i[2]].0);
        assert_eq!(fused[&i[1]].1.lexical_rank, Some(2));
        assert_eq!(fused[&i[1]].1.vector_rank, Some(1));
        assert_eq!(fused[&i[2]].1.lexical_rank, None);
    }

    #[test]
    fn weighted_fusion_normalises_each_list() {
        let i = ids(3);
        let lexical = scored(&[i[0], i[1]], &[20.0, 10.0]);
        let vector = scored(&[i[2], i[1]], &[0.5, 0.3]);
        let fused = fuse(Fusion::Weighted { lexical: 0.7 }, &lexical, &vector);
        // i[0]: 0.7 × 1; i[1]: 0.7 × 0 + 0.3 × 0; i[2]: 0.3 × 1; relevance relative to the best.
        assert_eq!(fused[&i[0]].0, 1.0);
        assert!((fused[&i[2]].0 - 0.3 / 0.7).abs() < 1e-6);
        assert_eq!(fused[&i[1]].0, 0.0);
    }

    #[test]
    fn contenders_keep_exactly_those_that_can_still_win() {
        let relative = RecallConfig {
            fusion: Fusion::Weighted { lexical: 0.7 },
            ..RecallConfig::default()
        };
        assert!(RecallConfig::default().fusion.is_absolute());
        let i = ids(4);
        let fused = |scores: [f32; 4]| {
            let mut fused = Fused::default();
            for (id, r) in i.iter().zip(scores) {
                fused.insert(*id, (r, Signals::default()));
            }
            fused
        };
        // Relative: slack = (0.1 + 0.05 + 0.1) / 1.0 = 0.25: for limit 2 the 2nd best is
        // 0.9, so 0.7 can still overtake it and 0.2 cannot.
        let kept = contenders(&relative, &fused([1.0, 0.9, 0.7, 0.2]), 2, Lifts::default());
        assert_eq!(kept, vec![i[0], i[1], i[2]]);
        assert_eq!(
            contenders(
                &relative,
                &fused([1.0, 0.9, 0.7, 0.2]),
                10,
                Lifts::default()
            )
            .len(),
            4
        );
        // Absolute: the boosts take at most their share (0.25 / 1.25 = 0.2) off relevance,
        // so a candidate must reach 0.8 × 0.9 = 0.72 to overtake the 2nd.
        let absolute = RecallConfig {
            fusion: Fusion::Absolute { lexical: 0.9 },
            ..RecallConfig::default()
        };
        let kept = contenders(
            &absolute,
            &fused([1.0, 0.9, 0.75, 0.7]),
            2,
            Lifts::default(),
        );
        assert_eq!(kept, vec![i[0], i[1], i[2]]);
        // A lift for the three best (word matching's pool) reads the third however far
        // down it is, and nothing below it; a lift for any candidate reads the fourth too.
        let pool = Lifts {
            any: 0.0,
            best: 3,
            best_more: 0.3,
        };
        let kept = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, pool);
        assert_eq!(kept, vec![i[0], i[1], i[2]]);
        let any = Lifts { any: 0.3, ..pool };
        let kept = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, any);
        assert_eq!(kept, vec![i[0], i[1], i[2], i[3]]);
        let none = contenders(&absolute, &fused([1.0, 0.9, 0.6, 0.5]), 2, Lifts::default());
        assert_eq!(none, vec![i[0], i[1]]);
    }

    #[test]
    fn absolute_scores_do_not_depend_on_the_other_candidates() {
        let i = ids(3);
        let fusion = Fusion::Absolute { lexical: 0.9 };
        let alone = fuse(fusion, &scored(&[i[0]], &[0.5]), &scored(&[i[0]], &[0.5]));
        let with_better = fuse(
            fusion,
            &scored(&[i[1], i[0]], &[1.7, 0.5]),
            &scored(&[i[1], i[0]], &[0.9, 0.5]),
        );
        // Half the query matched: 0.9 × 0.5 + 0.1 × 0.5 = 0.5, whatever else was found.
        assert!((alone[&i[0]].0 - 0.5).abs() < 1e-6);
        assert!((with_better[&i[0]].0 - 0.5).abs() < 1e-6);
        // More than the whole query (a short memory, repeated terms) counts as all of it.
        assert!((with_better[&i[1]].0 - 0.99).abs() < 1e-6);
        // A candidate only a weak cosine found stays near 0 even when it is the best.
        let weak = fuse(fusion, &[], &scored(&[i[2]], &[0.2]));
        assert!((weak[&i[2]].0 - 0.02).abs() < 1e-6);
    }

    #[test]
    fn every_strategys_part_is_explained_and_they_add_up() {
        let i = ids(3);
        let fusion = Fusion::Absolute { lexical: 0.9 };
        let mut fused = fuse(
            fusion,
            &scored(&[i[0], i[1]], &[0.8, 0.4]),
            &scored(&[i[0], i[2]], &[0.5, 0.6]),
        );
        with_graph(fusion, &mut fused, &HashMap::from([(i[2], 0.5)]), 0.2);
        for (id, (relevance, s)) in &fused {
            let parts = s.from_lexical.unwrap_or(0.0)
                + s.from_vector.unwrap_or(0.0)
                + s.from_graph.unwrap_or(0.0);
            assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
        }
        let both = &fused[&i[0]].1;
        assert!((both.from_lexical.unwrap_or(0.0) - 0.72).abs() < 1e-6);
        assert!((both.from_vector.unwrap_or(0.0) - 0.05).abs() < 1e-6);
        assert_eq!(
            fused[&i[1]].1.from_vector, None,
            "the vectors did not find it"
        );
        assert!((fused[&i[2]].1.from_graph.unwrap_or(0.0) - 0.1).abs() < 1e-6);
    }

    #[test]
    fn time_and_neighbours_are_explained_and_add_up() {
        let i = ids(4);
        let fusion = Fusion::Absolute { lexical: 0.9 };
        let config = RecallConfig {
            fusion,
            temporal: 0.1,
            ..RecallConfig::default()
        };
        let mut fused = fuse(
            fusion,
            &scored(&[i[0], i[1], i[2]], &[0.8, 0.5, 0.1]),
            &scored(&[i[0]], &[0.5]),
        );
        // i[1] is dated 10 May 2023, i[0] in August: "in May 2023" lifts i[1] only.
        let field = |id: MemoryId, time: i64| RankFields {
            id,
            updated_at: Timestamp::from_millis(time),
            access_count: 0,
            importance: 0.5,
            time: Timestamp::from_millis(time),
        };
        let fields = [
            field(i[0], 1_692_532_800_000),
            field(i[1], 1_683_720_000_000),
        ];
        let periods = crate::temporal::periods("in May 2023", Timestamp::from_millis(0));
        let matched: HashSet<MemoryId> = fields
            .iter()
            .filter(|f| speaks_of(&config, &periods, f.time, None))
            .map(|f| f.id)
            .collect();
        with_time(&config, &mut fused, &matched);
        assert_eq!(fused[&i[1]].1.from_time, Some(0.1));
        assert_eq!(fused[&i[0]].1.from_time, None);
        // Seeds: the relevant ones only (0.77 and 0.55 of i[0] and i[1]; i[2] is at 0.09).
        let seeds = neighbour_seeds(&fused, &i);
        assert_eq!(
            seeds.iter().map(|s| s.0).collect::<Vec<_>>(),
            vec![i[0], i[1]]
        );
        // i[0] lifts i[3] (no retriever found it) to 0.8 of its relevance, and i[2] above
        // its own; a lift below what a memory already has changes nothing.
        let lifts = [
            (i[3], seeds[0].1),
            (i[2], seeds[1].1),
            (i[1], seeds[0].1 * 0.5),
        ];
        with_neighbours(fusion, &mut fused, &lifts, 0.8);
        assert!((fused[&i[3]].0 - 0.8 * seeds[0].1).abs() < 1e-6);
        assert!(
            fused[&i[3]].0 < fused[&i[0]].0,
            "under the hit that lifted it"
        );
        assert!((fused[&i[2]].0 - 0.8 * seeds[1].1).abs() < 1e-6);
        assert_eq!(fused[&i[1]].1.from_neighbour, None);
        for (id, (relevance, s)) in &fused {
            let parts = s.from_lexical.unwrap_or(0.0)
                + s.from_vector.unwrap_or(0.0)
                + s.from_time.unwrap_or(0.0)
                + s.from_neighbour.unwrap_or(0.0);
            assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
        }
    }

    /// Word matching scores the most relevant candidates only, adds its part as explained,
    /// and leaves a memory it credits nothing as it was.
    #[test]
    fn word_matching_is_explained_and_adds_up() {
        let i = ids(WORD_POOL + 3);
        let fusion = Fusion::Absolute { lexical: 0.9 };
        let scores: Vec<f32> = (0..i.len()).map(|k| 0.9 - k as f32 * 0.02).collect();
        let mut fused = fuse(fusion, &scored(&i, &scores), &[]);
        let pool = word_pool(&fused, i.iter().rev().copied().chain([i[0]]), WORD_POOL);
        assert_eq!(
            pool,
            i[..WORD_POOL].to_vec(),
            "the most relevant, best first, once"
        );
        let before = fused.clone();
        with_words(fusion, &mut fused, &[(i[1], 0.5), (i[2], 0.0)], 0.3);
        assert!((fused[&i[1]].0 - (before[&i[1]].0 + 0.15)).abs() < 1e-6);
        assert_eq!(fused[&i[1]].1.from_words, Some(0.3 * 0.5));
        assert_eq!(fused[&i[2]], before[&i[2]], "no credit, no change");
        // At most 1 with absolute scores.
        with_words(fusion, &mut fused, &[(i[0], 1.0)], 0.3);
        assert_eq!(fused[&i[0]].0, 1.0);
        for (id, (relevance, s)) in &fused {
            let parts = s.from_lexical.unwrap_or(0.0) + s.from_words.unwrap_or(0.0);
            assert!((parts.min(1.0) - relevance).abs() < 1e-6, "{id}");
        }
    }

    #[test]
    fn absolute_rescoring_never_lifts_a_memory_above_its_relevance() {
        let now = Timestamp::from_millis(0);
        let p = muisti_core::Partition::default();
        let mut m = muisti_core::Put::new(p, None, "m").apply(None, now);
        m.importance = 1.0;
        m.access_count = 1_000;
        for relevance in [0.05f32, 0.5, 1.0] {
            let mut fused = Fused::default();
            fused.insert(
                m.id,
                (
                    relevance,
                    Signals {
                        relevance,
                        ..Signals::default()
                    },
                ),
            );
            let config = RecallConfig {
                fusion: Fusion::Absolute { lexical: 0.9 },
                ..RecallConfig::default()
            };
            let hits = rescore(&config, vec![RankFields::of(&m)], fused, now, 10);
            // Every boost at its best: the score is the relevance itself, never more.
            assert!((hits[0].score - relevance).abs() < 1e-6, "{relevance}");
            let boost = hits[0].signals.boost.unwrap_or(0.0);
            assert!(
                (hits[0].score - relevance * boost).abs() < 1e-6,
                "explained"
            );
        }
    }

    #[test]
    fn rescoring_adds_recency_access_and_importance() {
        let now = Timestamp::from_millis(100 * 24 * 3600 * 1000);
        let p = muisti_core::Partition::default();
        let mut old =
            muisti_core::Put::new(p.clone(), None, "old").apply(None, Timestamp::from_millis(0));
        old.importance = 0.5;
        let mut fresh = muisti_core::Put::new(p, None, "fresh").apply(None, now);
        fresh.importance = 0.5;
        let mut fused = Fused::default();
        fused.insert(
            old.id,
            (
                1.0,
                Signals {
                    relevance: 1.0,
                    ..Signals::default()
                },
            ),
        );
        fused.insert(
            fresh.id,
            (
                1.0,
                Signals {
                    relevance: 1.0,
                    ..Signals::default()
                },
            ),
        );
        let hits = rescore(
            &RecallConfig::default(),
            vec![RankFields::of(&old), RankFields::of(&fresh)],
            fused,
            now,
            10,
        );
        assert_eq!(hits[0].id, fresh.id, "same relevance: the recent one first");
        assert!((hits[0].signals.recency - 1.0).abs() < 1e-6);
        // 100 days at a 30-day half-life.
        assert!((hits[1].signals.recency - 0.5f32.powf(100.0 / 30.0)).abs() < 1e-4);
        assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0));
    }
}
