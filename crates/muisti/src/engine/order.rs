//! Listing in an order other than the store's own (creation, by id): by importance, by last
//! access, newest first. The store contract lists by id only, so the engine reads the
//! namespace's matching memories page by page and keeps the best page-and-one of them in a
//! bounded heap: memory of one page, but a read of every match for every page (paging
//! through N memories reads N²/page records: a listing to look at, not an export). The
//! cursor is the last item's sort key, so a page follows the previous one without a gap or a
//! repeat while nothing changes; a memory whose place changes between two pages (its
//! importance, or an access) may be seen twice or not at all.

use std::{cmp::Ordering, collections::BinaryHeap, fmt, str::FromStr};

use muisti_core::{Error, ListQuery, Memory, MemoryId, MemoryState, Result};
use tracing::info_span;

use super::Engine;

/// The order of a listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// Oldest first, by id (the store's own order, and the default).
    #[default]
    Created,
    /// Newest first.
    Newest,
    /// Most important first, then most recently accessed, then newest (seed 002's
    /// `ORDER BY importance DESC, last_accessed_at DESC, created_at DESC`).
    Importance,
    /// Most recently accessed first (never accessed last), then newest.
    Accessed,
}

impl ListOrder {
    /// Every order, by name.
    pub const ALL: [ListOrder; 4] = [
        ListOrder::Created,
        ListOrder::Newest,
        ListOrder::Importance,
        ListOrder::Accessed,
    ];

    /// The order's name in the API (`order=`).
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrder::Created => "created",
            ListOrder::Newest => "newest",
            ListOrder::Importance => "importance",
            ListOrder::Accessed => "accessed",
        }
    }

    /// Where `m` falls in this order: smaller keys come first.
    fn key(self, m: &Memory) -> SortKey {
        // Importance is in [0, 1] (validated on write): a millionth is finer than any
        // importance a user or the engine sets, and makes the key exact in a cursor.
        let importance = (f64::from(m.importance) * 1e6).round() as i64;
        let accessed = m.last_accessed_at.map_or(i64::MIN, |t| t.as_millis());
        let created = m.created_at.as_millis();
        let parts = match self {
            ListOrder::Created => [created, 0, 0],
            ListOrder::Newest => [-created, 0, 0],
            ListOrder::Importance => [-importance, accessed.saturating_neg(), -created],
            ListOrder::Accessed => [accessed.saturating_neg(), -created, 0],
        };
        let id = match self {
            ListOrder::Created => Tiebreak::Ascending(m.id),
            _ => Tiebreak::Descending(m.id),
        };
        SortKey { parts, id }
    }
}

impl fmt::Display for ListOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ListOrder {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(
                    "order",
                    format!("{s:?} is not created, newest, importance or accessed"),
                )
            })
    }
}

/// Ties broken by id: ascending for the creation order, descending (newest first) for the
/// others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tiebreak {
    Ascending(MemoryId),
    Descending(MemoryId),
}

impl Tiebreak {
    fn id(self) -> MemoryId {
        match self {
            Tiebreak::Ascending(id) | Tiebreak::Descending(id) => id,
        }
    }
}

impl Ord for Tiebreak {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Tiebreak::Ascending(a), Tiebreak::Ascending(b)) => a.cmp(b),
            _ => other.id().cmp(&self.id()),
        }
    }
}

impl PartialOrd for Tiebreak {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A memory's place in an order (compared as a tuple); also the cursor after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    parts: [i64; 3],
    id: Tiebreak,
}

/// A page of an ordered listing and the cursor of the next one.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderedPage {
    /// The memories, in order.
    pub items: Vec<Memory>,
    /// Where the next page starts (its `cursor`), or `None` at the end.
    pub next: Option<String>,
}

/// A cursor of an ordered listing: `ORDER.P1.P2.P3.ID`.
fn cursor_of(order: ListOrder, key: &SortKey) -> String {
    let [a, b, c] = key.parts;
    format!("{order}.{a}.{b}.{c}.{}", key.id.id())
}

