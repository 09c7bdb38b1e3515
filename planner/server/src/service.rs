//! The [`QueryService`] trait: what the HTTP router needs from a backend,
//! and nothing about HTTP.
//!
//! A query is submitted once and then observed by id: its [`QueryStatus`]
//! (state, progress, times, the error of a failed query, the schema of a
//! finished one) and, once finished, its result one [`Page`] at a time by
//! page token. Nothing here assumes the result is in memory: the embedded
//! service slices batches it holds, while a cloud service reads the status
//! from the object store and each page from a result object, and starts a
//! coordinator function on submit. Every call is idempotent except submit,
//! so a client retrying a page after a lost response gets the same page.
//!
//! ```text
//! submit ──> QUEUED ──> RUNNING ──> FINISHED ──page(0)..page(n)──> (evicted)
//!               │           │
//!               └─ cancel ──┴──> CANCELED        (errors) ──> FAILED
//! ```
//!
//! Page tokens are page numbers: page `0` is the first, and each page names
//! the next one, or none after the last.

use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;

use datafusion::error::DataFusionError;

use crate::error::ServerError;
use crate::query_error::QueryError;

/// Who submits and how: the `X-Trino-*` (or `X-Presto-*`) request headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionInfo {
    pub user: String,
    pub source: Option<String>,
    pub catalog: Option<String>,
    pub schema: Option<String>,
    /// Session properties (`X-Trino-Session: k=v,...`): settings for this query.
    pub properties: Vec<(String, String)>,
}

impl SessionInfo {
    /// The user, catalog and schema a statement's `current_user`,
    /// `current_catalog` and `current_schema` answer.
    pub fn identity(&self) -> squall_planner::trino_functions::SessionIdentity {
        squall_planner::trino_functions::SessionIdentity {
            user: Some(self.user.clone()),
            catalog: self.catalog.clone(),
            schema: self.schema.clone(),
        }
    }
}

/// A submitted query: its id, and the slug that makes its URIs unguessable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub id: String,
    pub slug: String,
}

use squall_planner::profile::QueryProfile;
pub use squall_planner::query_record::QueryState;
use squall_planner::query_record::{ProgressRecord, QueryRecord, now_ms};

/// Task and stage counts of a running query (Trino's "splits" are tasks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub total_tasks: u64,
    pub queued_tasks: u64,
    pub running_tasks: u64,
    pub completed_tasks: u64,
    pub total_stages: u64,
    pub completed_stages: u64,
}

impl From<ProgressRecord> for Progress {
    fn from(p: ProgressRecord) -> Self {
        Self {
            total_tasks: p.total_tasks,
            queued_tasks: p.total_tasks.saturating_sub(p.launched_tasks),
            running_tasks: p.launched_tasks.saturating_sub(p.completed_tasks),
            completed_tasks: p.completed_tasks,
            total_stages: p.total_stages,
            completed_stages: p.completed_stages,
        }
    }
}

impl Progress {
    /// Percentage of tasks completed, once the task count is known.
    pub fn percentage(&self) -> Option<f64> {
        (self.total_tasks > 0)
            .then(|| 100.0 * self.completed_tasks as f64 / self.total_tasks as f64)
    }
}

/// Times and volumes, as far as the backend measures them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metrics {
    /// Submitted until started.
    pub queued_ms: u64,
    /// Submitted until now or until the end.
    pub elapsed_ms: u64,
    /// Wall time of the query's execution.
    pub wall_ms: u64,
    /// CPU time of all tasks, as their operators measure it.
    pub cpu_ms: u64,
    pub processed_rows: u64,
    pub processed_bytes: u64,
    pub physical_input_bytes: u64,
    pub peak_memory_bytes: u64,
}

/// Session changes a statement asks the client to make (`SET SESSION`,
/// `RESET SESSION`, `USE`): sent back as `X-Trino-Set-Session` /
/// `X-Trino-Clear-Session`, `X-Trino-Set-Catalog` / `X-Trino-Set-Schema`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionUpdate {
    pub set: Vec<(String, String)>,
    pub clear: Vec<String>,
    pub catalog: Option<String>,
    pub schema: Option<String>,
}

/// A query's status.
#[derive(Debug, Clone)]
pub struct QueryStatus {
    pub id: String,
    pub slug: String,
    /// The SQL text.
    pub query: String,
    pub state: QueryState,
    pub progress: Progress,
    pub metrics: Metrics,
    /// Set when FAILED or CANCELED.
    pub error: Option<QueryError>,
    /// Set when FINISHED.
    pub schema: Option<SchemaRef>,
    /// Trino's `updateType` (`SET SESSION`, `CREATE TABLE`, …) for statements that are not queries.
    pub update_type: Option<String>,
    /// Trino's `updateCount`: the rows an `INSERT`, `DELETE` or `UPDATE` changed.
    pub update_count: Option<u64>,
    pub session: SessionUpdate,
}

