//! Server configuration: a TOML file, `MUISTI_*` environment variables and flags, in rising
//! order of precedence. Each source fills a [`ConfigLayer`]; [`ConfigLayer::over`] stacks
//! them and [`ServerConfig::resolve`] applies the defaults and checks the result.

use std::{net::SocketAddr, path::Path, time::Duration};

use serde::Deserialize;

/// A configuration problem, found before the server starts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// The file is not valid TOML or has an unknown setting.
    #[error("invalid config file {path}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// A setting has a value outside its rule.
    #[error("invalid setting {name}: {reason}")]
    Invalid {
        /// The setting.
        name: &'static str,
        /// Its rule.
        reason: String,
    },
}

/// One source of settings; every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigLayer {
    /// Address to listen on (`127.0.0.1:7878`).
    pub listen: Option<String>,
    /// Store URL (default: SQLite under the platform data directory).
    pub store: Option<String>,
    /// Embedder spec (`builtin`, `none`, `minilm`, `openai:MODEL`, ...).
    pub embedder: Option<String>,
    /// Base URL of an OpenAI-compatible embedding service.
    pub embed_url: Option<String>,
    /// A second model that re-scores recall's best hits (the embedder's specs; `minilm`).
    pub reranker: Option<String>,
    /// Largest request body in bytes (default 1 MiB).
    pub body_limit_bytes: Option<usize>,
    /// Longest a request may take, in seconds (default 30).
    pub request_timeout_secs: Option<u64>,
    /// Longest wait for a request's headers, and for the next request on an idle
    /// connection, in seconds (default 10); then the connection is closed.
    pub header_timeout_secs: Option<u64>,
    /// Most connections served at once (default 512); when full, a new connection takes
    /// the slot of the oldest one that has sent no request, else it is answered 503.
    pub max_connections: Option<usize>,
    /// Most connections from one address (default a quarter of `max_connections`).
    pub max_connections_per_peer: Option<usize>,
    /// Longest wait for a new connection's first request, in seconds (default 3; at most
    /// `header_timeout_secs`).
    pub first_request_timeout_secs: Option<u64>,
    /// Requests per second allowed per API key; 0 turns the limit off (the default).
    pub rate_limit_per_sec: Option<f64>,
    /// Requests a key may burst above its rate (default: one second's worth, at least 1).
    pub rate_limit_burst: Option<u32>,
    /// Ask for a key even on loopback with no keys made.
    pub require_auth: Option<bool>,
    /// Browser origins allowed to call `/mcp`, and every route in open mode (default:
    /// `http://localhost:*`, `http://127.0.0.1:*`); any other `Origin` is refused with 403.
    pub allowed_origins: Option<Vec<String>>,
    /// Host names `/mcp`, and every route in open mode, answer to (default: loopback names
    /// and the listen address).
    pub allowed_hosts: Option<Vec<String>>,
    /// Longest wait for in-flight requests at shutdown, in seconds (default 30).
    pub shutdown_grace_secs: Option<u64>,
    /// Seconds between runs of the scopes' lifetimes (expired records, episodic memories
    /// past the retention, in every tenant); 0 turns the schedule off (default 3600).
    pub maintain_interval_secs: Option<u64>,
    /// Chat model protocol: `openai` (any OpenAI-compatible server) or `anthropic`
    /// (default `openai`). `/v1/chat` is on when `llm_model` is set.
    pub llm_provider: Option<String>,
    /// Chat model API base URL (default: the provider's public API).
    pub llm_base_url: Option<String>,
    /// Chat model name; turns `/v1/chat` on.
    pub llm_model: Option<String>,
    /// System prompt of `/v1/chat`.
    pub llm_system: Option<String>,
    /// Longest a model call may take, in seconds (default 120).
    pub llm_timeout_secs: Option<u64>,
    /// Phrases that block a chat message when they occur in it or in recalled memory.
    pub chat_blocked_phrases: Option<Vec<String>>,
    /// Whether the chat model also judges which declarative entry a write replaces, and
    /// which memory a change the word rules miss replaces, among the offline detector's
    /// candidates (default true when a chat model is set).
    pub llm_judge_conflicts: Option<bool>,
    /// Whether the chat model also extracts facts (`/v1/memories/extract`, the proxy).
    pub llm_extract_facts: Option<bool>,
    /// What the OpenAI-compatible proxy remembers of each exchange: `extract`, `messages`
    /// or `off`.
    pub proxy_remember: Option<String>,
    /// Whether `/v1/chat` learns from what the user says (default true).
    pub chat_learn: Option<bool>,
    /// Read a conversation's gathered messages once this many have gathered.
    pub extract_after_messages: Option<usize>,
    /// ... or once the conversation has been quiet this long, in seconds.
    pub extract_quiet_secs: Option<u64>,
    /// Graph extraction of users' long-term memories: `off` (default) or `offline`.
    pub graph_extractor: Option<String>,
    /// Memories of one conversation read into the graph together (1, the default, to 100).
    pub graph_interval: Option<usize>,
    /// The jobs scheduled maintenance runs (default `expire`, `consolidate`, `promote`,
    /// `cluster`, and `prune` when `max_memories` is set; `archive` only when named).
    pub maintain_jobs: Option<Vec<String>>,
    /// Where archived memories go: `file:///dir`, `s3://bucket/prefix?endpoint=...` (default:
    /// beside a SQLite or file store; none for network stores).
    pub archive_url: Option<String>,
    /// Where snapshots are kept (default: beside a SQLite, file or Markdown store, else
    /// `muisti/snapshots` under the data directory).
    pub snapshot_dir: Option<String>,
    /// Archive moves memories not written or recalled for this many days (default 90).
    pub archive_after_days: Option<u32>,
    /// Archive moves only memories recalled at most this many times (default 2).
    pub archive_max_access: Option<u64>,
    /// The cap scheduled pruning keeps each user to, per namespace (none: no pruning).
    pub max_memories: Option<u64>,
    /// Scheduled pruning deletes only memories of importance below this (default 0.5).
    pub min_importance: Option<f32>,
}

