//! The key-value face of the engine: a value at a key, with an optional TTL.
//!
//! The key space holds the records written with a key ([`in_key_space`]). A memory written
//! without one is stored at its id, but it is not in the key space: it is found by its id
//! (where the read rules of its scope apply: a declarative entry is its user's alone),
//! never by key. A key-value read of such a key finds nothing, a key-value delete deletes
//! nothing, and a keyed write at it is refused ([`Error::Conflict`]), so no key-space call
//! reaches a record it could not reach by its own rules.

use super::*;

/// Whether a call that names a record by key may reach `m`: a record written with a key,
/// outside the declarative scope (declarative entries never have one: they are read,
/// changed and deleted by id, for their user, with history). The one definition every
/// path by key (reads, writes, deletes, updates, listings of entries) calls.
pub fn in_key_space(m: &Memory) -> bool {
    m.writer_key().is_some() && m.scope != MemoryScope::Declarative
}

impl Engine {
    /// Refuses a keyed write whose key is the id of a memory written without a key (only a
    /// key in a memory id's form can be one, so other keys cost no read). A keyless
    /// memory's key is never taken over later: it is made with a fresh id.
    pub(super) fn check_key_free(&self, put: &Put) -> Result<()> {
        let Some(key) = &put.key else {
            return Ok(());
        };
        if !MemoryId::parse(key.as_str()).is_ok_and(|id| id.is_written_as(key.as_str())) {
            return Ok(());
        }
        let at = Locator::Key {
            partition: put.partition.clone(),
            key: key.clone(),
        };
        match self.core.store.get(&at)? {
            Some(m) if !in_key_space(&m) => Err(Error::Conflict(format!(
                "key {key} is the id of a memory written without a key: it is reached by its \
                 id, not by key; write under another key"
            ))),
            _ => Ok(()),
        }
    }

    pub(super) fn at_key(&self, namespace: &Namespace, key: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.partition(namespace),
            key: Key::new(key)?,
        })
    }
}

/// The key-value face ([`Engine::kv`]): a value at a key of a namespace, with an optional
/// TTL, written and deleted through the memory API (so every rule of a write, and what
/// follows it, holds). A handle over the engine; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Kv<'a> {
    engine: &'a Engine,
}

impl Engine {
    /// The key-value face: a value at a key, with an optional TTL.
    pub fn kv(&self) -> Kv<'_> {
        Kv { engine: self }
    }
}

impl Kv<'_> {
    /// The value at `key`, or `None`.
    pub fn get(&self, namespace: &Namespace, key: &str) -> Result<Option<Value>> {
        Ok(self.entry(namespace, key)?.map(|m| m.content))
    }

    /// The record at `key` ([`Engine::get`] by key: only a record in the key space), or
    /// `None`.
    pub fn entry(&self, namespace: &Namespace, key: &str) -> Result<Option<Memory>> {
        self.engine.get(&self.engine.at_key(namespace, key)?)
    }

    /// Stores `value` at `key`, replacing any value there; `ttl` of `None` never expires.
    pub fn set(
        &self,
        namespace: &Namespace,
        key: &str,
        value: Value,
        ttl: Option<Ttl>,
    ) -> Result<Written> {
        let put = Put::new(
            self.engine.partition(namespace),
            Some(Key::new(key)?),
            value,
        )
        .with_ttl(ttl);
        self.engine.remember(put)
    }

    /// Deletes `key` (a record in the key space); `true` if it existed.
    pub fn forget(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        self.engine.forget(&self.engine.at_key(namespace, key)?)
    }

    /// Deletes everything in `namespace` but its declarative entries (a user's own, removed
    /// by nothing but an explicit delete), each with what was made of it
    /// (its archive object, history texts and graph facts); returns how many records.
    pub fn flush(&self, namespace: &Namespace) -> Result<u64> {
        let _span = info_span!("memory.flush", namespace = %namespace).entered();
        self.engine.flush_namespace(namespace)
    }

    /// Every live entry of `namespace` (the records in the key space), by key.
    pub fn all(&self, namespace: &Namespace) -> Result<BTreeMap<String, Value>> {
        let partition = self.engine.partition(namespace);
        let _span = info_span!("memory.all", namespace = %namespace).entered();
        let all = list_all(&*self.engine.core.store, &partition, &Filter::default())?;
        Ok(all
            .into_iter()
            .filter(in_key_space)
            .map(|m| (m.key.to_string(), m.content))
            .collect())
    }

    /// Whether `key` holds a live entry.
    pub fn has(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        Ok(self.get(namespace, key)?.is_some())
    }
}
