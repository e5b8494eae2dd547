//! The `Memory` trait of agents written against ZeroClaw's memory backends, over muisti.
//!
//! An agent that stores, recalls, lists and forgets through this trait (`name`, `store`,
//! `recall`, `get`, `list`, `forget`, `count`, `health_check`, `reindex`, with
//! [`MemoryCategory`] and [`MemoryEntry`] as that interface defines them) runs on muisti by
//! taking its backend from [`create_memory_backend`] (or [`InMemoryBackend::new`],
//! [`MuistiMemory::open`]): recall is muisti's hybrid recall (full text and vectors, the
//! built-in embedder), the store any of muisti's.
//!
//! Differences from that interface, all on the side of the caller: the methods' error is
//! [`muisti::Error`] (typed; `?` turns it into `anyhow::Error` in an agent that uses anyhow),
//! and the factory answers an error for an unknown backend instead of panicking.
//!
//! Entries live in one namespace (`memory` by default, [`MemoryConfig::namespace`]); the key
//! is muisti's key there, so storing at a key replaces what was there.

use std::sync::Arc;

use async_trait::async_trait;
use muisti::{
    Category, Engine, Error, Filter, Key, ListQuery, Locator, Memory as Record, Namespace,
    Partition, Put, RecallRequest, Result, value_text,
};
use serde::{Deserialize, Serialize};

use crate::AsyncEngine;

/// A memory's category, as the interface defines it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryCategory {
    /// Long-term facts, preferences, decisions.
    Core,
    /// Daily session logs.
    Daily,
    /// Conversation context.
    Conversation,
    /// A user-defined category.
    Custom(String),
}

impl std::fmt::Display for MemoryCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            MemoryCategory::Core => "core",
            MemoryCategory::Daily => "daily",
            MemoryCategory::Conversation => "conversation",
            MemoryCategory::Custom(name) => name,
        })
    }
}

impl MemoryCategory {
    /// muisti's category of the same name (a custom name: 1-64 characters of
    /// `a-z A-Z 0-9 _ - . :`).
    fn to_muisti(&self) -> Result<Category> {
        Ok(match self {
            MemoryCategory::Core => Category::Core,
            MemoryCategory::Daily => Category::Daily,
            MemoryCategory::Conversation => Category::Conversation,
            MemoryCategory::Custom(name) => Category::parse(name)?,
        })
    }

    fn from_muisti(category: &Category) -> Self {
        match category {
            Category::Core => MemoryCategory::Core,
            Category::Daily => MemoryCategory::Daily,
            Category::Conversation => MemoryCategory::Conversation,
            other => MemoryCategory::Custom(other.as_str().to_owned()),
        }
    }
}

/// A memory, as the interface defines it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// muisti's id (a ULID).
    pub id: String,
    /// The key it was stored at.
    pub key: String,
    /// The content (a JSON value's text when it is not text).
    pub content: String,
    /// Its category.
    pub category: MemoryCategory,
    /// When it was last written (RFC 3339).
    pub timestamp: String,
    /// The session it belongs to.
    pub session_id: Option<String>,
    /// The relevance of a recalled entry (0 to 1); `None` elsewhere.
    pub score: Option<f64>,
}

impl MemoryEntry {
    fn from_record(m: &Record, score: Option<f64>) -> Self {
        Self {
            id: m.id.to_string(),
            key: m.key.to_string(),
            content: value_text(&m.content).into_owned(),
            category: MemoryCategory::from_muisti(&m.category),
            timestamp: m.updated_at.to_string(),
            session_id: m.owner.session_id.clone(),
            score,
        }
    }
}

/// A progress callback of [`Memory::reindex`]: (done, total).
pub type Progress = Box<dyn Fn(usize, usize) + Send + Sync>;

