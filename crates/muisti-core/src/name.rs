//! Validated names: namespaces, tenants and keys.
//!
//! A value of these types has passed its rules, so a store that receives one never has to
//! check again, and an invalid name can never reach storage.

use std::{borrow::Borrow, fmt, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Longest namespace or tenant name, in characters.
pub const MAX_NAME_CHARS: usize = 100;
/// Longest key, in characters.
pub const MAX_KEY_CHARS: usize = 512;

fn truncated(s: &str) -> String {
    s.chars().take(120).collect()
}

/// Checks the naming rules shared by namespaces and tenants.
///
/// A name is non-empty, at most 100 characters, carries no NUL, no `..`, no `/` or `\`, and
/// only `a-z A-Z 0-9 _ - . :`.
pub fn check_name(what: &'static str, name: &str) -> Result<()> {
    let rule = if name.is_empty() {
        Some("must not be empty")
    } else if name.chars().count() > MAX_NAME_CHARS {
        Some("must be at most 100 characters")
    } else if name.contains('\0') {
        Some("must not contain a NUL byte")
    } else if name.contains("..") {
        Some("must not contain '..'")
    } else if name.contains('/') || name.contains('\\') {
        Some("must not contain '/' or '\\'")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    {
        Some("may only contain a-z A-Z 0-9 _ - . :")
    } else {
        None
    };
    match rule {
        None => Ok(()),
        Some(rule) => Err(Error::InvalidName {
            what,
            name: truncated(name),
            rule,
        }),
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $what:literal, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `s` and wraps it.
            pub fn new(s: impl Into<String>) -> Result<Self> {
                let s = s.into();
                $check($what, &s)?;
                Ok(Self(s))
            }

            /// The name as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(s: String) -> Result<Self> {
                Self::new(s)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = Error;
            fn try_from(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}

name_type!(
    /// A namespace: the unit of key uniqueness and of `flush`, for example `default`,
    /// `conversations` or `user:42`.
    ///
    /// Names that differ only in `.`, `:` or `_` are different namespaces on every backend.
    Namespace,
    "namespace",
    check_name
);

name_type!(
    /// A tenant: every read, write, search and delete is confined to one. Follows the
    /// namespace rules.
    Tenant,
    "tenant",
    check_name
);

fn check_key(_what: &'static str, key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("key", "must not be empty"));
    }
    if key.chars().count() > MAX_KEY_CHARS {
        return Err(Error::invalid("key", "must be at most 512 characters"));
    }
    if key.chars().any(char::is_control) {
        return Err(Error::invalid(
            "key",
            "must not contain control characters (NUL, newline, ...)",
        ));
    }
    Ok(())
}

name_type!(
    /// A key, unique within its namespace: non-empty, at most 512 characters, no control
    /// characters. Any other Unicode text is allowed.
    Key,
    "key",
    check_key
);

impl Key {
    /// The key of a record stored without one: its id (26 ASCII characters, always valid).
    pub fn from_id(id: crate::MemoryId) -> Self {
        Self(id.to_string())
    }
}

/// What the names of the engine's own namespaces start with (its graph, histories,
/// proposals, queues): reserved, so no client writes there.
pub const RESERVED_PREFIX: &str = "_muisti.";

/// Whether a namespace name is one of the engine's own ([`RESERVED_PREFIX`]): the one rule
/// the engine and every face of the API call.
pub fn is_reserved(namespace: &str) -> bool {
    namespace.starts_with(RESERVED_PREFIX)
}

/// What the names of namespaces of an application's own state start with (a framework's
/// checkpoints, say): key-value records that are not memories, so statistics count them
/// apart. Any client may write there.
pub const STATE_PREFIX: &str = "_state.";

/// Whether a namespace holds an application's own state ([`STATE_PREFIX`]): the one rule
/// statistics and the dashboard call.
pub fn is_state(namespace: &str) -> bool {
    namespace.starts_with(STATE_PREFIX)
}

impl Namespace {
    /// Whether it holds an application's own state ([`is_state`]).
    pub fn is_state(&self) -> bool {
        is_state(&self.0)
    }

    /// The namespace recall reads and the CLI writes to by default.
    pub fn default_ns() -> Self {
        Self("default".to_owned())
    }

    /// Whether it is one of the engine's own ([`is_reserved`]).
    pub fn is_reserved(&self) -> bool {
        is_reserved(&self.0)
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Self::default_ns()
    }
}

impl Default for Tenant {
    fn default() -> Self {
        Self("default".to_owned())
    }
}

/// A tenant and a namespace: the space that keys are unique in and that `flush` clears.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Partition {
    /// Whose data this is.
    pub tenant: Tenant,
    /// The namespace within the tenant.
    pub namespace: Namespace,
}

impl Partition {
    /// A partition of `tenant`.
    pub fn new(tenant: Tenant, namespace: Namespace) -> Self {
        Self { tenant, namespace }
    }

    /// `namespace` in the default tenant.
    pub fn of(namespace: Namespace) -> Self {
        Self {
            tenant: Tenant::default(),
            namespace,
        }
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant, self.namespace)
    }
}

/// `url` with any password replaced by `***`, for messages and logs: the one in the
/// authority and a `password` query parameter (as libpq takes it).
///
/// ```
/// assert_eq!(muisti_core::redact_url("redis://:secret@host:6379/2"), "redis://:***@host:6379/2");
/// assert_eq!(muisti_core::redact_url("redis://user:pw@host"), "redis://user:***@host");
/// assert_eq!(muisti_core::redact_url("sqlite:///x.db"), "sqlite:///x.db");
/// assert_eq!(
///     muisti_core::redact_url("postgres:///db?user=u&password=pw&host=/run"),
///     "postgres:///db?user=u&password=***&host=/run"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let Some((scheme, after)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(end);
    let tail = match tail.split_once('?') {
        Some((path, query)) if query.split('&').any(|kv| kv.starts_with("password=")) => {
            let query: Vec<&str> = query
                .split('&')
                .map(|kv| {
                    if kv.starts_with("password=") {
                        "password=***"
                    } else {
                        kv
                    }
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        _ => tail.to_owned(),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            if userinfo.contains(':') {
                format!("{scheme}://{user}:***@{host}{tail}")
            } else {
                format!("{scheme}://***@{host}{tail}")
            }
        }
        None => format!("{scheme}://{authority}{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_rules() {
        for ok in [
            "default",
            "user:1",
            "user.1",
            "user_1",
            "a-b",
            &"x".repeat(100),
        ] {
            assert!(Namespace::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../etc",
            "a..b",
            "a/b",
            "a\\b",
            "a\0b",
            "a b",
            "é",
            &"x".repeat(101),
        ] {
            let err = Namespace::new(bad).expect_err(bad);
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn names_deserialize_through_validation() {
        assert!(serde_json::from_str::<Namespace>("\"../x\"").is_err());
        let ns: Namespace = serde_json::from_str("\"user:1\"").expect("valid");
        assert_eq!(ns.as_str(), "user:1");
    }

    #[test]
    fn key_rules() {
        assert!(Key::new("customer_tier").is_ok());
        assert!(Key::new("with space / and ünïcode").is_ok());
        assert!(Key::new("").is_err());
        assert!(Key::new("a\nb").is_err());
        assert!(Key::new("k".repeat(513)).is_err());
    }
}
