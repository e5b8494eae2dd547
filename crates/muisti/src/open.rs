//! Opening stores from URLs with every built-in backend registered.

use std::{path::PathBuf, sync::Arc};

use muisti_core::{Error, Result, Store};
use muisti_store::StoreRegistry;

/// An embedder named by a spec string:
///
/// * `builtin`: the static model compiled in (the default);
/// * `none`: no vectors (full-text recall only);
/// * `openai:MODEL`: an OpenAI-compatible `/embeddings` service at `url` (default
///   `https://api.openai.com/v1`), key from `MUISTI_EMBED_API_KEY` or `OPENAI_API_KEY`;
/// * `model2vec:DIR`: a model2vec model directory;
/// * `minilm`: all-MiniLM-L6-v2 run locally from the directory in `MUISTI_MODEL_DIR`,
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
        #[cfg(feature = "transformer")]
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
        #[cfg(feature = "transformer")]
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
        #[cfg(not(feature = "transformer"))]
        None if spec == "minilm" => return Err(without_transformer(spec)),
        #[cfg(not(feature = "transformer"))]
        Some(("transformer", dir)) if !dir.is_empty() => return Err(without_transformer(spec)),
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

/// The error for a transformer embedder in a build without the `transformer` feature.
#[cfg(not(feature = "transformer"))]
fn without_transformer(spec: &str) -> Error {
    Error::invalid(
        "embedder",
        format!("{spec:?} needs muisti built with the `transformer` feature"),
    )
}

/// The environment variable that overrides the default store URL.
pub const DEFAULT_STORE_ENV: &str = "MUISTI_STORE";

/// A registry with every scheme built in: `mem` and `file` always, `sqlite` with the
/// `sqlite` feature (a default), `redis` and `rediss` with the `redis` feature, `postgres`
/// and `postgresql` with the `postgres` feature. Each backend
/// crate parses its own URL; register more with [`StoreRegistry::register`].
pub fn registry() -> StoreRegistry {
    #[allow(unused_mut)] // without backend features, nothing is added
    let mut r = StoreRegistry::new();
    #[cfg(feature = "sqlite")]
    muisti_sqlite::register(&mut r);
    #[cfg(feature = "redis")]
    muisti_redis::register(&mut r);
    #[cfg(feature = "postgres")]
    muisti_postgres::register(&mut r);
    #[cfg(feature = "mysql")]
    muisti_mysql::register(&mut r);
    r
}

/// Opens the store a URL names, with the built-in [`registry`].
pub fn open_store(url: &str) -> Result<Arc<dyn Store>> {
    registry().open(url)
}

/// The default store: SQLite at `<data dir>/muisti/muisti.db` (without the `sqlite`
/// feature, the file store in `<data dir>/muisti/`), where the data directory is the
/// platform's (`$XDG_DATA_HOME` or `~/.local/share` on Linux, `~/Library/Application
/// Support` on macOS, `%APPDATA%` on Windows), never the current directory.
pub fn default_store_url() -> Result<String> {
    let dir: PathBuf = dirs::data_dir()
        .ok_or_else(|| {
            Error::invalid(
                "store url",
                "no platform data directory (set HOME or XDG_DATA_HOME, or pass --store)",
            )
        })?
        .join("muisti");
    if cfg!(feature = "sqlite") {
        Ok(format!("sqlite://{}", dir.join("muisti.db").display()))
    } else {
        Ok(format!("file://{}", dir.display()))
    }
}

/// Where snapshots of the store at `store_url` are kept unless told: beside a SQLite file,
/// a file or a Markdown store's directory (`<path>.snapshots`), else under the platform data
/// directory (`muisti/snapshots`).
pub fn default_snapshot_dir(store_url: &str) -> Result<PathBuf> {
    let local = ["sqlite://", "file://", "markdown://"]
        .iter()
        .find_map(|scheme| store_url.strip_prefix(scheme))
        .map(|p| p.split('?').next().unwrap_or(p).trim_end_matches('/'))
        .filter(|p| !p.is_empty() && *p != ":memory:");
    if let Some(path) = local {
        let absolute = std::path::absolute(path)
            .map_err(|e| Error::invalid("store url", format!("{path}: {e}")))?;
        return Ok(PathBuf::from(format!("{}.snapshots", absolute.display())));
    }
    Ok(dirs::data_dir()
        .ok_or_else(|| {
            Error::invalid(
                "snapshot dir",
                "no platform data directory (set HOME or XDG_DATA_HOME, or pass --dir)",
            )
        })?
        .join("muisti")
        .join("snapshots"))
}

/// The archive of a store when none is configured: beside the store's own files for the
/// stores on this machine (`sqlite://PATH` → `file://PATH.archive`, `file://DIR` →
/// `file://DIR.archive`), in memory for `mem://`, and none for stores shared over a network
/// (Redis, PostgreSQL, MySQL): their servers need one archive they all reach, so it is
/// configured (`s3://bucket/prefix`, or a directory they share).
pub fn default_archive_url(store_url: &str) -> Option<String> {
    let beside = |path: &str| -> Option<String> {
        let path = path.split('?').next().unwrap_or(path);
        if path.is_empty() || path == ":memory:" {
            return None;
        }
        let absolute = std::path::absolute(path).ok()?;
        Some(format!("file://{}.archive", absolute.display()))
    };
    if store_url.starts_with("mem://") {
        Some("memory:".to_owned())
    } else if let Some(path) = store_url.strip_prefix("sqlite://") {
        beside(path)
    } else if let Some(dir) = store_url.strip_prefix("file://") {
        beside(dir.trim_end_matches('/'))
    } else {
        None
    }
}

/// The archive to use: the one `configured` names, else the store's default
/// ([`default_archive_url`]), else none.
pub fn open_archive(
    store_url: &str,
    configured: Option<&str>,
) -> Result<Option<Arc<crate::lifecycle::archive::Archive>>> {
    let url = match configured {
        Some(u) if !u.trim().is_empty() => Some(u.trim().to_owned()),
        _ => default_archive_url(store_url),
    };
    url.map(|u| crate::lifecycle::archive::Archive::open(&u).map(Arc::new))
        .transpose()
}
