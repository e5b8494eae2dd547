//! The OpenAPI 3.1 document of the REST API, generated from the handlers' annotations.

use axum::{
    http::header,
    response::{IntoResponse, Response},
};
use utoipa::OpenApi;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key from `muisti keys create`; not needed on loopback when no key exists",
                    ))
                    .build(),
            ),
        );
    }
}

/// The OpenAPI description of the REST API.
#[derive(OpenApi)]
#[openapi(
    info(title = "muisti", description = "Long-term memory for AI agents: the REST API of `muisti serve`. Every request acts as the tenant of its API key.", license(name = "Apache-2.0")),
    paths(crate::rest::create_memory, crate::rest::create_memories, crate::rest::get_memory,
        crate::rest::update_memory, crate::rest::delete_memory, crate::rest::delete_memories,
        crate::rest::list_memories,
        crate::rest::similar, crate::rest::restore_memory, crate::rest::clusters,
        crate::rest::cluster_memories, crate::rest::recall, crate::rest::kv_get, crate::rest::kv_set,
        crate::rest::kv_forget, crate::rest::kv_all, crate::rest::kv_flush, crate::rest::stats,
        crate::rest::purge, crate::rest::maintain, crate::rest::maintenance, crate::rest::end_conversation, crate::rest::confirm_proposal, crate::rest::list_conversations, crate::rest::get_conversation, crate::rest::append_messages, crate::rest::pop_message, crate::rest::delete_conversation, crate::rest::reject_proposal, crate::rest::list_proposals, crate::rest::memory_history, crate::rest::memory_accesses, crate::rest::graph_entities, crate::rest::graph_merge, crate::rest::graph_relations, crate::rest::reindex, crate::rest::jobs, crate::rest::job, crate::rest::analytics, crate::rest::similarity, crate::rest::create_key, crate::rest::list_keys,
        crate::rest::list_snapshots, crate::rest::create_snapshot, crate::rest::restore_snapshot,
        crate::rest::revoke_key, crate::rest::extract_memories, crate::rest::healthz, crate::rest::readyz, crate::rest::metrics,
        crate::chat::chat, crate::chat::chat_stream, crate::chat::manage,
        crate::proxy::chat_completions),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "memories", description = "Store, read, change and delete memories"),
        (name = "recall", description = "Find the memories that matter for a message"),
        (name = "kv", description = "Namespaced key-value state with TTL"),
        (name = "declarative", description = "A user's facts, preferences and rules: proposals to confirm, histories"),
        (name = "graph", description = "Entities and the facts between them, as they are now or as of a time"),
        (name = "chat", description = "Talk to a model with the memories that matter recalled into every prompt"),
        (name = "admin", description = "Keys, snapshots, reindexing, statistics"),
        (name = "health", description = "Liveness, readiness, metrics")),
)]
pub struct ApiDoc;

/// The OpenAPI 3.1 document, pretty-printed, as committed in `docs/openapi.json` (built
/// once per process).
pub fn openapi_document() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        let mut doc = serde_json::to_value(&doc).unwrap_or_default();
        exact::tighten(&mut doc);
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        text
    })
}

/// `GET /openapi.json`: this document.
pub async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        openapi_document(),
    )
        .into_response()
}

/// What the annotations cannot say, added to the generated document from the validators'
/// own constants: the ranges, patterns, enums and formats of fields and parameters (by
/// name: a name means the same everywhere in the API), the error responses every operation
/// can give, open mode's optional key, and the routes the annotations do not describe.
mod exact {
    use muisti::{MAX_KEY_CHARS, MAX_NAME_CHARS, MemoryScope, MemoryState, RecallMode, Ttl};
    use serde_json::{Map, Value, json};

    use crate::{
        chat::MAX_LONG_TERM_MEMORY,
        ops::{MAX_BATCH, MAX_PAGE, MAX_RECALL},
    };

    /// Namespace and tenant names: `a-z A-Z 0-9 _ - . :`, never `..`.
    const NAME_PATTERN: &str = r"^\.?(?:[A-Za-z0-9_:-]+\.?)*$";
    /// A ULID (Crockford base 32, the first character at most 7).
    const ULID_PATTERN: &str = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";
    /// A cursor of `GET /v1/memories`: the last id (a ULID), or in a listing by another order
    /// its sort key and id (`importance.-900000.-1765000000000.-1764000000000.<ULID>`).
    const LIST_CURSOR_PATTERN: &str = "^((created|newest|importance|accessed)(\\.-?[0-9]{1,19}){3}\\.)?[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";
    /// Routes that need no key.
    const PUBLIC: [&str; 4] = ["/healthz", "/readyz", "/metrics", "/openapi.json"];

