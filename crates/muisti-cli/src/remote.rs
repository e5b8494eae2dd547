//! The commands run against an `muisti serve` server (`--server URL`) through the typed
//! client instead of a local store.

use std::{io::Write, process::ExitCode};

use anyhow::{Result, bail};
use muisti_client::{Client, ListParams, Memory, NewMemory, RecallQuery};
use serde_json::Value;

use crate::{Cli, Command, KvCommand, parse_meta, print_json, read_value, value_line};

fn line(m: &Memory) -> String {
    let key = if m.key == m.id {
        String::new()
    } else {
        format!(" [{}]", m.key)
    };
    format!("{}{} {}", m.id, key, value_line(&m.content))
}

/// Recall hits as both modes print them: JSON, or a score and a line per memory.
pub(crate) fn print_hits(hits: &[muisti_client::RecallHit], json: bool) -> Result<()> {
    if json {
        print_json(&hits)
    } else {
        for h in hits {
            outln!("{:.3} {}", h.score, line(&h.memory))?;
        }
        Ok(())
    }
}

fn is_ulid(s: &str) -> bool {
    muisti::MemoryId::parse(s).is_ok()
}

pub(crate) fn run(cli: Cli) -> Result<ExitCode> {
    let url = cli.server.clone().unwrap_or_default();
    let client = Client::new(&url)?.with_key(cli.api_key.clone());
    let json = cli.json;
    match cli.command {
        Command::Kv { command } => kv(&client, command, json),
        Command::Remember(a) => {
            let metadata = parse_meta(a.metadata)?;
            let m = client.create(&NewMemory {
                content: Value::String(a.content),
                namespace: Some(a.ns.namespace),
                key: a.key,
                context: a.context,
                category: Some(a.category),
                scope: Some(a.scope),
                user_id: a.owner.user_id,
                agent_id: a.owner.agent_id,
                session_id: a.owner.session_id,
                tags: a.tags,
                metadata,
                importance: a.importance,
                source: Some(a.source),
                confidence: a.confidence,
                ttl_seconds: a.ttl,
                ..NewMemory::default()
            })?;
            if json {
                print_json(&m)?;
            } else {
                outln!("{}", m.id)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Get { target, ns } => {
            let found = if is_ulid(&target) {
                client.get(&target)?
            } else {
                None
            };
            match found {
                Some(m) if json => print_json(&m).map(|()| ExitCode::SUCCESS),
                Some(m) => {
                    outln!("{}", line(&m))?;
                    Ok(ExitCode::SUCCESS)
                }
                None => match client.kv_get(&ns.namespace, &target)? {
                    Some(e) if json => print_json(&e).map(|()| ExitCode::SUCCESS),
                    Some(e) => {
                        outln!("[{}] {}", e.key, value_line(&e.value))?;
                        Ok(ExitCode::SUCCESS)
                    }
                    None => {
                        eprintln!("muisti: not found: {target}");
                        Ok(ExitCode::from(1))
                    }
                },
            }
        }
        Command::List(a) => {
            let page = client.list(&ListParams {
                namespace: Some(a.ns.namespace),
                user_id: a.filter.owner.user_id,
                agent_id: a.filter.owner.agent_id,
                session_id: a.filter.owner.session_id,
                category: a.filter.category,
                scope: a.filter.scope,
                tag: a.filter.tags,
                cursor: a.after,
                limit: Some(a.limit),
            })?;
            if json {
                print_json(&page)?;
            } else {
                for m in &page.items {
                    outln!("{}", line(m))?;
                }
                if let Some(next) = page.next_cursor {
                    eprintln!("more: --after {next}");
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget { target, ns } => {
            let deleted = (is_ulid(&target) && client.delete(&target)?)
                || client.kv_forget(&ns.namespace, &target)?;
            if !deleted {
                eprintln!("muisti: not found: {target}");
                return Ok(ExitCode::from(1));
            }
            if json {
                print_json(&serde_json::json!({"deleted": true}))?;
            } else {
                outln!("forgot {target}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Search(a) => {
            let filters = muisti_client::Filters {
                agent_id: a.filter.owner.agent_id,
                category: a.filter.category,
                scope: a.filter.scope,
                tags: a.filter.tags,
                ..muisti_client::Filters::default()
            };
            let result = client.recall(&RecallQuery {
                query: a.query,
                limit: Some(a.limit),
                namespace: Some(a.ns.namespace),
                user_id: a.filter.owner.user_id,
                session_id: a.filter.owner.session_id,
                filters: Some(filters),
                min_score: a.min_score,
                mode: Some(a.mode),
                explain: a.explain,
            })?;
            if json {
                print_json(&result.hits)?;
            } else {
                for h in &result.hits {
                    outln!("{:.3} {}", h.score, line(&h.memory))?;
                    if let Some(s) = &h.signals {
                        outln!("      {s}")?;
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Update(a) => {
            let m = client.update(&a.id, &a.patch()?)?;
            crate::print_updated(&m, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { namespace } => {
            let mut s = client.stats()?;
            if let Some(ns) = namespace {
                let ns = muisti::Namespace::new(ns)?;
                s.namespaces.retain(|n| n.namespace == ns.as_str());
                s.total = s.namespaces.iter().map(|n| n.count).sum();
            }
            if json {
                print_json(&s)?;
            } else {
                outln!("server: {} ({})", client.base_url(), s.backend)?;
                outln!("tenant: {}", s.tenant)?;
                for n in &s.namespaces {
                    outln!("  {}: {}", n.namespace, n.count)?;
                }
                outln!("total: {}", s.total)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reindex { force } => {
            let mut job = client.reindex(force)?;
            while job.state == "running" {
                std::thread::sleep(std::time::Duration::from_millis(200));
                job = client.job(&job.id)?;
            }
            if job.state != "done" {
                bail!(
                    "reindex failed: {}",
                    job.error.as_deref().unwrap_or("no reason given")
                );
            }
            outln!("re-embedded up to {} memories", job.total)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Similar { id, limit } => {
            if !is_ulid(&id) {
                bail!(muisti::Error::invalid(
                    "id",
                    format!("{id:?} is not a memory id")
                ));
            }
            let result = client.similar(&id, limit)?;
            print_hits(&result.hits, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Purge
        | Command::Mcp
        | Command::Bench { .. }
        | Command::Serve(_)
        | Command::Keys { .. }
        | Command::Openapi
        | Command::Chat(_) => bail!("this command works on a local store only; drop --server"),
    }
}

fn kv(client: &Client, command: KvCommand, json: bool) -> Result<ExitCode> {
    match command {
        KvCommand::Set {
            key,
            value,
            value_json,
            ttl,
            ns,
        } => {
            let value = read_value(value, value_json)?;
            let m = client.kv_set(&ns.namespace, &key, value, ttl)?;
            if json {
                print_json(&m)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        KvCommand::Get { key, ns } => match client.kv_get(&ns.namespace, &key)? {
            Some(e) => {
                if json {
                    print_json(&e.value)?;
                } else {
                    outln!("{}", value_line(&e.value))?;
                }
                Ok(ExitCode::SUCCESS)
            }
            None => {
                if json {
                    print_json(&Value::Null)?;
                }
                eprintln!("muisti: not found: key {key:?}");
                Ok(ExitCode::from(crate::EXIT_NOT_FOUND))
            }
        },
        KvCommand::Forget { key, ns } => {
            let existed = client.kv_forget(&ns.namespace, &key)?;
            if json {
                print_json(&serde_json::json!({ "deleted": existed }))?;
            }
            if existed {
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("muisti: not found: key {key:?}");
                Ok(ExitCode::from(crate::EXIT_NOT_FOUND))
            }
        }
        KvCommand::Has { key, ns } => {
            let has = client.kv_get(&ns.namespace, &key)?.is_some();
            outln!("{has}")?;
            Ok(if has {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        KvCommand::All { ns } => {
            let all = client.kv_all(&ns.namespace)?;
            if json {
                print_json(&all.entries)?;
            } else {
                for (k, v) in &all.entries {
                    outln!("{k}\t{}", value_line(v))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        KvCommand::Flush { ns } => {
            let n = client.kv_flush(&ns.namespace)?;
            outln!("flushed {n}")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
