//! Conversations: list, read, append to, end and delete.

use super::*;

pub(super) fn conversation_out(
    c: muisti::conversation::ConversationInfo,
) -> api::ConversationSummary {
    api::ConversationSummary {
        id: c.id,
        user_id: c.user_id,
        messages: c.messages,
        created_at: c.created_at.to_string(),
        updated_at: c.updated_at.to_string(),
    }
}

/// The conversations (of a user), oldest first.
pub fn conversations(engine: &Engine, p: api::ConversationParams) -> Result<api::Conversations> {
    Ok(api::Conversations {
        conversations: engine
            .conversations()
            .list(p.user_id.as_deref())?
            .into_iter()
            .map(conversation_out)
            .collect(),
    })
}

/// A conversation with its messages; an unknown id is not found.
pub fn conversation(engine: &Engine, id: &str) -> Result<api::ConversationDetail> {
    let info = engine
        .conversations()
        .info(id)?
        .ok_or_else(|| Error::NotFound(format!("conversation {id}")))?;
    let items = engine
        .conversations()
        .messages(id)?
        .into_iter()
        .map(message_out)
        .collect();
    Ok(api::ConversationDetail {
        summary: conversation_out(info),
        items,
    })
}

pub(super) fn message_out(m: muisti::conversation::StoredMessage) -> api::ConversationMessage {
    api::ConversationMessage {
        seq: m.seq,
        role: m.message.role,
        content: m.message.content,
        name: m.message.name,
        extra: m.message.extra,
        created_at: m.created_at.to_string(),
    }
}

/// Appends messages to a conversation, made on first use. A conversation with a user keeps
/// it: another `user_id` conflicts, none means its own.
pub fn append_messages(
    engine: &Engine,
    id: &str,
    req: api::AppendMessages,
) -> Result<api::AppendedMessages> {
    let messages: Vec<muisti::conversation::NewMessage> = req
        .messages
        .into_iter()
        .map(|m| muisti::conversation::NewMessage {
            role: m.role,
            content: m.content,
            name: m.name,
            extra: m.extra,
        })
        .collect();
    muisti::conversation::check_new_messages(&messages)?;
    muisti::check_owner_field("user_id", &req.user_id)?;
    muisti::check_owner_field("agent_id", &req.agent_id)?;
    let mut user_id = req.user_id;
    if let Some(info) = engine.conversations().info(id)? {
        match (&user_id, info.user_id) {
            (Some(asked), Some(own)) if *asked != own => {
                return Err(Error::conflicting(
                    "user_id",
                    "the conversation is another user's",
                ));
            }
            (None, own) => user_id = own,
            _ => {}
        }
    }
    let owner = muisti::Owner {
        user_id,
        agent_id: req.agent_id,
        ..muisti::Owner::default()
    };
    let stored = engine.conversations().append(id, &owner, messages)?;
    Ok(api::AppendedMessages {
        items: stored.into_iter().map(message_out).collect(),
    })
}

/// Deletes a conversation: its messages, its header, its scratch and short-term memories.
pub fn delete_conversation(engine: &Engine, id: &str) -> Result<api::Deleted> {
    Ok(api::Deleted {
        deleted: engine.conversations().delete(id)?,
    })
}

/// Takes back a conversation's last message; `NotFound` when it has none.
pub fn pop_message(engine: &Engine, id: &str) -> Result<api::ConversationMessage> {
    engine
        .conversations()
        .pop(id)?
        .map(message_out)
        .ok_or_else(|| Error::NotFound(format!("a message of conversation {id}")))
}

/// Ends a conversation: deletes its scratch and short-term memories in every namespace.
pub fn end_conversation(engine: &Engine, id: &str) -> Result<api::Deleted> {
    Ok(api::Deleted {
        deleted: engine.end_conversation(id)?,
    })
}
