//! Hybrid recall as a pipeline, one stage a module:
//!
//! 1. [`sources`]: the candidates of the store's retrievers (full text, vectors), or of a
//!    cluster's members and the archive, which the engine gathers and hands over;
//! 2. [`fuse`]: both ranked lists fused into one relevance per candidate;
//! 3. [`strategies`]: what else may lift a candidate, one file each (the graph, the periods
//!    a query names, the next turn of a session, word-level matching), each adding its part
//!    and making relevance again by the fusion's rule;
//! 4. [`rescore`]: the contenders that can still win, rescored by recency, access and
//!    importance, and only the hits read whole.
//!
//! [`pipeline`] runs the stages over a [`Context`] (the store, the embedder, the
//! configuration, the time) and never sees the engine; the engine validates a request, picks
//! the sources and records what the recall did. Lifecycle reads recall's rescoring and
//! candidate ranking, never the reverse.

mod fuse;
mod pipeline;
mod rerank;
mod rescore;
mod sources;
mod strategies;
#[cfg(test)]
mod tests;

use std::time::Duration;

use muisti_core::{Filter, Memory, Namespace, Timestamp};
use serde::{Deserialize, Serialize};

pub(crate) use pipeline::{Context, Sources, run, similar};
pub(crate) use rerank::rerank;
pub(crate) use rescore::{access, recency};
pub(crate) use sources::{Candidates, overlap};
pub(crate) use strategies::words::WORD_SKIP;

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
    /// ([`Graph::evidence`](crate::graph::Graph::evidence)) before relevance is
    /// normalised, and such memories join the candidates even when neither retriever found
    /// them.
    #[serde(default)]
    pub graph: f32,
    /// The temporal strategy: the weight in relevance of a memory's time falling in a
    /// period the query names ("in May 2023", "last summer": [`muisti_lang::time`]); 0 leaves
    /// it out. A candidate whose time ([`muisti_core::RankFields::time`]) is in such a period, or up to
    /// [`RecallConfig::temporal_after`] later, gains this much.
    #[serde(default)]
    pub temporal: f32,
    /// How long after a period a memory still counts as speaking of it (people tell of
    /// events after they happen).
    #[serde(default)]
    pub temporal_after: Duration,
    /// The temporal strategy also reads the contenders' own time expressions ("last month",
    /// "in May"), resolved against each one's time: a memory whose text names a period
    /// that meets one the query names ([`Period::overlaps`](muisti_lang::time::Period::overlaps))
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
    /// With a reranker ([`crate::EngineBuilder::reranker`], a transformer model): the
    /// weight of its cosine in the score of the hits it re-scores (default
    /// [`DEFAULT_RERANK`]).
    #[serde(default = "default_rerank")]
    pub rerank: f32,
    /// How many of recall's best hits the reranker re-scores (at least the request's
    /// limit; default [`RERANK_POOL`]).
    #[serde(default = "default_rerank_pool")]
    pub rerank_pool: usize,
    /// With a reranker: the share of a query its best word match must cover for recall's
    /// own order to stand (default [`RERANK_TRUST`]). A query whose words a memory repeats
    /// is ranked by them and the reranker is not asked; one asked in other words is
    /// re-scored. 1 (or more) re-scores every query; 0 none.
    #[serde(default = "default_rerank_trust")]
    pub rerank_trust: f32,
}

fn default_rerank() -> f32 {
    DEFAULT_RERANK
}

fn default_rerank_pool() -> usize {
    RERANK_POOL
}

fn default_rerank_trust() -> f32 {
    RERANK_TRUST
}

/// The reranker's default weight ([`RecallConfig::rerank`]), on the questions it re-scores
/// (those whose words recall does not find, [`RERANK_TRUST`]): with all-MiniLM-L6-v2 as
/// reranker, the weight and trust that keep the LoCoMo dev set's recall@10 at the default
/// recall's and its recall p50 under 0.5 ms, chosen among 0.3 and 0.5 with trust 0.3, 0.5
/// and 0.7, and 0.9 (docs/recall.md).
pub const DEFAULT_RERANK: f32 = 0.3;

