//! [`EmbeddedService`]: the [`QueryService`] over an in-process
//! [`Engine`] — what `squall serve` runs and what the tests drive.
//!
//! Each submitted query is a tokio task with its own cancellation token and
//! progress counters. Its state lives in a `watch` channel, so long polls
//! wake the moment it changes. When the query finishes its result is cut
//! into pages ([`paginate`]) and kept in memory until the client has read
//! the last page (plus a short grace, so a retried last request still
//! works) or, for results nobody reads, until a retention time has passed.
//!
//! ```text
//! submit ─admission─> slot free: RUNNING ─> Engine::sql_with(sql, settings, cancel, progress)
//!    │                queue room: QUEUED ─(FIFO)─┘   │ ok: paginate -> FINISHED (pages held)
//!    │                queue full: FAILED (QUERY_QUEUE_FULL) │ err: FAILED (Trino error) / CANCELED
//! cancel ─> token.cancel(), state CANCELED at once; the engine stops the query's tasks
//! sweep (every few seconds): forget drained and expired queries, cancel abandoned ones
//! shutdown ─> refuse new statements; every query not done: FAILED (SERVER_SHUTTING_DOWN),
//!             token.cancel(); wait until every query task has cleaned up (bounded)
//! ```
//!
//! The query tasks here only wait: the engine plans on the CPU executor and
//! its coordinator hands the operators to it too, so a heavy query never
//! holds up the API's polls, cancels or `GET /v1/info`.
//!
//! Admission ([`crate::admission`]) caps running queries
//! (`squall.server.max_running_queries`) with a bounded FIFO queue behind
//! (`squall.server.max_queued_queries`); the statement timeout and the memory
//! limits are the engine's (`squall.query.*`), so they hold for every query
//! whichever way it arrives.
//!
//! Session properties from the request become per-query settings, and a
//! lone `SET SESSION` / `RESET SESSION` statement does not touch the
//! engine's shared session: it is validated and handed back to the client
//! ([`crate::session`]). A request holds exactly one statement, as in Trino.
//! The embedded engine has one catalog, so the client's catalog and schema
//! are accepted and not used to resolve names.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::error::DataFusionError;
use squall_core::config::SquallConfig;
use squall_planner::profile::QueryProfile;
use squall_planner::query_record::ProgressRecord;
use squall_planner::{CancellationToken, Engine, QueryProgress, RunOptions};
use tokio::sync::watch;

use crate::admission::{Admission, Admit, Permit};
use crate::error::ServerError;
use crate::paging::{PageLimits, paginate};
use crate::query_error::{self, QueryError};
use crate::service::{
    Metrics, Page, Progress, QueryService, QueryState, QueryStatus, SessionInfo, SessionUpdate,
    Submitted, check_one_statement,
};
use crate::session::{
    SessionStatement, answer_session_statement, parse_session_statement, session_statement_result,
};

/// Knobs of the embedded service.
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    pub page_limits: PageLimits,
    /// Queries running at once; later ones wait QUEUED (default 4).
    pub max_running: usize,
    /// Queries waiting at most; more fail with QUERY_QUEUE_FULL (default 64).
    pub max_queued: usize,
    /// A done query is forgotten this long after it ended (default 15 min).
    pub retention: Duration,
    /// A query whose last page was served is forgotten after this (default 10 s).
    pub drained_grace: Duration,
    /// A query not polled for this long is cancelled as abandoned (default 5 min).
    pub abandon_after: Duration,
    /// How often the sweeper looks (default 2 s).
    pub sweep_every: Duration,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        Self {
            page_limits: PageLimits::default(),
            max_running: 4,
            max_queued: 64,
            retention: Duration::from_secs(15 * 60),
            drained_grace: Duration::from_secs(10),
            abandon_after: Duration::from_secs(5 * 60),
            sweep_every: Duration::from_secs(2),
        }
    }
}

impl EmbeddedOptions {
    /// The defaults with the admission limits of `config` (`squall.server.*`).
    pub fn from_config(config: &SquallConfig) -> Self {
        Self {
            max_running: config.server.max_running_queries,
            max_queued: config.server.max_queued_queries,
            ..Self::default()
        }
    }
}

/// The query service over an in-process engine.
pub struct EmbeddedService {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Arc<Engine>,
    options: EmbeddedOptions,
    queries: Mutex<HashMap<String, Arc<Entry>>>,
    admission: Arc<Admission>,
    /// Set by shutdown: new statements are refused.
    closed: AtomicBool,
    /// Query tasks that have not ended (their cleanup included).
    active: Arc<AtomicUsize>,
}

