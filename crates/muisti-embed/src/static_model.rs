//! The static (model2vec-style) embedder.

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, OnceLock, PoisonError, RwLock},
};

use muisti_core::quant::{QueryI8, quantize_into};

use serde::Deserialize;

use crate::{EmbedError, Embedder, WordPiece};

/// The id of the built-in model.
pub const BUILTIN_ID: &str = "builtin:minilm-l6-v2-m2v-256";

static BUILTIN_MODEL: &[u8] = include_bytes!("../model/model.safetensors");
static BUILTIN_TOKENIZER: &[u8] = include_bytes!("../model/tokenizer.json");
static BUILTIN_CONFIG: &[u8] = include_bytes!("../model/config.json");

/// A static embedding model: the vector of a text is the mean of its tokens' vectors,
/// normalised to unit length.
pub struct StaticEmbedder {
    id: String,
    tokenizer: WordPiece,
    /// `vocab × dim`, row-major.
    table: Vec<f32>,
    /// One over the length of each row (0 for a zero row): cosines without a normalised
    /// copy of the table.
    inv_norms: Vec<f32>,
    /// Word matching's rows ([`UnitRows`]), made when first needed.
    unit_rows: OnceLock<UnitRows>,
    dim: usize,
    /// Texts' word tokens ([`StaticEmbedder::remembered_word_tokens`]).
    words: RwLock<RememberedWords>,
    max_tokens: usize,
    normalize: bool,
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    normalize: Option<bool>,
    #[serde(default)]
    max_length: Option<usize>,
}

impl StaticEmbedder {
    /// The model compiled into the binary (loaded once per process, shared).
    pub fn builtin() -> Result<Arc<StaticEmbedder>, EmbedError> {
        static MODEL: OnceLock<Result<Arc<StaticEmbedder>, String>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                Self::from_parts(
                    BUILTIN_ID.to_owned(),
                    BUILTIN_MODEL,
                    BUILTIN_TOKENIZER,
                    BUILTIN_CONFIG,
                )
                .map(Arc::new)
                .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(EmbedError::Model)
    }

    /// Loads a model2vec model directory (`model.safetensors`, `tokenizer.json`,
    /// `config.json`); `id` names it in stores.
    pub fn from_dir(id: impl Into<String>, dir: &Path) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| EmbedError::Model(format!("{}: {e}", dir.join(name).display())))
        };
        Self::from_parts(
            id.into(),
            &read("model.safetensors")?,
            &read("tokenizer.json")?,
            &read("config.json")?,
        )
    }

    fn from_parts(
        id: String,
        weights: &[u8],
        tokenizer: &[u8],
        config: &[u8],
    ) -> Result<Self, EmbedError> {
        let config: Config = serde_json::from_slice(config)
            .map_err(|e| EmbedError::Model(format!("config.json: {e}")))?;
        let tokenizer = WordPiece::from_json(tokenizer)?;
        let (rows, dim, table) = read_table(weights)?;
        if rows < tokenizer.vocab_size() {
            return Err(EmbedError::Model(format!(
                "{rows} embedding rows for a vocabulary of {}",
                tokenizer.vocab_size()
            )));
        }
        let inv_norms = table
            .chunks_exact(dim.max(1))
            .map(|row| {
                let norm = dot(row, row).sqrt();
                if norm > 0.0 { 1.0 / norm } else { 0.0 }
            })
            .collect();
        Ok(Self {
            id,
            tokenizer,
            table,
            inv_norms,
            unit_rows: OnceLock::new(),
            dim,
            words: RwLock::new(RememberedWords::new(REMEMBERED_TEXTS)),
            max_tokens: config.max_length.unwrap_or(512),
            normalize: config.normalize.unwrap_or(true),
        })
    }

    fn embed_into(&self, text: &str, ids: &mut Vec<u32>, out: &mut [f32]) {
        ids.clear();
        self.tokenizer.encode_into(text, ids);
        if let Some(unk) = self.tokenizer.unk_id() {
            ids.retain(|&i| i != unk);
        }
        ids.truncate(self.max_tokens);
        out.iter_mut().for_each(|x| *x = 0.0);
        if ids.is_empty() {
            return;
        }
        for &id in ids.iter() {
            let start = id as usize * self.dim;
            let row = &self.table[start..start + self.dim];
            for (o, r) in out.iter_mut().zip(row) {
                *o += r;
            }
        }
        let n = ids.len() as f32;
        out.iter_mut().for_each(|x| *x /= n);
        if self.normalize {
            let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                out.iter_mut().for_each(|x| *x /= norm);
            }
        }
    }
}

