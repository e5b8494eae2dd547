//! `muisti bench http`: the server under load from a client on loopback (recall, then
//! create), on a corpus like `bench scale`'s.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use muisti::{Engine, Namespace, Partition};
use muisti_client::{Client, NewMemory, RecallQuery};
use muisti_server::{ConfigLayer, Server, ServerConfig};
use serde::Serialize;

use crate::scale::{Rng, fact, question, seed, users_for};

#[derive(Serialize)]
pub(crate) struct Phase {
    requests: usize,
    errors: usize,
    requests_per_s: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    /// CPU per request of the server's threads (its runtime, blocking pool and background
    /// writers): with a server in this process, on Linux.
    server_cpu_ms: Option<f64>,
    /// CPU per request of the load generator's threads (on Linux).
    client_cpu_ms: Option<f64>,
}

/// What the server adds to a recall: the CPU per request of the same recalls made in
/// process without HTTP (the engine's recall, and its hits made the wire's types) beside
/// the server's.
#[derive(Serialize)]
pub(crate) struct ServerCost {
    /// Recalls made without HTTP.
    recalls: usize,
    /// CPU per recall without HTTP (every thread of the process: the engine's background
    /// access counting included).
    recall_cpu_ms: f64,
    /// The server's CPU per recall over HTTP, less the above: HTTP, routing, JSON, the
    /// runtime's scheduling and the hand-over to the blocking pool.
    server_own_cpu_ms: f64,
}

#[derive(Serialize)]
pub(crate) struct Report {
    memories: usize,
    connections: usize,
    seconds_per_phase: f64,
    /// The server measured: `in-process` or the `--server` URL.
    server: String,
    recall: Phase,
    create: Phase,
    /// With a server in this process on Linux.
    server_cost: Option<ServerCost>,
    /// Of this process: the server and the clients in process, the clients alone with
    /// `--server`.
    peak_rss_mib: f64,
}

/// The server under load: one started in this process over an engine, or one running
/// elsewhere.
pub(crate) enum Target {
    Local(Box<Engine>),
    Remote {
        url: String,
        api_key: Option<String>,
    },
}

/// Runs `connections` client threads for `seconds`, thread `t` against `bases[t % n]`;
/// `op(client, thread, i)` makes one request.
fn phase<F>(
    bases: &[String],
    api_key: Option<&str>,
    connections: usize,
    seconds: f64,
    local: bool,
    op: F,
) -> Result<Phase>
where
    F: Fn(&Client, usize, usize) -> Result<(), muisti_client::ClientError> + Send + Sync + 'static,
{
    let op = Arc::new(op);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let cpu_before = process_cpu_ms();
    let threads: Vec<_> = (0..connections)
        .map(|t| {
            let client = Client::new(&bases[t % bases.len()])?.with_key(api_key.map(str::to_owned));
            let op = Arc::clone(&op);
            Ok(std::thread::Builder::new()
                .name("bench-client".into())
                .spawn(move || {
                    let mut lat = Vec::new();
                    let mut errors = 0;
                    let mut i = 0;
                    while Instant::now() < deadline {
                        let s = Instant::now();
                        match op(&client, t, i) {
                            Ok(()) => lat.push(s.elapsed().as_secs_f64() * 1000.0),
                            Err(_) => errors += 1,
                        }
                        i += 1;
                    }
                    (lat, errors, thread_cpu_ms())
                })?)
        })
        .collect::<Result<_>>()?;
    let mut all = Vec::new();
    let mut errors = 0;
    let mut clients_cpu = Some(0.0);
    for t in threads {
        let (lat, e, cpu) = t
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        all.extend(lat);
        errors += e;
        clients_cpu = clients_cpu.zip(cpu).map(|(a, b)| a + b);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let made = (all.len() + errors).max(1) as f64;
    let per_request = |ms: f64| ms / made;
    let server_cpu = match (local, cpu_before, process_cpu_ms(), clients_cpu) {
        (true, Some(before), Some(after), Some(clients)) => {
            Some(per_request(after - before - clients))
        }
        _ => None,
    };
    all.sort_by(f64::total_cmp);
    Ok(Phase {
        requests: all.len(),
        errors,
        requests_per_s: all.len() as f64 / elapsed,
        p50_ms: percentile(&all, 0.5),
        p95_ms: percentile(&all, 0.95),
        p99_ms: percentile(&all, 0.99),
        server_cpu_ms: server_cpu,
        client_cpu_ms: clients_cpu.map(per_request),
    })
}

/// The CPU time of every thread this process has had (those that ended included), in
/// milliseconds; `None` without Linux's `/proc`.
#[cfg(target_os = "linux")]
fn process_cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command's name (which may hold spaces), from the state on:
    // utime and stime are the 14th and 15th of the line.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let ticks: u64 = fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?;
    Some(ticks as f64 * 1000.0 / rustix::param::clock_ticks_per_second() as f64)
}

