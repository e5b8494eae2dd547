//! Conversations as messages, over the store contract: each message is a record of its own
//! in [`MESSAGES_NAMESPACE`] (key `<conversation id>/<sequence>/<unique id>`, found by the
//! conversation's id as `session_id`, role and sequence in its metadata), and each
//! conversation has a small header record in [`CONVERSATIONS_NAMESPACE`] (keyed by its id).
//! A turn appends its messages (one batch) and rewrites the header; it never rewrites
//! earlier messages. Two writers appending at once both keep their messages (the unique id
//! in the key), ordered by sequence then id.
//!
//! Conversations stored by earlier versions as one record with a `messages` array are read
//! as they are, and moved to message records by their next append.

use muisti_core::{
    Category, Error, Filter, Key, Locator, Memory, MemoryId, Owner, Put, Result, Timestamp,
    Written, list_all,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::core::{Core, corrupted};

use crate::records::Header;
pub use crate::records::{CONVERSATIONS_NAMESPACE, MESSAGES_NAMESPACE};

/// A message to append.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NewMessage {
    /// `user`, `assistant`, `tool`, `system` or another role name.
    pub role: String,
    /// The text.
    pub content: String,
    /// Who said it, when the role does not say (a speaker's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Anything else kept with it (tool calls, a tool call's id).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

/// The rules of messages a caller appends (the API's `POST /v1/conversations/{id}/messages`):
/// 1 to [`MAX_MESSAGES`](crate::facts::MAX_MESSAGES) of them, each with a role name (1-64
/// characters of `a-z A-Z 0-9 _ - . :`), text that is not blank and at most
/// [`MAX_MESSAGE_BYTES`](crate::facts::MAX_MESSAGE_BYTES), and a speaker name as owner fields
/// are. The one check every face calls.
pub fn check_new_messages(messages: &[NewMessage]) -> Result<()> {
    crate::facts::check_messages(
        messages
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_str(), &m.name)),
        |i, role| {
            if muisti_core::is_open_name(role) {
                Ok(())
            } else {
                Err(Error::invalid(
                    "messages",
                    format!("message {i}: role must be 1-64 characters of a-z A-Z 0-9 _ - . :"),
                ))
            }
        },
    )
}

/// A stored message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The record's id.
    pub id: MemoryId,
    /// Its place in the conversation, from 0.
    pub seq: u64,
    /// What was said, as it was appended.
    #[serde(flatten)]
    pub message: NewMessage,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// A conversation's header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationInfo {
    /// Its id.
    pub id: String,
    /// The user it is with, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Messages appended so far.
    pub messages: u64,
    /// When it started.
    pub created_at: Timestamp,
    /// When a message was last appended.
    pub updated_at: Timestamp,
}

fn check_id(id: &str) -> Result<()> {
    Filter {
        session_id: Some(id.to_owned()),
        ..Filter::default()
    }
    .validate()
}

/// A message record as a [`StoredMessage`].
fn message_of(m: &Memory) -> Result<StoredMessage> {
    let field = |k: &str| m.metadata.get(k);
    let seq = field("seq")
        .and_then(Value::as_u64)
        .ok_or_else(|| corrupted(format!("message {}", m.id), "no sequence"))?;
    let role = field("role")
        .and_then(Value::as_str)
        .ok_or_else(|| corrupted(format!("message {}", m.id), "no role"))?
        .to_owned();
    let extra = match field("extra") {
        Some(Value::Object(o)) => o.clone(),
        _ => Map::new(),
    };
    Ok(StoredMessage {
        id: m.id,
        seq,
        message: NewMessage {
            role,
            content: m.text().into_owned(),
            name: field("name").and_then(Value::as_str).map(str::to_owned),
            extra,
        },
        created_at: m.created_at,
    })
}

impl Header {
    /// The header `record` holds: its fields, the record's key for a missing `id` (the key
    /// is the conversation's id), its time for a missing time; a record that is no object,
    /// or whose `id` is not text, is not a header.
    fn read(record: &Memory) -> Result<Self> {
        let at = || format!("conversation {}", record.key);
        let v = &record.content;
        if !v.is_object() {
            return Err(corrupted(at(), "not a conversation header"));
        }
        let legacy = v.get("messages").and_then(Value::as_array).cloned();
        let time = |k: &str| {
            v.get(k)
                .and_then(|t| serde_json::from_value::<Timestamp>(t.clone()).ok())
                .unwrap_or(record.created_at)
        };
        Ok(Header {
            id: match v.get("id") {
                None => record.key.to_string(),
                Some(Value::String(id)) => id.clone(),
                Some(_) => return Err(corrupted(at(), "an id that is not text")),
            },
            messages: match &legacy {
                Some(l) => l.len() as u64,
                None => v.get("messages").and_then(Value::as_u64).unwrap_or(0),
            },
            created_at: time("created_at"),
            updated_at: time("updated_at"),
            legacy,
        })
    }
}

