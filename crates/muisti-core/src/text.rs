//! Lexical matching: the tokenizer shared by every backend, and BM25 over in-memory documents.

use std::{collections::HashMap, sync::OnceLock};

use rust_stemmers::{Algorithm, Stemmer};

use crate::{MemoryId, Scored};

/// Splits text into index terms: maximal runs of Unicode letters and digits (as SQLite's
/// `unicode61` and tantivy's default tokenizer split), lower-cased, then reduced by the
/// Snowball English stemmer (stop words are kept whole). Every backend indexes these same
/// terms. Stemming was chosen by measurement: on LoCoMo it raised full-text recall@10 from
/// 0.597 to 0.635 (docs/recall.md).
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    words(text).map(term)
}

/// Calls `f` with the term of each word of `text`, in order: [`tokenize`]'s terms, lent
/// rather than each copied into a `String` of its own.
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    for word in words(text) {
        with_term(word, &mut f);
    }
}

/// The words [`tokenize`] reduces: maximal runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = &str> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// How many words' terms each thread remembers ([`term`]); the memory is emptied when full.
const REMEMBERED_TERMS: usize = 16_384;

/// Longer words (in bytes) are reduced without being remembered: rare, and they would make
/// the memory's size follow its input (a long run of base64 is one word).
const REMEMBERED_WORD_LEN: usize = 32;

thread_local! {
    /// Words already reduced on this thread, with their terms: conversational text repeats
    /// a small vocabulary, and a lookup costs a fraction of the stemmer.
    static TERMS: std::cell::RefCell<HashMap<String, String, foldhash::fast::RandomState>> =
        std::cell::RefCell::new(HashMap::default());
}

/// The term of one word (a maximal run of letters and digits): lower-cased, then stemmed
/// unless a stop word. The one definition [`tokenize`] applies to every word.
fn term(word: &str) -> String {
    with_term(word, str::to_owned)
}

/// Calls `f` with [`term`]'s term of `word`, remembered per thread.
fn with_term<R>(word: &str, f: impl FnOnce(&str) -> R) -> R {
    // Lower case already (ASCII): no copy to look it up.
    let lower: std::borrow::Cow<'_, str> = if word
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
    {
        std::borrow::Cow::Borrowed(word)
    } else {
        std::borrow::Cow::Owned(word.to_lowercase())
    };
    let reduce = |lower: &str| {
        if is_stop_word(lower) {
            lower.to_owned()
        } else {
            stemmer().stem(lower).into_owned()
        }
    };
    if lower.len() > REMEMBERED_WORD_LEN {
        return f(&reduce(&lower));
    }
    TERMS.with(|remembered| {
        if let Some(t) = remembered.borrow().get(lower.as_ref()) {
            return f(t);
        }
        let t = reduce(&lower);
        // Not remembered if `f` of an enclosing call holds the memory (it lends a term).
        if let Ok(mut remembered) = remembered.try_borrow_mut() {
            if remembered.len() >= REMEMBERED_TERMS {
                remembered.clear();
            }
            remembered.insert(lower.into_owned(), t.clone());
        }
        f(&t)
    })
}