struct Entry {
    id: String,
    slug: String,
    sql: String,
    session: SessionInfo,
    submitted: Instant,
    cancel: CancellationToken,
    progress: Arc<QueryProgress>,
    last_access: Mutex<Instant>,
    drained_at: Mutex<Option<Instant>>,
    phase: watch::Sender<Phase>,
}

/// Where a query is; cloned out of the watch channel on every look.
#[derive(Clone)]
struct Phase {
    state: QueryState,
    started: Option<Instant>,
    ended: Option<Instant>,
    error: Option<QueryError>,
    outcome: Option<Arc<Outcome>>,
}

/// What a finished query produced.
struct Outcome {
    schema: SchemaRef,
    pages: Vec<RecordBatch>,
    metrics: Metrics,
    update_type: Option<String>,
    session: SessionUpdate,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep going.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl EmbeddedService {
    /// A service over `engine`. Called inside a tokio runtime it also starts
    /// the sweeper, which stops when the service is dropped.
    pub fn new(engine: Arc<Engine>, options: EmbeddedOptions) -> Self {
        let inner = Arc::new(Inner {
            admission: Admission::new(options.max_running, options.max_queued),
            engine,
            options,
            queries: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            active: Arc::new(AtomicUsize::new(0)),
        });
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(sweeper(Arc::downgrade(&inner), inner.options.sweep_every));
        }
        Self { inner }
    }

    /// Queries holding a running slot, and queries waiting for one.
    pub fn admission(&self) -> (usize, usize) {
        (
            self.inner.admission.running(),
            self.inner.admission.queued(),
        )
    }

    /// Query tasks not ended yet (a cancelled query's task ends once its
    /// tasks have stopped and its exchange objects are deleted).
    pub fn active_queries(&self) -> usize {
        self.inner.active.load(Ordering::SeqCst)
    }

    /// Queries currently held (running or with results not yet forgotten).
    pub fn held_queries(&self) -> usize {
        lock(&self.inner.queries).len()
    }

    /// Forgets drained and expired queries and cancels abandoned ones now.
    pub fn sweep(&self) {
        self.inner.sweep();
    }

    fn entry(&self, id: &str) -> Result<Arc<Entry>, ServerError> {
        let entry = lock(&self.inner.queries).get(id).cloned().ok_or_else(|| {
            ServerError::QueryNotFound {
                query_id: id.to_string(),
            }
        })?;
        *lock(&entry.last_access) = Instant::now();
        Ok(entry)
    }
}

async fn sweeper(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    loop {
        tick.tick().await;
        match inner.upgrade() {
            Some(inner) => inner.sweep(),
            None => return,
        }
    }
}

impl Inner {
    fn sweep(&self) {
        let now = Instant::now();
        let o = &self.options;
        let mut queries = lock(&self.queries);
        queries.retain(|_, e| {
            let phase = e.phase.borrow().clone();
            if let Some(at) = *lock(&e.drained_at) {
                return now.duration_since(at) < o.drained_grace;
            }
            match phase.ended {
                Some(ended) => now.duration_since(ended) < o.retention,
                None => {
                    let idle = now.duration_since(*lock(&e.last_access));
                    if idle >= o.abandon_after {
                        let error = QueryError::new(
                            query_error::ErrorCode {
                                name: "ABANDONED_QUERY",
                                code: 2,
                                error_type: query_error::ErrorType::UserError,
                            },
                            format!("Query was abandoned: not polled for {} s", idle.as_secs()),
                        );
                        tracing::info!(query_id = %e.id, "cancelling abandoned query");
                        e.end(QueryState::Canceled, Some(error), None);
                    }
                    true
                }
            }
        });
    }
}

impl Entry {
    /// Moves a query that is not done yet to a final state; a done query stays as it is.
    fn end(&self, state: QueryState, error: Option<QueryError>, outcome: Option<Arc<Outcome>>) {
        if state == QueryState::Canceled {
            self.cancel.cancel();
        }
        self.phase.send_if_modified(|p| {
            if p.state.is_done() {
                return false;
            }
            p.state = state;
            p.ended = Some(Instant::now());
            p.error = error;
            p.outcome = outcome;
            true
        });
    }

