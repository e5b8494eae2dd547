//! The HTTP server end to end: a real server on a loopback port over a real store, called
//! through the typed client and raw HTTP.

#![allow(missing_docs)]

mod adversarial;
mod chat;
mod cross_tenant;
mod dashboard;
mod hostile;
mod memorize;
mod proxy;
mod rest;
mod tenancy;

use std::{sync::Arc, time::Duration};

use muisti::Engine;
use muisti_client::Client;
use muisti_server::{ConfigLayer, KeyRing, Server, ServerConfig};

/// A server running on its own runtime until dropped.
pub struct TestServer {
    pub base: String,
    pub engine: Engine,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    runtime: Option<tokio::runtime::Runtime>,
    _dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// A server over a fresh SQLite store with `layer`'s settings (listen is forced to a
    /// free loopback port); `before` runs on the store before the server starts.
    pub fn start_with(layer: ConfigLayer, before: impl FnOnce(&KeyRing)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}/muisti.db", dir.path().display());
        let store = muisti::open_store(&url).expect("open store");
        Self::start_on(store, layer, before, Some(dir))
    }

    pub fn start_on(
        store: Arc<dyn muisti::Store>,
        layer: ConfigLayer,
        before: impl FnOnce(&KeyRing),
        dir: Option<tempfile::TempDir>,
    ) -> Self {
        before(&KeyRing::new(store.clone()));
        let engine = Engine::builder(store).build().expect("engine");
        Self::serve(engine, layer, dir)
    }

    /// A server over `engine` with `layer`'s settings (listen forced as above).
    pub fn serve(engine: Engine, layer: ConfigLayer, dir: Option<tempfile::TempDir>) -> Self {
        let config = ServerConfig::resolve(
            ConfigLayer {
                listen: Some("127.0.0.1:0".into()),
                ..ConfigLayer::default()
            }
            .over(layer),
        )
        .expect("config");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let server = runtime
            .block_on(Server::bind(engine.clone(), config))
            .expect("bind");
        let addr = server.local_addr().expect("addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(server.run(async move {
            let _ = rx.await;
        }));
        Self {
            base: format!("http://{addr}"),
            engine,
            stop: Some(tx),
            runtime: Some(runtime),
            _dir: dir,
        }
    }

    /// An open server over a fresh SQLite store whose engine reads memories into the graph
    /// with the offline extractor and keeps the access log with queries.
    pub fn with_offline_graph() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}/muisti.db", dir.path().display());
        let store = muisti::open_store(&url).expect("open store");
        let engine = Engine::builder(store)
            .graph_extraction(muisti::graph::GraphExtraction::Offline)
            .access_log(muisti::AccessLog {
                mode: muisti::AccessLogMode::Queries,
                retention_days: 30,
            })
            .build()
            .expect("engine");
        Self::serve(engine, ConfigLayer::default(), Some(dir))
    }

    /// A server with no keys on loopback: open mode.
    pub fn open() -> Self {
        Self::start_with(ConfigLayer::default(), |_| {})
    }

    pub fn client(&self, key: Option<&str>) -> Client {
        Client::new(&self.base)
            .expect("client")
            .with_key(key.map(str::to_owned))
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

/// A raw HTTP answer.
pub struct Raw {
    pub status: u16,
    pub body: serde_json::Value,
    pub headers: Vec<(String, String)>,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `error.code` of an error body (and checks the shape).
    pub fn code(&self) -> &str {
        let e = &self.body["error"];
        assert!(e["message"].is_string(), "error shape: {}", self.body);
        e["code"].as_str().unwrap_or("<no code>")
    }
}

/// Sends a request with any method, headers and body, and reads whatever comes back.
pub fn raw(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&str>) -> Raw {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .allow_non_standard_methods(true)
        .build()
        .into();
    let mut b = axum::http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let result = match body {
        Some(body) => agent.run(b.body(body.to_owned()).expect("request")),
        None => agent.run(b.body(()).expect("request")),
    };
    let mut resp = result.expect("the server answers");
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    Raw {
        status,
        body,
        headers,
    }
}

pub const JSON: (&str, &str) = ("content-type", "application/json");