/// The English stemmer every term goes through.
fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Whether `word` (lower case) is in [`STOP_WORDS`]: one hash look-up (recall's word
/// matching asks it of every word of its candidates).
pub fn is_stop_word(word: &str) -> bool {
    static SET: OnceLock<std::collections::HashSet<&'static str, foldhash::fast::FixedState>> =
        OnceLock::new();
    word.len() <= LONGEST_STOP_WORD
        && SET
            .get_or_init(|| STOP_WORDS.iter().copied().collect())
            .contains(word)
}

/// The length in bytes of the longest of [`STOP_WORDS`].
const LONGEST_STOP_WORD: usize = 10;

/// Common English function words. Full-text queries leave them out (documents keep them),
/// which measurably helps on conversational data (see docs/recall.md).
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "again",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The distinct words of a full-text query, stop words left out unless nothing else
/// remains (a query of only stop words still matches on them).
pub fn query_terms(query: &str) -> Vec<String> {
    let mut all: Vec<String> = tokenize(query).collect();
    all.sort_unstable();
    all.dedup();
    let content: Vec<String> = all.iter().filter(|t| !is_stop_word(t)).cloned().collect();
    if content.is_empty() { all } else { content }
}

/// The shortest query word a full-text search corrects ([`search_terms`]), and the
/// shortest word it corrects to: a shorter word has too many neighbours one edit away to
/// tell which was meant ("plane" is one letter from "plan", "place" and "plant").
pub const FUZZY_MIN_CHARS: usize = 5;

/// The shortest word a correction may replace a letter of: one letter replaced in a
/// shorter word is as often another word as a slip ("share" and "spare", "month" and
/// "mouth").
pub const FUZZY_REPLACE_MIN_CHARS: usize = 7;

/// The terms a full-text search looks for: the query's [`query_terms`], each word the
/// searched records do not hold (`known` says which they do: the records the search may
/// return, never others') of at least [`FUZZY_MIN_CHARS`] letters a to z replaced by the
/// first correction they hold (one of its [`one_edit_variants`], or for a word that does
/// not end as an inflected word does, the stem of one of the word's variants that does:
/// "mooerd" finds the "moor" of "moored"), so a misspelled word still finds what it meant.
/// A word they hold is never changed, nor one with no such correction. The one rule of
/// misspelled query words, which every full-text search calls with its own index's
/// vocabulary.
pub fn search_terms(query: &str, known: impl Fn(&str) -> bool) -> Vec<String> {
    corrected(query, query_terms(query), known)
}

/// [`search_terms`] of a query whose [`query_terms`] the caller already has.
pub fn corrected(query: &str, mut terms: Vec<String>, known: impl Fn(&str) -> bool) -> Vec<String> {
    let mut changed = false;
    for t in terms.iter_mut() {
        if !correctable(t) || known(t) {
            continue;
        }
        let mut found = None;
        each_correction(query, t, |v| {
            if known(v) {
                found = Some(v.to_owned());
            }
            found.is_some()
        });
        if let Some(v) = found {
            *t = v;
            changed = true;
        }
    }
    if changed {
        terms.sort_unstable();
        terms.dedup();
    }
    terms
}

/// Whether [`search_terms`] corrects `term` when the records do not hold it: five letters
/// or more, each a to z.
fn correctable(term: &str) -> bool {
    term.len() >= FUZZY_MIN_CHARS && term.bytes().all(|b| b.is_ascii_lowercase())
}

/// The word of `query` (in lower case) whose term is `term` when it does not end as an
/// inflected word does ([`INFLECTIONS`]): one a slip may have left without its ending
/// ("mooerd", "bookde"), so a correction also tries the stems of its variants.
fn broken_ending(query: &str, term: &str) -> Option<String> {
    words(query)
        .filter(|w| {
            w.len() >= FUZZY_MIN_CHARS
                && w.bytes().all(|b| b.is_ascii_alphabetic())
                && !inflected(w)
        })
        .find(|w| with_term(w, |t| t == term))
        .map(str::to_ascii_lowercase)
}

/// The query's terms [`search_terms`] corrects unless the records hold them: what a store
/// that looks words up in batches (in a database) asks about first.
pub fn correctable_terms(query: &str) -> Vec<String> {
    query_terms(query)
        .into_iter()
        .filter(|t| correctable(t))
        .collect()
}

/// Every word [`search_terms`] may try in place of `query`'s `unknown` terms, once each:
/// what such a store asks about second, before calling [`search_terms`] with what it found.
pub fn correction_variants(query: &str, unknown: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for t in unknown {
        each_correction(query, t, |v| {
            if seen.insert(v.to_owned()) {
                out.push(v.to_owned());
            }
            false
        });
    }
    out
}

/// The endings the stemmer takes off an inflected word that a correction may restore:
/// a slip in one ("mooerd" for "moored", "walkign") leaves a word the stemmer keeps whole.
/// A plural's "s" is not one: adding it to a word the records do not hold gives that
/// word's own stem back, a look-up that almost never finds anything.
const INFLECTIONS: &[&str] = &["ed", "ing"];

/// Whether `word` (ASCII letters, any case) ends as an inflected word does ([`INFLECTIONS`]).
fn inflected(word: &str) -> bool {
    INFLECTIONS.iter().any(|e| {
        word.len() > e.len()
            && word.as_bytes()[word.len() - e.len()..].eq_ignore_ascii_case(e.as_bytes())
    })
}

/// Calls `visit` with each term a correction of `term` considers, in the order it prefers
/// them, until it returns true (one reached twice is visited twice): its
/// [`one_edit_variants`] that are not stop words, then, when `term` is the term of a word of
/// `query` whose ending a slip may have broken ([`broken_ending`]), the terms of that word's
/// variants by [`Edits::Slips`] that end as an inflected word does and that the stemmer
/// reduces ("moored" to "moor"). Only for such a word: the variants of a word that already
/// ends as an inflected word does, themselves reduced, turn right words the records do not
/// hold into wrong ones ("winding", by "wining", into "wine").
fn each_correction(query: &str, term: &str, mut visit: impl FnMut(&str) -> bool) {
    let mut done = false;
    each_variant(term, |v| {
        done = !is_stop_word(v) && visit(v);
        done
    });
    if done {
        return;
    }
    let Some(word) = broken_ending(query, term) else {
        return;
    };
    each_edit(&word, Edits::Slips, |v| {
        if !inflected(v) {
            return false;
        }
        let reduced = stemmer().stem(v);
        reduced != v && !is_stop_word(&reduced) && visit(&reduced)
    });
}

/// The words a correction of `word` (lower-case letters a to z) considers, in the order it
/// prefers them: two neighbouring letters swapped (the commonest slip), then a letter
/// dropped, replaced (in a word of [`FUZZY_REPLACE_MIN_CHARS`] letters or more), or added.
/// The first letter stays (it is the one a writer seldom gets wrong, and changing it turns
/// "right" into "night"), and a word of [`FUZZY_MIN_CHARS`] letters or more has no variant
/// shorter than that.
pub fn one_edit_variants(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    each_variant(word, |v| {
        if seen.insert(v.to_owned()) {
            out.push(v.to_owned());
        }
        false
    });
    out
}

/// Calls `visit` with each of [`one_edit_variants`] in order (a variant reached twice is
/// visited twice) until it returns true: one buffer, no variant allocated, as a search
/// looks for the first its records hold.
fn each_variant(word: &str, visit: impl FnMut(&str) -> bool) {
    each_edit(word, Edits::All, visit)
}

/// Which of a word's one-edit variants [`each_edit`] makes.
#[derive(Clone, Copy, PartialEq)]
enum Edits {
    /// All of [`one_edit_variants`].
    All,
    /// Two letters swapped, a doubled letter made single, or a letter added: the slips that
    /// cannot take a letter of a whole word away ("weekend" less its "n" is "weeked", an
    /// inflected "week"), for corrections that also reduce the variant.
    Slips,
}

/// [`each_variant`] limited to `edits`.
fn each_edit(word: &str, edits: Edits, mut visit: impl FnMut(&str) -> bool) {
    let b = word.as_bytes();
    let n = b.len();
    let mut v: Vec<u8> = Vec::with_capacity(n + 1);
    // Every variant is letters a to z (the word's, or one added): valid UTF-8.
    let mut emit = |v: &[u8]| {
        v.len() >= FUZZY_MIN_CHARS.min(n) && v != b && std::str::from_utf8(v).is_ok_and(&mut visit)
    };
    for i in 1..n.saturating_sub(1) {
        if b[i] != b[i + 1] {
            v.clear();
            v.extend_from_slice(b);
            v.swap(i, i + 1);
            if emit(&v) {
                return;
            }
        }
    }
    if n > FUZZY_MIN_CHARS {
        for i in 1..n {
            if edits == Edits::Slips && b[i] != b[i - 1] {
                continue;
            }
            v.clear();
            v.extend_from_slice(&b[..i]);
            v.extend_from_slice(&b[i + 1..]);
            if emit(&v) {
                return;
            }
        }
    }
    if n >= FUZZY_REPLACE_MIN_CHARS && edits == Edits::All {
        for i in 1..n {
            v.clear();
            v.extend_from_slice(b);
            for c in b'a'..=b'z' {
                if c != b[i] {
                    v[i] = c;
                    if emit(&v) {
                        return;
                    }
                }
            }
        }
    }
    for i in 1..=n {
        v.clear();
        v.extend_from_slice(&b[..i]);
        v.push(b'a');
        v.extend_from_slice(&b[i..]);
        for c in b'a'..=b'z' {
            v[i] = c;
            if emit(&v) {
                return;
            }
        }
    }
}

/// A document's distinct terms with their counts in the indexed text and in the context,
/// and its length in terms (both fields): what a store that counts terms itself keeps per
/// record, for [`Bm25::rank_counts`].
pub fn term_counts(text: &str, context: Option<&str>) -> (HashMap<String, (u32, u32)>, u32) {
    let mut counts: HashMap<String, (u32, u32)> = HashMap::new();
    let mut len = 0u32;
    for t in tokenize(text) {
        counts.entry(t).or_default().0 += 1;
        len = len.saturating_add(1);
    }
    for t in context.map(tokenize).into_iter().flatten() {
        counts.entry(t).or_default().1 += 1;
        len = len.saturating_add(1);
    }
    (counts, len)
}

/// The tokens of `text` joined by single spaces: what a full-text engine indexes so that
/// every backend sees the same words.
pub fn token_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for t in tokenize(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&t);
    }
    out
}