/// The memory interface of ZeroClaw's agents.
#[async_trait]
pub trait Memory: Send + Sync {
    /// The backend's name (`sqlite`, `markdown`, `mem`, `postgres`, ...).
    fn name(&self) -> &str;
    /// Stores `content` at `key` (replacing what was there), in `category`, in a session.
    async fn store(
        &self,
        key: &str,
        content: &str,
        category: MemoryCategory,
        session_id: Option<&str>,
    ) -> Result<()>;
    /// The entries that best match `query`, best first, at most `limit`, of one session if
    /// given.
    async fn recall(
        &self,
        query: &str,
        limit: usize,
        session_id: Option<&str>,
    ) -> Result<Vec<MemoryEntry>>;
    /// The entry at `key`.
    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>>;
    /// Every entry, of one category and one session if given, oldest first.
    async fn list(
        &self,
        category: Option<&MemoryCategory>,
        session_id: Option<&str>,
    ) -> Result<Vec<MemoryEntry>>;
    /// Deletes the entry at `key`: whether there was one.
    async fn forget(&self, key: &str) -> Result<bool>;
    /// How many entries there are.
    async fn count(&self) -> Result<usize>;
    /// Whether the store answers.
    async fn health_check(&self) -> bool;
    /// Embeds every entry again with the current embedder: how many were looked at.
    async fn reindex(&self, progress_callback: Option<Progress>) -> Result<usize>;
}

/// Where a backend from [`create_memory_backend`] keeps its entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryConfig {
    /// The store: a path for `sqlite` (a file) and `markdown` (a directory), a URL for the
    /// network backends (`postgres://...`, `redis://...`, `mysql://...`); none: the default
    /// SQLite file of muisti (`default_store_url`) or, for `in_memory`, memory.
    pub path: Option<String>,
    /// The namespace of the entries (default `memory`).
    pub namespace: Option<String>,
}

/// The backend named `backend` (`sqlite`, `markdown`, `in_memory` (or `memory`, `mem`),
/// `postgres`, `redis`, `mysql`, `file`), over muisti. An unknown name is an error.
pub async fn create_memory_backend(
    backend: &str,
    config: &MemoryConfig,
) -> Result<Arc<dyn Memory>> {
    let location = config.path.clone();
    let url = match backend {
        "sqlite" => match location {
            Some(p) if p.contains("://") => p,
            Some(p) => format!("sqlite://{p}"),
            None => muisti::default_store_url()?,
        },
        "markdown" | "file" => match location {
            Some(p) if p.contains("://") => p,
            Some(p) => format!("{backend}://{p}"),
            None => {
                return Err(Error::invalid(
                    "path",
                    format!("the {backend} backend needs a directory"),
                ));
            }
        },
        "in_memory" | "memory" | "mem" => "mem://".to_owned(),
        "postgres" | "redis" | "mysql" => match location {
            Some(url) => url,
            None => {
                return Err(Error::invalid(
                    "path",
                    format!("the {backend} backend needs a URL"),
                ));
            }
        },
        other => {
            return Err(Error::invalid(
                "backend",
                format!(
                    "{other:?} is not a memory backend (sqlite, markdown, in_memory, postgres, redis, mysql, file)"
                ),
            ));
        }
    };
    let namespace = config.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    Ok(Arc::new(MuistiMemory::open(&url, namespace).await?))
}

/// The namespace entries live in unless configured.
pub const DEFAULT_NAMESPACE: &str = "memory";

/// [`Memory`] over a muisti engine.
#[derive(Clone)]
pub struct MuistiMemory {
    engine: AsyncEngine,
    namespace: Namespace,
    name: String,
}

impl MuistiMemory {
    /// An empty memory held in this process (muisti over `mem://`, the built-in embedder),
    /// in the default namespace: the interface's `InMemoryBackend::new()`.
    ///
    /// # Panics
    /// Never in practice: opening memory with the built-in embedder reads no input that can
    /// fail; the constructor keeps the interface's signature (`new() -> Self`).
    #[allow(clippy::expect_used)]
    pub fn new() -> Self {
        let engine = Engine::open("mem://").expect("muisti over memory opens");
        Self::over(engine, DEFAULT_NAMESPACE).expect("the default namespace is valid")
    }