/// Matching a query's words by meaning, token by token, with a static model's vectors of
/// single tokens: what averaging a text's tokens into one vector dilutes ("cities" and
/// "Tokyo", "kids" and "son" in a long sentence). Made by [`Embedder::word_matcher`].
pub struct WordMatcher<'a> {
    model: &'a StaticEmbedder,
    /// The query's distinct tokens and their weights: a token's weight is the length of its
    /// vector (a model2vec model's weighting of rare tokens over common ones).
    ids: Vec<u32>,
    /// The full-text term of the word each token came from ([`term_key`]): a text holding
    /// that term matches the word itself ("preferences" and "prefers" share `prefer`).
    terms: Vec<u64>,
    weights: Vec<f32>,
    /// Their vectors at unit length, quantised for [`UnitRows`].
    queries: Vec<QueryI8>,
    /// The rows at unit length, quantised (made the first time a matcher is).
    rows: &'a UnitRows,
    /// The sum of the weights.
    total: f32,
    floor: f32,
    skip: fn(&str) -> bool,
}

/// The table's rows at unit length, quantised to `i8` (one scale per row): word matching
/// reads a row per token of its texts, and a quarter of a float row's bytes stays in the
/// processor's caches.
struct UnitRows {
    data: Vec<i8>,
    scales: Vec<f32>,
    /// The length of a row (the model's dimensions).
    width: usize,
}

impl UnitRows {
    fn of(model: &StaticEmbedder) -> Self {
        // Every component: the first 128 of the built-in model's (its strongest, by the
        // PCA that made it) held out 0.002 less on LoCoMo for 6% of recall's time, the first
        // 64 0.004 less (docs/recall.md).
        let width = model.dim.max(1);
        let mut data = Vec::with_capacity(model.table.len());
        let mut scales = Vec::with_capacity(model.inv_norms.len());
        let mut unit = Vec::with_capacity(width);
        for (row, inv) in model.table.chunks_exact(width).zip(&model.inv_norms) {
            unit.clear();
            unit.extend(row.iter().map(|x| x * inv));
            scales.push(quantize_into(&unit, &mut data));
        }
        Self {
            data,
            scales,
            width,
        }
    }

    /// Token `t`'s row and its scale (`None` past the table).
    fn row(&self, t: u32) -> Option<(&[i8], f32)> {
        let start = (t as usize).checked_mul(self.width)?;
        let row = self.data.get(start..start.checked_add(self.width)?)?;
        Some((row, *self.scales.get(t as usize)?))
    }
}

impl StaticEmbedder {
    /// Calls `f` with each word of `text` that counts (see [`WordMatcher`]) and its token
    /// ids (the unknown token left out).
    fn counted_words(&self, text: &str, skip: fn(&str) -> bool, mut f: impl FnMut(&str, &[u32])) {
        let unk = self.tokenizer.unk_id();
        let mut kept = Vec::new();
        self.tokenizer.for_each_word(text, |word, ids| {
            if word.chars().any(char::is_alphanumeric) && !skip(word) {
                kept.clear();
                kept.extend(ids.iter().filter(|&&id| Some(id) != unk));
                f(word, &kept);
            }
        });
    }

