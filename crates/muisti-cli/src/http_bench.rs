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
    /// Of this process: the server and the clients in process, the clients alone with
    /// `--server`.
    peak_rss_mib: f64,
}

/// The server under load: one started in this process over an engine, or one running
/// elsewhere.
pub(crate) enum Target {
    Local(Engine),
    Remote {
        url: String,
        api_key: Option<String>,
    },
}

/// Runs `connections` client threads against `base` for `seconds`; `op(client, thread, i)`
/// makes one request.
fn phase<F>(
    base: &str,
    api_key: Option<&str>,
    connections: usize,
    seconds: f64,
    op: F,
) -> Result<Phase>
where
    F: Fn(&Client, usize, usize) -> Result<(), muisti_client::ClientError> + Send + Sync + 'static,
{
    let op = Arc::new(op);
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let threads: Vec<_> = (0..connections)
        .map(|t| {
            let client = Client::new(base)?.with_key(api_key.map(str::to_owned));
            let op = Arc::clone(&op);
            Ok(std::thread::spawn(move || {
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
                (lat, errors)
            }))
        })
        .collect::<Result<_>>()?;
    let mut all = Vec::new();
    let mut errors = 0;
    for t in threads {
        let (lat, e) = t
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))?;
        all.extend(lat);
        errors += e;
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        all.get(((all.len().max(1) - 1) as f64 * p).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Ok(Phase {
        requests: all.len(),
        errors,
        requests_per_s: all.len() as f64 / elapsed,
        p50_ms: pct(0.5),
        p95_ms: pct(0.95),
        p99_ms: pct(0.99),
    })
}

pub(crate) fn run(
    target: Target,
    memories: usize,
    seconds: f64,
    connections: usize,
) -> Result<Report> {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let users = users_for(memories);
    match target {
        Target::Local(engine) => {
            let ns = Namespace::new("bench")?;
            let partition = Partition::new(engine.tenant().clone(), ns);
            eprintln!("seeding {memories} memories");
            seed(&engine, &partition, memories, &mut rng)?;
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("runtime")?;
            let config = ServerConfig::resolve(ConfigLayer {
                listen: Some("127.0.0.1:0".into()),
                ..ConfigLayer::default()
            })?;
            let server = runtime.block_on(Server::bind(engine, config))?;
            let base = format!("http://{}", server.local_addr()?);
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let handle = runtime.spawn(server.run(async move {
                let _ = stopped.await;
            }));
            let report = load(
                &base,
                None,
                "in-process",
                users,
                memories,
                seconds,
                connections,
                &mut rng,
            );
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
                            ..NewMemory::text(fact(&mut rng, k))
                        })
                        .collect(),
                };
                client.create_many(&batch)?;
                i += n;
            }
            load(
                &url,
                api_key.as_deref(),
                &url,
                users,
                memories,
                seconds,
                connections,
                &mut rng,
            )
        }
    }
}

/// The timed phases against a running server at `base`.
#[allow(clippy::too_many_arguments)]
fn load(
    base: &str,
    api_key: Option<&str>,
    server: &str,
    users: usize,
    memories: usize,
    seconds: f64,
    connections: usize,
    rng: &mut Rng,
) -> Result<Report> {
    // Warm up: the first recall loads the partition into memory.
    Client::new(base)?
        .with_key(api_key.map(str::to_owned))
        .recall(&RecallQuery {
            namespace: Some("bench".into()),
            user_id: Some("user-0".into()),
            ..RecallQuery::new("warm up", 10)
        })?;
    let questions: Arc<Vec<String>> = Arc::new((0..1024).map(|_| question(rng)).collect());
    let facts: Arc<Vec<String>> = Arc::new((0..1024).map(|i| fact(rng, i)).collect());
    eprintln!("recall: {connections} connections for {seconds} s");
    let qs = Arc::clone(&questions);
    let recall = phase(base, api_key, connections, seconds, move |c, t, i| {
        let n = t * 7919 + i;
        c.recall(&RecallQuery {
            namespace: Some("bench".into()),
            user_id: Some(format!("user-{}", n % users)),
            ..RecallQuery::new(qs[n % qs.len()].clone(), 10)
        })
        .map(|_| ())
    })?;
    eprintln!("create: {connections} connections for {seconds} s");
    let fs = Arc::clone(&facts);
    let create = phase(base, api_key, connections, seconds, move |c, t, i| {
        let n = t * 7919 + i;
        c.create(&NewMemory {
            namespace: Some("bench".into()),
            user_id: Some(format!("user-{}", n % users)),
            ..NewMemory::text(format!("{} (client {t}, write {i})", fs[n % fs.len()]))
        })
        .map(|_| ())
    })?;
    Ok(Report {
        memories,
        connections,
        seconds_per_phase: seconds,
        server: server.to_owned(),
        recall,
        create,
        peak_rss_mib: crate::locomo::peak_rss_mib(),
    })
}