/// The weight of a memory's context relative to its content, in full-text scores and in
/// vectors (chosen by measurement, docs/recall.md).
pub const CONTEXT_WEIGHT: f32 = 0.5;

/// BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
    /// The weight of the context field (the content's is 1).
    pub context_weight: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self {
            k1: 1.2,
            b: 0.75,
            context_weight: CONTEXT_WEIGHT,
        }
    }
}

impl Bm25 {
    /// Ranks `docs` (id, content text, context text) for `query`, best first, at most
    /// `limit`. The scoring is BM25 as SQLite FTS5's `bm25()` with column weights computes
    /// it, with Lucene's idf ([`idf`]), and every backend ranks through it: a term's
    /// frequency is its count in the content plus `context_weight` × its count in the
    /// context; the document length is both fields' together. Documents sharing no term with
    /// the query are left out. Scores are divided by the query's attainable score
    /// ([`Bm25::finish`]).
    pub fn rank<'a>(
        &self,
        docs: impl IntoIterator<Item = (MemoryId, &'a str, Option<&'a str>)>,
        query: &str,
        limit: usize,
    ) -> Vec<Scored> {
        InvertedIndex::build(self.context_weight, docs).search(self, query, limit, |_| true)
    }
}

/// An inverted index over documents' content and context (term → documents with the term's
/// weighted frequency), scored by [`Bm25`] with the statistics of the documents a search
/// keeps. Build once, search many times; rebuild when the documents change.
#[derive(Clone, Debug, Default)]
pub struct InvertedIndex {
    /// Per document: its id and length in terms.
    docs: Vec<(MemoryId, u32)>,
    postings: HashMap<String, Vec<(u32, f32)>>,
}

