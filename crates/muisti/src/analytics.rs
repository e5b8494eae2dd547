//! What a dashboard shows about a namespace's memories, aggregated in one pass over the
//! store contract (so every backend carries it): how many by scope, state and category,
//! growth per day by scope, memories by the day they were last accessed, the most accessed,
//! and how alike a handful of memories are (an embedding similarity matrix).
//!
//! The pass reads the store in pages of [`MAX_PAGE`](muisti_core::MAX_PAGE) records and keeps
//! only counters and the `top` most accessed ids, so its memory does not grow with the
//! namespace (with the access log on, it also holds the log's record of each memory reached
//! in the retention). Every memory keeps a count and a last access time, so "last accessed"
//! is the number of memories last accessed on each day; with the access log on
//! ([`AccessLog`](crate::AccessLog)), "accesses" counts every access of each day.

use std::{
    cmp::Reverse,
    collections::{BTreeMap, BinaryHeap},
};

use muisti_core::{Error, Filter, ListQuery, Memory, MemoryId, Namespace, Result, Timestamp};
use tracing::info_span;

use crate::core::Core;

/// Milliseconds in a day.
pub(crate) const DAY_MS: i64 = 86_400_000;

/// Most days an aggregation spans.
pub const MAX_DAYS: u32 = 366;

/// Most memories a similarity matrix compares.
pub const MAX_SIMILARITY: usize = 60;

/// What to aggregate.
#[derive(Clone, Debug)]
pub struct AnalyticsQuery {
    /// Whose memories (its owner fields, scope, category, tags...).
    pub filter: Filter,
    /// The per-day series cover the days from `days - 1` days before `now` to `now`.
    pub days: u32,
    /// How many of the most accessed memories to return.
    pub top: usize,
}

/// One day's count, optionally of one scope.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DayCount {
    /// The UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// The scope counted, for a per-scope series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How many.
    pub count: u64,
}

/// The aggregates of [`Insights::analytics`].
#[derive(Clone, Debug, Default)]
pub struct Analytics {
    /// Every memory matched.
    pub total: u64,
    /// By scope name.
    pub by_scope: BTreeMap<String, u64>,
    /// By state (`active`, `archived`, `superseded`).
    pub by_state: BTreeMap<String, u64>,
    /// By category name.
    pub by_category: BTreeMap<String, u64>,
    /// Memories created on each day of the window, per scope (days with none left out).
    pub growth: Vec<DayCount>,
    /// Memories last accessed on each day of the window (days with none left out).
    pub last_accessed: Vec<DayCount>,
    /// Accesses (recalls and reads by id) of the memories on each day of the window, from
    /// the access log (empty unless it is or was on; days with none left out).
    pub accesses: Vec<DayCount>,
    /// Whether the access log is on (so `accesses` counts what it holds).
    pub access_log: bool,
    /// The most accessed memories, most first (ties: older first); never-accessed left out.
    pub top_accessed: Vec<Memory>,
}

/// The UTC day of a time, as a day number and `YYYY-MM-DD`.
pub(crate) fn day_of(t: Timestamp) -> i64 {
    t.as_millis().div_euclid(DAY_MS)
}

pub(crate) fn day_name(day: i64) -> String {
    let s = Timestamp::from_millis(day.saturating_mul(DAY_MS)).to_string();
    s.get(..10).unwrap_or(&s).to_owned()
}

/// Reports over a namespace's memories ([`Engine::insights`](crate::Engine::insights)):
/// their aggregates and how alike they are. A handle over what the engine's parts share;
/// cheap, borrowed.
#[derive(Clone, Copy)]
pub struct Insights<'a> {
    pub(crate) core: &'a Core,
}

