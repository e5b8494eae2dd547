//! The memory record and the write request that creates or replaces one.

use std::{borrow::Cow, fmt};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::{Error, Key, MemoryId, Partition, Result, Timestamp, Ttl};

macro_rules! open_enum {
    (
        $(#[$doc:meta])* $name:ident, $field:literal,
        { $( $(#[$vdoc:meta])* $variant:ident => $text:literal ),* $(,)? }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )*
            /// Any other name: 1-64 characters of `a-z A-Z 0-9 _ - . :`.
            Custom(String),
        }

        impl $name {
            /// Parses a name; known names map to their variant.
            pub fn parse(s: &str) -> Result<Self> {
                match s {
                    $( $text => Ok(Self::$variant), )*
                    other => {
                        if is_open_name(other) {
                            Ok(Self::Custom(other.to_owned()))
                        } else {
                            Err(Error::invalid(
                                $field,
                                format!("{other:?} must be 1-64 characters of a-z A-Z 0-9 _ - . :"),
                            ))
                        }
                    }
                }
            }

            /// The name as written in storage and JSON.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )*
                    Self::Custom(s) => s,
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(s: String) -> Result<Self> {
                Self::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.as_str().to_owned()
            }
        }

        impl std::str::FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::parse(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

open_enum!(
    /// What a memory is about.
    Category, "category", {
        /// Long-term facts, preferences and decisions (the default).
        #[default]
        Core => "core",
        /// Daily session logs.
        Daily => "daily",
        /// Conversation context.
        Conversation => "conversation",
        /// A declarative fact about the user ("I live in Lisbon").
        Fact => "fact",
        /// A declarative preference ("I prefer window seats").
        Preference => "preference",
        /// A declarative rule for the agent ("Always answer in French").
        Rule => "rule",
    }
);

open_enum!(
    /// Where a memory came from.
    Source, "source", {
        /// The user said it (the default).
        #[default]
        UserStated => "user_stated",
        /// The agent inferred it; usually carries a confidence.
        AgentLearned => "agent_learned",
        /// Imported in bulk.
        Import => "import",
    }
);

/// How long a memory is meant to live and how it is evicted.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// Cleared after each turn.
    Scratch,
    /// Cleared when the conversation ends.
    ShortTerm,
    /// Permanent, evicted least-recently-used above a cap (the default).
    #[default]
    LongTerm,
    /// Events, removed after a retention period.
    Episodic,
    /// Facts, preferences and rules the user stated or confirmed; never evicted.
    Declarative,
}

impl MemoryScope {
    /// Every scope.
    pub const ALL: [MemoryScope; 5] = [
        MemoryScope::Scratch,
        MemoryScope::ShortTerm,
        MemoryScope::LongTerm,
        MemoryScope::Episodic,
        MemoryScope::Declarative,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryScope::Scratch => "scratch",
            MemoryScope::ShortTerm => "short_term",
            MemoryScope::LongTerm => "long_term",
            MemoryScope::Episodic => "episodic",
            MemoryScope::Declarative => "declarative",
        }
    }

    /// Parses the snake_case name.
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "scratch" => MemoryScope::Scratch,
            "short_term" => MemoryScope::ShortTerm,
            "long_term" => MemoryScope::LongTerm,
            "episodic" => MemoryScope::Episodic,
            "declarative" => MemoryScope::Declarative,
            other => {
                return Err(Error::invalid(
                    "scope",
                    format!(
                        "{other:?} is not one of scratch, short_term, long_term, episodic, declarative"
                    ),
                ));
            }
        })
    }
}

impl std::str::FromStr for MemoryScope {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for MemoryScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a memory is in force.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryState {
    /// Current and recallable (the default).
    #[default]
    Active,
    /// Moved out of recall by the lifecycle; still readable by id.
    Archived,
    /// Replaced by a newer memory (`superseded_by`).
    Superseded,
}

impl MemoryState {
    /// Every state.
    pub const ALL: [MemoryState; 3] = [
        MemoryState::Active,
        MemoryState::Archived,
        MemoryState::Superseded,
    ];

    /// Its name: `active`, `archived` or `superseded`.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryState::Active => "active",
            MemoryState::Archived => "archived",
            MemoryState::Superseded => "superseded",
        }
    }

    /// The state with this name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "state",
                    format!("{s:?} is not one of active, archived, superseded"),
                )
            })
    }
}

