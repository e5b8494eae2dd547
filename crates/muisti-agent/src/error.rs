//! The agent's error type.

use std::{fmt, time::Duration};

/// What went wrong, coarsely: enough to decide whether to retry, report a 4xx or a 5xx, or
/// fix the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AgentErrorKind {
    /// The provider refused the API key.
    Auth,
    /// The provider is rate limiting us and retries did not help.
    RateLimited,
    /// The prompt does not fit the model's context window.
    ContextLength,
    /// The provider could not be reached, timed out or kept failing.
    Unavailable,
    /// The provider rejected the request or answered something we could not read.
    Provider,
    /// A guard blocked the message.
    Blocked,
    /// A conversation or run does not exist.
    NotFound,
    /// A request or setting is invalid.
    InvalidInput,
    /// The tool loop did not finish within its step limit.
    StepLimit,
    /// The memory store failed.
    Memory,
}

impl fmt::Display for AgentErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AgentErrorKind::Auth => "auth",
            AgentErrorKind::RateLimited => "rate_limited",
            AgentErrorKind::ContextLength => "context_length",
            AgentErrorKind::Unavailable => "unavailable",
            AgentErrorKind::Provider => "provider",
            AgentErrorKind::Blocked => "blocked",
            AgentErrorKind::NotFound => "not_found",
            AgentErrorKind::InvalidInput => "invalid_input",
            AgentErrorKind::StepLimit => "step_limit",
            AgentErrorKind::Memory => "memory",
        })
    }
}

/// Which text a guard looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardTarget {
    /// The user's message.
    Message,
    /// The memory block that recall would inject.
    Memory,
}

impl fmt::Display for GuardTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardTarget::Message => "user message",
            GuardTarget::Memory => "injected memory",
        })
    }
}

/// The error of every agent operation. Messages name providers, statuses, guards and ids,
/// never the text of a message or of a stored value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The provider refused the API key (HTTP 401 or 403).
    #[error("{provider}: the API key was refused (HTTP {status}); set it with {env}")]
    Auth {
        /// `openai` or `anthropic`.
        provider: &'static str,
        /// 401 or 403.
        status: u16,
        /// The environment variables the key is read from.
        env: &'static str,
    },
    /// HTTP 429 on every attempt.
    #[error("{provider}: rate limited after {attempts} attempts{}", retry_hint(*.retry_after))]
    RateLimited {
        /// The provider.
        provider: &'static str,
        /// Attempts made.
        attempts: u32,
        /// What the last `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    /// The prompt is longer than the model's context window.
    #[error("{provider}: the prompt does not fit the model's context window: {detail}")]
    ContextLength {
        /// The provider.
        provider: &'static str,
        /// The provider's explanation (it names token counts, not text).
        detail: String,
    },
    /// The provider could not be reached, timed out, or answered 5xx on every attempt.
    #[error("{provider} unavailable at {endpoint}: {reason}")]
    Unavailable {
        /// The provider.
        provider: &'static str,
        /// The URL called.
        endpoint: String,
        /// What happened on the last attempt.
        reason: String,
    },
    /// The provider rejected the request (4xx) or sent something we could not read.
    #[error("{provider}: {reason}")]
    Provider {
        /// The provider.
        provider: &'static str,
        /// HTTP status, when there was one.
        status: Option<u16>,
        /// What went wrong.
        reason: String,
    },
    /// A guard matched. The error names the guard and where it matched, never the text.
    #[error("blocked by guard {guard:?} in the {target}")]
    Blocked {
        /// The guard's name.
        guard: String,
        /// Which text it matched.
        target: GuardTarget,
    },
    /// No conversation or run has this id.
    #[error("no {what} with id {id}")]
    NotFound {
        /// `conversation` or `run`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A request or setting is invalid.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// What is invalid.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// The model kept calling tools.
    #[error("the model was still calling tools after {steps} steps")]
    StepLimit {
        /// The limit.
        steps: usize,
    },
    /// The memory store failed.
    #[error("memory: {0}")]
    Memory(#[from] muisti::Error),
}

fn retry_hint(after: Option<Duration>) -> String {
    after.map_or_else(String::new, |d| {
        format!("; the provider asked to wait {:.1} s", d.as_secs_f64())
    })
}

impl AgentError {
    /// The coarse kind.
    pub fn kind(&self) -> AgentErrorKind {
        match self {
            AgentError::Auth { .. } => AgentErrorKind::Auth,
            AgentError::RateLimited { .. } => AgentErrorKind::RateLimited,
            AgentError::ContextLength { .. } => AgentErrorKind::ContextLength,
            AgentError::Unavailable { .. } => AgentErrorKind::Unavailable,
            AgentError::Provider { .. } => AgentErrorKind::Provider,
            AgentError::Blocked { .. } => AgentErrorKind::Blocked,
            AgentError::NotFound { .. } => AgentErrorKind::NotFound,
            AgentError::InvalidInput { .. } => AgentErrorKind::InvalidInput,
            AgentError::StepLimit { .. } => AgentErrorKind::StepLimit,
            AgentError::Memory(e) => match e.kind() {
                muisti::ErrorKind::InvalidInput
                | muisti::ErrorKind::TooLarge
                | muisti::ErrorKind::ConflictingFields => AgentErrorKind::InvalidInput,
                muisti::ErrorKind::NotFound => AgentErrorKind::NotFound,
                _ => AgentErrorKind::Memory,
            },
        }
    }

    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind(),
            AgentErrorKind::RateLimited | AgentErrorKind::Unavailable
        ) || matches!(self, AgentError::Memory(e) if e.kind() == muisti::ErrorKind::Unavailable)
    }

    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        AgentError::InvalidInput {
            field,
            reason: reason.into(),
        }
    }
}

/// `Result` with [`AgentError`].
pub type Result<T, E = AgentError> = std::result::Result<T, E>;
