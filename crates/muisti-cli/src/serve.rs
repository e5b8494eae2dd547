//! `muisti serve`, `muisti mcp` and `muisti keys`.

use std::{path::PathBuf, process::ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use muisti::{OnModelMismatch, Tenant};
use muisti_client::{CreatedKey, KeyInfo};
use muisti_server::{ConfigLayer, KeyRing, Server, ServerConfig, shutdown_signal};

use crate::{Cli, print_json};
use std::io::Write;

/// Flags of `muisti serve`; each also reads an `MUISTI_*` variable, and both beat the file.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:7878].
    #[arg(long, env = "MUISTI_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// TOML configuration file (settings as in README's table).
    #[arg(long, env = "MUISTI_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Largest request body in bytes [default: 1048576].
    #[arg(long, env = "MUISTI_BODY_LIMIT_BYTES", value_name = "BYTES")]
    body_limit_bytes: Option<usize>,
    /// Longest a request may take, in seconds [default: 30].
    #[arg(long, env = "MUISTI_REQUEST_TIMEOUT_SECS", value_name = "SECS")]
    request_timeout_secs: Option<u64>,
    /// Requests per second per API key; 0 is no limit [default: 0].
    #[arg(long, env = "MUISTI_RATE_LIMIT_PER_SEC", value_name = "N")]
    rate_limit_per_sec: Option<f64>,
    /// Burst above the rate [default: one second's worth].
    #[arg(long, env = "MUISTI_RATE_LIMIT_BURST", value_name = "N")]
    rate_limit_burst: Option<u32>,
    /// Ask for an API key even on loopback with no key made.
    #[arg(long, env = "MUISTI_REQUIRE_AUTH")]
    require_auth: Option<bool>,
    /// Longest wait for requests in flight at shutdown, in seconds [default: 30].
    #[arg(long, env = "MUISTI_SHUTDOWN_GRACE_SECS", value_name = "SECS")]
    shutdown_grace_secs: Option<u64>,
    /// Seconds between runs of the scopes' lifetimes (expired records, episodic memories
    /// past the retention); 0 turns the schedule off [default: 3600].
    #[arg(long, env = "MUISTI_MAINTAIN_INTERVAL_SECS", value_name = "SECS")]
    maintain_interval_secs: Option<u64>,
    /// Chat model protocol for /v1/chat: openai or anthropic [default: openai].
    #[arg(long, env = "MUISTI_LLM_PROVIDER", value_name = "NAME")]
    llm_provider: Option<String>,
    /// Chat model API base URL [default: the provider's public API].
    #[arg(long, env = "MUISTI_LLM_URL", value_name = "URL")]
    llm_base_url: Option<String>,
    /// Chat model name; turns /v1/chat on (the key comes from MUISTI_LLM_API_KEY,
    /// OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, env = "MUISTI_LLM_MODEL", value_name = "NAME")]
    llm_model: Option<String>,
    /// System prompt of /v1/chat.
    #[arg(long, value_name = "TEXT")]
    llm_system: Option<String>,
    /// Longest a model call may take, in seconds [default: 120].
    #[arg(long, env = "MUISTI_LLM_TIMEOUT_SECS", value_name = "SECS")]
    llm_timeout_secs: Option<u64>,
    /// Whether the chat model also judges which declarative entry a write replaces, and which
    /// memory a change the word rules miss replaces (among the offline detector's
    /// candidates) [default: true with --llm-model].
    #[arg(long, env = "MUISTI_LLM_JUDGE_CONFLICTS", value_name = "BOOL")]
    llm_judge_conflicts: Option<bool>,
    /// Whether the chat model also extracts facts from conversations
    /// (/v1/memories/extract, the proxy) [default: true with --llm-model; else the offline
    /// extractor].
    #[arg(long, env = "MUISTI_LLM_EXTRACT_FACTS", value_name = "BOOL")]
    llm_extract_facts: Option<bool>,
    /// What /v1/chat/completions remembers of each exchange: extract (its facts, in the
    /// background), messages (each as said) or off [default: extract].
    #[arg(long, env = "MUISTI_PROXY_REMEMBER", value_name = "MODE")]
    proxy_remember: Option<String>,
    /// Whether /v1/chat and /v1/chat/stream learn from what the user says: each exchange
    /// read for facts in the background (as the proxy's), into the user's long-term memory
    /// [default: true].
    #[arg(long, env = "MUISTI_CHAT_LEARN", value_name = "BOOL")]
    chat_learn: Option<bool>,
    /// Background extraction reads a conversation once this many messages have gathered
    /// [default: 6].
    #[arg(long, env = "MUISTI_EXTRACT_AFTER_MESSAGES", value_name = "N")]
    extract_after_messages: Option<usize>,
    /// ... or once it has been quiet this many seconds [default: 10].
    #[arg(long, env = "MUISTI_EXTRACT_QUIET_SECS", value_name = "SECS")]
    extract_quiet_secs: Option<u64>,
    /// Where snapshots are kept (POST /v1/admin/snapshots) [default: beside a SQLite, file or
    /// Markdown store, else muisti/snapshots under the data directory].
    #[arg(long, env = "MUISTI_SNAPSHOT_DIR", value_name = "DIR")]
    snapshot_dir: Option<String>,
}

