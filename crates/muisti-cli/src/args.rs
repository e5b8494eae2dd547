//! The command line: every command, flag and argument (clap), and the checks that belong
//! to the arguments themselves.

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use muisti::Namespace;
use serde_json::Value;

use crate::{bench, chat, parse_meta, serve, transfer};

/// muisti: long-term memory for AI agents.
#[derive(Parser)]
#[command(name = "muisti", version, about, propagate_version = true)]
pub(crate) struct Cli {
    /// Store URL: sqlite:///path/muisti.db, file:///dir, redis://host:6379/0,
    /// postgres://user@host/db, mysql://user@host/db, mem://.
    /// Default: SQLite under the platform data directory.
    #[arg(long, global = true, env = "MUISTI_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,

    /// Tenant to act as.
    #[arg(long, global = true, env = "MUISTI_TENANT", default_value = "default")]
    pub(crate) tenant: String,

    /// Print records and results as JSON.
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// Embedder for semantic recall: builtin, none, minilm (from MUISTI_MODEL_DIR),
    /// openai:MODEL, model2vec:DIR or transformer:DIR.
    /// Default: builtin.
    #[arg(
        long = "embedder",
        global = true,
        env = "MUISTI_EMBEDDER",
        value_name = "SPEC"
    )]
    pub(crate) embedder_spec: Option<String>,

    /// A second model that re-scores recall's best 10 hits when the question's words are
    /// not found (the same specs as --embedder; typically minilm): better order for
    /// questions worded unlike the memory, one embedding of the query and the 10 hits per
    /// recall it re-scores. Default: none.
    #[arg(long, global = true, env = "MUISTI_RERANKER", value_name = "SPEC")]
    pub(crate) reranker: Option<String>,

    /// Base URL of an OpenAI-compatible embedding service (with --embedder openai:MODEL).
    #[arg(long, global = true, env = "MUISTI_EMBED_URL", value_name = "URL")]
    pub(crate) embed_url: Option<String>,

    /// Talk to an `muisti serve` server at this URL instead of opening a store.
    #[arg(long, global = true, env = "MUISTI_SERVER", value_name = "URL")]
    pub(crate) server: Option<String>,

    /// API key for --server (sent as `Authorization: Bearer`).
    #[arg(
        long,
        global = true,
        env = "MUISTI_API_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    pub(crate) api_key: Option<String>,

    /// Long-term memories one user keeps per namespace; past it a write deletes that
    /// user's least recently used ones (default: no cap).
    #[arg(long, global = true, env = "MUISTI_LONG_TERM_CAP", value_name = "N")]
    pub(crate) long_term_cap: Option<u64>,

    /// Days an episodic memory is kept (default 90; 0 keeps them until deleted).
    #[arg(
        long,
        global = true,
        env = "MUISTI_EPISODIC_RETENTION_DAYS",
        value_name = "DAYS"
    )]
    pub(crate) episodic_retention_days: Option<u32>,

    /// Read entities and facts of users' long-term memories into the graph, in the
    /// background: `off` (the default), `offline` (patterns, no model), or with `serve`
    /// `llm` (the chat model of --llm-model).
    #[arg(
        long,
        global = true,
        env = "MUISTI_GRAPH_EXTRACTOR",
        value_name = "off|offline|llm"
    )]
    pub(crate) graph_extractor: Option<String>,

    /// Memories of one conversation read into the graph together, in one extraction (one
    /// model call): 1 (the default) to 100; a batch not yet whole is read after a minute.
    #[arg(
        long,
        global = true,
        env = "MUISTI_GRAPH_INTERVAL",
        value_name = "N",
        value_parser = clap::value_parser!(u8).range(1..=100)
    )]
    pub(crate) graph_interval: Option<u8>,

    /// Where cold memories are archived: file:///dir or s3://bucket/prefix?endpoint=URL
    /// (credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY). Default: beside a
    /// SQLite or file store; none for Redis, PostgreSQL and MySQL.
    #[arg(long, global = true, env = "MUISTI_ARCHIVE_URL", value_name = "URL")]
    pub(crate) archive: Option<String>,

    /// What the access log keeps of each recall and read by id: `off` (the default),
    /// `scores` (time, kind, score), `queries` (and the query, on the asking user's own
    /// memory).
    #[arg(
        long,
        global = true,
        env = "MUISTI_ACCESS_LOG",
        value_name = "off|scores|queries"
    )]
    pub(crate) access_log: Option<String>,

    /// Days the access log keeps an access (default 30).
    #[arg(
        long,
        global = true,
        env = "MUISTI_ACCESS_LOG_RETENTION_DAYS",
        value_name = "DAYS"
    )]
    pub(crate) access_log_retention_days: Option<u32>,

    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The tenant name.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The embedder spec, `builtin` unless given.
    pub(crate) fn embedder(&self) -> &str {
        self.embedder_spec.as_deref().unwrap_or("builtin")
    }

    /// Graph extraction as the flag (or `MUISTI_GRAPH_EXTRACTOR`) asks, off by default.
    pub(crate) fn graph_extraction(&self) -> muisti::Result<muisti::graph::GraphExtraction> {
        muisti::graph::GraphExtraction::parse(self.graph_extractor.as_deref().unwrap_or("off"))
    }

    /// The extraction interval the flag (or `MUISTI_GRAPH_INTERVAL`) asks, each memory on
    /// its own by default.
    pub(crate) fn graph_interval(&self) -> muisti::Result<muisti::graph::GraphInterval> {
        muisti::graph::GraphInterval::every(usize::from(self.graph_interval.unwrap_or(1)))
    }

    /// The access log the flags ask for, off by default.
    pub(crate) fn access_log(&self) -> muisti::Result<muisti::AccessLog> {
        let defaults = muisti::AccessLog::default();
        let log = muisti::AccessLog {
            mode: match &self.access_log {
                Some(mode) => muisti::AccessLogMode::parse(mode)?,
                None => defaults.mode,
            },
            retention_days: self
                .access_log_retention_days
                .unwrap_or(defaults.retention_days),
        };
        log.validate()?;
        Ok(log)
    }

    /// The scopes' lifetimes the flags ask for, over the engine's defaults.
    pub(crate) fn lifetimes(&self) -> muisti::Lifetimes {
        let defaults = muisti::Lifetimes::default();
        muisti::Lifetimes {
            long_term_cap: self.long_term_cap.or(defaults.long_term_cap),
            episodic_retention_days: match self.episodic_retention_days {
                Some(0) => None,
                Some(days) => Some(days),
                None => defaults.episodic_retention_days,
            },
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Key-value entries: get, set, forget, has, all, flush.
    Kv {
        #[command(subcommand)]
        command: KvCommand,
    },
    /// The knowledge graph: entities, an entity's relations, triple patterns (now or as of
    /// a time).
    Graph {
        #[command(subcommand)]
        command: GraphCommand,
    },
    /// Store a memory.
    Remember(RememberArgs),
    /// Show a memory by id, or by key within the namespace.
    Get {
        /// A memory id (ULID) or a key.
        target: String,
        /// The user the request acts for (a declarative entry is found only by its user).
        #[arg(long = "user")]
        user_id: Option<String>,
        #[command(flatten)]
        ns: NsArg,
    },
    /// List memories of a namespace.
    List(ListArgs),
    /// Change fields of a memory by id, atomically (as `PATCH /v1/memories/{id}`); with
    /// --expected-version, only if nobody changed it since that version.
    Update(UpdateArgs),
    /// Delete a memory by id, or by key within the namespace.
    ///
    /// With --user instead of a target, deletes every memory of that user in the namespace
    /// (only one agent's or session's with --agent or --session). With a target, --user is
    /// the user the request acts for (a declarative entry is deleted only by its user).
    Forget {
        /// A memory id (ULID) or a key.
        #[arg(required_unless_present = "user_id",
              conflicts_with_all = ["agent_id", "session_id"])]
        target: Option<String>,
        #[command(flatten)]
        owner: OwnerArgs,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Find the memories that best match a query (alias: recall).
    #[command(alias = "recall")]
    Search(SearchArgs),
    /// Memories closest in meaning to the one with this id.
    Similar {
        /// A memory id (ULID).
        id: String,
        /// How many results.
        #[arg(long, short = 'k', default_value_t = 5)]
        limit: usize,
        /// Where to look (default: the memory's own namespace).
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
        /// The user the request acts for (the similar memories are theirs; without it, the
        /// memory's own user's).
        #[arg(long = "user")]
        user_id: Option<String>,
        /// Look among every user's memories (never another user's declarative entries).
        #[arg(long, conflicts_with = "user_id")]
        all_users: bool,
    },
    /// Namespaces, counts and the store's health.
    Stats {
        /// Only this namespace, its memories summed up (average importance, average and
        /// highest access count, how many expire).
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
        /// Sum up this user's memories (in the namespace, default `default`).
        #[arg(short = 'u', long = "user")]
        user_id: Option<String>,
    },
    /// Delete expired entries now, in every namespace and tenant of the store.
    Purge,
    /// Run maintenance now (the seed's runMaintenance): delete expired entries (every
    /// tenant) and episodic memories past the retention, then per user fold exact
    /// duplicates into the oldest, promote what is recalled, and with --max-memories prune
    /// the least relevant beyond the cap (never declarative memories, never those of
    /// importance at or above --min-importance).
    Maintain {
        /// Only this user's memories.
        #[arg(long = "user")]
        user_id: Option<String>,
        /// Only this namespace (default: every namespace).
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
        /// Only these jobs (repeatable): expire, consolidate, promote, prune, archive,
        /// cluster (default: the first four; archive and cluster only when named).
        #[arg(long = "job", value_name = "NAME")]
        jobs: Vec<String>,
        /// Prune to this many memories per user and namespace.
        #[arg(long, value_name = "N")]
        max_memories: Option<u64>,
        /// Prune only memories of importance below this (default 0.5).
        #[arg(long, value_name = "X")]
        min_importance: Option<f32>,
        /// Promote a memory each time it was recalled this many more times (default 10).
        #[arg(long, value_name = "N")]
        promote_after: Option<u64>,
        /// Report what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// How long this run's hold on a user lasts if it dies (default 60 s).
        #[arg(long, value_name = "SECS")]
        lease_secs: Option<u64>,
        /// Archive memories not written or recalled for this many days (default 90).
        #[arg(long, value_name = "DAYS")]
        archive_after_days: Option<u32>,
        /// Archive only memories recalled at most this many times (default 2).
        #[arg(long, value_name = "N")]
        archive_max_access: Option<u64>,
        /// Consolidate exact duplicates only (not memories stating the same fact in other
        /// words).
        #[arg(long)]
        exact_only: bool,
    },
    /// Remember a conversation: the lasting facts it states about the user, each added,
    /// updating or retracting an entry, or waiting for confirmation, as the declarative
    /// rules decide (offline extractor here; with --server, the server's); with --no-infer
    /// each message stored as said. Messages from --message ROLE:TEXT (repeatable) or
    /// --file (a JSON array of {role, content, name?, created_at?}; - reads stdin).
    Extract {
        /// Whose memory.
        #[arg(long = "user")]
        user_id: String,
        /// A message as ROLE:TEXT (user, assistant, system or tool); repeatable, in order.
        #[arg(long = "message", short = 'm', value_name = "ROLE:TEXT")]
        messages: Vec<String>,
        /// A JSON file of messages (- for stdin).
        #[arg(long, value_name = "FILE", conflicts_with = "messages")]
        file: Option<String>,
        /// Store each message as said instead of extracting facts.
        #[arg(long)]
        no_infer: bool,
        /// The agent in the conversation.
        #[arg(long = "agent")]
        agent_id: Option<String>,
        /// The conversation.
        #[arg(long = "session")]
        session_id: Option<String>,
        /// The namespace (default `default`).
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
    },
    /// Bring an archived memory back from the archive (text, vector, full-text entry).
    Restore {
        /// A memory id (ULID).
        id: String,
    },
    /// A user's memories grouped by topic (after `muisti maintain --job cluster`); with
    /// --cluster, that cluster's memories.
    Clusters {
        /// The user.
        #[arg(long = "user")]
        user_id: String,
        /// The namespace (default `default`).
        #[arg(short = 'n', long = "namespace")]
        namespace: Option<String>,
        /// List this cluster's memories.
        #[arg(long, value_name = "N")]
        cluster: Option<u32>,
        /// How many memories of the cluster.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Start after this memory id (the previous page's last).
        #[arg(long)]
        after: Option<String>,
    },
    /// The conversations (of a user), oldest first.
    Conversations {
        /// Only this user's.
        #[arg(long = "user")]
        user_id: Option<String>,
    },
    /// A conversation's messages, in order (with --delete: delete it, its messages and its
    /// scratch and short-term memories).
    Conversation {
        /// The conversation's id.
        id: String,
        /// Delete it.
        #[arg(long)]
        delete: bool,
    },
    /// The proposals (agent-learned declarative entries) waiting for a user's confirmation.
    Proposals {
        /// The user.
        #[arg(long = "user")]
        user_id: String,
    },
    /// Confirm a proposal: store the entry the agent learned (it may supersede the one it
    /// restates).
    Confirm {
        /// The proposal id.
        id: String,
        /// The user the proposal concerns (only they decide it).
        #[arg(long = "user")]
        user_id: String,
    },
    /// Reject a proposal: nothing is stored.
    Reject {
        /// The proposal id.
        id: String,
        /// The user the proposal concerns (only they decide it).
        #[arg(long = "user")]
        user_id: String,
    },
    /// The history of a memory (add, update, supersede, confirm, delete), whoever made each change.
    History {
        /// The memory id.
        id: String,
        /// The user the request acts for (another user's entry is not found).
        #[arg(long = "user")]
        user_id: Option<String>,
    },
    /// A memory's accesses in the access log (each day's count, then the latest accesses,
    /// newest first); empty while the log is off (--access-log).
    Accesses {
        /// The memory id.
        id: String,
        /// The user the request acts for (another user's memory is not found).
        #[arg(long = "user")]
        user_id: Option<String>,
    },
    /// End a conversation: delete its scratch and short-term memories (session_id = ID).
    EndConversation {
        /// The conversation's id.
        id: String,
    },
    /// Re-embed memories whose vectors another model made (all of them with --force), in
    /// every tenant, with a progress bar.
    Reindex {
        /// Re-embed every memory.
        #[arg(long)]
        force: bool,
    },
    /// Write the store's records (the tenant's, or every tenant's with --all-tenants) to
    /// standard output: JSON Lines, one whole record per line (`import` reads it back into
    /// any store), or Markdown to read.
    Export(transfer::ExportArgs),
    /// Read an export (standard input, --input FILE, or another store with --from URL) into
    /// the store: every field kept, idempotent by id (importing twice changes nothing);
    /// vectors made again when the export has none or another model made them.
    Import(transfer::ImportArgs),
    /// Snapshots of the whole store (every tenant): create (SQLite: an online backup; other
    /// stores: an export), list, restore (replaces everything in the store; needs --yes).
    Snapshot(transfer::SnapshotArgs),
    /// Serve the REST API (/v1), MCP (/mcp), /metrics and /openapi.json over HTTP.
    Serve(serve::ServeArgs),
    /// Serve the MCP tools over standard input and output (for assistants that spawn it).
    Mcp,
    /// API keys: create (printed once), list, revoke.
    Keys {
        #[command(subcommand)]
        command: serve::KeysCommand,
    },
    /// Talk to a model (OpenAI-compatible or Anthropic) with memory recalled into every
    /// prompt: an interactive session, or one message with --message.
    Chat(chat::ChatArgs),
    /// Carry out a natural-language command over a user's memory with the memory manager
    /// (a model with tools: search, get, list, remember, update, forget, graph, stats):
    /// "forget my old address", "what do you know about my job?". Deletes need --yes.
    Manage(chat::ManageArgs),
    /// Print the OpenAPI 3.1 document of the REST API.
    Openapi,
    /// Measure the store.
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
}

