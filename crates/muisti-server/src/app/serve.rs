//! The server: what it opens, the listen loop with graceful shutdown, and the scheduled
//! rounds (maintenance) it runs.

use super::*;

/// A bound server, ready to run.
pub struct Server {
    pub(super) listener: tokio::net::TcpListener,
    pub(super) app: Router,
    pub(super) state: AppState,
    pub(super) mcp_stop: CancellationToken,
    pub(super) config: ServerConfig,
}

/// One scheduled round: the store's expired records and each tenant's episodic retention,
/// then each tenant's per-user jobs.
pub(super) fn scheduled_round(
    engine: &Engine,
    plan: &muisti::lifecycle::MaintenanceOptions,
) -> muisti::Result<api::MaintenanceReport> {
    use muisti::lifecycle::Job;
    let mut total = muisti::lifecycle::MaintenanceReport::default();
    if plan.jobs.contains(&Job::Expire) {
        let done = engine.maintain_store()?;
        total.expired = done.expired;
        total.episodic = done.episodic;
    }
    let per_user: Vec<Job> = plan
        .jobs
        .iter()
        .copied()
        .filter(|j| *j != Job::Expire)
        .collect();
    if !per_user.is_empty() {
        for tenant in engine.store().tenants()? {
            if tenant.as_str() == muisti::SYSTEM_TENANT {
                continue;
            }
            let r = engine.with_tenant(tenant).lifecycle().run_maintenance(
                &muisti::lifecycle::MaintenanceOptions {
                    jobs: per_user.clone(),
                    ..plan.clone()
                },
            )?;
            total.consolidated += r.consolidated;
            total.promoted += r.promoted;
            total.pruned += r.pruned;
            total.archived += r.archived;
            total.swept += r.swept;
            total.clustered += r.clustered;
            total.users += r.users;
            total.busy += r.busy;
        }
    }
    Ok(ops::report_out(&total))
}

