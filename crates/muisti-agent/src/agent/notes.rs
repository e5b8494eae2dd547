//! The agent's working memory: notes the model keeps with the `note` tool, in the scratch
//! scope (gone when the turn ends) or the short-term scope (kept until the conversation
//! ends, and shown in every prompt of that conversation).

use muisti::{ListQuery, Memory, Owner, Put};
use serde_json::{Value, json};

use super::*;
use crate::ToolSpec;

/// The name of the built-in tool (a tool of the builder with this name replaces it).
pub const NOTE_TOOL: &str = "note";

/// Longest note, in bytes: working state, not documents.
pub const MAX_NOTE_BYTES: usize = 2048;

/// Most short-term notes of a conversation shown in a prompt (the newest).
pub const MAX_NOTES_SHOWN: usize = 20;

/// What the model is told about the note tool.
pub(super) fn spec() -> ToolSpec {
    ToolSpec {
        name: NOTE_TOOL.to_owned(),
        description: "Keep a working note for yourself. keep=\"turn\" (the default) keeps it \
                      until you have answered this message; keep=\"conversation\" keeps it, \
                      and shows it to you with every later message, until the conversation \
                      ends. Not for facts about the user that should last."
            .to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "The note."},
                "keep": {"type": "string", "enum": ["turn", "conversation"]}
            },
            "required": ["text"],
            "additionalProperties": false
        }),
    }
}

impl Agent {
    /// Whether the model is offered the note tool in `conversation`: with memory, in a
    /// conversation, with working notes on and no tool of the builder named like it.
    pub(super) fn notes_offered(&self, conversation: Option<&str>) -> bool {
        self.inner.working_notes
            && self.inner.memory.is_some()
            && conversation.is_some()
            && !self.inner.tools.iter().any(|t| t.spec().name == NOTE_TOOL)
    }

    /// Runs the note tool: stores the note in the scope its `keep` asks for, as a memory of
    /// the agent's user and agent with the conversation as its session.
    pub(super) fn write_note(
        &self,
        conversation: &str,
        args: &Value,
    ) -> std::result::Result<String, String> {
        let text = args
            .get("text")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or("give the note as a non-empty string `text`")?;
        if text.len() > MAX_NOTE_BYTES {
            return Err(format!(
                "the note is {} bytes; the limit is {MAX_NOTE_BYTES}",
                text.len()
            ));
        }
        let (scope, kept) = match args.get("keep").and_then(Value::as_str) {
            None | Some("turn") => (MemoryScope::Scratch, "until this message is answered"),
            Some("conversation") => (MemoryScope::ShortTerm, "until the conversation ends"),
            Some(other) => {
                return Err(format!(
                    "keep is \"turn\" or \"conversation\", not {other:?}"
                ));
            }
        };
        let memory = self.inner.memory.as_ref().ok_or("no memory")?;
        let mut put = Put::new(memory.partition(&Namespace::default_ns()), None, text);
        put.scope = scope;
        put.owner = Owner {
            user_id: self.inner.filter.user_id.clone(),
            agent_id: self.inner.filter.agent_id.clone(),
            session_id: Some(conversation.to_owned()),
        };
        memory.remember(put).map_err(|e| e.to_string())?;
        Ok(format!("noted, kept {kept}"))
    }

    /// The newest [`MAX_NOTES_SHOWN`] short-term notes of `conversation`, oldest first (a
    /// failing read is logged and shows none).
    pub(super) fn conversation_notes(&self, conversation: Option<&str>) -> Vec<Memory> {
        let (Some(memory), Some(id)) = (&self.inner.memory, conversation) else {
            return Vec::new();
        };
        let query = ListQuery {
            partition: memory.partition(&Namespace::default_ns()),
            filter: Filter {
                session_id: Some(id.to_owned()),
                scope: Some(MemoryScope::ShortTerm),
                ..Filter::default()
            },
            ..ListQuery::default()
        };
        match memory.list(query) {
            Ok(page) => {
                let skip = page.items.len().saturating_sub(MAX_NOTES_SHOWN);
                page.items.into_iter().skip(skip).collect()
            }
            Err(e) => {
                warn!(kind = %e.kind(), error = %e, "the conversation's notes could not be read");
                Vec::new()
            }
        }
    }
}
