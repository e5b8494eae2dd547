//! Opening stores from URLs with every built-in backend registered.

use std::{path::PathBuf, sync::Arc};

use muisti_core::{Error, Result, Store};
use muisti_sqlite::{Durability, SqliteStore};
use muisti_store::{StoreRegistry, StoreUrl};

/// An embedder named by a spec string:
///
/// * `builtin`: the static model compiled in (the default);
/// * `none`: no vectors (full-text recall only);
/// * `openai:MODEL`: an OpenAI-compatible `/embeddings` service at `url` (default
///   `https://api.openai.com/v1`), key from `MUISTI_EMBED_API_KEY` or `OPENAI_API_KEY`;
/// * `model2vec:DIR`: a model2vec model directory;
/// * `minilm`: all-MiniLM-L6-v2 run locally (candle) from the directory in `MUISTI_MODEL_DIR`,
///   or else downloaded once from the Hugging Face hub (`HF_ENDPOINT`) into the platform
///   cache directory;
/// * `transformer:DIR`: a BERT sentence-embedding model directory.
pub fn embedder_from_spec(
    spec: &str,
    url: Option<&str>,
) -> Result<Option<Arc<dyn muisti_embed::Embedder>>> {
    let err = |e: muisti_embed::EmbedError| Error::invalid("embedder", e.to_string());
    Ok(match spec.split_once(':') {
        None if spec == "builtin" => Some(muisti_embed::StaticEmbedder::builtin().map_err(err)?),
        None if spec == "none" => None,
        Some(("openai", model)) if !model.is_empty() => {
            let config =
                muisti_embed::HttpConfig::new(url.unwrap_or("https://api.openai.com/v1"), model);
            Some(Arc::new(
                muisti_embed::HttpEmbedder::new(config).map_err(err)?,
            ))
        }
        None if spec == "minilm" => Some(Arc::new(
            if std::env::var_os(muisti_transformer::MODEL_DIR_ENV).is_some() {
                muisti_transformer::TransformerEmbedder::from_env()
            } else {
                let cache = dirs::cache_dir()
                    .ok_or_else(|| Error::invalid("embedder", "no cache directory"))?
                    .join("muisti")
                    .join("models");
                muisti_transformer::TransformerEmbedder::from_hub(&cache)
            }
            .map_err(err)?,
        )),
        Some(("transformer", dir)) if !dir.is_empty() => Some(Arc::new(
            muisti_transformer::TransformerEmbedder::from_dir(
                format!("transformer:{dir}"),
                dir.as_ref(),
            )
            .map_err(err)?,
        )),
        Some(("model2vec", dir)) if !dir.is_empty() => Some(Arc::new(
            muisti_embed::StaticEmbedder::from_dir(format!("model2vec:{dir}"), dir.as_ref())
                .map_err(err)?,
        )),
        _ => {
            return Err(Error::invalid(
                "embedder",
                format!(
                    "{spec:?} is not builtin, none, minilm, openai:MODEL, model2vec:DIR or \
                     transformer:DIR"
                ),
            ));
        }
    })
}

/// The environment variable that overrides the default store URL.
pub const DEFAULT_STORE_ENV: &str = "MUISTI_STORE";

/// A registry with every built-in scheme: `mem`, `file`, `sqlite`, `redis`, `rediss`.
/// Register more with [`StoreRegistry::register`].
pub fn registry() -> StoreRegistry {
    let mut r = StoreRegistry::new();
    r.register("sqlite", |url: &StoreUrl| {
        let durability = match url.param("synchronous") {
            None | Some("normal") => Durability::Normal,
            Some("full") => Durability::Full,
            Some(other) => {
                return Err(Error::invalid(
                    "synchronous",
                    format!("{other:?} is not normal or full"),
                ));
            }
        };
        let mut store = SqliteStore::open_with(url.path()?, url.limits()?, durability)?;
        if let Some(n) = url.param("ann_threshold") {
            store = store.with_ann_threshold(n.parse().map_err(|_| {
                Error::invalid("ann_threshold", format!("{n:?} is not a whole number"))
            })?);
        }
        Ok(Arc::new(store) as Arc<dyn Store>)
    });
    for scheme in ["redis", "rediss"] {
        r.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(muisti_redis::RedisStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
    r
}

/// Opens the store a URL names, with the built-in [`registry`].
pub fn open_store(url: &str) -> Result<Arc<dyn Store>> {
    registry().open(url)
}

/// The default store: SQLite at `<data dir>/muisti/muisti.db`, where the data directory is
/// the platform's (`$XDG_DATA_HOME` or `~/.local/share` on Linux, `~/Library/Application
/// Support` on macOS, `%APPDATA%` on Windows), never the current directory.
pub fn default_store_url() -> Result<String> {
    let dir: PathBuf = dirs::data_dir().ok_or_else(|| {
        Error::invalid(
            "store url",
            "no platform data directory (set HOME or XDG_DATA_HOME, or pass --store)",
        )
    })?;
    Ok(format!(
        "sqlite://{}",
        dir.join("muisti").join("muisti.db").display()
    ))
}