impl ConfigLayer {
    /// Reads a TOML file.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::from_toml(&text).map_err(|e| match e {
            ConfigError::Parse { reason, .. } => ConfigError::Parse {
                path: path.display().to_string(),
                reason,
            },
            other => other,
        })
    }

    /// Parses TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: "<text>".into(),
            reason: e.to_string(),
        })
    }

    /// This layer with `lower`'s values where this one has none.
    pub fn over(self, lower: ConfigLayer) -> ConfigLayer {
        ConfigLayer {
            listen: self.listen.or(lower.listen),
            store: self.store.or(lower.store),
            embedder: self.embedder.or(lower.embedder),
            embed_url: self.embed_url.or(lower.embed_url),
            reranker: self.reranker.or(lower.reranker),
            body_limit_bytes: self.body_limit_bytes.or(lower.body_limit_bytes),
            request_timeout_secs: self.request_timeout_secs.or(lower.request_timeout_secs),
            header_timeout_secs: self.header_timeout_secs.or(lower.header_timeout_secs),
            max_connections: self.max_connections.or(lower.max_connections),
            max_connections_per_peer: self
                .max_connections_per_peer
                .or(lower.max_connections_per_peer),
            first_request_timeout_secs: self
                .first_request_timeout_secs
                .or(lower.first_request_timeout_secs),
            rate_limit_per_sec: self.rate_limit_per_sec.or(lower.rate_limit_per_sec),
            rate_limit_burst: self.rate_limit_burst.or(lower.rate_limit_burst),
            require_auth: self.require_auth.or(lower.require_auth),
            allowed_origins: self.allowed_origins.or(lower.allowed_origins),
            allowed_hosts: self.allowed_hosts.or(lower.allowed_hosts),
            shutdown_grace_secs: self.shutdown_grace_secs.or(lower.shutdown_grace_secs),
            maintain_interval_secs: self.maintain_interval_secs.or(lower.maintain_interval_secs),
            llm_provider: self.llm_provider.or(lower.llm_provider),
            llm_base_url: self.llm_base_url.or(lower.llm_base_url),
            llm_model: self.llm_model.or(lower.llm_model),
            llm_system: self.llm_system.or(lower.llm_system),
            llm_timeout_secs: self.llm_timeout_secs.or(lower.llm_timeout_secs),
            chat_blocked_phrases: self.chat_blocked_phrases.or(lower.chat_blocked_phrases),
            llm_judge_conflicts: self.llm_judge_conflicts.or(lower.llm_judge_conflicts),
            llm_extract_facts: self.llm_extract_facts.or(lower.llm_extract_facts),
            proxy_remember: self.proxy_remember.or(lower.proxy_remember),
            chat_learn: self.chat_learn.or(lower.chat_learn),
            extract_after_messages: self.extract_after_messages.or(lower.extract_after_messages),
            extract_quiet_secs: self.extract_quiet_secs.or(lower.extract_quiet_secs),
            graph_extractor: self.graph_extractor.or(lower.graph_extractor),
            graph_interval: self.graph_interval.or(lower.graph_interval),
            maintain_jobs: self.maintain_jobs.or(lower.maintain_jobs),
            archive_url: self.archive_url.or(lower.archive_url),
            snapshot_dir: self.snapshot_dir.or(lower.snapshot_dir),
            archive_after_days: self.archive_after_days.or(lower.archive_after_days),
            archive_max_access: self.archive_max_access.or(lower.archive_max_access),
            max_memories: self.max_memories.or(lower.max_memories),
            min_importance: self.min_importance.or(lower.min_importance),
        }
    }
}

