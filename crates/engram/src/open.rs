//! Opening stores from URLs with every built-in backend registered.

use std::{path::PathBuf, sync::Arc};

use engram_core::{Error, Result, Store};
use engram_sqlite::{Durability, SqliteStore};
use engram_store::{StoreRegistry, StoreUrl};

/// The environment variable that overrides the default store URL.
pub const DEFAULT_STORE_ENV: &str = "ENGRAM_STORE";

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
        let store = SqliteStore::open_with(url.path()?, url.limits()?, durability)?;
        Ok(Arc::new(store) as Arc<dyn Store>)
    });
    for scheme in ["redis", "rediss"] {
        r.register(scheme, |url: &StoreUrl| {
            Ok(Arc::new(engram_redis::RedisStore::open(url.as_str())?) as Arc<dyn Store>)
        });
    }
    r
}

/// Opens the store a URL names, with the built-in [`registry`].
pub fn open_store(url: &str) -> Result<Arc<dyn Store>> {
    registry().open(url)
}

/// The default store: SQLite at `<data dir>/engram/engram.db`, where the data directory is
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
        dir.join("engram").join("engram.db").display()
    ))
}