impl InvertedIndex {
    /// Indexes `docs` (id, content text, context text), the context counting
    /// `context_weight` per occurrence.
    pub fn build<'a>(
        context_weight: f32,
        docs: impl IntoIterator<Item = (MemoryId, &'a str, Option<&'a str>)>,
    ) -> Self {
        let mut index = Self::default();
        for (id, text, context) in docs {
            let d = index.docs.len() as u32;
            let (tf, len) = weighted_terms(
                tokenize(text),
                tokenize(context.unwrap_or("")),
                context_weight,
            );
            index.docs.push((id, len));
            for (term, f) in tf {
                index.postings.entry(term).or_default().push((d, f));
            }
        }
        index
    }

    /// The best `limit` documents for `query` among those `keep` accepts, best first; the
    /// statistics (document count, lengths, frequencies) are those of the kept documents.
    pub fn search(
        &self,
        bm25: &Bm25,
        query: &str,
        limit: usize,
        keep: impl Fn(MemoryId) -> bool,
    ) -> Vec<Scored> {
        if limit == 0 {
            return Vec::new();
        }
        let kept: Vec<bool> = self.docs.iter().map(|(id, _)| keep(*id)).collect();
        // A misspelled word is corrected to the kept documents' own words only.
        let terms = search_terms(query, |t| {
            self.postings
                .get(t)
                .is_some_and(|p| p.iter().any(|&(d, _)| kept[d as usize]))
        });
        if terms.is_empty() {
            return Vec::new();
        }
        let (mut n_docs, mut total_len) = (0usize, 0usize);
        for ((_, len), k) in self.docs.iter().zip(&kept) {
            if *k {
                n_docs += 1;
                total_len += *len as usize;
            }
        }
        if n_docs == 0 {
            return Vec::new();
        }
        let mut tf: HashMap<u32, Vec<f32>> = HashMap::new();
        let mut idf = Vec::with_capacity(terms.len());
        for (k, term) in terms.iter().enumerate() {
            let mut df = 0;
            for &(d, f) in self.postings.get(term).into_iter().flatten() {
                if kept[d as usize] {
                    df += 1;
                    tf.entry(d).or_insert_with(|| vec![0.0; terms.len()])[k] = f;
                }
            }
            idf.push(self::idf(n_docs, df));
        }
        let avgdl = total_len as f32 / n_docs as f32;
        let scored: Vec<Scored> = tf
            .into_iter()
            .map(|(d, f)| {
                let (id, len) = self.docs[d as usize];
                Scored {
                    id,
                    score: bm25.score(&idf, &f, len as usize, avgdl),
                }
            })
            .collect();
        Bm25::finish(scored, &idf, limit)
    }
}

/// A term's frequency in a document, from its counts in the content and in the context:
/// the one definition of how the fields weigh (a content occurrence counts 1, a context
/// occurrence `context_weight`).
fn weighted(content: f32, context: f32, context_weight: f32) -> f32 {
    content + context_weight * context
}

/// A document's weighted term frequencies ([`weighted`]) and its length in terms (both
/// fields, every term).
fn weighted_terms(
    content: impl Iterator<Item = String>,
    context: impl Iterator<Item = String>,
    context_weight: f32,
) -> (HashMap<String, f32>, u32) {
    let mut counts: HashMap<String, (f32, f32)> = HashMap::new();
    let mut len = 0;
    for tok in content {
        len += 1;
        counts.entry(tok).or_default().0 += 1.0;
    }
    for tok in context {
        len += 1;
        counts.entry(tok).or_default().1 += 1.0;
    }
    let tf = counts
        .into_iter()
        .map(|(t, (a, b))| (t, weighted(a, b, context_weight)))
        .collect();
    (tf, len)
}

/// Statistics of the documents a full-text search ranks among (after its filter): how many,
/// and their total length in terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CorpusStats {
    /// Documents.
    pub docs: u64,
    /// Their lengths in terms, summed.
    pub total_len: u64,
}

/// How often each query term occurs in one candidate document, as a database that stores
/// the [`tokenize`]d fields can count them: per query term (in [`query_terms`] order) its
/// count in the content and in the context, and the document's length in terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermCounts {
    /// The document.
    pub id: MemoryId,
    /// Occurrences of each query term in the content.
    pub content: Vec<u32>,
    /// Occurrences of each query term in the context.
    pub context: Vec<u32>,
    /// Terms in the content and the context together.
    pub len: u32,
}

impl Bm25 {
    /// Ranks candidates given by their [`TermCounts`], for a database that keeps the terms
    /// and the corpus statistics itself: the same scores as [`InvertedIndex::search`] over
    /// the whole corpus, provided `candidates` holds every document of the corpus that has
    /// one of the query's terms (a term's document frequency is counted among them).
    /// `terms` are the query's [`query_terms`], in the order the counts follow.
    pub fn rank_counts(
        &self,
        candidates: impl IntoIterator<Item = TermCounts>,
        terms: &[String],
        stats: CorpusStats,
        limit: usize,
    ) -> Vec<Scored> {
        if terms.is_empty() || limit == 0 || stats.docs == 0 {
            return Vec::new();
        }
        let docs: Vec<(MemoryId, Vec<f32>, u32)> = candidates
            .into_iter()
            .map(|c| {
                let tf: Vec<f32> = (0..terms.len())
                    .map(|k| {
                        let count = |v: &[u32]| v.get(k).copied().unwrap_or(0) as f32;
                        weighted(count(&c.content), count(&c.context), self.context_weight)
                    })
                    .collect();
                (c.id, tf, c.len)
            })
            .filter(|(_, tf, _)| tf.iter().any(|f| *f > 0.0))
            .collect();
        let n = stats.docs as usize;
        let idf: Vec<f32> = (0..terms.len())
            .map(|k| idf(n, docs.iter().filter(|(_, tf, _)| tf[k] > 0.0).count()))
            .collect();
        let avgdl = stats.total_len as f32 / stats.docs as f32;
        let scored: Vec<Scored> = docs
            .iter()
            .map(|(id, tf, len)| Scored {
                id: *id,
                score: self.score(&idf, tf, *len as usize, avgdl),
            })
            .collect();
        Self::finish(scored, &idf, limit)
    }

