//! Remembering a conversation ([`Engine::add_messages`]): each message as said, or the
//! facts an extractor ([`crate::facts`]) reads in it, each decided by the declarative rules.
//! Part of the memory API: it writes through [`Engine::remember`] and the declarative
//! handle, so every rule of a write holds for what is learned.

use std::sync::Arc;

use muisti_core::{
    Category, Error, Locator, MemoryId, MemoryScope, Put, Result, Source, WriteStatus,
};
use serde_json::json;

use super::Engine;
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
        let known: Vec<String> = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?
            .iter()
            .map(|m| m.text().into_owned())
            .collect();
        let extractor = self.fact_extractor();
        let extraction =
            extractor
                .extract(&req.messages, &known)
                .map_err(|e| Error::Unavailable {
                    target: extractor.name().to_owned(),
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
        let candidates = screen(&req.messages, extraction.candidates);
        let mut results = Vec::with_capacity(candidates.len());
        for c in candidates {
            results.push(self.decide(req, &c)?);
        }
        Ok(AddReport {
            results,
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
                kind: w.memory.category.clone(),
                speaker,
                source,
                confidence: None,
                at,
            })
            .collect();
        Ok(AddReport {
            results,
            extractor: None,
            usage: ExtractUsage::default(),
        })
    }

    /// What one candidate becomes: a declarative write (added, superseding, unchanged, or
    /// stopped at the gate), or a retraction.
    fn decide(&self, req: &AddRequest, c: &Candidate) -> Result<FactResult> {
        let said = &req.messages[c.message];
        let (source, confidence) = source_of(said, c);
        let mut result = FactResult {
            id: MemoryId::generate(),
            memory: c.text.clone(),
            event: FactEvent::None,
            previous_memory: None,
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
        put.scope = MemoryScope::Declarative;
        put.category = c.kind.clone();
        put.owner = owner(req);
        put.source = source;
        put.confidence = confidence;
        put.valid_from = c.at;
        put.metadata.insert("speaker".into(), json!(said.speaker()));
        put.metadata.insert("extracted".into(), json!(true));
        // A learned fact the user's word already answers is not put to the user again.
        if put.source == Source::AgentLearned
            && let Some(winner) = self.declarative().declarative_winner(&put)?
        {
            result.id = winner.id;
            result.previous_memory = Some(winner.text().into_owned());
            return Ok(result);
        }
        match self.declarative().declare(put) {
            Ok(d) => {
                result.id = d.memory.id;
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

    /// A retraction: the user's active entry that holds most of its words (at least
    /// [`RETRACT_OVERLAP`]) is deleted, its history kept. Only the user retracts: an
    /// assistant's retraction, or one that names no entry, changes nothing.
    fn retract(
        &self,
        req: &AddRequest,
        c: &Candidate,
        source: Source,
        mut result: FactResult,
    ) -> Result<FactResult> {
        let entries = self
            .declarative()
            .declarative_entries(&req.namespace, &req.user_id)?;
        let Some((entry, _)) = entries
            .iter()
            .map(|m| (m, retract_overlap(&c.text, &m.text())))
            .filter(|(_, o)| *o >= RETRACT_OVERLAP)
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(result);
        };
        result.id = entry.id;
        result.kind = entry.category.clone();
        result.previous_memory = Some(entry.text().into_owned());
        if source != Source::UserStated {
            return Ok(result);
        }
        let at = Locator::Id {
            tenant: self.core.tenant.clone(),
            id: entry.id,
        };
        if self.forget(&at)? {
            result.event = FactEvent::Delete;
        }
        Ok(result)
    }
}

impl Learner for Engine {
    fn tenant(&self) -> &muisti_core::Tenant {
        Engine::tenant(self)
    }

    fn add_messages(&self, req: &AddRequest) -> Result<AddReport> {
        Engine::add_messages(self, req)
    }
}
