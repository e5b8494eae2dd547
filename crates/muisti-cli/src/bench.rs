//! `muisti bench store`: throughput and latency of the storage contract on each backend.

use std::time::{Duration, Instant};

use std::io::Write;

use anyhow::{Context, Result};
use clap::Subcommand;
use muisti::{Key, Locator, MemoryId, Namespace, Partition, Put, Store};
use serde::Serialize;

#[derive(Subcommand)]
pub(crate) enum BenchCommand {
    /// Precision and recall of the declarative conflict detector on a labelled corpus of
    /// pairs (default: the repository's), per split (`tune`, where its constants were
    /// chosen, the held-out `test`, the later `fresh` set), with the embedder of
    /// `--embedder` and without one.
    Conflicts {
        /// The corpus: one JSON object per line (`existing`, `new`, `supersede`, `split`).
        #[arg(long, default_value = "crates/muisti-lang/tests/data/conflicts.jsonl")]
        data: std::path::PathBuf,
        /// Also list the pairs the detector (with the embedder) gets wrong, with what it
        /// based the verdict on.
        #[arg(long)]
        errors: bool,
    },
    /// The fact extractor on labelled conversations (default: the repository's): fact
    /// precision and recall, dates, and the decisions against each conversation's prior
    /// memory, per split (`tune`, where the patterns were chosen; `test`, held out).
    Extract {
        /// The corpus: one JSON object per line (`prior`, `messages`, `facts`, `split`).
        #[arg(
            long,
            default_value = "crates/muisti-lang/tests/data/fact-extraction.jsonl"
        )]
        data: std::path::PathBuf,
    },
    /// What the OpenAI-compatible proxy adds to a chat completion: the same requests sent
    /// straight to an instant model on loopback and through `muisti serve`'s
    /// `/v1/chat/completions` (default store: a fresh SQLite file).
    Proxy {
        /// Memories of the one user the requests name.
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        /// Messages to time (each sent both ways).
        #[arg(long, default_value_t = 300)]
        messages: usize,
        /// What the proxy remembers of each exchange: extract, messages or off.
        #[arg(long, default_value = "extract")]
        remember: String,
    },
    /// Precision and recall of the offline graph extractor's facts and entities on a
    /// labelled corpus of conversations (default: the repository's).
    GraphExtract {
        /// The corpus: one JSON object per line (`user`, `messages`, `triples`, `entities`).
        #[arg(
            long,
            default_value = "crates/muisti-lang/tests/data/graph-extraction.jsonl"
        )]
        data: std::path::PathBuf,
        /// The entity-resolution corpus: one JSON object per line (`user`, `messages`,
        /// `clusters` of names that are one entity), read into an in-memory graph.
        #[arg(
            long,
            default_value = "crates/muisti-lang/tests/data/graph-resolution.jsonl"
        )]
        names: std::path::PathBuf,
    },
    /// Graph extraction and queries on one user's graph (default store: a fresh SQLite
    /// file): `N` memories "Person i works at Company j.", read into the graph offline, then
    /// subject, object, entity and two-step neighbourhood queries timed, and the graph evidence
    /// of a recall.
    Graph {
        /// Memories to write (one works_at edge each).
        #[arg(long, default_value_t = 2_000)]
        edges: usize,
        /// Queries of each kind to time.
        #[arg(long, default_value_t = 200)]
        queries: usize,
    },
    /// The near-duplicate rule on a labelled corpus: precision and recall without vectors,
    /// at each cosine threshold, and with the threshold chosen by 5-fold cross-validation.
    Duplicates {
        /// The corpus: one JSON object per line (`id`, `a`, `b`, `duplicate`).
        #[arg(
            long,
            default_value = "crates/muisti-lang/tests/data/near-duplicates.jsonl"
        )]
        data: std::path::PathBuf,
        /// Also print each pair the rule (with the cross-validated threshold of its fold)
        /// gets wrong.
        #[arg(long)]
        errors: bool,
    },
    /// A full maintenance pass (default store: a fresh SQLite file): `N` memories of users
    /// of `--per-user` each (one in twenty repeating another of its user, one in ten
    /// recalled twelve times), then expire, consolidate (exact and near duplicates), promote
    /// and prune to `--max-memories` (with `--full`, archive and cluster too) timed (with `--with-recalls`, recalls of random users beside it,
    /// their p50/p99 against 1,000 recalls before the pass); peak RSS reported.
    Maintain {
        /// Memories to write.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Memories per user.
        #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
        per_user: u64,
        /// Prune's cap per user.
        #[arg(long, default_value_t = 900)]
        max_memories: u64,
        /// Recall random users beside the pass (and 1,000 times before it), reporting
        /// their p50/p99 both ways.
        #[arg(long)]
        with_recalls: bool,
        /// Every job, archive and cluster too: memories written with vectors (the built-in
        /// model), nine in ten recalled once, the tenth archived (cold: never recalled; any
        /// age), each user's memories clustered.
        #[arg(long)]
        full: bool,
        /// Consolidate exact duplicates only (as before near-duplicates were folded).
        #[arg(long)]
        exact_only: bool,
    },
    /// Retrieval quality (recall@k) and speed on LoCoMo conversations.
    Locomo {
        /// The directory of LoCoMo `.json` files.
        #[arg(long)]
        data: std::path::PathBuf,
        /// hybrid, lexical, vector or overlap.
        #[arg(long, default_value = "hybrid")]
        mode: String,
        /// rrf[:K], weighted:LEXICAL_WEIGHT or absolute:LEXICAL_WEIGHT (default: the
        /// engine's).
        #[arg(long)]
        fusion: Option<String>,
        /// Do not count accesses on recalled memories (they feed the access signal).
        #[arg(long)]
        no_access_tracking: bool,
        /// Candidates taken from each retriever.
        #[arg(long)]
        candidates: Option<usize>,
        /// How many of the best candidates word matching scores (default: the engine's);
        /// with --loco, the plain setting's and every setting's the grid does not vary.
        #[arg(long)]
        words_pool: Option<usize>,
        /// Graph-aware recall: each weight of --graph-weights is a run of its own on a fresh
        /// store (weight 0: no extraction; others: offline extraction at ingest, waited for,
        /// and the graph's evidence in relevance); prints each run's recall@10 by category
        /// and the leave-one-conversation-out figure of choosing the weight.
        #[arg(long)]
        graph: bool,
        /// The graph weights --graph compares (the first is preferred on ties).
        #[arg(long, value_delimiter = ',', default_value = "0,0.05,0.1,0.2,0.4")]
        graph_weights: Vec<f32>,
        /// Leave-one-conversation-out: every setting of --loco-grid is a run of its own; for
        /// each conversation the setting best on the other four is scored on it; prints that
        /// held-out recall@10 beside the plain run's (the flags' setting), per category.
        #[arg(long, conflicts_with = "graph")]
        loco: bool,
        /// The settings --loco chooses among: `;`-separated dimensions `NAME=V1,V2,...` over
        /// fusion (rrf[:K], weighted:W, absolute:W), candidates, mode, graph (a graph
        /// weight), temporal (the temporal strategy's weight), temporal_after (days),
        /// temporal_text (0 or 1: memories' own time expressions), neighbours
        /// (neighbourhood evidence's weight), words (word-level matching's weight),
        /// words_floor (its cosine floor, below 1) and words_pool (how many of the best
        /// candidates it scores); every combination is a setting. The
        /// plain setting is run first and preferred on ties.
        #[arg(long, default_value = DEFAULT_LOCO_GRID)]
        loco_grid: String,
        /// Write each question's top 50 hits with their signals to this file (JSON lines;
        /// a plain run only), to study what a strategy would change.
        #[arg(long, conflicts_with_all = ["loco", "graph"])]
        dump: Option<std::path::PathBuf>,
    },
    /// Ingest and recall on a deterministic synthetic corpus (default store: a fresh SQLite
    /// file; each user owns 1,000 memories).
    Scale {
        /// Memories to ingest.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Recalls to time.
        #[arg(long, default_value_t = 1_000)]
        queries: usize,
        /// Recall across all users (no filter): on the default SQLite store this goes through
        /// the HNSW graph, which the bench waits for before timing.
        #[arg(long)]
        unfiltered: bool,
        /// The SQLite file to use and keep (default: a temporary one). The corpus is written
        /// only if the file does not already hold it, so a second run measures a restart.
        #[arg(long)]
        db: Option<std::path::PathBuf>,
        /// The SQLite store's cache budget in MiB (default 2048).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=16_777_216))]
        cache_mb: Option<u32>,
    },
    /// `muisti serve` under load on loopback: recall, then create, from concurrent clients
    /// (default store: a fresh SQLite file seeded like `bench scale`).
    Http {
        /// Memories to seed (1,000 per user; recalls filter by user). With --server, they
        /// are written to that server's `bench` namespace first.
        #[arg(long, default_value_t = 100_000)]
        memories: usize,
        /// Seconds per phase (more than 0).
        #[arg(long, default_value_t = 10.0, value_parser = positive_seconds)]
        seconds: f64,
        /// Concurrent client connections.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
        connections: u16,
        /// More servers on the same store as `--server` (comma-separated URLs): the client
        /// connections are spread over all of them, one server each in turn.
        #[arg(long, value_delimiter = ',')]
        also: Vec<String>,
    },
    /// `muisti serve` under a sustained mixed load at a fixed rate (60 % recall, 25 % create,
    /// 15 % key-value), open loop; exits 1 if any request failed (default store: a fresh
    /// SQLite file seeded like `bench scale`).
    Load {
        /// Memories to seed (1,000 per user). With --server, written to its `bench`
        /// namespace first.
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        /// How long to send, in seconds (more than 0).
        #[arg(long, default_value_t = 60.0, value_parser = positive_seconds)]
        seconds: f64,
        /// Requests per second, all kinds together (more than 0).
        #[arg(long, default_value_t = 200.0, value_parser = positive_rate)]
        rate: f64,
        /// Concurrent client connections.
        #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..))]
        connections: u16,
    },
    /// What memory adds to a chat message: recall, prompt block and conversation save, with
    /// an instant model on loopback (default store: a fresh SQLite file).
    Agent {
        /// Memories in the `default` namespace.
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        /// Messages to time.
        #[arg(long, default_value_t = 300)]
        messages: usize,
        /// Give the agent a user (`user-0`, whose memories the recall then reads) with this
        /// many declarative entries, injected into every prompt (compare 0 with 50).
        #[arg(long)]
        declarative: Option<usize>,
    },
    /// set / batched store / get by key / get by id on each backend.
    Store {
        /// Records per workload.
        #[arg(long, default_value_t = 20_000)]
        count: usize,
        /// Backends to measure, comma-separated (mem, file, sqlite, redis; default all).
        /// Not with --store, which names the one store to measure.
        #[arg(long, value_delimiter = ',')]
        backends: Option<Vec<String>>,
        /// Redis server for the redis backend.
        #[arg(
            long,
            env = "MUISTI_REDIS_URL",
            default_value = "redis://127.0.0.1:6379/0"
        )]
        redis_url: String,
        /// Records for single-record writes on the file store, which rewrites its namespace
        /// file on every write.
        #[arg(long, default_value_t = 2_000)]
        file_writes: usize,
    },
}

