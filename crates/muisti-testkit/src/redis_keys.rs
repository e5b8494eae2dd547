//! A fresh Redis key prefix per test, deleted afterwards (SCAN, never KEYS).

use muisti_core::MemoryId;

/// The Redis server tests use: `MUISTI_REDIS_URL`, default `redis://127.0.0.1:6379/0`.
pub fn base_url() -> String {
    std::env::var("MUISTI_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".into())
}

/// A key prefix no other test uses; every key under it is deleted when this is dropped.
pub struct KeyPrefix {
    /// The server URL, without muisti's parameters.
    pub url: String,
    /// The prefix, ending in `:`.
    pub prefix: String,
}

impl KeyPrefix {
    /// A fresh prefix on the server at `url`, starting with `label`.
    pub fn fresh(url: String, label: &str) -> Self {
        Self {
            url,
            prefix: format!("{label}-{}:", MemoryId::generate()),
        }
    }

    /// The store URL: the server with this prefix.
    pub fn store_url(&self) -> String {
        format!("{}?prefix={}", self.url, self.prefix)
    }
}

impl Drop for KeyPrefix {
    fn drop(&mut self) {
        // A cluster's URL is not one server's: `ClusterPrefix` deletes its keys.
        let Ok(mut c) = redis::Client::open(self.url.as_str()).and_then(|c| c.get_connection())
        else {
            return;
        };
        let keys = keys_under(&mut c, &self.prefix);
        for chunk in keys.chunks(500) {
            let _ = redis::cmd("DEL").arg(chunk).exec(&mut c);
        }
    }
}

/// The keys under `prefix` on the server `c` is connected to (`SCAN`, never `KEYS`).
pub fn keys_under(c: &mut redis::Connection, prefix: &str) -> Vec<String> {
    redis::cmd("SCAN")
        .cursor_arg(0)
        .arg("MATCH")
        .arg(format!("{prefix}*"))
        .arg("COUNT")
        .arg(1000)
        .clone()
        .iter(c)
        .map(|it| it.filter_map(Result::ok).collect())
        .unwrap_or_default()
}
