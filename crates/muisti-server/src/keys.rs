//! API keys: each bound to one tenant, stored as a SHA-256 hash in the store's system tenant.
//!
//! A key reads `muisti_<id>_<secret>`: `id` (16 hex digits) finds the record, the hash of the
//! whole key is compared in constant time. The secret is printed once, when the key is
//! made, and never stored.

use std::sync::Arc;

use muisti::{
    Error, Filter, Key, Locator, Namespace, Partition, Put, Result, SYSTEM_TENANT, Store, Tenant,
    Timestamp,
};
use muisti_client::api::{CreatedKey, KeyInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

const PREFIX: &str = "muisti_";

/// The stored record of a key.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct KeyRecord {
    tenant: String,
    admin: bool,
    /// Manages the keys of every tenant (an operator's key), not only its own tenant's.
    #[serde(default)]
    operator: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    hash: String,
    created_at: Timestamp,
}

/// Who is calling: the tenant every operation of the request is confined to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The tenant of the credential (the default tenant in unauthenticated mode).
    pub tenant: Tenant,
    /// The key's id; `None` in unauthenticated mode.
    pub key_id: Option<String>,
    /// Whether the caller may manage its tenant's keys and start reindexes.
    pub admin: bool,
    /// Whether the caller may manage the keys of every tenant and purge the store (an
    /// operator: an operator key, or open mode).
    pub operator: bool,
}

/// The API keys of a store.
#[derive(Clone)]
pub struct KeyRing {
    store: Arc<dyn Store>,
}