#[derive(Args, Clone)]
pub(crate) struct NsArg {
    /// Namespace (recall reads `default`).
    #[arg(short = 'n', long = "namespace", default_value = "default")]
    pub(crate) namespace: String,
}

impl NsArg {
    pub(crate) fn get(&self) -> Result<Namespace> {
        Ok(Namespace::new(&self.namespace)?)
    }
}

#[derive(Subcommand)]
pub(crate) enum GraphCommand {
    /// A user's entities, by name.
    Entities {
        /// Whose graph.
        #[arg(long = "user")]
        user_id: Option<String>,
        /// Only this kind (person, place, organization, product, event, other, ...).
        #[arg(long = "type")]
        kind: Option<String>,
        /// Only the entity with this name or alias.
        #[arg(long)]
        name: Option<String>,
    },
    /// The relations an entity takes part in, as subject or object.
    Relations {
        /// The entity's name or alias.
        entity: String,
        /// Its neighbourhood: the relations within this many steps (1 to 3), nearest
        /// first.
        #[arg(long, default_value_t = 1)]
        hops: usize,
        /// Whose graph.
        #[arg(long = "user")]
        user_id: Option<String>,
        /// Those that held at this time (RFC 3339) [default: now].
        #[arg(long)]
        as_of: Option<String>,
    },
    /// Merges the entity OTHER into KEEP (two names of one thing): KEEP takes its names as
    /// aliases, its memories and its relations.
    Merge {
        /// The entity that stays (a name or alias).
        keep: String,
        /// The entity merged into it (a name or alias).
        other: String,
        /// Whose graph.
        #[arg(long = "user")]
        user_id: Option<String>,
    },
    /// The relations matching a triple pattern (each part optional).
    Query {
        /// The subject's name or alias.
        #[arg(long)]
        subject: Option<String>,
        /// The predicate (works_at, lives_in, ...).
        #[arg(long)]
        predicate: Option<String>,
        /// The object's name, alias or value.
        #[arg(long)]
        object: Option<String>,
        /// Those that held at this time (RFC 3339) [default: now].
        #[arg(long)]
        as_of: Option<String>,
        /// Whose graph.
        #[arg(long = "user")]
        user_id: Option<String>,
    },
}

