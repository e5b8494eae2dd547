//! `muisti chat`: talk to a model with memory, one message or an interactive session.

use std::{
    io::{BufRead, IsTerminal, Write},
    process::ExitCode,
    time::Duration,
};

use anyhow::{Context, Result, bail};
use clap::Args;
use muisti::{Engine, OnModelMismatch, Tenant};
use muisti_agent::{Agent, Conversation, Guard, ProviderConfig, ProviderKind};
use muisti_client::api;

use crate::Cli;

/// `muisti chat` options.
#[derive(Args, Debug)]
pub(crate) struct ChatArgs {
    #[command(flatten)]
    llm: ModelArgs,

    /// Continue this conversation (its id is printed when a chat starts).
    #[arg(long, value_name = "ID")]
    conversation: Option<String>,

    /// Send one message, print the reply and exit.
    #[arg(long, short = 'm', value_name = "TEXT")]
    message: Option<String>,

    /// Memories recalled into each prompt (0 turns recall off).
    #[arg(long, default_value_t = 3, value_name = "N")]
    long_term_memory: usize,

    /// Do not store the conversation (recall still reads memory; nothing is learned).
    #[arg(long)]
    no_store_messages: bool,

    /// Do not learn from what you say (by default each exchange is read for facts, in the
    /// background, into --user's long-term memory; with --server the server decides:
    /// muisti serve --chat-learn).
    #[arg(long)]
    no_learn: bool,

    /// Whose memory: recall, the graph's facts and the stored conversation are this user's.
    #[arg(long = "user", value_name = "USER")]
    user_id: Option<String>,

    /// Facts of the knowledge graph about what each message names, put into the prompt,
    /// at most N (0: none).
    #[arg(long, default_value_t = 0, value_name = "N")]
    graph_facts: usize,

    /// Recall as of this time (RFC 3339) instead of now: "now" and relative periods in a
    /// message mean then, and only the memories true then are injected.
    #[arg(long, value_name = "TIME")]
    as_of: Option<String>,

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

/// The model flags `muisti chat` and `muisti manage` share.
#[derive(Args, Debug)]
pub(crate) struct ModelArgs {
    /// Wire protocol: openai (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio) or
    /// anthropic.
    #[arg(long, env = "MUISTI_LLM_PROVIDER", default_value = "openai")]
    provider: String,

    /// API base URL, for example http://127.0.0.1:11434/v1. Default: the provider's public
    /// API.
    #[arg(long, env = "MUISTI_LLM_URL", value_name = "URL")]
    base_url: Option<String>,

    /// Model name (required unless --server is given).
    #[arg(long, env = "MUISTI_LLM_MODEL", value_name = "NAME")]
    model: Option<String>,

    /// Seconds before a model call is abandoned.
    #[arg(long, default_value_t = 120, value_name = "SECS")]
    timeout: u64,
}

impl ModelArgs {
    /// The model these flags name, connected.
    fn connect(&self) -> Result<std::sync::Arc<dyn muisti_agent::Provider>> {
        let Some(model) = &self.model else {
            bail!("--model NAME is required (or MUISTI_LLM_MODEL), unless --server is given");
        };
        let mut config = ProviderConfig::new(self.provider.parse::<ProviderKind>()?, model);
        if let Some(url) = &self.base_url {
            config = config.base_url(url);
        }
        config.timeout = Duration::from_secs(self.timeout.max(1));
        Ok(config.connect()?)
    }
}

fn agent(engine: Engine, args: &ChatArgs) -> Result<Agent> {
    let mut builder = Agent::builder()
        .memory(engine)
        .provider(args.llm.connect()?)
        .long_term_memory(args.long_term_memory)
        .graph_context(args.graph_facts)
        .as_of(
            args.as_of
                .as_deref()
                .map(muisti::Timestamp::parse)
                .transpose()
                .map_err(|_| anyhow::anyhow!("--as-of: give an RFC 3339 time"))?,
        )
        .recall_filter(muisti::Filter {
            user_id: args.user_id.clone(),
            ..muisti::Filter::default()
        })
        .store_messages(!args.no_store_messages)
        .durable_runs(args.durable_runs || args.resume.is_some());
    if !args.no_learn {
        // Read at the latest when the chat ends (dropping the queue reads what is gathered).
        builder = builder.learn(std::sync::Arc::new(muisti::facts::ExtractionQueue::start(
            muisti::facts::Debounce::default(),
            Box::new(|_, _| {}),
        )));
    }
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

/// One side of a chat: the agent in this process, or a server's `/v1/chat`.
trait Session {
    /// Sends a message; prints the answer (as it arrives unless `quiet` or --no-stream).
    /// Returns the reply as JSON for --json.
    fn say(&mut self, message: &str, quiet: bool) -> Result<serde_json::Value>;
    /// The conversation id, once there is one.
    fn id(&self) -> Option<String>;
    /// Called after a failed message.
    fn failed(&self) {}
}

struct Local<'a> {
    agent: Agent,
    conv: Conversation,
    args: &'a ChatArgs,
}

impl Session for Local<'_> {
    fn say(&mut self, message: &str, quiet: bool) -> Result<serde_json::Value> {
        let turn = if self.args.no_stream || quiet {
            let turn = self.agent.send_in_conversation(&self.conv, message)?;
            if !quiet {
                write!(std::io::stdout().lock(), "{}", turn.reply.text)?;
            }
            turn
        } else {
            self.agent
                .stream_in_conversation(&self.conv, message, print_piece)?
        };
        self.conv = turn.conversation;
        let id = (!self.args.no_store_messages).then(|| self.conv.id.clone());
        let reply = muisti_server::chat::reply_in(turn.reply, id);
        Ok(serde_json::to_value(&reply)?)
    }

