//! Requests that read: locators, filters, listings and searches.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{Category, Key, Memory, MemoryId, MemoryScope, Owner, Partition, Tenant, Timestamp};

/// Addresses one record: by key within a partition, or by id within a tenant.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Locator {
    /// The record at `key` in `partition`.
    Key {
        /// Tenant and namespace.
        partition: Partition,
        /// The key.
        key: Key,
    },
    /// The record with this id in `tenant`, whatever its namespace.
    Id {
        /// The tenant the id must belong to.
        tenant: Tenant,
        /// The id.
        id: MemoryId,
    },
}

impl Locator {
    /// The tenant the locator is confined to.
    pub fn tenant(&self) -> &Tenant {
        match self {
            Locator::Key { partition, .. } => &partition.tenant,
            Locator::Id { tenant, .. } => tenant,
        }
    }

    /// How the locator reads in a message: `memory <id>` or `memory "<key>" in <namespace>`
    /// (names only, never stored values).
    pub fn describe(&self) -> String {
        match self {
            Locator::Key { partition, key } => {
                format!("memory {key:?} in {}", partition.namespace)
            }
            Locator::Id { id, .. } => format!("memory {id}"),
        }
    }

    /// Whether `m` is the record this locator addresses.
    pub fn addresses(&self, m: &Memory) -> bool {
        match self {
            Locator::Key { partition, key } => &m.partition == partition && &m.key == key,
            Locator::Id { tenant, id } => &m.partition.tenant == tenant && &m.id == id,
        }
    }
}

/// Conditions a record must meet; every set field must match. The default matches all.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    /// Exact user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Only records that belong to no user (`user_id` unset): what a request acting for no
    /// user may see of the users' memories. Conflicts with `user_id`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub without_user: bool,
    /// Exact agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Exact session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Exact category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
    /// Exact scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<MemoryScope>,
    /// Every one of these tags, each matched as [`same_tag`] says (`travel` finds `Travel`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Each of these metadata fields equals the given JSON value.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// Created at or after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_after: Option<Timestamp>,
    /// Created before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_before: Option<Timestamp>,
    /// Exact content hash (see [`content_hash`](crate::content_hash)): finds duplicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

impl Filter {
    /// The rules of the values a filter asks for: owner fields and tags as a write's (a
    /// value no memory could have is an error, not an empty answer).
    pub fn validate(&self) -> crate::Result<()> {
        crate::memory::check_owner_field("user_id", &self.user_id)?;
        if self.without_user && self.user_id.is_some() {
            return Err(crate::Error::conflicting(
                "without_user",
                "a filter asks for one user's records or for those of no user, not both",
            ));
        }
        crate::memory::check_owner_field("agent_id", &self.agent_id)?;
        crate::memory::check_owner_field("session_id", &self.session_id)?;
        crate::check_tags(&self.tags)
    }

    /// Whether `m` meets every condition. This is the one definition of a filter: every
    /// in-memory matcher calls it (a backend's copy of the fields implements [`Filterable`]),
    /// SQL builders destructure [`Filter`] whole so a new field fails to compile until they
    /// handle it, and the conformance suite checks every backend against it.
    pub fn matches<M: Filterable + ?Sized>(&self, m: &M) -> bool {
        fn eq(want: &Option<String>, have: &Option<String>) -> bool {
            want.as_ref().is_none_or(|w| have.as_ref() == Some(w))
        }
        let Filter {
            user_id,
            without_user,
            agent_id,
            session_id,
            category,
            scope,
            tags,
            metadata,
            created_after,
            created_before,
            content_hash,
        } = self;
        let owner = m.owner();
        eq(user_id, &owner.user_id)
            && (!without_user || owner.user_id.is_none())
            && eq(agent_id, &owner.agent_id)
            && eq(session_id, &owner.session_id)
            && category.as_ref().is_none_or(|c| c == m.category())
            && scope.is_none_or(|s| s == m.scope())
            && tags
                .iter()
                .all(|t| m.tags().iter().any(|have| same_tag(have, t)))
            && metadata.iter().all(|(k, v)| m.metadata().get(k) == Some(v))
            && created_after.is_none_or(|t| m.created_at() >= t)
            && created_before.is_none_or(|t| m.created_at() < t)
            && content_hash.as_ref().is_none_or(|h| h == m.content_hash())
    }
}

/// Whether a filter's tag `want` names a record's tag `have`: the same once surrounding
/// spaces are set aside (a tag holds no other blank: control characters are refused), with
/// ASCII letters in either case. Only ASCII letters are folded, so that a store matching in
/// SQL folds the same way ([`tag_key`]) whatever its locale.
pub fn same_tag(have: &str, want: &str) -> bool {
    // `tag_key(have) == tag_key(want)`, without allocating (filters run on every row).
    have.trim_matches(' ')
        .eq_ignore_ascii_case(want.trim_matches(' '))
}

/// A tag as [`same_tag`] compares it: without surrounding spaces, ASCII letters in lower
/// case. A store that matches tags in SQL compares this form of the filter's tag with the
/// same form of each stored tag.
pub fn tag_key(tag: &str) -> String {
    tag.trim_matches(' ').to_ascii_lowercase()
}