/// How many times a pop reads the conversation again when another took its last message.
const POP_ATTEMPTS: usize = 3;

/// Conversations ([`Engine::conversations`](crate::Engine::conversations)): their messages, appended in order, and a
/// header each. A handle over what the engine's parts share; cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Conversations<'a> {
    pub(crate) core: &'a Core,
}

impl Conversations<'_> {
    fn header_at(&self, id: &str) -> Result<Locator> {
        Ok(Locator::Key {
            partition: self.core.own_partition(CONVERSATIONS_NAMESPACE),
            key: Key::new(id)?,
        })
    }

    /// A conversation's header, if it exists.
    pub fn info(&self, id: &str) -> Result<Option<ConversationInfo>> {
        check_id(id)?;
        let Some(record) = self.core.store.get(&self.header_at(id)?)? else {
            return Ok(None);
        };
        let h = Header::read(&record)?;
        Ok(Some(ConversationInfo {
            id: h.id,
            user_id: record.owner.user_id,
            messages: h.messages,
            created_at: h.created_at,
            updated_at: h.updated_at,
        }))
    }

    /// The conversations (of `user_id`, if given), oldest first. A record of the namespace
    /// that is no conversation header (written there by hand or by another program) is left
    /// out and logged: one stray record does not hide every conversation.
    pub fn list(&self, user_id: Option<&str>) -> Result<Vec<ConversationInfo>> {
        let filter = Filter {
            user_id: user_id.map(str::to_owned),
            ..Filter::default()
        };
        filter.validate()?;
        let partition = self.core.own_partition(CONVERSATIONS_NAMESPACE);
        Ok(list_all(self.core.store.as_ref(), &partition, &filter)?
            .iter()
            .filter_map(|r| match Header::read(r) {
                Ok(h) => Some(ConversationInfo {
                    id: h.id,
                    user_id: r.owner.user_id.clone(),
                    messages: h.messages,
                    created_at: h.created_at,
                    updated_at: h.updated_at,
                }),
                Err(e) => {
                    tracing::warn!(id = %r.id, error = %e, "a record of the conversations namespace is no conversation; left out");
                    None
                }
            })
            .collect())
    }

    /// A conversation's messages in order (empty when it has none or does not exist).
    pub fn messages(&self, id: &str) -> Result<Vec<StoredMessage>> {
        check_id(id)?;
        if let Some(record) = self.core.store.get(&self.header_at(id)?)?
            && let Some(legacy) = Header::read(&record)?.legacy
        {
            return Ok(legacy
                .iter()
                .enumerate()
                .map(|(seq, v)| legacy_message(v, seq as u64, record.created_at))
                .collect());
        }
        self.message_records(id)?.iter().map(message_of).collect()
    }

    /// The records of conversation `id`'s messages, in order (by sequence, then id).
    fn message_records(&self, id: &str) -> Result<Vec<Memory>> {
        let filter = Filter {
            session_id: Some(id.to_owned()),
            ..Filter::default()
        };
        let partition = self.core.own_partition(MESSAGES_NAMESPACE);
        let mut records = list_all(self.core.store.as_ref(), &partition, &filter)?;
        records.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(records)
    }

    /// Appends messages to conversation `id` (creating it), owned by `owner` (its user and
    /// agent; the session is the conversation): one batch of message records, then the
    /// header. Returns the stored messages.
    pub fn append(
        &self,
        id: &str,
        owner: &Owner,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<StoredMessage>> {
        check_id(id)?;
        owner.validate()?;
        if messages.is_empty() {
            return Ok(Vec::new());
        }
        let header_at = self.header_at(id)?;
        let existing = self.core.store.get(&header_at)?;
        let header = existing.as_ref().map(Header::read).transpose()?;
        let mut carried: Vec<NewMessage> = Vec::new();
        if let Some(legacy) = header.as_ref().and_then(|h| h.legacy.as_ref()) {
            // Stored by an earlier version: its messages become records first.
            carried = legacy
                .iter()
                .enumerate()
                .map(|(seq, v)| legacy_message(v, seq as u64, Timestamp::from_millis(0)).message)
                .collect();
        }
        let session = Owner {
            session_id: Some(id.to_owned()),
            ..owner.clone()
        };
        let partition = self.core.own_partition(MESSAGES_NAMESPACE);
        let first = self.core.store.count(
            &partition,
            &Filter {
                session_id: Some(id.to_owned()),
                ..Filter::default()
            },
        )?;
        let fresh = messages.len();
        let mut puts = Vec::new();
        for (i, m) in carried.into_iter().chain(messages).enumerate() {
            if m.content.is_empty() && m.extra.is_empty() {
                return Err(Error::invalid("content", "a message needs text"));
            }
            let seq = first + i as u64;
            let key = Key::new(format!("{id}/{seq:010}/{}", MemoryId::generate()))?;
            let mut put = Put::new(partition.clone(), Some(key), m.content);
            put.category = Category::Conversation;
            put.owner = session.clone();
            put.metadata.insert("seq".into(), json!(seq));
            put.metadata.insert("role".into(), json!(m.role));
            if let Some(name) = m.name {
                put.metadata.insert("name".into(), json!(name));
            }
            if !m.extra.is_empty() {
                put.metadata.insert("extra".into(), Value::Object(m.extra));
            }
            puts.push(put);
        }
        let total = first + puts.len() as u64;
        // The messages and the header in one batch: one transaction where the store has them.
        puts.push(self.header_put(id, session, total, header.map(|h| h.created_at))?);
        let mut written: Vec<Written> = self.core.put_many_embedded(puts)?;
        let changes: Vec<crate::core::Change<'_>> = written
            .iter()
            .map(|w| crate::core::Change::written(w, None))
            .collect();
        self.core.after_write(&changes)?;
        written.pop();
        written[written.len().saturating_sub(fresh)..]
            .iter()
            .map(|w| message_of(&w.memory))
            .collect()
    }

    /// The write of conversation `id`'s header: `messages` of them now, owned by `session`
    /// (the conversation's user and agent, the conversation as its session).
    fn header_put(
        &self,
        id: &str,
        session: Owner,
        messages: u64,
        created_at: Option<Timestamp>,
    ) -> Result<Put> {
        let now = self.core.clock.now();
        let header = Header {
            id: id.to_owned(),
            messages,
            created_at: created_at.unwrap_or(now),
            updated_at: now,
            legacy: None,
        };
        let value = crate::records::CONVERSATIONS.encode(&header)?;
        let mut head = Put::new(
            self.core.own_partition(CONVERSATIONS_NAMESPACE),
            Some(Key::new(id)?),
            value,
        );
        head.owner = session;
        head.category = Category::Conversation;
        Ok(head)
    }

    /// Removes conversation `id`'s last message (an undo: a framework's session that takes
    /// back what it added) and returns it; `None` when it has none. Memories already
    /// extracted from the message stay (they are the user's, deleted on their own).
    pub fn pop(&self, id: &str) -> Result<Option<StoredMessage>> {
        check_id(id)?;
        let Some(record) = self.core.store.get(&self.header_at(id)?)? else {
            return Ok(None);
        };
        let header = Header::read(&record)?;
        if header.legacy.is_some() {
            return Err(Error::conflicting(
                "conversation",
                "stored by an earlier version as one record: append a message to move it to \
                 message records first",
            ));
        }
        // Another pop may take the last message first: then the one before it is this
        // pop's, read again (a few times at most).
        let mut taken = None;
        for _ in 0..POP_ATTEMPTS {
            let mut records = self.message_records(id)?;
            let Some(last) = records.pop() else {
                return Ok(None);
            };
            let message = message_of(&last)?;
            if self.core.forget_record(last)? {
                taken = Some((message, records.len() as u64));
                break;
            }
        }
        let Some((message, left)) = taken else {
            return Err(Error::Conflict(format!(
                "conversation {id}: its last message was taken by others {POP_ATTEMPTS} times"
            )));
        };
        let head = self.header_put(id, record.owner.clone(), left, Some(header.created_at))?;
        let written = self.core.put_many_embedded(vec![head])?;
        let changes: Vec<crate::core::Change<'_>> = written
            .iter()
            .map(|w| crate::core::Change::written(w, None))
            .collect();
        self.core.after_write(&changes)?;
        Ok(Some(message))
    }

    /// Deletes a conversation: its messages, its header, and its scratch and short-term
    /// memories. Returns how many records went (0 when there was none).
    pub fn delete(&self, id: &str) -> Result<u64> {
        check_id(id)?;
        let filter = Filter {
            session_id: Some(id.to_owned()),
            ..Filter::default()
        };
        let mut deleted = self
            .core
            .delete_matching(&crate::core::own_namespace(MESSAGES_NAMESPACE), &filter)?;
        deleted += u64::from(self.core.store.delete(&self.header_at(id)?)?);
        deleted += self.core.clear_conversation(
            id,
            &[
                muisti_core::MemoryScope::Scratch,
                muisti_core::MemoryScope::ShortTerm,
            ],
        )?;
        Ok(deleted)
    }
}

/// A message of an earlier version's inline array (`{"role", "content", ...}`).
fn legacy_message(v: &Value, seq: u64, at: Timestamp) -> StoredMessage {
    let mut extra = v.as_object().cloned().unwrap_or_default();
    let take = |extra: &mut Map<String, Value>, k: &str| {
        extra.remove(k).and_then(|v| v.as_str().map(str::to_owned))
    };
    let role = take(&mut extra, "role").unwrap_or_else(|| "user".to_owned());
    let content = take(&mut extra, "content").unwrap_or_default();
    let name = take(&mut extra, "name");
    StoredMessage {
        id: MemoryId::generate(),
        seq,
        message: NewMessage {
            role,
            content,
            name,
            extra,
        },
        created_at: at,
    }
}
