//! `muisti bench proxy`: what the OpenAI-compatible proxy adds to a chat completion. The
//! same instant model on loopback as `bench agent` answers every call at once; a real
//! `muisti serve` (in this process, over the store) forwards to it. Each message is sent
//! straight to the model and through the proxy, alternately, so both see the same machine.

use std::time::Duration;

use anyhow::{Context, Result};
use muisti::{Engine, Namespace, Put};
use serde::Serialize;
use serde_json::json;

use crate::agent_bench::{instant_model, pct, time};
use crate::scale::{Rng, fact, question};

/// The figures, in milliseconds.
#[derive(Serialize)]
pub(crate) struct Report {
    /// Memories of the one user the requests name.
    memories_per_user: usize,
    messages: usize,
    /// What the proxy remembered of each exchange.
    remember: String,
    /// `POST /v1/chat/completions` to the model itself.
    direct_p50_ms: f64,
    direct_p99_ms: f64,
    /// The same request through the proxy (recall, block, forward, answer).
    proxy_p50_ms: f64,
    proxy_p99_ms: f64,
    /// `proxy_p50_ms - direct_p50_ms`.
    overhead_p50_ms: f64,
    /// Of the proxy's work, in this process without HTTP: the memory block for a message
    /// (`Agent::context`: the user's declarative entries, recall, guards).
    context_p50_ms: f64,
    /// Of that: `Engine::recall` of the message for the user (limit 3).
    recall_p50_ms: f64,
    /// Of that: the user's declarative entries (`Declarative::declarative_entries`).
    declarative_p50_ms: f64,
    /// Mean memories the proxy put into a request.
    recalled_mean: f64,
}

const USER: &str = "user-0";

fn post(agent: &ureq::Agent, url: &str, body: &str) -> Result<(u16, usize)> {
    let mut resp = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body)
        .with_context(|| format!("POST {url}"))?;
    let recalled = resp
        .headers()
        .get("x-muisti-recalled")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let status = resp.status().as_u16();
    let _ = resp.body_mut().read_to_string()?;
    Ok((status, recalled))
}

pub(crate) fn run(
    engine: Engine,
    memories: usize,
    messages: usize,
    remember: &str,
) -> Result<Report> {
    let ns = Namespace::default_ns();
    let partition = engine.partition(&ns);
    let mut rng = Rng(0x5eed_0042_abcd_ef01);
    let mut batch = Vec::new();
    for i in 0..memories {
        let mut put = Put::new(partition.clone(), None, fact(&mut rng, i));
        put.owner.user_id = Some(USER.into());
        batch.push(put);
        if batch.len() == 1000 {
            engine.remember_many(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        engine.remember_many(batch)?;
    }
    let model = instant_model()?;
    let config = muisti_server::ServerConfig::resolve(muisti_server::ConfigLayer {
        listen: Some("127.0.0.1:0".into()),
        llm_base_url: Some(format!("http://{model}/v1")),
        llm_model: Some("instant".into()),
        llm_judge_conflicts: Some(false),
        llm_extract_facts: Some(false),
        proxy_remember: Some(remember.to_owned()),
        maintain_interval_secs: Some(0),
        ..muisti_server::ConfigLayer::default()
    })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let server = runtime.block_on(muisti_server::Server::bind(engine.clone(), config))?;
    let addr = server.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = runtime.spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let http: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .into();
    let direct_url = format!("http://{model}/v1/chat/completions");
    let proxy_url = format!("http://{addr}/v1/chat/completions");
    let body = |q: &str| {
        json!({"model": "instant", "user": USER, "messages": [{"role": "user", "content": q}]})
            .to_string()
    };
    // Warm up: the first recall loads the user's memories.
    post(&http, &proxy_url, &body(&question(&mut rng)))?;
    let (mut direct, mut proxied) = (Vec::new(), Vec::new());
    let mut recalled = 0;
    for _ in 0..messages {
        let b = body(&question(&mut rng));
        time(&mut direct, || post(&http, &direct_url, &b))?;
        let (status, n) = time(&mut proxied, || post(&http, &proxy_url, &b))?;
        anyhow::ensure!(status == 200, "the proxy answered {status}");
        recalled += n;
    }
    // The block alone, as the proxy makes it, without HTTP.
    let agent = muisti_agent::Agent::builder()
        .memory(engine.clone())
        .provider(
            muisti_agent::ProviderConfig::new(muisti_agent::ProviderKind::OpenAi, "instant")
                .base_url(format!("http://{model}/v1"))
                .api_key(None)
                .connect()?,
        )
        .recall_filter(muisti::Filter {
            user_id: Some(USER.into()),
            ..muisti::Filter::default()
        })
        .build()?;
    let mut context = Vec::new();
    for _ in 0..messages {
        let q = question(&mut rng);
        time(&mut context, || Ok(agent.context(&q)?))?;
    }
    context.sort_by(f64::total_cmp);
    let (mut rec, mut decl) = (Vec::new(), Vec::new());
    for _ in 0..messages {
        let q = question(&mut rng);
        time(&mut rec, || {
            let mut req = muisti::RecallRequest::new(ns.clone(), q.as_str(), 3);
            req.filter.user_id = Some(USER.into());
            Ok(engine.recall(&req)?)
        })?;
        time(&mut decl, || {
            Ok(engine.declarative().declarative_entries(&ns, USER)?)
        })?;
    }
    rec.sort_by(f64::total_cmp);
    decl.sort_by(f64::total_cmp);

    let _ = stop.send(());
    let _ = runtime.block_on(running);
    direct.sort_by(f64::total_cmp);
    proxied.sort_by(f64::total_cmp);
    Ok(Report {
        memories_per_user: memories,
        messages,
        remember: remember.to_owned(),
        direct_p50_ms: pct(&direct, 0.5),
        direct_p99_ms: pct(&direct, 0.99),
        proxy_p50_ms: pct(&proxied, 0.5),
        proxy_p99_ms: pct(&proxied, 0.99),
        overhead_p50_ms: pct(&proxied, 0.5) - pct(&direct, 0.5),
        context_p50_ms: pct(&context, 0.5),
        recall_p50_ms: pct(&rec, 0.5),
        declarative_p50_ms: pct(&decl, 0.5),
        recalled_mean: recalled as f64 / messages.max(1) as f64,
    })
}