/// A per-key request rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub per_sec: f64,
    /// Requests allowed at once above the rate.
    pub burst: u32,
}

/// The settings the server runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Store URL; `None` is the default SQLite store.
    pub store: Option<String>,
    /// Embedder spec.
    pub embedder: String,
    /// Embedding service URL.
    pub embed_url: Option<String>,
    /// The reranker's spec, if any.
    pub reranker: Option<String>,
    /// Largest request body.
    pub body_limit: usize,
    /// Longest a request may take.
    pub request_timeout: Duration,
    /// Longest wait for a request's headers (and on an idle connection).
    pub header_timeout: Duration,
    /// Most connections at once.
    pub max_connections: usize,
    /// Most connections from one address.
    pub max_connections_per_peer: usize,
    /// Longest wait for a new connection's first request.
    pub first_request_timeout: Duration,
    /// Per-key rate, if limited.
    pub rate_limit: Option<RateLimit>,
    /// Ask for a key even on loopback with no keys.
    pub require_auth: bool,
    /// Origins allowed on `/mcp`.
    pub allowed_origins: Vec<String>,
    /// Hosts `/mcp` answers to.
    pub allowed_hosts: Vec<String>,
    /// Longest wait for in-flight requests at shutdown.
    pub shutdown_grace: Duration,
    /// Time between scheduled runs of the scopes' lifetimes (`None`: not scheduled).
    pub maintain_interval: Option<Duration>,
    /// Graph extraction (`off` or `offline`).
    pub graph_extractor: String,
    /// How often a conversation is read into the graph.
    pub graph_interval: muisti::graph::GraphInterval,
    /// What scheduled maintenance runs (its jobs, the cap and floor of pruning, what
    /// archive moves).
    pub maintenance: muisti::lifecycle::MaintenanceOptions,
    /// The archive's URL, when configured (else the store's default).
    pub archive_url: Option<String>,
    /// Where snapshots are kept, when configured (else the store's default).
    pub snapshot_dir: Option<std::path::PathBuf>,
    /// The chat model, when `/v1/chat` is on.
    pub chat: Option<ChatConfig>,
    /// What the OpenAI-compatible proxy remembers of each exchange.
    pub proxy_remember: ProxyRemember,
    /// Whether `/v1/chat`, `/v1/chat/stream` (and a local `muisti chat`) learn from what
    /// the user says: each exchange read for facts in the background, as the proxy's are.
    pub chat_learn: bool,
    /// When gathered messages are read for facts (the proxy's background extraction).
    pub debounce: muisti::facts::Debounce,
}