impl QueryStatus {
    /// The status a query's record gives (the one conversion, for every
    /// backend), with the decoded schema of a finished query's result.
    pub fn of_record(r: &QueryRecord, schema: Option<SchemaRef>) -> Self {
        let end = r.ended_ms.unwrap_or_else(now_ms);
        let mut metrics = r.profile.as_ref().map(profile_metrics).unwrap_or_default();
        metrics.queued_ms = r.started_ms.unwrap_or(end).saturating_sub(r.submitted_ms);
        metrics.elapsed_ms = end.saturating_sub(r.submitted_ms);
        if metrics.wall_ms == 0 {
            metrics.wall_ms = r.started_ms.map(|s| end.saturating_sub(s)).unwrap_or(0);
        }
        Self {
            id: r.query_id.clone(),
            slug: r.slug.clone(),
            query: r.sql.clone(),
            state: r.state,
            progress: Progress::from(r.progress),
            metrics,
            error: r.error.as_ref().map(QueryError::from_failure),
            schema,
            update_type: r.update_type.clone(),
            update_count: r.update_count,
            session: SessionUpdate {
                set: r.session_set.clone(),
                clear: r.session_clear.clone(),
                catalog: r.session_catalog.clone(),
                schema: r.session_schema.clone(),
            },
        }
    }
}

/// The API's figures of a query from its profile.
fn profile_metrics(p: &QueryProfile) -> Metrics {
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

/// One page of a finished query's result.
#[derive(Debug, Clone)]
pub struct Page {
    /// The page's rows (possibly none), in the result's schema.
    pub batch: RecordBatch,
    /// The token of the next page; `None` after the last page.
    pub next: Option<u64>,
}

/// A query backend as the HTTP API sees it.
#[async_trait]
pub trait QueryService: Send + Sync {
    /// Accepts a query and returns at once; it runs in the background.
    async fn submit(&self, sql: String, session: SessionInfo) -> Result<Submitted, ServerError>;

    /// The query's status now.
    async fn status(&self, id: &str) -> Result<QueryStatus, ServerError>;

    /// How often the default [`QueryService::wait`] looks at the status.
    fn poll_interval(&self) -> Duration {
        Duration::from_millis(100)
    }

    /// The status once the state differs from `seen`, or after `max_wait`.
    ///
    /// The router long-polls with this, so a client polling a running query
    /// is answered about once per `max_wait`, not in a busy loop. The default
    /// polls [`QueryService::status`] every [`QueryService::poll_interval`];
    /// backends that can be notified override it.
    async fn wait(
        &self,
        id: &str,
        seen: QueryState,
        max_wait: Duration,
    ) -> Result<QueryStatus, ServerError> {
        let deadline = Instant::now() + max_wait;
        loop {
            let status = self.status(id).await?;
            let now = Instant::now();
            if status.state != seen || now >= deadline {
                return Ok(status);
            }
            tokio::time::sleep((deadline - now).min(self.poll_interval())).await;
        }
    }

    /// Page `token` of a FINISHED query's result.
    ///
    /// `QueryNotFound` for an unknown or evicted query, `NotFinished` before
    /// the query has finished, `InvalidToken` for a token that names no page.
    async fn page(&self, id: &str, token: u64) -> Result<Page, ServerError>;

    /// Cancels the query; a no-op once it is done.
    async fn cancel(&self, id: &str) -> Result<(), ServerError>;

    /// Stops serving queries (the server is shutting down): new statements
    /// are refused, running and queued ones end FAILED with
    /// `SERVER_SHUTTING_DOWN`, and the call returns once their work has
    /// stopped and been cleaned up, or after `grace`. The default does
    /// nothing: a service whose queries do not run in this process leaves
    /// them running.
    async fn shutdown(&self, grace: Duration) {
        let _ = grace;
    }
}

/// Checks that `sql` parses as exactly one statement: a request holds one
/// statement, as in Trino. Cheap (no catalog is consulted), so a service
/// rejects bad SQL before it starts anything.
pub fn check_one_statement(sql: &str) -> Result<(), DataFusionError> {
    // A prepared statement's DESCRIBE as the API writes it: one statement.
    if squall_planner::describe_prepared::parse(sql).is_some() {
        return Ok(());
    }
    let statements = squall_planner::trino_sql::parse(sql)?;
    match statements.len() {
        1 => Ok(()),
        0 => Err(DataFusionError::Plan("no SQL statement given".into())),
        n => Err(DataFusionError::Plan(format!(
            "a request holds one statement, got {n}; send them one at a time"
        ))),
    }
}

/// The page a `nextUri` token names, when the query has that many pages.
pub fn page_number(id: &str, token: u64, pages: usize) -> Result<usize, ServerError> {
    usize::try_from(token)
        .ok()
        .filter(|&n| n < pages)
        .ok_or_else(|| ServerError::InvalidToken {
            query_id: id.to_string(),
            token: token.to_string(),
        })
}
