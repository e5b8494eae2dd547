//! Remembering a conversation ([`Engine::add_messages`]): each message as said, or the
//! facts an extractor ([`crate::facts`]) reads in it, each decided by the declarative rules.
//! Part of the memory API: it writes through [`Engine::remember`] and the declarative
//! handle, so every rule of a write holds for what is learned.

use std::sync::Arc;

use muisti_core::{
    Category, Error, Locator, Memory, MemoryId, MemoryScope, Put, Result, Source, WriteStatus,
};
use serde_json::json;

use super::Engine;
use crate::RecallRequest;
use crate::declarative::Outcome;
use crate::facts::*;

impl Engine {
    /// The same engine with `extractor` reading facts for [`Engine::add_messages`] (the
    /// default is the offline [`OfflineExtractor`]).
    pub fn with_fact_extractor(&self, extractor: Arc<dyn FactExtractor>) -> Self {
        Self {
            fact_extractor: Some(extractor),
            ..self.clone()
        }
    }

    /// The extractor [`Engine::add_messages`] uses.
    pub fn fact_extractor(&self) -> Arc<dyn FactExtractor> {
        self.fact_extractor
            .clone()
            .unwrap_or_else(|| Arc::new(OfflineExtractor))
    }

    /// Remembers a conversation: each message as said (`infer = false`), or the facts the
    /// extractor finds in it, each decided by the declarative rules (module docs).
    pub fn add_messages(&self, req: &AddRequest) -> Result<AddReport> {
        req.validate()?;
        let _span = tracing::info_span!("memory.add_messages", infer = req.infer).entered();
        if !req.infer {
            return self.store_messages(req);
        }
        // What the user's memory holds of what the messages speak of: their entries, and
        // the memories most like what they said.
        let said: Vec<&str> = req
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == "user")
            .map(|m| m.content.as_str())
            .take(KNOWN_FROM_MESSAGES)
            .collect();
        let mut known: Vec<String> = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?
            .iter()
            .chain(&self.related_memories(req, &said.join("\n"), KNOWN_MEMORIES)?)
            .map(|m| m.text().into_owned())
            .collect();
        // An entry may also be among the memories most like what was said.
        let mut seen = std::collections::HashSet::new();
        known.retain(|k| seen.insert(k.clone()));
        let extractor = self.fact_extractor();
        let extraction = extractor
            .extract(&req.messages, &known)
            .map_err(|e| Error::Model {
                model: extractor.name().to_owned(),
                reason: e.0,
            })?;
        self.add_candidates(req, extraction, extractor.name())
    }

    /// Decides what becomes of each candidate an extractor (named `extractor`) found in
    /// `req`'s messages ([`screen`]ed first): the second half of
    /// [`Engine::add_messages`], for a caller that ran the extractor itself. One result
    /// per screened candidate, in order.
    pub fn add_candidates(
        &self,
        req: &AddRequest,
        extraction: Extraction,
        extractor: &str,
    ) -> Result<AddReport> {
        req.validate()?;
        let (candidates, dropped) = screen(&req.messages, extraction.candidates);
        // Retractions last: a change told with what replaces it ("I left Deloitte and
        // started at Spotify") is the new fact's supersede, and the retraction then finds
        // nothing left to end.
        let mut order: Vec<usize> = (0..candidates.len()).collect();
        order.sort_by_key(|&i| candidates[i].retract);
        let mut decided = Vec::with_capacity(candidates.len());
        for i in order {
            decided.push((i, self.decide(req, &candidates[i])?));
        }
        decided.sort_by_key(|(i, _)| *i);
        let mut results: Vec<FactResult> = decided.into_iter().map(|(_, r)| r).collect();
        // A retraction whose memory a new fact of the same messages replaced ended it too.
        for i in 0..results.len() {
            if !candidates[i].retract || results[i].event != FactEvent::None {
                continue;
            }
            let replaced = results.iter().find(|r| {
                r.event == FactEvent::Update
                    && r.previous_memory.as_deref().is_some_and(|old| {
                        retract_overlap(&candidates[i].text, old) >= RETRACT_OVERLAP
                    })
            });
            if let Some((id, old)) =
                replaced.and_then(|r| r.previous_id.zip(r.previous_memory.clone()))
            {
                results[i].id = id;
                results[i].previous_id = Some(id);
                results[i].previous_memory = Some(old);
                results[i].event = FactEvent::Delete;
            }
        }
        let mut skipped = extraction.skipped;
        skipped.extend(dropped);
        skipped.sort_by_key(|s| s.message);
        Ok(AddReport {
            results,
            skipped,
            extractor: Some(extractor.to_owned()),
            usage: extraction.usage,
        })
    }

    fn store_messages(&self, req: &AddRequest) -> Result<AddReport> {
        let now = self.core.clock.now();
        let mut puts = Vec::new();
        let mut said = Vec::new();
        // What was said: system prompts and tool results are no memory of the user's.
        for m in req
            .messages
            .iter()
            .filter(|m| matches!(m.role.as_str(), "user" | "assistant"))
        {
            let mut put = Put::new(
                self.partition(&req.namespace),
                None,
                json!(m.content.trim()),
            );
            put.category = Category::Conversation;
            put.owner = owner(req);
            put.source = if m.is_assistant() {
                Source::AgentLearned
            } else {
                Source::UserStated
            };
            put.metadata.insert("role".into(), json!(m.role));
            put.metadata.insert("speaker".into(), json!(m.speaker()));
            put.valid_from = Some(m.created_at.unwrap_or(now));
            said.push((m.speaker().to_owned(), put.source.clone(), put.valid_from));
            puts.push(put);
        }
        // One at a time: a message already stored for this owner is found, not repeated.
        let written = puts
            .into_iter()
            .map(|p| self.remember(p))
            .collect::<Result<Vec<_>>>()?;
        let results = written
            .into_iter()
            .zip(said)
            .map(|(w, (speaker, source, at))| FactResult {
                id: w.memory.id,
                memory: w.memory.text().into_owned(),
                event: if w.status == WriteStatus::Deduplicated {
                    FactEvent::None
                } else {
                    FactEvent::Add
                },
                previous_memory: None,
                previous_id: None,
                kind: w.memory.category.clone(),
                speaker,
                source,
                confidence: None,
                at,
            })
            .collect();
        Ok(AddReport {
            results,
            skipped: Vec::new(),
            extractor: None,
            usage: ExtractUsage::default(),
        })
    }

    /// What one candidate becomes. A rule or a preference ([`is_standing`]) is a
    /// declarative entry, always in the prompt and user-managed: the declarative rules
    /// decide it (added, superseding, unchanged, or stopped at the confirmation gate when
    /// learned). A fact is a long-term memory of the user, recalled by relevance: added, or
    /// folded into the memory that already says it, and marking superseded what it
    /// replaces (the rule every write of a memory follows). A retraction ends what it names.
    fn decide(&self, req: &AddRequest, c: &Candidate) -> Result<FactResult> {
        let said = &req.messages[c.message];
        let (source, confidence) = source_of(said, c);
        let mut result = FactResult {
            id: MemoryId::generate(),
            memory: c.text.clone(),
            event: FactEvent::None,
            previous_memory: None,
            previous_id: None,
            kind: c.kind.clone(),
            speaker: said.speaker().to_owned(),
            source: source.clone(),
            confidence,
            at: c.at,
        };
        if c.retract {
            return self.retract(req, c, source, result);
        }
        let mut put = Put::new(self.partition(&req.namespace), None, json!(c.text));
        put.category = c.kind.clone();
        put.owner = fact_owner(req);
        put.source = source;
        put.confidence = confidence;
        // True as of when it was said: of two statements of one thing the later one is the
        // user's word now, whatever time each names ("I moved to Porto last month" said
        // after "I live in Lisbon" replaces it). The time it names stays beside it.
        put.valid_from = said.created_at;
        if let Some(at) = c.at {
            put.metadata.insert("at".into(), json!(at.to_string()));
        }
        put.metadata.insert("speaker".into(), json!(said.speaker()));
        put.metadata.insert("extracted".into(), json!(true));
        if let Some(session) = &req.session_id {
            put.metadata.insert("conversation".into(), json!(session));
        }
        // What the user's own word already answers is not put to the user again.
        if put.source == Source::AgentLearned
            && let Some(winner) = self.answered(req, &put)?
        {
            result.id = winner.id;
            result.previous_id = Some(winner.id);
            result.previous_memory = Some(winner.text().into_owned());
            return Ok(result);
        }
        // The user's facts are long-term memory; their rules and preferences, anything
        // learned (which waits at the gate), and a fact that changes an entry the user
        // already has (a confirmed one) are declarative entries.
        if put.source == Source::UserStated
            && !is_standing(&c.kind)
            && self.declarative().declarative_target(&put)?.is_none()
        {
            let (w, replaced) = self.remember_replacing(put)?;
            result.id = w.memory.id;
            result.kind = w.memory.category.clone();
            match (w.status, replaced.iter().find(|m| m.id != w.memory.id)) {
                (WriteStatus::Deduplicated | WriteStatus::Merged, _) => {
                    result.previous_id = Some(w.memory.id);
                    result.previous_memory = Some(w.memory.text().into_owned());
                }
                (_, Some(old)) => {
                    result.event = FactEvent::Update;
                    result.previous_id = Some(old.id);
                    result.previous_memory = Some(old.text().into_owned());
                }
                _ => result.event = FactEvent::Add,
            }
            return Ok(result);
        }
        put.scope = MemoryScope::Declarative;
        match self.declarative().declare(put) {
            Ok(d) => {
                result.id = d.memory.id;
                result.previous_id = (d.outcome != Outcome::Added).then_some(d.memory.id);
                result.event = match d.outcome {
                    Outcome::Added => FactEvent::Add,
                    Outcome::Superseded => FactEvent::Update,
                    Outcome::Unchanged => FactEvent::None,
                };
                result.previous_memory = match d.outcome {
                    Outcome::Superseded => d.replaced,
                    Outcome::Unchanged => Some(d.memory.text().into_owned()),
                    Outcome::Added => None,
                };
                Ok(result)
            }
            Err(Error::ConfirmationRequired(p)) => {
                result.id = p.id;
                result.event = FactEvent::ConfirmationRequired;
                result.previous_memory = p.supersedes.map(|s| s.content);
                Ok(result)
            }
            Err(e) => Err(e),
        }
    }

    /// A retraction: of the user's active declarative entries and long-term memories, the
    /// one that holds most of its words (at least [`RETRACT_OVERLAP`]) no longer holds. An
    /// entry is deleted (its history keeps that it was); a long-term memory is superseded by
    /// a memory saying that it no longer holds ([`no_longer`]), true until then. Only the
    /// user retracts: an assistant's retraction, or one that names nothing, changes
    /// nothing.
    fn retract(
        &self,
        req: &AddRequest,
        c: &Candidate,
        source: Source,
        mut result: FactResult,
    ) -> Result<FactResult> {
        let mut named = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?;
        named.extend(self.related_memories(req, &c.text, RETRACT_CANDIDATES)?);
        let Some((entry, _)) = named
            .iter()
            .map(|m| (m, retract_overlap(&c.text, &m.text())))
            .filter(|(_, o)| *o >= RETRACT_OVERLAP)
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(result);
        };
        result.id = entry.id;
        result.previous_id = Some(entry.id);
        result.kind = entry.category.clone();
        result.previous_memory = Some(entry.text().into_owned());
        if source != Source::UserStated {
            return Ok(result);
        }
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: entry.id,
        };
        if entry.scope == MemoryScope::Declarative {
            if self.forget(&at)? {
                result.event = FactEvent::Delete;
            }
            return Ok(result);
        }
        // A memory that no longer holds is replaced by one saying so: "do I still live in
        // Lisbon?" then finds that it no longer does, and the old one keeps its dates.
        let said = &req.messages[c.message];
        let mut put = Put::new(
            self.partition(&req.namespace),
            None,
            json!(no_longer(&entry.text())),
        );
        put.category = entry.category.clone();
        put.owner = fact_owner(req);
        put.valid_from = Some(
            c.at.or(said.created_at)
                .unwrap_or_else(|| self.core.clock.now()),
        );
        put.metadata.insert("speaker".into(), json!(said.speaker()));
        put.metadata.insert("extracted".into(), json!(true));
        let (ended, replaced) = self.remember_replacing(put)?;
        // The write itself may already have marked it (a change announced in its words).
        if replaced.iter().any(|m| m.id == entry.id)
            || self.supersede(entry, &ended.memory)?.is_some()
        {
            result.event = FactEvent::Delete;
        }
        Ok(result)
    }

    /// The user's entry or memory that a learned `put` may not replace (the declarative
    /// rules' [`wins`](crate::declarative::wins), on long-term memories too): one it
    /// restates or conflicts with ([`muisti_lang::conflict::judge`]) that the user stated,
    /// or that was learned with at least its confidence.
    fn answered(&self, req: &AddRequest, put: &Put) -> Result<Option<Memory>> {
        if let Some(winner) = self.declarative().declarative_winner(put)? {
            return Ok(Some(winner));
        }
        let text = muisti_core::value_text(&put.content);
        Ok(self
            .related_memories(req, &text, RETRACT_CANDIDATES)?
            .into_iter()
            .find(|m| {
                !crate::declarative::wins(&put.source, put.confidence, m)
                    && muisti_lang::conflict::judge(&m.text(), &text, None).verdict
                        == muisti_lang::conflict::Verdict::Supersede
            }))
    }

    /// The user's live long-term memories most like `text` (at most `n`): what a
    /// retraction may name, and what an extractor is told the user's memory holds.
    fn related_memories(&self, req: &AddRequest, text: &str, n: usize) -> Result<Vec<Memory>> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut recall = RecallRequest::new(req.namespace.clone(), text, n);
        recall.filter.user_id = Some(req.user_id.clone());
        recall.filter.scope = Some(MemoryScope::LongTerm);
        Ok(self
            .recall_as(&recall, false)?
            .into_iter()
            .filter(|h| h.memory.category != Category::Conversation)
            .map(|h| Arc::unwrap_or_clone(h.memory))
            .collect())
    }
}

