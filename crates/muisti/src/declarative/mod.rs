//! Declarative memory (seed 003): a user's permanent facts, preferences and rules, in the
//! engine over the store contract, so every backend carries it.
//!
//! * An entry is a memory of scope `declarative` whose category is its type (`fact`,
//!   `preference`, `rule`), with a user, no key and no TTL; its source is `user_stated`
//!   (confidence none) or `agent_learned` (confidence 0-100). `check` holds these rules
//!   before any storage access.
//! * **Confirmation gate**: an agent-learned write is not stored until the user confirms it:
//!   [`Declarative::declare`] answers [`Error::ConfirmationRequired`] with a [`Proposal`] (kept in
//!   [`PROPOSALS_NAMESPACE`] for [`PROPOSAL_TTL`]); [`Declarative::confirm`] applies it,
//!   [`Declarative::reject`] drops it.
//! * **Conflicts**: a new entry is judged against the user's active entries of its type
//!   ([`muisti_lang::conflict::judge`]); the best match the detector would supersede is replaced in place
//!   (same id, the old text in its history), as the rules say: user-stated is never
//!   superseded by learned, learned supersedes learned only with a higher confidence, a
//!   user-stated write supersedes anything.
//! * **History**: every add, supersede, confirm, edit and delete of an entry is a record in
//!   [`HISTORY_NAMESPACE`] ([`Engine::history`](crate::Engine::history)), deleted with the user's data.

mod history;
pub mod judge;

pub use history::DELETED_HISTORY_RETENTION;
pub(crate) use history::{History, first_entry};
pub use judge::{ConflictJudge, JudgeError};

use std::{sync::Arc, time::Duration};

use muisti_core::{
    Category, Error, ErrorKind, Filter, Key, Locator, Memory, MemoryId, MemoryScope, MemoryState,
    Namespace, Owner, Partition, Patch, Proposal, Put, Result, Source, Superseded, Ttl,
    UpdateRequest, WriteStatus, Written, list_all, value_text,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::core::{Change, Core};
use crate::records;
pub use crate::records::{HISTORY_NAMESPACE, HistoryEntry, HistoryEvent, PROPOSALS_NAMESPACE};
use muisti_lang::conflict::Verdict;

/// How long a proposal waits for the user's confirmation.
pub const PROPOSAL_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What a declarative write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A new entry.
    Added,
    /// An existing entry now says this (same id; its old text is in its history).
    Superseded,
    /// Nothing changed: the entry it conflicts with wins (user-stated over learned, or a
    /// learned entry of at least this confidence), or it says exactly this already.
    Unchanged,
}

impl Outcome {
    /// The write status the memory API reports for it.
    pub fn status(self) -> WriteStatus {
        match self {
            Outcome::Added => WriteStatus::Created,
            Outcome::Superseded => WriteStatus::Updated,
            Outcome::Unchanged => WriteStatus::Deduplicated,
        }
    }
}

/// The answer of a declarative write.
#[derive(Clone, Debug, PartialEq)]
pub struct Declared {
    /// The entry as stored (for [`Outcome::Unchanged`], the one that won).
    pub memory: Memory,
    /// What happened.
    pub outcome: Outcome,
    /// For [`Outcome::Superseded`], the text the entry had before.
    pub replaced: Option<String>,
    /// Entries that may say the same thing, left as they are (the detector is not sure
    /// enough to supersede them; a UI may ask).
    pub possible_conflicts: Vec<MemoryId>,
}

impl HistoryEvent {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryEvent::Add => "add",
            HistoryEvent::Update => "update",
            HistoryEvent::Supersede => "supersede",
            HistoryEvent::Delete => "delete",
            HistoryEvent::Confirm => "confirm",
        }
    }
}

/// The rules of a declarative write, checked before any storage access (the scope's own,
/// user and no TTL, are the engine's `check_put`). Each field is valid alone: breaking a
/// rule is [`Error::ConflictingFields`] (ADR 0009), except a confidence above 100.
pub(crate) fn check(put: &Put) -> Result<()> {
    if !matches!(
        put.category,
        Category::Fact | Category::Preference | Category::Rule
    ) {
        return Err(Error::conflicting(
            "type",
            format!(
                "a declarative entry is a fact, a preference or a rule, not {:?}",
                put.category.as_str()
            ),
        ));
    }
    if put.key.is_some() {
        return Err(Error::conflicting(
            "key",
            "declarative entries are found by what they say, not by key: write without one \
             (a restatement supersedes the entry it restates)",
        ));
    }
    if !put.content.is_string() {
        return Err(Error::conflicting("content", "a declarative entry is text"));
    }
    match (&put.source, put.confidence) {
        (Source::UserStated, None) => Ok(()),
        (Source::UserStated, Some(_)) => Err(Error::conflicting(
            "confidence",
            "a user-stated entry carries no confidence (it is the user's word)",
        )),
        (Source::AgentLearned, Some(c)) if c <= 100 => Ok(()),
        (Source::AgentLearned, Some(_)) => {
            Err(Error::invalid("confidence", "must be between 0 and 100"))
        }
        (Source::AgentLearned, None) => Err(Error::conflicting(
            "confidence",
            "an agent-learned entry carries its confidence, 0 to 100",
        )),
        (other, _) => Err(Error::conflicting(
            "source",
            format!(
                "a declarative entry is user_stated or agent_learned, not {:?}",
                other.as_str()
            ),
        )),
    }
}