impl fmt::Display for MemoryState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a memory belongs to, within its partition. All optional; filters match on them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Owner {
    /// The end user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The agent that wrote or uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The session or conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// One stored memory: a fact, a preference, a conversation turn, or a key-value entry.
///
/// Key-value entries and memories are the same record; a key-value entry's `content` may be
/// any JSON value, a memory's is a string.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Unique id (ULID).
    pub id: MemoryId,
    /// Tenant and namespace.
    #[serde(flatten)]
    pub partition: Partition,
    /// Unique within the partition; defaults to the id.
    pub key: Key,
    /// The text of a memory, or any JSON value for a key-value entry.
    pub content: Value,
    /// Text that situates the memory without being part of it, for example the conversation
    /// turn it answers. Recall indexes it at a lower weight than the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// What it is about.
    pub category: Category,
    /// How long it lives and how it is evicted.
    pub scope: MemoryScope,
    /// User, agent, session.
    #[serde(flatten)]
    pub owner: Owner,
    /// Free labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Any JSON object.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// 0.0 to 1.0; 0.5 unless set.
    pub importance: f32,
    /// Provenance.
    pub source: Source,
    /// 0 to 100 for learned patterns; `None` for stated facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u8>,
    /// Hash of the normalised content text (see [`content_hash`]).
    pub content_hash: String,
    /// Active, archived or superseded.
    #[serde(default)]
    pub state: MemoryState,
    /// The memory that replaced this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<MemoryId>,
    /// When the fact became true, if known (temporal knowledge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<Timestamp>,
    /// When the fact stopped being true, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Timestamp>,
    /// First written.
    pub created_at: Timestamp,
    /// Last written.
    pub updated_at: Timestamp,
    /// Last returned by recall or read through the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_accessed_at: Option<Timestamp>,
    /// How often it was accessed.
    #[serde(default)]
    pub access_count: u64,
    /// When it expires; `None` never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// The embedding model that indexed it, for reindexing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// How many times the record was written: 1 when created, one more on each replace or
    /// update (not on access counts or reindexing). Conditional updates compare it.
    #[serde(default = "first_version")]
    pub version: u64,
}

fn first_version() -> u64 {
    1
}

impl Memory {
    /// The key the writer gave, or `None` when the key is just the id (a keyless write).
    pub fn writer_key(&self) -> Option<&Key> {
        (!self.id.is_written_as(self.key.as_str())).then_some(&self.key)
    }

    /// The content as text: a string as it is, any other JSON value serialized.
    pub fn text(&self) -> Cow<'_, str> {
        value_text(&self.content)
    }

    /// The text that full-text search indexes: the key (unless it is just the id) and the
    /// content, so a key that names what a value is about is found too.
    pub fn index_text(&self) -> Cow<'_, str> {
        match self.writer_key() {
            None => self.text(),
            Some(key) => Cow::Owned(format!("{key} {}", self.text())),
        }
    }

    /// Whether the memory has expired at `now`.
    pub fn is_expired(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|t| t <= now)
    }
}

/// The text of a JSON value: a string as it is, anything else serialized.
pub fn value_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// The hash used for dedupe: SHA-256 over the lower-cased, whitespace-collapsed text, first
/// 16 bytes as hex.
pub fn content_hash(text: &str) -> String {
    let mut h = Sha256::new();
    let mut first = true;
    for word in text.split_whitespace() {
        if !first {
            h.update(b" ");
        }
        first = false;
        h.update(word.to_lowercase().as_bytes());
    }
    let digest = h.finalize();
    let mut out = String::with_capacity(32);
    for b in &digest[..16] {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Limits every store enforces before writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest content plus metadata, serialized, in bytes. Default 1 MiB.
    pub max_value_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_value_bytes: 1 << 20,
        }
    }
}