#[cfg(not(target_os = "linux"))]
fn process_cpu_ms() -> Option<f64> {
    None
}

/// The CPU time of the calling thread so far, in milliseconds; `None` without `/proc`.
fn thread_cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e6)
}

/// The timed phase's recall number `n`: one of the questions, filtered by one of the users.
fn recall_query(questions: &[String], users: usize, n: usize) -> RecallQuery {
    RecallQuery {
        namespace: Some("bench".into()),
        user_id: Some(format!("user-{}", n % users)),
        ..RecallQuery::new(questions[n % questions.len()].clone(), 10)
    }
}

/// Recalls like the timed phase's, made in process without HTTP for about `seconds`, and
/// what the server adds to each.
fn server_cost(
    engine: &Engine,
    recall: &Phase,
    questions: &[String],
    users: usize,
    seconds: f64,
) -> Result<Option<ServerCost>> {
    let Some(server_cpu) = recall.server_cpu_ms else {
        return Ok(None);
    };
    let (deadline, before) = (
        Instant::now() + Duration::from_secs_f64(seconds),
        process_cpu_ms(),
    );
    let mut recalls = 0;
    while Instant::now() < deadline {
        muisti_server::ops::recall(engine, recall_query(questions, users, recalls * 7919))?;
        recalls += 1;
    }
    let Some(cpu) = before.zip(process_cpu_ms()).map(|(b, a)| a - b) else {
        return Ok(None);
    };
    let recall_cpu_ms = cpu / recalls.max(1) as f64;
    Ok(Some(ServerCost {
        recalls,
        recall_cpu_ms,
        server_own_cpu_ms: server_cpu - recall_cpu_ms,
    }))
}

/// A server to load: `base` URL, API key, how to name it in a report, and the number of
/// users its seeded memories belong to.
struct Running<'a> {
    base: &'a str,
    api_key: Option<&'a str>,
    name: &'a str,
    users: usize,
    /// The server's engine, when it runs in this process.
    engine: Option<Engine>,
}

