//! `muisti bench agent`: what memory adds to a chat message. An instant OpenAI-compatible
//! model on loopback answers every call at once, so the figures are muisti's own cost:
//! recall, the prompt block, guards, the HTTP exchange, and the conversation's save.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::Instant,
};

use anyhow::{Context, Result};
use muisti::{Engine, Namespace, Partition, RecallRequest};
use muisti_agent::{Agent, ChatRequest, Message, ProviderConfig, ProviderKind};
use serde::Serialize;

use crate::scale::{Rng, question, seed};

/// The figures, in milliseconds.
#[derive(Serialize)]
pub(crate) struct Report {
    memories: usize,
    messages: usize,
    /// The user's declarative entries injected into every prompt (with `--declarative`).
    #[serde(skip_serializing_if = "Option::is_none")]
    declarative: Option<usize>,
    /// `Engine::recall` of the message alone (limit 3).
    recall_p50_ms: f64,
    /// One call to the instant model with no memory: the HTTP floor.
    model_call_p50_ms: f64,
    /// `Agent::send`: guards, recall, block, model call.
    send_p50_ms: f64,
    send_p99_ms: f64,
    /// `Agent::send_in_conversation` on a conversation that grows to `messages` turns: the
    /// above plus reading and saving the conversation.
    conversation_turn_p50_ms: f64,
    conversation_turn_p99_ms: f64,
    /// A user's conversation turn, side by side: without learning, and with the exchange
    /// gathered for extraction after the reply (`AgentBuilder::learn`, as `muisti serve`
    /// does; the queue reads in the background, so this is what the reply waits for).
    user_turn_p50_ms: f64,
    learning_turn_p50_ms: f64,
    learning_turn_p99_ms: f64,
    /// Facts the background extraction stored from the learning turns.
    learned: u64,
    /// Mean memories injected per message, and mean block size.
    recalled_mean: f64,
    block_bytes_mean: f64,
}

const ANSWER: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;

/// Answers every request on its connection at once (HTTP/1.1 keep-alive).
fn serve(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        let mut first = true;
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line.trim().is_empty() && !first {
                break;
            }
            first = false;
            if let Some((k, v)) = line.split_once(':')
                && k.trim().eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        // One write: several small ones would wait on the client's delayed ACK (Nagle).
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{ANSWER}",
            ANSWER.len()
        );
        out.write_all(reply.as_bytes())?;
        out.flush()?;
    }
}

pub(crate) fn instant_model() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding the instant model")?;
    let addr = listener.local_addr()?;
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let _ = serve(stream);
            });
        }
    });
    Ok(addr)
}

pub(crate) fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub(crate) fn time<T>(samples: &mut Vec<f64>, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let t = Instant::now();
    let out = f()?;
    samples.push(t.elapsed().as_secs_f64() * 1000.0);
    Ok(out)
}

/// The user the agent speaks for with `--declarative`.
const USER: &str = "user-0";

/// The user of the side-by-side turns with and without learning.
const LEARNER: &str = "learner";

/// What the learner tells of: a pet each turn, with a name.
const PETS: &[&str] = &["dog", "cat", "parrot", "rabbit", "horse", "tortoise"];

/// A name for the `i`th pet.
fn name(i: usize) -> String {
    const SYLLABLES: &[&str] = &["ro", "ki", "ma", "zu", "le", "ta", "no", "bi"];
    let (a, b) = (
        SYLLABLES[i % SYLLABLES.len()],
        SYLLABLES[(i / 8) % SYLLABLES.len()],
    );
    let mut n = format!("{a}{b}{i}");
    n[..1].make_ascii_uppercase();
    n
}

/// `count` user-stated declarative entries of [`USER`], of every type, about distinct things.
fn declare(engine: &Engine, partition: &Partition, count: usize) -> Result<()> {
    let kinds = [
        muisti::Category::Rule,
        muisti::Category::Preference,
        muisti::Category::Fact,
    ];
    for i in 0..count {
        let mut put = muisti::Put::new(
            partition.clone(),
            None,
            format!(
                "Project number {i} of the user goes by the codename {}",
                i * 7919 % 10007
            ),
        );
        put.scope = muisti::MemoryScope::Declarative;
        put.category = kinds[i % kinds.len()].clone();
        put.owner.user_id = Some(USER.into());
        engine.declarative().declare(put)?;
    }
    Ok(())
}

