//! [`EmbeddedService`]: the [`QueryService`] over an in-process
//! [`Engine`] — what `squall serve` runs and what the tests drive.
//!
//! Each submitted query is a tokio task with its own cancellation token and
//! progress counters. Its record and result live in a [`QueryStore`] (in
//! memory by default: [`MemoryQueryStore`]), the same record the aws
//! service keeps in S3, and its state is mirrored in a `watch` channel, so
//! long polls wake the moment it changes. When the query finishes its result
//! is read from the final stage's objects batch by batch, cut into pages
//! ([`crate::paging::paginate_stream`]) and stored as they come (in files: the result is
//! never in memory whole) until the client has read the
//! last page (plus a short grace, so a retried last request still works)
//! or, for results nobody reads, until a retention time has passed.
//!
//! ```text
//! submit ─admission─> slot free: RUNNING ─> Engine::sql_stream(sql, settings, cancel, progress)
//!    │                queue room: QUEUED ─(FIFO)─┘   │ ok: paginate -> FINISHED (pages held)
//!    │                queue full: FAILED (QUERY_QUEUE_FULL) │ err: FAILED (Trino error) / CANCELED
//! cancel ─> token.cancel(), state CANCELED at once; the engine stops the query's tasks
//!           (a FINISHED query: its pages are dropped as if read to the end)
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
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use squall_core::config::SquallConfig;
use squall_planner::query_record::{
    ErrorKind, MemoryQueryStore, ProgressRecord, QueryFailure, QueryRecord, QueryStore,
};
use squall_planner::{CancellationToken, Engine, QueryProgress};
use tokio::sync::watch;

use crate::admission::{Admission, Admit};
use crate::error::ServerError;
use crate::paging::PageLimits;
use crate::service::{
    Page, Progress, QueryService, QueryState, QueryStatus, SessionInfo, Submitted,
};

mod run;

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
    /// A query not polled for this long is cancelled as abandoned (default 5 min,
    /// `squall.server.client_timeout_secs`).
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
            abandon_after: match config.server.client_timeout_secs {
                0 => Duration::MAX,
                secs => Duration::from_secs(secs),
            },
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
    /// Records and results of the queries below.
    store: Arc<dyn QueryStore>,
    /// What runs in this process for each query the store holds.
    queries: Mutex<HashMap<String, Arc<Entry>>>,
    admission: Arc<Admission>,
    /// Set by shutdown: new statements are refused.
    closed: AtomicBool,
    /// Query tasks that have not ended (their cleanup included).
    active: Arc<AtomicUsize>,
}

