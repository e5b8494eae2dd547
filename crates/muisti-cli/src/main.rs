//! The `muisti` command line.

/// `println!` that returns an error instead of panicking when standard output is closed.
macro_rules! outln {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*)
    };
}

mod agent_bench;
mod backend;
mod bench;
mod chat;
mod commands;
mod http_bench;
mod locomo;
mod remote;
mod scale;
mod serve;

use std::{io::Write, process::ExitCode};

use anyhow::{Context, Result, anyhow};
use clap::{Args, Parser, Subcommand};
use muisti::{Engine, Namespace, OnModelMismatch, Tenant};
use serde_json::Value;

/// muisti: long-term memory for AI agents.
#[derive(Parser)]
#[command(name = "muisti", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Store URL: sqlite:///path/muisti.db, file:///dir, redis://host:6379/0, mem://.
    /// Default: SQLite under the platform data directory.
    #[arg(long, global = true, env = "MUISTI_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,

    /// Tenant to act as.
    #[arg(long, global = true, env = "MUISTI_TENANT", default_value = "default")]
    tenant: String,

    /// Print records and results as JSON.
    #[arg(long, global = true)]
    json: bool,

    /// Embedder for semantic recall: builtin, none, minilm (from MUISTI_MODEL_DIR),
    /// openai:MODEL, model2vec:DIR or transformer:DIR.
    /// Default: builtin.
    #[arg(
        long = "embedder",
        global = true,
        env = "MUISTI_EMBEDDER",
        value_name = "SPEC"
    )]
    pub(crate) embedder_spec: Option<String>,

    /// Base URL of an OpenAI-compatible embedding service (with --embedder openai:MODEL).
    #[arg(long, global = true, env = "MUISTI_EMBED_URL", value_name = "URL")]
    pub(crate) embed_url: Option<String>,

    /// Talk to an `muisti serve` server at this URL instead of opening a store.
    #[arg(long, global = true, env = "MUISTI_SERVER", value_name = "URL")]
    pub(crate) server: Option<String>,

    /// API key for --server (sent as `Authorization: Bearer`).
    #[arg(
        long,
        global = true,
        env = "MUISTI_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub(crate) api_key: Option<String>,

    #[command(subcommand)]
    command: Command,
}

impl Cli {
    /// The tenant name.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The embedder spec, `builtin` unless given.
    pub(crate) fn embedder(&self) -> &str {
        self.embedder_spec.as_deref().unwrap_or("builtin")
    }
}