    /// What word matching reads of a text: the distinct token ids of its words that count
    /// and the full-text terms of all its words, each sorted.
    fn word_tokens(&self, text: &str, skip: fn(&str) -> bool) -> TextWords {
        let mut tokens = Vec::new();
        self.counted_words(text, skip, |_, ids| tokens.extend_from_slice(ids));
        tokens.sort_unstable();
        tokens.dedup();
        let mut terms: Vec<u64> = Vec::new();
        muisti_core::text::for_each_term(text, |t| terms.push(term_key(t)));
        terms.sort_unstable();
        terms.dedup();
        let mut held = Signature::default();
        tokens.iter().for_each(|&t| held.add(token_bit(t)));
        terms.iter().for_each(|&t| held.add(term_bit(t)));
        TextWords {
            tokens,
            terms,
            held,
        }
    }

    /// [`StaticEmbedder::word_tokens`] of each of `texts`, remembered: recall scores the
    /// same memories again and again, and tokenizing costs far more than a look-up. A text
    /// is remembered by a hash of it ([`RememberedWords::key`]), not a copy of it; one longer
    /// than [`REMEMBERED_TEXT_LEN`] is tokenized each time.
    fn remembered_word_tokens(
        &self,
        texts: &[&str],
        skip: fn(&str) -> bool,
    ) -> Vec<Arc<TextWords>> {
        let (keys, mut found): (Vec<Option<TextsKey>>, Vec<Option<Arc<TextWords>>>) = {
            let known = self.words.read().unwrap_or_else(PoisonError::into_inner);
            texts
                .iter()
                .map(|t| {
                    let key = (t.len() <= REMEMBERED_TEXT_LEN).then(|| known.key(t, skip));
                    (key, key.and_then(|k| known.get(&k)))
                })
                .unzip()
        };
        // Tokenized outside the lock: recalls on other threads go on reading.
        let mut new = Vec::new();
        for ((text, key), slot) in texts.iter().zip(keys).zip(&mut found) {
            if slot.is_none() {
                let tokens = Arc::new(self.word_tokens(text, skip));
                if let Some(key) = key {
                    new.push((key, Arc::clone(&tokens)));
                }
                *slot = Some(tokens);
            }
        }
        if !new.is_empty() {
            let mut known = self.words.write().unwrap_or_else(PoisonError::into_inner);
            for (key, tokens) in new {
                known.insert(key, tokens);
            }
        }
        found.into_iter().flatten().collect()
    }
}

/// Texts' word tokens in two generations of at most [`REMEMBERED_TEXTS`] each: a text is
/// added to the newer, and when it is full the older is dropped and the newer takes its
/// place, so the texts met last stay (where emptying one full map would forget them all).
struct RememberedWords {
    /// The most texts a generation holds ([`REMEMBERED_TEXTS`] but in tests).
    generation: usize,
    newer: TextTokens,
    older: TextTokens,
    /// Hashes texts with a seed of this process's own: a text cannot be made to take
    /// another's key without knowing it.
    seed: foldhash::fast::RandomState,
}

/// A remembered text: the address of the skip function its words were read with (two
/// functions with one address behave alike; one with two addresses only misses) and a 64-bit
/// hash of the text, which spares a copy of every text remembered and a whole-text
/// comparison on each look-up. A text takes a remembered one's tokens for its own with a
/// probability of about 2⁻⁵⁰ per look-up (at most 2 × [`REMEMBERED_TEXTS`] of them).
type TextsKey = (usize, u64);

impl RememberedWords {
    fn new(generation: usize) -> Self {
        Self {
            generation: generation.max(1),
            newer: TextTokens::default(),
            older: TextTokens::default(),
            seed: foldhash::fast::RandomState::default(),
        }
    }

    fn key(&self, text: &str, skip: fn(&str) -> bool) -> TextsKey {
        use std::hash::BuildHasher;
        (skip as usize, self.seed.hash_one(text))
    }

