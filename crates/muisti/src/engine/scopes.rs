//! Scopes and their lifetimes, as seed 003's table gives them, over the store contract (so
//! every backend carries them):
//!
//! | scope | lives | removed by |
//! |---|---|---|
//! | scratch | one agent turn | [`Engine::end_turn`] (and [`Engine::end_conversation`]) |
//! | short-term | one conversation | [`Engine::end_conversation`] |
//! | long-term | permanently | least-recently-used eviction above [`Lifetimes::long_term_cap`] per user, on write |
//! | episodic | [`Lifetimes::episodic_retention_days`] | its expiry (set on write), [`Engine::maintain`] |
//! | declarative | permanently | nothing but an explicit delete |
//!
//! Scratch and short-term memories name their conversation in `session_id`; declarative ones
//! name their user and never expire. [`check_put`] holds these rules, before any storage
//! access, for every write.

use muisti_core::{Filter, MemoryScope, Result};
use serde::Serialize;
use tracing::info_span;

use super::Engine;
use crate::core::days;

/// What [`Engine::maintain`] removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Maintained {
    /// Expired records (any scope) deleted, in every tenant of the store.
    pub expired: u64,
    /// Episodic memories past the retention deleted, in the engine's tenant (in every
    /// tenant for [`Engine::maintain_store`]).
    pub episodic: u64,
}

impl Engine {
    /// Ends an agent turn of conversation `session_id`: deletes its scratch memories, in
    /// every namespace. Returns how many.
    pub fn end_turn(&self, session_id: &str) -> Result<u64> {
        self.clear_conversation(session_id, &[MemoryScope::Scratch])
    }

    /// Ends conversation `session_id`: deletes its scratch and short-term memories, in every
    /// namespace. Returns how many. Ending one that has none (or ending it twice) is not an
    /// error.
    pub fn end_conversation(&self, session_id: &str) -> Result<u64> {
        self.clear_conversation(session_id, &[MemoryScope::Scratch, MemoryScope::ShortTerm])
    }

    fn clear_conversation(&self, session_id: &str, scopes: &[MemoryScope]) -> Result<u64> {
        let mut filter = Filter {
            session_id: Some(session_id.to_owned()),
            ..Filter::default()
        };
        filter.validate()?;
        let _span = info_span!("memory.end_conversation").entered();
        let mut deleted = 0;
        for ns in self.core.store.namespaces(&self.core.tenant)? {
            for scope in scopes {
                filter.scope = Some(*scope);
                deleted += self.core.delete_matching(&ns, &filter)?;
            }
        }
        Ok(deleted)
    }

    /// Runs the lifetimes now: deletes expired records (every tenant's, as
    /// [`Engine::purge_expired`]) and episodic memories of the engine's tenant older than
    /// the retention (those written under a longer one).
    pub fn maintain(&self) -> Result<Maintained> {
        let _span = info_span!("memory.maintain").entered();
        let expired = self.core.store.purge_expired()?;
        Ok(Maintained {
            expired,
            episodic: self.past_retention()?,
        })
    }

    /// [`Engine::maintain`] for the whole store: expired records and, in every tenant,
    /// episodic memories past the retention (what a server runs on its schedule).
    pub fn maintain_store(&self) -> Result<Maintained> {
        let _span = info_span!("memory.maintain_store").entered();
        let mut done = Maintained {
            expired: self.core.store.purge_expired()?,
            episodic: 0,
        };
        for tenant in self.core.store.tenants()? {
            done.episodic += self.with_tenant(tenant).past_retention()?;
        }
        Ok(done)
    }

    /// Deletes the engine tenant's episodic memories older than the retention; how many.
    fn past_retention(&self) -> Result<u64> {
        let mut episodic = 0;
        if let Some(d) = self.core.lifetimes.episodic_retention_days {
            let now = self.core.clock.now();
            // Written at or before now minus the retention: expired, as a TTL of the
            // retention would be (`expires_at <= now`).
            let cutoff = muisti_core::Timestamp::from_millis(
                now.as_millis()
                    .saturating_sub(i64::try_from(days(d).as_millis()).unwrap_or(i64::MAX))
                    .saturating_add(1),
            );
            let filter = Filter {
                scope: Some(MemoryScope::Episodic),
                created_before: Some(cutoff),
                ..Filter::default()
            };
            for ns in self.core.store.namespaces(&self.core.tenant)? {
                episodic += self.core.delete_matching(&ns, &filter)?;
            }
        }
        Ok(episodic)
    }
}
