//! The memory and key-value commands, run on a [`Memories`] (a local store or a server) and
//! printed by one output layer: the same command prints the same text and the same `--json`
//! in both modes.

use std::{io::Write, process::ExitCode};

use anyhow::{Result, bail};
use muisti_client::{
    Filters, ForgetParams, GraphEntityParams, GraphMerge, GraphRelationParams, KvValue, ListParams,
    Memory, NewMemory, RecallHit, RecallQuery, SimilarParams, StatsParams,
};
use serde_json::Value;

use crate::{
    Command, EXIT_NOT_FOUND, GraphCommand, KvCommand, backend::Memories, parse_meta, print_json,
    read_value,
};

/// A memory as one line of text: id, `[key]` when it has its own, the content.
pub(crate) fn memory_line(m: &Memory) -> String {
    let key = if m.key == m.id {
        String::new()
    } else {
        format!(" [{}]", m.key)
    };
    format!("{}{} {}", m.id, key, value_line(&m.content))
}

/// A value as the CLI shows values: strings raw, anything else as JSON.
pub(crate) fn value_line(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Recall hits: JSON, or a score and a line per memory (with `explain`, the signals).
/// A page of memories: JSON, or a line each and where the next page starts.
fn print_page(page: muisti_client::MemoryPage, json: bool) -> Result<()> {
    if json {
        return print_json(&page);
    }
    for item in &page.items {
        outln!("{}", memory_line(item))?;
    }
    if let Some(next) = page.next_cursor {
        eprintln!("more: --after {next}");
    }
    Ok(())
}

pub(crate) fn print_hits(hits: &[RecallHit], json: bool) -> Result<()> {
    if json {
        return print_json(&hits);
    }
    for h in hits {
        outln!("{:.3} {}", h.score, memory_line(&h.memory))?;
        if let Some(s) = &h.signals {
            outln!("      {s}")?;
        }
    }
    Ok(())
}

/// "Not found" on standard error, one line, and its exit code.
fn not_found(what: &str) -> ExitCode {
    eprintln!("muisti: not found: {what}");
    ExitCode::from(EXIT_NOT_FOUND)
}

/// Runs a memory or key-value command; `None` for the other commands.
pub(crate) fn run(m: &dyn Memories, command: Command, json: bool) -> Result<ExitCode> {
    match command {
        Command::Kv { command } => kv(m, command, json),
        Command::Graph { command } => graph(m, command, json),
        Command::Remember(a) => {
            let stored = m.remember(NewMemory {
                content: Value::String(a.content),
                namespace: Some(a.ns.namespace),
                key: a.key,
                context: a.context,
                category: a.category,
                scope: Some(a.scope),
                kind: a.kind,
                user_id: a.owner.user_id,
                agent_id: a.owner.agent_id,
                session_id: a.owner.session_id,
                tags: a.tags,
                metadata: parse_meta(a.metadata)?,
                importance: a.importance,
                source: Some(a.source),
                confidence: a.confidence,
                ttl_seconds: a.ttl,
                supersedes: a.supersedes,
                ..NewMemory::default()
            })?;
            if json {
                print_json(&stored)?;
            } else {
                outln!("{}", stored.id)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Get {
            target,
            user_id,
            ns,
        } => match m.get(&target, &ns.namespace, user_id.as_deref())? {
            Some(found) if json => print_json(&found).map(|()| ExitCode::SUCCESS),
            Some(found) => {
                outln!("{}", memory_line(&found))?;
                Ok(ExitCode::SUCCESS)
            }
            None => Ok(not_found(&target)),
        },
        Command::List(a) => {
            let page = m.list(ListParams {
                namespace: Some(a.ns.namespace),
                user_id: a.filter.owner.user_id,
                agent_id: a.filter.owner.agent_id,
                session_id: a.filter.owner.session_id,
                category: a.filter.category,
                scope: a.filter.scope,
                tag: a.filter.tags,
                state: a.state,
                created_after: a.created_after,
                created_before: a.created_before,
                order: a.order,
                cursor: a.after,
                limit: Some(a.limit),
            })?;
            print_page(page, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Update(a) => {
            let updated = m.update(&a.id, a.patch()?)?;
            if json {
                print_json(&updated)?;
            } else {
                outln!("updated {} (version {})", updated.id, updated.version)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget {
            target: None,
            owner,
            ns,
        } => {
            let Some(user_id) = owner.user_id else {
                bail!("give a memory id or key, or --user");
            };
            let deleted = m.forget_owner(ForgetParams {
                namespace: Some(ns.namespace),
                user_id,
                agent_id: owner.agent_id,
                session_id: owner.session_id,
            })?;
            if json {
                print_json(&serde_json::json!({ "deleted": deleted }))?;
            } else {
                outln!("forgot {deleted} memories")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Forget {
            target: Some(target),
            owner,
            ns,
        } => {
            if !m.forget(&target, &ns.namespace, owner.user_id.as_deref())? {
                return Ok(not_found(&target));
            }
            if json {
                print_json(&serde_json::json!({"deleted": true}))?;
            } else {
                outln!("forgot {target}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Search(a) => {
            let filters = Filters {
                agent_id: a.filter.owner.agent_id,
                category: a.filter.category,
                scope: a.filter.scope,
                tags: a.filter.tags,
                ..Filters::default()
            };
            let result = m.recall(RecallQuery {
                query: a.query,
                limit: Some(a.limit),
                namespace: Some(a.ns.namespace),
                user_id: a.filter.owner.user_id,
                session_id: a.filter.owner.session_id,
                filters: Some(filters),
                min_score: a.min_score,
                mode: Some(a.mode),
                explain: a.explain,
                include_archived: a.include_archived,
                cluster: a.cluster,
                as_of: a.as_of,
                include_superseded: a.include_superseded,
                exclude_key_value: a.exclude_key_value,
            })?;
            print_hits(&result.hits, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Similar {
            id,
            limit,
            namespace,
            user_id,
            all_users,
        } => {
            let params = SimilarParams {
                limit: Some(limit),
                namespace,
                user_id,
                all_users: all_users.then_some(true),
            };
            print_hits(&m.similar(&id, params)?.hits, json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { namespace, user_id } => {
            let only = namespace
                .as_deref()
                .map(muisti::Namespace::new)
                .transpose()?;
            let mut s = m.stats(StatsParams { namespace, user_id })?;
            if let Some(ns) = only {
                s.namespaces.retain(|n| n.namespace == ns.as_str());
                s.total = s.namespaces.iter().map(|n| n.count).sum();
            }
            if json {
                print_json(&s)?;
            } else {
                outln!("backend: {}", s.backend)?;
                outln!("tenant: {}", s.tenant)?;
                for n in &s.namespaces {
                    outln!("  {}: {}", n.namespace, n.count)?;
                }
                outln!("total: {}", s.total)?;
                if s.state.records > 0 {
                    outln!(
                        "application state (not memories): {} records in {} namespaces",
                        s.state.records,
                        s.state.namespaces
                    )?;
                }
                if let Some(m) = &s.summary {
                    let whose = m
                        .user_id
                        .as_ref()
                        .map_or_else(String::new, |u| format!(" of user {u}"));
                    outln!("memories{whose} in {}: {}", m.namespace, m.total)?;
                    outln!("  average importance: {:.2}", m.avg_importance)?;
                    outln!("  average access count: {:.1}", m.avg_access_count)?;
                    outln!("  highest access count: {}", m.max_access_count)?;
                    outln!("  with an expiry: {}", m.with_expiry)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Maintain {
            user_id,
            namespace,
            jobs,
            max_memories,
            min_importance,
            promote_after,
            dry_run,
            lease_secs,
            archive_after_days,
            archive_max_access,
            exact_only,
        } => {
            let done = m.maintenance(muisti_client::api::MaintenanceRequest {
                user_id,
                namespace,
                jobs,
                max_memories,
                min_importance,
                promote_after,
                dry_run,
                lease_secs,
                background: false,
                archive_after_days,
                archive_max_access,
                near_duplicates: exact_only.then_some(false),
            })?;
            if json {
                print_json(&done)?;
            } else {
                outln!(
                    "expired {}, episodic {}, consolidated {}, promoted {}, pruned {}, archived {}, clustered {} ({} users{}){}",
                    done.expired,
                    done.episodic,
                    done.consolidated,
                    done.promoted,
                    done.pruned,
                    done.archived,
                    done.clustered,
                    done.users,
                    if done.busy > 0 {
                        format!(", {} busy elsewhere", done.busy)
                    } else {
                        String::new()
                    },
                    if done.dry_run {
                        "; dry run: nothing changed"
                    } else {
                        ""
                    }
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Extract {
            user_id,
            messages,
            file,
            no_infer,
            agent_id,
            session_id,
            namespace,
        } => {
            let req = muisti_client::ExtractRequest {
                messages: conversation(&messages, file.as_deref())?,
                user_id,
                agent_id,
                session_id,
                namespace,
                infer: Some(!no_infer),
                background: None,
            };
            let done = m.extract(req)?;
            if json {
                print_json(&done)?;
            } else {
                for r in &done.results {
                    let was = r
                        .previous_memory
                        .as_ref()
                        .map(|p| format!(" (was: {p})"))
                        .unwrap_or_default();
                    outln!("{:<21} {} {}: {}{was}", r.event, r.id, r.kind, r.memory)?;
                }
                if done.results.is_empty() {
                    outln!("no facts found")?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Restore { id } => {
            let restored = m.restore(&id)?;
            if json {
                print_json(&restored)?;
            } else {
                outln!("{}", memory_line(&restored))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Clusters {
            user_id,
            namespace,
            cluster,
            limit,
            after,
        } => {
            let params = muisti_client::api::ClusterParams {
                user_id,
                namespace,
                limit: Some(limit),
                cursor: after,
            };
            if let Some(c) = cluster {
                print_page(m.cluster_memories(c, params)?, json)?;
                return Ok(ExitCode::SUCCESS);
            }
            let found = m.clusters(params)?;
            if json {
                print_json(&found)?;
            } else {
                for c in &found.clusters {
                    outln!("{}  {} memories  {}", c.id, c.size, c.label)?;
                }
                outln!(
                    "fitted on {} memories at {} (silhouette {:.2}{})",
                    found.fitted_on,
                    found.computed_at,
                    found.silhouette,
                    if found.topical {
                        ""
                    } else {
                        ": no topics, the memories are too short or too unlike to group"
                    }
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Conversations { user_id } => {
            let list = m.conversations(user_id.as_deref())?;
            if json {
                print_json(&list)?;
            } else {
                for c in &list.conversations {
                    outln!(
                        "{}  {} messages  {}{}",
                        c.id,
                        c.messages,
                        c.updated_at,
                        c.user_id
                            .as_deref()
                            .map(|u| format!("  user {u}"))
                            .unwrap_or_default()
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Conversation { id, delete: true } => {
            let n = m.delete_conversation(&id)?;
            if json {
                print_json(&serde_json::json!({ "deleted": n }))?;
            } else {
                outln!("deleted {n}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Conversation { id, delete: false } => {
            let c = m.conversation(&id)?;
            if json {
                print_json(&c)?;
            } else {
                for msg in &c.items {
                    outln!("{}: {}", msg.role, msg.content)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Proposals { user_id } => {
            let list = m.proposals(&user_id)?;
            if json {
                print_json(&list)?;
            } else {
                for p in &list.proposals {
                    outln!(
                        "{}  {} ({}, confidence {}){}",
                        p.id,
                        p.content,
                        p.kind,
                        p.confidence.map_or("-".to_owned(), |c| c.to_string()),
                        p.supersedes
                            .as_ref()
                            .map(|s| format!("  supersedes {}: {}", s.id, s.content))
                            .unwrap_or_default()
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Confirm { id, user_id } => {
            let stored = m.confirm(&id, &user_id)?;
            if json {
                print_json(&stored)?;
            } else {
                outln!("{}", stored.id)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reject { id, user_id } => {
            let p = m.reject(&id, &user_id)?;
            if json {
                print_json(&p)?;
            } else {
                outln!("rejected {}", p.id)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::History { id, user_id } => {
            let h = m.history(&id, user_id.as_deref())?;
            if json {
                print_json(&h)?;
            } else {
                for e in &h.history {
                    outln!(
                        "{}  {:<9} {:<6} {} -> {}",
                        e.at,
                        e.event,
                        e.actor,
                        e.old.as_deref().unwrap_or("-"),
                        e.new.as_deref().unwrap_or("-")
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Accesses { id, user_id } => {
            let a = m.accesses(&id, user_id.as_deref())?;
            if json {
                print_json(&a)?;
            } else {
                for d in &a.days {
                    outln!("{}  {}", d.day, d.count)?;
                }
                for e in &a.accesses {
                    let score = e.score.map(|s| format!("{s:.3}")).unwrap_or_default();
                    outln!(
                        "{}  {:<6} {:<5} {}",
                        e.at,
                        e.kind,
                        score,
                        e.query.as_deref().unwrap_or("")
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::EndConversation { id } => {
            let n = m.end_conversation(&id)?;
            if json {
                print_json(&serde_json::json!({ "deleted": n }))?;
            } else {
                outln!("deleted {n}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Purge => {
            let n = m.purge()?;
            if json {
                print_json(&serde_json::json!({ "purged": n }))?;
            } else {
                outln!("purged {n}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Reindex { .. }
        | Command::Export(_)
        | Command::Import(_)
        | Command::Snapshot(_)
        | Command::Serve(_)
        | Command::Mcp
        | Command::Keys { .. }
        | Command::Chat(_)
        | Command::Manage(_)
        | Command::Openapi
        | Command::Bench { .. } => bail!("not a memory command"),
    }
}

fn graph(m: &dyn Memories, command: GraphCommand, json: bool) -> Result<ExitCode> {
    let relations = match command {
        GraphCommand::Entities {
            user_id,
            kind,
            name,
        } => {
            let found = m.graph_entities(GraphEntityParams {
                user_id,
                kind,
                name,
                limit: None,
            })?;
            if json {
                print_json(&found)?;
            } else {
                for e in &found.entities {
                    outln!("{}  {} ({}), {} mentions", e.id, e.name, e.kind, e.mentions)?;
                }
            }
            return Ok(ExitCode::SUCCESS);
        }
        GraphCommand::Merge {
            keep,
            other,
            user_id,
        } => {
            let e = m.graph_merge(GraphMerge {
                user_id,
                keep,
                other,
            })?;
            if json {
                print_json(&e)?;
            } else {
                outln!(
                    "{}  {} ({}), {} mentions, also called {}",
                    e.id,
                    e.name,
                    e.kind,
                    e.mentions,
                    e.aliases.join(", ")
                )?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        GraphCommand::Relations {
            entity,
            hops,
            user_id,
            as_of,
        } => m.graph_relations(GraphRelationParams {
            user_id,
            entity: Some(entity),
            hops: Some(hops),
            as_of,
            ..GraphRelationParams::default()
        })?,
        GraphCommand::Query {
            subject,
            predicate,
            object,
            as_of,
            user_id,
        } => m.graph_relations(GraphRelationParams {
            user_id,
            subject,
            predicate,
            object,
            as_of,
            ..GraphRelationParams::default()
        })?,
    };
    if json {
        print_json(&relations)?;
    } else {
        for r in &relations.relations {
            let until = r
                .invalid_at
                .as_deref()
                .map(|t| format!(" until {t}"))
                .unwrap_or_default();
            let since = r.valid_at.as_deref().unwrap_or("-");
            outln!(
                "{} {} {}  (since {since}{until})",
                r.subject,
                r.predicate,
                r.object
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn kv(m: &dyn Memories, command: KvCommand, json: bool) -> Result<ExitCode> {
    match command {
        KvCommand::Set {
            key,
            value,
            value_json,
            ttl,
            ns,
        } => {
            let value = read_value(value, value_json)?;
            let entry = m.kv_set(
                &ns.namespace,
                &key,
                KvValue {
                    value,
                    ttl_seconds: ttl,
                },
            )?;
            if json {
                print_json(&entry)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        KvCommand::Get { key, ns } => match m.kv_get(&ns.namespace, &key)? {
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
                Ok(not_found(&format!("key {key:?}")))
            }
        },
        KvCommand::Forget { key, ns } => {
            let existed = m.kv_forget(&ns.namespace, &key)?;
            if json {
                print_json(&serde_json::json!({ "deleted": existed }))?;
            }
            Ok(if existed {
                ExitCode::SUCCESS
            } else {
                not_found(&format!("key {key:?}"))
            })
        }
        KvCommand::Has { key, ns } => {
            let has = m.kv_get(&ns.namespace, &key)?.is_some();
            outln!("{has}")?;
            Ok(if has {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_NOT_FOUND)
            })
        }
        KvCommand::All { ns } => {
            let all = m.kv_all(&ns.namespace)?;
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
            let n = m.kv_flush(&ns.namespace)?;
            if json {
                print_json(&serde_json::json!({ "deleted": n }))?;
            } else {
                outln!("flushed {n}")?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The messages of `muisti extract`: each `ROLE:TEXT`, or a JSON file (or stdin) of
/// messages.
fn conversation(
    given: &[String],
    file: Option<&str>,
) -> Result<Vec<muisti_client::ExtractMessage>> {
    if let Some(path) = file {
        let text = if path == "-" {
            std::io::read_to_string(std::io::stdin())?
        } else {
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"))?
        };
        return serde_json::from_str(&text).map_err(|e| {
            muisti::Error::invalid(
                "file",
                format!("not a JSON array of {{role, content, name?, created_at?}}: {e}"),
            )
            .into()
        });
    }
    given
        .iter()
        .map(|m| match m.split_once(':') {
            Some((role, text)) => Ok(muisti_client::ExtractMessage {
                role: role.trim().to_owned(),
                content: text.trim().to_owned(),
                name: None,
                created_at: None,
            }),
            None => Err(muisti::Error::invalid(
                "message",
                format!("{m:?} is not ROLE:TEXT (user:I moved to Porto)"),
            )
            .into()),
        })
        .collect()
}
