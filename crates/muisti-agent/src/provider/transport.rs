//! One POST with retries, shared by the providers.

use std::{
    io::BufReader,
    time::{Duration, Instant},
};

use serde_json::Value;
use tracing::{debug, warn};

use super::{ProviderConfig, ProviderKind};
use crate::{AgentError, Result};

/// The response body, read as a stream.
pub(crate) type BodyReader = BufReader<ureq::BodyReader<'static>>;

/// An HTTP client bound to one endpoint of one provider.
pub(crate) struct Transport {
    pub kind: ProviderKind,
    pub endpoint: String,
    pub config: ProviderConfig,
    headers: Vec<(&'static str, String)>,
    agent: ureq::Agent,
}

impl Transport {
    pub fn new(config: ProviderConfig, path: &str, headers: Vec<(&'static str, String)>) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(config.timeout.min(Duration::from_secs(10))))
            .http_status_as_error(false)
            .build()
            .into();
        Self {
            kind: config.kind,
            endpoint: format!("{}/{path}", config.base_url.trim().trim_end_matches('/')),
            config,
            headers,
            agent,
        }
    }

    pub fn unavailable(&self, reason: impl Into<String>) -> AgentError {
        AgentError::Unavailable {
            provider: self.kind.as_str(),
            endpoint: self.endpoint.clone(),
            reason: reason.into(),
        }
    }

    pub fn protocol(&self, reason: impl Into<String>) -> AgentError {
        AgentError::Provider {
            provider: self.kind.as_str(),
            status: None,
            reason: reason.into(),
        }
    }

    /// Posts `body`, retrying 429, 408, 5xx, timeouts and network errors with back-off.
    /// Returns the body of the first 2xx answer as a reader; any other status becomes a
    /// typed error (`context_length` decides whether a 400 means the prompt was too long).
    /// A whole answer must arrive within the config's `timeout`; a streamed one must start
    /// within it and end within `stream_timeout`.
    pub fn post(
        &self,
        body: &Value,
        stream: bool,
        context_length: fn(&str) -> bool,
    ) -> Result<BodyReader> {
        let body = body.to_string();
        let provider = self.kind.as_str();
        let policy = muisti::Backoff {
            max_attempts: self.config.max_attempts,
            first: self.config.backoff,
        };
        // What a retried attempt leaves: its reason and whether it was a rate limit.
        type Last = (String, bool);
        muisti::retry(
            policy,
            |attempt| -> muisti::Attempt<BodyReader, AgentError, Last> {
                let started = Instant::now();
                let config = self.agent.post(&self.endpoint).config();
                let config = if stream {
                    config
                        .timeout_recv_response(Some(self.config.timeout))
                        .timeout_recv_body(Some(self.config.stream_timeout))
                } else {
                    config.timeout_global(Some(self.config.timeout))
                };
                let mut req = config.build().header("Content-Type", "application/json");
                for (k, v) in &self.headers {
                    req = req.header(*k, v);
                }
                let mut resp = match req.send(body.as_str()) {
                    Ok(resp) => resp,
                    Err(e) => {
                        return muisti::Attempt::Retry {
                            last: (
                                format!("{e} after {} ms", started.elapsed().as_millis()),
                                false,
                            ),
                            after: None,
                        };
                    }
                };
                let status = resp.status().as_u16();
                if (200..300).contains(&status) {
                    debug!(provider, status, attempt, "provider answered");
                    return muisti::Attempt::Done(BufReader::new(resp.into_body().into_reader()));
                }
                let after = resp
                    .headers()
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok())
                    .and_then(muisti::retry_after);
                let text = resp
                    .body_mut()
                    .with_config()
                    .limit(64 * 1024)
                    .read_to_string()
                    .unwrap_or_default();
                let code = error_code(&text);
                match status {
                    401 | 403 => muisti::Attempt::Failed(AgentError::Auth {
                        provider,
                        status,
                        env: self.kind.key_env_text(),
                    }),
                    429 => muisti::Attempt::Retry {
                        last: (format!("HTTP 429{code}"), true),
                        after,
                    },
                    408 | 500..=599 => muisti::Attempt::Retry {
                        last: (format!("HTTP {status}{code}"), false),
                        after,
                    },
                    _ if context_length(&error_message(&text).to_ascii_lowercase()) => {
                        muisti::Attempt::Failed(AgentError::ContextLength {
                            provider,
                            detail: format!("HTTP {status}{code}"),
                        })
                    }
                    _ => muisti::Attempt::Failed(AgentError::Provider {
                        provider,
                        status: Some(status),
                        reason: format!("HTTP {status}{code}"),
                    }),
                }
            },
            |attempt, wait, (reason, _)| {
                warn!(provider, attempt, wait_ms = wait.as_millis() as u64, reason = %reason, "provider call failed; retrying");
            },
            |attempts, (last, rate_limited), retry_after| {
                if rate_limited {
                    AgentError::RateLimited {
                        provider,
                        attempts,
                        retry_after,
                    }
                } else {
                    self.unavailable(format!("{last} (gave up after {attempts} attempts)"))
                }
            },
        )
    }
}

/// The provider's error code from an error body (`error.type`, `error.code` or `type`),
/// as ` (code)`, if it is a short identifier; nothing else of the body is repeated in an
/// error: some servers echo the request, which holds the message and the injected memory.
fn error_code(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let code = parsed.as_ref().and_then(|v| {
        [
            v.pointer("/error/type"),
            v.pointer("/error/code"),
            v.get("type"),
        ]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|c| {
            !c.is_empty()
                && c.len() <= 64
                && c.chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-' || ch == '.')
        })
    });
    code.map(|c| format!(" ({c})")).unwrap_or_default()
}

/// The provider's own explanation from an error body (`error.message`, `message` or an
/// `error` string), read only to recognise a context-length error: it is never put into an
/// error (see [`error_code`]).
fn error_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let found = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(Value::as_str)
    });
    match found.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => d.chars().take(300).collect(),
        None if text.trim().is_empty() => "no detail".to_owned(),
        None => format!("no error message in a body of {} bytes", text.len()),
    }
}

/// Reads a whole (non-streamed) JSON answer.
pub(crate) fn read_json(t: &Transport, mut reader: BodyReader) -> Result<Value> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut reader, &mut text)
        .map_err(|e| t.unavailable(format!("reading the answer: {e}")))?;
    serde_json::from_str(&text).map_err(|e| t.protocol(format!("the answer is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::{error_code, error_message};

    #[test]
    fn only_a_short_error_code_reaches_an_error() {
        assert_eq!(
            error_code(
                r#"{"error":{"message":"you said: my secret","type":"invalid_request_error"}}"#
            ),
            " (invalid_request_error)"
        );
        assert_eq!(
            error_code(r#"{"type":"error","error":{"type":"overloaded_error"}}"#),
            " (overloaded_error)"
        );
        assert_eq!(error_code(r#"{"error":{"type":"my secret message"}}"#), "");
        assert_eq!(error_code("echo: my secret message"), "");
    }

    #[test]
    fn error_message_reads_each_dialect() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(
            error_message("echo: my secret message"),
            "no error message in a body of 23 bytes"
        );
        assert_eq!(error_message(""), "no detail");
    }
}