    fn id(&self) -> Option<String> {
        Some(self.conv.id.clone())
    }

    /// With durable runs on: how to finish the failed message.
    fn failed(&self) {
        if !self.args.durable_runs {
            return;
        }
        let Ok(runs) = self.agent.unfinished_runs() else {
            return;
        };
        if let Some(run) = runs
            .iter()
            .find(|r| r.conversation_id.as_deref() == Some(self.conv.id.as_str()))
        {
            eprintln!(
                "the run was saved: finish it with muisti chat --resume {} (and the same model options)",
                run.id
            );
        }
    }
}

struct Remote {
    client: muisti_client::Client,
    template: api::ChatMessage,
    stream: bool,
}

impl Session for Remote {
    fn say(&mut self, message: &str, quiet: bool) -> Result<serde_json::Value> {
        let msg = api::ChatMessage {
            message: message.to_owned(),
            ..self.template.clone()
        };
        let reply = if self.stream && !quiet {
            self.client.chat_stream(&msg, print_piece)?
        } else {
            let reply = self.client.chat(&msg)?;
            if !quiet {
                write!(std::io::stdout().lock(), "{}", reply.reply)?;
            }
            reply
        };
        if reply.conversation_id.is_some() {
            self.template
                .conversation_id
                .clone_from(&reply.conversation_id);
        }
        Ok(serde_json::to_value(&reply)?)
    }

    fn id(&self) -> Option<String> {
        self.template.conversation_id.clone()
    }
}

/// `muisti --server URL chat`: the server's agent and model (`--base-url` and `--model` are
/// the server's: refused here rather than ignored), the server's store.
fn remote(cli: &Cli, args: &ChatArgs, url: &str) -> Result<Remote> {
    let local_only = [
        (args.resume.is_some(), "--resume"),
        (args.durable_runs, "--durable-runs"),
        (args.system.is_some(), "--system"),
        (!args.blocked_phrases.is_empty(), "--block"),
        (!args.blocked_patterns.is_empty(), "--block-pattern"),
        (args.max_tokens.is_some(), "--max-tokens"),
        (
            args.no_learn,
            "--no-learn (muisti serve --chat-learn false)",
        ),
        (args.llm.model.is_some(), "--model (or MUISTI_LLM_MODEL)"),
        (
            args.llm.base_url.is_some(),
            "--base-url (or MUISTI_LLM_URL)",
        ),
    ];
    if let Some((_, flag)) = local_only.iter().find(|(set, _)| *set) {
        bail!("{flag} is set on the server (muisti serve --llm-...); drop it with --server");
    }
    Ok(Remote {
        client: muisti_client::Client::new(url)?.with_key(cli.api_key.clone()),
        template: template(args),
        stream: !args.no_stream,
    })
}

