//! The hostile-input battery: property-based generation (proptest, a fixed seed) of requests
//! a careless or malicious client sends: any method, the API's paths with mangled segments
//! and query strings, wrong or missing content types and credentials, bodies that are random
//! bytes, JSON of every shape, or the API's own fields holding values of any type. Sent over
//! raw TCP for `MUISTI_HOSTILE_SECS` seconds (5 by default, 60 in CI). Every answer must be
//! an HTTP response; no 5xx but documented 503s; every error has the JSON error shape; the
//! server still answers at the end.

use std::{
    io::{Read, Write},
    time::{Duration, Instant},
};

use muisti_server::ConfigLayer;
use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner},
};
use serde_json::{Map, Value, json};

use crate::TestServer;

/// Route templates (`{}` is filled with a generated segment) and the methods they answer.
const PATHS: &[(&str, &[&str])] = &[
    ("/v1/memories", &["GET", "POST", "DELETE"]),
    ("/v1/memories/batch", &["POST"]),
    ("/v1/memories/{}", &["GET", "PATCH", "DELETE"]),
    ("/v1/memories/{}/similar", &["GET"]),
    ("/v1/recall", &["POST"]),
    ("/v1/kv/{}", &["GET", "DELETE"]),
    ("/v1/kv/{}/{}", &["GET", "PUT", "DELETE", "HEAD"]),
    ("/v1/stats", &["GET"]),
    ("/v1/purge", &["POST"]),
    ("/v1/reindex", &["POST"]),
    ("/v1/jobs", &["GET"]),
    ("/v1/jobs/{}", &["GET"]),
    ("/v1/analytics", &["GET"]),
    ("/v1/analytics/similarity", &["GET"]),
    ("/v1/admin/keys", &["GET", "POST"]),
    ("/v1/admin/keys/{}", &["DELETE"]),
    ("/v1/admin/snapshots", &["GET", "POST"]),
    ("/v1/admin/snapshots/{}/restore", &["POST"]),
    ("/v1/chat", &["POST"]),
    ("/v1/chat/stream", &["POST"]),
    ("/v1/chat/completions", &["POST"]),
    ("/v1/manage", &["POST"]),
    ("/v1/memories/extract", &["POST"]),
    ("/mcp", &["POST", "GET", "DELETE"]),
    ("/healthz", &["GET"]),
    ("/readyz", &["GET"]),
    ("/metrics", &["GET"]),
    ("/openapi.json", &["GET"]),
    ("/ui", &["GET", "POST"]),
    ("/ui/{}", &["GET"]),
    ("/ui/assets/{}", &["GET"]),
    ("/{}", &["GET"]),
    ("/v1/{}", &["GET", "POST"]),
];

/// Field names the API reads, so that generated objects reach its validators.
const FIELDS: &[&str] = &[
    "content",
    "messages",
    "role",
    "infer",
    "command",
    "yes",
    "key",
    "namespace",
    "user_id",
    "agent_id",
    "session_id",
    "category",
    "scope",
    "tags",
    "metadata",
    "importance",
    "confidence",
    "source",
    "ttl_seconds",
    "context",
    "valid_from",
    "valid_until",
    "memories",
    "query",
    "limit",
    "min_score",
    "mode",
    "explain",
    "filters",
    "value",
    "expected_version",
    "state",
    "tenant",
    "label",
    "admin",
    "operator",
    "force",
    "messages",
    "conversation_id",
    "jsonrpc",
    "method",
    "params",
    "id",
];

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9A-HJKMNP-TV-Z]{26}",
        "[a-zA-Z0-9_:.-]{1,40}",
        "[a-z]{1,8}",
        Just("..".to_owned()),
        Just("%2e%2e".to_owned()),
        Just("%00".to_owned()),
        Just("%ff%fe".to_owned()),
        "\\PC{0,20}".prop_map(|s| percent(&s)),
        (1usize..3000).prop_map(|n| "x".repeat(n)),
    ]
}

fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(json!(1e300)),
        Just(json!(-1)),
        Just(json!(0)),
        "\\PC{0,40}".prop_map(Value::String),
        (1usize..20_000).prop_map(|n| Value::String("y".repeat(n))),
        Just(json!("2026-11-30T12:00:00Z")),
        Just(json!("9999-12-31T23:59:59Z")),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("\\PC{0,8}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object of the API's own field names holding values of any type.
fn api_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(FIELDS), json_value()), 0..6).prop_map(|kv| {
        Value::Object(
            kv.into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<Map<_, _>>(),
        )
    })
}

fn body() -> impl Strategy<Value = Option<Vec<u8>>> {
    prop_oneof![
        Just(None),
        api_object().prop_map(|v| Some(v.to_string().into_bytes())),
        json_value().prop_map(|v| Some(v.to_string().into_bytes())),
        prop::collection::vec(any::<u8>(), 0..200).prop_map(Some),
        api_object().prop_map(|v| {
            // Truncated JSON.
            let mut t = v.to_string().into_bytes();
            t.truncate(t.len() / 2);
            Some(t)
        }),
    ]
}

#[derive(Debug, Clone)]
struct Hostile {
    method: String,
    target: String,
    content_type: Option<&'static str>,
    auth: u8,
    accept: Option<&'static str>,
    body: Option<Vec<u8>>,
}

