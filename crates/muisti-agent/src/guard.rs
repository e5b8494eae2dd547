//! Guards: blocked phrases and patterns, checked against the user's message and against the
//! memory that recall would inject.

use regex::{Regex, RegexBuilder};

use crate::{AgentError, GuardTarget, Result};

/// A named set of blocked phrases (case-insensitive) and patterns (regular expressions).
/// When any of them occurs in a text the guard watches, the message is not sent and the
/// error names the guard, never the text.
#[derive(Clone, Debug)]
pub struct Guard {
    name: String,
    phrases: Vec<String>,
    patterns: Vec<Regex>,
    message: bool,
    memory: bool,
}

/// Lower case with runs of whitespace made one space, so phrases match across line breaks.
fn normalise(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

impl Guard {
    /// A guard with nothing blocked yet, watching the message and injected memory.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            phrases: Vec::new(),
            patterns: Vec::new(),
            message: true,
            memory: true,
        }
    }

    /// The guard's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Blocks a phrase, matched case-insensitively with any whitespace between its words.
    pub fn phrase(mut self, phrase: impl AsRef<str>) -> Self {
        let p = normalise(phrase.as_ref());
        if !p.is_empty() {
            self.phrases.push(p);
        }
        self
    }

    /// Blocks a regular expression (case-insensitive); an invalid one is an error.
    pub fn pattern(mut self, pattern: &str) -> Result<Self> {
        let re = RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| AgentError::invalid("guard pattern", e.to_string()))?;
        self.patterns.push(re);
        Ok(self)
    }

    /// Watches only one kind of text.
    pub fn only(mut self, target: GuardTarget) -> Self {
        self.message = target == GuardTarget::Message;
        self.memory = target == GuardTarget::Memory;
        self
    }

    /// Whether the guard watches `target`.
    pub fn watches(&self, target: GuardTarget) -> bool {
        match target {
            GuardTarget::Message => self.message,
            GuardTarget::Memory => self.memory,
        }
    }

    /// Whether `text` holds a blocked phrase or pattern.
    pub fn matches(&self, text: &str) -> bool {
        if !self.phrases.is_empty() {
            let t = normalise(text);
            if self.phrases.iter().any(|p| t.contains(p.as_str())) {
                return true;
            }
        }
        self.patterns.iter().any(|re| re.is_match(text))
    }
}

/// The first guard watching `target` that matches `text`, as an error.
pub(crate) fn check(guards: &[Guard], target: GuardTarget, text: &str) -> Result<()> {
    match guards.iter().find(|g| g.watches(target) && g.matches(text)) {
        Some(g) => {
            tracing::warn!(guard = %g.name, %target, "guard blocked a message");
            Err(AgentError::Blocked {
                guard: g.name.clone(),
                target,
            })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_ignore_case_and_whitespace() {
        let g = Guard::new("secrets").phrase("Internal  Only");
        assert!(g.matches("this is INTERNAL\nonly, sorry"));
        assert!(!g.matches("internal use"));
    }

    #[test]
    fn patterns_and_targets() -> Result<()> {
        let g = Guard::new("cards")
            .pattern(r"\b\d{4}-\d{4}-\d{4}-\d{4}\b")?
            .only(GuardTarget::Memory);
        assert!(g.matches("card 1234-5678-9012-3456"));
        assert!(
            check(
                std::slice::from_ref(&g),
                GuardTarget::Message,
                "1234-5678-9012-3456"
            )
            .is_ok()
        );
        let err = check(&[g], GuardTarget::Memory, "1234-5678-9012-3456");
        assert!(
            matches!(err, Err(AgentError::Blocked { ref guard, target: GuardTarget::Memory }) if guard == "cards")
        );
        Ok(())
    }

    #[test]
    fn an_invalid_pattern_is_a_typed_error() {
        let err = Guard::new("x").pattern("(unclosed");
        assert!(matches!(err, Err(AgentError::InvalidInput { .. })));
    }
}