    fn get(&self, key: &TextsKey) -> Option<Arc<TextWords>> {
        self.newer.get(key).or_else(|| self.older.get(key)).cloned()
    }

    fn insert(&mut self, key: TextsKey, tokens: Arc<TextWords>) {
        if self.newer.len() >= self.generation {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(key, tokens);
    }

    /// How many texts are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.newer.len() + self.older.len()
    }
}

/// The lanes of [`WordMatcher::scores`]'s maximum over a text's cosines: eight `f32`, one
/// AVX2 register or two SSE2 ones.
const LANES: usize = 8;

/// How many texts' word tokens a generation of [`RememberedWords`] holds (a model keeps two,
/// shared by every thread): enough for a partition of 100,000 memories, whose recalls would
/// otherwise tokenize most of their pool (`muisti bench http --memories 100000`: recall
/// 2,300-2,600 requests/s with generations of 8,192, 3,200-4,100 with these, 4,400-4,700 with
/// word matching off). About 1 KiB a text (peak RSS at 100,000 memories 55-109 MiB above
/// generations of 8,192): at most about 130 MiB.
const REMEMBERED_TEXTS: usize = 65_536;

/// Longer texts (in bytes) are tokenized each time: the memory stays bounded.
const REMEMBERED_TEXT_LEN: usize = 1_024;

/// Texts' word tokens by [`TextsKey`].
type TextTokens = HashMap<TextsKey, Arc<TextWords>, foldhash::fast::FixedState>;

/// A text's words as word matching reads them ([`StaticEmbedder::word_tokens`]).
struct TextWords {
    /// The distinct token ids of its words that count, sorted.
    tokens: Vec<u32>,
    /// The full-text terms of all its words (stemmed: `muisti_core::text::tokenize`), as
    /// [`term_key`]s, distinct, sorted.
    terms: Vec<u64>,
    /// Both, as bits: a query token or term whose bit is not set is not held, without a
    /// search (most of a query's tokens are not in most texts).
    held: Signature,
}

/// A set of 256 bits standing for a larger set, a bit per member (members may share one):
/// a bit not set says a member is absent; a bit set, only that it may be present.
#[derive(Default, Clone, Copy)]
struct Signature([u64; 4]);

impl Signature {
    fn add(&mut self, bit: u8) {
        self.0[usize::from(bit >> 6)] |= 1 << (bit & 63);
    }

    fn may_hold(&self, bit: u8) -> bool {
        self.0[usize::from(bit >> 6)] & (1 << (bit & 63)) != 0
    }
}

/// The [`Signature`] bit of a token id.
fn token_bit(token: u32) -> u8 {
    // The top byte of a Fibonacci hash: ids close together spread over the bits.
    (u64::from(token).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8
}

/// The [`Signature`] bit of a full-text term's [`term_key`] (a hash already).
fn term_bit(term: u64) -> u8 {
    (term >> 56) as u8
}

/// A full-text term as word matching compares it: a 64-bit hash (with a fixed seed), held
/// in one block with a text's others rather than a string each, which a look-up would
/// follow to scattered memory. A query's term takes a text's for its own (their hashes
/// collide) with a probability of about 2⁻⁵⁸ per pair.
fn term_key(term: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x6d75_6973_7469).hash_one(term)
}

impl<'a> WordMatcher<'a> {
    /// Whether the query has no word that counts (every text then scores 0).
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// How much of the query `text` matches by meaning where it does not by its words: its
    /// [`WordMatcher::scores`] alone.
    pub fn score(&self, text: &str) -> f32 {
        self.scores(&[text]).first().copied().unwrap_or(0.0)
    }

