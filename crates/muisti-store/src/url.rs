//! Opening stores from URLs, and registering schemes.

use std::{collections::HashMap, fmt, path::PathBuf, sync::Arc};

use muisti_core::{Error, Limits, Result, Store, redact_url};

use crate::{FileStore, MemStore};

/// A parsed store URL: `scheme://rest?param=value&...`.
///
/// The scheme is case-insensitive. The parameter `max_value_bytes` sets the write limit on
/// every built-in backend.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl {
    raw: String,
    scheme: String,
    rest: String,
    params: Vec<(String, String)>,
}

impl StoreUrl {
    /// Parses `s`; it must have the form `scheme://...`.
    pub fn parse(s: &str) -> Result<Self> {
        let Some((scheme, after)) = s.split_once("://") else {
            return Err(Error::invalid(
                "store url",
                format!(
                    "{:?} has no scheme; expected for example sqlite:///path/muisti.db",
                    redact_url(s)
                ),
            ));
        };
        let valid_scheme = !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !valid_scheme {
            return Err(Error::invalid(
                "store url",
                format!("{:?} is not a valid scheme", scheme),
            ));
        }
        let (rest, query) = after.split_once('?').unwrap_or((after, ""));
        let params = query
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (k.to_owned(), v.to_owned())
            })
            .collect();
        Ok(Self {
            raw: s.to_owned(),
            scheme: scheme.to_ascii_lowercase(),
            rest: rest.to_owned(),
            params,
        })
    }

    /// The scheme, lower-cased.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The URL without its query string.
    pub fn without_query(&self) -> String {
        format!("{}://{}", self.scheme, self.rest)
    }

    /// Everything between `://` and `?`.
    pub fn rest(&self) -> &str {
        &self.rest
    }

    /// The part after `://` read as a file path: `file:///var/lib/x` is `/var/lib/x`,
    /// `file://data/x` is the relative path `data/x`.
    pub fn path(&self) -> Result<PathBuf> {
        if self.rest.is_empty() {
            return Err(Error::invalid(
                "store url",
                format!(
                    "{} needs a path, e.g. {}:///var/lib/muisti",
                    self.scheme, self.scheme
                ),
            ));
        }
        Ok(PathBuf::from(&self.rest))
    }

    /// The value of a query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Refuses a query parameter the backend does not know (`max_value_bytes`, read by
    /// [`StoreUrl::limits`], is known to every backend): a misspelt one must not be ignored.
    pub fn allow_params(&self, known: &[&str]) -> Result<()> {
        match self
            .params
            .iter()
            .find(|(k, _)| k != "max_value_bytes" && !known.contains(&k.as_str()))
        {
            Some((k, _)) => Err(Error::invalid(
                "store url",
                format!(
                    "unknown parameter {k:?} for {}:// (known: {})",
                    self.scheme(),
                    known
                        .iter()
                        .copied()
                        .chain(["max_value_bytes"])
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// The write limits given by the query (`max_value_bytes`), else the defaults.
    pub fn limits(&self) -> Result<Limits> {
        let mut limits = Limits::default();
        if let Some(v) = self.whole("max_value_bytes", 0..=usize::MAX)? {
            limits.max_value_bytes = v;
        }
        Ok(limits)
    }

    /// A whole-number parameter within `range`, if given: the one rule every backend's
    /// numeric parameters follow (the error names the parameter and the range).
    pub fn whole(
        &self,
        name: &'static str,
        range: std::ops::RangeInclusive<usize>,
    ) -> Result<Option<usize>> {
        let Some(v) = self.param(name) else {
            return Ok(None);
        };
        v.parse()
            .ok()
            .filter(|n| range.contains(n))
            .map(Some)
            .ok_or_else(|| {
                let range = if *range.end() == usize::MAX {
                    format!("from {}", range.start())
                } else {
                    format!("from {} to {}", range.start(), range.end())
                };
                Error::invalid(name, format!("{v:?} is not a whole number {range}"))
            })
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.raw))
    }
}

impl fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreUrl({})", redact_url(&self.raw))
    }
}

