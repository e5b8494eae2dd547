//! `engram chat`: talk to a model with memory, one message or an interactive session.

use std::{
    io::{BufRead, IsTerminal, Write},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use clap::Args;
use engram::{Engine, OnModelMismatch, Tenant};
use engram_agent::{Agent, Conversation, Guard, ProviderConfig, ProviderKind, Turn};

use crate::Cli;

/// `engram chat` options.
#[derive(Args, Debug)]
pub(crate) struct ChatArgs {
    /// Wire protocol: openai (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio) or
    /// anthropic.
    #[arg(long, env = "ENGRAM_LLM_PROVIDER", default_value = "openai")]
    provider: String,

    /// API base URL, for example http://127.0.0.1:11434/v1. Default: the provider's public
    /// API.
    #[arg(long, env = "ENGRAM_LLM_URL", value_name = "URL")]
    base_url: Option<String>,

    /// Model name.
    #[arg(long, env = "ENGRAM_LLM_MODEL", value_name = "NAME")]
    model: String,

    /// Continue this conversation (its id is printed when a chat starts).
    #[arg(long, value_name = "ID")]
    conversation: Option<String>,

    /// Send one message, print the reply and exit.
    #[arg(long, short = 'm', value_name = "TEXT")]
    message: Option<String>,

    /// Memories recalled into each prompt (0 turns recall off).
    #[arg(long, default_value_t = 3, value_name = "N")]
    long_term_memory: usize,

    /// Do not store the conversation (recall still reads memory).
    #[arg(long)]
    no_store_messages: bool,

    /// System prompt.
    #[arg(long, value_name = "TEXT")]
    system: Option<String>,

    /// Block messages (and recalled memory) containing this phrase; repeatable.
    #[arg(long = "block", value_name = "PHRASE")]
    blocked_phrases: Vec<String>,

    /// Block messages (and recalled memory) matching this regular expression; repeatable.
    #[arg(long = "block-pattern", value_name = "REGEX")]
    blocked_patterns: Vec<String>,

    /// Most tokens per answer.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u32>,

    /// Seconds before a model call is abandoned.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    timeout: u64,

    /// Wait for whole answers instead of streaming them.
    #[arg(long)]
    no_stream: bool,

    /// Save each message's run (model calls, tool results) so an interrupted one can be
    /// finished later with --resume.
    #[arg(long)]
    durable_runs: bool,

    /// Finish an interrupted durable run, print its reply and exit.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["message", "conversation"])]
    resume: Option<String>,
}

/// The agent `engram chat` and `engram serve` build from provider settings.
pub(crate) fn provider_config(
    provider: &str,
    base_url: Option<&str>,
    model: &str,
    timeout: Duration,
) -> Result<ProviderConfig> {
    let kind: ProviderKind = provider.parse()?;
    let mut config = ProviderConfig::new(kind, model);
    if let Some(url) = base_url {
        config = config.base_url(url);
    }
    config.timeout = timeout;
    Ok(config)
}

fn agent(engine: Engine, args: &ChatArgs) -> Result<Agent> {
    let config = provider_config(
        &args.provider,
        args.base_url.as_deref(),
        &args.model,
        Duration::from_secs(args.timeout.max(1)),
    )?;
    let mut builder = Agent::builder()
        .memory(engine)
        .provider(config.connect()?)
        .long_term_memory(args.long_term_memory)
        .store_messages(!args.no_store_messages)
        .durable_runs(args.durable_runs || args.resume.is_some());
    if let Some(s) = &args.system {
        builder = builder.system(s);
    }
    if let Some(n) = args.max_tokens {
        builder = builder.max_tokens(n);
    }
    if !args.blocked_phrases.is_empty() || !args.blocked_patterns.is_empty() {
        let mut guard = Guard::new("blocked");
        for p in &args.blocked_phrases {
            guard = guard.phrase(p);
        }
        for p in &args.blocked_patterns {
            guard = guard.pattern(p)?;
        }
        builder = builder.guard(guard);
    }
    Ok(builder.build()?)
}

/// Prints a piece of a streamed answer at once. A closed output is noticed by the next
/// line written after the answer.
fn print_piece(piece: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(piece.as_bytes()).and_then(|()| out.flush());
}

/// Sends one message, printing the answer as it arrives (or whole with --no-stream).
fn say(agent: &Agent, args: &ChatArgs, conv: &Conversation, message: &str) -> Result<Turn> {
    let turn = if args.no_stream {
        let turn = agent.send_in_conversation(conv, message)?;
        write!(std::io::stdout().lock(), "{}", turn.reply.text)?;
        turn
    } else {
        agent.stream_in_conversation(conv, message, print_piece)?
    };
    outln!()?;
    Ok(turn)
}

/// After a failed message with durable runs on: how to finish it.
fn hint_resume(agent: &Agent, conv: &Conversation) {
    let Ok(runs) = agent.unfinished_runs() else {
        return;
    };
    if let Some(run) = runs
        .iter()
        .find(|r| r.conversation_id.as_deref() == Some(conv.id.as_str()))
    {
        eprintln!(
            "the run was saved: finish it with engram chat --resume {} (and the same model options)",
            run.id
        );
    }
}

pub(crate) fn chat(cli: &Cli, args: &ChatArgs) -> Result<ExitCode> {
    if cli.server.is_some() {
        bail!("engram chat talks to the model itself: run it without --server");
    }
    let tenant = Tenant::new(cli.tenant())?;
    let engine = crate::open(cli, OnModelMismatch::Error)?.with_tenant(tenant);
    let agent = agent(engine, args)?;
    if let Some(run) = &args.resume {
        let reply = if args.no_stream {
            let reply = agent.resume(run);
            if let Ok(r) = &reply {
                write!(std::io::stdout().lock(), "{}", r.text)?;
            }
            reply
        } else {
            agent.resume_stream(run, print_piece)
        };
        reply.with_context(|| format!("cannot finish run {run}"))?;
        outln!()?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut conv = match &args.conversation {
        Some(id) => agent
            .conversation_by_id(id)
            .with_context(|| format!("cannot resume conversation {id}"))?,
        None => agent.conversation()?,
    };
    if let Some(message) = &args.message {
        let turn = say(&agent, args, &conv, message).inspect_err(|_| hint_resume(&agent, &conv))?;
        if cli.json {
            crate::print_json(&serde_json::json!({
                "conversation_id": turn.conversation.id,
                "reply": turn.reply,
            }))?;
        }
        eprintln!("conversation: {}", turn.conversation.id);
        return Ok(ExitCode::SUCCESS);
    }
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    eprintln!(
        "conversation {} with {} ({} messages so far); /exit to quit",
        conv.id,
        agent.provider().model(),
        conv.messages.len()
    );
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("> ");
        }
        let Some(line) = lines.next() else { break };
        let line = line.context("reading standard input")?;
        let message = line.trim();
        match message {
            "" => continue,
            "/exit" | "/quit" => break,
            "/id" => {
                outln!("{}", conv.id)?;
                continue;
            }
            _ => {}
        }
        match say(&agent, args, &conv, message) {
            Ok(turn) => conv = turn.conversation,
            Err(e) => {
                hint_resume(&agent, &conv);
                eprintln!("engram: error: {}", crate::error_line(&e));
            }
        }
    }
    eprintln!("conversation: {}", conv.id);
    Ok(ExitCode::SUCCESS)
}
