//! The key-value face.

use super::*;

/// The value at a key.
pub fn kv_get(engine: &Engine, ns: &str, key: &str) -> Result<api::KvEntry> {
    let ns = namespace(Some(ns))?;
    let at = Locator::Key {
        partition: engine.partition(&ns),
        key: Key::new(key)?,
    };
    let m = engine
        .get(&at)?
        .ok_or_else(|| Error::NotFound(format!("key in namespace {ns}")))?;
    Ok(kv_entry(m))
}

/// A record as a key-value entry: the one shape of a key's value on every face.
pub fn kv_entry(m: muisti::Memory) -> api::KvEntry {
    api::KvEntry {
        id: m.id.to_string(),
        key: m.key.to_string(),
        value: m.content,
        expires_at: m.expires_at.map(|t| t.to_string()),
    }
}

/// Stores a value at a key.
pub fn kv_set(engine: &Engine, ns: &str, key: &str, v: api::KvValue) -> Result<api::KvEntry> {
    let ns = namespace(Some(ns))?;
    if v.value.is_null() {
        return Err(Error::invalid("value", "must not be null"));
    }
    let w = engine.kv().set(&ns, key, v.value, ttl(v.ttl_seconds)?)?;
    Ok(kv_entry(w.memory))
}

/// Deletes a key; a missing one is `NotFound`.
pub fn kv_forget(engine: &Engine, ns: &str, key: &str) -> Result<()> {
    let ns = namespace(Some(ns))?;
    if engine.kv().forget(&ns, key)? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("key in namespace {ns}")))
    }
}

/// One page of the entries of a namespace (the records written with a key), oldest first;
/// a page may hold fewer than `limit` entries while `next_cursor` says there are more.
pub fn kv_page(engine: &Engine, ns: &str, p: api::KvPageParams) -> Result<api::KvEntries> {
    let ns = namespace(Some(ns))?;
    let limit = limit(p.limit, MAX_PAGE, MAX_PAGE)?;
    let after = cursor(p.cursor.as_deref())?;
    let page = engine.list(ListQuery {
        partition: engine.partition(&ns),
        filter: muisti::Filter::default(),
        after,
        limit,
    })?;
    Ok(api::KvEntries {
        // Only the key space: a memory written without a key is found by its id.
        entries: page
            .items
            .into_iter()
            .filter(muisti::in_key_space)
            .map(|m| (m.key.to_string(), m.content))
            .collect(),
        next_cursor: page.next.map(|id| id.to_string()),
    })
}

/// Deletes every entry of a namespace.
pub fn kv_flush(engine: &Engine, ns: &str) -> Result<api::Deleted> {
    let ns = namespace(Some(ns))?;
    Ok(api::Deleted {
        deleted: engine.kv().flush(&ns)?,
    })
}