/// A write: creates the record at `(partition, key)` or replaces its content and fields.
///
/// Replacing keeps the id, `created_at`, access statistics and `state` of the existing
/// record. Build one with [`Put::new`] and the `with_*` methods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Put {
    /// Where to write.
    pub partition: Partition,
    /// The key; `None` makes a new record keyed by its id.
    pub key: Option<Key>,
    /// The value.
    pub content: Value,
    /// Situating text, indexed at a lower weight (see [`Memory::context`]).
    #[serde(default)]
    pub context: Option<String>,
    /// Category.
    #[serde(default)]
    pub category: Category,
    /// Scope.
    #[serde(default)]
    pub scope: MemoryScope,
    /// Owner fields.
    #[serde(default)]
    pub owner: Owner,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Metadata object.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Importance, 0.0 to 1.0; 0.5 if not set.
    #[serde(default)]
    pub importance: Option<f32>,
    /// Provenance.
    #[serde(default)]
    pub source: Source,
    /// Confidence, 0 to 100.
    #[serde(default)]
    pub confidence: Option<u8>,
    /// Expire after this long; `None` never.
    #[serde(skip)]
    pub ttl: Option<Ttl>,
    /// When the fact became true.
    #[serde(default)]
    pub valid_from: Option<Timestamp>,
    /// When it stopped being true.
    #[serde(default)]
    pub valid_until: Option<Timestamp>,
    /// Embedding model that indexed it.
    #[serde(default)]
    pub embedding_model: Option<String>,
    /// The content's vector (unit length), made by `embedding_model`. Stored beside the
    /// record, not in it: reads return it only through [`Store::vectors`](crate::Store::vectors).
    #[serde(skip)]
    pub embedding: Option<Vec<f32>>,
}

const MAX_OWNER_CHARS: usize = 256;
/// Longest vector a store accepts.
pub const MAX_DIMENSIONS: usize = 8192;
/// Most tags a memory carries.
pub const MAX_TAGS: usize = 64;
const MAX_TAG_CHARS: usize = 64;

/// The rule of the open names (categories, sources, entity kinds beyond the known ones):
/// 1-64 characters of `a-z A-Z 0-9 _ - . :`.
pub fn is_open_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
}

/// The rule of an owner field (and of any name a request gives that way): 1-256 characters
/// without control characters.
pub fn check_owner_field(field: &'static str, v: &Option<String>) -> Result<()> {
    if let Some(v) = v
        && (v.is_empty() || v.chars().count() > MAX_OWNER_CHARS || v.chars().any(char::is_control))
    {
        return Err(Error::invalid(
            field,
            "must be 1-256 characters without control characters",
        ));
    }
    Ok(())
}

/// The tag rules: at most 64 tags, each 1-64 characters without control characters (tags of a
/// write, and tags a filter asks for: none could match a tag that breaks them).
pub fn check_tags(tags: &[String]) -> Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(Error::invalid("tags", "at most 64 tags"));
    }
    for t in tags {
        if t.is_empty() || t.chars().count() > MAX_TAG_CHARS || t.chars().any(char::is_control) {
            return Err(Error::invalid(
                "tags",
                "each tag must be 1-64 characters without control characters",
            ));
        }
    }
    Ok(())
}

impl Owner {
    /// The owner rules: each field given is 1-256 characters without control characters (for
    /// the owner of a write, and for a filter's owner: none could match one that breaks them).
    pub fn validate(&self) -> Result<()> {
        check_owner_field("user_id", &self.user_id)?;
        check_owner_field("agent_id", &self.agent_id)?;
        check_owner_field("session_id", &self.session_id)
    }
}

/// The field rules every write and every update meets: the one definition.
pub(crate) fn check_fields(
    owner: &Owner,
    importance: Option<f32>,
    confidence: Option<u8>,
    tags: &[String],
    valid_from: Option<Timestamp>,
    valid_until: Option<Timestamp>,
) -> Result<()> {
    owner.validate()?;
    if let Some(i) = importance
        && !(0.0..=1.0).contains(&i)
    {
        return Err(Error::invalid("importance", "must be between 0.0 and 1.0"));
    }
    if let Some(c) = confidence
        && c > 100
    {
        return Err(Error::invalid("confidence", "must be between 0 and 100"));
    }
    check_tags(tags)?;
    if let (Some(a), Some(b)) = (valid_from, valid_until)
        && b < a
    {
        return Err(Error::conflicting("valid_until", "it is before valid_from"));
    }
    Ok(())
}

/// The field rules and the size limit a whole record meets (an updated record, an
/// imported one): the one definition both call.
pub(crate) fn check_record(m: &Memory, limits: &Limits) -> Result<()> {
    check_fields(
        &m.owner,
        Some(m.importance),
        m.confidence,
        &m.tags,
        m.valid_from,
        m.valid_until,
    )?;
    check_size(&m.content, &m.metadata, m.context.as_deref(), limits)
}

