//! Named leases in the store: at most one holder at a time across every process and server
//! on the store (one reindex at a time, for example), built once over the store contract,
//! so every backend has them.
//!
//! The store has no "create if absent", so a lease is not one record that holders race to
//! write. Each contender writes its own record (`lease.<name>` / its holder id, with the
//! time its claim runs out), then lists the lease's records: it holds the lease only if no
//! other live claim is there, and otherwise withdraws its own. Two contenders can never both
//! win: whichever lists second sees the other's claim, written before the other listed. (Both
//! may lose, and try again later.) A holder renews by extending its own claim, which every
//! later contender sees.

use std::time::Duration;

use muisti_core::{Error, Filter, Key, Locator, Partition, Put, Result, list_all};
use serde::{Deserialize, Serialize};

use super::Core;

/// A claim on a lease.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    /// Until when (milliseconds since the epoch); after that it no longer counts.
    until: i64,
}

fn partition(name: &str) -> Result<Partition> {
    super::system_partition(&format!("lease.{name}"))
}

fn claim_of(m: &muisti_core::Memory) -> Option<Claim> {
    serde_json::from_value(m.content.clone()).ok()
}

impl Core {
    /// Takes the lease `name` for `holder` for `ttl`, unless another holder's claim on it
    /// is live: `true` if `holder` holds it now. Calling it again while holding renews it.
    pub(crate) fn acquire_lease(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool> {
        let partition = partition(name)?;
        let key = Key::new(holder)?;
        let now = self.clock.now();
        let mine = Locator::Key {
            partition: partition.clone(),
            key: key.clone(),
        };
        let held = self
            .store
            .get(&mine)?
            .and_then(|m| claim_of(&m))
            .is_some_and(|c| c.until > now.as_millis());
        let claim = serde_json::to_value(Claim {
            until: now.plus(ttl).as_millis(),
        })
        .map_err(|e| Error::backend("lease", e))?;
        self.store
            .put(Put::new(partition.clone(), Some(key.clone()), claim))?;
        if held {
            return Ok(true);
        }
        let others_live = list_all(&*self.store, &partition, &Filter::default())?
            .iter()
            .filter(|m| m.key != key)
            .filter_map(claim_of)
            .any(|c| c.until > now.as_millis());
        if others_live {
            self.store.delete(&mine)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Gives the lease `name` back if `holder` has a claim on it (else nothing happens).
    pub(crate) fn release_lease(&self, name: &str, holder: &str) -> Result<()> {
        self.store.delete(&Locator::Key {
            partition: partition(name)?,
            key: Key::new(holder)?,
        })?;
        Ok(())
    }
}
