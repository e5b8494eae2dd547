//! Embeddings from an OpenAI-compatible HTTP service (`POST {base}/embeddings`): OpenAI,
//! Ollama, vLLM, LM Studio, and Voyage-compatible gateways.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use crate::{
    EmbedError, Embedder,
    retry::{Attempt, Backoff, retry, retry_after},
};

/// Settings of an [`HttpEmbedder`].
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The API base, for example `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// Vector length; when `None`, learned from one request at construction.
    pub dimensions: Option<usize>,
    /// Ask the service for this many dimensions (`dimensions` request field; models that
    /// support shortening).
    pub request_dimensions: bool,
    /// Texts per request.
    pub batch_size: usize,
    /// Attempts per request (the first included) on 429, 5xx and network errors.
    pub max_attempts: u32,
    /// First back-off; doubled on each retry, or taken from `Retry-After`.
    pub backoff: Duration,
    /// Timeout of one request.
    pub timeout: Duration,
}

impl HttpConfig {
    /// Defaults for `model` at `base_url`: batches of 64, 4 attempts, 30 s timeout, the key
    /// from `MUISTI_EMBED_API_KEY` or `OPENAI_API_KEY`.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: std::env::var("MUISTI_EMBED_API_KEY")
                .or_else(|_| std::env::var("OPENAI_API_KEY"))
                .ok()
                .filter(|k| !k.is_empty()),
            dimensions: None,
            request_dimensions: false,
            batch_size: 64,
            max_attempts: 4,
            backoff: Duration::from_millis(250),
            timeout: Duration::from_secs(30),
        }
    }
}

/// An embedder that calls an OpenAI-compatible `/embeddings` endpoint.
pub struct HttpEmbedder {
    config: HttpConfig,
    id: String,
    dimensions: usize,
    endpoint: String,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl HttpEmbedder {
    /// An embedder for `config`; asks the service once for the vector length unless
    /// `config.dimensions` is set.
    pub fn new(config: HttpConfig) -> Result<Self, EmbedError> {
        let endpoint = format!("{}/embeddings", config.base_url.trim_end_matches('/'));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut e = Self {
            id: format!("openai:{}", config.model),
            dimensions: config.dimensions.unwrap_or(0),
            config,
            endpoint,
            agent,
        };
        if e.dimensions == 0 {
            let probe = e.request(&["dimension probe"])?;
            e.dimensions = probe.first().map_or(0, Vec::len);
            if e.dimensions == 0 {
                return Err(e.fail("the service returned an empty vector", false));
            }
        }
        if e.config.request_dimensions {
            e.id = format!("openai:{}@{}", e.config.model, e.dimensions);
        }
        Ok(e)
    }

    fn fail(&self, reason: impl Into<String>, retryable: bool) -> EmbedError {
        EmbedError::Service {
            endpoint: self.endpoint.clone(),
            reason: reason.into(),
            retryable,
        }
    }

    /// One batch, with retries.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = json!({
            "model": self.config.model,
            "input": texts,
            "encoding_format": "float",
        });
        if self.config.request_dimensions && self.dimensions > 0 {
            body["dimensions"] = json!(self.dimensions);
        }
        let body = body.to_string();
        let policy = Backoff {
            max_attempts: self.config.max_attempts,
            first: self.config.backoff,
        };
        retry(
            policy,
            |_| {
                let started = Instant::now();
                let mut req = self
                    .agent
                    .post(&self.endpoint)
                    .header("Content-Type", "application/json");
                if let Some(key) = &self.config.api_key {
                    req = req.header("Authorization", &format!("Bearer {key}"));
                }
                let mut resp = match req.send(body.as_str()) {
                    Ok(resp) => resp,
                    Err(e) => {
                        return Attempt::Retry {
                            last: format!("{e} after {:?}", started.elapsed()),
                            after: None,
                        };
                    }
                };
                let status = resp.status().as_u16();
                let after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(retry_after);
                let text = resp.body_mut().read_to_string();
                match (status, text) {
                    (200..=299, Ok(text)) => match self.parse(&text, texts.len()) {
                        Ok(v) => Attempt::Done(v),
                        Err(e) => Attempt::Failed(e),
                    },
                    (200..=299, Err(e)) => Attempt::Retry {
                        last: format!("reading the response: {e}"),
                        after: None,
                    },
                    (401 | 403, _) => Attempt::Failed(
                        self.fail(format!("HTTP {status}: the API key was refused"), false),
                    ),
                    (429 | 500..=599, _) => Attempt::Retry {
                        last: format!("HTTP {status}"),
                        after,
                    },
                    // The body is not quoted: it can echo the text sent, which is stored data.
                    _ => Attempt::Failed(self.fail(format!("HTTP {status}"), false)),
                }
            },
            |_, _, _| {},
            |n, last, _| self.fail(format!("{last} (gave up after {n} attempts)"), true),
        )
    }

    fn parse(&self, text: &str, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut resp: Response = serde_json::from_str(text)
            .map_err(|e| self.fail(format!("unexpected response: {e}"), false))?;
        if resp.data.len() != expected {
            return Err(self.fail(
                format!("{} vectors for {expected} texts", resp.data.len()),
                false,
            ));
        }
        resp.data.sort_by_key(|i| i.index.unwrap_or(0));
        resp.data
            .into_iter()
            .map(|item| {
                let mut v = item.embedding;
                if self.dimensions > 0 && v.len() != self.dimensions {
                    return Err(self.fail(
                        format!(
                            "a vector of {} dimensions, expected {}",
                            v.len(),
                            self.dimensions
                        ),
                        false,
                    ));
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|x| *x /= norm);
                }
                Ok(v)
            })
            .collect()
    }
}

impl Embedder for HttpEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.batch_size.max(1)) {
            // Services reject empty strings; they embed to the zero vector.
            let sent: Vec<&str> = chunk
                .iter()
                .copied()
                .filter(|t| !t.trim().is_empty())
                .collect();
            let mut got = if sent.is_empty() {
                Vec::new()
            } else {
                self.request(&sent)?
            }
            .into_iter();
            for t in chunk {
                if t.trim().is_empty() {
                    out.push(vec![0.0; self.dimensions]);
                } else {
                    out.push(
                        got.next()
                            .ok_or_else(|| self.fail("too few vectors", false))?,
                    );
                }
            }
        }
        Ok(out)
    }
}
