//! muisti: long-term memory for AI agents.
//!
//! [`Engine`] is the one API over every store: the memory contract (remember, get, list,
//! update, forget, count, recall, stats), events for observers and `tracing` spans, and the
//! capabilities as handles that borrow the engine's shared core: [`Engine::kv`] (the
//! key-value contract: get, set with TTL, forget, flush, all, has),
//! [`Engine::declarative`], [`Engine::conversations`], [`Engine::graph`],
//! [`Engine::lifecycle`], [`Engine::transfer`] and [`Engine::insights`]. Stores are opened
//! from URLs with [`open_store`]; the default is SQLite under the platform data directory.
//!
//! Cargo features: `sqlite` (default) for the embedded SQLite store, `redis` for the Redis
//! store, `postgres` for the PostgreSQL + pgvector store, `transformer` for
//! sentence-transformer embedders run locally. Without any, the
//! in-process (`mem://`) and file (`file://`) stores remain.
//!
//! ```
//! use muisti::{Engine, Namespace};
//!
//! let engine = Engine::open("mem://")?;
//! let ns = Namespace::default_ns();
//! engine.kv().set(&ns, "customer_tier", "gold tier customer".into(), None)?;
//! assert_eq!(engine.kv().get(&ns, "customer_tier")?, Some("gold tier customer".into()));
//! let hits = engine.search(&ns, "which tier is the customer", 3, Default::default())?;
//! assert_eq!(hits[0].memory.key.as_str(), "customer_tier");
//! println!("{:?}", hits[0].signals);
//! # Ok::<(), muisti::Error>(())
//! ```

pub mod access;
pub mod analytics;
pub mod conversation;
mod core;
pub mod declarative;
mod engine;
pub mod facts;
pub mod graph;
pub mod lifecycle;
mod open;
mod recall;
mod records;
pub mod transfer;

pub use access::{AccessEntry, AccessKind, AccessLog, AccessLogMode, MemoryAccesses};
pub use engine::snapshot;
pub use engine::{
    Engine, EngineBuilder, Kv, Lifetimes, ListOrder, Maintained, NamespaceStats, OnModelMismatch,
    OrderedPage, ReindexReport, SYSTEM_TENANT, Stats, in_key_space,
};
pub use muisti_core::*;
pub use muisti_embed::{
    Attempt, Backoff, EmbedError, Embedder, HttpConfig, HttpEmbedder, StaticEmbedder, retry,
    retry_after,
};
#[cfg(feature = "mysql")]
pub use muisti_mysql::MysqlStore;
#[cfg(feature = "postgres")]
pub use muisti_postgres::PostgresStore;
#[cfg(feature = "redis")]
pub use muisti_redis::RedisStore;
#[cfg(feature = "sqlite")]
pub use muisti_sqlite::{CacheMemory, CopyMemory, SqliteStore};
pub use muisti_store::{FileStore, MemStore, PrivacyStore, RouterStore, StoreUrl};
pub use open::{
    DEFAULT_STORE_ENV, default_archive_url, default_snapshot_dir, default_store_url,
    embedder_from_spec, open_archive, open_store, registry,
};
pub use recall::{
    DEFAULT_NEIGHBOURS, DEFAULT_RERANK, DEFAULT_TEMPORAL, DEFAULT_WORDS, DEFAULT_WORDS_FLOOR,
    Fusion, NEIGHBOUR_SEEDS, RELEVANT_SCORE, RERANK_POOL, RERANK_TRUST, RecallConfig, RecallHit,
    RecallMode, RecallRequest, Signals, WORD_POOL, Weights,
};