/// The options of every message of this chat, as the wire has them (the text aside).
fn template(args: &ChatArgs) -> api::ChatMessage {
    api::ChatMessage {
        message: String::new(),
        conversation_id: args.conversation.clone(),
        long_term_memory: Some(args.long_term_memory),
        store_messages: Some(!args.no_store_messages),
        user_id: args.user_id.clone(),
        graph_facts: Some(args.graph_facts),
        as_of: args.as_of.clone(),
    }
}

pub(crate) fn chat(cli: &Cli, args: &ChatArgs) -> Result<ExitCode> {
    // The server's rules, checked here for a local chat as for a remote one.
    muisti_server::chat::check_options(&template(args))
        .map_err(|e| muisti::Error::invalid("chat", e.message))?;
    let mut session: Box<dyn Session> = match &cli.server {
        Some(url) => Box::new(remote(cli, args, url)?),
        None => {
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
            let conv = match &args.conversation {
                Some(id) => agent
                    .conversation_by_id(id)
                    .with_context(|| format!("cannot resume conversation {id}"))?,
                None => agent.conversation()?,
            };
            eprintln!(
                "conversation {} with {} ({} messages so far)",
                conv.id,
                agent.provider().model(),
                conv.messages.len()
            );
            Box::new(Local { agent, conv, args })
        }
    };
    if let Some(message) = &args.message {
        let json = session
            .say(message, cli.json)
            .inspect_err(|_| session.failed())?;
        if cli.json {
            crate::print_json(&json)?;
        } else {
            outln!()?;
        }
        if let Some(id) = session.id() {
            eprintln!("conversation: {id}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let stdin = std::io::stdin();
    let interactive = stdin.is_terminal();
    if interactive {
        eprintln!("/id prints the conversation id, /exit ends the chat");
    }
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
                outln!("{}", session.id().unwrap_or_default())?;
                continue;
            }
            _ => {}
        }
        match session.say(message, false) {
            Ok(_) => outln!()?,
            Err(e) => {
                session.failed();
                eprintln!("muisti: error: {}", crate::error_line(&e));
            }
        }
    }
    if let Some(id) = session.id() {
        eprintln!("conversation: {id}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `muisti manage` options.
#[derive(Args, Debug)]
pub(crate) struct ManageArgs {
    /// What to do, in natural language ("forget my old address").
    command: String,

    /// Whose memory.
    #[arg(long = "user", value_name = "USER")]
    user_id: String,

    /// Carry out deletes without asking (without it they are listed, not done).
    #[arg(long)]
    yes: bool,

    /// The namespace (default `default`).
    #[arg(short = 'n', long = "namespace")]
    namespace: Option<String>,

    #[command(flatten)]
    llm: ModelArgs,
}

/// `muisti manage`: the memory manager in this process, or a server's `/v1/manage`.
pub(crate) fn manage(cli: &Cli, args: &ManageArgs) -> Result<ExitCode> {
    let req = api::ManageRequest {
        command: args.command.clone(),
        user_id: args.user_id.clone(),
        namespace: args.namespace.clone(),
        yes: Some(args.yes),
    };
    // The server's rules, checked here for a local run as for a remote one.
    let command = muisti_server::chat::manage_command(&req)
        .map_err(|e| muisti::Error::invalid("manage", e.message))?;
    let reply = match &cli.server {
        Some(url) => muisti_client::Client::new(url)?
            .with_key(cli.api_key.clone())
            .manage(&req)?,
        None => {
            let provider = args.llm.connect()?;
            let tenant = Tenant::new(cli.tenant())?;
            let engine = crate::open(cli, OnModelMismatch::Error)?.with_tenant(tenant);
            let done = muisti_agent::Manager::new(provider).run(&engine, &command)?;
            muisti_server::chat::managed_out(done)
        }
    };
    if cli.json {
        crate::print_json(&reply)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", reply.answer)?;
    for a in &reply.actions {
        outln!("  did {} {}", a.tool, a.arguments)?;
    }
    if !reply.pending.is_empty() {
        for a in &reply.pending {
            outln!("  waits for --yes: {} {}", a.tool, a.arguments)?;
        }
        eprintln!("nothing was deleted: run the command again with --yes to carry out the deletes");
    }
    Ok(ExitCode::SUCCESS)
}
