//! A typed client for the muisti HTTP API (`muisti serve`).
//!
//! ```no_run
//! use muisti_client::{Client, NewMemory, RecallQuery};
//!
//! let client = Client::new("http://127.0.0.1:7878")?.with_key(std::env::var("MUISTI_API_KEY").ok());
//! let stored = client.create(&NewMemory::text("I moved to Lisbon in March"))?;
//! let hits = client.recall(&RecallQuery::new("where does the user live", 3))?;
//! assert_eq!(hits.hits[0].memory.id, stored.id);
//! # Ok::<(), muisti_client::ClientError>(())
//! ```
//!
//! The client is blocking (one `ureq` agent, connections reused) and maps every error
//! response to [`ClientError::Api`] with the server's stable `code`.

pub mod api;

use std::time::Duration;

pub use api::*;
use serde::{Serialize, de::DeserializeOwned};

/// What can go wrong calling the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server answered with an error.
    #[error("{status} {code}: {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// The stable error code (`not_found`, `invalid_input`, ...).
        code: String,
        /// The server's message.
        message: String,
    },
    /// The server could not be reached or the connection failed.
    #[error("cannot reach {url}: {reason}")]
    Transport {
        /// The URL called.
        url: String,
        /// Why.
        reason: String,
    },
    /// The answer was not what the API promises.
    #[error("unexpected answer from {url}: {reason}")]
    Decode {
        /// The URL called.
        url: String,
        /// Why.
        reason: String,
    },
    /// The base URL is not an http(s) URL.
    #[error("invalid server URL {0:?}: must start with http:// or https://")]
    BadUrl(String),
    /// A streamed answer ended with an `error` event.
    #[error("{code}: {message}")]
    Stream {
        /// The stable error code (`provider_unavailable`, ...).
        code: String,
        /// The server's message.
        message: String,
    },
}

impl ClientError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// An error answer as a [`ClientError::Api`].
fn api_error(status: u16, text: &str) -> ClientError {
    match serde_json::from_str::<ErrorBody>(text) {
        Ok(b) => ClientError::Api {
            status,
            code: b.error.code,
            message: b.error.message,
        },
        Err(_) => ClientError::Api {
            status,
            code: "unknown".into(),
            message: text.chars().take(200).collect(),
        },
    }
}

/// How long a call may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// How long a chat call may take (the model's time included).
const CHAT_TIMEOUT: Duration = Duration::from_secs(1800);