fn hash(key: &str) -> String {
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares without an early exit, so timing does not tell how much of a hash matched.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn decode(id: &str, content: serde_json::Value) -> Result<KeyRecord> {
    serde_json::from_value(content).map_err(|e| Error::Corrupted {
        location: format!("api key {id}"),
        reason: e.to_string(),
    })
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| Error::backend("keys", e))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

impl KeyRing {
    /// The keys kept in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    fn partition() -> Result<Partition> {
        Ok(Partition::new(
            Tenant::new(SYSTEM_TENANT)?,
            Namespace::new("api_keys")?,
        ))
    }

    fn info(id: &str, r: &KeyRecord) -> KeyInfo {
        KeyInfo {
            id: id.to_owned(),
            tenant: r.tenant.clone(),
            admin: r.admin,
            operator: r.operator,
            label: r.label.clone(),
            created_at: r.created_at.to_string(),
        }
    }

    /// Makes a key for `tenant`; the returned secret is the only copy.
    pub fn create(&self, tenant: &str, admin: bool, label: Option<String>) -> Result<CreatedKey> {
        self.create_with(tenant, admin, false, label)
    }

    /// [`KeyRing::create`], with `operator` for a key that manages every tenant's keys (an
    /// operator key is an admin key).
    pub fn create_with(
        &self,
        tenant: &str,
        admin: bool,
        operator: bool,
        label: Option<String>,
    ) -> Result<CreatedKey> {
        let admin = admin || operator;
        let tenant = Tenant::new(tenant)?;
        if tenant.as_str() == SYSTEM_TENANT {
            return Err(Error::invalid("tenant", "is reserved for muisti itself"));
        }
        if let Some(l) = &label
            && (l.chars().count() > 200 || l.chars().any(char::is_control))
        {
            return Err(Error::invalid(
                "label",
                "must be at most 200 characters without control characters",
            ));
        }
        let id = random_hex(8)?;
        let key = format!("{PREFIX}{id}_{}", random_hex(24)?);
        let record = KeyRecord {
            tenant: tenant.to_string(),
            admin,
            operator,
            label,
            hash: hash(&key),
            created_at: Timestamp::now(),
        };
        let value = serde_json::to_value(&record).map_err(|e| Error::backend("keys", e))?;
        self.store
            .put(Put::new(Self::partition()?, Some(Key::new(&id)?), value))?;
        Ok(CreatedKey {
            info: Self::info(&id, &record),
            key,
        })
    }

    fn records(&self) -> Result<Vec<(String, KeyRecord)>> {
        muisti::list_all(&*self.store, &Self::partition()?, &Filter::default())?
            .into_iter()
            .map(|m| Ok((m.key.to_string(), decode(m.key.as_str(), m.content)?)))
            .collect()
    }

    /// Every key, oldest first (never the secrets).
    pub fn list(&self) -> Result<Vec<KeyInfo>> {
        Ok(self
            .records()?
            .iter()
            .map(|(id, r)| Self::info(id, r))
            .collect())
    }

    /// How many keys exist.
    pub fn count(&self) -> Result<u64> {
        self.store.count(&Self::partition()?, &Filter::default())
    }

    /// Deletes a key; `true` if it existed. Takes effect on the next request.
    pub fn revoke(&self, id: &str) -> Result<bool> {
        let Ok(key) = Key::new(id) else {
            return Ok(false);
        };
        self.store.delete(&Locator::Key {
            partition: Self::partition()?,
            key,
        })
    }

    /// [`KeyRing::revoke`], refused (`Conflict`) for the last admin key, which would lock
    /// every caller out of key management: the API's way. (`muisti keys revoke` on the store
    /// can, with a warning.)
    pub fn revoke_unless_last_admin(&self, id: &str) -> Result<bool> {
        if self.is_last_admin(id)? {
            return Err(Error::Conflict(
                "the last admin key cannot be revoked through the API (make another admin key \
                 first, or run `muisti keys revoke` on the store)"
                    .into(),
            ));
        }
        self.revoke(id)
    }

    /// The listed form of the key `id`, if it exists.
    pub fn info_of(&self, id: &str) -> Result<Option<KeyInfo>> {
        Ok(self
            .records()?
            .iter()
            .find(|(k, _)| k == id)
            .map(|(k, r)| Self::info(k, r)))
    }

    /// Whether `id` is the only admin key.
    pub fn is_last_admin(&self, id: &str) -> Result<bool> {
        let records = self.records()?;
        Ok(records.iter().filter(|(_, r)| r.admin).count() == 1
            && records.iter().any(|(k, r)| k == id && r.admin))
    }

    /// The caller a bearer token identifies, or `None` for an unknown or malformed key.
    pub fn verify(&self, token: &str) -> Result<Option<Caller>> {
        let Some(rest) = token.strip_prefix(PREFIX) else {
            return Ok(None);
        };
        let Some((id, _)) = rest.split_once('_') else {
            return Ok(None);
        };
        if id.len() != 16 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(None);
        }
        let at = Locator::Key {
            partition: Self::partition()?,
            key: Key::new(id)?,
        };
        let Some(m) = self.store.get(&at)? else {
            return Ok(None);
        };
        let r: KeyRecord = serde_json::from_value(m.content).map_err(|e| Error::Corrupted {
            location: format!("api key {id}"),
            reason: e.to_string(),
        })?;
        if !same(&hash(token), &r.hash) {
            return Ok(None);
        }
        Ok(Some(Caller {
            tenant: Tenant::new(&r.tenant)?,
            key_id: Some(id.to_owned()),
            admin: r.admin,
            operator: r.operator,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        KeyRing::new(muisti::open_store("mem://").expect("mem store"))
    }

    #[test]
    fn a_created_key_verifies_and_a_changed_one_does_not() -> Result<()> {
        let ring = ring();
        let made = ring.create("acme", false, Some("ci".into()))?;
        let caller = ring.verify(&made.key)?.expect("verifies");
        assert_eq!(caller.tenant.as_str(), "acme");
        assert!(!caller.admin);
        let mut wrong = made.key.clone();
        wrong.pop();
        wrong.push(if made.key.ends_with('0') { '1' } else { '0' });
        assert_eq!(ring.verify(&wrong)?, None);
        assert_eq!(ring.verify("muisti_nothex!!!!!!!!!!_x")?, None);
        assert_eq!(ring.verify("Bearer")?, None);
        Ok(())
    }

    #[test]
    fn only_the_hash_is_stored_and_revoking_takes_effect() -> Result<()> {
        let ring = ring();
        let made = ring.create("acme", true, None)?;
        let list = ring.list()?;
        assert_eq!(list.len(), 1);
        let stored =
            serde_json::to_string(&ring.records()?[0].1).map_err(|e| Error::backend("t", e))?;
        assert!(
            !stored.contains(&made.key[20..]),
            "the secret is not stored"
        );
        assert!(ring.revoke(&made.info.id)?);
        assert_eq!(ring.verify(&made.key)?, None);
        assert!(!ring.revoke(&made.info.id)?);
        Ok(())
    }

    #[test]
    fn the_system_tenant_cannot_get_a_key() {
        assert!(ring().create(SYSTEM_TENANT, true, None).is_err());
        assert!(ring().create("../x", false, None).is_err());
    }
}