fn hostile() -> impl Strategy<Value = Hostile> {
    let other_method = prop_oneof![
        4 => prop::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["OPTIONS", "TRACE", "CONNECT"]).prop_map(str::to_owned),
        1 => "[A-Z]{1,12}",
    ];
    let query = prop::collection::vec(
        (
            prop_oneof![
                prop::sample::select(FIELDS).prop_map(str::to_owned),
                Just("tag".to_owned()),
                Just("cursor".to_owned()),
                "[a-z_]{1,10}",
            ],
            segment(),
        ),
        0..4,
    );
    // Mostly a method the route answers, so that requests reach its validation.
    let route = (
        prop::sample::select(PATHS),
        any::<prop::sample::Index>(),
        0u8..4,
        other_method,
    )
        .prop_map(|((path, methods), i, pick, other)| {
            let method = if pick < 3 {
                methods[i.index(methods.len())].to_owned()
            } else {
                other
            };
            (path, method)
        });
    let target = (route, segment(), segment(), query).prop_map(|((path, method), a, b, query)| {
        let mut path = path.replacen("{}", &a, 1).replacen("{}", &b, 1);
        if !query.is_empty() {
            let q: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            path.push('?');
            path.push_str(&q.join("&"));
        }
        (method, path)
    });
    let content_type = prop::sample::select(vec![
        Some("application/json"),
        Some("application/json"),
        Some("application/json; charset=utf-8"),
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("nonsense"),
        None,
    ]);
    let accept = prop::sample::select(vec![
        None,
        Some("application/json, text/event-stream"),
        Some("text/event-stream"),
        Some("*/*"),
    ]);
    (target, content_type, 0u8..6, accept, body()).prop_map(
        |((method, target), content_type, auth, accept, body)| Hostile {
            method,
            target,
            content_type,
            auth,
            accept,
            body,
        },
    )
}

/// Sends one request over a fresh connection and reads the whole answer.
fn send(addr: &str, key: &str, h: &Hostile) -> Result<(u16, String, Vec<u8>), String> {
    let mut head = format!(
        "{} {} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n",
        h.method, h.target
    );
    match h.auth {
        0..=3 => head.push_str(&format!("authorization: Bearer {key}\r\n")),
        4 => head.push_str("authorization: Bearer muisti_not_a_real_key\r\n"),
        _ => {}
    }
    if let Some(ct) = h.content_type {
        head.push_str(&format!("content-type: {ct}\r\n"));
    }
    if let Some(a) = h.accept {
        head.push_str(&format!("accept: {a}\r\n"));
    }
    if h.target.starts_with("/mcp") {
        head.push_str("mcp-protocol-version: 2025-06-18\r\n");
    }
    let body = h.body.as_deref().unwrap_or_default();
    if h.body.is_some() {
        head.push_str(&format!("content-length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut c = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    c.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    // The server may answer (and close) before reading a body it refuses.
    let _ = c
        .write_all(head.as_bytes())
        .and_then(|()| c.write_all(body));
    let mut answer = Vec::new();
    let read = c.read_to_end(&mut answer);
    if answer.is_empty() {
        return Err(format!("no response ({read:?})"));
    }
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of head")?;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    let status: u16 = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line: {head}"))?;
    let mut body = answer[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Ok((status, head, body))
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..end])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < end + 2 + size {
            break;
        }
        out.extend_from_slice(&raw[end + 2..end + 2 + size]);
        raw = &raw[(end + 4 + size).min(raw.len())..];
    }
    out
}

/// What every answer must be.
fn judge(h: &Hostile, status: u16, head: &str, body: &[u8]) -> Result<(), String> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let code = json
        .as_ref()
        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
    if status >= 500 {
        let documented =
            status == 503 && matches!(code.as_deref(), Some("unavailable" | "timeout"));
        if !documented {
            return Err(format!("{status} {code:?}"));
        }
    }
    if status >= 400 && h.method != "HEAD" {
        let shaped = json
            .as_ref()
            .is_some_and(|v| v["error"]["code"].is_string() && v["error"]["message"].is_string());
        // JSON-RPC errors of MCP carry their own shape.
        let rpc = json.as_ref().is_some_and(|v| v["error"]["code"].is_i64());
        if !(shaped || rpc) {
            return Err(format!(
                "{status} without the error shape: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ));
        }
        if !head.contains("content-type: application/json") {
            return Err(format!("{status} not labelled JSON"));
        }
    }
    Ok(())
}

#[test]
fn hostile_requests_get_clear_answers_and_never_a_crash() {
    let secs: u64 = std::env::var("MUISTI_HOSTILE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let mut keys = Vec::new();
    let server = TestServer::start_with(ConfigLayer::default(), |ring| {
        keys.push(ring.create("acme", true, None).expect("key").key);
    });
    let addr = server.base.trim_start_matches("http://").to_owned();
    let key = keys[0].clone();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let statuses = std::sync::Mutex::new(std::collections::BTreeMap::<u16, u64>::new());
    let mut round = 0u64;
    while Instant::now() < deadline {
        // A fixed seed per round: a failure is reproduced by its round number.
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&round.to_le_bytes());
        let mut runner = TestRunner::new_with_rng(
            Config {
                cases: 64,
                failure_persistence: None,
                ..Config::default()
            },
            TestRng::from_seed(RngAlgorithm::ChaCha, &seed),
        );
        let result = runner.run(&hostile(), |h| {
            let (status, head, body) = send(&addr, &key, &h).map_err(TestCaseError::fail)?;
            *statuses.lock().expect("lock").entry(status).or_default() += 1;
            judge(&h, status, &head, &body)
                .map_err(|e| TestCaseError::fail(format!("{} {}: {e}", h.method, h.target)))
        });
        if let Err(e) = result {
            panic!("round {round}: {e}");
        }
        round += 1;
    }
    let health = crate::raw("GET", &server.url("/healthz"), &[], None);
    assert_eq!(health.status, 200, "the server still answers");
    let statuses = statuses.into_inner().expect("lock");
    let cases: u64 = statuses.values().sum();
    println!("hostile: {cases} requests in {secs} s, 0 failures; statuses {statuses:?}");
}