    fn names<T: serde::Serialize>(all: &[T]) -> Value {
        Value::Array(
            all.iter()
                .filter_map(|v| serde_json::to_value(v).ok())
                .collect(),
        )
    }

    /// The characters Rust's `str::trim` removes (Unicode `White_Space`), as ranges: a blank
    /// text is made of them only. The document's pattern is built from them, so it and the
    /// server agree on what is blank (a pattern's `\s` is ECMAScript's: it leaves out U+0085
    /// and takes in U+FEFF).
    pub(super) const WHITESPACE: [(char, char); 10] = [
        ('\u{9}', '\u{d}'),
        (' ', ' '),
        ('\u{85}', '\u{85}'),
        ('\u{a0}', '\u{a0}'),
        ('\u{1680}', '\u{1680}'),
        ('\u{2000}', '\u{200a}'),
        ('\u{2028}', '\u{2029}'),
        ('\u{202f}', '\u{202f}'),
        ('\u{205f}', '\u{205f}'),
        ('\u{3000}', '\u{3000}'),
    ];

    /// A text made of [`WHITESPACE`] only (the empty text too).
    fn blank_pattern() -> String {
        let class: String = WHITESPACE
            .iter()
            .map(|&(a, b)| {
                if a == b {
                    format!("\\u{:04X}", a as u32)
                } else {
                    format!("\\u{:04X}-\\u{:04X}", a as u32, b as u32)
                }
            })
            .collect();
        format!("^[{class}]*$")
    }

    /// Text without control characters (Unicode `Cc`), as keys, owners, tags and labels
    /// must be.
    const NO_CONTROL_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";
    /// A key as a path segment: no control character, written or as a `%` escape of one
    /// (`%00`-`%1F`, `%7F`); `%` only before two hex digits, as the path is decoded.
    const PATH_KEY_PATTERN: &str =
        "^(?:[^\\u0000-\\u001F\\u007F-\\u009F%]|%(?:[2-689A-Fa-f][0-9A-Fa-f]|7[0-9A-Ea-e]))+$";
    /// The same, or empty.
    const NO_CONTROL_OR_EMPTY_PATTERN: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";
    /// Category and source names other than the known ones.
    const OPEN_NAME_PATTERN: &str = "^[A-Za-z0-9_.:-]{1,64}$";
    /// `If-Match`: a version ETag (`"3"`, `W/"3"`, `3`) or `*`.
    const IF_MATCH_PATTERN: &str = "^\\s*(\\*|(W/)?\"[0-9]{1,19}\"|(W/)?[0-9]{1,19})\\s*$";
    /// Fields whose name means something else in these schemas: a job's state, the
    /// application state the statistics count apart, the content of a stored record (a
    /// key-value entry's may be any value, blank text too),
    /// an error's message, and who made a change in a history (an agent's id too).
    const NOT_BY_NAME: [(&str, &str); 5] = [
        ("Job", "state"),
        ("Stats", "state"),
        ("Memory", "content"),
        ("ErrorDetail", "message"),
        ("HistoryEntry", "actor"),
    ];