    /// Over an engine, in `namespace`.
    pub fn over(engine: Engine, namespace: &str) -> Result<Self> {
        let name = engine.store().info().backend.to_owned();
        Ok(Self {
            engine: AsyncEngine::new(engine),
            namespace: Namespace::new(namespace)?,
            name,
        })
    }

    /// Over the store at `url`, in `namespace`.
    pub async fn open(url: &str, namespace: &str) -> Result<Self> {
        let engine = AsyncEngine::open(url).await?;
        Self::over(engine.engine().clone(), namespace)
    }

    /// The async engine underneath.
    pub fn engine(&self) -> &AsyncEngine {
        &self.engine
    }

    fn partition(&self) -> Partition {
        self.engine.partition(&self.namespace)
    }

    fn at(&self, key: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.partition(),
            key: Key::new(key)?,
        })
    }

    fn session_filter(session_id: Option<&str>) -> Filter {
        Filter {
            session_id: session_id.map(str::to_owned),
            ..Filter::default()
        }
    }
}

impl Default for MuistiMemory {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Memory for MuistiMemory {
    fn name(&self) -> &str {
        &self.name
    }

    async fn store(
        &self,
        key: &str,
        content: &str,
        category: MemoryCategory,
        session_id: Option<&str>,
    ) -> Result<()> {
        let mut put = Put::new(self.partition(), Some(Key::new(key)?), content);
        put.category = category.to_muisti()?;
        put.owner.session_id = session_id.map(str::to_owned);
        self.engine.remember(put).await.map(|_| ())
    }

    async fn recall(
        &self,
        query: &str,
        limit: usize,
        session_id: Option<&str>,
    ) -> Result<Vec<MemoryEntry>> {
        if limit == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut request = RecallRequest::new(self.namespace.clone(), query, limit);
        request.filter = Self::session_filter(session_id);
        let hits = self.engine.recall(request).await?;
        Ok(hits
            .iter()
            .map(|h| MemoryEntry::from_record(&h.memory, Some(f64::from(h.score))))
            .collect())
    }

    async fn get(&self, key: &str) -> Result<Option<MemoryEntry>> {
        let at = self.at(key)?;
        Ok(self
            .engine
            .get(at)
            .await?
            .map(|m| MemoryEntry::from_record(&m, None)))
    }

    async fn list(
        &self,
        category: Option<&MemoryCategory>,
        session_id: Option<&str>,
    ) -> Result<Vec<MemoryEntry>> {
        let mut filter = Self::session_filter(session_id);
        filter.category = category.map(MemoryCategory::to_muisti).transpose()?;
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .engine
                .list(ListQuery {
                    partition: self.partition(),
                    filter: filter.clone(),
                    after,
                    limit: 0,
                })
                .await?;
            out.extend(page.items.iter().map(|m| MemoryEntry::from_record(m, None)));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    async fn forget(&self, key: &str) -> Result<bool> {
        let at = self.at(key)?;
        self.engine.forget(at).await
    }

    async fn count(&self) -> Result<usize> {
        let namespace = self.namespace.clone();
        let n = self
            .engine
            .run(move |e| e.count(&namespace, &Filter::default()))
            .await?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn health_check(&self) -> bool {
        self.engine
            .run(|e| Ok(e.store().health_check().ok))
            .await
            .unwrap_or(false)
    }

    async fn reindex(&self, progress_callback: Option<Progress>) -> Result<usize> {
        let report = self
            .engine
            .reindex(true, move |done, total| {
                if let Some(report) = &progress_callback {
                    report(
                        usize::try_from(done).unwrap_or(usize::MAX),
                        usize::try_from(total).unwrap_or(usize::MAX),
                    );
                }
            })
            .await?;
        Ok(usize::try_from(report.scanned).unwrap_or(usize::MAX))
    }
}

/// The interface's in-memory backend (what its own example tests construct): muisti over
/// memory, `InMemoryBackend::new()`.
pub type InMemoryBackend = MuistiMemory;