#[derive(Subcommand)]
enum Command {
    /// Key-value entries: get, set, forget, has, all, flush.
    Kv {
        #[command(subcommand)]
        command: KvCommand,
    },
    /// Store a memory.
    Remember(RememberArgs),
    /// Show a memory by id, or by key within the namespace.
    Get {
        /// A memory id (ULID) or a key.
        target: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// List memories of a namespace.
    List(ListArgs),
    /// Change fields of a memory by id, atomically (as `PATCH /v1/memories/{id}`); with
    /// --expected-version, only if nobody changed it since that version.
    Update(UpdateArgs),
    /// Delete a memory by id, or by key within the namespace.
    Forget {
        /// A memory id (ULID) or a key.
        target: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Find the memories that best match a query (alias: recall).
    #[command(alias = "recall")]
    Search(SearchArgs),
    /// Memories closest in meaning to the one with this id.
    Similar {
        /// A memory id (ULID).
        id: String,
        /// How many results.
        #[arg(long, short = 'k', default_value_t = 5)]
        limit: usize,
    },
    /// Namespaces, counts and the store's health.
    Stats {
        /// Only this namespace.
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
    },
    /// Delete expired entries now, in every namespace and tenant of the store.
    Purge,
    /// Re-embed memories whose vectors another model made (all of them with --force), in
    /// every tenant, with a progress bar.
    Reindex {
        /// Re-embed every memory.
        #[arg(long)]
        force: bool,
    },
    /// Serve the REST API (/v1), MCP (/mcp), /metrics and /openapi.json over HTTP.
    Serve(serve::ServeArgs),
    /// Serve the MCP tools over standard input and output (for assistants that spawn it).
    Mcp,
    /// API keys: create (printed once), list, revoke.
    Keys {
        #[command(subcommand)]
        command: serve::KeysCommand,
    },
    /// Talk to a model (OpenAI-compatible or Anthropic) with memory recalled into every
    /// prompt: an interactive session, or one message with --message.
    Chat(chat::ChatArgs),
    /// Print the OpenAPI 3.1 document of the REST API.
    Openapi,
    /// Measure the store.
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
}

#[derive(Args, Clone)]
struct NsArg {
    /// Namespace (recall reads `default`).
    #[arg(short = 'n', long = "namespace", default_value = "default")]
    namespace: String,
}

impl NsArg {
    fn get(&self) -> Result<Namespace> {
        Ok(Namespace::new(&self.namespace)?)
    }
}

#[derive(Subcommand)]
enum KvCommand {
    /// Set KEY to VALUE (a string; with --value-json, any JSON value).
    Set {
        /// The key.
        key: String,
        /// The value; `-` reads it from standard input.
        value: String,
        /// Parse VALUE as JSON.
        #[arg(long)]
        value_json: bool,
        /// Expire after this many seconds (omit: never).
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print the value at KEY; exit 1 if there is none.
    Get {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Delete KEY; exit 1 if there was none.
    Forget {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print true or false; exit 1 for false.
    Has {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print every entry of the namespace.
    All {
        #[command(flatten)]
        ns: NsArg,
    },
    /// Delete every entry of the namespace.
    Flush {
        #[command(flatten)]
        ns: NsArg,
    },
}

#[derive(Args)]
struct OwnerArgs {
    /// User the memory belongs to.
    #[arg(long = "user")]
    user_id: Option<String>,
    /// Agent.
    #[arg(long = "agent")]
    agent_id: Option<String>,
    /// Session.
    #[arg(long = "session")]
    session_id: Option<String>,
}

#[derive(Args)]
struct RememberArgs {
    /// The text to remember.
    content: String,
    /// A key (unique in the namespace; writing it again replaces). Default: the new id.
    #[arg(long)]
    key: Option<String>,
    /// Text that situates the memory (for a conversation turn, the turn it answers); recall
    /// indexes it at half the weight of the content.
    #[arg(long)]
    context: Option<String>,
    /// core, daily, conversation or a custom name.
    #[arg(long, default_value = "core")]
    category: String,
    /// scratch, short_term, long_term, episodic or declarative.
    #[arg(long, default_value = "long_term")]
    scope: String,
    /// user_stated, agent_learned, import or a custom name.
    #[arg(long, default_value = "user_stated")]
    source: String,
    /// 0.0 to 1.0.
    #[arg(long)]
    importance: Option<f32>,
    /// 0 to 100, for learned patterns.
    #[arg(long)]
    confidence: Option<u8>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Metadata as KEY=VALUE (VALUE parsed as JSON when it is JSON; repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    metadata: Vec<String>,
    /// Expire after this many seconds (omit: never).
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<u64>,
    #[command(flatten)]
    owner: OwnerArgs,
    #[command(flatten)]
    ns: NsArg,
}

#[derive(Args)]
struct UpdateArgs {
    /// A memory id (ULID).
    id: String,
    /// New text.
    #[arg(long)]
    content: Option<String>,
    /// New situating text.
    #[arg(long)]
    context: Option<String>,
    /// core, daily, conversation or a custom name.
    #[arg(long)]
    category: Option<String>,
    /// scratch, short_term, long_term, episodic or declarative.
    #[arg(long)]
    scope: Option<String>,
    /// user_stated, agent_learned, import or a custom name.
    #[arg(long)]
    source: Option<String>,
    /// active, archived or superseded.
    #[arg(long)]
    state: Option<String>,
    /// The id of the memory that replaces this one (with --state superseded).
    #[arg(long, value_name = "ID")]
    superseded_by: Option<String>,
    /// 0.0 to 1.0.
    #[arg(long)]
    importance: Option<f32>,
    /// 0 to 100.
    #[arg(long)]
    confidence: Option<u8>,
    /// Replace the tags with these (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Replace the metadata with these KEY=VALUE pairs (repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    metadata: Vec<String>,
    /// Expire this many seconds from now.
    #[arg(long, value_name = "SECONDS")]
    ttl: Option<u64>,
    /// Move it to this user.
    #[arg(long)]
    user_id: Option<String>,
    /// Move it to this agent.
    #[arg(long)]
    agent_id: Option<String>,
    /// Move it to this session.
    #[arg(long)]
    session_id: Option<String>,
    /// Refuse (exit 2, "conflict") unless the memory is still at this version.
    #[arg(long, value_name = "VERSION")]
    expected_version: Option<u64>,
}

impl UpdateArgs {
    /// The patch, as the REST API takes it (so both modes validate it the same way).
    fn patch(&self) -> Result<muisti_client::MemoryPatch> {
        Ok(muisti_client::MemoryPatch {
            content: self.content.clone().map(Value::String),
            context: self.context.clone(),
            category: self.category.clone(),
            scope: self.scope.clone(),
            tags: (!self.tags.is_empty()).then(|| self.tags.clone()),
            metadata: if self.metadata.is_empty() {
                None
            } else {
                Some(parse_meta(self.metadata.clone())?)
            },
            importance: self.importance,
            confidence: self.confidence,
            ttl_seconds: self.ttl,
            valid_from: None,
            valid_until: None,
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            session_id: self.session_id.clone(),
            source: self.source.clone(),
            state: self.state.clone(),
            superseded_by: self.superseded_by.clone(),
            expected_version: self.expected_version,
        })
    }
}

#[derive(Args)]
struct FilterArgs {
    #[command(flatten)]
    owner: OwnerArgs,
    /// Only this category.
    #[arg(long)]
    category: Option<String>,
    /// Only this scope.
    #[arg(long)]
    scope: Option<String>,
    /// Only memories with this tag (repeatable: all of them).
    #[arg(long = "tag")]
    tags: Vec<String>,
}

#[derive(Args)]
struct ListArgs {
    #[command(flatten)]
    filter: FilterArgs,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Start after this id (the `next_cursor` of the previous page).
    #[arg(long)]
    after: Option<String>,
    #[command(flatten)]
    ns: NsArg,
}

#[derive(Args)]
struct SearchArgs {
    /// The query.
    query: String,
    /// How many results.
    #[arg(long, short = 'k', default_value_t = 5)]
    limit: usize,
    /// hybrid (full-text and vectors), lexical, vector, or overlap (the seed's word rule).
    #[arg(long, default_value = "hybrid")]
    mode: String,
    /// Leave out hits scoring below this (0 to 1).
    #[arg(long)]
    min_score: Option<f32>,
    /// Show the signals behind each score.
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    ns: NsArg,
}

fn main() -> ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MUISTI_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            let code = exit_code(&e);
            if code == EXIT_NOT_FOUND {
                eprintln!("muisti: {}", error_line(&e));
            } else {
                eprintln!("muisti: error: {}", error_line(&e));
            }
            ExitCode::from(code)
        }
    }
}

/// Exit code: something asked for does not exist (with one line saying what).
pub(crate) const EXIT_NOT_FOUND: u8 = 1;
/// Exit code: bad input or usage (one line).
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code: the store or the server could not be reached or did not answer.
pub(crate) const EXIT_UNAVAILABLE: u8 = 3;

/// The exit code of a failed command, decided here only: from the kind of the engine's or
/// the client's error anywhere in the chain.
fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(err) = cause.downcast_ref::<muisti::Error>() {
            return match err.kind() {
                muisti::ErrorKind::NotFound => EXIT_NOT_FOUND,
                muisti::ErrorKind::Unavailable => EXIT_UNAVAILABLE,
                _ => EXIT_USAGE,
            };
        }
        if let Some(err) = cause.downcast_ref::<muisti_client::ClientError>() {
            return match err {
                muisti_client::ClientError::Api { status: 404, .. } => EXIT_NOT_FOUND,
                muisti_client::ClientError::Api { status, .. } if *status >= 500 => {
                    EXIT_UNAVAILABLE
                }
                muisti_client::ClientError::Transport { .. } => EXIT_UNAVAILABLE,
                _ => EXIT_USAGE,
            };
        }
    }
    EXIT_USAGE
}

/// Help and version print as clap prints them; any other argument error is one line on
/// standard error and exit code 2.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(EXIT_USAGE)
        } else {
            ExitCode::SUCCESS
        };
    }
    let rendered = e.render().to_string();
    let first = rendered
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    eprintln!("muisti: error: {first} (see --help)");
    ExitCode::from(EXIT_USAGE)
}