    /// What a document with each of the query's terms once, at the average length, scores:
    /// the sum of the terms' idf (terms the corpus lacks included, at their highest idf).
    /// Floored, so a query of terms in every document does not divide by nothing.
    pub fn attainable(idf: &[f32]) -> f32 {
        idf.iter().sum::<f32>().max(1e-3)
    }

    /// The last step of every BM25 ranking, on every backend: each score divided by the
    /// query's [`attainable`](Bm25::attainable) score, so a score says how much of the query
    /// a document matches (about 1: every term, once, at the average length; more with
    /// repeated terms or a short document) on the same scale in any corpus; the best
    /// `limit`, best first. Dividing by one number per query keeps the order.
    pub fn finish(scored: Vec<Scored>, idf: &[f32], limit: usize) -> Vec<Scored> {
        let scores = scored.iter().map(|s| s.score).collect();
        Self::finish_scores(scores, |j| scored[j].id, idf, limit)
    }

    /// [`finish`](Bm25::finish) for scores given apart from their ids (`id(j)` names score
    /// `j`): the same result, without an id read for each candidate.
    pub fn finish_scores(
        mut scores: Vec<f32>,
        id: impl Fn(usize) -> MemoryId,
        idf: &[f32],
        limit: usize,
    ) -> Vec<Scored> {
        let attainable = Self::attainable(idf);
        for s in &mut scores {
            *s /= attainable;
        }
        top_of(&scores, id, limit)
    }

    /// The score of one document: `idf` and weighted term frequencies `tf` per query term,
    /// its length and the collection's average length. The terms add up in query order, so
    /// a term-at-a-time sum of [`Bm25::term`] in that order gives the same number.
    pub fn score(&self, idf: &[f32], tf: &[f32], len: usize, avgdl: f32) -> f32 {
        let norm = self.norm(len, avgdl);
        tf.iter()
            .zip(idf)
            .filter(|(f, _)| **f > 0.0)
            .map(|(&f, &w)| self.term(w, f, norm))
            .sum()
    }

    /// A document's length normalisation: `k1 · (1 − b + b · len / avgdl)`.
    pub fn norm(&self, len: usize, avgdl: f32) -> f32 {
        self.k1 * (1.0 - self.b + self.b * len as f32 / avgdl.max(1e-6))
    }

    /// One query term's part of a document's score: the term's `idf`, its weighted
    /// frequency `f` in the document (more than 0) and the document's [`norm`](Bm25::norm).
    pub fn term(&self, idf: f32, f: f32, norm: f32) -> f32 {
        idf * f * (self.k1 + 1.0) / (f + norm)
    }
}

/// The inverse document frequency of a term in `df` of `n` documents: `ln(1 + (n − df +
/// 0.5) / (df + 0.5))` (Lucene's BM25 idf), positive for every term, so a match counts in a
/// store of any size (FTS5's `ln((n − df + 0.5) / (df + 0.5))` is zero or less for a term in
/// half the documents or more: in a store of one or two memories every term weighed nothing).
pub fn idf(n: usize, df: usize) -> f32 {
    (1.0 + (n as f32 - df as f32 + 0.5) / (df as f32 + 0.5))
        .ln()
        .max(1e-6)
}

/// The order of scored results: best first; ties by id so results are deterministic.
fn by_score(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    b.score.total_cmp(&a.score).then(a.id.cmp(&b.id))
}

/// Keeps the best `limit`, best first (ties by id), without sorting the rest.
pub fn top_scored(v: &mut Vec<Scored>, limit: usize) {
    keep_best(v, limit, by_score);
}

/// Keeps the first `limit` of `v` in `order`, sorted, without sorting the rest: the one
/// selection of a top k that [`top_scored`] and recall's rescoring both make.
pub fn keep_best<T>(
    v: &mut Vec<T>,
    limit: usize,
    mut order: impl FnMut(&T, &T) -> std::cmp::Ordering,
) {
    if limit == 0 {
        v.clear();
        return;
    }
    if v.len() > limit {
        v.select_nth_unstable_by(limit - 1, &mut order);
        v.truncate(limit);
    }
    v.sort_by(order);
}