/// What `POST /v1/chat/completions` remembers of each exchange.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProxyRemember {
    /// The facts in it, extracted in the background, debounced (the default).
    #[default]
    Extract,
    /// The user's message and the answer, each stored as said.
    Messages,
    /// Nothing.
    Off,
}

impl std::str::FromStr for ProxyRemember {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        match s.trim() {
            "extract" => Ok(Self::Extract),
            "messages" => Ok(Self::Messages),
            "off" => Ok(Self::Off),
            other => Err(ConfigError::Invalid {
                name: "proxy_remember",
                reason: format!("{other:?} is not extract, messages or off"),
            }),
        }
    }
}

/// The model behind `/v1/chat`. Its API key comes from the environment only
/// (`MUISTI_LLM_API_KEY`, `OPENAI_API_KEY` or `ANTHROPIC_API_KEY`).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatConfig {
    /// `openai` or `anthropic`.
    pub provider: muisti_agent::ProviderKind,
    /// API base URL; `None` is the provider's public API.
    pub base_url: Option<String>,
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// Longest a model call may take.
    pub timeout: Duration,
    /// Phrases that block a message.
    pub blocked_phrases: Vec<String>,
    /// Whether the model judges conflicts too (declarative entries, and changes of memories
    /// the word rules miss).
    pub judge_conflicts: bool,
    /// Whether the model extracts facts too (else the offline extractor does).
    pub extract_facts: bool,
}

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