/// Whether a candidate of `kind` is what the user states as standing (a rule, "always
/// answer in Finnish"; a preference, "I prefer aisle seats"): a declarative entry, in every
/// prompt, few and user-managed. Facts (family, pets, home, work, health, plans) are
/// long-term memory, recalled by relevance, so learning never grows every prompt.
fn is_standing(kind: &Category) -> bool {
    matches!(kind, Category::Rule | Category::Preference)
}

/// Whose a fact learned from `req` is: its user's (and agent's), not the conversation's: a
/// fact learned in one conversation holds in the next, and the same fact told in two is
/// one memory. The conversation stays in the metadata (`conversation`).
fn fact_owner(req: &AddRequest) -> muisti_core::Owner {
    muisti_core::Owner {
        session_id: None,
        ..owner(req)
    }
}

/// A statement that `text` (a fact in the first person) no longer holds: "I live in
/// Lisbon" → "I no longer live in Lisbon", "I am vegan" → "I am no longer vegan", "My
/// dentist is Dr. Patel" → "My dentist is no longer Dr. Patel".
fn no_longer(text: &str) -> String {
    let t = text.trim().trim_end_matches(['.', '!']);
    let lower = t.to_lowercase();
    for (head, verb) in [("i am ", "I am"), ("i'm ", "I am")] {
        if lower.starts_with(head) {
            return format!("{verb} no longer {}", &t[head.len()..]);
        }
    }
    if lower.starts_with("i ") {
        return format!("I no longer {}", &t[2..]);
    }
    if lower.starts_with("my ")
        && let Some(at) = [" is ", " are "]
            .iter()
            .filter_map(|v| lower.find(v).map(|i| i + v.len()))
            .min()
    {
        return format!("{}no longer {}", &t[..at], &t[at..]);
    }
    format!("No longer true: {t}")
}

/// How many of the user's memories most like a conversation an extractor is shown.
const KNOWN_MEMORIES: usize = 20;

/// How many of the user's latest messages those memories are recalled for.
const KNOWN_FROM_MESSAGES: usize = 5;

/// How many of the user's memories a retraction is compared with.
const RETRACT_CANDIDATES: usize = 5;

impl Learner for Engine {
    fn tenant(&self) -> &muisti_core::Tenant {
        Engine::tenant(self)
    }

    fn add_messages(&self, req: &AddRequest) -> Result<AddReport> {
        Engine::add_messages(self, req)
    }
}