/// The live side of one query; its record is in the store.
struct Entry {
    id: String,
    sql: String,
    session: SessionInfo,
    cancel: CancellationToken,
    progress: Arc<QueryProgress>,
    last_access: Mutex<Instant>,
    drained_at: Mutex<Option<Instant>>,
    ended_at: OnceLock<Instant>,
    /// The record's state, for long polls.
    state: watch::Sender<QueryState>,
    /// Serializes changes of the record (read, change, write).
    changing: tokio::sync::Mutex<()>,
    /// The result's schema, set before the record says FINISHED.
    schema: OnceLock<SchemaRef>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep going.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl EmbeddedService {
    /// A service over `engine` keeping its queries in memory. Called inside
    /// a tokio runtime it also starts the sweeper, which stops when the
    /// service is dropped.
    pub fn new(engine: Arc<Engine>, options: EmbeddedOptions) -> Self {
        // Results go to files as their pages are cut (a result larger than
        // memory is served a page at a time); records stay in memory.
        let temp = std::env::temp_dir();
        let store = MemoryQueryStore::with_result_files(&temp).unwrap_or_else(|e| {
            tracing::warn!(%e, dir = %temp.display(), "results will be kept in memory");
            MemoryQueryStore::new()
        });
        Self::with_store(engine, options, Arc::new(store))
    }

    /// A service over `engine` keeping its queries' records and results in `store`.
    pub fn with_store(
        engine: Arc<Engine>,
        options: EmbeddedOptions,
        store: Arc<dyn QueryStore>,
    ) -> Self {
        let inner = Arc::new(Inner {
            admission: Admission::new(options.max_running, options.max_queued),
            engine,
            options,
            store,
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
    pub async fn sweep(&self) {
        self.inner.sweep().await;
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

    async fn status_of(&self, entry: &Entry) -> Result<QueryStatus, ServerError> {
        let record = self.inner.record(&entry.id).await?;
        let mut status = QueryStatus::of_record(&record, entry.schema.get().cloned());
        if !record.state.is_done() {
            status.progress = Progress::from(ProgressRecord::of(&entry.progress));
        }
        Ok(status)
    }
}

async fn sweeper(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
    loop {
        tick.tick().await;
        match inner.upgrade() {
            Some(inner) => inner.sweep().await,
            None => return,
        }
    }
}

fn unavailable(e: impl std::fmt::Display) -> ServerError {
    ServerError::Internal {
        message: e.to_string(),
    }
}

impl Inner {
    async fn record(&self, id: &str) -> Result<QueryRecord, ServerError> {
        self.store
            .read_record(id)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| ServerError::QueryNotFound {
                query_id: id.to_string(),
            })
    }

    async fn sweep(&self) {
        let now = Instant::now();
        let o = &self.options;
        let mut forget = Vec::new();
        let mut abandoned = Vec::new();
        lock(&self.queries).retain(|id, e| {
            let keep = if let Some(at) = *lock(&e.drained_at) {
                now.duration_since(at) < o.drained_grace
            } else if let Some(ended) = e.ended_at.get() {
                now.duration_since(*ended) < o.retention
            } else {
                let idle = now.duration_since(*lock(&e.last_access));
                if idle >= o.abandon_after {
                    abandoned.push((Arc::clone(e), idle));
                }
                true
            };
            if !keep {
                forget.push(id.clone());
            }
            keep
        });
        for id in forget {
            if let Err(e) = self.store.forget(&id).await {
                tracing::warn!(query_id = %id, %e, "forgetting a query failed");
            }
        }
        for (e, idle) in abandoned {
            tracing::info!(query_id = %e.id, "cancelling abandoned query");
            let failure = QueryFailure::new(
                ErrorKind::Abandoned,
                format!(
                    "Query was abandoned: not polled for {} s (squall.server.client_timeout_secs)",
                    idle.as_secs()
                ),
            );
            e.cancel.cancel();
            e.end(&*self.store, failure).await;
        }
    }
}

impl Entry {
    /// Applies `change` to the query's record unless the query is done, and
    /// returns whether it did. Changes are serialized, so a cancel and a
    /// finish never both win, and the state only moves forward.
    async fn change(&self, store: &dyn QueryStore, change: impl FnOnce(&mut QueryRecord)) -> bool {
        let _one_at_a_time = self.changing.lock().await;
        let mut record = match store.read_record(&self.id).await {
            Ok(Some(r)) if !r.state.is_done() => r,
            Ok(_) => return false,
            Err(e) => {
                tracing::error!(query_id = %self.id, %e, "reading the query's record failed");
                return false;
            }
        };
        change(&mut record);
        record.progress = ProgressRecord::of(&self.progress);
        if let Err(e) = store.write_record(&record).await {
            tracing::error!(query_id = %self.id, %e, "recording the query's state failed");
            return false;
        }
        if record.state.is_done() {
            let _ = self.ended_at.set(Instant::now());
        }
        self.state.send_replace(record.state);
        true
    }

    /// Ends a query that is not done yet FAILED or CANCELED (by the
    /// failure's kind); a cancel also stops its work.
    async fn end(&self, store: &dyn QueryStore, failure: QueryFailure) {
        if failure.kind == ErrorKind::Canceled {
            self.cancel.cancel();
        }
        self.change(store, |r| r.fail(failure)).await;
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

use run::run;

#[async_trait]
impl QueryService for EmbeddedService {
    async fn submit(&self, sql: String, session: SessionInfo) -> Result<Submitted, ServerError> {
        let (id, slug) = (new_id(), new_id());
        let store = &*self.inner.store;
        store
            .write_record(&QueryRecord::queued(&id, &slug, &sql))
            .await
            .map_err(unavailable)?;
        let (state, _) = watch::channel(QueryState::Queued);
        let now = Instant::now();
        let entry = Arc::new(Entry {
            id: id.clone(),
            sql,
            session,
            cancel: CancellationToken::new(),
            progress: Arc::new(QueryProgress::default()),
            last_access: Mutex::new(now),
            drained_at: Mutex::new(None),
            ended_at: OnceLock::new(),
            state,
            changing: tokio::sync::Mutex::new(()),
            schema: OnceLock::new(),
        });
        lock(&self.inner.queries).insert(id.clone(), Arc::clone(&entry));
        let submitted = Submitted { id, slug };
        if self.inner.closed.load(Ordering::SeqCst) {
            entry.end(store, shutting_down()).await;
            return Ok(submitted);
        }
        let admitted = self.inner.admission.try_admit();
        if matches!(admitted, Admit::Full) {
            let a = &self.inner.admission;
            let failure = QueryFailure::new(
                ErrorKind::QueueFull,
                format!(
                    "Too many queued queries: {} running and {} queued \
                     (squall.server.max_running_queries, squall.server.max_queued_queries); \
                     try again later",
                    a.max_running(),
                    a.max_queued()
                ),
            );
            tracing::info!(query_id = %entry.id, "query rejected: the queue is full");
            entry.end(store, failure).await;
            return Ok(submitted);
        }
        // A supervisor records a panic of the query task as a failure, so no
        // query is left RUNNING forever.
        let (inner, task_entry) = (Arc::clone(&self.inner), Arc::clone(&entry));
        let active = ActiveQuery::start(&self.inner.active);
        let store = Arc::clone(&self.inner.store);
        tokio::spawn(async move {
            let _active = active;
            if let Err(e) = tokio::spawn(run(inner, task_entry, admitted)).await {
                let failure =
                    QueryFailure::new(ErrorKind::Internal, format!("query task failed: {e}"));
                entry.end(&*store, failure).await;
            }
        });
        Ok(submitted)
    }

    async fn status(&self, id: &str) -> Result<QueryStatus, ServerError> {
        let entry = self.entry(id)?;
        self.status_of(&entry).await
    }

    async fn wait(
        &self,
        id: &str,
        seen: QueryState,
        max_wait: Duration,
    ) -> Result<QueryStatus, ServerError> {
        let entry = self.entry(id)?;
        let mut rx = entry.state.subscribe();
        // Resolves when the state differs from `seen`; the timeout bounds it.
        let _ = tokio::time::timeout(max_wait, rx.wait_for(|s| *s != seen)).await;
        self.status_of(&entry).await
    }

    async fn page(&self, id: &str, token: u64) -> Result<Page, ServerError> {
        let entry = self.entry(id)?;
        let record = self.inner.record(id).await?;
        let (index, schema) = match (&record.result, entry.schema.get()) {
            (Some(index), Some(schema)) if record.state == QueryState::Finished => (index, schema),
            _ => {
                return Err(ServerError::NotFinished {
                    query_id: id.to_string(),
                    state: record.state.as_str(),
                });
            }
        };
        let n = crate::service::page_number(id, token, index.pages.len())?;
        let batch = self
            .inner
            .store
            .read_page(id, schema, &index.pages[n])
            .await
            .map_err(unavailable)?;
        let next = n + 1;
        if next == index.pages.len() {
            lock(&entry.drained_at).get_or_insert_with(Instant::now);
        }
        Ok(Page {
            batch,
            next: (next < index.pages.len()).then_some(next as u64),
        })
    }

    async fn cancel(&self, id: &str) -> Result<(), ServerError> {
        let entry = self.entry(id)?;
        entry
            .end(&*self.inner.store, QueryFailure::canceled())
            .await;
        // A finished query's client stopping before its last page is done
        // with the result: its pages go after the grace, not the retention.
        if self.inner.record(id).await?.state == QueryState::Finished {
            lock(&entry.drained_at).get_or_insert_with(Instant::now);
        }
        Ok(())
    }

    async fn shutdown(&self, grace: Duration) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let entries: Vec<Arc<Entry>> = lock(&self.inner.queries).values().cloned().collect();
        let mut stopped = 0;
        for e in entries {
            if !e.state.borrow().is_done() {
                stopped += 1;
            }
            e.end(&*self.inner.store, shutting_down()).await;
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

/// The failure of a query stopped (or refused) because the server is shutting down.
fn shutting_down() -> QueryFailure {
    QueryFailure::new(
        ErrorKind::ShuttingDown,
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