/// The rule for a stored vector.
pub(crate) fn check_vector(v: &[f32]) -> Result<()> {
    if v.is_empty() || v.len() > MAX_DIMENSIONS || v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid(
            "embedding",
            "must have 1-8192 finite dimensions",
        ));
    }
    Ok(())
}

/// The size limit on content, metadata and context together.
pub(crate) fn check_size(
    content: &Value,
    metadata: &Map<String, Value>,
    context: Option<&str>,
    limits: &Limits,
) -> Result<()> {
    let size = json_size(content) + json_size_map(metadata) + context.map_or(0, str::len);
    if size > limits.max_value_bytes {
        return Err(Error::TooLarge {
            size,
            limit: limits.max_value_bytes,
        });
    }
    Ok(())
}

impl Put {
    /// What a write that duplicates `existing` (same owner and content) adds to it, as a
    /// patch, or `None` when it adds nothing: tags it lacks (appended), metadata fields
    /// (the write's values win), a higher importance or confidence. A duplicate write never
    /// loses what it brought; everything else of `existing` stays.
    pub fn merge_patch(&self, existing: &Memory) -> Option<crate::Patch> {
        let mut patch = crate::Patch::default();
        let new_tags: Vec<&String> = self
            .tags
            .iter()
            .filter(|t| !existing.tags.contains(t))
            .collect();
        if !new_tags.is_empty() {
            let mut tags = existing.tags.clone();
            tags.extend(new_tags.into_iter().cloned());
            tags.dedup();
            patch.tags = Some(tags);
        }
        if self
            .metadata
            .iter()
            .any(|(k, v)| existing.metadata.get(k) != Some(v))
        {
            let mut metadata = existing.metadata.clone();
            metadata.extend(self.metadata.clone());
            patch.metadata = Some(metadata);
        }
        if let Some(i) = self.importance
            && i > existing.importance
        {
            patch.importance = Some(i);
        }
        if let Some(c) = self.confidence
            && existing.confidence.is_none_or(|e| c > e)
        {
            patch.confidence = Some(Some(c));
        }
        (patch != crate::Patch::default()).then_some(patch)
    }

    /// A write of `content` at `key` (or at a fresh id) in `partition`, with defaults.
    pub fn new(partition: Partition, key: Option<Key>, content: impl Into<Value>) -> Self {
        Self {
            partition,
            key,
            content: content.into(),
            context: None,
            category: Category::default(),
            scope: MemoryScope::default(),
            owner: Owner::default(),
            tags: Vec::new(),
            metadata: Map::new(),
            importance: None,
            source: Source::default(),
            confidence: None,
            ttl: None,
            valid_from: None,
            valid_until: None,
            embedding_model: None,
            embedding: None,
        }
    }

    /// Sets the TTL.
    pub fn with_ttl(mut self, ttl: Option<Ttl>) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the category.
    pub fn with_category(mut self, category: Category) -> Self {
        self.category = category;
        self
    }

    /// Sets the owner fields.
    pub fn with_owner(mut self, owner: Owner) -> Self {
        self.owner = owner;
        self
    }

