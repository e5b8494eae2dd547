//! LLM providers: the OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM,
//! llama.cpp server, LM Studio) and the Anthropic Messages API, with streaming (server-sent
//! events), tool calling, retries with back-off on 429 and 5xx, and timeouts.

mod anthropic;
mod openai;
mod sse;
mod transport;
mod upstream;

use std::{fmt, str::FromStr, sync::Arc, time::Duration};

pub use anthropic::Anthropic;
pub use openai::OpenAi;
pub use upstream::{Streamed, Upstream, content_text};

use crate::{AgentError, ChatRequest, ChatResponse, Result};

/// A chat model behind an API. Calls block the calling thread (run them on a blocking
/// thread in async code), like the [`Store`](muisti::Store) trait.
pub trait Provider: Send + Sync {
    /// `openai` or `anthropic`.
    fn name(&self) -> &'static str;

    /// The model requests are sent to.
    fn model(&self) -> &str;

    /// One request, answered whole.
    fn chat(&self, request: &ChatRequest) -> Result<ChatResponse>;

    /// One request, answered as a stream: `on_text` gets each piece of text as it arrives,
    /// and the whole answer (text, tool calls, usage) is returned at the end.
    fn chat_stream(
        &self,
        request: &ChatRequest,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<ChatResponse>;
}

/// Which wire protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// `POST {base}/chat/completions`.
    OpenAi,
    /// `POST {base}/messages`.
    Anthropic,
}

impl ProviderKind {
    /// `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    /// The public API's base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        }
    }

    /// Environment variables the API key is read from, first found wins.
    pub fn key_env(self) -> &'static [&'static str] {
        match self {
            ProviderKind::OpenAi => &["MUISTI_LLM_API_KEY", "OPENAI_API_KEY"],
            ProviderKind::Anthropic => &["MUISTI_LLM_API_KEY", "ANTHROPIC_API_KEY"],
        }
    }

    fn key_env_text(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "MUISTI_LLM_API_KEY or OPENAI_API_KEY",
            ProviderKind::Anthropic => "MUISTI_LLM_API_KEY or ANTHROPIC_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProviderKind {
    type Err = AgentError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" | "ollama" | "vllm" | "llamacpp" | "lmstudio" => {
                Ok(ProviderKind::OpenAi)
            }
            "anthropic" | "claude" => Ok(ProviderKind::Anthropic),
            _ => Err(AgentError::invalid(
                "provider",
                format!("{s:?} is not a provider: use openai or anthropic"),
            )),
        }
    }
}

/// How to reach a provider.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The wire protocol.
    pub kind: ProviderKind,
    /// API base, for example `http://127.0.0.1:11434/v1` for Ollama.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key; `None` sends none (local servers).
    pub api_key: Option<String>,
    /// Limit on one call answered whole, and on the start of a streamed answer.
    pub timeout: Duration,
    /// Limit on the whole body of a streamed answer.
    pub stream_timeout: Duration,
    /// Attempts per call (the first included) on 429, 5xx, timeouts and network errors.
    pub max_attempts: u32,
    /// First back-off; doubled on each retry, or taken from `Retry-After` (at most 60 s).
    pub backoff: Duration,
    /// Most tokens per answer when a request does not say (Anthropic requires a value).
    pub max_tokens: u32,
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl ProviderConfig {
    /// Defaults for `model` of `kind`: the public base URL, the API key from the
    /// environment ([`ProviderKind::key_env`]), a 120 s timeout (600 s for a whole streamed
    /// answer), 3 attempts starting at 500 ms back-off, 1,024 tokens per answer.
    pub fn new(kind: ProviderKind, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: kind.default_base_url().to_owned(),
            model: model.into(),
            api_key: kind
                .key_env()
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|k| !k.is_empty())),
            timeout: Duration::from_secs(120),
            stream_timeout: Duration::from_secs(600),
            max_attempts: 3,
            backoff: Duration::from_millis(500),
            max_tokens: 1024,
        }
    }

    /// The same with another base URL.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The same with an explicit API key (or none).
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// The provider this config describes.
    pub fn connect(&self) -> Result<Arc<dyn Provider>> {
        if self.model.trim().is_empty() {
            return Err(AgentError::invalid("model", "must not be empty"));
        }
        let url = self.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(AgentError::invalid(
                "base_url",
                format!("{url:?} is not an http:// or https:// URL"),
            ));
        }
        if self.max_attempts == 0 {
            return Err(AgentError::invalid("max_attempts", "must be at least 1"));
        }
        Ok(match self.kind {
            ProviderKind::OpenAi => Arc::new(OpenAi::new(self.clone())),
            ProviderKind::Anthropic => Arc::new(Anthropic::new(self.clone())),
        })
    }
}