/// One line: the error and its causes.
pub(crate) fn error_line(e: &anyhow::Error) -> String {
    e.chain()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}

/// Output closed early (`muisti list | head`): not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                .is_some_and(|k| k == std::io::ErrorKind::BrokenPipe)
    })
}

/// Flags a command would otherwise accept and ignore are refused (exit 2, one line).
fn refuse_ignored_flags(cli: &Cli) -> Result<()> {
    let name = match &cli.command {
        Command::Serve(_) => "serve",
        Command::Mcp => "mcp",
        Command::Openapi => "openapi",
        _ => return Ok(()),
    };
    if cli.json {
        return Err(usage(format!("--json does not apply to {name}")));
    }
    if matches!(cli.command, Command::Serve(_)) && cli.tenant != "default" {
        return Err(usage(
            "serve acts for the tenant of each request's API key (open mode: \"default\"); \
             --tenant (or MUISTI_TENANT) does not apply",
        ));
    }
    if matches!(cli.command, Command::Openapi) && cli.server.is_some() {
        return Err(usage("--server does not apply to openapi"));
    }
    Ok(())
}

/// A usage error (exit code 2) with this message.
fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(muisti::Error::invalid("usage", message.into()))
}

/// The namespace a command names, so it is checked before the store is opened: a bad
/// namespace never creates or touches a store.
fn namespace_arg(command: &Command) -> Option<&NsArg> {
    match command {
        Command::Kv { command } => Some(match command {
            KvCommand::Set { ns, .. }
            | KvCommand::Get { ns, .. }
            | KvCommand::Forget { ns, .. }
            | KvCommand::Has { ns, .. }
            | KvCommand::All { ns }
            | KvCommand::Flush { ns } => ns,
        }),
        Command::Remember(a) => Some(&a.ns),
        Command::Get { ns, .. } | Command::Forget { ns, .. } => Some(ns),
        Command::Update(_) => None,
        Command::List(a) => Some(&a.ns),
        Command::Search(a) => Some(&a.ns),
        Command::Stats { .. }
        | Command::Serve(_)
        | Command::Mcp
        | Command::Keys { .. }
        | Command::Openapi
        | Command::Chat(_)
        | Command::Purge
        | Command::Similar { .. }
        | Command::Reindex { .. }
        | Command::Bench { .. } => None,
    }
}