    /// The text this write makes searchable (see [`Memory::index_text`]): the key, if any,
    /// and the content.
    pub fn index_text(&self) -> Cow<'_, str> {
        match &self.key {
            Some(k) => Cow::Owned(format!("{k} {}", value_text(&self.content))),
            None => value_text(&self.content),
        }
    }

    /// Checks every field against its rule and the size limit. Stores call this before any IO.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        check_fields(
            &self.owner,
            self.importance,
            self.confidence,
            &self.tags,
            self.valid_from,
            self.valid_until,
        )?;
        if let Some(v) = &self.embedding {
            if self.embedding_model.is_none() {
                return Err(Error::invalid(
                    "embedding",
                    "a vector needs the id of the model that made it (embedding_model)",
                ));
            }
            check_vector(v)?;
        }
        check_size(
            &self.content,
            &self.metadata,
            self.context.as_deref(),
            limits,
        )
    }

    /// Validates every write of a batch; the first failure is returned and nothing should be
    /// written.
    pub fn validate_all(puts: &[Put], limits: &Limits) -> Result<()> {
        puts.iter().try_for_each(|p| p.validate(limits))
    }

    /// The record this write produces, given the record currently at its key (if any, and
    /// not expired) and the time of the write. Every store derives records through this one
    /// function, so upsert semantics are identical everywhere.
    ///
    /// The vector, if any, is not part of the record: take it with `put.embedding.take()`
    /// before calling this.
    pub fn apply(self, existing: Option<&Memory>, now: Timestamp) -> Memory {
        let id = existing.map_or_else(MemoryId::generate, |m| m.id);
        let key = match self.key {
            Some(k) => k,
            None => Key::from_id(id),
        };
        let content_hash = content_hash(&value_text(&self.content));
        Memory {
            id,
            partition: self.partition,
            key,
            content: self.content,
            context: self.context,
            category: self.category,
            scope: self.scope,
            owner: self.owner,
            tags: self.tags,
            metadata: self.metadata,
            importance: self.importance.unwrap_or(0.5),
            source: self.source,
            confidence: self.confidence,
            content_hash,
            state: existing.map(|m| m.state).unwrap_or_default(),
            superseded_by: existing.and_then(|m| m.superseded_by),
            valid_from: self.valid_from,
            valid_until: self.valid_until,
            created_at: existing.map_or(now, |m| m.created_at),
            updated_at: now,
            last_accessed_at: existing.and_then(|m| m.last_accessed_at),
            access_count: existing.map_or(0, |m| m.access_count),
            expires_at: self.ttl.map(|t| now.plus(t.duration())),
            embedding_model: self.embedding_model,
            version: existing.map_or(1, |m| m.version.saturating_add(1)),
        }
    }
}

fn json_size(v: &Value) -> usize {
    let mut counter = ByteCounter(0);
    // Serializing a Value into a counting writer cannot fail.
    let _ = serde_json::to_writer(&mut counter, v);
    counter.0
}

fn json_size_map(m: &Map<String, Value>) -> usize {
    if m.is_empty() {
        return 0;
    }
    let mut counter = ByteCounter(0);
    let _ = serde_json::to_writer(&mut counter, m);
    counter.0
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Namespace, Ttl};

    fn put(content: &str) -> Put {
        Put::new(
            Partition::of(Namespace::default_ns()),
            Some(Key::new("k").expect("valid")),
            content,
        )
    }

    #[test]
    fn apply_keeps_identity_on_replace() {
        let t0 = Timestamp::from_millis(1_000);
        let first = put("one").apply(None, t0);
        let second = put("two").apply(Some(&first), Timestamp::from_millis(2_000));
        assert_eq!(second.id, first.id);
        assert_eq!(second.created_at, t0);
        assert_eq!(second.updated_at, Timestamp::from_millis(2_000));
        assert_eq!(second.content, Value::from("two"));
    }

    #[test]
    fn ttl_sets_expiry() {
        let m = put("x")
            .with_ttl(Some(Ttl::from_secs(10).expect("valid")))
            .apply(None, Timestamp::from_millis(0));
        assert_eq!(m.expires_at, Some(Timestamp::from_millis(10_000)));
        assert!(!m.is_expired(Timestamp::from_millis(9_999)));
        assert!(m.is_expired(Timestamp::from_millis(10_000)));
    }

    #[test]
    fn validation_rejects_bad_fields() {
        let limits = Limits {
            max_value_bytes: 10,
        };
        assert!(matches!(
            put("this is longer than ten bytes").validate(&limits),
            Err(Error::TooLarge { .. })
        ));
        let mut p = put("ok");
        p.importance = Some(1.5);
        assert!(p.validate(&Limits::default()).is_err());
        let mut p = put("ok");
        p.confidence = Some(101);
        assert!(p.validate(&Limits::default()).is_err());
    }

    #[test]
    fn hash_normalises_case_and_space() {
        assert_eq!(
            content_hash("I moved  to Lisbon"),
            content_hash(" i moved to\tlisbon ")
        );
        assert_ne!(
            content_hash("I moved to Lisbon"),
            content_hash("I moved to Porto")
        );
    }

    #[test]
    fn categories_parse() {
        assert_eq!(Category::parse("core").expect("valid"), Category::Core);
        assert_eq!(
            Category::parse("notes").expect("valid"),
            Category::Custom("notes".into())
        );
        assert!(Category::parse("bad name").is_err());
        let json = serde_json::to_string(&Category::Daily).expect("serializes");
        assert_eq!(json, "\"daily\"");
    }
}