/// Whether a read under `filter` may see `m`: declarative entries only when the read names
/// their user (strict per-user scoping: no read without a user sees any).
pub(crate) fn readable(filter: &Filter, m: &Memory) -> bool {
    filter.user_id.is_some() || m.scope != MemoryScope::Declarative
}

/// Whether a request acting for `user` may see `m` when it names it by id: any memory but a
/// declarative entry, and a declarative entry only when `user` is its user (strict per-user
/// scoping, no override: a request without a user sees no declarative entry).
pub fn visible_to(user: Option<&str>, m: &Memory) -> bool {
    m.scope != MemoryScope::Declarative || (user.is_some() && m.owner.user_id.as_deref() == user)
}

/// A read asking for declarative entries must name its user (both fields are valid alone:
/// [`Error::ConflictingFields`], ADR 0009).
pub(crate) fn check_read(filter: &Filter) -> Result<()> {
    if filter.scope == Some(MemoryScope::Declarative) && filter.user_id.is_none() {
        return Err(Error::conflicting(
            "user_id",
            "declarative entries are read per user: give user_id",
        ));
    }
    Ok(())
}

/// How an entry is marked where it is shown to a model: its type, and for a learned one its
/// confidence (`preference (learned, confidence 70)`).
pub fn label(m: &Memory) -> String {
    match (&m.source, m.confidence) {
        (Source::AgentLearned, Some(c)) => format!("{} (learned, confidence {c})", m.category),
        _ => m.category.to_string(),
    }
}

/// The order entries go into a prompt: rules, then preferences, then facts, newest first
/// within each (so when they alone pass the prompt's cap, the rules stay).
pub fn prompt_order(entries: &mut [Memory]) {
    let rank = |m: &Memory| match m.category {
        Category::Rule => 0,
        Category::Preference => 1,
        _ => 2,
    };
    entries.sort_by(|a, b| {
        rank(a)
            .cmp(&rank(b))
            .then(b.updated_at.cmp(&a.updated_at))
            .then(b.id.cmp(&a.id))
    });
}

/// Whether a write of `source`/`confidence` may replace `existing` (the seed's rules).
pub(crate) fn wins(source: &Source, confidence: Option<u8>, existing: &Memory) -> bool {
    match (source, &existing.source) {
        (Source::UserStated, _) => true,
        (Source::AgentLearned, Source::AgentLearned) => {
            confidence.unwrap_or(0) > existing.confidence.unwrap_or(0)
        }
        _ => false,
    }
}

pub(super) fn actor(m: &Memory) -> String {
    match m.source {
        Source::AgentLearned => m
            .owner
            .agent_id
            .clone()
            .unwrap_or_else(|| "agent".to_owned()),
        _ => "user".to_owned(),
    }
}

/// The write proposal `p` stands for, in `partition`.
fn proposed_put(p: &Proposal, partition: Partition) -> Put {
    let mut put = Put::new(partition, None, p.content.clone());
    put.scope = MemoryScope::Declarative;
    put.category = p.kind.clone();
    put.source = p.source.clone();
    put.confidence = p.confidence;
    put.owner = p.owner.clone();
    put.tags = p.tags.clone();
    put.metadata = p.metadata.clone();
    put.importance = p.importance;
    put
}

/// Declarative memory ([`Engine::declarative`](crate::Engine::declarative)): a user's permanent entries, the
/// confirmation gate for what an agent learned, and the proposals waiting at it. A handle
/// over what the engine's parts share and the conflict judge; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Declarative<'a> {
    pub(crate) core: &'a Core,
    pub(crate) judge: Option<&'a Arc<dyn ConflictJudge>>,
}