impl Server {
    /// Binds `config.listen` over `engine`. Refuses a non-loopback address when no key exists.
    pub async fn bind(engine: Engine, config: ServerConfig) -> Result<Self, ServeError> {
        let keys = KeyRing::new(engine.store().clone());
        let count = {
            let keys = keys.clone();
            ops::blocking(move || keys.count())
                .await
                .map_err(|e| ServeError::Io(std::io::Error::other(e.to_string())))??
        };
        let open = count == 0 && !config.require_auth;
        if open && !config.listen.ip().is_loopback() {
            return Err(ServeError::NoKeys(config.listen));
        }
        if open {
            tracing::warn!(
                "no API keys: serving without authentication on loopback, as tenant \"default\""
            );
        } else if count == 0 {
            tracing::warn!("authentication required but no API key exists yet");
        }
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| ServeError::Bind {
                addr: config.listen,
                reason: e.to_string(),
            })?;
        let chat = config
            .chat
            .as_ref()
            .map(ChatService::new)
            .transpose()
            .map_err(|e| ServeError::Chat(e.to_string()))?
            .map(Arc::new);
        // The chat model judges declarative conflicts too, unless told not to.
        let engine = match (
            &chat,
            config.chat.as_ref().is_some_and(|c| c.judge_conflicts),
        ) {
            (Some(chat), true) => engine.with_conflict_judge(Arc::new(
                muisti_agent::LlmJudge::new(Arc::clone(chat.provider())),
            )),
            _ => engine,
        };
        // ... and extracts facts, unless told not to.
        let engine = match (&chat, config.chat.as_ref().is_some_and(|c| c.extract_facts)) {
            (Some(chat), true) => engine.with_fact_extractor(Arc::new(
                muisti_agent::LlmFactExtractor::new(Arc::clone(chat.provider())),
            )),
            _ => engine,
        };
        let snapshot_dir = match &config.snapshot_dir {
            Some(dir) => dir.clone(),
            // Beside the store the engine serves, wherever it came from.
            None => muisti::default_snapshot_dir(&engine.store().info().location)
                .map_err(ServeError::Store)?,
        };
        let metrics: Arc<Metrics> = Arc::default();
        let state = AppState {
            snapshots: Arc::new(muisti::snapshot::Snapshots::new(snapshot_dir)),
            engine,
            keys,
            open: Arc::new(OpenMode::new(open)),
            limiter: config.rate_limit.map(|l| Arc::new(RateLimiter::new(l))),
            metrics: Arc::clone(&metrics),
            jobs: Arc::default(),
            chat,
            proxy_remember: config.proxy_remember,
            extraction: Arc::new(extraction_queue(config.debounce, Arc::clone(&metrics))),
            chat_learn: config.chat_learn,
            browser: Arc::new(crate::browser::BrowserPolicy {
                hosts: config.allowed_hosts.clone(),
                origins: config.allowed_origins.clone(),
            }),
        };
        let mcp_stop = CancellationToken::new();
        let app = router(state.clone(), &config, mcp_stop.clone());
        Ok(Self {
            listener,
            app,
            state,
            mcp_stop,
            config,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, ServeError> {
        Ok(self.listener.local_addr()?)
    }

    /// Whether requests need no key.
    pub fn is_open(&self) -> bool {
        self.state.open.is_open()
    }

    /// Serves until `shutdown` completes, then stops accepting, lets in-flight requests
    /// finish (up to the grace period) and flushes pending access counts.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        // Our own accept loop (not `axum::serve`): it sets a header-read timeout (which also
        // closes idle keep-alive connections) and holds connections within their slots
        // (`slots.rs`: a cap in all and per address, a new connection's first request
        // awaited only briefly, and unused connections giving way), answering one more
        // with 503 instead of letting slow or idle clients starve everyone.
        let schedule = self.config.maintain_interval.map(|every| {
            tokio::spawn(maintain_on_schedule(
                self.state.engine.clone(),
                every,
                self.config.maintenance.clone(),
                Arc::clone(&self.state.metrics),
            ))
        });
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let slots = crate::slots::Slots::new(
            self.config.max_connections,
            self.config.max_connections_per_peer,
        );
        let header_timeout = self.config.header_timeout;
        let first_request = self.config.first_request_timeout;
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            // Out of descriptors and the like: back off, keep serving.
                            tracing::warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let Some(slot) = slots.admit(peer.ip()) else {
                        tokio::spawn(crate::conn::refuse(stream));
                        continue;
                    };
                    let _ = stream.set_nodelay(true);
                    let service = hyper_util::service::TowerToHyperService::new(
                        crate::slots::Marked::new(self.app.clone(), Arc::clone(&slot.used)),
                    );
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(header_timeout)
                        .keep_alive(true)
                        .serve_connection(
                            hyper_util::rt::TokioIo::new(crate::conn::JsonParserErrors::new(stream)),
                            service,
                        );
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        // Dropping the connection closes it: when another took its slot, or
                        // when no request came in time.
                        tokio::select! {
                            _ = conn => {}
                            () = slot.evicted.cancelled() => {}
                            () = crate::slots::unused_after(&slot.used, first_request) => {}
                        }
                        drop(slot);
                    });
                }
                () = &mut shutdown => break,
            }
        }
        tracing::info!("shutting down: finishing requests in flight");
        if let Some(schedule) = schedule {
            schedule.abort();
        }
        self.mcp_stop.cancel();
        drop(self.listener);
        let result = tokio::select! {
            () = graceful.shutdown() => Ok(()),
            () = tokio::time::sleep(self.config.shutdown_grace) => {
                tracing::warn!("shutdown grace period over; closing remaining connections");
                Ok(())
            }
        };
        let engine = self.state.engine.clone();
        let _ = ops::blocking(move || engine.flush_access()).await;
        // Conversations gathered for extraction are read before the process goes.
        let extraction = Arc::clone(&self.state.extraction);
        let _ = ops::blocking(move || extraction.flush()).await;
        tracing::info!("stopped");
        result
    }
}