/// A connection to one muisti server, acting as the tenant of its API key.
#[derive(Clone)]
pub struct Client {
    base: String,
    key: Option<String>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Percent-encodes one path segment or query value.
/// The query string of a cluster request.
fn cluster_query(p: &ClusterParams) -> String {
    let limit = p.limit.map(|l| l.to_string());
    [
        ("user_id", Some(p.user_id.as_str())),
        ("namespace", p.namespace.as_deref()),
        ("limit", limit.as_deref()),
        ("cursor", p.cursor.as_deref()),
    ]
    .iter()
    .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
    .collect::<Vec<_>>()
    .join("&")
}

fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The query string naming the user a request by id acts for (empty without one).
fn acting(user_id: Option<&str>) -> String {
    user_id.map_or_else(String::new, |u| format!("?user_id={}", encode(u)))
}

impl ListParams {
    fn query(&self) -> String {
        // Destructured whole: a new parameter fails to compile until it is sent.
        let ListParams {
            namespace,
            user_id,
            agent_id,
            session_id,
            category,
            scope,
            tag,
            state,
            created_after,
            created_before,
            order,
            cursor,
            limit,
        } = self;
        let limit = limit.map(|l| l.to_string());
        let pairs = [
            ("namespace", namespace.as_deref()),
            ("user_id", user_id.as_deref()),
            ("agent_id", agent_id.as_deref()),
            ("session_id", session_id.as_deref()),
            ("category", category.as_deref()),
            ("scope", scope.as_deref()),
            ("state", state.as_deref()),
            ("created_after", created_after.as_deref()),
            ("created_before", created_before.as_deref()),
            ("order", order.as_deref()),
            ("cursor", cursor.as_deref()),
            ("limit", limit.as_deref()),
        ];
        query_string(&pairs, tag)
    }
}

impl GraphEntityParams {
    fn query(&self) -> String {
        let GraphEntityParams {
            user_id,
            kind,
            name,
            limit,
        } = self;
        let limit = limit.map(|l| l.to_string());
        let pairs = [
            ("user_id", user_id.as_deref()),
            ("type", kind.as_deref()),
            ("name", name.as_deref()),
            ("limit", limit.as_deref()),
        ];
        query_string(&pairs, &[])
    }
}

impl GraphRelationParams {
    fn query(&self) -> String {
        let GraphRelationParams {
            user_id,
            subject,
            predicate,
            object,
            entity,
            hops,
            as_of,
            limit,
        } = self;
        let hops = hops.map(|h| h.to_string());
        let limit = limit.map(|l| l.to_string());
        let pairs = [
            ("user_id", user_id.as_deref()),
            ("subject", subject.as_deref()),
            ("predicate", predicate.as_deref()),
            ("object", object.as_deref()),
            ("entity", entity.as_deref()),
            ("hops", hops.as_deref()),
            ("as_of", as_of.as_deref()),
            ("limit", limit.as_deref()),
        ];
        query_string(&pairs, &[])
    }
}

impl ForgetParams {
    fn query(&self) -> String {
        let pairs = [
            ("namespace", self.namespace.as_deref()),
            ("user_id", Some(self.user_id.as_str())),
            ("agent_id", self.agent_id.as_deref()),
            ("session_id", self.session_id.as_deref()),
        ];
        query_string(&pairs, &[])
    }
}

/// `?k=v&…` of the given pairs and repeated `tag`s (empty when there are none).
fn query_string(pairs: &[(&str, Option<&str>)], tags: &[String]) -> String {
    let q: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .chain(tags.iter().map(|t| format!("tag={}", encode(t))))
        .collect();
    if q.is_empty() {
        String::new()
    } else {
        format!("?{}", q.join("&"))
    }
}

impl Client {
    /// A client for the server at `base_url` (for example `http://127.0.0.1:7878`).
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ClientError::BadUrl(base_url.to_owned()));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self {
            base,
            key: None,
            agent,
        })
    }

    /// Sends `key` as `Authorization: Bearer` on every request.
    pub fn with_key(mut self, key: Option<String>) -> Self {
        self.key = key.filter(|k| !k.is_empty());
        self
    }

    /// The server's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    fn call<B: Serialize, T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&B>,
    ) -> Result<Option<T>, ClientError> {
        let url = format!("{}{path}", self.base);
        let transport = |e: ureq::Error| ClientError::Transport {
            url: url.clone(),
            reason: e.to_string(),
        };
        let auth = self.key.as_ref().map(|k| format!("Bearer {k}"));
        let result = match body {
            Some(b) => {
                let json = serde_json::to_string(b).map_err(|e| ClientError::Decode {
                    url: url.clone(),
                    reason: e.to_string(),
                })?;
                // A chat waits for the model: it gets the longer timeout.
                let timeout = if path.starts_with("/v1/chat") {
                    CHAT_TIMEOUT
                } else {
                    TIMEOUT
                };
                let mut req = match method {
                    "PUT" => self.agent.put(&url),
                    "PATCH" => self.agent.patch(&url),
                    _ => self.agent.post(&url),
                }
                .config()
                .timeout_global(Some(timeout))
                .build()
                .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.send(json.as_str())
            }
            None => {
                let mut req = match method {
                    "DELETE" => self.agent.delete(&url),
                    _ => self.agent.get(&url),
                };
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
        };
        let mut resp = result.map_err(transport)?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .map_err(transport)?;
        if status >= 400 {
            return Err(api_error(status, &text));
        }
        if status == 204 || text.is_empty() {
            return Ok(None);
        }
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| ClientError::Decode {
                url,
                reason: e.to_string(),
            })
    }

    fn expect<T>(&self, path: &str, v: Option<T>) -> Result<T, ClientError> {
        v.ok_or_else(|| ClientError::Decode {
            url: format!("{}{path}", self.base),
            reason: "empty body".into(),
        })
    }

    fn not_found_as_none<T>(r: Result<T, ClientError>) -> Result<Option<T>, ClientError> {
        match r {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Api { status: 404, .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        let v = self.call::<(), T>("GET", path, None)?;
        self.expect(path, v)
    }

    fn send_json<B: Serialize, T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: &B,
    ) -> Result<T, ClientError> {
        let v = self.call(method, path, Some(body))?;
        self.expect(path, v)
    }

    /// Stores a memory and returns the stored record.
    pub fn create(&self, memory: &NewMemory) -> Result<Memory, ClientError> {
        self.send_json("POST", "/v1/memories", memory)
    }

    /// Stores many memories in one transaction.
    pub fn create_many(&self, memories: &NewMemories) -> Result<Memories, ClientError> {
        self.send_json("POST", "/v1/memories/batch", memories)
    }

    /// The memory with `id`, or `None`.
    pub fn get(&self, id: &str) -> Result<Option<Memory>, ClientError> {
        self.get_for(id, None)
    }

    /// One memory by id, as `user_id` sees it: a declarative entry is found only by its own
    /// user.
    pub fn get_for(&self, id: &str, user_id: Option<&str>) -> Result<Option<Memory>, ClientError> {
        let path = format!("/v1/memories/{}{}", encode(id), acting(user_id));
        Self::not_found_as_none(self.get_json(&path))
    }

    /// Changes some fields of a memory; returns the stored record.
    pub fn update(&self, id: &str, patch: &MemoryPatch) -> Result<Memory, ClientError> {
        self.send_json("PATCH", &format!("/v1/memories/{}", encode(id)), patch)
    }

    /// Deletes a memory; `false` if there was none.
    pub fn delete(&self, id: &str) -> Result<bool, ClientError> {
        self.delete_for(id, None)
    }

    /// Deletes a memory as `user_id` (a declarative entry only for its own user); `false` if
    /// there was none the user may see.
    pub fn delete_for(&self, id: &str, user_id: Option<&str>) -> Result<bool, ClientError> {
        let path = format!("/v1/memories/{}{}", encode(id), acting(user_id));
        Self::not_found_as_none(self.call::<(), serde_json::Value>("DELETE", &path, None))
            .map(|r| r.is_some())
    }

    /// Deletes every memory of one user in a namespace (only one agent's or session's, if
    /// given too); returns how many.
    pub fn delete_owner(&self, params: &ForgetParams) -> Result<u64, ClientError> {
        let path = format!("/v1/memories{}", params.query());
        let d = self.call::<(), Deleted>("DELETE", &path, None)?;
        Ok(self.expect(&path, d)?.deleted)
    }

    /// One page of memories.
    pub fn list(&self, params: &ListParams) -> Result<MemoryPage, ClientError> {
        self.get_json(&format!("/v1/memories{}", params.query()))
    }

    /// The memories that best match a query.
    pub fn recall(&self, query: &RecallQuery) -> Result<RecallResult, ClientError> {
        self.send_json("POST", "/v1/recall", query)
    }

    /// The memories closest in meaning to the one with `id` (itself excluded), best first.
    pub fn similar(&self, id: &str, params: &SimilarParams) -> Result<RecallResult, ClientError> {
        let limit = params.limit.map(|l| l.to_string());
        let all_users = params.all_users.map(|a| a.to_string());
        let query: Vec<String> = [
            ("limit", limit.as_deref()),
            ("namespace", params.namespace.as_deref()),
            ("user_id", params.user_id.as_deref()),
            ("all_users", all_users.as_deref()),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .collect();
        self.get_json(&format!(
            "/v1/memories/{}/similar?{}",
            encode(id),
            query.join("&")
        ))
    }

    /// Sends a message to the server's agent (recall injected, conversation stored).
    pub fn chat(&self, message: &ChatMessage) -> Result<ChatReply, ClientError> {
        self.send_json("POST", "/v1/chat", message)
    }

    /// [`Client::chat`] with the answer streamed: `on_text` gets each piece as the model
    /// writes it (`POST /v1/chat/stream`).
    pub fn chat_stream(
        &self,
        message: &ChatMessage,
        mut on_text: impl FnMut(&str),
    ) -> Result<ChatReply, ClientError> {
        use std::io::BufRead;
        let url = format!("{}/v1/chat/stream", self.base);
        let transport = |reason: String| ClientError::Transport {
            url: url.clone(),
            reason,
        };
        let decode = |reason: String| ClientError::Decode {
            url: url.clone(),
            reason,
        };
        let json = serde_json::to_string(message).map_err(|e| decode(e.to_string()))?;
        let mut req = self
            .agent
            .post(&url)
            .config()
            .timeout_global(Some(CHAT_TIMEOUT))
            .build()
            .header("Content-Type", "application/json");
        if let Some(k) = &self.key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        let mut resp = req
            .send(json.as_str())
            .map_err(|e| transport(e.to_string()))?;
        let status = resp.status().as_u16();
        if status >= 400 {
            let text = resp.body_mut().read_to_string().unwrap_or_default();
            return Err(api_error(status, &text));
        }
        let reader = std::io::BufReader::new(resp.into_body().into_reader());
        let mut event = String::new();
        for line in reader.lines() {
            let line = line.map_err(|e| transport(e.to_string()))?;
            if let Some(name) = line.strip_prefix("event:") {
                event = name.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                let data = data.strip_prefix(' ').unwrap_or(data);
                match event.as_str() {
                    "token" => {
                        let t: ChatToken =
                            serde_json::from_str(data).map_err(|e| decode(e.to_string()))?;
                        on_text(&t.text);
                    }
                    "done" => {
                        return serde_json::from_str(data).map_err(|e| decode(e.to_string()));
                    }
                    "error" => {
                        let b: ErrorBody =
                            serde_json::from_str(data).map_err(|e| decode(e.to_string()))?;
                        return Err(ClientError::Stream {
                            code: b.error.code,
                            message: b.error.message,
                        });
                    }
                    _ => {}
                }
            }
        }
        Err(transport("the stream ended before its done event".into()))
    }

    /// The value at `key` of `namespace`, or `None`.
    pub fn kv_get(&self, namespace: &str, key: &str) -> Result<Option<KvEntry>, ClientError> {
        Self::not_found_as_none(self.get_json(&format!(
            "/v1/kv/{}/{}",
            encode(namespace),
            encode(key)
        )))
    }

    /// Stores `value` at `key`; returns the stored record.
    pub fn kv_set(
        &self,
        namespace: &str,
        key: &str,
        value: serde_json::Value,
        ttl_seconds: Option<u64>,
    ) -> Result<KvEntry, ClientError> {
        let path = format!("/v1/kv/{}/{}", encode(namespace), encode(key));
        self.send_json("PUT", &path, &KvValue { value, ttl_seconds })
    }

    /// Deletes `key`; `false` if there was none.
    pub fn kv_forget(&self, namespace: &str, key: &str) -> Result<bool, ClientError> {
        let path = format!("/v1/kv/{}/{}", encode(namespace), encode(key));
        Self::not_found_as_none(self.call::<(), serde_json::Value>("DELETE", &path, None))
            .map(|r| r.is_some())
    }

    /// Every live entry of `namespace`.
    pub fn kv_all(&self, namespace: &str) -> Result<KvEntries, ClientError> {
        KvEntries::collect(|cursor| {
            self.kv_page(
                namespace,
                &KvPageParams {
                    limit: None,
                    cursor,
                },
            )
        })
    }

    /// One page of the entries of `namespace` (`next_cursor` leads to the next).
    pub fn kv_page(
        &self,
        namespace: &str,
        params: &KvPageParams,
    ) -> Result<KvEntries, ClientError> {
        let limit = params.limit.map(|l| l.to_string());
        let query: Vec<String> = [
            ("limit", limit.as_deref()),
            ("cursor", params.cursor.as_deref()),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .collect();
        self.get_json(&format!("/v1/kv/{}?{}", encode(namespace), query.join("&")))
    }

    /// Deletes every entry of `namespace`; returns how many.
    pub fn kv_flush(&self, namespace: &str) -> Result<u64, ClientError> {
        let path = format!("/v1/kv/{}", encode(namespace));
        let v: Option<Deleted> = self.call::<(), Deleted>("DELETE", &path, None)?;
        Ok(self.expect(&path, v)?.deleted)
    }

    /// What the tenant holds.
    pub fn stats(&self) -> Result<Stats, ClientError> {
        self.get_json("/v1/stats")
    }

    /// [`Client::stats`] with the summary of a namespace's memories, or one user's.
    pub fn stats_of(&self, params: &StatsParams) -> Result<Stats, ClientError> {
        let query: Vec<String> = [
            ("namespace", params.namespace.as_deref()),
            ("user_id", params.user_id.as_deref()),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode(v))))
        .collect();
        self.get_json(&format!("/v1/stats?{}", query.join("&")))
    }

    /// Ends a conversation: deletes its scratch and short-term memories.
    pub fn end_conversation(&self, id: &str) -> Result<Deleted, ClientError> {
        let path = format!("/v1/conversations/{}/end", encode(id));
        self.send_json("POST", &path, &serde_json::json!({}))
    }

    /// The conversations (of a user), oldest first.
    pub fn conversations(&self, user_id: Option<&str>) -> Result<Conversations, ClientError> {
        match user_id {
            Some(u) => self.get_json(&format!("/v1/conversations?user_id={}", encode(u))),
            None => self.get_json("/v1/conversations"),
        }
    }

    /// A conversation with its messages.
    pub fn conversation(&self, id: &str) -> Result<ConversationDetail, ClientError> {
        self.get_json(&format!("/v1/conversations/{}", encode(id)))
    }

    /// Appends messages to a conversation (made on first use); answers the stored messages.
    pub fn append_messages(
        &self,
        id: &str,
        messages: &api::AppendMessages,
    ) -> Result<AppendedMessages, ClientError> {
        let path = format!("/v1/conversations/{}/messages", encode(id));
        self.send_json("POST", &path, messages)
    }

    /// Deletes a conversation: its messages and its scratch and short-term memories.
    pub fn delete_conversation(&self, id: &str) -> Result<Deleted, ClientError> {
        let path = format!("/v1/conversations/{}", encode(id));
        let d = self.call::<(), Deleted>("DELETE", &path, None)?;
        self.expect(&path, d)
    }

    /// A user's entities.
    pub fn graph_entities(&self, params: &GraphEntityParams) -> Result<GraphEntities, ClientError> {
        self.get_json(&format!("/v1/graph/entities{}", params.query()))
    }

    /// Merges one entity into another that is the same; the merged entity.
    pub fn graph_merge(&self, merge: &GraphMerge) -> Result<GraphEntity, ClientError> {
        self.send_json("POST", "/v1/graph/entities/merge", merge)
    }

    /// Remembers a conversation: the facts in it, each decided by the declarative rules,
    /// or each message as said (`POST /v1/memories/extract`).
    pub fn extract_memories(
        &self,
        req: &api::ExtractRequest,
    ) -> Result<api::ExtractResponse, ClientError> {
        self.send_json("POST", "/v1/memories/extract", req)
    }

    /// Carries out a natural-language command over a user's memory (`POST /v1/manage`).
    pub fn manage(&self, req: &api::ManageRequest) -> Result<api::ManageReply, ClientError> {
        self.send_json("POST", "/v1/manage", req)
    }

    /// The relations matching a triple pattern.
    pub fn graph_relations(
        &self,
        params: &GraphRelationParams,
    ) -> Result<GraphRelations, ClientError> {
        self.get_json(&format!("/v1/graph/relations{}", params.query()))
    }

    /// The proposals waiting for a user's confirmation.
    pub fn proposals(&self, user_id: &str) -> Result<Proposals, ClientError> {
        self.get_json(&format!("/v1/proposals?user_id={}", encode(user_id)))
    }

    /// Applies a proposal `user_id` confirmed (only the user it concerns may); the entry as
    /// stored.
    pub fn confirm(&self, id: &str, user_id: &str) -> Result<Memory, ClientError> {
        let path = format!("/v1/proposals/{}/confirm", encode(id));
        self.send_json("POST", &path, &serde_json::json!({ "user_id": user_id }))
    }

    /// Drops a proposal of `user_id`'s; returns it.
    pub fn reject(&self, id: &str, user_id: &str) -> Result<Proposal, ClientError> {
        let path = format!("/v1/proposals/{}/reject", encode(id));
        self.send_json("POST", &path, &serde_json::json!({ "user_id": user_id }))
    }

    /// A declarative entry's history, oldest first.
    pub fn history(&self, id: &str, user_id: Option<&str>) -> Result<History, ClientError> {
        self.get_json(&format!(
            "/v1/memories/{}/history{}",
            encode(id),
            acting(user_id)
        ))
    }

    /// A memory's accesses in the server's access log (empty while it is off).
    pub fn accesses(
        &self,
        id: &str,
        user_id: Option<&str>,
    ) -> Result<api::MemoryAccesses, ClientError> {
        self.get_json(&format!(
            "/v1/memories/{}/accesses{}",
            encode(id),
            acting(user_id)
        ))
    }

    /// Runs the scopes' lifetimes now (admin key).
    pub fn maintain(&self) -> Result<Maintained, ClientError> {
        self.send_json("POST", "/v1/maintain", &serde_json::json!({}))
    }

    /// Runs maintenance (operator key): expire, consolidate, promote, prune.
    pub fn maintenance(&self, req: &MaintenanceRequest) -> Result<MaintenanceReport, ClientError> {
        self.send_json("POST", "/v1/maintenance", req)
    }

    /// Starts a maintenance run in the background (operator key); poll [`Client::job`] for
    /// its progress and report.
    pub fn start_maintenance(&self, req: &MaintenanceRequest) -> Result<Job, ClientError> {
        let req = MaintenanceRequest {
            background: true,
            ..req.clone()
        };
        self.send_json("POST", "/v1/maintenance", &req)
    }

    /// Brings an archived memory back (text, vector, full-text entry); another memory comes
    /// back as it is.
    pub fn restore(&self, id: &str) -> Result<Memory, ClientError> {
        self.send_json(
            "POST",
            &format!("/v1/memories/{}/restore", encode(id)),
            &serde_json::json!({}),
        )
    }

    /// A user's memories grouped by topic.
    pub fn clusters(&self, params: &ClusterParams) -> Result<Clusters, ClientError> {
        self.get_json(&format!("/v1/clusters?{}", cluster_query(params)))
    }

    /// One page of a cluster's memories.
    pub fn cluster_memories(
        &self,
        cluster: u32,
        params: &ClusterParams,
    ) -> Result<MemoryPage, ClientError> {
        self.get_json(&format!(
            "/v1/clusters/{cluster}/memories?{}",
            cluster_query(params)
        ))
    }

    /// Deletes expired records now, in the whole store (admin key).
    pub fn purge(&self) -> Result<Purged, ClientError> {
        self.send_json("POST", "/v1/purge", &serde_json::json!({}))
    }

    /// Starts a reindex (admin key); poll [`Client::job`].
    pub fn reindex(&self, force: bool) -> Result<Job, ClientError> {
        self.send_json("POST", "/v1/reindex", &ReindexRequest { force })
    }

    /// A background job.
    pub fn job(&self, id: &str) -> Result<Job, ClientError> {
        self.get_json(&format!("/v1/jobs/{}", encode(id)))
    }

    /// Makes an API key (admin key).
    pub fn create_key(&self, key: &NewKey) -> Result<CreatedKey, ClientError> {
        self.send_json("POST", "/v1/admin/keys", key)
    }

    /// Lists the API keys (admin key).
    pub fn keys(&self) -> Result<KeyList, ClientError> {
        self.get_json("/v1/admin/keys")
    }

    /// Revokes an API key (admin key); `false` if there was none.
    pub fn revoke_key(&self, id: &str) -> Result<bool, ClientError> {
        let path = format!("/v1/admin/keys/{}", encode(id));
        Self::not_found_as_none(self.call::<(), serde_json::Value>("DELETE", &path, None))
            .map(|r| r.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_path_segments() {
        assert_eq!(encode("user:1"), "user%3A1");
        assert_eq!(encode("a b/c"), "a%20b%2Fc");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn list_params_build_a_query_string() {
        let p = ListParams {
            user_id: Some("u 1".into()),
            limit: Some(5),
            ..ListParams::default()
        };
        assert_eq!(p.query(), "?user_id=u%201&limit=5");
        let p = ListParams {
            tag: vec!["a".into(), "b c".into()],
            ..ListParams::default()
        };
        assert_eq!(p.query(), "?tag=a&tag=b%20c");
        assert_eq!(ListParams::default().query(), "");
    }

    #[test]
    fn rejects_non_http_urls() {
        assert!(matches!(
            Client::new("ftp://x"),
            Err(ClientError::BadUrl(_))
        ));
    }
}
