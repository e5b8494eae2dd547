//! The labelled conversations of `crates/muisti-lang/tests/data/fact-extraction.jsonl` and the
//! one evaluation of an extractor on them: facts found (precision and recall), their times,
//! and the decision each led to against the conversation's prior memory. The tests and
//! `muisti bench extract` run it.

use std::collections::BTreeMap;

use muisti::{Category, Error, MemoryId, Namespace, Put, Result, Source, Timestamp};
use serde::Deserialize;
use serde_json::json;

use muisti::facts::{
    AddRequest, Candidate, ChatMessage, FactEvent, FactExtractor, retract_overlap, screen,
};
use muisti::{Engine, declarative::ConflictJudge};
use muisti_lang::labelled::ratio;

/// One labelled conversation.
#[derive(Clone, Debug, Deserialize)]
pub struct LabelledConversation {
    /// Its number.
    pub id: u32,
    /// `tune` (methods chosen on it) or `test` (held out).
    pub split: String,
    /// The user.
    pub user: String,
    /// What the user's memory holds before.
    #[serde(default)]
    pub prior: Vec<PriorEntry>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// The facts it states and what should become of each.
    #[serde(default)]
    pub facts: Vec<LabelledFact>,
}

/// An entry the memory holds before the conversation.
#[derive(Clone, Debug, Deserialize)]
pub struct PriorEntry {
    /// `fact`, `preference` or `rule`.
    #[serde(rename = "type")]
    pub kind: Category,
    /// Its text.
    pub text: String,
    /// `user_stated` or `agent_learned`.
    pub source: Source,
    /// A learned entry's confidence.
    #[serde(default)]
    pub confidence: Option<u8>,
}

/// A fact the conversation states.
#[derive(Clone, Debug, Deserialize)]
pub struct LabelledFact {
    /// `fact`, `preference` or `rule`.
    #[serde(rename = "type")]
    pub kind: Category,
    /// The fact in the user's first person.
    pub text: String,
    /// `user` or `assistant`.
    pub speaker: String,
    /// `ADD`, `UPDATE`, `DELETE`, `NONE` or `CONFIRM`.
    pub event: String,
    /// The prior entry it updates, deletes or leaves (an index into `prior`).
    #[serde(default)]
    pub prior: Option<usize>,
    /// The day it became true (`YYYY-MM-DD`).
    #[serde(default)]
    pub at: Option<String>,
    /// Whether it retracts a stored entry.
    #[serde(default)]
    pub retract: bool,
}

/// Parses the corpus.
pub fn parse_corpus(
    text: &str,
) -> std::result::Result<Vec<LabelledConversation>, serde_json::Error> {
    muisti_lang::labelled::parse_jsonl(text)
}

/// Whether a fact the extractor found is the labelled one: the same speaker's, the same
/// type, both retractions or neither, and their words (stemmed, stop words out) mostly
/// shared (at least 0.6 of the label's in the found one and half of the found one's in the
/// label).
pub fn same_fact(found: &Candidate, found_by_assistant: bool, label: &LabelledFact) -> bool {
    found_by_assistant == (label.speaker == "assistant")
        && found.kind == label.kind
        && found.retract == label.retract
        && retract_overlap(&label.text, &found.text) >= 0.6
        && retract_overlap(&found.text, &label.text) >= 0.5
}

/// How an extractor did.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FactScores {
    /// Conversations read.
    pub conversations: usize,
    /// Facts labelled.
    pub facts: usize,
    /// Facts extracted.
    pub found: usize,
    /// Facts extracted that are labelled ([`same_fact`], one to one).
    pub right: usize,
    /// Labelled facts with a day, found.
    pub dated: usize,
    /// Of those, found with that day.
    pub dated_right: usize,
    /// Labelled facts whose decision was checked (those found).
    pub decisions: usize,
    /// Of those, decided as labelled (the event, and the prior entry it names).
    pub decisions_right: usize,
    /// Per labelled event: (checked, right).
    pub by_event: BTreeMap<String, (usize, usize)>,
    /// Model calls made.
    pub calls: u32,
    /// Each labelled fact not found, each fact found that is no label, and each wrong
    /// decision, described (conversation, what was expected, what came).
    pub misses: Vec<String>,
}

impl FactScores {
    /// Of the facts extracted, the share labelled.
    pub fn precision(&self) -> f64 {
        ratio(self.right, self.found)
    }
    /// Of the facts labelled, the share extracted.
    pub fn recall(&self) -> f64 {
        ratio(self.right, self.facts)
    }
    /// Of the decisions checked, the share right.
    pub fn decision_accuracy(&self) -> f64 {
        ratio(self.decisions_right, self.decisions)
    }
    /// Of the dated facts found, the share with the right day.
    pub fn date_accuracy(&self) -> f64 {
        ratio(self.dated_right, self.dated)
    }
}