    /// How much of the query each of `texts` matches by meaning where it does not by its
    /// words, 0 to 1, in order: each query token a text does not hold counts
    /// `(c − floor) / (1 − floor)` of its weight, `c` the best cosine of its vector with the
    /// vector of one of the text's tokens (nothing at or below the floor); a token the text
    /// holds, or one of a word whose full-text term (stem) the text holds, counts nothing
    /// (matching words is the lexical retriever's part); the sum over the query's weight.
    ///
    /// The texts of one recall share many tokens: each distinct token's cosines with the
    /// query's are computed once, the whole pool's in one pass per query token.
    pub fn scores(&self, texts: &[&str]) -> Vec<f32> {
        if self.ids.is_empty() || self.total <= 0.0 {
            return vec![0.0; texts.len()];
        }
        let words = self.model.remembered_word_tokens(texts, self.skip);
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => {
                let scores = self.scores_with(&words, &mut scratch);
                scratch.trim();
                scores
            }
            Err(_) => self.scores_with(&words, &mut Scratch::default()),
        })
    }

    /// [`WordMatcher::scores`] of texts' words, with `scratch`'s buffers.
    fn scores_with(&self, words: &[Arc<TextWords>], scratch: &mut Scratch) -> Vec<f32> {
        let n = self.ids.len();
        let Scratch {
            open,
            index,
            scales,
            at,
            starts,
            cosines,
            dots,
            best,
        } = scratch;
        // Which of the query's tokens each text leaves open (`n` a text): only those it does
        // not hold can count.
        open.clear();
        for w in words {
            for i in 0..n {
                let (id, term) = (self.ids[i], self.terms[i]);
                let holds = (w.held.may_hold(token_bit(id)) && w.tokens.binary_search(&id).is_ok())
                    || (w.held.may_hold(term_bit(term)) && w.terms.binary_search(&term).is_ok());
                open.push(!holds);
            }
        }
        let open_in = |k: usize| &open[k * n..(k + 1) * n];
        // The distinct tokens of the texts with an open query token that have a row (a
        // token without a vector matches nothing), and each such text's tokens as indices
        // into them (`at[starts[k]..starts[k + 1]]`).
        // The rows are gathered here, before the kernel: an iterator that looked each one up
        // inside it kept the kernel from being compiled with the vector instructions it is
        // called with (recall four times slower).
        let mut rows: Vec<&[i8]> = Vec::with_capacity(scales.capacity());
        index.clear();
        scales.clear();
        at.clear();
        starts.clear();
        starts.push(0);
        for (k, w) in words.iter().enumerate() {
            if open_in(k).contains(&true) {
                for &t in &w.tokens {
                    let Some((row, scale)) = self.rows.row(t) else {
                        continue;
                    };
                    at.push(*index.entry(t).or_insert_with(|| {
                        rows.push(row);
                        scales.push(scale);
                        rows.len() - 1
                    }));
                }
            }
            starts.push(at.len());
        }
        // Every one of those tokens' cosines with each query token, a row of `lanes` per
        // token (`n` rounded up to whole vector steps): a text's best cosine for every query
        // token is then one maximum over its rows, eight lanes at a time.
        let lanes = n.div_ceil(LANES) * LANES;
        cosines.clear();
        cosines.resize(rows.len() * lanes, 0.0);
        for (i, query) in self.queries.iter().enumerate() {
            if !(0..words.len()).any(|k| open_in(k)[i]) {
                continue;
            }
            dots.clear();
            query.dots(rows.iter().copied(), dots);
            for ((row, &scale), &dot) in cosines.chunks_exact_mut(lanes).zip(&*scales).zip(&*dots) {
                row[i] = query.scale(scale) * dot as f32;
            }
        }
        let span = (1.0 - self.floor).max(f32::EPSILON);
        best.resize(lanes, 0.0);
        (0..words.len())
            .map(|k| {
                let open = open_in(k);
                best.fill(0.0);
                for &u in &at[starts[k]..starts[k + 1]] {
                    let row = &cosines[u * lanes..(u + 1) * lanes];
                    for (b, r) in best.chunks_exact_mut(LANES).zip(row.chunks_exact(LANES)) {
                        for (b, &c) in b.iter_mut().zip(r) {
                            *b = if c > *b { c } else { *b };
                        }
                    }
                }
                let mut matched = 0.0;
                for i in (0..n).filter(|&i| open[i]) {
                    matched += self.weights[i] * ((best[i] - self.floor) / span).clamp(0.0, 1.0);
                }
                (matched / self.total).clamp(0.0, 1.0)
            })
            .collect()
    }
}

