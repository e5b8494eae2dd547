//! The scopes' rules every write keeps (the table is [`crate::engine`]'s scopes module's):
//! what a write of each scope must name ([`check_put`]), how long it lives
//! ([`Lifetimes`]), and the long-term cap kept after every write.

use std::time::Duration;

use serde::Serialize;
use tracing::info_span;

use muisti_core::{
    Error, Event, Filter, Locator, Memory, MemoryScope, Namespace, Owner, Put, Result, Ttl,
    list_all,
};

use super::Core;

/// How long the memories of each scope live (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// Long-term memories one user keeps in one namespace; past it, a write deletes that
    /// user's least recently used ones (read, recalled or written last) so the cap holds.
    /// `None` (the default): no cap. Memories without a user are not capped.
    pub long_term_cap: Option<u64>,
    /// Days an episodic memory is kept after it is written (a write without a TTL expires
    /// then; [`Engine::maintain`](crate::Engine::maintain) also removes older ones written under a longer
    /// retention). `None`: kept until deleted. Default 90.
    pub episodic_retention_days: Option<u32>,
}

pub(crate) fn days(d: u32) -> Duration {
    Duration::from_secs(u64::from(d) * 86_400)
}

/// The scope rules of a write, checked before any storage access: scratch and short-term
/// memories belong to a conversation (`session_id`), declarative ones to a user and never
/// expire. Each field is valid alone, so breaking these is
/// [`Error::ConflictingFields`] (ADR 0009).
pub(crate) fn check_put(put: &Put) -> Result<()> {
    let Owner {
        user_id,
        session_id,
        ..
    } = &put.owner;
    match put.scope {
        MemoryScope::Scratch | MemoryScope::ShortTerm if session_id.is_none() => {
            Err(Error::conflicting(
                "session_id",
                format!(
                    "a {} memory belongs to a conversation: give its id as session_id (it is \
                     cleared {})",
                    put.scope,
                    if put.scope == MemoryScope::Scratch {
                        "after each turn"
                    } else {
                        "when the conversation ends"
                    }
                ),
            ))
        }
        MemoryScope::Declarative if user_id.is_none() => Err(Error::conflicting(
            "user_id",
            "a declarative memory belongs to one user: give user_id",
        )),
        MemoryScope::Declarative if put.ttl.is_some() => Err(Error::conflicting(
            "ttl",
            "declarative memories are permanent: they take no TTL",
        )),
        _ => Ok(()),
    }
}

/// The time that orders long-term memories for eviction: last read, recalled or written.
fn last_used(m: &Memory) -> muisti_core::Timestamp {
    m.last_accessed_at
        .map_or(m.updated_at, |a| a.max(m.updated_at))
}

/// What [`Engine::maintain`](crate::Engine::maintain) removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Maintained {
    /// Expired records (any scope) deleted, in every tenant of the store.
    pub expired: u64,
    /// Episodic memories past the retention deleted, in the engine's tenant (in every
    /// tenant for [`Engine::maintain_store`](crate::Engine::maintain_store)).
    pub episodic: u64,
}

impl Core {
    /// Runs the lifetimes now: deletes expired records (every tenant's, as
    /// [`Engine::purge_expired`]) and episodic memories of the engine's tenant older than
    /// the retention (those written under a longer one).
    pub(crate) fn maintain(&self) -> Result<Maintained> {
        let _span = info_span!("memory.maintain").entered();
        let expired = self.store.purge_expired()?;
        Ok(Maintained {
            expired,
            episodic: self.past_retention()?,
        })
    }

    /// [`Engine::maintain`] for the whole store: expired records and, in every tenant,
    /// episodic memories past the retention (what a server runs on its schedule).
    pub(crate) fn maintain_store(&self) -> Result<Maintained> {
        let _span = info_span!("memory.maintain_store").entered();
        let mut done = Maintained {
            expired: self.store.purge_expired()?,
            episodic: 0,
        };
        for tenant in self.store.tenants()? {
            done.episodic += self.with_tenant(tenant).past_retention()?;
        }
        Ok(done)
    }

    /// Deletes the engine tenant's episodic memories older than the retention; how many.
    pub(crate) fn past_retention(&self) -> Result<u64> {
        self.past_retention_in(true)
    }

    /// How many of the engine tenant's episodic memories are older than the retention
    /// (what [`Core::past_retention`] would delete), deleting nothing.
    pub(crate) fn count_past_retention(&self) -> Result<u64> {
        self.past_retention_in(false)
    }

    /// The episodic memories past the retention, deleted or only counted: the one reading
    /// of the retention both share.
    fn past_retention_in(&self, delete: bool) -> Result<u64> {
        let mut episodic = 0;
        if let Some(d) = self.lifetimes.episodic_retention_days {
            let now = self.clock.now();
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
            for ns in self.store.namespaces(&self.tenant)? {
                episodic += if delete {
                    self.delete_matching(&ns, &filter)?
                } else {
                    self.store.count(&self.partition(&ns), &filter)?
                };
            }
        }
        Ok(episodic)
    }

