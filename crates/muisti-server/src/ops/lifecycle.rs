//! Maintenance, the archive tier and topics.

use super::*;

/// Runs the scopes' lifetimes now: expired records (every tenant's) and episodic memories
/// past the retention (the caller's tenant).
pub fn maintain(engine: &Engine) -> Result<api::Maintained> {
    let done = engine.maintain()?;
    Ok(api::Maintained {
        expired: done.expired,
        episodic: done.episodic,
    })
}

/// A maintenance run as the request asks: the one check of its fields on every face.
pub fn maintenance(
    engine: &Engine,
    req: api::MaintenanceRequest,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<api::MaintenanceReport> {
    let options = maintenance_options(req)?;
    Ok(report_out(
        &engine
            .lifecycle()
            .run_maintenance_with(&options, progress)?,
    ))
}

/// The options a maintenance request asks for, checked (before a run starts, so a
/// background run fails only for what happens while it runs).
pub fn maintenance_options(
    req: api::MaintenanceRequest,
) -> Result<muisti::lifecycle::MaintenanceOptions> {
    filter(req.user_id.clone(), None, None)?;
    let namespace = req
        .namespace
        .as_deref()
        .map(|n| namespace(Some(n)))
        .transpose()?;
    let jobs = req
        .jobs
        .iter()
        .map(|j| j.parse::<muisti::lifecycle::Job>())
        .collect::<Result<Vec<_>>>()?;
    if let Some(i) = req.min_importance
        && !(0.0..=1.0).contains(&i)
    {
        return Err(Error::invalid(
            "min_importance",
            "0 to 1: prune deletes only memories of importance below it",
        ));
    }
    if req.max_memories.is_none() && jobs.contains(&muisti::lifecycle::Job::Prune) {
        return Err(Error::conflicting(
            "jobs",
            "prune needs max_memories, the cap a user's memories are pruned to",
        ));
    }
    let defaults = muisti::lifecycle::MaintenanceOptions::default();
    let options = muisti::lifecycle::MaintenanceOptions {
        near_duplicates: req.near_duplicates.unwrap_or(defaults.near_duplicates),
        archive_after: req
            .archive_after_days
            .map_or(defaults.archive_after, muisti::lifecycle::days),
        archive_max_access: req
            .archive_max_access
            .unwrap_or(defaults.archive_max_access),
        archive_grace: defaults.archive_grace,
        user_id: req.user_id,
        namespace,
        jobs,
        max_memories: req.max_memories,
        min_importance: req
            .min_importance
            .unwrap_or(muisti::lifecycle::DEFAULT_MIN_IMPORTANCE),
        promote_after: req
            .promote_after
            .unwrap_or(muisti::lifecycle::DEFAULT_PROMOTE_AFTER),
        dry_run: req.dry_run,
        lease: match req.lease_secs {
            None => muisti::lifecycle::DEFAULT_LEASE,
            Some(s @ 1..=3600) => std::time::Duration::from_secs(s),
            Some(_) => {
                return Err(Error::invalid(
                    "lease_secs",
                    "how long a dead run holds a user: 1 to 3600 seconds",
                ));
            }
        },
    };
    // The engine's rules, before a background run starts.
    options.validate()?;
    Ok(options)
}

/// A maintenance report on the wire.
pub fn report_out(r: &muisti::lifecycle::MaintenanceReport) -> api::MaintenanceReport {
    api::MaintenanceReport {
        expired: r.expired,
        episodic: r.episodic,
        consolidated: r.consolidated,
        promoted: r.promoted,
        pruned: r.pruned,
        archived: r.archived,
        swept: r.swept,
        clustered: r.clustered,
        users: r.users,
        busy: r.busy,
        dry_run: r.dry_run,
    }
}

/// What a maintenance run changed, job by job (none for a dry run), as metrics count it.
pub fn maintained_counts(r: &api::MaintenanceReport) -> Vec<(&'static str, u64)> {
    if r.dry_run {
        return Vec::new();
    }
    vec![
        ("expire", r.expired + r.episodic),
        ("consolidate", r.consolidated),
        ("promote", r.promoted),
        ("prune", r.pruned),
        ("archive", r.archived),
        ("cluster", r.clustered),
    ]
}

/// Brings an archived memory back (text, vector, full-text entry); another memory is
/// returned as it is.
pub fn restore(engine: &Engine, id: &str) -> Result<api::Memory> {
    let id = memory_id(id)?;
    // What the caller may see by id (a declarative entry is its user's only).
    visible(engine, id, None)?;
    Ok(memory_out(&engine.lifecycle().restore(id)?))
}

/// A user's memories grouped by topic, with each cluster's size now.
pub fn clusters(engine: &Engine, p: api::ClusterParams) -> Result<api::Clusters> {
    let user = cluster_user(&p)?;
    let ns = namespace(p.namespace.as_deref())?;
    let (clustering, members) = engine.lifecycle().cluster_members(&ns, Some(&user))?;
    Ok(api::Clusters {
        namespace: ns.to_string(),
        user_id: user,
        clusters: clustering
            .clusters
            .iter()
            .map(|c| api::ClusterInfo {
                id: c.id,
                label: c.label.clone(),
                terms: c.terms.clone(),
                size: members.get(&c.id).map_or(0, |m| m.len() as u64),
                fitted_size: c.size,
            })
            .collect(),
        silhouette: clustering.silhouette,
        topical: clustering.topical(),
        fitted_on: clustering.memories,
        computed_at: clustering.computed_at.to_string(),
    })
}

/// One page of a cluster's memories, in id order.
pub fn cluster_memories(
    engine: &Engine,
    cluster: u32,
    p: api::ClusterParams,
) -> Result<api::MemoryPage> {
    let user = cluster_user(&p)?;
    let ns = namespace(p.namespace.as_deref())?;
    let limit = limit(p.limit, DEFAULT_PAGE, MAX_PAGE)?;
    let after = cursor(p.cursor.as_deref())?;
    let (items, next) = cluster_page(engine, &ns, &user, cluster, after, limit)?;
    Ok(api::MemoryPage {
        items: items.iter().map(memory_out).collect(),
        next_cursor: next.map(|id| id.to_string()),
    })
}

/// One page of a cluster's memories, in id order, and the cursor of the next.
pub(super) fn cluster_page(
    engine: &Engine,
    ns: &Namespace,
    user: &str,
    cluster: u32,
    after: Option<MemoryId>,
    limit: usize,
) -> Result<(Vec<Memory>, Option<MemoryId>)> {
    let ids: Vec<MemoryId> = engine
        .lifecycle()
        .cluster_ids(ns, Some(user), cluster)?
        .into_iter()
        .filter(|id| after.is_none_or(|a| *id > a))
        .collect();
    let (page, rest) = ids.split_at(ids.len().min(limit));
    let mut items = Vec::with_capacity(page.len());
    for id in page {
        items.extend(engine.get_by_id(*id)?);
    }
    let next = (!rest.is_empty()).then(|| page.last().copied()).flatten();
    Ok((items, next))
}

/// The user of a cluster request, checked as every owner field.
pub(super) fn cluster_user(p: &api::ClusterParams) -> Result<String> {
    filter(Some(p.user_id.clone()), None, None)?;
    Ok(p.user_id.clone())
}