/// `--seconds`: a finite number above 0.
fn positive_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        Ok(_) => Err(format!("{s} is not between 0 and 86400 seconds")),
        Err(_) => Err(format!("{s:?} is not a number of seconds")),
    }
}

fn positive_rate(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1_000_000.0 => Ok(v),
        Ok(_) => Err(format!(
            "{s} is not between 0 and 1,000,000 requests per second"
        )),
        Err(_) => Err(format!("{s:?} is not a number of requests per second")),
    }
}

/// The server an HTTP bench loads: the one `--server` names, or one started in this process
/// over `--store` (default: a fresh SQLite file in `dir`).
fn http_target(
    cli: &crate::Cli,
    store: Option<&str>,
    dir: &tempfile::TempDir,
) -> Result<crate::http_bench::Target> {
    if let Some(server) = &cli.server {
        if store.is_some() {
            anyhow::bail!("--store and --server: give one (the server has its store)");
        }
        return Ok(crate::http_bench::Target::Remote {
            url: server.clone(),
            api_key: cli.api_key.clone(),
        });
    }
    let url = match store {
        Some(u) => u.to_owned(),
        None => format!("sqlite://{}/http.db", dir.path().display()),
    };
    let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
    let engine = muisti::Engine::builder(muisti::open_store(&url)?)
        .embedder(embedder)
        .build()?;
    Ok(crate::http_bench::Target::Local(Box::new(engine)))
}

/// A temporary directory for a bench's store, removed when the bench ends or is stopped with
/// Ctrl-C (which otherwise ends the process before the directory's drop runs).
fn bench_dir() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir().context("temporary directory")?;
    let path = dir.path().to_path_buf();
    std::thread::Builder::new()
        .name("muisti-bench-interrupt".into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            if rt.block_on(tokio::signal::ctrl_c()).is_ok() {
                let _ = std::fs::remove_dir_all(&path);
                eprintln!("interrupted: removed {}", path.display());
                std::process::exit(130);
            }
        })
        .context("interrupt handler")?;
    Ok(dir)
}

#[derive(Serialize)]
struct Measure {
    backend: String,
    workload: &'static str,
    ops: usize,
    ops_per_s: f64,
    p50_us: f64,
    p99_us: f64,
}