/// [`WordMatcher::scores`]'s buffers, kept per thread between recalls: a recall's would
/// otherwise be allocated (and, the larger ones, faulted in) anew each time.
#[derive(Default)]
struct Scratch {
    open: Vec<bool>,
    index: HashMap<u32, usize, foldhash::fast::FixedState>,
    /// The scales of the distinct tokens' rows.
    scales: Vec<f32>,
    at: Vec<usize>,
    starts: Vec<usize>,
    cosines: Vec<f32>,
    dots: Vec<i32>,
    best: Vec<f32>,
}

/// The most values a kept buffer of [`Scratch`] may hold room for (a recall of a long query
/// over long texts needs more, once): a thread keeps at most a few MiB between recalls.
const SCRATCH_MAX: usize = 1 << 18;

impl Scratch {
    /// Lets go of the buffers if one grew past [`SCRATCH_MAX`].
    fn trim(&mut self) {
        let largest = [
            self.open.capacity(),
            self.index.capacity(),
            self.scales.capacity(),
            self.at.capacity(),
            self.cosines.capacity(),
        ];
        if largest.into_iter().max().unwrap_or(0) > SCRATCH_MAX {
            *self = Self::default();
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// A dot product in eight lanes (which the compiler keeps in vector registers).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() / 8 * 8);
    let (b8, b_rest) = b.split_at(a8.len().min(b.len()));
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

impl Embedder for StaticEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn word_matcher(
        &self,
        query: &str,
        skip: fn(&str) -> bool,
        floor: f32,
    ) -> Option<WordMatcher<'_>> {
        // Each distinct token, with the full-text term of the first word it came from.
        let mut ids: Vec<(u32, u64)> = Vec::new();
        self.counted_words(query, skip, |word, tokens| {
            let term = term_key(&muisti_core::text::tokenize(word).next().unwrap_or_default());
            for &t in tokens {
                if !ids.iter().any(|(id, _)| *id == t) {
                    ids.push((t, term));
                }
            }
        });
        let rows = self.unit_rows.get_or_init(|| UnitRows::of(self));
        let mut kept = Vec::with_capacity(ids.len());
        let mut terms = Vec::with_capacity(ids.len());
        let mut weights = Vec::with_capacity(ids.len());
        let mut queries = Vec::with_capacity(ids.len());
        for (id, term) in ids {
            let (Some((row, scale)), Some(&inv)) = (rows.row(id), self.inv_norms.get(id as usize))
            else {
                continue;
            };
            if inv <= 0.0 {
                continue;
            }
            kept.push(id);
            terms.push(term);
            weights.push(1.0 / inv);
            // The row at unit length, as the texts' tokens are read.
            queries.push(QueryI8::quantised(row.to_vec(), scale));
        }
        Some(WordMatcher {
            model: self,
            total: weights.iter().sum(),
            ids: kept,
            terms,
            weights,
            queries,
            rows,
            floor: floor.clamp(0.0, 0.999),
            skip,
        })
    }

    fn prepare_words(&self, texts: &[&str], skip: fn(&str) -> bool) {
        // A longer text would be tokenized now only to be tokenized again at recall, and of
        // a batch larger than a generation only the last generation's worth is kept.
        let short: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| t.len() <= REMEMBERED_TEXT_LEN)
            .collect();
        let generation = self
            .words
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .generation;
        let newest = &short[short.len().saturating_sub(generation)..];
        self.remembered_word_tokens(newest, skip);
    }

