//! The static (model2vec-style) embedder.

use std::{
    path::Path,
    sync::{Arc, OnceLock},
};

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
    dim: usize,
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
        Ok(Self {
            id,
            tokenizer,
            table,
            dim,
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

impl Embedder for StaticEmbedder {
    fn id(&self) -> &str {
        &self.id
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

/// Reads the `embeddings` tensor (F16 or F32, 2-D) of a safetensors file.
fn read_table(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), EmbedError> {
    #[derive(Deserialize)]
    struct Entry {
        dtype: String,
        shape: Vec<usize>,
        data_offsets: (usize, usize),
    }
    let bad = |m: &str| EmbedError::Model(format!("model.safetensors: {m}"));
    // Every length and offset comes from the file: checked before it is used.
    let header_len = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| bad("too short"))?;
    let header_end = usize::try_from(header_len)
        .ok()
        .and_then(|n| n.checked_add(8))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| bad("truncated header"))?;
    let header = &bytes[8..header_end];
    let mut entries: std::collections::HashMap<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|e| bad(&e.to_string()))?;
    let entry: Entry = entries
        .remove("embeddings")
        .ok_or_else(|| bad("no `embeddings` tensor"))
        .and_then(|v| serde_json::from_value(v).map_err(|e| bad(&e.to_string())))?;
    let [rows, dim] = entry.shape[..] else {
        return Err(bad("`embeddings` is not 2-D"));
    };
    let width = match entry.dtype.as_str() {
        "F16" => 2,
        "F32" => 4,
        other => return Err(bad(&format!("dtype {other} is not supported"))),
    };
    let (start, end) = entry.data_offsets;
    let data = header_end
        .checked_add(start)
        .zip(header_end.checked_add(end))
        .and_then(|(s, e)| bytes.get(s..e))
        .ok_or_else(|| bad("data offsets outside the file"))?;
    if rows.checked_mul(dim).and_then(|n| n.checked_mul(width)) != Some(data.len()) {
        return Err(bad("data size does not match the shape"));
    }
    let table: Vec<f32> = if width == 2 {
        data.chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    Ok((rows, dim, table))
}

/// IEEE 754 half to single precision.
fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1f);
    let frac = u32::from(h & 0x3ff);
    let bits = match (exp, frac) {
        (0, 0) => sign,
        (0, f) => {
            // Subnormal: normalise.
            let mut e: i32 = -1;
            let mut f = f;
            while f & 0x400 == 0 {
                f <<= 1;
                e -= 1;
            }
            let f = f & 0x3ff;
            sign | (((127 - 14 + 1 + e) as u32) << 23) | (f << 13)
        }
        (0x1f, 0) => sign | 0x7f80_0000,
        (0x1f, f) => sign | 0x7f80_0000 | (f << 13),
        (e, f) => sign | ((e + 127 - 15) << 23) | (f << 13),
    };
    f32::from_bits(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with this header (and `data` after it).
    fn file(header: &str, declared_len: u64, data: &[u8]) -> Vec<u8> {
        let mut out = declared_len.to_le_bytes().to_vec();
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn lengths_from_the_file_are_checked_before_use() {
        let header = r#"{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}"#;
        let good = file(header, header.len() as u64, &[0; 16]);
        assert_eq!(read_table(&good).expect("reads").0, 2);
        for (what, bytes) in [
            ("huge header length", file(header, u64::MAX, &[0; 16])),
            ("header past the end", file(header, 1 << 40, &[0; 16])),
            ("short data", file(header, header.len() as u64, &[0; 8])),
            (
                "offsets past the end",
                file(
                    r#"{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[18446744073709551600,18446744073709551615]}}"#,
                    103,
                    &[0; 16],
                ),
            ),
            (
                "a shape that overflows",
                file(
                    r#"{"embeddings":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}}"#,
                    84,
                    &[0; 16],
                ),
            ),
            ("too short", vec![1, 2, 3]),
        ] {
            assert!(read_table(&bytes).is_err(), "{what}");
        }
    }

    #[test]
    fn half_precision_conversion() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert!(f16_to_f32(0x7c00).is_infinite());
    }
}