/// Seeds `memories` into the target's `bench` namespace (starting a server in this process
/// for [`Target::Local`]) and runs `f` against it.
fn with_server<R>(
    target: Target,
    memories: usize,
    rng: &mut Rng,
    f: impl FnOnce(Running<'_>, &mut Rng) -> Result<R>,
) -> Result<R> {
    let users = users_for(memories);
    match target {
        Target::Local(engine) => {
            let engine = *engine;
            let ns = Namespace::new("bench")?;
            let partition = Partition::new(engine.tenant().clone(), ns);
            eprintln!("seeding {memories} memories");
            seed(&engine, &partition, memories, rng)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("runtime")?;
            let config = ServerConfig::resolve(ConfigLayer {
                listen: Some("127.0.0.1:0".into()),
                ..ConfigLayer::default()
            })?;
            let server = runtime.block_on(Server::bind(engine.clone(), config))?;
            let base = format!("http://{}", server.local_addr()?);
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let handle = runtime.spawn(server.run(async move {
                let _ = stopped.await;
            }));
            let running = Running {
                base: &base,
                api_key: None,
                name: "in-process",
                users,
                engine: Some(engine),
            };
            let report = f(running, rng);
            let _ = stop.send(());
            runtime.block_on(handle)??;
            report
        }
        Target::Remote { url, api_key } => {
            let client = Client::new(&url)?.with_key(api_key.clone());
            eprintln!("seeding {memories} memories into {url} (namespace bench)");
            let mut i = 0;
            while i < memories {
                let n = (memories - i).min(500);
                let batch = muisti_client::NewMemories {
                    memories: (i..i + n)
                        .map(|k| NewMemory {
                            namespace: Some("bench".into()),
                            user_id: Some(format!("user-{}", k % users)),
                            ..NewMemory::text(fact(rng, k))
                        })
                        .collect(),
                };
                client.create_many(&batch)?;
                i += n;
            }
            let running = Running {
                base: &url,
                api_key: api_key.as_deref(),
                name: &url,
                users,
                engine: None,
            };
            f(running, rng)
        }
    }
}

/// `bench http`: recall, then create, each for `seconds` from `connections` clients, spread
/// over the target and the servers `also` (on the same store).
pub(crate) fn run(
    target: Target,
    also: &[String],
    memories: usize,
    seconds: f64,
    connections: usize,
) -> Result<Report> {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    with_server(target, memories, &mut rng, |r, rng| {
        let bases: Vec<String> = std::iter::once(r.base.to_owned())
            .chain(also.iter().cloned())
            .collect();
        let name = bases.join(",");
        load(
            &bases,
            r.api_key,
            if also.is_empty() { r.name } else { &name },
            r.users,
            memories,
            seconds,
            connections,
            rng,
            r.engine.as_ref().filter(|_| also.is_empty()),
        )
    })
}

/// The timed phases against a running server at `base`.
#[allow(clippy::too_many_arguments)]
fn load(
    bases: &[String],
    api_key: Option<&str>,
    server: &str,
    users: usize,
    memories: usize,
    seconds: f64,
    connections: usize,
    rng: &mut Rng,
    engine: Option<&Engine>,
) -> Result<Report> {
    let local = engine.is_some();
    // Warm up: one recall per user loads what the timed recalls read (on SQLite, each
    // user's rows, and the whole partition in the background), so the timed phase measures
    // the steady state. (A recall across users would also start building an HNSW graph,
    // which would then compete with the timed phase for the CPU.)
    for base in bases {
        let warm = Client::new(base)?.with_key(api_key.map(str::to_owned));
        for u in 0..users {
            warm.recall(&RecallQuery {
                namespace: Some("bench".into()),
                user_id: Some(format!("user-{u}")),
                ..RecallQuery::new("warm up", 10)
            })?;
        }
    }
    let questions: Arc<Vec<String>> = Arc::new((0..1024).map(|_| question(rng)).collect());
    let facts: Arc<Vec<String>> = Arc::new((0..1024).map(|i| fact(rng, i)).collect());
    eprintln!("recall: {connections} connections for {seconds} s");
    let qs = Arc::clone(&questions);
    let recall = phase(
        bases,
        api_key,
        connections,
        seconds,
        local,
        move |c, t, i| {
            c.recall(&recall_query(&qs, users, t * 7919 + i))
                .map(|_| ())
        },
    )?;
    let server_cost = match engine {
        Some(engine) => server_cost(engine, &recall, &questions, users, seconds.min(5.0))?,
        None => None,
    };
    eprintln!("create: {connections} connections for {seconds} s");
    let fs = Arc::clone(&facts);
    let create = phase(
        bases,
        api_key,
        connections,
        seconds,
        local,
        move |c, t, i| {
            let n = t * 7919 + i;
            c.create(&NewMemory {
                namespace: Some("bench".into()),
                user_id: Some(format!("user-{}", n % users)),
                ..NewMemory::text(format!("{} (client {t}, write {i})", fs[n % fs.len()]))
            })
            .map(|_| ())
        },
    )?;
    Ok(Report {
        memories,
        connections,
        seconds_per_phase: seconds,
        server: server.to_owned(),
        recall,
        create,
        server_cost,
        peak_rss_mib: crate::locomo::peak_rss_mib(),
    })
}

/// One kind of request of a sustained load.
#[derive(Serialize)]
pub(crate) struct OpStats {
    requests: usize,
    errors: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

/// What `bench load` reports.
#[derive(Serialize)]
pub(crate) struct LoadReport {
    memories: usize,
    seconds: f64,
    /// Requests per second asked for, and sent.
    target_rate: f64,
    achieved_rate: f64,
    connections: usize,
    server: String,
    requests: usize,
    errors: usize,
    /// Latency from each request's scheduled time (waiting behind a slow one counts).
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    recall: OpStats,
    create: OpStats,
    kv_set: OpStats,
    kv_get: OpStats,
    /// The first few errors, as the client saw them.
    first_errors: Vec<String>,
}

impl LoadReport {
    /// Requests that failed.
    pub(crate) fn errors(&self) -> usize {
        self.errors
    }
}

const OPS: [&str; 4] = ["recall", "create", "kv_set", "kv_get"];

/// Which operation request `k` is: 60 % recall, 25 % create, 10 % kv set, 5 % kv get.
fn op_of(k: usize) -> usize {
    match k % 20 {
        0..12 => 0,
        12..17 => 1,
        17..19 => 2,
        _ => 3,
    }
}

/// The `p` quantile (0 to 1) of sorted latencies, NaN for none: the one definition of every
/// bench's percentiles.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// p50, p99 and the maximum of unsorted latencies.
fn percentiles(mut lat: Vec<f64>) -> (f64, f64, f64) {
    lat.sort_by(f64::total_cmp);
    (
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0),
    )
}

/// `bench load`: a mixed workload (recall, create, key-value) sent at a fixed rate for
/// `seconds`, open loop: request `k` is due at `k / rate` seconds and its latency counts from
/// then, so a slow server cannot slow the load down and hide its own queueing.
pub(crate) fn sustained(
    target: Target,
    memories: usize,
    seconds: f64,
    rate: f64,
    connections: usize,
) -> Result<LoadReport> {
    let mut rng = Rng(0x10ad_5eed_0000_0001);
    with_server(target, memories, &mut rng, |r, rng| {
        let questions: Arc<Vec<String>> = Arc::new((0..1024).map(|_| question(rng)).collect());
        let facts: Arc<Vec<String>> = Arc::new((0..1024).map(|i| fact(rng, i)).collect());
        let total = (seconds * rate).ceil() as usize;
        let users = r.users;
        eprintln!("load: {rate} requests/s for {seconds} s from {connections} connections");
        let start = Instant::now();
        let threads: Vec<_> = (0..connections)
            .map(|t| {
                let client = Client::new(r.base)?.with_key(r.api_key.map(str::to_owned));
                let (qs, fs) = (Arc::clone(&questions), Arc::clone(&facts));
                Ok(std::thread::spawn(move || {
                    let mut lat: [Vec<f64>; 4] = Default::default();
                    let mut errors = [0usize; 4];
                    let mut first = Vec::new();
                    for k in (t..total).step_by(connections) {
                        let due = start + Duration::from_secs_f64(k as f64 / rate);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            std::thread::sleep(wait);
                        }
                        let user = format!("user-{}", k % users);
                        let op = op_of(k);
                        let result = match op {
                            0 => client
                                .recall(&RecallQuery {
                                    namespace: Some("bench".into()),
                                    user_id: Some(user),
                                    ..RecallQuery::new(qs[k % qs.len()].clone(), 10)
                                })
                                .map(|_| ()),
                            1 => client
                                .create(&NewMemory {
                                    namespace: Some("bench".into()),
                                    user_id: Some(user),
                                    ..NewMemory::text(format!("{} (load {k})", fs[k % fs.len()]))
                                })
                                .map(|_| ()),
                            2 => client
                                .kv_set(
                                    "bench-kv",
                                    &format!("key-{}", k % 500),
                                    serde_json::json!({"k": k, "user": user}),
                                    None,
                                )
                                .map(|_| ()),
                            _ => client
                                .kv_get("bench-kv", &format!("key-{}", k % 500))
                                .map(|_| ()),
                        };
                        match result {
                            Ok(()) => lat[op].push(due.elapsed().as_secs_f64() * 1000.0),
                            Err(e) => {
                                errors[op] += 1;
                                if first.len() < 5 {
                                    first.push(format!("{}: {e}", OPS[op]));
                                }
                            }
                        }
                    }
                    (lat, errors, first)
                }))
            })
            .collect::<Result<_>>()?;
        let mut lat: [Vec<f64>; 4] = Default::default();
        let mut errors = [0usize; 4];
        let mut first_errors = Vec::new();
        for t in threads {
            let (l, e, f) = t
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
            for op in 0..4 {
                lat[op].extend_from_slice(&l[op]);
                errors[op] += e[op];
            }
            first_errors.extend(f);
        }
        let elapsed = start.elapsed().as_secs_f64();
        first_errors.truncate(5);
        let stats = |op: usize| {
            let (p50_ms, p99_ms, max_ms) = percentiles(lat[op].clone());
            OpStats {
                requests: lat[op].len() + errors[op],
                errors: errors[op],
                p50_ms,
                p99_ms,
                max_ms,
            }
        };
        let (p50_ms, p99_ms, max_ms) = percentiles(lat.concat());
        Ok(LoadReport {
            memories,
            seconds,
            target_rate: rate,
            achieved_rate: total as f64 / elapsed,
            connections,
            server: r.name.to_owned(),
            requests: total,
            errors: errors.iter().sum(),
            p50_ms,
            p99_ms,
            max_ms,
            recall: stats(0),
            create: stats(1),
            kv_set: stats(2),
            kv_get: stats(3),
            first_errors,
        })
    })
}