    fn dimensions(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut ids = Vec::with_capacity(64);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0; self.dim];
                self.embed_into(t, &mut ids, &mut v);
                v
            })
            .collect())
    }
}

/// The model's `embeddings` table: its rows, its width and its values.
fn read_table(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), EmbedError> {
    let (shape, table) = crate::safetensors::Tensors::parse(bytes)?.read("embeddings")?;
    let [rows, dim] = shape[..] else {
        return Err(EmbedError::Model(
            "model.safetensors: `embeddings` is not 2-D".into(),
        ));
    };
    Ok((rows, dim, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in model's word matching: a query word the text lacks counts by its best
    /// cosine with the text's tokens; a word the text holds, a stop word or a cosine under
    /// the floor counts nothing.
    #[test]
    fn word_matching_credits_meaning_where_the_words_differ() {
        let model = StaticEmbedder::builtin().expect("model");
        let stop = muisti_core::text::is_stop_word;
        let query = "Which cities has John visited?";
        let m = model
            .word_matcher(query, stop, 0.2)
            .expect("a static model matches");
        assert_eq!(
            m.ids.len(),
            3,
            "john, cities, visited: the stop words left out"
        );
        let tokyo = m.score("John: we spent a week in Tokyo and then Osaka");
        let kitchen = m.score("John: we spent a week painting the kitchen");
        assert!(tokyo > kitchen + 0.05, "{tokyo} vs {kitchen}");
        assert!(kitchen > 0.0 && tokyo < 0.5, "{tokyo} vs {kitchen}");
        // Scored together (their tokens' cosines computed once): each as alone.
        let texts = [
            "John: we spent a week painting the kitchen",
            "",
            "John visited three cities",
            "John: we spent a week in Tokyo and then Osaka",
        ];
        assert_eq!(m.scores(&texts), [kitchen, 0.0, 0.0, tokyo]);
        assert!(m.scores(&[]).is_empty());
        assert_eq!(
            m.score("John visited three cities"),
            0.0,
            "every word is there"
        );
        assert_eq!(
            m.score("John visits a city"),
            0.0,
            "every word's stem is there"
        );
        assert_eq!(m.score(""), 0.0);
        let higher = model.word_matcher(query, stop, 0.4).expect("matcher");
        assert!(higher.score("John: we spent a week in Tokyo and then Osaka") < tokyo);
        let unrelated = model
            .word_matcher("quantum chromodynamics lattice", stop, 0.2)
            .expect("matcher");
        for text in [
            "Alice prefers window seats",
            "Bob is allergic to peanuts",
            "dark",
        ] {
            assert_eq!(unrelated.score(text), 0.0, "{text}");
        }
        let only_stop_words = model
            .word_matcher("what is it", stop, 0.2)
            .expect("matcher");
        assert!(only_stop_words.is_empty());
    }

    /// A model of its own (the built-in one is shared by the process's tests), with nothing
    /// remembered.
    fn fresh_model() -> StaticEmbedder {
        StaticEmbedder::from_parts(
            BUILTIN_ID.to_owned(),
            BUILTIN_MODEL,
            BUILTIN_TOKENIZER,
            BUILTIN_CONFIG,
        )
        .expect("model")
    }

    /// Texts' words read as they are written are those recall reads: the same scores as a
    /// model that reads them at recall; each text remembered once per skip function, a long
    /// one not at all, and the memory bounded.
    #[test]
    fn words_read_ahead_score_as_words_read_at_recall() {
        let stop: fn(&str) -> bool = muisti_core::text::is_stop_word;
        let texts = [
            "John: we spent a week in Tokyo and then Osaka",
            "John: we spent a week painting the kitchen",
            "Caroline went to a support group for her son",
        ];
        let long = "word ".repeat(REMEMBERED_TEXT_LEN / 5 + 1);
        let ahead = fresh_model();
        ahead.prepare_words(&[texts[0], texts[1], texts[0], &long], stop);
        let remembered = |m: &StaticEmbedder| m.words.read().expect("lock").len();
        assert_eq!(remembered(&ahead), 2, "each short text once");
        let at_recall = fresh_model();
        for query in [
            "Which cities has John visited?",
            "What did Caroline do for her kids?",
        ] {
            let a = ahead.word_matcher(query, stop, 0.2).expect("matcher");
            let b = at_recall.word_matcher(query, stop, 0.2).expect("matcher");
            assert_eq!(a.scores(&texts), b.scores(&texts), "{query}");
            assert!(a.scores(&texts).iter().any(|&s| s > 0.0), "{query}");
        }
        assert_eq!(remembered(&ahead), 3, "the third remembered at recall");
        // Another skip function reads the words otherwise: remembered apart.
        fn nothing(_: &str) -> bool {
            false
        }
        ahead.prepare_words(&texts[..1], nothing);
        assert_eq!(remembered(&ahead), 4);
        let own = ahead.remembered_word_tokens(&texts[..1], nothing);
        let stopped = ahead.remembered_word_tokens(&texts[..1], stop);
        assert!(
            own[0].tokens.len() > stopped[0].tokens.len(),
            "`a`, `and`, `then` count"
        );
        // Of a batch larger than a generation, the newest generation's worth is read; the
        // texts met last stay as the older generation is dropped.
        let known = |m: &StaticEmbedder, t: &str| {
            let words = m.words.read().expect("lock");
            words.get(&words.key(t, stop)).is_some()
        };
        const GENERATION: usize = 64;
        let mut ahead = ahead;
        ahead.words = RwLock::new(RememberedWords::new(GENERATION));
        let notes = |from: usize| -> Vec<String> {
            (from..from + 2 * GENERATION + 1)
                .map(|i| format!("note {i}"))
                .collect()
        };
        for batch in [notes(0), notes(1_000)] {
            let batch: Vec<&str> = batch.iter().map(String::as_str).collect();
            ahead.prepare_words(&batch, stop);
            assert!(remembered(&ahead) <= 2 * GENERATION);
            let newest = &batch[batch.len() - GENERATION..];
            assert!(newest.iter().all(|t| known(&ahead, t)));
            assert!(!known(&ahead, batch[0]), "not read: the batch's oldest");
        }
    }

    /// A thread lets go of word matching's buffers once one grew past the bound, and keeps
    /// them otherwise.
    #[test]
    fn large_buffers_are_not_kept() {
        let mut scratch = Scratch::default();
        scratch.cosines.reserve(1_000);
        scratch.trim();
        assert!(scratch.cosines.capacity() >= 1_000, "kept");
        scratch.cosines.reserve(SCRATCH_MAX + 1);
        scratch.trim();
        assert_eq!(scratch.cosines.capacity(), 0, "let go");
    }

    /// A text's signature has the bit of every token and term it holds (no search is ever
    /// skipped for one it holds), and leaves most others' bits unset.
    #[test]
    fn a_signature_holds_every_member_and_few_others() {
        let model = fresh_model();
        let w = model.word_tokens(
            "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted",
            muisti_core::text::is_stop_word,
        );
        assert!(w.tokens.len() > 5 && w.terms.len() > 5);
        for &t in &w.tokens {
            assert!(w.held.may_hold(token_bit(t)), "token {t}");
        }
        for &t in &w.terms {
            assert!(w.held.may_hold(term_bit(t)), "term {t}");
        }
        let absent = (0..1_000u32)
            .map(|i| 20_000 + i)
            .filter(|t| w.tokens.binary_search(t).is_err())
            .filter(|&t| !w.held.may_hold(token_bit(t)))
            .count();
        assert!(absent > 800, "{absent} of 1,000 absent tokens said absent");
    }
}
