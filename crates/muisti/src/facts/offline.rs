//! The offline fact extractor: declarative sentence patterns, no model.
//!
//! The rules are `muisti_lang::facts` (sentence patterns, resolved against the message's
//! time); this reads each user and assistant message with them.

use muisti_core::Timestamp;

use super::{
    Candidate, ChatMessage, Extraction, FactExtractError, FactExtractor, SkipReason, Skipped,
};

/// [`FactExtractor`] by sentence patterns (module docs): no model, no network.
#[derive(Clone, Copy, Debug, Default)]
pub struct OfflineExtractor;

impl FactExtractor for OfflineExtractor {
    fn extract(
        &self,
        messages: &[ChatMessage],
        _known: &[String],
    ) -> Result<Extraction, FactExtractError> {
        let now = Timestamp::now();
        let mut candidates = Vec::new();
        let mut skipped = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let assistant = match m.role.as_str() {
                "user" => false,
                "assistant" => true,
                _ => continue,
            };
            let said = m.created_at.unwrap_or(now);
            let (facts, passed) = muisti_lang::facts::read_all(&m.content, assistant, said);
            if !assistant {
                skipped.extend(passed.into_iter().map(|s| Skipped {
                    message: i,
                    text: s.text,
                    reason: SkipReason::Read(s.reason),
                }));
            }
            for fact in facts {
                candidates.push(Candidate {
                    text: fact.text,
                    kind: fact.kind,
                    message: i,
                    retract: fact.retract,
                    confidence: None,
                    at: fact.at,
                });
            }
        }
        Ok(Extraction {
            candidates,
            skipped,
            usage: super::ExtractUsage::default(),
        })
    }

    fn name(&self) -> &str {
        "offline"
    }
}
