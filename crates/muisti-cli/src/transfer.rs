//! `muisti export` and `muisti import`: a store's records as a stream, and back.

use std::{
    fs::File,
    io::{BufRead, BufReader, BufWriter, Write},
    path::PathBuf,
    process::ExitCode,
    time::Instant,
};

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use muisti::{
    Engine, Namespace, OnModelMismatch, Partition, Tenant, Timestamp,
    snapshot::Snapshots,
    transfer::{JsonlWriter, Selection, Trust},
};

use crate::{Cli, open_at, open_store, print_json, progress_bar, progress_done, store_url, usage};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// One whole record per line, after a header line; `muisti import` reads it.
    Jsonl,
    /// Sections as the Markdown store writes them, per namespace: to read, grep or diff.
    Markdown,
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    format: ExportFormat,
    /// Include each record's vector (JSON Lines only; without, `import` embeds again).
    #[arg(long)]
    with_vectors: bool,
    /// Only this namespace.
    #[arg(long = "namespace", value_name = "N")]
    namespace: Option<String>,
    /// Only this user's records.
    #[arg(long = "user", value_name = "U")]
    user: Option<String>,
    /// Every tenant of the store, muisti's own included (API keys, queues), instead of
    /// --tenant's.
    #[arg(long)]
    all_tenants: bool,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ImportArgs {
    /// Read the export from this file instead of standard input.
    #[arg(long, short = 'i', value_name = "FILE", conflicts_with = "from")]
    input: Option<PathBuf>,
    /// Copy every record of another store (its URL) instead of reading an export.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
    /// Write agent-learned declarative entries as entries, as the records say they are.
    /// Without it they pass the confirmation gate: each becomes a proposal its user
    /// confirms (an export can claim anything; the import writes into any tenant).
    #[arg(long)]
    trusted: bool,
}

