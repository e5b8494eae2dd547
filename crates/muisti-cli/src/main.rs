//! The `muisti` command line.

/// `println!` that returns an error instead of panicking when standard output is closed.
macro_rules! outln {
    ($($arg:tt)*) => {
        writeln!(std::io::stdout().lock(), $($arg)*)
    };
}

mod agent_bench;
mod args;
mod backend;
mod bench;
mod chat;
mod commands;
#[cfg(test)]
mod documented;
mod http_bench;
mod locomo;
mod proxy_bench;
mod remote;
mod scale;
mod serve;
mod transfer;

use std::{io::Write, process::ExitCode};

use anyhow::{Context, Result, anyhow};
use clap::Parser;
use muisti::{Engine, OnModelMismatch, Tenant};
use serde_json::Value;

pub(crate) use args::{Cli, Command, GraphCommand, KvCommand, NsArg};

/// mimalloc rather than the system's allocator: recall makes many small, short-lived
/// allocations, and glibc's consolidates its free lists on every request of 1 KiB or more (an
/// embedding's 256 floats). Version 2 (the `v2` feature): version 3 gave freed pages back to
/// the system and faulted them in again on the next recall (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    no_huge_pages();
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

/// Turns transparent huge pages off for this process, as Redis does, unless
/// `MUISTI_HUGE_PAGES=keep`. A user's first recall builds the user's copy in fresh memory;
/// with huge pages each first touch zeroes 2 MiB, and on a virtual machine whose host had
/// not yet backed those pages that took about 5 ms a fault: at random from one run to the
/// next, a user's first recall took 7 ms instead of 2.5 (docs/benchmarks.md).
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    if std::env::var("MUISTI_HUGE_PAGES").as_deref() != Ok("keep") {
        // Best effort: a kernel without the setting keeps its own.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}

/// Exit code: something asked for does not exist (with one line saying what).
pub(crate) const EXIT_NOT_FOUND: u8 = 1;
/// Exit code: bad input or usage (one line).
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code: the store, the server or a model could not be reached or did not answer.
pub(crate) const EXIT_UNAVAILABLE: u8 = 3;

/// The exit code of a failed command, decided here only: from the kind of the engine's or
/// the client's error anywhere in the chain.
fn exit_code(e: &anyhow::Error) -> u8 {
    for cause in e.chain() {
        if let Some(err) = cause.downcast_ref::<muisti::Error>() {
            return match err.kind() {
                muisti::ErrorKind::NotFound => EXIT_NOT_FOUND,
                muisti::ErrorKind::Unavailable | muisti::ErrorKind::Model => EXIT_UNAVAILABLE,
                _ => EXIT_USAGE,
            };
        }
        if let Some(err) = cause.downcast_ref::<muisti_agent::AgentError>() {
            use muisti_agent::AgentErrorKind as Kind;
            match err.kind() {
                Kind::NotFound => return EXIT_NOT_FOUND,
                Kind::Unavailable | Kind::RateLimited => return EXIT_UNAVAILABLE,
                // The store's error, further down the chain, decides.
                Kind::Memory => continue,
                _ => return EXIT_USAGE,
            }
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
    // The first paragraph: the error, with what it lists on the lines below it (the missing
    // arguments' names).
    let first = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    let first = if first.is_empty() {
        "invalid arguments"
    } else {
        first
    };
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
        Command::Graph { .. } => None,
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
        | Command::Manage(_)
        | Command::Extract { .. }
        | Command::Purge
        | Command::Maintain { .. }
        | Command::Restore { .. }
        | Command::Clusters { .. }
        | Command::EndConversation { .. }
        | Command::Proposals { .. }
        | Command::Conversations { .. }
        | Command::Conversation { .. }
        | Command::Confirm { .. }
        | Command::Reject { .. }
        | Command::History { .. }
        | Command::Accesses { .. }
        | Command::Similar { .. }
        | Command::Reindex { .. }
        | Command::Export(_)
        | Command::Import(_)
        | Command::Snapshot(_)
        | Command::Bench { .. } => None,
    }
}

pub(crate) fn open(cli: &Cli, on_mismatch: OnModelMismatch) -> Result<Engine> {
    open_at(cli, cli.store.as_deref(), on_mismatch)
}

/// [`open`], on the store at `url` (the default store if `None`).
pub(crate) fn open_at(
    cli: &Cli,
    url: Option<&str>,
    on_mismatch: OnModelMismatch,
) -> Result<Engine> {
    open_with(EngineSpec {
        url,
        embedder: cli.embedder(),
        embed_url: cli.embed_url.as_deref(),
        reranker: cli.reranker.as_deref(),
        on_mismatch,
        lifetimes: cli.lifetimes(),
        access_log: cli.access_log()?,
        graph: cli.graph_extraction()?,
        interval: cli.graph_interval()?,
        archive: cli.archive.as_deref(),
    })
}

/// What an engine is opened with.
pub(crate) struct EngineSpec<'a> {
    /// The store (the default store if `None`).
    pub(crate) url: Option<&'a str>,
    /// The embedder spec and its service's URL.
    pub(crate) embedder: &'a str,
    pub(crate) embed_url: Option<&'a str>,
    /// The reranker's spec, if any (`--reranker`).
    pub(crate) reranker: Option<&'a str>,
    pub(crate) on_mismatch: OnModelMismatch,
    pub(crate) lifetimes: muisti::Lifetimes,
    pub(crate) access_log: muisti::AccessLog,
    pub(crate) graph: muisti::graph::GraphExtraction,
    pub(crate) interval: muisti::graph::GraphInterval,
    /// The archive's URL (the store's default if `None`).
    pub(crate) archive: Option<&'a str>,
}

/// An engine as `spec` says.
pub(crate) fn open_with(spec: EngineSpec<'_>) -> Result<Engine> {
    let store_url = match spec.url {
        Some(u) => u.to_owned(),
        None => muisti::default_store_url()?,
    };
    let store = open_store(spec.url)?;
    let embedder = muisti::embedder_from_spec(spec.embedder, spec.embed_url)?;
    let reranker = reranker(spec.reranker, spec.embed_url)?;
    let archive =
        muisti::open_archive(&store_url, spec.archive).context("cannot open the archive")?;
    Ok(Engine::builder(store)
        .archive(archive)
        .embedder(embedder)
        .reranker(reranker)
        .on_model_mismatch(spec.on_mismatch)
        .lifetimes(spec.lifetimes)
        .access_log(spec.access_log)
        .graph_extraction(spec.graph)
        .graph_interval(spec.interval)
        .build()?)
}

/// The reranker `spec` names (`--reranker`), if any; `none` is none.
pub(crate) fn reranker(
    spec: Option<&str>,
    embed_url: Option<&str>,
) -> Result<Option<std::sync::Arc<dyn muisti::Embedder>>> {
    match spec {
        None => Ok(None),
        Some(s) => muisti::embedder_from_spec(s, embed_url).context("cannot load the reranker"),
    }
}

/// The store at `url`, or the default store (whose directory, and only its, is made on
/// demand: a typo in a given path is an error, not a new store).
pub(crate) fn open_store(url: Option<&str>) -> Result<std::sync::Arc<dyn muisti::Store>> {
    muisti::open_store(&store_url(url)?).context("cannot open store")
}

/// `url`, or the default store's URL (its directory made on demand).
pub(crate) fn store_url(url: Option<&str>) -> Result<String> {
    Ok(match url {
        Some(u) => u.to_owned(),
        None => {
            let url = muisti::default_store_url()?;
            if let Some(path) = url
                .strip_prefix("sqlite://")
                .or_else(|| url.strip_prefix("file://"))
                && let Some(dir) = std::path::Path::new(path).parent()
            {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            url
        }
    })
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
        Command::Manage(args) => return chat::manage(&cli, args),
        Command::Export(args) => return transfer::export(&cli, args),
        Command::Import(args) => return transfer::import(&cli, args),
        Command::Snapshot(args) => return transfer::snapshot(&cli, args),
        _ => {}
    }
    let tenant = Tenant::new(&cli.tenant)?;
    let memories: Box<dyn backend::Memories> = match &cli.server {
        Some(url) => {
            let client = muisti_client::Client::new(url)?.with_key(cli.api_key.clone());
            match cli.command {
                Command::Reindex { force } => return remote::reindex(&client, force, json),
                Command::Mcp => {
                    return Err(usage(
                        "mcp serves a local store (the server has its own at /mcp); drop --server",
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
            Box::new(backend::Local(engine))
        }
    };
    commands::run(&*memories, cli.command, json)
}

/// A progress bar on standard error when it is a terminal (nothing otherwise): `label
/// [#####.....] done/total`; end it with [`progress_done`].
pub(crate) fn progress_bar(label: &'static str) -> impl FnMut(u64, u64) {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    move |done, total| {
        if tty {
            let width = 30;
            let filled = (done * width as u64)
                .checked_div(total)
                .map_or(width, |f| f as usize)
                .min(width);
            eprint!(
                "\r{label} [{}{}] {done}/{total}",
                "#".repeat(filled),
                ".".repeat(width - filled)
            );
        }
    }
}

/// Ends a [`progress_bar`]'s line.
pub(crate) fn progress_done() {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
}

fn reindex(cli: &Cli, force: bool) -> Result<ExitCode> {
    let engine = open(cli, OnModelMismatch::Ignore)?;
    let start = std::time::Instant::now();
    let mut bar = progress_bar("reindexing");
    let report = engine.reindex(force, &mut bar);
    progress_done();
    let report = report?;
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
