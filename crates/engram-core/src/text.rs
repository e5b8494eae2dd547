//! Lexical matching: the tokenizer shared by every backend, and BM25 over in-memory documents.

use crate::{MemoryId, Scored};

/// Splits text into lower-cased words: maximal runs of Unicode letters and digits, as
/// SQLite's `unicode61` and tantivy's default tokenizer do, so every backend indexes the same
/// words. No stemming and no stop words: on conversational data an unstemmed index ranked
/// better.
pub fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
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

/// BM25 parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalisation.
    pub b: f32,
}

impl Default for Bm25 {
    fn default() -> Self {
        Self { k1: 1.2, b: 0.75 }
    }
}

impl Bm25 {
    /// Ranks `docs` (id and text) for `query`, best first, at most `limit`; documents sharing
    /// no word with the query are left out.
    pub fn rank<'a>(
        &self,
        docs: impl IntoIterator<Item = (MemoryId, &'a str)>,
        query: &str,
        limit: usize,
    ) -> Vec<Scored> {
        let mut terms: Vec<String> = tokenize(query).collect();
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() || limit == 0 {
            return Vec::new();
        }
        // Term frequencies per document, for the query terms only.
        let mut n_docs = 0usize;
        let mut total_len = 0usize;
        let mut rows: Vec<(MemoryId, usize, Vec<u32>)> = Vec::new();
        let mut df = vec![0u32; terms.len()];
        for (id, text) in docs {
            n_docs += 1;
            let mut tf = vec![0u32; terms.len()];
            let mut len = 0;
            for tok in tokenize(text) {
                len += 1;
                if let Ok(i) = terms.binary_search(&tok) {
                    tf[i] += 1;
                }
            }
            total_len += len;
            if tf.iter().any(|&f| f > 0) {
                for (d, &f) in df.iter_mut().zip(&tf) {
                    if f > 0 {
                        *d += 1;
                    }
                }
                rows.push((id, len, tf));
            }
        }
        if rows.is_empty() {
            return Vec::new();
        }
        let avg = total_len as f32 / n_docs as f32;
        let idf: Vec<f32> = df
            .iter()
            .map(|&d| {
                let d = d as f32;
                ((n_docs as f32 - d + 0.5) / (d + 0.5) + 1.0).ln()
            })
            .collect();
        let mut scored: Vec<Scored> = rows
            .into_iter()
            .map(|(id, len, tf)| {
                let norm = self.k1 * (1.0 - self.b + self.b * len as f32 / avg.max(1e-6));
                let score = tf
                    .iter()
                    .zip(&idf)
                    .filter(|(f, _)| **f > 0)
                    .map(|(&f, &w)| {
                        let f = f as f32;
                        w * f * (self.k1 + 1.0) / (f + norm)
                    })
                    .sum();
                Scored { id, score }
            })
            .collect();
        sort_scored(&mut scored);
        scored.truncate(limit);
        scored
    }
}

/// Sorts best first; ties by id so results are deterministic.
pub fn sort_scored(v: &mut [Scored]) {
    v.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
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
    sort_scored(&mut scored);
    scored.truncate(limit);
    scored
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

    #[test]
    fn bm25_prefers_rare_terms_and_short_documents() {
        let ids: Vec<MemoryId> = (0..4).map(|_| MemoryId::generate()).collect();
        let docs = [
            (ids[0], "the cat sat on the mat"),
            (ids[1], "the dog"),
            (ids[2], "lisbon is where the user moved"),
            (ids[3], "the the the the"),
        ];
        let hits = Bm25::default().rank(docs.iter().map(|(i, t)| (*i, *t)), "where is lisbon", 10);
        assert_eq!(hits[0].id, ids[2]);
        assert_eq!(hits.len(), 1);
        let hits = Bm25::default().rank(docs.iter().map(|(i, t)| (*i, *t)), "the dog", 10);
        assert_eq!(hits[0].id, ids[1]);
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