/// What [`top_scored`] keeps of candidates given as scores (`id(j)` names score `j`): the
/// best `limit`, best first, ties by id. The `limit`-th best score is selected among the
/// bare scores first (as integers, in linear time), so only the candidates that reach it
/// are named and sorted.
pub fn top_of(scores: &[f32], id: impl Fn(usize) -> MemoryId, limit: usize) -> Vec<Scored> {
    if limit == 0 {
        return Vec::new();
    }
    let least = (scores.len() > limit).then(|| {
        let mut keys: Vec<i32> = scores.iter().map(|&s| ordered(s)).collect();
        *keys.select_nth_unstable_by(limit - 1, |a, b| b.cmp(a)).1
    });
    let mut top: Vec<Scored> = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| least.is_none_or(|t| ordered(**s) >= t))
        .map(|(j, &score)| Scored { id: id(j), score })
        .collect();
    top_scored(&mut top, limit);
    top
}

/// A score as an integer in the order of [`f32::total_cmp`] (the same bit flip it makes).
fn ordered(x: f32) -> i32 {
    let bits = x.to_bits() as i32;
    bits ^ ((((bits >> 31) as u32) >> 1) as i32)
}

/// Exact nearest neighbours by dot product (cosine on normalised vectors), best first.
pub fn nearest<'a>(
    vectors: impl IntoIterator<Item = (MemoryId, &'a [f32])>,
    query: &[f32],
    limit: usize,
) -> Vec<Scored> {
    let mut scored: Vec<Scored> = vectors
        .into_iter()
        .filter(|(_, v)| v.len() == query.len())
        .map(|(id, v)| Scored {
            id,
            score: dot(v, query),
        })
        .collect();
    top_scored(&mut scored, limit);
    scored
}

/// The cosine similarity of two vectors (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let n = (dot(a, a) * dot(b, b)).sqrt();
    if n > 0.0 { dot(a, b) / n } else { 0.0 }
}