/// `muisti export`.
pub(crate) fn export(cli: &Cli, args: &ExportArgs) -> Result<ExitCode> {
    if cli.server.is_some() {
        return Err(usage(
            "export reads a store: give --store (or MUISTI_STORE), not --server",
        ));
    }
    if args.with_vectors && args.format == ExportFormat::Markdown {
        return Err(usage("--with-vectors applies to --format jsonl only"));
    }
    let selection = Selection {
        tenants: (!args.all_tenants)
            .then(|| Tenant::new(&cli.tenant).map(|t| vec![t]))
            .transpose()?,
        namespace: args.namespace.as_deref().map(Namespace::new).transpose()?,
        user_id: args.user.clone(),
    };
    let engine = open_bulk(cli, OnModelMismatch::Ignore)?;
    let sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let out = BufWriter::with_capacity(1 << 16, sink);
    let start = Instant::now();
    let mut bar = progress_bar("exporting");
    let n = match args.format {
        ExportFormat::Jsonl => {
            let mut w = JsonlWriter::new(out, engine.store_model()?, args.with_vectors)?;
            let n = engine
                .transfer()
                .export(&selection, args.with_vectors, &mut bar, &mut |r| {
                    w.write(&r)
                });
            w.finish()?;
            n
        }
        ExportFormat::Markdown => {
            let mut out = out;
            let mut current: Option<Partition> = None;
            let mut text = String::new();
            // The engine's own records (clusterings' vectors, the graph's indexes, the
            // history) are no reading matter: the JSON Lines export carries them.
            let mut own = 0;
            let n = engine
                .transfer()
                .export(&selection, false, &mut bar, &mut |r| {
                    if r.memory.partition.namespace.is_reserved() {
                        own += 1;
                        return Ok(());
                    }
                    text.clear();
                    if current.as_ref() != Some(&r.memory.partition) {
                        if current.is_some() {
                            text.push('\n');
                        }
                        text.push_str(&muisti::transfer::markdown::heading(
                            &r.memory.partition,
                            None,
                        ));
                        current = Some(r.memory.partition.clone());
                    }
                    text.push('\n');
                    muisti::transfer::markdown::section(&mut text, &r.memory);
                    out.write_all(text.as_bytes())
                        .map_err(|e| muisti::Error::backend("export", e))
                });
            out.flush()?;
            n.map(|n| n - own)
        }
    };
    progress_done();
    let n = n?;
    eprintln!(
        "exported {n} records in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// The engine a bulk command (export, import, snapshots) works with: on the store `cli`
/// names, a SQLite file read and written without its memory map unless the URL sets
/// `mmap_mb`: a command that goes through every record once gains nothing from the map,
/// whose pages would count in its resident memory.
fn open_bulk(cli: &Cli, on_mismatch: OnModelMismatch) -> Result<Engine> {
    let mut url = store_url(cli.store.as_deref())?;
    let parsed = muisti::StoreUrl::parse(&url)?;
    if parsed.scheme() == "sqlite" && parsed.param("mmap_mb").is_none() {
        url.push_str(if url.contains('?') {
            "&mmap_mb=0"
        } else {
            "?mmap_mb=0"
        });
    }
    open_at(cli, Some(&url), on_mismatch)
}

/// `muisti import`.
pub(crate) fn import(cli: &Cli, args: &ImportArgs) -> Result<ExitCode> {
    if cli.server.is_some() {
        return Err(usage(
            "import writes to a store: give --store (or MUISTI_STORE), not --server",
        ));
    }
    let engine = open_bulk(cli, OnModelMismatch::Error)?;
    let start = Instant::now();
    let trust = if args.trusted {
        Trust::Trusted
    } else {
        Trust::Gated
    };
    let n = match &args.from {
        Some(url) => copy_from(&engine, url, trust)?,
        None => {
            let input: Box<dyn BufRead> = match &args.input {
                Some(path) => Box::new(BufReader::with_capacity(
                    1 << 16,
                    File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
                )),
                None => Box::new(BufReader::with_capacity(1 << 16, std::io::stdin().lock())),
            };
            read_into(&engine, input, trust)?
        }
    };
    eprintln!(
        "imported {n} records in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Imports a JSON Lines export in batches; progress on a terminal.
fn read_into(engine: &Engine, input: Box<dyn BufRead>, trust: Trust) -> Result<u64> {
    let mut bar = progress_bar("importing");
    let n = engine.transfer().import_jsonl(input, trust, &mut bar)?;
    progress_done();
    Ok(n)
}

/// Copies every record of the store at `url` (every tenant), a page at a time.
fn copy_from(engine: &Engine, url: &str, trust: Trust) -> Result<u64> {
    let source = Engine::builder(open_store(Some(url))?)
        .embedder(None)
        .on_model_mismatch(OnModelMismatch::Ignore)
        .build()?;
    let mut bar = progress_bar("importing");
    let n = engine
        .transfer()
        .import_from(source.transfer(), trust, &mut bar)?;
    progress_done();
    Ok(n)
}

#[derive(Args)]
pub(crate) struct SnapshotArgs {
    #[command(subcommand)]
    command: SnapshotCommand,
    /// Where snapshots are kept. Default: beside a SQLite file, a file or a Markdown store
    /// (`<path>.snapshots`), else `muisti/snapshots` under the data directory.
    #[arg(long, global = true, env = "MUISTI_SNAPSHOT_DIR", value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum SnapshotCommand {
    /// Snapshot the whole store now (writers may go on).
    Create,
    /// The snapshots, oldest first.
    List,
    /// Delete a snapshot (what the store deleted since it was made leaves this copy).
    Delete {
        /// The snapshot's id (see `list`).
        id: String,
    },
    /// Delete every snapshot older than this many days (a retention for deleted data).
    Prune {
        /// Keep the snapshots of the last DAYS days.
        #[arg(long, value_name = "DAYS")]
        keep_days: u32,
    },
    /// Replace everything in the store with a snapshot's records.
    Restore {
        /// The snapshot's id (see `list`).
        id: String,
        /// Confirms that the store's present content is replaced.
        #[arg(long)]
        yes: bool,
    },
}

/// `muisti snapshot`.
pub(crate) fn snapshot(cli: &Cli, args: &SnapshotArgs) -> Result<ExitCode> {
    if cli.server.is_some() {
        return Err(usage(
            "snapshot works on a store: give --store, or use the server's /v1/admin/snapshots",
        ));
    }
    if let SnapshotCommand::Restore { yes: false, id } = &args.command {
        return Err(usage(format!(
            "restoring {id} replaces everything in the store; add --yes to go on"
        )));
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            let url = match cli.store.as_deref() {
                Some(u) => u.to_owned(),
                None => muisti::default_store_url()?,
            };
            muisti::default_snapshot_dir(&url)?
        }
    };
    let snapshots = Snapshots::new(dir);
    match &args.command {
        SnapshotCommand::List => {
            let list = snapshots.list()?;
            if cli.json {
                print_json(&list)?;
            } else if list.is_empty() {
                outln!("no snapshots in {}", snapshots.dir().display())?;
            } else {
                for s in list {
                    outln!(
                        "{}  {}  {} records  {} bytes  ({} of {})",
                        s.id,
                        s.created_at,
                        s.records,
                        s.bytes,
                        s.format,
                        s.backend
                    )?;
                }
            }
        }
        SnapshotCommand::Create => {
            let engine = open_bulk(cli, OnModelMismatch::Ignore)?;
            let s = snapshots.create(&engine)?;
            if cli.json {
                print_json(&s)?;
            } else {
                outln!(
                    "snapshot {}: {} records, {} bytes ({}) in {}",
                    s.id,
                    s.records,
                    s.bytes,
                    s.format,
                    snapshots.dir().display()
                )?;
            }
        }
        SnapshotCommand::Delete { id } => {
            let s = snapshots.delete(id)?;
            if cli.json {
                print_json(&s)?;
            } else {
                outln!("deleted snapshot {}", s.id)?;
            }
        }
        SnapshotCommand::Prune { keep_days } => {
            let keep = std::time::Duration::from_secs(u64::from(*keep_days) * 86_400);
            let before = Timestamp::from_millis(
                Timestamp::now()
                    .as_millis()
                    .saturating_sub(i64::try_from(keep.as_millis()).unwrap_or(i64::MAX)),
            );
            let gone = snapshots.prune(before)?;
            if cli.json {
                print_json(&gone)?;
            } else {
                outln!(
                    "deleted {} snapshots older than {keep_days} days",
                    gone.len()
                )?;
            }
        }
        SnapshotCommand::Restore { id, .. } => {
            let engine = open_bulk(cli, OnModelMismatch::Ignore)?;
            let report = snapshots.restore(&engine, id)?;
            if cli.json {
                print_json(&report)?;
            } else {
                outln!(
                    "restored {id}: {} records deleted, {} restored",
                    report.deleted,
                    report.restored
                )?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