/// Evaluates `extractor` on `corpus`: each conversation gets a fresh engine from `engine`
/// (given the conversation, so a scripted model can be told what to answer), its prior
/// entries are written (learned ones confirmed), the messages are added with inference,
/// and what was found and decided is compared with the labels.
pub fn evaluate(
    corpus: &[LabelledConversation],
    engine: &dyn Fn(&LabelledConversation) -> Result<Engine>,
    extractor: &dyn Fn(&LabelledConversation) -> std::sync::Arc<dyn FactExtractor>,
    judge: Option<std::sync::Arc<dyn ConflictJudge>>,
) -> Result<FactScores> {
    let mut s = FactScores::default();
    for c in corpus {
        s.conversations += 1;
        let mut memory = engine(c)?.with_fact_extractor(extractor(c));
        if let Some(j) = &judge {
            memory = memory.with_conflict_judge(std::sync::Arc::clone(j));
        }
        let prior = write_prior(&memory, c)?;
        // What the extractor finds, screened as the engine screens it.
        let extraction = memory
            .fact_extractor()
            .extract(&c.messages, &[])
            .map_err(|e| Error::Unavailable {
                target: "extractor".into(),
                reason: e.0,
            })?;
        s.calls += extraction.usage.calls;
        let (found, _) = screen(&c.messages, extraction.candidates.clone());
        let by_assistant = |x: &Candidate| c.messages[x.message].is_assistant();
        // One to one: each label takes the first unmatched found fact that is it.
        let mut taken = vec![false; found.len()];
        let mut matched: Vec<Option<usize>> = Vec::new();
        for label in &c.facts {
            let hit = (0..found.len())
                .find(|&i| !taken[i] && same_fact(&found[i], by_assistant(&found[i]), label));
            if let Some(i) = hit {
                taken[i] = true;
            }
            matched.push(hit);
        }
        for (label, hit) in c.facts.iter().zip(&matched) {
            if hit.is_none() {
                s.misses.push(format!(
                    "#{} not found: {} {:?} ({})",
                    c.id, label.kind, label.text, label.speaker
                ));
            }
        }
        for (i, f) in found.iter().enumerate() {
            if !taken[i] {
                s.misses.push(format!(
                    "#{} not labelled: {} {:?}{}",
                    c.id,
                    f.kind,
                    f.text,
                    if f.retract { " (retracts)" } else { "" }
                ));
            }
        }
        s.facts += c.facts.len();
        s.found += found.len();
        s.right += matched.iter().flatten().count();
        for (label, hit) in c.facts.iter().zip(&matched) {
            if let (Some(day), Some(i)) = (&label.at, hit) {
                s.dated += 1;
                let got = found[*i].at.map(|t| t.to_string());
                if got.is_some_and(|g| g.starts_with(day.as_str())) {
                    s.dated_right += 1;
                }
            }
        }
        // The decisions: the candidates through the engine, as add_messages decides them.
        let req = AddRequest::new(c.user.clone(), c.messages.clone(), true);
        let report = memory.add_candidates(&req, extraction, "evaluated")?;
        for (label, hit) in c.facts.iter().zip(&matched) {
            let Some(i) = hit else { continue };
            // The engine's results follow the screened candidates in order.
            let Some(r) = report.results.get(*i) else {
                continue;
            };
            let expected = match label.event.as_str() {
                "CONFIRM" => FactEvent::ConfirmationRequired,
                "UPDATE" => FactEvent::Update,
                "DELETE" => FactEvent::Delete,
                "NONE" => FactEvent::None,
                _ => FactEvent::Add,
            };
            let names_prior = match label.prior.and_then(|p| prior.get(p)) {
                Some(id) if expected != FactEvent::ConfirmationRequired => {
                    r.id == *id || r.previous_id == Some(*id)
                }
                _ => true,
            };
            let right = r.event == expected && names_prior;
            if !right {
                s.misses.push(format!(
                    "#{} decided {} (previous {:?}) for {:?}; labelled {}{}",
                    c.id,
                    r.event.as_str(),
                    r.previous_memory,
                    label.text,
                    label.event,
                    if names_prior {
                        ""
                    } else {
                        ", naming another prior entry"
                    }
                ));
            }
            s.decisions += 1;
            s.decisions_right += usize::from(right);
            let e = s.by_event.entry(label.event.clone()).or_default();
            e.0 += 1;
            e.1 += usize::from(right);
        }
    }
    Ok(s)
}

/// Writes a conversation's prior memory as learning would have left it: a user's fact as a
/// long-term memory, a preference, a rule or anything learned as a declarative entry (a
/// learned one through its confirmation); their ids in order.
fn write_prior(memory: &Engine, c: &LabelledConversation) -> Result<Vec<MemoryId>> {
    let mut ids = Vec::new();
    let ns = Namespace::default_ns();
    for p in &c.prior {
        let mut put = Put::new(memory.partition(&ns), None, json!(p.text));
        put.scope = if p.kind == Category::Fact && p.source == Source::UserStated {
            muisti::MemoryScope::LongTerm
        } else {
            muisti::MemoryScope::Declarative
        };
        put.category = p.kind.clone();
        put.source = p.source.clone();
        put.confidence = p.confidence;
        put.owner.user_id = Some(c.user.clone());
        // Written a day before the conversation.
        put.valid_from = c
            .messages
            .first()
            .and_then(|m| m.created_at)
            .map(|t| Timestamp::from_millis(t.as_millis() - 86_400_000));
        if put.scope == muisti::MemoryScope::LongTerm {
            ids.push(memory.remember(put)?.memory.id);
            continue;
        }
        let d = match memory.declarative().declare(put) {
            Err(Error::ConfirmationRequired(p)) => {
                let user = p.owner.user_id.clone().unwrap_or_default();
                memory.declarative().confirm(&p.id.to_string(), &user)?
            }
            other => other?,
        };
        ids.push(d.memory.id);
    }
    Ok(ids)
}