impl ServerConfig {
    /// The configuration `layer` describes, with defaults for what it leaves out.
    pub fn resolve(layer: ConfigLayer) -> Result<Self, ConfigError> {
        let listen_text = layer.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
        let listen: SocketAddr = listen_text.parse().map_err(|_| ConfigError::Invalid {
            name: "listen",
            reason: format!("{listen_text:?} is not an address like 127.0.0.1:7878"),
        })?;
        let body_limit = layer.body_limit_bytes.unwrap_or(1 << 20);
        if body_limit < 1024 {
            return Err(ConfigError::Invalid {
                name: "body_limit_bytes",
                reason: "must be at least 1024".into(),
            });
        }
        let timeout = layer.request_timeout_secs.unwrap_or(30);
        if timeout == 0 {
            return Err(ConfigError::Invalid {
                name: "request_timeout_secs",
                reason: "must be at least 1".into(),
            });
        }
        let graph_interval = muisti::graph::GraphInterval::every(layer.graph_interval.unwrap_or(1))
            .map_err(|e| ConfigError::Invalid {
                name: "graph_interval",
                reason: format!("{e}"),
            })?;
        let maintenance = scheduled_maintenance(&layer)?;
        let header_timeout = layer.header_timeout_secs.unwrap_or(10);
        if header_timeout == 0 {
            return Err(ConfigError::Invalid {
                name: "header_timeout_secs",
                reason: "must be at least 1".into(),
            });
        }
        let max_connections = layer.max_connections.unwrap_or(512);
        if max_connections == 0 {
            return Err(ConfigError::Invalid {
                name: "max_connections",
                reason: "must be at least 1".into(),
            });
        }
        let max_connections_per_peer = layer
            .max_connections_per_peer
            .unwrap_or((max_connections / 4).max(1));
        if max_connections_per_peer == 0 {
            return Err(ConfigError::Invalid {
                name: "max_connections_per_peer",
                reason: "must be at least 1".into(),
            });
        }
        let first_request_timeout = layer.first_request_timeout_secs.unwrap_or(3);
        if first_request_timeout == 0 {
            return Err(ConfigError::Invalid {
                name: "first_request_timeout_secs",
                reason: "must be at least 1".into(),
            });
        }
        let rate = layer.rate_limit_per_sec.unwrap_or(0.0);
        if !rate.is_finite() || rate < 0.0 {
            return Err(ConfigError::Invalid {
                name: "rate_limit_per_sec",
                reason: "must be 0 (off) or a positive number".into(),
            });
        }
        let rate_limit = (rate > 0.0).then(|| RateLimit {
            per_sec: rate,
            burst: layer
                .rate_limit_burst
                .unwrap_or_else(|| rate.ceil() as u32)
                .max(1),
        });
        let allowed_hosts = layer.allowed_hosts.unwrap_or_else(|| {
            let mut h = vec!["localhost".to_owned(), "127.0.0.1".into(), "::1".into()];
            h.push(listen.ip().to_string());
            h
        });
        let llm_timeout = layer.llm_timeout_secs.unwrap_or(120);
        if llm_timeout == 0 {
            return Err(ConfigError::Invalid {
                name: "llm_timeout_secs",
                reason: "must be at least 1".into(),
            });
        }
        let provider: muisti_agent::ProviderKind = layer
            .llm_provider
            .as_deref()
            .unwrap_or("openai")
            .parse()
            .map_err(|e: muisti_agent::AgentError| ConfigError::Invalid {
                name: "llm_provider",
                reason: e.to_string(),
            })?;
        let chat = layer
            .llm_model
            .filter(|m| !m.trim().is_empty())
            .map(|model| ChatConfig {
                provider,
                base_url: layer.llm_base_url,
                model,
                system: layer.llm_system,
                timeout: Duration::from_secs(llm_timeout),
                blocked_phrases: layer.chat_blocked_phrases.unwrap_or_default(),
                judge_conflicts: layer.llm_judge_conflicts.unwrap_or(true),
                extract_facts: layer.llm_extract_facts.unwrap_or(true),
            });
        let proxy_remember = layer
            .proxy_remember
            .as_deref()
            .unwrap_or("extract")
            .parse()?;
        let after = layer.extract_after_messages.unwrap_or(6);
        if after == 0 || after > muisti::facts::MAX_MESSAGES {
            return Err(ConfigError::Invalid {
                name: "extract_after_messages",
                reason: format!("must be 1 to {}", muisti::facts::MAX_MESSAGES),
            });
        }
        let debounce = muisti::facts::Debounce {
            messages: after,
            quiet: Duration::from_secs(layer.extract_quiet_secs.unwrap_or(10)),
        };
        Ok(Self {
            chat,
            proxy_remember,
            chat_learn: layer.chat_learn.unwrap_or(true),
            debounce,
            listen,
            store: layer.store,
            embedder: layer.embedder.unwrap_or_else(|| "builtin".into()),
            embed_url: layer.embed_url,
            reranker: layer.reranker,
            body_limit,
            request_timeout: Duration::from_secs(timeout),
            header_timeout: Duration::from_secs(header_timeout),
            max_connections,
            max_connections_per_peer,
            first_request_timeout: Duration::from_secs(first_request_timeout.min(header_timeout)),
            rate_limit,
            require_auth: layer.require_auth.unwrap_or(false),
            allowed_origins: layer
                .allowed_origins
                .unwrap_or_else(|| vec!["http://localhost:*".into(), "http://127.0.0.1:*".into()]),
            allowed_hosts,
            shutdown_grace: Duration::from_secs(layer.shutdown_grace_secs.unwrap_or(30)),
            graph_extractor: layer.graph_extractor.unwrap_or_else(|| "off".into()),
            graph_interval,
            maintenance,
            archive_url: layer.archive_url.clone(),
            snapshot_dir: layer.snapshot_dir.clone().map(Into::into),
            maintain_interval: match layer.maintain_interval_secs.unwrap_or(3600) {
                0 => None,
                secs => Some(Duration::from_secs(secs)),
            },
        })
    }
}