/// `muisti keys ...`.
#[derive(Subcommand)]
pub(crate) enum KeysCommand {
    /// Make a key for a tenant and print it (shown this once; only its hash is kept).
    Create {
        /// The tenant the key acts as.
        #[arg(long)]
        tenant: String,
        /// May manage its tenant's keys and start reindexes.
        #[arg(long)]
        admin: bool,
        /// May manage every tenant's keys and purge the store (implies --admin).
        #[arg(long)]
        operator: bool,
        /// A note to recognise the key by.
        #[arg(long)]
        label: Option<String>,
    },
    /// List keys (ids, tenants, labels; never the keys).
    List,
    /// Revoke a key by id; takes effect on the server's next request.
    Revoke {
        /// The key id (from `muisti keys list`).
        id: String,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The settings of `muisti serve`: flags and environment over the file over defaults.
pub(crate) fn server_config(cli: &Cli, args: &ServeArgs) -> Result<ServerConfig> {
    let flags = ConfigLayer {
        listen: args.listen.clone(),
        store: cli.store.clone(),
        embedder: cli.embedder_spec.clone(),
        embed_url: cli.embed_url.clone(),
        reranker: cli.reranker.clone(),
        body_limit_bytes: args.body_limit_bytes,
        request_timeout_secs: args.request_timeout_secs,
        rate_limit_per_sec: args.rate_limit_per_sec,
        rate_limit_burst: args.rate_limit_burst,
        require_auth: args.require_auth,
        shutdown_grace_secs: args.shutdown_grace_secs,
        maintain_interval_secs: args.maintain_interval_secs,
        llm_provider: args.llm_provider.clone(),
        llm_base_url: args.llm_base_url.clone(),
        llm_model: args.llm_model.clone(),
        llm_system: args.llm_system.clone(),
        llm_timeout_secs: args.llm_timeout_secs,
        llm_judge_conflicts: args.llm_judge_conflicts,
        llm_extract_facts: args.llm_extract_facts,
        proxy_remember: args.proxy_remember.clone(),
        chat_learn: args.chat_learn,
        extract_after_messages: args.extract_after_messages,
        extract_quiet_secs: args.extract_quiet_secs,
        graph_extractor: cli.graph_extractor.clone(),
        graph_interval: cli.graph_interval.map(usize::from),
        archive_url: cli.archive.clone(),
        snapshot_dir: args.snapshot_dir.clone(),
        ..ConfigLayer::default()
    };
    let file = match &args.config {
        Some(p) => ConfigLayer::from_file(p)?,
        None => ConfigLayer::default(),
    };
    Ok(ServerConfig::resolve(flags.over(file))?)
}

/// The server's graph extraction: `llm` asks the chat model (`--llm-model`), the others
/// are the engine's.
fn graph_extraction(config: &ServerConfig) -> Result<muisti::graph::GraphExtraction> {
    if config.graph_extractor.trim() != "llm" {
        return Ok(muisti::graph::GraphExtraction::parse(
            &config.graph_extractor,
        )?);
    }
    let Some(chat) = &config.chat else {
        anyhow::bail!(muisti::Error::invalid(
            "graph_extractor",
            "llm extraction asks the chat model: give --llm-model (and --llm-url)",
        ));
    };
    Ok(muisti::graph::GraphExtraction::With(std::sync::Arc::new(
        muisti_agent::LlmExtractor::new(chat.connect()?),
    )))
}

pub(crate) fn serve(cli: &Cli, args: &ServeArgs) -> Result<ExitCode> {
    let config = server_config(cli, args)?;
    let engine = crate::open_with(crate::EngineSpec {
        url: config.store.as_deref(),
        embedder: &config.embedder,
        embed_url: config.embed_url.as_deref(),
        reranker: config.reranker.as_deref(),
        on_mismatch: OnModelMismatch::Error,
        lifetimes: cli.lifetimes(),
        access_log: cli.access_log()?,
        graph: graph_extraction(&config)?,
        interval: config.graph_interval,
        archive: config.archive_url.as_deref(),
    })?;
    let location = engine.store().info().location;
    runtime()?.block_on(async move {
        let server = Server::bind(engine, config).await?;
        let addr = server.local_addr()?;
        let auth = if server.is_open() {
            "no API keys (loopback only)"
        } else {
            "API keys required"
        };
        eprintln!(
            "muisti serving http://{addr} (store {location}; {auth}): the dashboard at \
             http://{addr}/ui, MCP at http://{addr}/mcp, the API's OpenAPI document at \
             http://{addr}/openapi.json; Ctrl-C stops"
        );
        server.run(shutdown_signal()).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn mcp(cli: &Cli, tenant: Tenant) -> Result<ExitCode> {
    let engine = crate::open(cli, OnModelMismatch::Error)?.with_tenant(tenant);
    runtime()?.block_on(muisti_server::mcp::serve_stdio(engine))?;
    Ok(ExitCode::SUCCESS)
}

/// Where keys are managed: the store itself, or a server's admin endpoint (`--server`).
enum Keys {
    Local(KeyRing),
    Remote(muisti_client::Client),
}

impl Keys {
    fn open(cli: &Cli) -> Result<Self> {
        if let Some(url) = &cli.server {
            let client = muisti_client::Client::new(url)?.with_key(cli.api_key.clone());
            return Ok(Keys::Remote(client));
        }
        let store = crate::open_store(cli.store.as_deref())?;
        Ok(Keys::Local(KeyRing::new(store)))
    }

    fn create(
        &self,
        tenant: &str,
        admin: bool,
        operator: bool,
        label: Option<String>,
    ) -> Result<CreatedKey> {
        Ok(match self {
            Keys::Local(ring) => ring.create_with(tenant, admin, operator, label)?,
            Keys::Remote(client) => client.create_key(&muisti_client::NewKey {
                tenant: tenant.to_owned(),
                admin,
                operator,
                label,
            })?,
        })
    }

    fn list(&self) -> Result<Vec<KeyInfo>> {
        Ok(match self {
            Keys::Local(ring) => ring.list()?,
            Keys::Remote(client) => client.keys()?.keys,
        })
    }

    fn revoke(&self, id: &str) -> Result<bool> {
        Ok(match self {
            Keys::Local(ring) => {
                if ring.is_last_admin(id)? {
                    eprintln!(
                        "warning: {id} was the last admin key: no one can manage keys over the \
                         API until `muisti keys create --admin` makes another"
                    );
                }
                ring.revoke(id)?
            }
            Keys::Remote(client) => client.revoke_key(id)?,
        })
    }
}

pub(crate) fn keys(cli: &Cli, command: &KeysCommand) -> Result<ExitCode> {
    let keys = Keys::open(cli)?;
    match command {
        KeysCommand::Create {
            tenant,
            admin,
            operator,
            label,
        } => {
            let made = keys.create(tenant, *admin, *operator, label.clone())?;
            if cli.json {
                print_json(&made)?;
            } else {
                outln!("{}", made.key)?;
                eprintln!(
                    "key {} for tenant {:?}: shown once, store it now",
                    made.info.id, made.info.tenant
                );
            }
        }
        KeysCommand::List => {
            let list = keys.list()?;
            if cli.json {
                print_json(&list)?;
            } else {
                for k in &list {
                    outln!(
                        "{}\t{}\t{}\t{}\t{}",
                        k.id,
                        k.tenant,
                        if k.admin { "admin" } else { "-" },
                        k.created_at,
                        k.label.as_deref().unwrap_or("")
                    )?;
                }
            }
        }
        KeysCommand::Revoke { id } => {
            if !keys.revoke(id)? {
                bail!("no key with id {id:?}");
            }
            outln!("revoked {id}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
