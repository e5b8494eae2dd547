//! muisti for tokio: [`AsyncEngine`], the engine's API as futures, and [`memory`], the
//! `Memory` trait that agents written against ZeroClaw's use, as an adapter over the engine.
//!
//! The engine is synchronous (its stores are SQLite, files, blocking clients); every call
//! here runs it on tokio's blocking pool (`spawn_blocking`), so an async task never blocks
//! a runtime worker.
//!
//! ```no_run
//! # async fn demo() -> Result<(), muisti::Error> {
//! use muisti_async::AsyncEngine;
//! use muisti::{Namespace, Partition, Put, RecallRequest};
//!
//! let engine = AsyncEngine::open("sqlite:///tmp/muisti.db").await?;
//! let ns = Namespace::new("default")?;
//! let put = Put::new(engine.partition(&ns), None, "Prefers a window seat");
//! engine.remember(put).await?;
//! let hits = engine.recall(RecallRequest::new(ns, "where does she sit?", 3)).await?;
//! # Ok(()) }
//! ```

pub mod memory;

use muisti::{
    Engine, Error, ListQuery, Locator, Memory, Namespace, Page, Partition, Put, RecallHit,
    RecallRequest, ReindexReport, Result, Stats, UpdateRequest, Written,
};

/// The engine's API as futures: each call runs the engine on tokio's blocking pool.
/// Cheap to clone (the engine is shared).
#[derive(Clone)]
pub struct AsyncEngine {
    engine: Engine,
}

impl AsyncEngine {
    /// Wraps an engine.
    pub fn new(engine: Engine) -> Self {
        Self { engine }
    }

    /// Opens the engine over a store URL (`sqlite://`, `mem://`, `markdown://`,
    /// `postgres://`, ...), as [`Engine::open`].
    pub async fn open(url: &str) -> Result<Self> {
        let url = url.to_owned();
        Ok(Self::new(blocking(move || Engine::open(&url)).await?))
    }

    /// The engine underneath (its calls block: use them from `spawn_blocking`).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A namespace of this engine's tenant.
    pub fn partition(&self, namespace: &Namespace) -> Partition {
        self.engine.partition(namespace)
    }

    /// Runs any engine call on the blocking pool: for the calls this type has no method for.
    pub async fn run<T, F>(&self, call: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Engine) -> Result<T> + Send + 'static,
    {
        let engine = self.engine.clone();
        blocking(move || call(&engine)).await
    }

    /// [`Engine::remember`].
    pub async fn remember(&self, put: Put) -> Result<Written> {
        self.run(move |e| e.remember(put)).await
    }

    /// [`Engine::remember_many`].
    pub async fn remember_many(&self, puts: Vec<Put>) -> Result<Vec<Written>> {
        self.run(move |e| e.remember_many(puts)).await
    }

    /// [`Engine::recall`].
    pub async fn recall(&self, request: RecallRequest) -> Result<Vec<RecallHit>> {
        self.run(move |e| e.recall(&request)).await
    }

    /// [`Engine::get`].
    pub async fn get(&self, at: Locator) -> Result<Option<Memory>> {
        self.run(move |e| e.get(&at)).await
    }

    /// [`Engine::update`].
    pub async fn update(&self, request: UpdateRequest) -> Result<Memory> {
        self.run(move |e| e.update(request)).await
    }

    /// [`Engine::forget`].
    pub async fn forget(&self, at: Locator) -> Result<bool> {
        self.run(move |e| e.forget(&at)).await
    }

    /// [`Engine::list`].
    pub async fn list(&self, query: ListQuery) -> Result<Page> {
        self.run(move |e| e.list(query)).await
    }

    /// [`Kv::get`](muisti::Kv::get).
    pub async fn kv_get(
        &self,
        namespace: Namespace,
        key: String,
    ) -> Result<Option<serde_json::Value>> {
        self.run(move |e| e.kv().get(&namespace, &key)).await
    }

    /// [`Kv::set`](muisti::Kv::set) without expiry.
    pub async fn kv_set(
        &self,
        namespace: Namespace,
        key: String,
        value: serde_json::Value,
    ) -> Result<Written> {
        self.run(move |e| e.kv().set(&namespace, &key, value, None))
            .await
    }

    /// [`Engine::stats`].
    pub async fn stats(&self) -> Result<Stats> {
        self.run(|e| e.stats()).await
    }

    /// [`Engine::reindex`]; `progress` is called from the blocking pool with (done, total).
    pub async fn reindex(
        &self,
        force: bool,
        mut progress: impl FnMut(u64, u64) + Send + 'static,
    ) -> Result<ReindexReport> {
        self.run(move |e| e.reindex(force, &mut progress)).await
    }
}

/// Runs `f` on tokio's blocking pool; a panic there is an error, never lost.
async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Backend {
            backend: "muisti-async",
            reason: format!("the engine's task failed: {e}"),
        })?
}