/// What scheduled maintenance runs: the jobs named (default expire, consolidate, promote,
/// cluster, and prune with a cap; archive only when named), prune's cap and floor,
/// archive's age and access.
fn scheduled_maintenance(
    layer: &ConfigLayer,
) -> Result<muisti::lifecycle::MaintenanceOptions, ConfigError> {
    use muisti::lifecycle::{Job, MaintenanceOptions};
    let invalid = |name: &'static str, reason: String| ConfigError::Invalid { name, reason };
    let jobs: Vec<Job> = match &layer.maintain_jobs {
        Some(names) => names
            .iter()
            .map(|n| {
                n.parse::<Job>()
                    .map_err(|e| invalid("maintain_jobs", e.to_string()))
            })
            .collect::<Result<_, _>>()?,
        None => {
            let mut jobs = vec![Job::Expire, Job::Consolidate, Job::Promote, Job::Cluster];
            if layer.max_memories.is_some() {
                jobs.push(Job::Prune);
            }
            jobs
        }
    };
    if jobs.contains(&Job::Prune) && layer.max_memories.is_none() {
        return Err(invalid(
            "maintain_jobs",
            "prune needs max_memories, the cap a user's memories are pruned to".into(),
        ));
    }
    let min_importance = layer
        .min_importance
        .unwrap_or(muisti::lifecycle::DEFAULT_MIN_IMPORTANCE);
    if !(0.0..=1.0).contains(&min_importance) {
        return Err(invalid("min_importance", "0 to 1".into()));
    }
    let defaults = MaintenanceOptions::default();
    Ok(MaintenanceOptions {
        jobs,
        max_memories: layer.max_memories,
        min_importance,
        archive_after: layer
            .archive_after_days
            .map_or(defaults.archive_after, muisti::lifecycle::days),
        archive_max_access: layer
            .archive_max_access
            .unwrap_or(defaults.archive_max_access),
        ..defaults
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_beat_the_file_and_the_file_beats_defaults() -> Result<(), ConfigError> {
        let file = ConfigLayer::from_toml(
            "listen = \"127.0.0.1:9000\"\nbody_limit_bytes = 4096\nrate_limit_per_sec = 5.0\nreranker = \"minilm\"\n",
        )?;
        let flags = ConfigLayer {
            listen: Some("127.0.0.1:9100".into()),
            ..ConfigLayer::default()
        };
        let c = ServerConfig::resolve(flags.over(file))?;
        assert_eq!(c.listen.port(), 9100);
        assert_eq!(c.body_limit, 4096);
        assert_eq!(
            c.rate_limit,
            Some(RateLimit {
                per_sec: 5.0,
                burst: 5
            })
        );
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert_eq!(c.reranker.as_deref(), Some("minilm"));
        Ok(())
    }

    #[test]
    fn unknown_settings_and_bad_values_are_refused() {
        assert!(matches!(
            ConfigLayer::from_toml("lisen = \"x\""),
            Err(ConfigError::Parse { .. })
        ));
        let bad = ConfigLayer {
            listen: Some("nowhere".into()),
            ..ConfigLayer::default()
        };
        assert!(matches!(
            ServerConfig::resolve(bad),
            Err(ConfigError::Invalid { name: "listen", .. })
        ));
        let bad = ConfigLayer {
            rate_limit_per_sec: Some(-1.0),
            ..ConfigLayer::default()
        };
        assert!(ServerConfig::resolve(bad).is_err());
        for n in [0, 101] {
            let bad = ConfigLayer::from_toml(&format!("graph_interval = {n}")).expect("toml");
            assert!(
                matches!(
                    ServerConfig::resolve(bad),
                    Err(ConfigError::Invalid {
                        name: "graph_interval",
                        ..
                    })
                ),
                "{n}"
            );
        }
        let prune = ConfigLayer::from_toml("maintain_jobs = [\"prune\"]").expect("toml");
        assert!(matches!(
            ServerConfig::resolve(prune),
            Err(ConfigError::Invalid {
                name: "maintain_jobs",
                ..
            })
        ));
        let capped = ConfigLayer::from_toml("max_memories = 500").expect("toml");
        let config = ServerConfig::resolve(capped).expect("valid");
        assert!(
            config
                .maintenance
                .jobs
                .contains(&muisti::lifecycle::Job::Prune),
            "a cap schedules pruning"
        );
        assert!(
            !ServerConfig::resolve(ConfigLayer::default())
                .expect("defaults")
                .maintenance
                .jobs
                .contains(&muisti::lifecycle::Job::Prune),
            "no pruning by default"
        );
        let every = ConfigLayer::from_toml("graph_interval = 5").expect("toml");
        let config = ServerConfig::resolve(every).expect("valid");
        assert_eq!(config.graph_interval.messages, 5);
    }
}
