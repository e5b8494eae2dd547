//! The key-value face of the engine: a value at a key, with an optional TTL.

use super::*;

impl Engine {
    pub(super) fn at_key(&self, namespace: &Namespace, key: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.partition(namespace),
            key: Key::new(key)?,
        })
    }

    /// The value at `key`, or `None`.
    pub fn kv_get(&self, namespace: &Namespace, key: &str) -> Result<Option<Value>> {
        Ok(self.get(&self.at_key(namespace, key)?)?.map(|m| m.content))
    }

    /// Stores `value` at `key`, replacing any value there; `ttl` of `None` never expires.
    pub fn kv_set(
        &self,
        namespace: &Namespace,
        key: &str,
        value: Value,
        ttl: Option<Ttl>,
    ) -> Result<Written> {
        let put = Put::new(self.partition(namespace), Some(Key::new(key)?), value).with_ttl(ttl);
        self.remember(put)
    }

    /// Deletes `key`; `true` if it existed.
    pub fn kv_forget(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        self.forget(&self.at_key(namespace, key)?)
    }

    /// Deletes everything in `namespace`; returns how many entries.
    pub fn kv_flush(&self, namespace: &Namespace) -> Result<u64> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.flush", namespace = %namespace).entered();
        let n = self.store.flush(&partition)?;
        self.drop_archived_namespace(namespace)?;
        self.emit(Event::Forget {
            partition,
            key: None,
            count: n,
        });
        Ok(n)
    }

    /// Every live entry of `namespace`, by key.
    pub fn kv_all(&self, namespace: &Namespace) -> Result<BTreeMap<String, Value>> {
        let partition = self.partition(namespace);
        let _span = info_span!("memory.all", namespace = %namespace).entered();
        let all = list_all(&*self.store, &partition, &Filter::default())?;
        Ok(all
            .into_iter()
            .map(|m| (m.key.to_string(), m.content))
            .collect())
    }

    /// Whether `key` holds a live entry.
    pub fn kv_has(&self, namespace: &Namespace, key: &str) -> Result<bool> {
        Ok(self.kv_get(namespace, key)?.is_some())
    }
}