pub(crate) fn run(cmd: &BenchCommand, cli: &crate::Cli, json: bool) -> Result<()> {
    let store = cli.store.as_deref();
    let (count, backends, redis_url, file_writes) = match cmd {
        BenchCommand::Store {
            count,
            backends,
            redis_url,
            file_writes,
        } => (count, backends, redis_url, file_writes),
        BenchCommand::Scale {
            memories,
            queries,
            unfiltered,
            db,
            cache_mb,
        } => {
            if store.is_some() && (db.is_some() || cache_mb.is_some()) {
                anyhow::bail!(
                    "--db and --cache-mb apply to the default SQLite store; with --store, pass \
                     the file in the URL and ?cache_mb=N"
                );
            }
            let dir = bench_dir()?;
            let path = db.clone().unwrap_or_else(|| dir.path().join("scale.db"));
            let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
            // The default store is kept as SQLite to wait for its graph and read its cache.
            let open =
                || -> Result<(Option<std::sync::Arc<muisti::SqliteStore>>, muisti::Engine)> {
                    let (sqlite, opened): (_, std::sync::Arc<dyn muisti::Store>) = match store {
                        Some(u) => (None, muisti::open_store(u)?),
                        None => {
                            let mut s = muisti::SqliteStore::open(&path)?;
                            if let Some(mb) = cache_mb {
                                s = s.with_cache_budget((*mb as usize) << 20);
                            }
                            let s = std::sync::Arc::new(s);
                            (Some(s.clone()), s)
                        }
                    };
                    let engine = muisti::Engine::builder(opened)
                        .embedder(embedder.clone())
                        .graph_extraction(cli.graph_extraction()?)
                        .graph_interval(cli.graph_interval()?)
                        .build()?;
                    Ok((sqlite, engine))
                };
            let ingest_per_s = crate::scale::prepare(&open()?.1, *memories)?;
            // Opened again: the recalls start from what a restarted process has.
            let (sqlite, engine) = open()?;
            let wait = |p: &muisti::Partition| {
                // Only a graph the first recall started building (none below the threshold,
                // nor where it does not fit the cache budget).
                if let Some(s) = sqlite.as_ref() {
                    let start = std::time::Instant::now();
                    while s.ann_building(p)
                        && start.elapsed() < std::time::Duration::from_secs(3600)
                    {
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                }
            };
            let cache = || sqlite.as_ref().map(|s| (s.cache_budget(), s.cache_bytes()));
            let probe = crate::scale::Probe {
                wait_for_index: &wait,
                cache: &cache,
            };
            let report = crate::scale::run(
                &engine,
                *memories,
                ingest_per_s,
                *queries,
                *unfiltered,
                &probe,
            )?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::Http {
            memories,
            seconds,
            connections,
            also,
        } => {
            if !also.is_empty() && cli.server.is_none() {
                anyhow::bail!("--also needs --server (the servers it adds share its store)");
            }
            let dir = bench_dir()?;
            let target = http_target(cli, store, &dir)?;
            let connections = usize::from(*connections);
            let report = crate::http_bench::run(target, also, *memories, *seconds, connections)?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::Load {
            memories,
            seconds,
            rate,
            connections,
        } => {
            let dir = bench_dir()?;
            let target = http_target(cli, store, &dir)?;
            let connections = usize::from(*connections);
            let report =
                crate::http_bench::sustained(target, *memories, *seconds, *rate, connections)?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            if report.errors() > 0 {
                anyhow::bail!("{} requests failed", report.errors());
            }
            return Ok(());
        }
        BenchCommand::Agent {
            memories,
            messages,
            declarative,
        } => {
            let dir = bench_dir()?;
            let engine = bench_engine(cli, store, &dir, "agent.db")?;
            let report =
                crate::agent_bench::run(engine, *memories, (*messages).max(1), *declarative)?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::GraphExtract { data, names } => return graph_extract(data, names, json),
        BenchCommand::Extract { data } => return fact_extract(data, json),
        BenchCommand::Proxy {
            memories,
            messages,
            remember,
        } => {
            let dir = bench_dir()?;
            let engine = bench_engine(cli, store, &dir, "proxy.db")?;
            let report = crate::proxy_bench::run(engine, *memories, (*messages).max(1), remember)?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::Duplicates { data, errors } => {
            let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
            return duplicates(data, embedder, *errors, json);
        }
        BenchCommand::Maintain {
            memories,
            per_user,
            max_memories,
            with_recalls,
            full,
            exact_only,
        } => {
            let dir = bench_dir()?;
            let url = match &cli.store {
                Some(u) => u.clone(),
                None => format!("sqlite://{}", dir.path().join("maintain.db").display()),
            };
            let store = muisti::open_store(&url)?;
            let archive = match (&cli.archive, full) {
                (Some(a), _) => Some(a.clone()),
                (None, true) => Some(format!("file://{}", dir.path().join("archive").display())),
                (None, false) => None,
            };
            let engine = muisti::Engine::builder(store)
                .embedder(if *full {
                    muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?
                } else {
                    None
                })
                .archive(muisti::open_archive(&url, archive.as_deref())?)
                .build()?;
            let report = maintain_bench(
                &engine,
                *memories,
                *per_user,
                *max_memories,
                *with_recalls,
                *full,
                *exact_only,
            )?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::Graph { edges, queries } => {
            let dir = bench_dir()?;
            let store = match &cli.store {
                Some(u) => muisti::open_store(u)?,
                None => muisti::open_store(&format!(
                    "sqlite://{}",
                    dir.path().join("graph.db").display()
                ))?,
            };
            let engine = muisti::Engine::builder(store)
                .embedder(None)
                .graph_extraction(muisti::graph::GraphExtraction::Offline)
                .build()?;
            let report = graph_bench(&engine, *edges, *queries)?;
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
            return Ok(());
        }
        BenchCommand::Conflicts { data, errors } => {
            let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
            return conflicts(data, embedder, *errors, json);
        }
        BenchCommand::Locomo {
            data,
            mode,
            fusion,
            no_access_tracking,
            candidates,
            words_pool,
            graph,
            graph_weights,
            loco,
            loco_grid,
            dump,
        } => {
            let config = muisti::RecallConfig {
                track_access: !no_access_tracking,
                ..Default::default()
            };
            let plain = LocomoSetting {
                fusion: match fusion {
                    Some(f) => parse_fusion(f)?,
                    None => config.fusion,
                },
                candidates: candidates.unwrap_or(config.candidates),
                mode: mode.parse()?,
                graph: 0.0,
                temporal: config.temporal,
                temporal_after_days: (config.temporal_after.as_secs() / 86_400) as u32,
                temporal_text: config.temporal_text,
                neighbours: config.neighbours,
                words: config.words,
                words_floor: config.words_floor,
                words_pool: words_pool.unwrap_or(config.words_pool),
            };
            let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
            let grid = if *graph {
                if graph_weights.is_empty()
                    || graph_weights.iter().any(|w| !w.is_finite() || *w < 0.0)
                {
                    anyhow::bail!("--graph-weights: give one or more weights, each 0 or more");
                }
                let weights: Vec<String> = graph_weights.iter().map(f32::to_string).collect();
                Some(format!("graph={}", weights.join(",")))
            } else {
                loco.then(|| loco_grid.clone())
            };
            return locomo(
                data,
                store,
                embedder,
                config,
                plain,
                grid.as_deref(),
                dump.as_deref(),
                json,
            );
        }
    };
    let dir = bench_dir()?;
    let bench_prefix = format!("muisti-bench-{}:", MemoryId::generate());
    let all = ["mem", "file", "sqlite", "redis"]
        .map(String::from)
        .to_vec();
    let targets: Vec<(String, String)> = match (store, backends) {
        (Some(_), Some(_)) => anyhow::bail!("--store and --backends: give one"),
        (Some(url), None) => vec![(url.to_owned(), url.to_owned())],
        (None, backends) => backends
            .as_ref()
            .unwrap_or(&all)
            .iter()
            .map(|b| {
                let url = match b.as_str() {
                    "mem" => "mem://".to_owned(),
                    "file" => format!("file://{}", dir.path().join("files").display()),
                    "sqlite" => format!("sqlite://{}", dir.path().join("bench.db").display()),
                    "redis" => format!("{redis_url}?prefix={bench_prefix}"),
                    other => anyhow::bail!("unknown backend {other:?}"),
                };
                Ok((b.clone(), url))
            })
            .collect::<Result<_>>()?,
    };
    let mut results = Vec::new();
    for (name, url) in targets {
        let store = match muisti::open_store(&url) {
            Ok(s) => s,
            // A service that is not running is skipped, not fatal, unless named by --store.
            Err(e) if e.kind() == muisti::ErrorKind::Unavailable && store.is_none() => {
                eprintln!("{name}: skipped ({e})");
                continue;
            }
            Err(e) => return Err(e).with_context(|| format!("opening {name}")),
        };
        let backend = store.info().backend;
        let singles = if backend == "file" {
            (*file_writes).min(*count)
        } else {
            *count
        };
        let ms = bench_store(&*store, &name, *count, singles)?;
        if !json {
            for m in &ms {
                print_row(m)?;
            }
        }
        results.extend(ms);
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&results)?)?;
    }
    Ok(())
}

fn print_row(m: &Measure) -> Result<()> {
    outln!(
        "{:<8} {:<22} {:>8} ops {:>12.0} ops/s   p50 {:>8.1} µs   p99 {:>8.1} µs",
        m.backend,
        m.workload,
        m.ops,
        m.ops_per_s,
        m.p50_us,
        m.p99_us
    )?;
    Ok(())
}

fn text(i: usize) -> String {
    format!(
        "memory number {i}: the user mentioned a preference for window seats and green tea, item {}",
        i * 7919 % 10_007
    )
}

/// A fixed permutation of 0..n (xorshift), so reads are in a random but repeatable order.
fn shuffled(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

fn summarize(
    backend: &str,
    workload: &'static str,
    total: Duration,
    mut lat: Vec<Duration>,
) -> Measure {
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6)
    };
    Measure {
        backend: backend.to_owned(),
        workload,
        ops: lat.len(),
        ops_per_s: lat.len() as f64 / total.as_secs_f64(),
        p50_us: pct(0.5),
        p99_us: pct(0.99),
    }
}

fn bench_store(store: &dyn Store, name: &str, n: usize, singles: usize) -> Result<Vec<Measure>> {
    let single_ns = Partition::of(Namespace::new("bench-set")?);
    let batch_ns = Partition::of(Namespace::new("bench-batch")?);
    let mut out = Vec::new();

    // Single writes, one transaction each.
    let mut lat = Vec::with_capacity(singles);
    let start = Instant::now();
    for i in 0..singles {
        let t = Instant::now();
        store.put(Put::new(
            single_ns.clone(),
            Some(Key::new(format!("k{i}"))?),
            text(i),
        ))?;
        lat.push(t.elapsed());
    }
    out.push(summarize(name, "set (1 per tx)", start.elapsed(), lat));

    // Batched stores: 1,000 per transaction.
    let mut ids: Vec<MemoryId> = Vec::with_capacity(n);
    let mut lat = Vec::new();
    let start = Instant::now();
    for chunk_start in (0..n).step_by(1000) {
        let end = (chunk_start + 1000).min(n);
        let puts = (chunk_start..end)
            .map(|i| {
                Ok(Put::new(
                    batch_ns.clone(),
                    Some(Key::new(format!("k{i}"))?),
                    text(i),
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let t = Instant::now();
        let written = store.put_many(puts)?;
        let per = t.elapsed() / written.len().max(1) as u32;
        lat.extend(std::iter::repeat_n(per, written.len()));
        ids.extend(written.iter().map(|w| w.memory.id));
    }
    out.push(summarize(name, "store (1000 per tx)", start.elapsed(), lat));

    // Gets by key, random order, one thread.
    let order = shuffled(n);
    let locators: Vec<Locator> = order
        .iter()
        .map(|i| {
            Ok(Locator::Key {
                partition: batch_ns.clone(),
                key: Key::new(format!("k{i}"))?,
            })
        })
        .collect::<Result<_>>()?;
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for at in &locators {
        let t = Instant::now();
        let got = store.get(at)?;
        lat.push(t.elapsed());
        anyhow::ensure!(got.is_some(), "a stored record is missing");
    }
    out.push(summarize(name, "get by key", start.elapsed(), lat));

    // Gets by id.
    let tenant = batch_ns.tenant.clone();
    let by_id: Vec<Locator> = order
        .iter()
        .map(|&i| Locator::Id {
            tenant: tenant.clone(),
            id: ids[i],
        })
        .collect();
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for at in &by_id {
        let t = Instant::now();
        let got = store.get(at)?;
        lat.push(t.elapsed());
        anyhow::ensure!(got.is_some(), "a stored record is missing");
    }
    out.push(summarize(name, "get by id", start.elapsed(), lat));

    store.flush(&single_ns)?;
    store.flush(&batch_ns)?;
    Ok(out)
}

/// The settings `muisti bench locomo --loco` chooses among by default: the fusion of the two
/// retrievers and the candidates each gives.
const DEFAULT_LOCO_GRID: &str = "fusion=weighted:0.5,weighted:0.6,weighted:0.7,weighted:0.8,weighted:0.9,rrf:60;candidates=50,100";

/// What one LoCoMo run varies: the recall settings a choice is made among.
#[derive(Clone, Debug, PartialEq)]
struct LocomoSetting {
    fusion: muisti::Fusion,
    candidates: usize,
    mode: muisti::RecallMode,
    /// The graph's weight in relevance (0: the graph is not read).
    graph: f32,
    /// The temporal strategy's weight (0: off).
    temporal: f32,
    /// How many days after a period a memory still speaks of it.
    temporal_after_days: u32,
    /// Whether memories' own time expressions count.
    temporal_text: bool,
    /// Neighbourhood evidence's weight (0: off).
    neighbours: f32,
    /// Word-level matching's weight (0: off).
    words: f32,
    /// Word-level matching's cosine floor.
    words_floor: f32,
    /// How many of the best candidates word-level matching scores.
    words_pool: usize,
}

impl LocomoSetting {
    fn label(&self) -> String {
        let fusion = match self.fusion {
            muisti::Fusion::Rrf { k } => format!("rrf:{k}"),
            muisti::Fusion::Weighted { lexical } => format!("weighted:{lexical}"),
            muisti::Fusion::Absolute { lexical } => format!("absolute:{lexical}"),
        };
        let mode = serde_json::to_value(self.mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut strategies = String::new();
        if self.temporal > 0.0 {
            strategies.push_str(&format!(
                " temporal={} temporal_after={}",
                self.temporal, self.temporal_after_days
            ));
            if self.temporal_text {
                strategies.push_str(" temporal_text=1");
            }
        }
        if self.neighbours > 0.0 {
            strategies.push_str(&format!(" neighbours={}", self.neighbours));
        }
        if self.words > 0.0 {
            strategies.push_str(&format!(
                " words={} words_floor={} words_pool={}",
                self.words, self.words_floor, self.words_pool
            ));
        }
        format!(
            "fusion={fusion} candidates={} mode={mode} graph={}{strategies}",
            self.candidates, self.graph
        )
    }

    /// Every combination of the grid's values, this setting where a dimension is not given.
    fn grid(&self, spec: &str) -> Result<Vec<LocomoSetting>> {
        let mut settings = vec![self.clone()];
        for dimension in spec.split(';').map(str::trim).filter(|d| !d.is_empty()) {
            let Some((name, values)) = dimension.split_once('=') else {
                anyhow::bail!("--loco-grid: {dimension:?} is not NAME=V1,V2,...");
            };
            let values: Vec<&str> = values.split(',').map(str::trim).collect();
            if values.iter().any(|v| v.is_empty()) {
                anyhow::bail!("--loco-grid: {name} has an empty value");
            }
            let mut next = Vec::new();
            for s in &settings {
                for v in &values {
                    let mut t = s.clone();
                    match name.trim() {
                        "fusion" => t.fusion = parse_fusion(v)?,
                        "candidates" => {
                            t.candidates = v.parse().with_context(|| format!("candidates {v:?}"))?
                        }
                        "mode" => t.mode = v.parse()?,
                        "graph" => t.graph = grid_weight("graph", v)?,
                        "temporal" => t.temporal = grid_weight("temporal", v)?,
                        "temporal_after" => {
                            t.temporal_after_days = v
                                .parse()
                                .with_context(|| format!("temporal_after {v:?} (days)"))?
                        }
                        "temporal_text" => {
                            t.temporal_text = match *v {
                                "0" => false,
                                "1" => true,
                                _ => anyhow::bail!("--loco-grid: temporal_text is 0 or 1"),
                            }
                        }
                        "neighbours" => t.neighbours = grid_weight("neighbours", v)?,
                        "words" => t.words = grid_weight("words", v)?,
                        "words_floor" => {
                            t.words_floor = grid_weight("words_floor", v)?;
                            if t.words_floor >= 1.0 {
                                anyhow::bail!("--loco-grid: words_floor is below 1");
                            }
                        }
                        "words_pool" => {
                            t.words_pool = v.parse().with_context(|| format!("words_pool {v:?}"))?
                        }
                        other => anyhow::bail!(
                            "--loco-grid: {other:?} is not fusion, candidates, mode, graph, \
                             temporal, temporal_after, temporal_text, neighbours, words, \
                             words_floor or words_pool"
                        ),
                    }
                    next.push(t);
                }
            }
            settings = next;
        }
        // The plain setting first (preferred on ties), each setting once.
        let mut out = vec![self.clone()];
        for s in settings {
            if !out.contains(&s) {
                out.push(s);
            }
        }
        Ok(out)
    }
}

/// `rrf`, `rrf:K`, `weighted:W` or `absolute:W`: the one spelling of a fusion on the command
/// line.
fn parse_fusion(spec: &str) -> Result<muisti::Fusion> {
    Ok(match spec.split_once(':') {
        Some(("rrf", k)) => muisti::Fusion::Rrf { k: k.parse()? },
        None if spec == "rrf" => muisti::Fusion::Rrf { k: 60.0 },
        Some(("weighted", w)) => muisti::Fusion::Weighted {
            lexical: w.parse()?,
        },
        Some(("absolute", w)) => muisti::Fusion::Absolute {
            lexical: w.parse()?,
        },
        _ => anyhow::bail!("fusion {spec:?} is not rrf[:K], weighted:W or absolute:W"),
    })
}

/// A strategy's weight in a `--loco-grid` value: a number, 0 or more.
fn grid_weight(name: &str, v: &str) -> Result<f32> {
    let w: f32 = v.parse().with_context(|| format!("{name} weight {v:?}"))?;
    if !w.is_finite() || w < 0.0 {
        anyhow::bail!("--loco-grid: a {name} weight is 0 or more");
    }
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
fn locomo(
    data: &std::path::Path,
    store: Option<&str>,
    embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    config: muisti::RecallConfig,
    plain: LocomoSetting,
    grid: Option<&str>,
    dump: Option<&std::path::Path>,
    json: bool,
) -> Result<()> {
    let dir = tempfile::tempdir().context("temporary directory")?;
    let run = |setting: &LocomoSetting, file: &str| -> Result<crate::locomo::Report> {
        let url = match store {
            Some(u) => u.to_owned(),
            None => format!("sqlite://{}", dir.path().join(file).display()),
        };
        let mut config = config.clone();
        config.fusion = setting.fusion;
        config.candidates = setting.candidates;
        config.graph = setting.graph;
        config.temporal = setting.temporal;
        config.temporal_after =
            std::time::Duration::from_secs(u64::from(setting.temporal_after_days) * 86_400);
        config.temporal_text = setting.temporal_text;
        config.neighbours = setting.neighbours;
        config.words = setting.words;
        config.words_floor = setting.words_floor;
        config.words_pool = setting.words_pool;
        let graph = setting.graph > 0.0;
        let extraction = if graph {
            muisti::graph::GraphExtraction::Offline
        } else {
            muisti::graph::GraphExtraction::Off
        };
        let engine = muisti::Engine::builder(muisti::open_store(&url)?)
            .embedder(embedder.clone())
            .recall_config(config)
            .graph_extraction(extraction)
            .build()?;
        crate::locomo::run(crate::locomo::Options {
            data,
            engine,
            mode: setting.mode,
            graph,
            dump: dump.map(std::path::Path::to_path_buf),
        })
    };
    let Some(grid) = grid else {
        let report = run(&plain, "locomo.db")?;
        if json {
            outln!("{}", serde_json::to_string_pretty(&report)?)?;
        } else {
            for line in report.lines() {
                outln!("{line}")?;
            }
        }
        return Ok(());
    };
    let settings = plain.grid(grid)?;
    if store.is_some() && settings.iter().any(|s| s.graph > 0.0) {
        anyhow::bail!(
            "a graph weight runs on a fresh SQLite file: leave out --store (a store's graph \
             would carry over from one run to the next)"
        );
    }
    let mut runs = Vec::new();
    for (i, setting) in settings.iter().enumerate() {
        let report = run(setting, &format!("locomo-{i}.db"))?;
        runs.push((setting.label(), report));
    }
    let (held_out, chosen) = crate::locomo::leave_one_out(&runs);
    let plain_r10 = crate::locomo::by_category(runs[0].1.scores.iter());
    let fmt = |m: &std::collections::BTreeMap<String, f64>| {
        m.iter()
            .map(|(k, v)| format!("{k}: {v:.3}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    if json {
        let per_setting: Vec<serde_json::Value> = runs
            .iter()
            .map(|(label, r)| serde_json::json!({"setting": label, "report": r, "recall_at_10": crate::locomo::by_category(r.scores.iter())}))
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "runs": per_setting,
                "plain": {"setting": runs[0].0, "recall_at_10": plain_r10},
                "leave_one_conversation_out": {"recall_at_10": held_out, "chosen": chosen},
            }))?
        )?;
        return Ok(());
    }
    for (label, r) in &runs {
        outln!(
            "{label}: recall@10  {}",
            fmt(&crate::locomo::by_category(r.scores.iter()))
        )?;
        outln!("  {}", r.lines()[4..].join("\n  "))?;
    }
    outln!("plain ({}): recall@10  {}", runs[0].0, fmt(&plain_r10))?;
    outln!(
        "leave-one-conversation-out (chosen on the other four among {} settings): recall@10  {}",
        runs.len(),
        fmt(&held_out)
    )?;
    outln!(
        "  chosen: {}",
        chosen
            .iter()
            .map(|(c, s)| format!("{c} → {s}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    Ok(())
}

/// A labelled corpus (JSON lines) from `path`; `what` names it in errors.
fn read_labelled<T: serde::de::DeserializeOwned>(
    path: &std::path::Path,
    what: &str,
) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    muisti_lang::labelled::parse_jsonl(&text)
        .with_context(|| format!("{} is not a corpus of {what}", path.display()))
}

/// The cosine of two texts' vectors, if there is an embedder and it answers.
fn pair_cosine(
    embedder: Option<&std::sync::Arc<dyn muisti::Embedder>>,
    a: &str,
    b: &str,
) -> Option<f32> {
    let v = embedder?.embed(&[a, b]).ok()?;
    Some(muisti::text::cosine(v.first()?, v.get(1)?))
}

/// `muisti bench duplicates`: the near-duplicate rule's figures.
fn duplicates(
    data: &std::path::Path,
    embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    errors: bool,
    json: bool,
) -> Result<()> {
    use muisti::lifecycle::{self, LabelledDuplicate};
    let pairs: Vec<LabelledDuplicate> = read_labelled(data, "labelled pairs")?;
    let cosines: Vec<Option<f32>> = pairs
        .iter()
        .map(|p| pair_cosine(embedder.as_ref(), &p.a, &p.b))
        .collect();
    let all: Vec<&LabelledDuplicate> = pairs.iter().collect();
    let rows: Vec<(f32, lifecycle::DuplicateScores)> = lifecycle::DUPLICATE_THRESHOLDS
        .iter()
        .map(|t| (*t, lifecycle::score_duplicates(&all, &cosines, *t)))
        .collect();
    let (held_out, chosen) = lifecycle::cross_validate_duplicates(&pairs, &cosines, 5);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs.len(),
                "by_threshold": rows.iter().map(|(t, s)| serde_json::json!({"threshold": t, "scores": s, "precision": s.precision(), "recall": s.recall()})).collect::<Vec<_>>(),
                "cross_validated": {"scores": held_out, "precision": held_out.precision(), "recall": held_out.recall(), "thresholds": chosen},
            }))?
        )?;
        return Ok(());
    }
    outln!("{} labelled pairs from {}", pairs.len(), data.display())?;
    for (t, s) in &rows {
        outln!(
            "cosine >= {t:.2}: precision {:.3} ({} of {}), recall {:.3} (of {})",
            s.precision(),
            s.right,
            s.right + s.wrong,
            s.recall(),
            s.duplicates
        )?;
    }
    outln!(
        "5-fold cross-validated (threshold chosen on four folds: {:?}): precision {:.3}, recall {:.3}",
        chosen,
        held_out.precision(),
        held_out.recall()
    )?;
    if errors {
        for (p, c) in pairs.iter().zip(&cosines) {
            let t = chosen[(p.id % 5) as usize];
            let judged = muisti::lifecycle::near_duplicates(&p.a, &p.b, *c, t);
            if judged != p.duplicate {
                outln!(
                    "{:>4} labelled {:<5} cosine {:.2}: {:?} | {:?}",
                    p.id,
                    p.duplicate,
                    c.unwrap_or(f32::NAN),
                    p.a,
                    p.b
                )?;
            }
        }
    }
    Ok(())
}

/// `muisti bench maintain`: seeds the corpus through the store (no dedupe, no vectors),
/// then times one full maintenance pass.
fn maintain_bench(
    engine: &muisti::Engine,
    memories: usize,
    per_user: u64,
    max_memories: u64,
    with_recalls: bool,
    full: bool,
    exact_only: bool,
) -> Result<serde_json::Value> {
    let partition = engine.partition(&muisti::Namespace::default_ns());
    let started = std::time::Instant::now();
    let mut recalled = Vec::new();
    let mut once = Vec::new();
    for chunk in (0..memories as u64).collect::<Vec<_>>().chunks(1_000) {
        let mut puts: Vec<muisti::Put> = chunk
            .iter()
            .map(|i| {
                let user = i / per_user;
                let n = i % per_user;
                // One in twenty repeats the memory before it.
                let topic = if n % 20 == 19 { n - 1 } else { n };
                let mut p = muisti::Put::new(
                    partition.clone(),
                    None,
                    format!("user {user} noted item {topic}: something worth keeping"),
                );
                p.owner.user_id = Some(format!("u{user}"));
                p.importance = Some(0.3);
                p
            })
            .collect();
        if let Some(e) = engine.embedder().filter(|_| full) {
            let texts: Vec<String> = puts.iter().map(|p| p.index_text().into_owned()).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            for (p, v) in puts.iter_mut().zip(e.embed(&refs)?) {
                p.embedding = Some(v);
                p.embedding_model = Some(e.id().to_owned());
            }
        }
        for (w, i) in engine.store().put_many(puts)?.into_iter().zip(chunk) {
            if i % 10 == 3 {
                recalled.push(w.memory.id);
            } else if full && i % 10 != 7 {
                once.push(w.memory.id);
            }
        }
    }
    for ids in once.chunks(1_000) {
        engine
            .store()
            .touch(engine.tenant(), ids, muisti::Timestamp::now())?;
    }
    for ids in recalled.chunks(1_000) {
        let twelve: Vec<muisti::MemoryId> = ids.iter().flat_map(|id| [*id; 12]).collect();
        engine
            .store()
            .touch(engine.tenant(), &twelve, muisti::Timestamp::now())?;
    }
    let seeded = started.elapsed();
    let users = (memories as u64).div_ceil(per_user).max(1);
    // Recall of a random user, as an agent would ask, timed in milliseconds.
    let mut rng = crate::scale::Rng(0x243f_6a88_85a3_08d3);
    let mut recall = move || -> Result<f64> {
        let user = rng.next() % users;
        let mut req = muisti::RecallRequest::new(
            muisti::Namespace::default_ns(),
            format!(
                "what did user {user} note about item {}",
                rng.next() % per_user
            ),
            5,
        );
        req.filter.user_id = Some(format!("u{user}"));
        let t = std::time::Instant::now();
        engine.recall(&req)?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    };
    let quantiles = |mut ms: Vec<f64>| -> serde_json::Value {
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| {
            ms.get(((ms.len() as f64 - 1.0) * q).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        serde_json::json!({"recalls": ms.len(), "p50_ms": at(0.5), "p99_ms": at(0.99)})
    };
    let quiet: Vec<f64> = if with_recalls {
        (0..1_000).map(|_| recall()).collect::<Result<_>>()?
    } else {
        Vec::new()
    };
    let started = std::time::Instant::now();
    // The pass on a thread of its own; recalls go on beside it until it ends.
    let (report, during) = std::thread::scope(|scope| -> Result<_> {
        let pass = scope.spawn(|| {
            engine.run_maintenance(&muisti::lifecycle::MaintenanceOptions {
                max_memories: Some(max_memories),
                jobs: if full {
                    muisti::lifecycle::Job::ALL.to_vec()
                } else {
                    Vec::new()
                },
                archive_after: std::time::Duration::ZERO,
                archive_max_access: 0,
                near_duplicates: !exact_only,
                ..Default::default()
            })
        });
        let mut during = Vec::new();
        while with_recalls && !pass.is_finished() {
            during.push(recall()?);
        }
        let report = pass
            .join()
            .map_err(|_| anyhow::anyhow!("the maintenance pass panicked"))??;
        Ok((report, during))
    })?;
    let pass = started.elapsed();
    Ok(serde_json::json!({
        "memories": memories,
        "users": report.users,
        "seed_s": seeded.as_secs_f64(),
        "maintenance_s": pass.as_secs_f64(),
        "memories_per_s": memories as f64 / pass.as_secs_f64().max(1e-9),
        "peak_rss_mib": crate::locomo::peak_rss_mib(),
        "recall_without_pass": with_recalls.then(|| quantiles(quiet)),
        "recall_during_pass": with_recalls.then(|| quantiles(during)),
        "report": report,
    }))
}

/// `muisti bench graph`: writes `edges` memories of one user, waits for the worker to read
/// them into the graph, then times the three kinds of query.
fn graph_bench(engine: &muisti::Engine, edges: usize, queries: usize) -> Result<serde_json::Value> {
    use muisti::graph::RelationQuery;
    const COMPANIES: usize = 500;
    let partition = engine.partition(&muisti::Namespace::default_ns());
    let started = std::time::Instant::now();
    for chunk in (0..edges).collect::<Vec<_>>().chunks(1_000) {
        let puts = chunk
            .iter()
            .map(|i| {
                let mut p = muisti::Put::new(
                    partition.clone(),
                    None,
                    format!("Person{i} works at Company{}.", i % COMPANIES),
                );
                p.owner.user_id = Some("u".into());
                p
            })
            .collect();
        engine.remember_many(puts)?;
    }
    let written = started.elapsed();
    while engine.graph_pending()? > 0 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let extracted = started.elapsed();
    let mut rng = crate::scale::Rng(0x6a09_e667_f3bc_c908);
    let mut time = |f: &mut dyn FnMut(usize) -> Result<usize>| -> Result<serde_json::Value> {
        let mut ms = Vec::with_capacity(queries);
        let mut found = 0;
        for _ in 0..queries {
            let i = (rng.next() % edges.max(1) as u64) as usize;
            let t = std::time::Instant::now();
            found += f(i)?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| {
            ms.get(((ms.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        Ok(
            serde_json::json!({"p50_ms": at(0.5), "p95_ms": at(0.95), "mean_found": found as f64 / queries.max(1) as f64}),
        )
    };
    let user = Some("u".to_owned());
    let by_subject = time(&mut |i| {
        Ok(engine
            .graph_relations(&RelationQuery {
                user_id: user.clone(),
                subject: Some(format!("Person{i}")),
                ..RelationQuery::default()
            })?
            .len())
    })?;
    let by_object = time(&mut |i| {
        Ok(engine
            .graph_relations(&RelationQuery {
                user_id: user.clone(),
                predicate: Some("works_at".into()),
                object: Some(format!("Company{}", i % COMPANIES)),
                ..RelationQuery::default()
            })?
            .len())
    })?;
    let neighbourhood = time(&mut |i| {
        Ok(engine
            .graph_entity_relations(user.as_deref(), &format!("Person{i}"), None)?
            .len())
    })?;
    let two_hops = time(&mut |i| {
        Ok(engine
            .graph_neighbourhood(
                user.as_deref(),
                &format!("Person{i}"),
                2,
                None,
                muisti::graph::MAX_NEIGHBOURHOOD,
            )?
            .len())
    })?;
    let evidence = time(&mut |i| {
        Ok(engine
            .graph_evidence(
                user.as_deref(),
                &format!("Where does Person{i} work these days?"),
            )?
            .len())
    })?;
    Ok(serde_json::json!({
        "edges": edges,
        "write_s": written.as_secs_f64(),
        "extracted_s": extracted.as_secs_f64(),
        "memories_read_per_s": edges as f64 / extracted.as_secs_f64().max(1e-9),
        "triple_by_subject": by_subject,
        "triple_by_predicate_and_object": by_object,
        "entity_relations": neighbourhood,
        "neighbourhood_2_hops": two_hops,
        "recall_graph_evidence": evidence,
    }))
}

/// `muisti bench graph-extract`: the offline extractor's figures on a labelled corpus.
/// The engine a bench runs on: the given store, else a fresh SQLite file `file` in `dir`,
/// with the CLI's embedder.
fn bench_engine(
    cli: &crate::Cli,
    store: Option<&str>,
    dir: &tempfile::TempDir,
    file: &str,
) -> Result<muisti::Engine> {
    let url = match store {
        Some(u) => u.to_owned(),
        None => format!("sqlite://{}/{file}", dir.path().display()),
    };
    let embedder = muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?;
    Ok(muisti::Engine::builder(muisti::open_store(&url)?)
        .embedder(embedder)
        .build()?)
}

/// `muisti bench extract`: the offline fact extractor on each split of the corpus.
fn fact_extract(data: &std::path::Path, json: bool) -> Result<()> {
    use muisti::facts::{OfflineExtractor, eval};
    let corpus: Vec<eval::LabelledConversation> = read_labelled(data, "labelled conversations")?;
    let mut all = serde_json::Map::new();
    for split in ["tune", "test"] {
        let part: Vec<eval::LabelledConversation> = corpus
            .iter()
            .filter(|c| c.split == split)
            .cloned()
            .collect();
        let engine = |_: &eval::LabelledConversation| {
            muisti::Engine::builder(muisti::open_store("mem://")?).build()
        };
        let s = eval::evaluate(
            &part,
            &engine,
            &|_| std::sync::Arc::new(OfflineExtractor),
            None,
        )?;
        if !json {
            outln!(
                "{split}: {} conversations; facts precision {:.3} ({} of {} extracted), recall {:.3} (of {} labelled); dates {:.3} ({} of {}); decisions {:.3} ({} of {}) {:?}",
                s.conversations,
                s.precision(),
                s.right,
                s.found,
                s.recall(),
                s.facts,
                s.date_accuracy(),
                s.dated_right,
                s.dated,
                s.decision_accuracy(),
                s.decisions_right,
                s.decisions,
                s.by_event
            )?;
        }
        all.insert(
            split.to_owned(),
            serde_json::json!({"scores": s, "precision": s.precision(), "recall": s.recall(),
                "date_accuracy": s.date_accuracy(), "decision_accuracy": s.decision_accuracy()}),
        );
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
    }
    Ok(())
}

fn graph_extract(data: &std::path::Path, names: &std::path::Path, json: bool) -> Result<()> {
    use muisti_lang::relations as extract;
    let named: Vec<muisti::graph::LabelledNames> = read_labelled(names, "labelled names")?;
    let engine = muisti::Engine::builder(muisti::open_store("mem://")?)
        .graph_extraction(muisti::graph::GraphExtraction::Offline)
        .build()?;
    let r = muisti::graph::evaluate_resolution(&engine, &named)?;
    let corpus: Vec<extract::LabelledConversation> = read_labelled(data, "labelled conversations")?;
    let s = extract::evaluate(&corpus, extract::offline);
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "conversations": corpus.len(),
                "scores": s,
                "fact_precision": s.fact_precision(),
                "fact_recall": s.fact_recall(),
                "entity_precision": s.entity_precision(),
                "entity_recall": s.entity_recall(),
                "resolution": {
                    "conversations": named.len(),
                    "scores": r,
                    "precision": r.precision(),
                    "recall": r.recall(),
                },
            }))?
        )?;
        return Ok(());
    }
    outln!(
        "{} labelled conversations from {}",
        corpus.len(),
        data.display()
    )?;
    outln!(
        "facts:    precision {:.3} ({} of {} extracted), recall {:.3} (of {} labelled)",
        s.fact_precision(),
        s.facts_right,
        s.facts_found,
        s.fact_recall(),
        s.facts
    )?;
    outln!(
        "entities: precision {:.3} ({} of {} extracted), recall {:.3} (of {} labelled)",
        s.entity_precision(),
        s.entities_right,
        s.entities_found,
        s.entity_recall(),
        s.entities
    )?;
    outln!(
        "resolution ({} conversations from {}): precision {:.3} ({} of {} pairs joined), recall {:.3} (of {} labelled pairs); {} of {} names found",
        named.len(),
        names.display(),
        r.precision(),
        r.pairs_right,
        r.pairs_joined,
        r.recall(),
        r.same_pairs,
        r.names_found,
        r.names
    )?;
    Ok(())
}

/// `muisti bench conflicts`: the detector's figures on a labelled corpus.
fn conflicts(
    data: &std::path::Path,
    embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    errors: bool,
    json: bool,
) -> Result<()> {
    use muisti_lang::conflict as detect;
    let pairs: Vec<detect::LabelledPair> = read_labelled(data, "labelled pairs")?;
    let cosine = |a: &str, b: &str| pair_cosine(embedder.as_ref(), a, b);
    let without = detect::evaluate(&pairs, |_, _| None);
    let with = embedder.as_ref().map(|_| detect::evaluate(&pairs, cosine));
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs.len(),
                "without_embedder": without,
                "with_embedder": with,
                "embedder": embedder.as_ref().map(|e| e.id().to_owned()),
            }))?
        )?;
        return Ok(());
    }
    outln!("{} labelled pairs from {}", pairs.len(), data.display())?;
    outln!(
        "signals                        split  pairs  precision  recall  superseded (wrong)  possible  to a judge (+/-)"
    )?;
    let mut rows = vec![("rules only", without)];
    if let (Some(e), Some(with)) = (&embedder, with) {
        rows.push((e.id(), with));
    }
    for (name, e) in rows {
        for (split, s) in &e {
            outln!(
                "{name:<30} {split:<6} {:>5}  {:>9.3}  {:>6.3}  {:>10} ({:>3})  {:>8}  {:>6}/{:<6}",
                s.total,
                s.precision(),
                s.recall(),
                s.true_positives + s.false_positives,
                s.false_positives,
                s.possible,
                s.positives_to_judge,
                s.negatives_to_judge
            )?;
        }
    }
    if errors {
        for p in &pairs {
            let j = detect::judge(&p.existing, &p.new, cosine(&p.existing, &p.new));
            let wrong = match j.verdict {
                detect::Verdict::Supersede => !p.supersede,
                _ => p.supersede,
            };
            if wrong {
                outln!(
                    "{:>5} {:<5} {} | {:?} -> {:?} (slot {:?}, objects {}, cosine {:.2}, veto {:?})",
                    p.id,
                    p.split,
                    if p.supersede { "missed" } else { "WRONG " },
                    p.existing,
                    p.new,
                    j.shared_slot,
                    j.shared_objects,
                    j.cosine.unwrap_or(f32::NAN),
                    j.veto
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> LocomoSetting {
        LocomoSetting {
            fusion: muisti::Fusion::Weighted { lexical: 0.7 },
            candidates: 50,
            mode: muisti::RecallMode::Hybrid,
            graph: 0.0,
            temporal: 0.0,
            temporal_after_days: 0,
            temporal_text: false,
            neighbours: 0.0,
            words: 0.0,
            words_floor: 0.3,
            words_pool: 20,
        }
    }

    #[test]
    fn a_grid_is_every_combination_with_the_plain_setting_first_and_once() {
        let settings = plain()
            .grid("fusion=rrf,weighted:0.7; candidates=50,100")
            .expect("grid");
        let labels: Vec<String> = settings.iter().map(LocomoSetting::label).collect();
        assert_eq!(
            labels,
            [
                "fusion=weighted:0.7 candidates=50 mode=hybrid graph=0",
                "fusion=rrf:60 candidates=50 mode=hybrid graph=0",
                "fusion=rrf:60 candidates=100 mode=hybrid graph=0",
                "fusion=weighted:0.7 candidates=100 mode=hybrid graph=0",
            ]
        );
        let modes = plain().grid("mode=lexical;graph=0,0.2").expect("grid");
        assert_eq!(modes.len(), 3, "plain, lexical/0, lexical/0.2");
        assert_eq!(modes[2].graph, 0.2);
        let temporal = plain()
            .grid("temporal=0,0.1;temporal_after=7")
            .expect("grid");
        assert_eq!(
            temporal.last().map(LocomoSetting::label).as_deref(),
            Some(
                "fusion=weighted:0.7 candidates=50 mode=hybrid graph=0 temporal=0.1 temporal_after=7"
            )
        );
        let words = plain().grid("words=0.3;words_floor=0.2").expect("grid");
        assert_eq!(
            words[1].label(),
            "fusion=weighted:0.7 candidates=50 mode=hybrid graph=0 words=0.3 words_floor=0.2 \
             words_pool=20"
        );
        let pools = plain().grid("words=0.5;words_pool=10,30").expect("grid");
        assert_eq!(pools.len(), 3, "plain, 10, 30");
        assert_eq!(pools[2].words_pool, 30);
        let neighbours = plain().grid("neighbours=0.5,0.8").expect("grid");
        assert_eq!(neighbours.len(), 3, "plain, 0.5, 0.8");
        assert_eq!(
            neighbours[2].label(),
            "fusion=weighted:0.7 candidates=50 mode=hybrid graph=0 neighbours=0.8"
        );
    }

    #[test]
    fn a_bad_grid_says_what_is_wrong() {
        for (spec, says) in [
            ("fusion", "NAME=V1"),
            ("colour=red", "not fusion"),
            ("fusion=weighted:x", "invalid float"),
            ("candidates=many", "candidates"),
            ("graph=-1", "0 or more"),
            ("temporal=-0.1", "0 or more"),
            ("temporal_after=soon", "days"),
            ("neighbours=-1", "0 or more"),
            ("neighbours=lots", "neighbours"),
            ("words=-0.2", "0 or more"),
            ("words_floor=1", "below 1"),
            ("words_pool=-1", "words_pool"),
            ("temporal_text=yes", "0 or 1"),
            ("fusion=rrf,", "empty value"),
        ] {
            let e = plain().grid(spec).expect_err(spec);
            assert!(format!("{e:#}").contains(says), "{spec}: {e:#}");
        }
        assert_eq!(plain().grid("").expect("empty grid"), vec![plain()]);
    }
}