pub(crate) fn run(
    engine: Engine,
    memories: usize,
    messages: usize,
    declarative: Option<usize>,
) -> Result<Report> {
    let ns = Namespace::default_ns();
    let partition = Partition::new(engine.tenant().clone(), ns.clone());
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    seed(&engine, &partition, memories, &mut rng)?;
    let filter = match declarative {
        Some(n) => {
            declare(&engine, &partition, n)?;
            muisti::Filter {
                user_id: Some(USER.into()),
                ..muisti::Filter::default()
            }
        }
        None => muisti::Filter::default(),
    };
    let addr = instant_model()?;
    let provider = ProviderConfig::new(ProviderKind::OpenAi, "instant")
        .base_url(format!("http://{addr}/v1"))
        .api_key(None)
        .connect()?;
    let block_bytes = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&block_bytes);
    let agent = Agent::builder()
        .memory(engine.clone())
        .provider(provider.clone())
        .recall_filter(filter.clone())
        .observer(Arc::new(move |e: &muisti::Event| {
            if let muisti::Event::Recalled { bytes, .. } = e {
                counter.fetch_add(*bytes, Ordering::Relaxed);
            }
        }))
        .build()?;
    let questions: Vec<String> = (0..=messages).map(|_| question(&mut rng)).collect();
    // Warm up: the first recall loads the partition.
    agent.send(&questions[0])?;
    block_bytes.store(0, Ordering::Relaxed);
    let (mut recall, mut model, mut send, mut turn) = (vec![], vec![], vec![], vec![]);
    let mut recalled = 0usize;
    for q in &questions[1..] {
        time(&mut recall, || {
            let mut req = RecallRequest::new(ns.clone(), q.as_str(), 3);
            req.filter = filter.clone();
            Ok(engine.recall(&req)?)
        })?;
        time(&mut model, || {
            Ok(provider.chat(&ChatRequest {
                messages: vec![Message::user(q.as_str())],
                ..ChatRequest::default()
            })?)
        })?;
        let reply = time(&mut send, || Ok(agent.send(q)?))?;
        recalled += reply.recalled.len();
    }
    let injected = block_bytes.load(Ordering::Relaxed);
    let mut conv = agent.conversation()?;
    for q in &questions[1..] {
        conv = time(&mut turn, || Ok(agent.send_in_conversation(&conv, q)?))?.conversation;
    }
    // A user's turns, with and without learning, interleaved.
    let learner_filter = muisti::Filter {
        user_id: Some(LEARNER.into()),
        ..muisti::Filter::default()
    };
    let learned = Arc::new(AtomicUsize::new(0));
    let stored = Arc::clone(&learned);
    let queue = Arc::new(muisti::facts::ExtractionQueue::start(
        muisti::facts::Debounce::default(),
        Box::new(move |_, done| {
            if let Ok(report) = done {
                let added = report
                    .results
                    .iter()
                    .filter(|r| r.event == muisti::facts::FactEvent::Add)
                    .count();
                stored.fetch_add(added, Ordering::Relaxed);
            }
        }),
    ));
    let user_agent = |learn: bool| -> Result<Agent> {
        let b = Agent::builder()
            .memory(engine.clone())
            .provider(provider.clone())
            .recall_filter(learner_filter.clone());
        Ok(if learn {
            b.learn(Arc::clone(&queue))
        } else {
            b
        }
        .build()?)
    };
    let (plain, learning) = (user_agent(false)?, user_agent(true)?);
    let (mut plain_conv, mut learning_conv) = (plain.conversation()?, learning.conversation()?);
    let (mut user_turn, mut learning_turn) = (vec![], vec![]);
    for (i, q) in questions[1..].iter().enumerate() {
        let said = format!("My {} is called {}. {q}", PETS[i % PETS.len()], name(i));
        plain_conv = time(&mut user_turn, || {
            Ok(plain.send_in_conversation(&plain_conv, &said)?)
        })?
        .conversation;
        learning_conv = time(&mut learning_turn, || {
            Ok(learning.send_in_conversation(&learning_conv, &said)?)
        })?
        .conversation;
    }
    queue.flush();
    for v in [
        &mut recall,
        &mut model,
        &mut send,
        &mut turn,
        &mut user_turn,
        &mut learning_turn,
    ] {
        v.sort_by(f64::total_cmp);
    }
    engine.flush_access();
    Ok(Report {
        memories,
        messages,
        declarative,
        recall_p50_ms: pct(&recall, 0.5),
        model_call_p50_ms: pct(&model, 0.5),
        send_p50_ms: pct(&send, 0.5),
        send_p99_ms: pct(&send, 0.99),
        conversation_turn_p50_ms: pct(&turn, 0.5),
        conversation_turn_p99_ms: pct(&turn, 0.99),
        user_turn_p50_ms: pct(&user_turn, 0.5),
        learning_turn_p50_ms: pct(&learning_turn, 0.5),
        learning_turn_p99_ms: pct(&learning_turn, 0.99),
        learned: learned.load(Ordering::Relaxed) as u64,
        recalled_mean: recalled as f64 / messages as f64,
        block_bytes_mean: injected as f64 / messages as f64,
    })
}