    fn status(&self) -> QueryStatus {
        let phase = self.phase.borrow().clone();
        let now = Instant::now();
        let progress = Progress::from(ProgressRecord::of(&self.progress));
        let end = phase.ended.unwrap_or(now);
        let mut metrics = phase
            .outcome
            .as_ref()
            .map(|o| o.metrics)
            .unwrap_or_default();
        metrics.queued_ms = millis(
            phase
                .started
                .unwrap_or(end)
                .saturating_duration_since(self.submitted),
        );
        metrics.elapsed_ms = millis(end.saturating_duration_since(self.submitted));
        if metrics.wall_ms == 0 {
            metrics.wall_ms = phase
                .started
                .map(|s| millis(end.saturating_duration_since(s)))
                .unwrap_or(0);
        }
        let outcome = phase.outcome.as_ref();
        QueryStatus {
            id: self.id.clone(),
            slug: self.slug.clone(),
            query: self.sql.clone(),
            state: phase.state,
            progress,
            metrics,
            error: phase.error.clone(),
            schema: outcome.map(|o| o.schema.clone()),
            update_type: outcome.and_then(|o| o.update_type.clone()),
            session: outcome.map(|o| o.session.clone()).unwrap_or_default(),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// Runs one query to its end and records the end.
async fn run(inner: Arc<Inner>, entry: Arc<Entry>, admitted: Admit) {
    let permit: Option<Permit> = match admitted {
        Admit::Now(permit) => Some(permit),
        Admit::Queued(waiter) => waiter.wait(&entry.cancel).await,
        Admit::Full => None,
    };
    if permit.is_none() || entry.cancel.is_cancelled() {
        entry.end(QueryState::Canceled, Some(QueryError::canceled()), None);
        return;
    }
    entry.phase.send_if_modified(|p| {
        if p.state != QueryState::Queued {
            return false;
        }
        p.state = QueryState::Running;
        p.started = Some(Instant::now());
        true
    });
    let result = execute(&inner, &entry).await;
    drop(permit);
    match result {
        Ok(outcome) => entry.end(QueryState::Finished, None, Some(Arc::new(outcome))),
        Err(_) if entry.cancel.is_cancelled() => {
            entry.end(QueryState::Canceled, Some(QueryError::canceled()), None)
        }
        Err(e) => {
            let error = QueryError::from_datafusion(&e);
            // The message can quote the SQL's literals: only at debug level.
            tracing::info!(query_id = %entry.id, error = error.code.name, "query failed");
            tracing::debug!(query_id = %entry.id, error = %error.message, "query failed");
            entry.end(QueryState::Failed, Some(error), None);
        }
    }
}

async fn execute(inner: &Inner, entry: &Entry) -> Result<Outcome, DataFusionError> {
    if let Some(statement) = parse_session_statement(&entry.sql) {
        return session_statement(inner, statement);
    }
    check_one_statement(&entry.sql)?;
    let options = RunOptions {
        settings: entry.session.properties.clone(),
        cancel: entry.cancel.clone(),
        progress: Arc::clone(&entry.progress),
        query_id: Some(entry.id.clone()),
    };
    let result = inner.engine.sql_with(&entry.sql, &options).await?;
    let pages = paginate(&result.schema, &result.batches, inner.options.page_limits)?;
    Ok(Outcome {
        metrics: result
            .profile
            .as_ref()
            .map(profile_metrics)
            .unwrap_or_default(),
        schema: result.schema,
        pages,
        update_type: None,
        session: SessionUpdate::default(),
    })
}

/// `SET SESSION` / `RESET SESSION`: validated against the engine's settings,
/// answered with `result = true` and a session update for the client.
fn session_statement(
    inner: &Inner,
    statement: SessionStatement,
) -> Result<Outcome, DataFusionError> {
    let config = inner.engine.context().copied_config();
    let (update_type, session) = answer_session_statement(&config, statement)?;
    let batch = session_statement_result()?;
    Ok(Outcome {
        schema: batch.schema(),
        pages: vec![batch],
        metrics: Metrics::default(),
        update_type: Some(update_type.to_string()),
        session,
    })
}

/// The API's figures of a query from its profile.
pub(crate) fn profile_metrics(p: &QueryProfile) -> Metrics {
    Metrics {
        wall_ms: p.wall_ms,
        cpu_ms: p.cpu_ms,
        processed_rows: p
            .stage_profiles
            .iter()
            .filter(|s| s.row_groups > 0)
            .map(|s| s.rows_out)
            .sum(),
        processed_bytes: p.scan_bytes,
        physical_input_bytes: p.scan_bytes,
        peak_memory_bytes: p.peak_memory_bytes,
        ..Metrics::default()
    }
}

#[async_trait]
impl QueryService for EmbeddedService {
    async fn submit(&self, sql: String, session: SessionInfo) -> Result<Submitted, ServerError> {
        let (phase, _) = watch::channel(Phase {
            state: QueryState::Queued,
            started: None,
            ended: None,
            error: None,
            outcome: None,
        });
        let now = Instant::now();
        let entry = Arc::new(Entry {
            id: new_id(),
            slug: new_id(),
            sql,
            session,
            submitted: now,
            cancel: CancellationToken::new(),
            progress: Arc::new(QueryProgress::default()),
            last_access: Mutex::new(now),
            drained_at: Mutex::new(None),
            phase,
        });
        lock(&self.inner.queries).insert(entry.id.clone(), Arc::clone(&entry));
        let submitted = Submitted {
            id: entry.id.clone(),
            slug: entry.slug.clone(),
        };
        if self.inner.closed.load(Ordering::SeqCst) {
            entry.end(QueryState::Failed, Some(shutting_down()), None);
            return Ok(submitted);
        }
        let admitted = self.inner.admission.try_admit();
        if matches!(admitted, Admit::Full) {
            let a = &self.inner.admission;
            let error = QueryError::new(
                query_error::QUERY_QUEUE_FULL,
                format!(
                    "Too many queued queries: {} running and {} queued \
                     (squall.server.max_running_queries, squall.server.max_queued_queries); \
                     try again later",
                    a.max_running(),
                    a.max_queued()
                ),
            );
            tracing::info!(query_id = %entry.id, "query rejected: the queue is full");
            entry.end(QueryState::Failed, Some(error), None);
            return Ok(submitted);
        }
        // A supervisor records a panic of the query task as a failure, so no
        // query is left RUNNING forever.
        let (inner, task_entry) = (Arc::clone(&self.inner), Arc::clone(&entry));
        let active = ActiveQuery::start(&self.inner.active);
        tokio::spawn(async move {
            let _active = active;
            if let Err(e) = tokio::spawn(run(inner, task_entry, admitted)).await {
                let error = QueryError::new(
                    query_error::GENERIC_INTERNAL_ERROR,
                    format!("query task failed: {e}"),
                );
                entry.end(QueryState::Failed, Some(error), None);
            }
        });
        Ok(submitted)
    }

    async fn status(&self, id: &str) -> Result<QueryStatus, ServerError> {
        Ok(self.entry(id)?.status())
    }

    async fn wait(
        &self,
        id: &str,
        seen: QueryState,
        max_wait: Duration,
    ) -> Result<QueryStatus, ServerError> {
        let entry = self.entry(id)?;
        let mut rx = entry.phase.subscribe();
        // Resolves when the state differs from `seen`; the timeout bounds it.
        let _ = tokio::time::timeout(max_wait, rx.wait_for(|p| p.state != seen)).await;
        Ok(entry.status())
    }

    async fn page(&self, id: &str, token: u64) -> Result<Page, ServerError> {
        let entry = self.entry(id)?;
        let phase = entry.phase.borrow().clone();
        let outcome = match (phase.state, phase.outcome) {
            (QueryState::Finished, Some(outcome)) => outcome,
            (state, _) => {
                return Err(ServerError::NotFinished {
                    query_id: id.to_string(),
                    state: state.as_str(),
                });
            }
        };
        let index = crate::service::page_number(id, token, outcome.pages.len())?;
        let next = index + 1;
        if next == outcome.pages.len() {
            lock(&entry.drained_at).get_or_insert_with(Instant::now);
        }
        Ok(Page {
            batch: outcome.pages[index].clone(),
            next: (next < outcome.pages.len()).then_some(next as u64),
        })
    }

    async fn cancel(&self, id: &str) -> Result<(), ServerError> {
        self.entry(id)?
            .end(QueryState::Canceled, Some(QueryError::canceled()), None);
        Ok(())
    }

    async fn shutdown(&self, grace: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let entries: Vec<Arc<Entry>> = lock(&self.inner.queries).values().cloned().collect();
        let mut stopped = 0;
        for e in entries {
            if !e.phase.borrow().state.is_done() {
                stopped += 1;
            }
            e.end(QueryState::Failed, Some(shutting_down()), None);
            e.cancel.cancel();
        }
        tracing::info!(queries = stopped, "shutting down: queries stopped");
        let deadline = Instant::now() + grace;
        while self.active_queries() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let left = self.active_queries();
        if left > 0 {
            tracing::warn!(queries = left, "shutting down: queries still cleaning up");
        }
    }
}

/// The error of a query stopped (or refused) because the server is shutting down.
fn shutting_down() -> QueryError {
    QueryError::new(
        query_error::SERVER_SHUTTING_DOWN,
        "Server is shutting down; the query was stopped",
    )
}

/// Counts a query task as active until it ends, however it ends.
struct ActiveQuery(Arc<AtomicUsize>);

impl ActiveQuery {
    fn start(active: &Arc<AtomicUsize>) -> Self {
        active.fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(active))
    }
}

impl Drop for ActiveQuery {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