impl Insights<'_> {
    /// The aggregates of a namespace's memories that match `query.filter` (declarative
    /// entries only with a `user_id`, as every read).
    pub fn analytics(&self, namespace: &Namespace, query: &AnalyticsQuery) -> Result<Analytics> {
        if query.days == 0 || query.days > MAX_DAYS {
            return Err(Error::invalid("days", format!("must be 1 to {MAX_DAYS}")));
        }
        crate::declarative::check_read(&query.filter)?;
        let _span = info_span!("memory.analytics", namespace = %namespace).entered();
        let today = day_of(self.core.clock.now());
        let first = today - i64::from(query.days) + 1;
        let mut out = Analytics::default();
        let mut growth: BTreeMap<(i64, String), u64> = BTreeMap::new();
        let mut accessed: BTreeMap<i64, u64> = BTreeMap::new();
        let logged = crate::access::days_of(self.core, namespace, &query.filter)?;
        let mut accesses: BTreeMap<i64, u64> = BTreeMap::new();
        // A min-heap of the best `top`: (count, newer id first out).
        let mut top: BinaryHeap<Reverse<(u64, Reverse<MemoryId>)>> = BinaryHeap::new();
        let mut list = ListQuery {
            filter: query.filter.clone(),
            ..ListQuery::all(self.core.partition(namespace))
        };
        loop {
            let page = self.core.store.list(&list)?;
            for m in &page.items {
                if !crate::declarative::readable(&query.filter, m) {
                    continue;
                }
                out.total += 1;
                *out.by_scope.entry(m.scope.to_string()).or_default() += 1;
                *out.by_state.entry(m.state.to_string()).or_default() += 1;
                *out.by_category.entry(m.category.to_string()).or_default() += 1;
                let day = day_of(m.created_at);
                if day >= first {
                    *growth.entry((day, m.scope.to_string())).or_default() += 1;
                }
                if let Some(at) = m.last_accessed_at
                    && day_of(at) >= first
                {
                    *accessed.entry(day_of(at)).or_default() += 1;
                }
                for (day, n) in logged.get(&m.id).into_iter().flat_map(|d| d.range(first..)) {
                    *accesses.entry(*day).or_default() += n;
                }
                if m.access_count > 0 && query.top > 0 {
                    top.push(Reverse((m.access_count, Reverse(m.id))));
                    if top.len() > query.top {
                        top.pop();
                    }
                }
            }
            match page.next {
                Some(next) => list.after = Some(next),
                None => break,
            }
        }
        out.growth = growth
            .into_iter()
            .map(|((day, scope), count)| DayCount {
                day: day_name(day),
                scope: Some(scope),
                count,
            })
            .collect();
        let per_day = |days: BTreeMap<i64, u64>| {
            days.into_iter()
                .map(|(day, count)| DayCount {
                    day: day_name(day),
                    scope: None,
                    count,
                })
                .collect()
        };
        out.last_accessed = per_day(accessed);
        out.accesses = per_day(accesses);
        out.access_log = self.core.access.config().is_on();
        let mut best: Vec<(u64, MemoryId)> = top
            .into_iter()
            .map(|Reverse((n, Reverse(id)))| (n, id))
            .collect();
        best.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let ids: Vec<MemoryId> = best.into_iter().map(|(_, id)| id).collect();
        out.top_accessed = self.core.store.get_many(&self.core.tenant, &ids)?;
        Ok(out)
    }

    /// The cosine similarity of every pair of `memories` (row `i`, column `j`), from their
    /// texts embedded by the engine's embedder: a square matrix with ones on its diagonal.
    /// At most [`MAX_SIMILARITY`] memories; an engine without an embedder refuses.
    pub fn similarity(&self, memories: &[Memory]) -> Result<Vec<Vec<f32>>> {
        if memories.len() > MAX_SIMILARITY {
            return Err(Error::invalid(
                "limit",
                format!("a similarity matrix compares at most {MAX_SIMILARITY} memories"),
            ));
        }
        if self.core.embedder.is_none() {
            return Err(Error::invalid("embedder", "similarity needs an embedder"));
        }
        let vectors = self.core.embed_memories(memories)?;
        Ok(vectors
            .iter()
            .map(|a| {
                vectors
                    .iter()
                    .map(|b| {
                        if a.len() != b.len() {
                            return 0.0;
                        }
                        a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
                    })
                    .collect()
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_name(0), "1970-01-01");
        let t = Timestamp::parse("2026-12-02T23:59:59Z").expect("time");
        assert_eq!(day_name(day_of(t)), "2026-12-02");
        let t = Timestamp::parse("2026-12-03T00:00:00Z").expect("time");
        assert_eq!(day_name(day_of(t)), "2026-12-03");
    }
}