#[derive(Subcommand)]
pub(crate) enum KvCommand {
    /// Set KEY to VALUE (a string; with --value-json, any JSON value).
    Set {
        /// The key.
        key: String,
        /// The value; `-` reads it from standard input.
        value: String,
        /// Parse VALUE as JSON.
        #[arg(long)]
        value_json: bool,
        /// Expire after this many seconds (omit: never).
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print the value at KEY; exit 1 if there is none.
    Get {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Delete KEY; exit 1 if there was none.
    Forget {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print true or false; exit 1 for false.
    Has {
        /// The key.
        key: String,
        #[command(flatten)]
        ns: NsArg,
    },
    /// Print every entry of the namespace.
    All {
        #[command(flatten)]
        ns: NsArg,
    },
    /// Delete every entry of the namespace.
    Flush {
        #[command(flatten)]
        ns: NsArg,
    },
}

#[derive(Args)]
pub(crate) struct OwnerArgs {
    /// User the memory belongs to.
    #[arg(long = "user")]
    pub(crate) user_id: Option<String>,
    /// Agent.
    #[arg(long = "agent")]
    pub(crate) agent_id: Option<String>,
    /// Session.
    #[arg(long = "session")]
    pub(crate) session_id: Option<String>,
}

#[derive(Args)]
pub(crate) struct RememberArgs {
    /// The text to remember.
    pub(crate) content: String,
    /// A key (unique in the namespace; writing it again replaces). Default: the new id.
    #[arg(long)]
    pub(crate) key: Option<String>,
    /// Text that situates the memory (for a conversation turn, the turn it answers); recall
    /// indexes it at half the weight of the content.
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// core (default), daily, conversation or a custom name.
    #[arg(long)]
    pub(crate) category: Option<String>,
    /// scratch, short_term, long_term, episodic or declarative (a user's fact, preference
    /// or rule: needs --user and --type; an agent_learned one waits for `muisti confirm`).
    #[arg(long, default_value = "long_term")]
    pub(crate) scope: String,
    /// A declarative entry's type: fact, preference or rule.
    #[arg(long = "type")]
    pub(crate) kind: Option<String>,
    /// user_stated, agent_learned, import or a custom name.
    #[arg(long, default_value = "user_stated")]
    pub(crate) source: String,
    /// 0.0 to 1.0.
    #[arg(long)]
    pub(crate) importance: Option<f32>,
    /// 0 to 100, for learned patterns.
    #[arg(long)]
    pub(crate) confidence: Option<u8>,
    /// For a declarative entry: the id of the user's entry (same type) it replaces.
    #[arg(long, value_name = "ID")]
    pub(crate) supersedes: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Metadata as KEY=VALUE (VALUE parsed as JSON when it is JSON; repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub(crate) metadata: Vec<String>,
    /// Expire after this many seconds (omit: never).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) ttl: Option<u64>,
    #[command(flatten)]
    pub(crate) owner: OwnerArgs,
    #[command(flatten)]
    pub(crate) ns: NsArg,
}

#[derive(Args)]
pub(crate) struct UpdateArgs {
    /// A memory id (ULID).
    pub(crate) id: String,
    /// New text.
    #[arg(long)]
    pub(crate) content: Option<String>,
    /// New situating text.
    #[arg(long)]
    pub(crate) context: Option<String>,
    /// core, daily, conversation or a custom name.
    #[arg(long)]
    pub(crate) category: Option<String>,
    /// scratch, short_term, long_term, episodic or declarative.
    #[arg(long)]
    pub(crate) scope: Option<String>,
    /// user_stated, agent_learned, import or a custom name.
    #[arg(long)]
    pub(crate) source: Option<String>,
    /// active, archived or superseded.
    #[arg(long)]
    pub(crate) state: Option<String>,
    /// The id of the memory that replaces this one (with --state superseded).
    #[arg(long, value_name = "ID")]
    pub(crate) superseded_by: Option<String>,
    /// 0.0 to 1.0.
    #[arg(long)]
    pub(crate) importance: Option<f32>,
    /// 0 to 100.
    #[arg(long)]
    pub(crate) confidence: Option<u8>,
    /// Replace the tags with these (repeatable).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
    /// Replace the metadata with these KEY=VALUE pairs (repeatable).
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub(crate) metadata: Vec<String>,
    /// Expire this many seconds from now.
    #[arg(long, value_name = "SECONDS")]
    pub(crate) ttl: Option<u64>,
    /// Move it to this user.
    #[arg(long)]
    pub(crate) user_id: Option<String>,
    /// Move it to this agent.
    #[arg(long)]
    pub(crate) agent_id: Option<String>,
    /// Move it to this session.
    #[arg(long)]
    pub(crate) session_id: Option<String>,
    /// Refuse (exit 2, "conflict") unless the memory is still at this version.
    #[arg(long, value_name = "VERSION")]
    pub(crate) expected_version: Option<u64>,
    /// Record the change in the memory's history as made by this name.
    #[arg(long)]
    pub(crate) actor: Option<String>,
}

impl UpdateArgs {
    /// The patch, as the REST API takes it (so both modes validate it the same way).
    pub(crate) fn patch(&self) -> Result<muisti_client::MemoryPatch> {
        Ok(muisti_client::MemoryPatch {
            content: self.content.clone().map(Value::String),
            context: self.context.clone(),
            category: self.category.clone(),
            scope: self.scope.clone(),
            tags: (!self.tags.is_empty()).then(|| self.tags.clone()),
            metadata: if self.metadata.is_empty() {
                None
            } else {
                Some(parse_meta(self.metadata.clone())?)
            },
            importance: self.importance,
            confidence: self.confidence,
            ttl_seconds: self.ttl,
            valid_from: None,
            valid_until: None,
            user_id: self.user_id.clone(),
            agent_id: self.agent_id.clone(),
            session_id: self.session_id.clone(),
            source: self.source.clone(),
            state: self.state.clone(),
            superseded_by: self.superseded_by.clone(),
            expected_version: self.expected_version,
            actor: self.actor.clone(),
        })
    }
}

#[derive(Args)]
pub(crate) struct FilterArgs {
    #[command(flatten)]
    pub(crate) owner: OwnerArgs,
    /// Only this category.
    #[arg(long)]
    pub(crate) category: Option<String>,
    /// Only this scope.
    #[arg(long)]
    pub(crate) scope: Option<String>,
    /// Only memories with this tag (repeatable: all of them).
    #[arg(long = "tag")]
    pub(crate) tags: Vec<String>,
}

#[derive(Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    /// Page size.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
    /// Start after this id (the `next_cursor` of the previous page).
    #[arg(long)]
    pub(crate) after: Option<String>,
    /// The order: created (oldest first), newest, importance (most important, then most
    /// recently accessed, then newest) or accessed (most recently accessed first).
    #[arg(long)]
    pub(crate) order: Option<String>,
    /// Only memories in this state: active, archived or superseded.
    #[arg(long)]
    pub(crate) state: Option<String>,
    /// Only memories created at or after this time (RFC 3339).
    #[arg(long)]
    pub(crate) created_after: Option<String>,
    /// Only memories created before this time (RFC 3339).
    #[arg(long)]
    pub(crate) created_before: Option<String>,
    #[command(flatten)]
    pub(crate) ns: NsArg,
}

#[derive(Args)]
pub(crate) struct SearchArgs {
    /// The query.
    pub(crate) query: String,
    /// How many results.
    #[arg(long, short = 'k', default_value_t = 5)]
    pub(crate) limit: usize,
    /// hybrid (full-text and vectors), lexical, vector, or overlap (the seed's word rule).
    #[arg(long, default_value = "hybrid")]
    pub(crate) mode: String,
    /// Leave out hits scoring below this (0 to 1).
    #[arg(long)]
    pub(crate) min_score: Option<f32>,
    /// Show the signals behind each score.
    #[arg(long)]
    pub(crate) explain: bool,
    /// Archived memories too (their text read back from the archive; slower).
    #[arg(long)]
    pub(crate) include_archived: bool,
    /// Only the memories of this cluster of --user (`muisti clusters`).
    #[arg(long, value_name = "N")]
    pub(crate) cluster: Option<u32>,
    /// Recall as of this time (RFC 3339) instead of now: "now" and relative periods in the
    /// query mean then, and only the memories true then are returned.
    #[arg(long, value_name = "TIME")]
    pub(crate) as_of: Option<String>,
    /// Memories a newer one replaced (state superseded) too (left out by default).
    #[arg(long)]
    pub(crate) include_superseded: bool,
    /// Leave out key-value entries (records written with a key).
    #[arg(long)]
    pub(crate) exclude_key_value: bool,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) ns: NsArg,
}

/// Every `muisti` command the documentation shows (docs/*.md and the README: inline code and
/// command lines of code blocks) is one this parser takes: a renamed or misspelt flag in
/// the docs (`bench store -n`, when the flag is `--count`) fails here.
#[cfg(test)]
mod documented_commands {
    use clap::{Parser, error::ErrorKind};

    use super::Cli;
    use crate::documented::{commands, pages};

    const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

    /// A command line as arguments, each placeholder given a value of its kind.
    fn words(command: &str) -> Vec<String> {
        crate::documented::words(command, |placeholder, _| {
            match placeholder {
                "..." => "x",
                "N" | "M" | "K" => "10",
                "W" => "0.5",
                "F" | "FILE" | "DIR" | "PATH" => "x.json",
                "URL" => "http://127.0.0.1:1",
                "ID" | "PROPOSAL" | "CURSOR" | "ID_OR_KEY" | "RUN_ID" => {
                    "01ARZ3NDEKTSV4RRFFQ69G5FAV"
                }
                "TIME" => "2026-01-01T00:00:00Z",
                "NAME" | "KEY" | "VALUE" | "QUERY" | "TEXT" | "USER" | "U" | "NS" | "T"
                | "MODEL" | "TENANT" | "ADMIN" | "SPEC" | "L" => "x",
                // Another placeholder names a family of commands: left as written.
                other => other,
            }
            .to_owned()
        })
    }

    /// Whether `args` parse, or parse once a last flag the prose goes on to explain (`--data`
    /// followed by the path outside the code) is left out; a command named without its
    /// required arguments is a mention, not an error. The error is clap's kind.
    fn parses(args: &[String]) -> Result<(), ErrorKind> {
        let result = match Cli::try_parse_from(args) {
            Err(e)
                if matches!(e.kind(), ErrorKind::InvalidValue)
                    && args.last().is_some_and(|a| a.starts_with("--")) =>
            {
                Cli::try_parse_from(&args[..args.len() - 1])
            }
            other => other,
        };
        match result.map_err(|e| e.kind()) {
            Ok(_)
            | Err(
                ErrorKind::MissingRequiredArgument
                | ErrorKind::MissingSubcommand
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                | ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion,
            ) => Ok(()),
            Err(kind) => Err(kind),
        }
    }

    #[test]
    fn every_documented_command_parses() {
        let (mut checked, mut skipped) = (0, 0);
        let mut bad = Vec::new();
        for (page, text) in pages(ROOT) {
            for command in commands(&text) {
                if command.starts_with("export ") {
                    continue;
                }
                let args = words(&command);
                // Alternatives (`a|b`) and prose placeholders in capitals other than the
                // ones above name a family of commands, not one.
                if args.iter().any(|a| {
                    a.contains('|') || (a.len() > 1 && a.chars().all(|c| c.is_ascii_uppercase()))
                }) {
                    skipped += 1;
                    continue;
                }
                checked += 1;
                if let Err(e) = parses(&args) {
                    bad.push(format!("{page}: `{command}`: {e}"));
                }
            }
        }
        assert!(checked > 60, "only {checked} commands found");
        assert!(
            skipped * 5 < checked,
            "{skipped} commands skipped (alternatives or placeholders) beside {checked} checked"
        );
        assert!(
            bad.is_empty(),
            "documented commands that do not parse:\n{}",
            bad.join("\n")
        );
    }

    #[test]
    fn a_wrong_flag_is_caught() {
        let args = words("muisti bench store -n 20000   # every backend");
        assert_eq!(args, ["muisti", "bench", "store", "-n", "20000"]);
        assert!(parses(&args).is_err());
        assert!(parses(&words("muisti bench store --count 20000")).is_ok());
        assert!(
            parses(&words("muisti bench locomo --data")).is_ok(),
            "a mention"
        );
        assert_eq!(
            words(r#"target/release/muisti remember "I moved to Lisbon" --user 'a b' && ls"#),
            ["muisti", "remember", "I moved to Lisbon", "--user", "a b"]
        );
        assert_eq!(
            commands(
                "run `muisti stats -n x` and\n```sh\ntarget/release/muisti mcp \\\n  --store mem://\n```\n"
            ),
            [
                "muisti stats -n x",
                "target/release/muisti mcp --store mem://"
            ]
        );
        assert_eq!(
            commands("```\nmuisti get ID       muisti similar ID -k 5\n```\n"),
            ["muisti get ID", "muisti similar ID -k 5"]
        );
    }
}
