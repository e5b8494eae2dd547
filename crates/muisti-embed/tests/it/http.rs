//! The OpenAI-compatible embedder against a scripted server speaking the real wire format.

use std::time::Duration;

use muisti_embed::{EmbedError, Embedder, HttpConfig, HttpEmbedder};
use serde_json::{Value, json};

use muisti_testkit::http::{Reply, Server};

/// An `/embeddings` answer for vectors given in the order of `indexes`.
fn answer(vectors: &[(usize, Vec<f32>)]) -> String {
    json!({
        "object": "list",
        "data": vectors.iter().map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v})).collect::<Vec<_>>(),
        "model": "test-embed",
        "usage": {"prompt_tokens": 3, "total_tokens": 3},
    })
    .to_string()
}

fn config(server: &Server) -> HttpConfig {
    let mut c = HttpConfig::new(server.base_url(), "test-embed");
    c.api_key = Some("sk-test".into());
    c.dimensions = Some(2);
    c.batch_size = 2;
    c.backoff = Duration::from_millis(10);
    c.timeout = Duration::from_secs(5);
    c
}

#[test]
fn batches_keep_order_and_send_the_real_request() {
    let server = Server::start(vec![
        Reply::json(200, answer(&[(0, vec![3.0, 4.0])])),
        // Answers may come in any order: `index` decides.
        Reply::json(200, answer(&[(1, vec![1.0, 0.0]), (0, vec![0.0, 2.0])])),
    ]);
    let e = HttpEmbedder::new(config(&server)).expect("builds");
    assert_eq!(e.id(), "openai:test-embed");
    let v = e.embed(&["first", "", "second", "third"]).expect("embeds");
    assert_eq!(
        v,
        vec![
            vec![0.6, 0.8],
            vec![0.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 0.0]
        ]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/embeddings");
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-test"));
    let body: Value = serde_json::from_str(&reqs[0].body).expect("json body");
    assert_eq!(body["model"], "test-embed");
    // Batches of two; the empty text is not sent (services reject it).
    assert_eq!(body["input"], json!(["first"]));
    let body: Value = serde_json::from_str(&reqs[1].body).expect("json body");
    assert_eq!(body["input"], json!(["second", "third"]));
}

#[test]
fn rate_limits_and_server_errors_are_retried() {
    let mut limited = Reply::json(429, r#"{"error":{"message":"slow down"}}"#);
    limited.headers.push(("Retry-After", "0".into()));
    let server = Server::start(vec![
        limited,
        Reply::json(503, "unavailable"),
        Reply::json(200, answer(&[(0, vec![1.0, 0.0])])),
    ]);
    let e = HttpEmbedder::new(config(&server)).expect("builds");
    assert_eq!(
        e.embed(&["x"]).expect("embeds after retries"),
        vec![vec![1.0, 0.0]]
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn persistent_failure_is_a_retryable_error_after_the_last_attempt() {
    let server = Server::start((0..4).map(|_| Reply::json(500, "boom")).collect());
    let e = HttpEmbedder::new(config(&server)).expect("builds");
    match e.embed(&["x"]) {
        Err(EmbedError::Service {
            retryable, reason, ..
        }) => {
            assert!(retryable);
            assert!(
                reason.contains("500") && reason.contains("4 attempts"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn a_refused_key_fails_at_once() {
    let server = Server::start(vec![Reply::json(401, r#"{"error":"bad key"}"#)]);
    let e = HttpEmbedder::new(config(&server)).expect("builds");
    match e.embed(&["x"]) {
        Err(EmbedError::Service {
            retryable, reason, ..
        }) => {
            assert!(!retryable);
            assert!(reason.contains("401"), "{reason}");
            assert!(!reason.contains("sk-test"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_slow_service_times_out_and_is_retried() {
    let mut slow = Reply::json(200, answer(&[(0, vec![1.0, 0.0])]));
    slow.delay = Duration::from_millis(800);
    let server = Server::start(vec![slow, Reply::json(200, answer(&[(0, vec![0.0, 1.0])]))]);
    let mut c = config(&server);
    c.timeout = Duration::from_millis(200);
    let e = HttpEmbedder::new(c).expect("builds");
    assert_eq!(
        e.embed(&["x"]).expect("second attempt"),
        vec![vec![0.0, 1.0]]
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn dimensions_are_learned_and_checked() {
    let server = Server::start(vec![
        Reply::json(200, answer(&[(0, vec![1.0, 0.0, 0.0])])),
        Reply::json(200, answer(&[(0, vec![1.0, 0.0])])),
        Reply::json(200, r#"{"unexpected": true}"#),
    ]);
    let mut c = config(&server);
    c.dimensions = None;
    let e = HttpEmbedder::new(c).expect("probes");
    assert_eq!(e.dimensions(), 3);
    assert!(matches!(
        e.embed(&["x"]),
        Err(EmbedError::Service {
            retryable: false,
            ..
        })
    ));
    assert!(matches!(
        e.embed(&["y"]),
        Err(EmbedError::Service {
            retryable: false,
            ..
        })
    ));
}
