//! `muisti bench`: its subcommands and their dispatch; each family of benches in a file.

use std::time::{Duration, Instant};

use std::io::Write;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use muisti::{Key, Locator, MemoryId, Namespace, Partition, Put, Store};
use serde::Serialize;

mod engine;
mod grid;
mod labelled;
mod memory_qa;
mod store;

/// The models a bench's engine uses: its embedder and, with `--reranker`, the reranker.
#[derive(Clone)]
pub(crate) struct Models {
    pub(crate) embedder: Option<std::sync::Arc<dyn muisti::Embedder>>,
    pub(crate) reranker: Option<std::sync::Arc<dyn muisti::Embedder>>,
}

/// How a bench's reranker scores, where the command line says (else the engine's).
#[derive(Args, Clone, Debug)]
pub(crate) struct RerankArgs {
    /// The reranker's weight, with --reranker (default: the engine's).
    #[arg(long)]
    rerank: Option<f32>,
    /// The share of a query its best word match must cover for the reranker to leave
    /// recall's order, with --reranker (default: the engine's; 1 re-scores every query).
    #[arg(long)]
    rerank_trust: Option<f32>,
    /// How many of recall's best hits the reranker re-scores, with --reranker (default:
    /// the engine's).
    #[arg(long)]
    rerank_pool: Option<usize>,
}

impl RerankArgs {
    /// `config` with the reranker's settings the command line gives.
    fn apply(&self, config: &mut muisti::RecallConfig) {
        if let Some(w) = self.rerank {
            config.rerank = w;
        }
        if let Some(t) = self.rerank_trust {
            config.rerank_trust = t;
        }
        if let Some(n) = self.rerank_pool {
            config.rerank_pool = n;
        }
    }
}

impl Models {
    /// The models the command line names.
    fn of(cli: &crate::Cli) -> Result<Self> {
        Ok(Self {
            embedder: muisti::embedder_from_spec(cli.embedder(), cli.embed_url.as_deref())?,
            reranker: crate::reranker(cli.reranker.as_deref(), cli.embed_url.as_deref())?,
        })
    }
}

