//! The store's statistics, the dashboard's aggregates, and purging what expired.

use super::*;

/// Deletes expired records now, in the whole store (every tenant: an admin operation).
pub fn purge(engine: &Engine) -> Result<api::Purged> {
    Ok(api::Purged {
        purged: engine.purge_expired()?,
    })
}

/// What the tenant holds; with a namespace or a user asked, their memories summed up (the
/// library's [`muisti::lifecycle::MemoryStats`]).
pub fn stats(engine: &Engine, p: api::StatsParams) -> Result<api::Stats> {
    let summary = if p.namespace.is_some() || p.user_id.is_some() {
        muisti::check_owner_field("user_id", &p.user_id)?;
        let ns = namespace(p.namespace.as_deref())?;
        let m = engine.lifecycle().memory_stats(&ns, p.user_id.as_deref())?;
        Some(api::MemorySummary {
            namespace: ns.to_string(),
            user_id: p.user_id,
            total: m.total,
            avg_importance: m.avg_importance,
            avg_access_count: m.avg_access,
            max_access_count: m.max_access,
            with_expiry: m.with_expiry,
        })
    } else {
        None
    };
    let s = engine.stats()?;
    Ok(api::Stats {
        tenant: s.tenant.to_string(),
        backend: s.store.backend.to_owned(),
        healthy: s.healthy,
        namespaces: s
            .namespaces
            .iter()
            .map(|n| api::NamespaceCount {
                namespace: n.namespace.to_string(),
                count: n.count,
            })
            .collect(),
        total: s.total,
        state: api::StateCount {
            namespaces: s.state_namespaces,
            records: s.state_records,
        },
        summary,
    })
}

/// Most of the most accessed memories an analytics answer lists.
pub const MAX_TOP_ACCESSED: usize = 100;

/// The aggregates of a namespace's memories.
pub fn analytics(engine: &Engine, p: api::AnalyticsParams) -> Result<api::Analytics> {
    let more = api::Filters {
        agent_id: p.agent_id,
        category: p.category,
        scope: p.scope,
        ..api::Filters::default()
    };
    let query = muisti::analytics::AnalyticsQuery {
        filter: filter(p.user_id, None, Some(more))?,
        days: p.days.unwrap_or(30),
        top: match p.top {
            None => 10,
            Some(n) if n <= MAX_TOP_ACCESSED => n,
            Some(_) => {
                return Err(Error::invalid(
                    "top",
                    format!("must be 0 to {MAX_TOP_ACCESSED}"),
                ));
            }
        },
    };
    let a = engine
        .insights()
        .analytics(&namespace(p.namespace.as_deref())?, &query)?;
    let days = |v: Vec<muisti::analytics::DayCount>| {
        v.into_iter()
            .map(|d| api::DayCount {
                day: d.day,
                scope: d.scope,
                count: d.count,
            })
            .collect()
    };
    Ok(api::Analytics {
        total: a.total,
        by_scope: a.by_scope,
        by_state: a.by_state,
        by_category: a.by_category,
        growth: days(a.growth),
        last_accessed: days(a.last_accessed),
        accesses: days(a.accesses),
        access_log: a.access_log,
        top_accessed: a.top_accessed.iter().map(memory_out).collect(),
    })
}

/// A memory's accesses in the access log, by id (as its history: 404 for a missing memory,
/// and with a `user_id` that is not the memory's user).
pub fn accesses(engine: &Engine, id: &str, user: Option<&str>) -> Result<api::MemoryAccesses> {
    let id = memory_id(id)?;
    muisti::check_owner_field("user_id", &user.map(str::to_owned))?;
    let Some(a) = engine.accesses(id, user)? else {
        return Err(Error::NotFound(format!("memory {id}")));
    };
    Ok(api::MemoryAccesses {
        memory_id: a.memory_id.to_string(),
        days: a
            .days
            .into_iter()
            .map(|d| api::DayCount {
                day: d.day,
                scope: None,
                count: d.count,
            })
            .collect(),
        accesses: a
            .entries
            .into_iter()
            .map(|e| api::AccessEntry {
                at: e.at.to_string(),
                kind: e.kind.as_str().to_owned(),
                score: e.score,
                query: e.query,
            })
            .collect(),
    })
}

/// How alike a page of a user's memories (or of one of their clusters) are.
pub fn similarity(engine: &Engine, p: api::SimilarityParams) -> Result<api::Similarity> {
    let size = p.limit.unwrap_or(20);
    if !(2..=muisti::analytics::MAX_SIMILARITY).contains(&size) {
        return Err(Error::invalid(
            "limit",
            format!("must be 2 to {}", muisti::analytics::MAX_SIMILARITY),
        ));
    }
    let ns = namespace(p.namespace.as_deref())?;
    let after = cursor(p.cursor.as_deref())?;
    let owner = filter(Some(p.user_id.clone()), None, None)?;
    let (records, next) = match p.cluster {
        Some(cluster) => cluster_page(engine, &ns, &p.user_id, cluster, after, size)?,
        None => {
            let query = ListQuery {
                filter: owner,
                after,
                limit: size,
                ..ListQuery::all(engine.partition(&ns))
            };
            let page = engine.list_in_state(query, MemoryState::Active)?;
            (page.items, page.next)
        }
    };
    Ok(api::Similarity {
        matrix: engine.insights().similarity(&records)?,
        items: records.iter().map(memory_out).collect(),
        next_cursor: next.map(|id| id.to_string()),
    })
}