impl Declarative<'_> {
    /// Writes a declarative entry (a [`Put`] of scope `declarative`; [`Engine::remember`](crate::Engine::remember)
    /// of one comes here): checks its rules, then, for an agent-learned entry, stops at the
    /// confirmation gate ([`Error::ConfirmationRequired`] with the stored proposal), else
    /// adds it or supersedes the entry it restates, as the module docs say.
    pub fn declare(&self, put: Put) -> Result<Declared> {
        self.declare_with(put, false, None)
    }

    /// [`Declarative::declare`] replacing the entry the caller names (usually an agent that
    /// knows which entry the user corrected) instead of the detector's pick. The entry
    /// must be an active declarative entry of the write's user, namespace and type
    /// ([`Error::NotFound`] for none of the user's, [`Error::ConflictingFields`] for one of
    /// another type or state); the rules of who may replace whom still apply.
    pub fn declare_superseding(&self, put: Put, target: MemoryId) -> Result<Declared> {
        self.declare_with(put, false, Some(target))
    }

    /// Applies a proposal of `user_id`'s (once: a second confirm, or a confirm after it
    /// expired or was rejected, is [`Error::NotFound`], and so is another user's proposal:
    /// only the user it concerns confirms it). Conflicts are judged again against the
    /// entries as they are now.
    pub fn confirm(&self, proposal_id: &str, user_id: &str) -> Result<Declared> {
        let proposal = self.take_proposal(proposal_id, user_id)?;
        let put = proposed_put(&proposal, self.core.partition(&proposal.namespace));
        // The entry the writer named, while it is still there and active (else the
        // conflicts are judged again, as for any proposal).
        let target = match proposal.supersedes.as_ref().filter(|_| proposal.explicit) {
            Some(s)
                if self
                    .core
                    .read(s.id)?
                    .is_some_and(|m| m.state == MemoryState::Active) =>
            {
                Some(s.id)
            }
            _ => None,
        };
        self.declare_with(put, true, target)
    }

    /// Drops a proposal of `user_id`'s; returns it (another user's is [`Error::NotFound`]).
    pub fn reject(&self, proposal_id: &str, user_id: &str) -> Result<Proposal> {
        self.take_proposal(proposal_id, user_id)
    }

    /// `user_id`'s active declarative entries in `namespace`, in prompt order
    /// ([`prompt_order`]).
    pub fn declarative_entries(&self, namespace: &Namespace, user_id: &str) -> Result<Vec<Memory>> {
        let filter = Filter {
            user_id: Some(user_id.to_owned()),
            scope: Some(MemoryScope::Declarative),
            ..Filter::default()
        };
        filter.validate()?;
        let mut entries: Vec<Memory> = list_all(
            self.core.store.as_ref(),
            &self.core.partition(namespace),
            &filter,
        )?
        .into_iter()
        .filter(|m| m.state == MemoryState::Active)
        .collect();
        prompt_order(&mut entries);
        Ok(entries)
    }

    /// The proposals waiting for `user_id`'s confirmation, oldest first.
    pub fn proposals(&self, user_id: &str) -> Result<Vec<Proposal>> {
        let filter = Filter {
            user_id: Some(user_id.to_owned()),
            ..Filter::default()
        };
        filter.validate()?;
        let partition = self.core.own_partition(PROPOSALS_NAMESPACE);
        list_all(self.core.store.as_ref(), &partition, &filter)?
            .into_iter()
            .map(|r| records::PROPOSALS.decode(&r))
            .collect()
    }

    fn declare_with(
        &self,
        mut put: Put,
        confirmed: bool,
        target: Option<MemoryId>,
    ) -> Result<Declared> {
        put.partition.tenant = self.core.tenant.clone();
        crate::core::check_put(&put)?;
        check(&put)?;
        put.validate(&self.core.store.limits())?;
        let text = value_text(&put.content).into_owned();
        for _ in 0..8 {
            let (best, possible_conflicts) = match target {
                Some(id) => (Some(self.named_target(&put, id)?), Vec::new()),
                None => self.conflicts(&put, &text)?,
            };
            if put.source == Source::AgentLearned && !confirmed {
                let proposal = self.propose(&put, &text, best.as_ref(), target.is_some())?;
                return Err(Error::ConfirmationRequired(Box::new(proposal)));
            }
            let added = if confirmed {
                HistoryEvent::Confirm
            } else {
                HistoryEvent::Add
            };
            let Some(existing) = best else {
                let w = self.core.put_embedded(put)?;
                self.core
                    .after_write(&[Change::written(&w, None).recorded_as(added)])?;
                return Ok(Declared {
                    memory: w.memory,
                    outcome: Outcome::Added,
                    replaced: None,
                    possible_conflicts,
                });
            };
            let same = value_text(&existing.content) == text
                && existing.source == put.source
                && existing.confidence == put.confidence;
            if same || !wins(&put.source, put.confidence, &existing) {
                return Ok(Declared {
                    memory: existing,
                    outcome: Outcome::Unchanged,
                    replaced: None,
                    possible_conflicts,
                });
            }
            let patch = Patch {
                content: Some(put.content.clone()),
                source: Some(put.source.clone()),
                confidence: Some(put.confidence),
                ..Patch::default()
            };
            let at = Locator::Id {
                tenant: self.core.tenant.clone(),
                id: existing.id,
            };
            match self
                .core
                .update_unchecked(UpdateRequest::new(at, patch).expecting(Some(existing.version)))
            {
                Ok(m) => {
                    let event = if confirmed {
                        HistoryEvent::Confirm
                    } else {
                        HistoryEvent::Supersede
                    };
                    let old = value_text(&existing.content).into_owned();
                    self.core
                        .after_write(&[Change::updated(&m, existing).recorded_as(event)])?;
                    return Ok(Declared {
                        memory: m,
                        outcome: Outcome::Superseded,
                        replaced: Some(old),
                        possible_conflicts,
                    });
                }
                // Changed or deleted meanwhile: judge again against what is there now.
                Err(e) if matches!(e.kind(), ErrorKind::Conflict | ErrorKind::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict(
            "the user's declarative entries kept changing during the write; try again".into(),
        ))
    }

    /// The active entry a write of `put` would lose to: the one it conflicts with and may
    /// not replace (user-stated over learned, a learned entry of at least its confidence).
    /// The rules of [`Declarative::declare`], without writing or proposing.
    pub(crate) fn declarative_winner(&self, put: &Put) -> Result<Option<Memory>> {
        let text = value_text(&put.content).into_owned();
        let (best, _) = self.conflicts(put, &text)?;
        Ok(best.filter(|m| !wins(&put.source, put.confidence, m)))
    }

    /// The active entry a write of `put` would replace (the detector's best match among the
    /// user's entries of its type), whoever may win.
    pub(crate) fn declarative_target(&self, put: &Put) -> Result<Option<Memory>> {
        let text = value_text(&put.content).into_owned();
        Ok(self.conflicts(put, &text)?.0)
    }

    /// The entry a write names in `supersedes`: an active declarative entry of its user,
    /// namespace and type.
    fn named_target(&self, put: &Put, id: MemoryId) -> Result<Memory> {
        let entry = self
            .core
            .read(id)?
            .filter(|m| visible_to(put.owner.user_id.as_deref(), m))
            .filter(|m| m.scope == MemoryScope::Declarative && m.partition == put.partition)
            .ok_or_else(|| Error::NotFound(format!("declarative entry {id} of this user")))?;
        if entry.category != put.category {
            return Err(Error::conflicting(
                "supersedes",
                format!(
                    "names a {} entry; this write is a {}",
                    entry.category, put.category
                ),
            ));
        }
        if entry.state != MemoryState::Active {
            return Err(Error::conflicting(
                "supersedes",
                "names an entry that is no longer active",
            ));
        }
        Ok(entry)
    }

    /// The entry `put` would supersede (the detector's best tier-1 match among the user's
    /// active entries of its type) and the entries that may conflict (tier 2).
    fn conflicts(&self, put: &Put, text: &str) -> Result<(Option<Memory>, Vec<MemoryId>)> {
        let filter = Filter {
            user_id: put.owner.user_id.clone(),
            scope: Some(MemoryScope::Declarative),
            category: Some(put.category.clone()),
            ..Filter::default()
        };
        let held: Vec<Memory> = list_all(self.core.store.as_ref(), &put.partition, &filter)?
            .into_iter()
            .filter(|m| m.state == MemoryState::Active)
            .collect();
        if held.is_empty() {
            return Ok((None, Vec::new()));
        }
        let texts: Vec<String> = held.iter().map(|m| m.text().into_owned()).collect();
        let judgements = judge::judgements(self.core, text, &texts)?;
        let mut best = None;
        for (i, j) in judgements.iter().enumerate() {
            if j.verdict == Verdict::Supersede
                && best.is_none_or(|b: usize| j.rank() > judgements[b].rank())
            {
                best = Some(i);
            }
        }
        if let Some(judge) = self.judge {
            best = judge::second_opinion(judge.as_ref(), text, &put.category, &texts, &judgements)
                .unwrap_or(best);
        }
        let possible = judgements
            .iter()
            .enumerate()
            .filter(|&(i, j)| j.verdict == Verdict::Possible && Some(i) != best)
            .map(|(i, _)| held[i].id)
            .collect();
        Ok((best.map(|i| held[i].clone()), possible))
    }

    fn propose(
        &self,
        put: &Put,
        text: &str,
        target: Option<&Memory>,
        explicit: bool,
    ) -> Result<Proposal> {
        let now = self.core.clock.now();
        let proposal = Proposal {
            id: MemoryId::generate(),
            namespace: put.partition.namespace.clone(),
            content: text.to_owned(),
            kind: put.category.clone(),
            source: put.source.clone(),
            confidence: put.confidence,
            owner: put.owner.clone(),
            tags: put.tags.clone(),
            metadata: put.metadata.clone(),
            importance: put.importance,
            supersedes: target.map(|m| Superseded {
                id: m.id,
                content: m.text().into_owned(),
                source: m.source.clone(),
                confidence: m.confidence,
            }),
            explicit,
            created_at: now,
            expires_at: now.plus(PROPOSAL_TTL),
        };
        let value = records::PROPOSALS.encode(&proposal)?;
        let mut record = Put::new(
            self.core.own_partition(PROPOSALS_NAMESPACE),
            Some(Key::new(proposal.id.to_string())?),
            value,
        );
        record.owner = Owner {
            user_id: put.owner.user_id.clone(),
            ..Owner::default()
        };
        record.ttl = Ttl::new(PROPOSAL_TTL).ok();
        self.core.store.put(record)?;
        Ok(proposal)
    }

    /// Stores an imported agent-learned entry `m` as a proposal of its user's instead (the
    /// import's gate: [`crate::transfer::Trust::Gated`]); its rules are checked as a write's.
    pub(crate) fn propose_imported(&self, m: &Memory) -> Result<Proposal> {
        let mut put = Put::new(m.partition.clone(), None, m.content.clone());
        put.scope = MemoryScope::Declarative;
        put.category = m.category.clone();
        put.source = m.source.clone();
        put.confidence = m.confidence;
        put.owner = m.owner.clone();
        put.tags = m.tags.clone();
        put.metadata = m.metadata.clone();
        put.importance = Some(m.importance);
        put.partition.tenant = self.core.tenant.clone();
        crate::core::check_put(&put)?;
        check(&put)?;
        put.validate(&self.core.store.limits())?;
        self.propose(&put, &value_text(&put.content), None, false)
    }

    /// Reads and deletes a proposal of `user_id`'s: only the caller whose delete removed it
    /// applies it, and another user's proposal is not found (as another user's entries are).
    fn take_proposal(&self, proposal_id: &str, user_id: &str) -> Result<Proposal> {
        let id = MemoryId::parse(proposal_id.trim())
            .map_err(|_| Error::invalid("id", format!("{proposal_id:?} is not a proposal id")))?;
        muisti_core::check_owner_field("user_id", &Some(user_id.to_owned()))?;
        let at = Locator::Key {
            partition: self.core.own_partition(PROPOSALS_NAMESPACE),
            key: Key::new(id.to_string())?,
        };
        let gone = || {
            Error::NotFound(format!(
                "proposal {id} of this user (confirmed, rejected or expired)"
            ))
        };
        let record = self
            .core
            .store
            .get(&at)?
            .filter(|r| r.owner.user_id.as_deref() == Some(user_id))
            .ok_or_else(gone)?;
        // By id: what was checked is what is deleted.
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: record.id,
        };
        if !self.core.store.delete(&at)? {
            return Err(gone());
        }
        records::PROPOSALS.decode(&record)
    }

    /// Deletes `user_id`'s history and proposals of entries in `namespace` (with the user's
    /// data there).
    pub(crate) fn forget_declarative_of(
        &self,
        namespace: &Namespace,
        user_id: &str,
    ) -> Result<u64> {
        let history = Filter {
            user_id: Some(user_id.to_owned()),
            metadata: [("namespace".to_owned(), json!(namespace.as_str()))]
                .into_iter()
                .collect(),
            ..Filter::default()
        };
        let mut deleted = self
            .core
            .delete_matching(&crate::core::own_namespace(HISTORY_NAMESPACE), &history)?;
        for p in self.proposals(user_id)? {
            if &p.namespace == namespace {
                let at = Locator::Key {
                    partition: self.core.own_partition(PROPOSALS_NAMESPACE),
                    key: Key::new(p.id.to_string())?,
                };
                deleted += u64::from(self.core.store.delete(&at)?);
            }
        }
        Ok(deleted)
    }
}

/// What [`Engine::remember`](crate::Engine::remember) answers for a declarative write.
pub fn written(d: Declared) -> Written {
    Written {
        status: d.outcome.status(),
        memory: d.memory,
    }
}