/// Builds a store from a URL of its scheme.
pub type StoreFactory = Arc<dyn Fn(&StoreUrl) -> Result<Arc<dyn Store>> + Send + Sync>;

/// Maps URL schemes (case-insensitive) to store factories.
#[derive(Clone)]
pub struct StoreRegistry {
    factories: HashMap<String, StoreFactory>,
}

impl Default for StoreRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl StoreRegistry {
    /// A registry that knows `mem://`, `file://` and `markdown://`.
    pub fn new() -> Self {
        let mut r = Self::empty();
        r.register("mem", |url: &StoreUrl| {
            url.allow_params(&[])?;
            Ok(Arc::new(MemStore::with_limits(url.limits()?)) as Arc<dyn Store>)
        });
        r.register("file", |url: &StoreUrl| {
            url.allow_params(&[])?;
            let store = FileStore::open(url.path()?)?.with_limits(url.limits()?);
            Ok(Arc::new(store) as Arc<dyn Store>)
        });
        r.register("markdown", |url: &StoreUrl| {
            url.allow_params(&[])?;
            let store = FileStore::open_markdown(url.path()?)?.with_limits(url.limits()?);
            Ok(Arc::new(store) as Arc<dyn Store>)
        });
        r
    }

    /// A registry that knows no scheme.
    pub fn empty() -> Self {
        Self {
            factories: HashMap::new(),
        }
    }

    /// Registers (or replaces) the factory for `scheme`.
    pub fn register<F>(&mut self, scheme: &str, factory: F) -> &mut Self
    where
        F: Fn(&StoreUrl) -> Result<Arc<dyn Store>> + Send + Sync + 'static,
    {
        self.factories
            .insert(scheme.to_ascii_lowercase(), Arc::new(factory));
        self
    }

    /// The registered schemes, sorted.
    pub fn schemes(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.factories.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Opens the store a URL names.
    pub fn open(&self, url: &str) -> Result<Arc<dyn Store>> {
        let parsed = StoreUrl::parse(url)?;
        let Some(factory) = self.factories.get(parsed.scheme()) else {
            return Err(Error::invalid(
                "store url",
                format!(
                    "unknown scheme {:?} in {}; known: {}",
                    parsed.scheme(),
                    parsed,
                    self.schemes().join(", ")
                ),
            ));
        };
        factory(&parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scheme_path_and_params() {
        let u = StoreUrl::parse("SQLite:///var/lib/muisti.db?max_value_bytes=10").expect("ok");
        assert_eq!(u.scheme(), "sqlite");
        assert_eq!(u.path().expect("path"), PathBuf::from("/var/lib/muisti.db"));
        assert_eq!(u.limits().expect("limits").max_value_bytes, 10);
        assert!(StoreUrl::parse("no-scheme").is_err());
        assert!(
            StoreUrl::parse("file://?x=1")
                .expect("parses")
                .path()
                .is_err()
        );
        assert!(
            StoreUrl::parse("mem://?max_value_bytes=ten")
                .expect("parses")
                .limits()
                .is_err()
        );
    }

    #[test]
    fn unknown_parameters_are_refused() {
        let r = StoreRegistry::new();
        assert!(r.open("mem://?max_value_bytes=100").is_ok());
        for url in ["mem://?max_value_byte=100", "mem://?synchronous=full"] {
            let err = r.open(url).err().expect("refused");
            assert_eq!(err.kind(), muisti_core::ErrorKind::InvalidInput, "{url}");
            assert!(err.to_string().contains("unknown parameter"), "{err}");
        }
    }

    #[test]
    fn registry_is_case_insensitive_and_extensible() {
        let mut r = StoreRegistry::new();
        assert!(r.open("MEM://").is_ok());
        let err = r.open("custom://x").err().expect("unknown scheme");
        assert_eq!(err.kind(), muisti_core::ErrorKind::InvalidInput);
        r.register("Custom", |_url: &StoreUrl| {
            Ok(Arc::new(MemStore::new()) as Arc<dyn Store>)
        });
        assert_eq!(
            r.open("cUsToM://x").expect("registered").info().backend,
            "mem"
        );
    }
}