/// The sort key a cursor of a listing by `order` holds: a cursor that is not one is
/// invalid; one of another order's listing (or a plain id, the creation order's) conflicts
/// with `order`.
fn parse_cursor(order: ListOrder, s: &str) -> Result<SortKey> {
    let conflicting = |theirs: &str| {
        Error::conflicting(
            "cursor",
            format!(
                "a cursor of the listing by {theirs}, not by {order}: pass the next_cursor of a page listed by {order}"
            ),
        )
    };
    if order != ListOrder::Created && MemoryId::parse(s).is_ok() {
        return Err(conflicting(ListOrder::Created.as_str()));
    }
    let bad = || {
        Error::invalid(
            "cursor",
            format!("{s:?} is not the next_cursor of a listing by {order}"),
        )
    };
    let mut fields = s.split('.');
    let named = fields.next().ok_or_else(bad)?;
    let named: ListOrder = named.parse().map_err(|_| bad())?;
    let mut parts = [0i64; 3];
    for p in &mut parts {
        // A position past the ends of `i64` is at that end.
        let wide: i128 = fields.next().and_then(|f| f.parse().ok()).ok_or_else(bad)?;
        *p = wide.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    }
    let id = fields
        .next()
        .and_then(|f| MemoryId::parse(f).ok())
        .ok_or_else(bad)?;
    if fields.next().is_some() {
        return Err(bad());
    }
    if named != order {
        return Err(conflicting(named.as_str()));
    }
    let id = match order {
        ListOrder::Created => Tiebreak::Ascending(id),
        _ => Tiebreak::Descending(id),
    };
    Ok(SortKey { parts, id })
}

/// A memory in the heap, by its key.
struct Ranked(SortKey, Memory);

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

impl Engine {
    /// One page of a namespace's memories in `order` (see [`Engine::list`]; `query.after`
    /// is not read: `cursor` is the previous page's [`OrderedPage::next`]), only those in
    /// `state` when given. Every matching memory is read to find the page.
    pub fn list_ordered(
        &self,
        mut query: ListQuery,
        order: ListOrder,
        cursor: Option<&str>,
        state: Option<MemoryState>,
    ) -> Result<OrderedPage> {
        query.partition.tenant = self.core.tenant.clone();
        crate::declarative::check_read(&query.filter)?;
        let _span = info_span!("memory.list", namespace = %query.partition.namespace,
            order = %order)
        .entered();
        let after = cursor.map(|c| parse_cursor(order, c)).transpose()?;
        let want = query.page_size();
        // A max-heap of the first `want + 1` after the cursor: its top is the one to drop.
        let mut best: BinaryHeap<Ranked> = BinaryHeap::with_capacity(want + 1);
        let mut scan = ListQuery {
            after: None,
            limit: 0,
            ..query.clone()
        };
        loop {
            let page = self.core.store.list(&scan)?;
            for m in page.items {
                if state.is_some_and(|s| m.state != s)
                    || !crate::declarative::readable(&query.filter, &m)
                {
                    continue;
                }
                let key = order.key(&m);
                if after.is_some_and(|a| key <= a) {
                    continue;
                }
                if best.len() <= want {
                    best.push(Ranked(key, m));
                } else if best.peek().is_some_and(|top| key < top.0) {
                    best.pop();
                    best.push(Ranked(key, m));
                }
            }
            match page.next {
                Some(n) => scan.after = Some(n),
                None => break,
            }
        }
        let mut ranked = best.into_sorted_vec();
        let more = ranked.len() > want;
        ranked.truncate(want);
        let next = ranked
            .last()
            .filter(|_| more)
            .map(|r| cursor_of(order, &r.0));
        let items = self
            .lifecycle()
            .hydrate_many(ranked.into_iter().map(|r| r.1).collect())?
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        Ok(OrderedPage { items, next })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_the_key_it_was_made_from() {
        let id = MemoryId::generate();
        for order in ListOrder::ALL {
            let key = SortKey {
                parts: [-900_000, i64::MIN, 1_765_000_000_000],
                id: match order {
                    ListOrder::Created => Tiebreak::Ascending(id),
                    _ => Tiebreak::Descending(id),
                },
            };
            let cursor = cursor_of(order, &key);
            assert_eq!(parse_cursor(order, &cursor).expect("parses"), key);
            let other = ListOrder::ALL.into_iter().find(|o| *o != order);
            let other = other.expect("another order");
            assert!(
                parse_cursor(other, &cursor).is_err(),
                "{cursor} is not {other}'s"
            );
        }
        for bad in [
            "",
            "importance",
            "importance.1.2.3",
            "importance.1.2.3.x",
            "importance.a.2.3.01ARZ3NDEKTSV4RRFFQ69G5FAV",
        ] {
            assert!(parse_cursor(ListOrder::Importance, bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ties_go_newest_first_except_in_creation_order() {
        let (a, b) = (MemoryId::generate(), MemoryId::generate());
        assert!(a < b);
        assert!(Tiebreak::Ascending(a) < Tiebreak::Ascending(b));
        assert!(Tiebreak::Descending(b) < Tiebreak::Descending(a));
    }

    #[test]
    fn orders_parse_by_name_and_refuse_others() {
        for order in ListOrder::ALL {
            assert_eq!(order.as_str().parse::<ListOrder>().expect("parses"), order);
        }
        let err = "random".parse::<ListOrder>().expect_err("refused");
        assert!(err.to_string().contains("importance"), "{err}");
    }
}