use engine::*;
use grid::*;
use labelled::*;
use store::*;

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
        /// Also list each labelled fact not found, each fact found that is no label, and
        /// each wrong decision.
        #[arg(long)]
        misses: bool,
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
        /// The corpora: one JSON object per line (`user`, `messages`, `triples`,
        /// `entities`); each is scored on its own (default: the repository's, each set that
        /// guided the rules beside the one held out from them).
        #[arg(
            long,
            num_args = 1..,
            default_values = [
                "crates/muisti-lang/tests/data/graph-extraction.jsonl",
                "crates/muisti-lang/tests/data/graph-extraction-heldout.jsonl",
                "crates/muisti-lang/tests/data/graph-extraction-everyday.jsonl",
                "crates/muisti-lang/tests/data/graph-extraction-everyday-heldout.jsonl",
            ]
        )]
        data: Vec<std::path::PathBuf>,
        /// The entity-resolution corpora: one JSON object per line (`user`, `messages`,
        /// `clusters` of names that are one entity), each read into an in-memory graph.
        #[arg(
            long,
            num_args = 1..,
            default_values = [
                "crates/muisti-lang/tests/data/graph-resolution.jsonl",
                "crates/muisti-lang/tests/data/graph-resolution-heldout.jsonl",
            ]
        )]
        names: Vec<std::path::PathBuf>,
        /// Also list each labelled fact not found and each fact found that is no label.
        #[arg(long)]
        misses: bool,
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
    /// The memory a model sees on a memory-qa set (dated everyday memories, natural
    /// questions): recall's hit@1, all relevant in the top 3 and 5, hit@5 and MRR, and the
    /// agent's block (every relevant memory reached, the share of injected lines that are
    /// relevant, lines per prompt), per question kind; recall's p50.
    MemoryQa {
        /// The directory holding `memory-qa-dev.jsonl` (or the file itself).
        #[arg(long)]
        data: std::path::PathBuf,
        /// hybrid, lexical, vector or overlap.
        #[arg(long, default_value = "hybrid")]
        mode: String,
        /// Leave one user out: the block's injection rule chosen on the other users, scored
        /// on each user in turn, printed beside the plain run's figures.
        #[arg(long)]
        louo: bool,
        /// The plain run's injection rule, FLOOR,SHARE (default: the agent's).
        #[arg(long, value_name = "FLOOR,SHARE")]
        injection: Option<String>,
        /// rrf[:K], weighted:LEXICAL_WEIGHT or absolute:LEXICAL_WEIGHT (default: the
        /// engine's).
        #[arg(long)]
        fusion: Option<String>,
        /// Word matching's weight (default: the engine's; 0 turns it off).
        #[arg(long)]
        words: Option<f32>,
        #[command(flatten)]
        rerank: RerankArgs,
        /// Write each question's ranked hits with their signals to this file (JSON lines),
        /// to study what a change would move.
        #[arg(long)]
        dump: Option<std::path::PathBuf>,
        /// Read the memories into the graph offline and let the block carry up to N of the
        /// graph's facts about what each question names (0: the graph only as recall's
        /// evidence); prints the graph lines' share of the prompt.
        #[arg(long, value_name = "N")]
        graph_facts: Option<usize>,
        /// With --graph-facts: recall's weight of the graph's evidence (default: the
        /// engine's, 0).
        #[arg(long, requires = "graph_facts")]
        graph_weight: Option<f32>,
        /// Ask each question with a typing slip in its longest word (two middle letters
        /// swapped): how recall copes with misspelled words.
        #[arg(long)]
        typos: bool,
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
        #[command(flatten)]
        rerank: RerankArgs,
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
        .access_log(cli.access_log()?)
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
            let cache = || sqlite.as_ref().map(|s| s.cache_memory());
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
        BenchCommand::GraphExtract {
            data,
            names,
            misses,
        } => return graph_extract(data, names, *misses, json),
        BenchCommand::Extract { data, misses } => return fact_extract(data, *misses, json),
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
        BenchCommand::MemoryQa {
            data,
            mode,
            louo,
            injection,
            fusion,
            words,
            rerank,
            dump,
            graph_facts,
            graph_weight,
            typos,
        } => {
            let mut config = muisti::RecallConfig::default();
            if let Some(w) = graph_weight {
                config.graph = *w;
            }
            if let Some(f) = fusion {
                config.fusion = grid::parse_fusion(f)?;
            }
            if let Some(w) = words {
                config.words = *w;
            }
            rerank.apply(&mut config);
            let rule = match injection {
                None => muisti_agent::Injection::default(),
                Some(s) => memory_qa::parse_injection(s)?,
            };
            let report = memory_qa::memory_qa(
                data,
                cli.store.as_deref(),
                Models::of(cli)?,
                config,
                memory_qa::Run {
                    mode: mode.parse()?,
                    rule,
                    louo: *louo,
                    dump: dump.clone(),
                    graph_facts: *graph_facts,
                    typos: *typos,
                },
            )?;
            return print_report(&report, &report.lines(), json);
        }
        BenchCommand::Locomo {
            data,
            mode,
            fusion,
            no_access_tracking,
            candidates,
            words_pool,
            rerank,
            graph,
            graph_weights,
            loco,
            loco_grid,
            dump,
        } => {
            let mut config = muisti::RecallConfig {
                track_access: !no_access_tracking,
                ..Default::default()
            };
            rerank.apply(&mut config);
            let models = Models::of(cli)?;
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
                rerank: models
                    .reranker
                    .as_ref()
                    .map(|_| (config.rerank, config.rerank_trust)),
            };
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
                models,
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

/// The settings `muisti bench locomo --loco` chooses among by default: the fusion of the two
/// retrievers and the candidates each gives.
const DEFAULT_LOCO_GRID: &str = "fusion=weighted:0.5,weighted:0.6,weighted:0.7,weighted:0.8,weighted:0.9,rrf:60;candidates=50,100";

/// A bench's report: as JSON with `--json`, else its lines of text.
fn print_report(report: &impl Serialize, lines: &[String], json: bool) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(report)?)?;
    } else {
        for line in lines {
            outln!("{line}")?;
        }
    }
    Ok(())
}

/// Waits until the engine's graph worker has read every queued memory (the benches that
/// extract time or score the graph only once it has).
pub(crate) fn settle_graph(engine: &muisti::Engine) -> muisti::Result<()> {
    while engine.graph().pending()? > 0 {
        std::thread::sleep(std::time::Duration::from_millis(20));
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
            rerank: None,
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
        let reranked = LocomoSetting {
            rerank: Some((0.3, 0.5)),
            ..plain()
        }
        .grid("rerank=0.3,0.5;rerank_trust=0.5,1")
        .expect("grid");
        assert_eq!(reranked.len(), 4, "0.3/0.5 (plain), 0.3/1, 0.5/0.5, 0.5/1");
        assert_eq!(
            reranked[3].label(),
            "fusion=weighted:0.7 candidates=50 mode=hybrid graph=0 rerank=0.5 rerank_trust=1"
        );
        assert!(
            plain()
                .grid("rerank=0.5")
                .is_err_and(|e| e.to_string().contains("needs --reranker")),
            "a reranker's weight without a reranker is refused"
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