    /// The same core confined to another tenant.
    pub(crate) fn with_tenant(&self, tenant: muisti_core::Tenant) -> Self {
        Self {
            tenant,
            ..self.clone()
        }
    }

    /// Deletes conversation `session_id`'s memories of `scopes`, in every namespace; how
    /// many.
    pub(crate) fn clear_conversation(
        &self,
        session_id: &str,
        scopes: &[MemoryScope],
    ) -> Result<u64> {
        let mut filter = Filter {
            session_id: Some(session_id.to_owned()),
            ..Filter::default()
        };
        filter.validate()?;
        let _span = info_span!("memory.end_conversation").entered();
        let mut deleted = 0;
        for ns in self.store.namespaces(&self.tenant)? {
            for scope in scopes {
                filter.scope = Some(*scope);
                deleted += self.delete_matching(&ns, &filter)?;
            }
        }
        Ok(deleted)
    }

    /// Applies the scope's lifetime to a write before it is stored: an episodic memory
    /// without a TTL expires after the retention.
    pub(crate) fn scope_put(&self, put: &mut Put) -> Result<()> {
        check_put(put)?;
        if put.scope == MemoryScope::Episodic && put.ttl.is_none() {
            put.ttl = self.lifetimes.episodic_ttl();
        }
        Ok(())
    }

    /// Keeps the long-term cap of the owner of `written` (just stored) in its namespace:
    /// deletes that user's least recently used long-term memories beyond it, never
    /// `written` itself. Returns how many.
    pub(crate) fn evict_beyond_cap(&self, written: &Memory) -> Result<u64> {
        let (Some(cap), MemoryScope::LongTerm, Some(user)) = (
            self.lifetimes.long_term_cap,
            written.scope,
            written.owner.user_id.as_ref(),
        ) else {
            return Ok(0);
        };
        let filter = Filter {
            user_id: Some(user.clone()),
            scope: Some(MemoryScope::LongTerm),
            ..Filter::default()
        };
        let partition = &written.partition;
        if self.store.count(partition, &filter)? <= cap {
            return Ok(0);
        }
        let mut held = list_all(self.store.as_ref(), partition, &filter)?;
        let excess = (held.len() as u64).saturating_sub(cap);
        held.retain(|m| m.id != written.id);
        held.sort_by_key(|m| (last_used(m), m.id));
        let mut gone = Vec::new();
        for m in held
            .into_iter()
            .take(usize::try_from(excess).unwrap_or(usize::MAX))
        {
            let deleted = self.store.delete(&Locator::Id {
                tenant: self.tenant.clone(),
                id: m.id,
            })?;
            if deleted {
                gone.push(m);
            }
        }
        // An evicted memory leaves nothing behind, as a forgotten one.
        self.after_delete(&gone)?;
        let evicted = gone.len() as u64;
        if evicted > 0 {
            self.emit(Event::Forget {
                partition: partition.clone(),
                key: None,
                count: evicted,
            });
        }
        Ok(evicted)
    }

    /// Deletes every record of `namespace` that `filter` matches, page by page, each through
    /// [`muisti_core::Store::delete`] so every derived copy goes with it; how many. The one
    /// loop behind every bulk delete.
    pub(crate) fn delete_matching(&self, namespace: &Namespace, filter: &Filter) -> Result<u64> {
        let deleted = self.delete_where(namespace, filter, |_| false)?;
        if deleted > 0 {
            self.emit(Event::Forget {
                partition: self.partition(namespace),
                key: None,
                count: deleted,
            });
        }
        Ok(deleted)
    }
}

impl Default for Lifetimes {
    fn default() -> Self {
        Self {
            long_term_cap: None,
            episodic_retention_days: Some(90),
        }
    }
}

impl Lifetimes {
    /// The longest retention, in days (about a hundred years, as the longest TTL).
    pub const MAX_RETENTION_DAYS: u32 = 36_500;

    /// A cap of at least 1 and a retention of 1 to [`Lifetimes::MAX_RETENTION_DAYS`] days.
    pub fn validate(&self) -> Result<()> {
        if self.long_term_cap == Some(0) {
            return Err(Error::invalid(
                "long_term_cap",
                "must be at least 1 (leave it unset for no cap)",
            ));
        }
        if let Some(days) = self.episodic_retention_days
            && !(1..=Self::MAX_RETENTION_DAYS).contains(&days)
        {
            return Err(Error::invalid(
                "episodic_retention_days",
                "must be 1 to 36500 (leave it unset to keep episodic memories)",
            ));
        }
        Ok(())
    }

    /// The episodic retention as a TTL.
    fn episodic_ttl(&self) -> Option<Ttl> {
        self.episodic_retention_days
            .and_then(|d| Ttl::new(days(d)).ok())
    }
}