    /// The constraints of a field or parameter called `name` (merged into its schema).
    fn rule(name: &str) -> Option<Value> {
        let name_rule = json!({"pattern": NAME_PATTERN, "minLength": 1,
            "maxLength": MAX_NAME_CHARS});
        Some(match name {
            "namespace" | "tenant" => name_rule,
            "key" => json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1,
                "maxLength": MAX_KEY_CHARS}),
            // The names of a graph merge, as the server checks graph names.
            "keep" | "other" => json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1,
                "maxLength": crate::ops::MAX_GRAPH_NAME_CHARS}),
            "user_id" | "agent_id" | "session_id" => {
                json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1, "maxLength": 256})
            }
            // A key's note may be empty.
            "label" => json!({"pattern": NO_CONTROL_OR_EMPTY_PATTERN, "maxLength": 200}),
            "tags" | "tag" => json!({"maxItems": 64, "items": {"pattern": NO_CONTROL_PATTERN,
                "minLength": 1, "maxLength": 64}}),
            "category" | "source" | "type" | "actor" => json!({"pattern": OPEN_NAME_PATTERN}),
            "cursor" | "superseded_by" | "supersedes" => json!({"pattern": ULID_PATTERN}),
            "order" => json!({"enum": muisti::ListOrder::ALL
                .iter()
                .map(|o| o.as_str())
                .collect::<Vec<_>>()}),
            "If-Match" => json!({"type": "string", "pattern": IF_MATCH_PATTERN}),
            // Content is never null nor blank text; a key-value entry's value never null.
            "content" => json!({"not": {"anyOf": [{"type": "null"},
                {"type": "string", "pattern": blank_pattern()}]}}),
            "value" => json!({"not": {"type": "null"}}),
            // A chat message is never blank.
            "message" => json!({"not": {"type": "string", "pattern": blank_pattern()}}),
            "long_term_memory" => json!({"minimum": 0, "maximum": MAX_LONG_TERM_MEMORY}),
            "graph_facts" => json!({"minimum": 0, "maximum": crate::chat::MAX_GRAPH_FACTS}),
            "limit" => json!({"minimum": 1, "maximum": MAX_PAGE.max(MAX_RECALL)}),
            "hops" => json!({"minimum": 1, "maximum": muisti::graph::MAX_HOPS}),
            "importance" | "min_score" | "min_importance" => {
                json!({"minimum": 0.0, "maximum": 1.0})
            }
            "jobs" => json!({"items": {"enum": muisti::lifecycle::Job::ALL
                .iter()
                .map(|j| j.as_str())
                .collect::<Vec<_>>()}}),
            "promote_after" => json!({"minimum": 1}),
            "lease_secs" => json!({"minimum": 1, "maximum": 3600}),
            "max_memories" => json!({"minimum": 0}),
            "confidence" => json!({"minimum": 0, "maximum": 100}),
            "ttl_seconds" => json!({"minimum": 1, "maximum": Ttl::MAX.as_secs()}),
            "scope" => {
                json!({"enum": MemoryScope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>()})
            }
            "state" => json!({"enum": names(&MemoryState::ALL)}),
            "mode" => json!({"enum": names(&RecallMode::ALL)}),
            "memories" => json!({"maxItems": MAX_BATCH}),
            n if n.ends_with("_at")
                || matches!(
                    n,
                    "valid_from" | "valid_until" | "created_after" | "created_before" | "as_of"
                ) =>
            {
                json!({"format": "date-time"})
            }
            _ => return None,
        })
    }

    /// Merges `rule` into `schema`; for a nullable schema (`type: [T, "null"]`) or a
    /// `oneOf` with null, into its non-null part; an enum on a nullable field keeps null.
    fn apply(schema: &mut Value, rule: &Value) {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(alts)) = obj.get_mut("oneOf") {
            for alt in alts.iter_mut().filter(|a| a["type"] != "null") {
                apply(alt, rule);
            }
            return;
        }
        let nullable = obj
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|t| t.iter().any(|t| t == "null"));
        for (k, v) in rule.as_object().into_iter().flatten() {
            let mut v = v.clone();
            if k == "enum"
                && nullable
                && let Some(a) = v.as_array_mut()
            {
                a.push(Value::Null);
            }
            // Number rules do not apply to arrays and the like.
            let applies = match k.as_str() {
                "minimum" | "maximum" => has_type(obj, &["integer", "number"]),
                "pattern" | "minLength" | "maxLength" | "format" => has_type(obj, &["string"]),
                "minItems" | "maxItems" | "items" => has_type(obj, &["array"]),
                _ => true,
            };
            if k == "items" {
                if let Some(items) = obj.get_mut("items") {
                    apply(items, &v);
                }
            } else if applies {
                obj.insert(k.clone(), v);
            }
        }
    }

    fn has_type(obj: &Map<String, Value>, wanted: &[&str]) -> bool {
        match obj.get("type") {
            Some(Value::String(t)) => wanted.contains(&t.as_str()),
            Some(Value::Array(ts)) => ts
                .iter()
                .any(|t| t.as_str().is_some_and(|t| wanted.contains(&t))),
            _ => false,
        }
    }

    fn error(description: &str) -> Value {
        json!({"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
    }

    /// An example of each request body and of the error shape (each checked to parse as
    /// its wire type).
    pub(super) fn examples() -> Vec<(&'static str, Value)> {
        let memory = json!({
            "content": "Prefers a window seat on long flights",
            "user_id": "alice",
            "tags": ["travel"],
            "importance": 0.7
        });
        vec![
            ("NewMemory", memory.clone()),
            (
                "NewMemories",
                json!({"memories": [memory, {"content": "Allergic to peanuts", "user_id": "alice"}]}),
            ),
            (
                "MemoryPatch",
                json!({"tags": ["travel", "seating"], "importance": 0.9}),
            ),
            (
                "RecallQuery",
                json!({"query": "where does Alice like to sit?", "user_id": "alice", "limit": 5}),
            ),
            (
                "KvValue",
                json!({"value": {"tier": "gold"}, "ttl_seconds": 3600}),
            ),
            ("NewKey", json!({"tenant": "acme", "label": "support bot"})),
            ("ReindexRequest", json!({"force": false})),
            (
                "ChatMessage",
                json!({"message": "Book my usual seat to Lisbon", "long_term_memory": 5}),
            ),
            (
                "ExtractRequest",
                json!({"user_id": "alice", "messages": [
                    {"role": "user", "content": "I moved to Porto last month, and I'm vegetarian."},
                    {"role": "assistant", "content": "Noted! Any dinner plans?"}]}),
            ),
            (
                "ManageRequest",
                json!({"command": "forget my old address", "user_id": "alice"}),
            ),
            (
                "ErrorBody",
                json!({"error": {"code": "invalid_input", "message": "content must not be empty"}}),
            ),
        ]
    }

    pub(super) fn tighten(doc: &mut Value) {
        // A key, or none on loopback while no key exists (open mode).
        doc["security"] = json!([{"bearer": []}, {}]);
        if let Some(schemas) = doc
            .pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut)
        {
            for (schema_name, schema) in schemas.iter_mut() {
                if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                    for (name, prop) in props.iter_mut() {
                        if NOT_BY_NAME.contains(&(schema_name.as_str(), name.as_str())) {
                            continue;
                        }
                        if let Some(r) = rule(name) {
                            apply(prop, &r);
                        }
                    }
                }
            }
        }
        let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
            return;
        };
        for (path, item) in paths.iter_mut() {
            let public = PUBLIC.contains(&path.as_str());
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for op in item.values_mut().filter_map(Value::as_object_mut) {
                if public {
                    op.insert("security".into(), json!([]));
                }
                for p in op
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    let name = p["name"].as_str().unwrap_or_default().to_owned();
                    let r = if name == "id"
                        && (path.starts_with("/v1/memories/") || path.starts_with("/v1/proposals/"))
                    {
                        Some(json!({"pattern": ULID_PATTERN}))
                    } else if name == "id" && path.starts_with("/v1/conversations/") {
                        // A conversation id is a session id, percent-decoded from the path.
                        Some(json!({"pattern": PATH_KEY_PATTERN, "minLength": 1,
                            "maxLength": 256}))
                    } else if path.starts_with("/v1/graph/")
                        && matches!(
                            name.as_str(),
                            "subject" | "object" | "entity" | "name" | "predicate"
                        )
                    {
                        // Names and values of the graph, as the server checks them.
                        Some(json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1,
                            "maxLength": crate::ops::MAX_GRAPH_NAME_CHARS}))
                    } else if name == "limit" && path.starts_with("/v1/graph/") {
                        Some(json!({"minimum": 1, "maximum": crate::ops::MAX_GRAPH_ANSWER}))
                    } else if name == "limit" && path == "/v1/analytics/similarity" {
                        Some(json!({"minimum": 2,
                            "maximum": muisti::analytics::MAX_SIMILARITY}))
                    } else if name == "days" && path == "/v1/analytics" {
                        Some(json!({"minimum": 1, "maximum": muisti::analytics::MAX_DAYS}))
                    } else if name == "top" && path == "/v1/analytics" {
                        Some(json!({"minimum": 0, "maximum": crate::ops::MAX_TOP_ACCESSED}))
                    } else if name == "cursor" && path == "/v1/memories" {
                        Some(json!({"pattern": LIST_CURSOR_PATTERN}))
                    } else if name == "key" && p["in"] == "path" {
                        // A path segment is percent-decoded: a `%` escape of a control
                        // character is one too.
                        Some(json!({"pattern": PATH_KEY_PATTERN, "minLength": 1,
                            "maxLength": MAX_KEY_CHARS}))
                    } else {
                        rule(&name)
                    };
                    if let Some(r) = r {
                        apply(&mut p["schema"], &r);
                    }
                }
                let has_body = op.contains_key("requestBody");
                let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                    continue;
                };
                let mut add = |status: &str, description: &str| {
                    responses
                        .entry(status.to_owned())
                        .or_insert_with(|| error(description));
                };
                add("400", "Malformed request: JSON, parameters or HTTP");
                add(
                    "403",
                    "Refused: a foreign Host or Origin in open mode, or the key's rights",
                );
                add("414", "Request target too long");
                add("431", "Request headers too large");
                add(
                    "503",
                    "Unavailable: the store, a timeout, or too many connections",
                );
                if !public {
                    add("401", "No valid API key");
                    add("422", "Invalid input: a field or parameter breaks a rule");
                    add("429", "Rate limited (see Retry-After)");
                }
                if has_body {
                    add("413", "Body over the limit");
                    add("415", "Body without Content-Type: application/json");
                }
            }
        }
        // Namespaces starting `_muisti.` are the engine's own: every request refuses them
        // (a response, such as the stats, may name them).
        let reserved = json!({"not": {"type": "string", "pattern": "^_muisti\\."}});
        let mut requests: Vec<String> = Vec::new();
        for item in doc["paths"].as_object().into_iter().flatten() {
            for op in item.1.as_object().into_iter().flatten() {
                if let Some(r) =
                    op.1.pointer("/requestBody/content/application~1json/schema/$ref")
                        .and_then(Value::as_str)
                {
                    requests.push(r.trim_start_matches("#/components/schemas/").to_owned());
                }
                for p in op.1["parameters"].as_array().into_iter().flatten() {
                    if let Some(r) = p.pointer("/schema/$ref").and_then(Value::as_str) {
                        requests.push(r.trim_start_matches("#/components/schemas/").to_owned());
                    }
                }
            }
        }
        for name in &requests {
            if let Some(ns) =
                doc.pointer_mut(&format!("/components/schemas/{name}/properties/namespace"))
            {
                apply(ns, &reserved);
            }
        }
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
            for item in paths.values_mut() {
                for op in item.as_object_mut().into_iter().flatten().map(|(_, v)| v) {
                    for p in op
                        .get_mut("parameters")
                        .and_then(Value::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        if p["name"] == "namespace" {
                            apply(&mut p["schema"], &reserved);
                        }
                    }
                }
            }
        }
        // A conversation to remember: 1-200 messages of the four roles, never blank.
        if let Some(m) = doc.pointer_mut("/components/schemas/ExtractRequest/properties/messages") {
            m["minItems"] = json!(1);
            m["maxItems"] = json!(muisti::facts::MAX_MESSAGES);
        }
        // Messages a caller appends: 1-200, each with a role name and a speaker name as
        // owner fields are (muisti::conversation::check_new_messages).
        if let Some(m) = doc.pointer_mut("/components/schemas/AppendMessages/properties/messages") {
            m["minItems"] = json!(1);
            m["maxItems"] = json!(muisti::facts::MAX_MESSAGES);
        }
        if let Some(r) = doc.pointer_mut("/components/schemas/NewMessage/properties/role") {
            apply(r, &json!({"pattern": OPEN_NAME_PATTERN}));
        }
        if let Some(n) = doc.pointer_mut("/components/schemas/NewMessage/properties/name") {
            apply(
                n,
                &json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1, "maxLength": 256}),
            );
        }
        if let Some(r) = doc.pointer_mut("/components/schemas/ExtractMessage/properties/role") {
            r["enum"] = json!(["user", "assistant", "system", "tool"]);
        }
        if let Some(n) = doc.pointer_mut("/components/schemas/ExtractMessage/properties/name") {
            apply(
                n,
                &json!({"pattern": NO_CONTROL_PATTERN, "minLength": 1, "maxLength": 256}),
            );
        }
        // A patch's content: absent or null keeps the memory's, never blank.
        if let Some(c) = doc.pointer_mut("/components/schemas/MemoryPatch/properties/content") {
            c["not"] = json!({"type": "string", "pattern": blank_pattern()});
        }
        // A recall's query is never blank (RecallRequest::validate).
        if let Some(q) = doc.pointer_mut("/components/schemas/RecallQuery/properties/query") {
            q["not"] = json!({"type": "string", "pattern": blank_pattern()});
        }
        // A manager's command is never blank.
        if let Some(c) = doc.pointer_mut("/components/schemas/ManageRequest/properties/command") {
            c["not"] = json!({"type": "string", "pattern": blank_pattern()});
        }
        // Every error code the server sends.
        if let Some(code) = doc.pointer_mut("/components/schemas/ErrorDetail/properties/code") {
            code["enum"] = json!(muisti_client::api::ERROR_CODES);
        }
        for (name, example) in examples() {
            if let Some(schema) = doc.pointer_mut(&format!("/components/schemas/{name}")) {
                schema["example"] = example;
            }
        }
        let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
            return;
        };
        // An empty body means the defaults.
        if let Some(body) = paths
            .get_mut("/v1/reindex")
            .and_then(|p| p.pointer_mut("/post/requestBody"))
        {
            body["required"] = json!(false);
        }
        // HEAD on a key: whether it exists, no body.
        if let Some(kv) = paths.get_mut("/v1/kv/{namespace}/{key}") {
            let params = kv.pointer("/get/parameters").cloned().unwrap_or(json!([]));
            kv["head"] = json!({
                "tags": ["kv"],
                "summary": "Whether a key holds a value",
                "operationId": "kv_has",
                "parameters": params,
                "responses": {
                    "200": {"description": "The key holds a value"},
                    "404": {"description": "No value at the key"},
                    "400": {"description": "Malformed request"},
                    "401": {"description": "No valid API key"},
                    "422": {"description": "Invalid namespace or key"}
                }
            });
        }
        // The proxy answers an OpenAI chat completion, or its stream of chunks.
        if let Some(ok) = paths
            .get_mut("/v1/chat/completions")
            .and_then(|p| p.pointer_mut("/post/responses/200"))
        {
            let description = ok["description"].clone();
            *ok = json!({
                "description": description,
                "content": {"application/json": {"schema": {"type": "object"}},
                    "text/event-stream": {"schema": {"type": "string"}}}
            });
        }
        // The stream is server-sent events, not a JSON object.
        if let Some(ok) = paths
            .get_mut("/v1/chat/stream")
            .and_then(|p| p.pointer_mut("/post/responses/200"))
        {
            let description = ok["description"].clone();
            *ok = json!({
                "description": description,
                "content": {"text/event-stream": {"schema": {"type": "string"}}}
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use muisti_client::api;
    use serde_json::Value;

    /// The document's blank text is exactly what the server's `trim` removes.
    #[test]
    fn the_blank_pattern_is_rusts_whitespace() {
        let listed = |c: char| {
            super::exact::WHITESPACE
                .iter()
                .any(|&(a, b)| (a..=b).contains(&c))
        };
        for c in (0..=0x10FFFF_u32).filter_map(char::from_u32) {
            assert_eq!(listed(c), c.is_whitespace(), "U+{:04X}", c as u32);
        }
    }

    fn parses<T: serde::de::DeserializeOwned>(v: &Value) -> Result<(), String> {
        serde_json::from_value::<T>(v.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Every example in the document is a body the server reads, and the document carries
    /// them and the error codes.
    #[test]
    fn examples_parse_as_their_wire_types() {
        let examples = super::exact::examples();
        for (name, example) in &examples {
            let parsed = match *name {
                "NewMemory" => parses::<api::NewMemory>(example),
                "NewMemories" => parses::<api::NewMemories>(example),
                "MemoryPatch" => parses::<api::MemoryPatch>(example),
                "RecallQuery" => parses::<api::RecallQuery>(example),
                "KvValue" => parses::<api::KvValue>(example),
                "NewKey" => parses::<api::NewKey>(example),
                "ReindexRequest" => parses::<api::ReindexRequest>(example),
                "ChatMessage" => parses::<api::ChatMessage>(example),
                "ExtractRequest" => parses::<api::ExtractRequest>(example),
                "ManageRequest" => parses::<api::ManageRequest>(example),
                "ErrorBody" => parses::<api::ErrorBody>(example),
                other => Err(format!("no wire type for {other}")),
            };
            assert_eq!(parsed, Ok(()), "{name}");
        }
        let doc: Value = serde_json::from_str(super::openapi_document()).expect("json");
        let schemas = &doc["components"]["schemas"];
        for (name, example) in &examples {
            assert_eq!(&schemas[name]["example"], example, "{name}");
        }
        assert_eq!(
            schemas["ErrorDetail"]["properties"]["code"]["enum"],
            serde_json::json!(api::ERROR_CODES)
        );
    }
}
