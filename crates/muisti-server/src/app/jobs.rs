//! Background jobs a caller starts over the API (a reindex), their state and who may see
//! them.

use super::*;

/// Background jobs (reindex, maintenance), kept in memory while the server runs, each with
/// the tenant it acts on: `None` for a job over the whole store (an operator's reindex).
#[derive(Default)]
pub struct Jobs {
    pub(super) jobs: Mutex<HashMap<String, (Option<Tenant>, api::Job)>>,
    /// Job ids, increasing even within one millisecond: their order is their start's.
    ids: Mutex<ulid::Generator>,
}

/// Whose jobs a caller sees: an operator every job, anyone else their tenant's own.
pub(super) fn sees(caller: &Caller, of: Option<&Tenant>) -> bool {
    caller.operator || of == Some(&caller.tenant)
}

impl Jobs {
    /// A job's current state, if `caller` may see it (another tenant's job is absent).
    pub fn get(&self, id: &str, caller: &Caller) -> Option<api::Job> {
        let jobs = self.jobs.lock().ok()?;
        let (of, job) = jobs.get(id)?;
        sees(caller, of.as_ref()).then(|| job.clone())
    }

    /// Every job this server ran or runs that `caller` may see, newest first.
    pub fn list(&self, caller: &Caller) -> Vec<api::Job> {
        let mut all: Vec<api::Job> = self
            .jobs
            .lock()
            .map(|jobs| {
                jobs.values()
                    .filter(|(of, _)| sees(caller, of.as_ref()))
                    .map(|(_, job)| job.clone())
                    .collect()
            })
            .unwrap_or_default();
        // Ids increase with each start ([`Jobs::next_id`]).
        all.sort_by(|a, b| b.id.cmp(&a.id));
        all
    }

    /// A new job's id: a ULID greater than every earlier one of this server (two jobs
    /// started in one millisecond are listed in the order they started).
    fn next_id(&self) -> String {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        ids.generate()
            .unwrap_or_else(|_| ulid::Ulid::generate())
            .to_string()
    }

    pub(super) fn set(&self, id: &str, f: impl FnOnce(&mut api::Job)) {
        if let Ok(mut jobs) = self.jobs.lock()
            && let Some((_, j)) = jobs.get_mut(id)
        {
            f(j);
        }
    }

    /// The store-wide lease a reindex holds, renewed as it progresses (a server that dies
    /// while reindexing frees it after this long).
    pub const REINDEX_LEASE: Duration = Duration::from_secs(60);

    /// Starts a reindex on a thread of its own: of every tenant for an operator
    /// (`whole_store`), else of `engine`'s tenant only; 409 while one of the same reach runs,
    /// on this server or on any other server on the same store (a lease in the store).
    pub fn start_reindex(
        self: &Arc<Self>,
        engine: Engine,
        force: bool,
        whole_store: bool,
    ) -> Result<api::Job, ApiError> {
        let of = (!whole_store).then(|| engine.tenant().clone());
        let lease = match &of {
            None => "reindex".to_owned(),
            Some(t) => format!("reindex.{t}"),
        };
        let job = api::Job {
            id: self.next_id(),
            kind: "reindex".into(),
            state: "running".into(),
            done: 0,
            total: 0,
            error: None,
            error_code: None,
            error_status: None,
            report: None,
        };
        {
            let mut jobs = self.jobs.lock().map_err(|_| ApiError::internal())?;
            let busy = || {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "conflict",
                    "a reindex is already running (on this or another server on the store)",
                )
            };
            if jobs
                .values()
                .any(|(t, j)| t == &of && j.kind == "reindex" && j.state == "running")
            {
                return Err(busy());
            }
            if !engine.acquire_lease(&lease, &job.id, Self::REINDEX_LEASE)? {
                return Err(busy());
            }
            jobs.insert(job.id.clone(), (of.clone(), job.clone()));
        }
        let me = Arc::clone(self);
        let id = job.id.clone();
        std::thread::spawn(move || {
            let mut renewed = Instant::now();
            let mut progress = |done, total| {
                me.set(&id, |j| {
                    j.done = done;
                    j.total = total;
                });
                if renewed.elapsed() > Self::REINDEX_LEASE / 3 {
                    renewed = Instant::now();
                    if let Err(e) = engine.acquire_lease(&lease, &id, Self::REINDEX_LEASE) {
                        tracing::warn!(error = %e, "renewing the reindex lease failed");
                    }
                }
            };
            let result = if whole_store {
                engine.reindex(force, &mut progress)
            } else {
                engine.reindex_tenant(force, &mut progress)
            };
            if let Err(e) = engine.release_lease(&lease, &id) {
                tracing::warn!(error = %e, "releasing the reindex lease failed");
            }
            me.set(&id, |j| match result {
                Ok(_) => j.state = "done".into(),
                Err(e) => {
                    // As the route would have answered: status, code and a message that
                    // names no store detail.
                    let answer = ApiError::from(e);
                    j.state = "failed".into();
                    j.error = Some(answer.message);
                    j.error_code = Some(answer.code.to_owned());
                    j.error_status = Some(answer.status.as_u16());
                }
            });
        });
        Ok(job)
    }
}

impl Jobs {
    /// Starts a maintenance run in `engine`'s tenant on a thread of its own: its progress
    /// (users done of how many) and, once done, its report are the job's.
    pub fn start_maintenance(
        self: &Arc<Self>,
        engine: Engine,
        options: muisti::lifecycle::MaintenanceOptions,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<api::Job, ApiError> {
        let job = api::Job {
            id: self.next_id(),
            kind: "maintenance".into(),
            state: "running".into(),
            done: 0,
            total: 0,
            error: None,
            error_code: None,
            error_status: None,
            report: None,
        };
        self.jobs
            .lock()
            .map_err(|_| ApiError::internal())?
            .insert(job.id.clone(), (Some(engine.tenant().clone()), job.clone()));
        let me = Arc::clone(self);
        let id = job.id.clone();
        std::thread::spawn(move || {
            let result = engine
                .lifecycle()
                .run_maintenance_with(&options, &mut |done, total| {
                    me.set(&id, |j| {
                        j.done = done;
                        j.total = total;
                    });
                });
            me.set(&id, |j| match result {
                Ok(r) => {
                    let report = ops::report_out(&r);
                    metrics.maintenance("request", &ops::maintained_counts(&report));
                    j.state = "done".into();
                    j.report = Some(report);
                }
                Err(e) => {
                    j.state = "failed".into();
                    j.error = Some(e.to_string());
                }
            });
        });
        Ok(job)
    }
}
