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

use muisti_core::{MemoryScope, Result};

use super::{Engine, Maintained};

impl Engine {
    /// Runs the lifetimes now: deletes expired records (every tenant's, as
    /// [`Engine::purge_expired`]) and episodic memories of the engine's tenant older than
    /// the retention (those written under a longer one).
    pub fn maintain(&self) -> Result<Maintained> {
        self.core.maintain()
    }

    /// Runs the lifetimes of the whole store: deletes expired records and every tenant's
    /// episodic memories past the retention (what a server runs on its schedule).
    pub fn maintain_store(&self) -> Result<Maintained> {
        self.core.maintain_store()
    }

    /// Ends an agent turn of conversation `session_id`: deletes its scratch memories, in
    /// every namespace. Returns how many.
    pub fn end_turn(&self, session_id: &str) -> Result<u64> {
        self.core
            .clear_conversation(session_id, &[MemoryScope::Scratch])
    }

    /// Ends conversation `session_id`: deletes its scratch and short-term memories, in every
    /// namespace. Returns how many. Ending one that has none (or ending it twice) is not an
    /// error.
    pub fn end_conversation(&self, session_id: &str) -> Result<u64> {
        self.core
            .clear_conversation(session_id, &[MemoryScope::Scratch, MemoryScope::ShortTerm])
    }
}