/// How many of recall's best hits a reranker re-scores by default
/// ([`RecallConfig::rerank_pool`]): the usual top 10, so a reranker changes their order,
/// not which ten are recalled.
pub const RERANK_POOL: usize = 10;

/// The share of a query its best word match must cover for a reranker to leave recall's
/// order as it is ([`RecallConfig::rerank_trust`]): half. A LoCoMo question mostly repeats
/// the words of the turn that answers it and is not re-scored (more than half of them, so
/// recall's p50 stays recall's own); an everyday question asked in other words is.
pub const RERANK_TRUST: f32 = 0.5;

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
            rerank: DEFAULT_RERANK,
            rerank_pool: RERANK_POOL,
            rerank_trust: RERANK_TRUST,
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
    /// Recall as of this time instead of now: "now" in the query means then, relative
    /// periods ("last week") resolve against it, recency is measured from it, and only the
    /// memories true at that time are returned (their `valid_from`, else when they were
    /// written, at or before it; their `valid_until`, if any, after it).
    #[serde(default)]
    pub as_of: Option<muisti_core::Timestamp>,
    /// Memories a newer one replaced (state `superseded`) too: left out by default, since
    /// what they said is no longer so.
    #[serde(default)]
    pub include_superseded: bool,
    /// With a user in the filter, the tenant's shared memories (of no user) too, ranked
    /// with the user's own in one recall (the query embedded once, both candidate lists
    /// merged). Never another user's.
    #[serde(default)]
    pub include_shared: bool,
    /// Leave out key-value entries (records written with a key, [`crate::in_key_space`]):
    /// a namespace that holds an application's state beside its memories recalls only the
    /// memories. Off by default: a memory written with a key is a memory. The entries are
    /// left out of the candidates recall ranks (its configured `candidates` of each
    /// retriever), so a namespace whose entries crowd the memories out of them gives fewer
    /// hits: state belongs in a namespace of its own (`_state.`).
    #[serde(default)]
    pub exclude_key_value: bool,
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
            as_of: None,
            include_superseded: false,
            include_shared: false,
            exclude_key_value: false,
        }
    }

    /// The filter of the tenant's shared memories beside the user's
    /// ([`RecallRequest::include_shared`]): the same filter, of no user. `None` when the
    /// request does not ask for them or names no user.
    pub(crate) fn shared_filter(&self) -> Option<Filter> {
        (self.include_shared && self.filter.user_id.is_some()).then(|| Filter {
            user_id: None,
            without_user: true,
            ..self.filter.clone()
        })
    }

    /// Whether the request admits `m`: an archived memory only when asked for archived
    /// memories; a superseded one when asked for superseded ones, or, as of a time, while
    /// it was still true (its `valid_until` after that time); and as of a time only what
    /// was true then ([`RecallRequest::true_at`]); no key-value entry when they are left out
    /// ([`RecallRequest::exclude_key_value`]). The one rule of which memories a recall
    /// returns by their state, time and kind.
    pub fn admits(&self, m: &Memory) -> bool {
        if self.exclude_key_value && crate::in_key_space(m) {
            return false;
        }
        let state = match m.state {
            muisti_core::MemoryState::Active => true,
            muisti_core::MemoryState::Archived => self.include_archived,
            muisti_core::MemoryState::Superseded => {
                self.include_superseded || (self.as_of.is_some() && m.valid_until.is_some())
            }
        };
        state && self.as_of.is_none_or(|at| Self::true_at(m, at))
    }

    /// Whether `m` is true at `at`: it became true (its `valid_from`, else when it was
    /// written) at or before it, and it did not stop being true (`valid_until`) by then.
    /// The one rule of a recall [`as_of`](RecallRequest::as_of) a time.
    pub fn true_at(m: &Memory, at: Timestamp) -> bool {
        muisti_core::RankFields::time_of(m.valid_from, m.created_at) <= at
            && m.valid_until.is_none_or(|u| u > at)
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
    /// The reranker's cosine of query and memory, when the engine has a reranker
    /// ([`crate::EngineBuilder::reranker`]); the score is then `(1 − w) × the recall's
    /// score + w × max(this, 0)`, `w` [`RecallConfig::rerank`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank: Option<f32>,
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