/// The dot product, in four lanes so the compiler vectorises it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = a.len() / 8;
    for i in 0..chunks {
        for l in 0..8 {
            acc[l] += a[i * 8 + l] * b[i * 8 + l];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for i in chunks * 8..a.len().min(b.len()) {
        sum += a[i] * b[i];
    }
    sum
}

/// Scales `v` to unit length (left as is when it is all zeros).
pub fn normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Little-endian bytes of an `f32` vector, for stores that keep vectors as blobs.
pub fn vector_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`vector_to_bytes`]; `None` when the length is not a multiple of 4.
pub fn vector_from_bytes(b: &[u8]) -> Option<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return None;
    }
    Some(
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelled_word_is_searched_as_the_word_the_records_hold() {
        let vocabulary = ["dentist", "march", "sister", "porto", "live"];
        let known = |t: &str| vocabulary.contains(&t);
        // A swap, a dropped letter, a doubled one, a wrong one.
        for (query, meant) in [
            ("when is my dnetist", "dentist"),
            ("when is my dentst", "dentist"),
            ("when is my dentisst", "dentist"),
            ("when is my dentigt", "dentist"),
        ] {
            assert_eq!(search_terms(query, known), [meant], "{query}");
        }
        // Held words, short words, words with no near neighbour and numbers stay as asked.
        for query in ["sister lives", "mrch", "elephant", "porto 12345"] {
            assert_eq!(search_terms(query, known), query_terms(query), "{query}");
        }
        // A correction that is already a query term is searched once.
        assert_eq!(search_terms("sister sisetr", known), ["sister"]);
        // A store that looks words up in batches finds the same correction.
        let asked = correctable_terms("when is my dnetist");
        assert_eq!(asked, ["dnetist"]);
        let variants = correction_variants("when is my dnetist", &asked);
        assert!(variants.contains(&"dentist".to_owned()));
        let held: Vec<&String> = variants.iter().filter(|v| known(v)).collect();
        assert_eq!(
            search_terms("when is my dnetist", |t| held.iter().any(|h| *h == t)),
            ["dentist"]
        );
        // Never to a stop word, which would match nearly everything.
        assert_eq!(search_terms("thier", |t: &str| t == "their"), ["thier"]);
        // The first letter stays: "right" is not a slip for "night".
        assert_eq!(search_terms("right", |t: &str| t == "night"), ["right"]);
    }

    /// A slip in an inflected word's ending leaves a word the stemmer keeps whole; its
    /// correction is the stem of the word meant, which is what the records hold.
    #[test]
    fn a_slip_in_an_inflected_word_finds_its_stem() {
        let vocabulary: Vec<String> = ["moored", "walking", "booked", "sister"]
            .iter()
            .flat_map(|w| tokenize(w))
            .collect();
        assert_eq!(vocabulary, ["moor", "walk", "book", "sister"]);
        let known = |t: &str| vocabulary.iter().any(|v| v == t);
        for (query, slip, meant) in [
            ("where was the boat mooerd", "mooerd", "moor"),
            ("who was walkign the dog", "walkign", "walk"),
            ("which hotel was bookde", "bookde", "book"),
        ] {
            let terms = search_terms(query, known);
            assert!(terms.iter().any(|t| t == meant), "{query}: {terms:?}");
            assert!(!terms.iter().any(|t| t == slip), "{query}: {terms:?}");
            let asked = correctable_terms(query);
            assert!(
                correction_variants(query, &asked)
                    .iter()
                    .any(|t| t == meant)
            );
        }
        // A word that ends as an inflected word does is not taken for a slip in its ending:
        // "cleaners" is "cleaner", which one letter would make "cleaned", but it is
        // searched as asked.
        let clean = |t: &str| t == "clean";
        assert_eq!(search_terms("cleaners", clean), ["cleaner"]);
        // Nor is a letter of a whole word taken away: "weekend" less its "n" would be
        // "weeked", an inflected "week".
        assert_eq!(search_terms("weekend", |t: &str| t == "week"), ["weekend"]);
        assert!(
            !correction_variants("cleaners", &correctable_terms("cleaners"))
                .iter()
                .any(|t| t == "clean")
        );
    }

    #[test]
    fn one_edit_variants_keep_the_first_letter_and_swaps_come_first() {
        let v = one_edit_variants("abcdef");
        assert_eq!(&v[..2], ["acbdef", "abdcef"]);
        let unique: std::collections::HashSet<&String> = v.iter().collect();
        assert_eq!(unique.len(), v.len());
        assert!(v.iter().all(|w| w.starts_with('a') && w != "abcdef"));
        assert!(v.contains(&"abdef".to_owned()) && v.contains(&"abcdefg".to_owned()));
        assert!(
            !v.contains(&"abxdef".to_owned()),
            "six letters: none replaced"
        );
        assert!(one_edit_variants("abcdefg").contains(&"abxdefg".to_owned()));
        assert!(
            one_edit_variants("plane").iter().all(|w| w.len() >= 5),
            "no variant shorter than five letters"
        );
    }

    /// `top_of` keeps exactly what `top_scored` keeps, ties at the cut included, for every
    /// limit: scores drawn from a few values so that many tie, in an order the ids do not
    /// follow.
    #[test]
    fn top_of_keeps_what_top_scored_keeps() {
        let ids: Vec<MemoryId> = (0..60).map(|_| MemoryId::generate()).collect();
        let scores: Vec<f32> = (0..60u32)
            .map(|j| ((j * 37 + 11) % 7) as f32 * 0.25 - 0.5)
            .collect();
        for limit in 0..=62 {
            let mut all: Vec<Scored> = ids
                .iter()
                .zip(&scores)
                .map(|(&id, &score)| Scored { id, score })
                .collect();
            top_scored(&mut all, limit);
            assert_eq!(top_of(&scores, |j| ids[j], limit), all, "limit {limit}");
        }
    }

    /// The integer order of scores is `total_cmp`'s, negative numbers and zeros included.
    #[test]
    fn ordered_scores_compare_as_total_cmp_does() {
        let xs = [
            f32::NEG_INFINITY,
            -3.5,
            -1e-30,
            -0.0,
            0.0,
            1e-30,
            0.25,
            0.5,
            7.0,
            f32::INFINITY,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(ordered(a).cmp(&ordered(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }

    #[test]
    fn tokenizer_lowercases_and_splits_by_words() {
        let toks: Vec<_> = tokenize("Hey Mel! I'm at the Café, 10:30 — 東京").collect();
        assert_eq!(
            toks,
            [
                "hey", "mel", "i", "m", "at", "the", "café", "10", "30", "東京"
            ]
        );
        assert_eq!(token_string("A  b,c"), "a b c");
    }

    /// `for_each_term` lends the terms `tokenize` gives, in order, on a first reading and
    /// from memory, and when what it calls tokenizes too (the memory is then in use).
    #[test]
    fn lent_terms_are_tokenize_s() {
        let text = "Melanie PAINTED sunrises; the café's paintings, twice — 2023 Zebras";
        let want: Vec<String> = tokenize(text).collect();
        for _ in 0..2 {
            let mut got = Vec::new();
            for_each_term(text, |t| got.push(t.to_owned()));
            assert_eq!(got, want);
        }
        let mut nested = Vec::new();
        for_each_term(text, |t| {
            nested.push(t.to_owned());
            // Words this thread has not seen: reduced without being remembered.
            nested.extend(tokenize(&format!("unseen{}words", t.len())));
        });
        let mut expected = Vec::new();
        for t in &want {
            expected.push(t.clone());
            expected.extend(tokenize(&format!("unseen{}words", t.len())));
        }
        assert_eq!(nested, expected);
    }

    /// A word's term is the same whether this thread has seen it or not, and after the
    /// remembered terms were emptied; case folds before the lookup.
    #[test]
    fn remembered_terms_are_the_stemmer_s() {
        let stemmer = Stemmer::create(Algorithm::English);
        let direct = |w: &str| {
            let lower = w.to_lowercase();
            if is_stop_word(&lower) {
                lower
            } else {
                stemmer.stem(&lower).into_owned()
            }
        };
        let words = [
            "Running",
            "running",
            "RUNNING",
            "the",
            "The",
            "Café",
            "ΣΟΦΟΣ",
            "dogs",
        ];
        for _ in 0..2 {
            for w in words {
                assert_eq!(term(w), direct(w), "{w}");
            }
        }
        // More distinct words than are remembered: the memory empties and refills.
        for i in 0..REMEMBERED_TERMS + 10 {
            let w = format!("Walking{i}s");
            assert_eq!(term(&w), direct(&w), "{w}");
        }
        for w in words {
            assert_eq!(term(w), direct(w), "{w}");
        }
        // A word too long to remember is reduced all the same.
        let long = format!("{}ing", "Abc".repeat(20));
        assert!(long.len() > REMEMBERED_WORD_LEN);
        assert_eq!(term(&long), direct(&long));
        assert!(TERMS.with(|t| !t.borrow().contains_key(&long.to_lowercase())));
    }

    #[test]
    fn stop_words_are_sorted_and_left_out_of_queries() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            STOP_WORDS.iter().map(|w| w.len()).max(),
            Some(LONGEST_STOP_WORD)
        );
        assert!(STOP_WORDS.iter().all(|w| is_stop_word(w)));
        assert!(!is_stop_word("lisbon") && !is_stop_word(""));
        assert_eq!(
            query_terms("When did Caroline go to the groups?"),
            ["carolin", "go", "group"]
        );
        assert_eq!(query_terms("who is it"), ["is", "it", "who"]);
    }

    /// Candidates scored with statistics kept elsewhere rank exactly as the in-memory index
    /// does over the whole corpus.
    #[test]
    fn candidates_with_corpus_statistics_score_as_the_index() {
        let texts = [
            ("the cat sat on the mat", Some("where is the cat")),
            ("the dog barked at the cat", None),
            ("lisbon is where the user moved", Some("moving plans")),
            ("the the the the", None),
            ("cats and dogs and more cats", None),
        ];
        let docs: Vec<(MemoryId, &str, Option<&str>)> = texts
            .iter()
            .map(|(t, c)| (MemoryId::generate(), *t, *c))
            .collect();
        let tokens: Vec<(MemoryId, Vec<String>, Vec<String>)> = docs
            .iter()
            .map(|(id, t, c)| {
                (
                    *id,
                    tokenize(t).collect(),
                    tokenize(c.unwrap_or("")).collect(),
                )
            })
            .collect();
        let stats = CorpusStats {
            docs: tokens.len() as u64,
            total_len: tokens
                .iter()
                .map(|(_, a, b)| (a.len() + b.len()) as u64)
                .sum(),
        };
        let bm25 = Bm25::default();
        for q in [
            "cat",
            "where is the cat",
            "dogs moved lisbon",
            "the",
            "nothing here",
        ] {
            let index = bm25.rank(docs.iter().copied(), q, 10);
            let terms = query_terms(q);
            // Only the documents with a query term, counted as a database counts them.
            let count = |field: &[String]| -> Vec<u32> {
                terms
                    .iter()
                    .map(|t| field.iter().filter(|x| *x == t).count() as u32)
                    .collect()
            };
            let candidates = tokens
                .iter()
                .filter(|(_, a, b)| a.iter().chain(b).any(|t| terms.contains(t)))
                .map(|(id, a, b)| TermCounts {
                    id: *id,
                    content: count(a),
                    context: count(b),
                    len: (a.len() + b.len()) as u32,
                });
            let kept = bm25.rank_counts(candidates, &terms, stats, 10);
            assert_eq!(kept.len(), index.len(), "{q}");
            for (a, b) in kept.iter().zip(&index) {
                assert_eq!(a.id, b.id, "{q}");
                assert!((a.score - b.score).abs() < 1e-5, "{q}: {a:?} {b:?}");
            }
        }
    }

    #[test]
    fn bm25_prefers_rare_terms_and_short_documents() {
        let ids: Vec<MemoryId> = (0..4).map(|_| MemoryId::generate()).collect();
        let docs = [
            (ids[0], "the cat sat on the mat"),
            (ids[1], "the dog"),
            (ids[2], "lisbon is where the user moved"),
            (ids[3], "the the the the"),
        ];
        let rank = |q: &str| Bm25::default().rank(docs.iter().map(|(i, t)| (*i, *t, None)), q, 10);
        let hits = rank("where is lisbon");
        assert_eq!(hits[0].id, ids[2]);
        assert_eq!(hits.len(), 1);
        assert_eq!(rank("the dog")[0].id, ids[1]);
        // Context counts, at a lower weight than content.
        let with_context = [
            (
                ids[0],
                "5 years already!",
                Some("how long have you been married?"),
            ),
            (ids[1], "we married in 2019", None),
            (ids[2], "unrelated", None),
        ];
        let hits = Bm25::default().rank(with_context.iter().copied(), "married years", 10);
        assert_eq!(hits.len(), 2);
        let hits = Bm25::default().rank(with_context.iter().copied(), "how long", 10);
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [ids[0]]);
        let hits = Bm25::default().rank(with_context.iter().copied(), "married", 10);
        assert_eq!(hits[0].id, ids[1], "content outweighs context");
    }

    #[test]
    fn nearest_by_dot_product() {
        let a = MemoryId::generate();
        let b = MemoryId::generate();
        let mut va = vec![1.0, 0.0, 0.0];
        let mut vb = vec![0.6, 0.8, 0.0];
        normalize(&mut va);
        normalize(&mut vb);
        let hits = nearest(
            [(a, va.as_slice()), (b, vb.as_slice())],
            &[0.0, 1.0, 0.0],
            1,
        );
        assert_eq!(hits[0].id, b);
        assert_eq!(vector_from_bytes(&vector_to_bytes(&vb)), Some(vb));
    }
}
