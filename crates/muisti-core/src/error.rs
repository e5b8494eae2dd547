//! The one error type of the storage layer.

use std::fmt;

/// What went wrong, coarsely: enough for a caller to decide what to do (retry, report a
/// 4xx or a 5xx, fix the input) without parsing a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A namespace, key, field or request broke a rule; nothing was read or written.
    InvalidInput,
    /// A value is larger than the configured limit; nothing was written.
    TooLarge,
    /// The addressed record does not exist (or belongs to another tenant).
    NotFound,
    /// The write conflicts with the current state (for example a concurrent update).
    Conflict,
    /// Fields of a request contradict each other or the record they change (a validity
    /// window that ends before it starts); nothing was written, and retrying the same
    /// request fails the same way.
    ConflictingFields,
    /// Stored data could not be decoded; the message names where it lives.
    Corrupted,
    /// The backend cannot be reached now; retrying later may succeed.
    Unavailable,
    /// Any other failure reported by the backend.
    Backend,
    /// An agent-learned declarative entry waits for the user's confirmation; nothing was
    /// written (the error carries the proposal to confirm or reject).
    ConfirmationRequired,
    /// A model the engine asked (a fact extractor, a judge) could not be reached or never
    /// answered in the shape asked for; nothing was written. The message names the model.
    Model,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::ConflictingFields => "conflicting_fields",
            ErrorKind::Corrupted => "corrupted",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Backend => "backend",
            ErrorKind::ConfirmationRequired => "confirmation_required",
            ErrorKind::Model => "model",
        })
    }
}

impl ErrorKind {
    /// Whether the request itself failed (it broke a rule, or its record is gone or
    /// changed), nothing having been written for it, rather than the store: a batch
    /// ([`Store::update_many`](crate::Store::update_many)) goes on past such an error.
    pub fn is_of_the_request(self) -> bool {
        matches!(
            self,
            ErrorKind::InvalidInput
                | ErrorKind::TooLarge
                | ErrorKind::NotFound
                | ErrorKind::Conflict
                | ErrorKind::ConflictingFields
        )
    }
}

/// The error of every [`Store`](crate::Store) operation.
///
/// Messages never contain stored values or message text: only names, sizes and the rule
/// that was broken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A namespace or tenant name broke one of the naming rules.
    #[error("invalid {what} {name:?}: {rule}")]
    InvalidName {
        /// `namespace` or `tenant`.
        what: &'static str,
        /// The offending name (truncated to 120 characters).
        name: String,
        /// The rule it broke, in words.
        rule: &'static str,
    },
    /// A field of a request is invalid.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The field, for example `key` or `importance`.
        field: &'static str,
        /// Why it is invalid.
        reason: String,
    },
    /// A value exceeds the size limit.
    #[error("value too large: {size} bytes, the limit is {limit} bytes")]
    TooLarge {
        /// Serialized size of the rejected value.
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The addressed record does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The write conflicts with the current state.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A field contradicts another field of the request or the record it changes. Each
    /// field is valid alone, so a schema cannot say it; see ADR 0009.
    #[error("conflicting {field}: {reason}")]
    ConflictingFields {
        /// The field named in the message, for example `valid_until`.
        field: &'static str,
        /// What it contradicts.
        reason: String,
    },
    /// Stored data could not be decoded.
    #[error("corrupted data in {location}: {reason}")]
    Corrupted {
        /// Where the data lives (a file path, a key, a row id).
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A model the engine asked (a fact extractor, a judge) could not be reached or never
    /// answered in the shape asked for.
    #[error("model {model} failed: {reason}")]
    Model {
        /// The model, as its extractor or judge names it (`provider:model`).
        model: String,
        /// What went wrong.
        reason: String,
    },
    /// The backend cannot be reached.
    #[error("store unavailable at {target}: {reason}")]
    Unavailable {
        /// The address, with any password removed.
        target: String,
        /// The underlying reason.
        reason: String,
    },
    /// An agent-learned declarative write needs the user's confirmation: the entry is not
    /// stored; the proposal is, until it expires, to be confirmed or rejected by its id.
    #[error(
        "confirmation required: an agent-learned declarative entry waits for the user's \
         confirmation (proposal {})",
        .0.id
    )]
    ConfirmationRequired(Box<crate::Proposal>),
    /// Any other backend failure.
    #[error("{backend}: {reason}")]
    Backend {
        /// The backend's name (`sqlite`, `redis`, `file`, ...).
        backend: &'static str,
        /// The underlying reason.
        reason: String,
    },
}

impl Error {
    /// The coarse kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidName { .. } | Error::InvalidInput { .. } => ErrorKind::InvalidInput,
            Error::TooLarge { .. } => ErrorKind::TooLarge,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Conflict(_) => ErrorKind::Conflict,
            Error::ConflictingFields { .. } => ErrorKind::ConflictingFields,
            Error::Corrupted { .. } => ErrorKind::Corrupted,
            Error::Unavailable { .. } => ErrorKind::Unavailable,
            Error::Backend { .. } => ErrorKind::Backend,
            Error::ConfirmationRequired(_) => ErrorKind::ConfirmationRequired,
            Error::Model { .. } => ErrorKind::Model,
        }
    }

    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::ConflictingFields`].
    pub fn conflicting(field: &'static str, reason: impl Into<String>) -> Self {
        Error::ConflictingFields {
            field,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::Backend`].
    pub fn backend(backend: &'static str, reason: impl fmt::Display) -> Self {
        Error::Backend {
            backend,
            reason: reason.to_string(),
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