/// The fields of a record a [`Filter`] reads. [`Memory`] has them; so does any copy of them
/// a backend keeps in memory, which then matches through [`Filter::matches`] too.
pub trait Filterable {
    /// The owner (user, agent, session).
    fn owner(&self) -> &Owner;
    /// The category.
    fn category(&self) -> &Category;
    /// The retention scope.
    fn scope(&self) -> MemoryScope;
    /// The tags.
    fn tags(&self) -> &[String];
    /// The metadata object.
    fn metadata(&self) -> &Map<String, Value>;
    /// When it was created.
    fn created_at(&self) -> Timestamp;
    /// Its content hash.
    fn content_hash(&self) -> &str;
}

impl<T: Filterable + ?Sized> Filterable for &T {
    fn owner(&self) -> &Owner {
        (**self).owner()
    }
    fn category(&self) -> &Category {
        (**self).category()
    }
    fn scope(&self) -> MemoryScope {
        (**self).scope()
    }
    fn tags(&self) -> &[String] {
        (**self).tags()
    }
    fn metadata(&self) -> &Map<String, Value> {
        (**self).metadata()
    }
    fn created_at(&self) -> Timestamp {
        (**self).created_at()
    }
    fn content_hash(&self) -> &str {
        (**self).content_hash()
    }
}

impl Filterable for Memory {
    fn owner(&self) -> &Owner {
        &self.owner
    }
    fn category(&self) -> &Category {
        &self.category
    }
    fn scope(&self) -> MemoryScope {
        self.scope
    }
    fn tags(&self) -> &[String] {
        &self.tags
    }
    fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn content_hash(&self) -> &str {
        &self.content_hash
    }
}

/// What recall's rescoring reads of a record besides its relevance: recency, access and
/// importance (see [`Store::rank_fields`](crate::Store::rank_fields)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankFields {
    /// The record.
    pub id: MemoryId,
    /// Its last write (recency is measured from it).
    pub updated_at: Timestamp,
    /// How often it was recalled.
    pub access_count: u64,
    /// Its importance.
    pub importance: f32,
    /// When what it says happened, as far as the store knows: its `valid_from`, else when
    /// it was created ([`RankFields::time_of`]). Recall's temporal strategy matches it
    /// against the periods a query names.
    pub time: Timestamp,
}

impl RankFields {
    /// The fields of a record.
    pub fn of(m: &Memory) -> Self {
        Self {
            id: m.id,
            updated_at: m.updated_at,
            access_count: m.access_count,
            importance: m.importance,
            time: Self::time_of(m.valid_from, m.created_at),
        }
    }

    /// A memory's time: when it became true if the writer said so, else when it was
    /// created. The one rule every backend's copy of the fields follows.
    pub fn time_of(valid_from: Option<Timestamp>, created_at: Timestamp) -> Timestamp {
        valid_from.unwrap_or(created_at)
    }
}

/// Largest page a listing returns.
pub const MAX_PAGE: usize = 10_000;

/// Lists records of one partition in id order (creation order), a page at a time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListQuery {
    /// Where to list.
    pub partition: Partition,
    /// Which records.
    pub filter: Filter,
    /// Only records with an id greater than this (the previous page's `next`).
    pub after: Option<MemoryId>,
    /// Page size, 1 to [`MAX_PAGE`]; 0 means [`MAX_PAGE`].
    pub limit: usize,
}

impl ListQuery {
    /// The first page of everything in `partition`.
    pub fn all(partition: Partition) -> Self {
        Self {
            partition,
            ..Self::default()
        }
    }

    /// The effective page size.
    pub fn page_size(&self) -> usize {
        if self.limit == 0 {
            MAX_PAGE
        } else {
            self.limit.min(MAX_PAGE)
        }
    }
}

/// One page of a listing.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Page {
    /// The records, in id order.
    pub items: Vec<Memory>,
    /// Pass as `after` for the next page; `None` on the last page.
    pub next: Option<MemoryId>,
}

impl Page {
    /// Builds a page from up to `size + 1` sorted, filtered candidates.
    pub fn from_sorted(mut items: Vec<Memory>, size: usize) -> Self {
        let more = items.len() > size;
        items.truncate(size);
        Page::of(items, more)
    }

    /// A page of `items` (in id order); `more`: whether other records follow them (then
    /// the next page starts after the last one).
    pub fn of(items: Vec<Memory>, more: bool) -> Self {
        let next = if more {
            items.last().map(|m| m.id)
        } else {
            None
        };
        Page { items, next }
    }
}

/// How a search was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// The store answered from an index.
    Search,
    /// The records were read and ranked.
    Scan,
}

/// A search result: a record and its relevance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hit {
    /// The record.
    pub memory: Memory,
    /// Higher is better; comparable only within one search.
    pub score: f64,
}

/// A record id with a relevance score (higher is better).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Scored {
    /// The record.
    pub id: MemoryId,
    /// Its score; comparable only within one result list.
    pub score: f32,
}

/// A full-text (BM25) search within one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextQuery {
    /// Where to search.
    pub partition: Partition,
    /// The text; tokenized with [`tokenize`](crate::text::tokenize).
    pub query: String,
    /// Which records may be returned.
    pub filter: Filter,
    /// How many at most.
    pub limit: usize,
}

/// A nearest-neighbour search within one partition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VectorQuery {
    /// Where to search.
    pub partition: Partition,
    /// The query vector, unit length, from the embedder that indexed the partition.
    pub vector: Vec<f32>,
    /// Which records may be returned.
    pub filter: Filter,
    /// How many at most.
    pub limit: usize,
}