pub(crate) fn open(cli: &Cli, on_mismatch: OnModelMismatch) -> Result<Engine> {
    open_with(
        cli.store.as_deref(),
        cli.embedder(),
        cli.embed_url.as_deref(),
        on_mismatch,
    )
}

/// An engine over the store at `url` (the default store if `None`) with an embedder spec.
pub(crate) fn open_with(
    url: Option<&str>,
    embedder: &str,
    embed_url: Option<&str>,
    on_mismatch: OnModelMismatch,
) -> Result<Engine> {
    let url = match url {
        Some(u) => u.to_owned(),
        None => muisti::default_store_url()?,
    };
    let store = muisti::open_store(&url).context("cannot open store")?;
    let embedder = muisti::embedder_from_spec(embedder, embed_url)?;
    Ok(Engine::builder(store)
        .embedder(embedder)
        .on_model_mismatch(on_mismatch)
        .build()?)
}

/// `--meta KEY=VALUE` arguments as a metadata object (VALUE parsed as JSON when it is JSON).
pub(crate) fn parse_meta(args: Vec<String>) -> Result<serde_json::Map<String, Value>> {
    let mut out = serde_json::Map::new();
    for kv in args {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow!("--meta {kv:?} must be KEY=VALUE"))?;
        let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.to_owned()));
        out.insert(k.to_owned(), v);
    }
    Ok(out)
}

/// The VALUE of `kv set`: `-` reads standard input; with `--value-json` it is parsed as JSON.
pub(crate) fn read_value(value: String, value_json: bool) -> Result<Value> {
    let value = if value == "-" {
        let mut buf = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf)
            .context("reading VALUE from standard input")?;
        buf
    } else {
        value
    };
    Ok(if value_json {
        serde_json::from_str(&value).context("VALUE is not valid JSON")?
    } else {
        Value::String(value)
    })
}

pub(crate) fn print_json(v: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, v)?;
    writeln!(out)?;
    Ok(())
}

fn run(cli: Cli) -> Result<ExitCode> {
    let json = cli.json;
    if let Command::Bench { command } = &cli.command {
        return bench::run(command, &cli, json).map(|()| ExitCode::SUCCESS);
    }
    if let Some(ns) = namespace_arg(&cli.command) {
        ns.get()?;
    }
    refuse_ignored_flags(&cli)?;
    match &cli.command {
        Command::Openapi => {
            write!(
                std::io::stdout().lock(),
                "{}",
                muisti_server::openapi_document()
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        Command::Serve(args) => return serve::serve(&cli, args),
        Command::Keys { command } => return serve::keys(&cli, command),
        Command::Chat(args) => return chat::chat(&cli, args),
        _ => {}
    }
    let tenant = Tenant::new(&cli.tenant)?;
    let memories: Box<dyn backend::Memories> = match &cli.server {
        Some(url) => {
            let client = muisti_client::Client::new(url)?.with_key(cli.api_key.clone());
            match cli.command {
                Command::Reindex { force } => return remote::reindex(&client, force, json),
                Command::Purge | Command::Mcp => {
                    return Err(usage(
                        "purge and mcp work on a local store (the server has its own); drop --server",
                    ));
                }
                _ => Box::new(backend::Remote(client)),
            }
        }
        None => {
            match cli.command {
                Command::Mcp => return serve::mcp(&cli, tenant),
                Command::Reindex { force } => return reindex(&cli, force),
                _ => {}
            }
            let engine = open(&cli, OnModelMismatch::Error)?.with_tenant(tenant);
            if let Command::Purge = cli.command {
                let n = engine.purge_expired()?;
                if json {
                    print_json(&serde_json::json!({ "purged": n }))?;
                } else {
                    outln!("purged {n}")?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            Box::new(backend::Local(engine))
        }
    };
    commands::run(&*memories, cli.command, json)
}

fn reindex(cli: &Cli, force: bool) -> Result<ExitCode> {
    use std::io::IsTerminal;
    let engine = open(cli, OnModelMismatch::Ignore)?;
    let tty = std::io::stderr().is_terminal();
    let start = std::time::Instant::now();
    let report = engine.reindex(force, &mut |done, total| {
        if tty {
            let width = 30;
            let filled = (done * width as u64)
                .checked_div(total)
                .map_or(width, |f| f as usize)
                .min(width);
            eprint!(
                "\rreindexing [{}{}] {done}/{total}",
                "#".repeat(filled),
                ".".repeat(width - filled)
            );
        }
    })?;
    if tty {
        eprintln!();
    }
    if cli.json {
        print_json(&report)?;
    } else {
        outln!(
            "re-embedded {} of {} memories in {:.1}s",
            report.reembedded,
            report.scanned,
            start.elapsed().as_secs_f64()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
