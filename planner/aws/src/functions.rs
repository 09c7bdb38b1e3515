//! What the Lambda functions run, as library calls their thin `main.rs`
//! wires to `lambda_runtime` (and tests call directly).
//!
//! - [`WorkerFunction`]: one task per invocation. The event is the task
//!   itself (the same JSON the embedded backend hands its workers) or a
//!   [`PayloadPointer`] to it in S3 (or to its range of a launch batch's
//!   object); or a [`LaunchBatch`], for which it starts a batch of tasks
//!   ([`crate::launcher`], tree invocation). It always answers with a small summary
//!   and never panics on bad input: undecodable tasks become failure reports
//!   sent to the task's completion queue when its address can be read.
//! - [`CoordinatorFunction`]: plans and drives one query, and records its
//!   state and result under `squall.state_location` (see [`crate::state`]);
//!   it stops the query when a client asks to cancel it, and hands a query
//!   longer than one invocation over to a fresh invocation of itself
//!   ([`crate::handoff`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;
use squall_core::requests::{RequestCounter, RequestCounts};
use squall_core::task::{FailureKind, TaskOutcome};
use squall_core::worker::{WorkerEnv, handle_fetched_task};
use squall_planner::engine::Outcome;
use squall_planner::paging::{PageLimits, paginate_stream};
use squall_planner::{CancellationToken, EngineOptions, QueryProgress, RunOptions};
use tokio::sync::Notify;

use crate::engine::aws_engine;
use crate::env::AwsEnv;
use crate::error::AwsError;
use crate::handoff::{HandoffRequest, claim, start_successor};
use crate::lambda::{BatchSpec, LambdaInvoker, LaunchBatch, PayloadPointer};
use crate::s3::aws_runtime;
use crate::sqs::SqsQueue;
use crate::state::{
    ErrorKind, ObjectQueryStore, ProgressRecord, QueryFailure, QueryRecord, QueryStore,
    state_store_from_env,
};

/// The worker function's state across invocations of one Lambda environment.
pub struct WorkerFunction {
    env: WorkerEnv,
    aws: AwsEnv,
}

impl WorkerFunction {
    pub async fn from_env() -> Result<Self> {
        // This process runs only tasks: an injected abort may kill it.
        squall_core::worker::worker_has_own_process();
        let aws = AwsEnv::load().await;
        let runtime = aws_runtime(&aws)?;
        Ok(Self {
            env: WorkerEnv {
                runtime,
                queue: Arc::new(SqsQueue::new(&aws, "")),
            },
            aws,
        })
    }

    /// Run the task in `event`, or start the tasks of a launch batch (tree
    /// invocation, [`crate::launcher`]); returns a summary.
    pub async fn handle(&self, event: serde_json::Value) -> serde_json::Value {
        if let Ok(batch) = serde_json::from_value::<LaunchBatch>(event.clone()) {
            return self.launch(batch.launch).await;
        }
        self.run_task(event).await
    }

    /// A launcher invocation: reads the batch's object and invokes each task.
    async fn launch(&self, batch: BatchSpec) -> serde_json::Value {
        let launched = async {
            let config = SquallConfig::from_env()?;
            let object = self
                .read_object(&batch.payloads, None, "launch batch")
                .await?;
            let invoker = LambdaInvoker::new(
                &self.aws,
                Arc::clone(&self.env.queue),
                &batch.function,
                batch.inline_limit,
                None,
            )
            .with_answer_wait(Duration::from_millis(config.task.invoke_answer_ms))
            .with_max_unanswered(config.task.max_unanswered_invokes);
            crate::launcher::launch_batch(&invoker, &batch, object, &config)
                .await
                .map_err(DataFusionError::from)
        }
        .await;
        match launched {
            Ok(l) => {
                tracing::info!(batch = %batch.payloads, started = l.started, refused = l.refused, throttled = l.throttled, "launch batch sent");
                serde_json::json!({"status": "launched", "started": l.started, "refused": l.refused, "throttled": l.throttled})
            }
            Err(e) => {
                // Its tasks stay silent; their deadlines start them again.
                tracing::error!(%e, batch = %batch.payloads, "launch batch failed");
                serde_json::json!({"status": "failed", "error": e.to_string()})
            }
        }
    }

    /// The bytes of `s3://bucket/key` (`range`: `[offset, length]` of them).
    async fn read_object(
        &self,
        location: &str,
        range: Option<[u64; 2]>,
        what: &'static str,
    ) -> Result<Bytes> {
        let (url, key) = crate::s3::split_s3_url(location)?;
        let store = self
            .env
            .runtime
            .object_store(ObjectStoreUrl::parse(&url)?)?;
        let unreadable = |source| AwsError::Object {
            what,
            location: location.to_string(),
            source,
        };
        let path = Path::from(key.as_str());
        let bytes = match range {
            Some([offset, len]) => store
                .get_range(&path, offset..offset + len)
                .await
                .map_err(unreadable)?,
            None => store
                .get(&path)
                .await
                .map_err(unreadable)?
                .bytes()
                .await
                .map_err(unreadable)?,
        };
        Ok(bytes)
    }

    /// Run the task in `event`; returns a summary (status, stage, task, attempt).
    async fn run_task(&self, event: serde_json::Value) -> serde_json::Value {
        let (payload, fetched) = match self.payload(event).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(%e, "task payload unavailable");
                return serde_json::json!({"status": "failed", "error": e.to_string()});
            }
        };
        let report = handle_fetched_task(&payload, &self.env, fetched).await;
        let (status, error) = match &report.outcome {
            TaskOutcome::Succeeded { .. } => ("succeeded", None),
            TaskOutcome::Failed { error } if error.kind == FailureKind::Stopped => {
                ("stopped", Some(error.message.clone()))
            }
            TaskOutcome::Failed { error } => ("failed", Some(error.message.clone())),
        };
        serde_json::json!({
            "status": status,
            "query_id": report.query_id,
            "stage": report.stage,
            "task": report.task,
            "attempt": report.attempt,
            "error": error,
        })
    }

    /// The task's bytes, and the requests fetching them took (a GET for a
    /// payload in S3).
    async fn payload(&self, event: serde_json::Value) -> Result<(Bytes, RequestCounts)> {
        if let Ok(pointer) = serde_json::from_value::<PayloadPointer>(event.clone()) {
            let bytes = self
                .read_object(&pointer.payload_location, pointer.range, "task payload")
                .await?;
            let fetched = RequestCounts {
                get: 1,
                ..RequestCounts::default()
            };
            return Ok((bytes, fetched));
        }
        serde_json::to_vec(&event)
            .map(|b| (Bytes::from(b), RequestCounts::default()))
            .map_err(|e| DataFusionError::External(Box::new(e)))
    }
}

/// What the API sends the coordinator function.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CoordinatorRequest {
    pub query_id: String,
    pub sql: String,
    /// Catalog location; default `SQUALL_DEFAULT_CATALOG` of the function.
    #[serde(default)]
    pub catalog: Option<String>,
    /// Settings of the engine that runs this query (the API's own `squall.*`
    /// and `datafusion.*` settings), over the function's environment.
    #[serde(default)]
    pub settings: Vec<(String, String)>,
    /// The client's session properties: applied per query, under the
    /// engine's limits (a session cannot change deployment settings or raise
    /// the timeout and memory limits; see `squall_planner::limits`).
    #[serde(default)]
    pub session: Vec<(String, String)>,
    /// The client's user, catalog and schema (`current_user`, ...).
    #[serde(default)]
    pub identity: squall_planner::trino_functions::SessionIdentity,
    /// The slug of the query's URIs, kept in its record.
    #[serde(default)]
    pub slug: String,
    /// Bounds of the result's pages (default: `PageLimits::default()`).
    #[serde(default)]
    pub page_rows: Option<usize>,
    #[serde(default)]
    pub page_bytes: Option<usize>,
    /// Set when an earlier invocation handed the query over: resume it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffRequest>,
}

/// Runs one query per invocation and records it in the state store.
///
/// ```text
/// record QUEUED? (written by the API; made here when invoked directly)
///   cancel requested already -> CANCELED
///   RUNNING ──> engine.sql_with(sql, cancel, progress, query_id)
///     │  every squall.state_poll_ms: cancel requested? -> cancel the query;
///     │                              progress changed?  -> rewrite the record
///   ok ──> pages -> result.arrow -> FINISHED   err ──> FAILED (or CANCELED)
/// ```
///
/// A duplicate invocation of an ended query does nothing. The engine itself
/// writes the query's stop marker when it ends (however it ends), so workers
/// still running stop. Past `squall.coordinator.max_run_secs` the query is
/// handed over to a new invocation ([`crate::handoff`]) and the record stays
/// RUNNING; that invocation claims its generation first, so a duplicate of
/// it does nothing.
pub struct CoordinatorFunction;

impl CoordinatorFunction {
    pub async fn handle(&self, request: CoordinatorRequest) -> serde_json::Value {
        let store = match state_store_from_env().await {
            Ok(s) => s,
            Err(e) => return serde_json::json!({"status": "failed", "error": e.to_string()}),
        };
        let record = match run_recorded(&store, request).await {
            Ok(record) => record,
            Err(e) => {
                tracing::error!(%e, "recording query state failed");
                return serde_json::json!({"status": "failed", "error": e.to_string()});
            }
        };
        serde_json::json!({
            "status": record.state,
            "query_id": record.query_id,
            "rows": record.rows,
            "error": record.error.map(|e| e.message),
        })
    }
}

/// Runs the query of `request` and records every change; returns the final
/// record. Its requests of the state store go into the query's profile
/// (`requests.state`), the final record's PUT included.
pub async fn run_recorded(
    store: &ObjectQueryStore,
    request: CoordinatorRequest,
) -> Result<QueryRecord> {
    let requests = RequestCounter::new();
    let store = &store.counting(&requests);
    let id = request.query_id.clone();
    let mut record = match store.read_record(&id).await? {
        Some(r) => r,
        None => QueryRecord::queued(&id, &request.slug, &request.sql),
    };
    if record.state.is_done() {
        tracing::info!(query_id = %id, state = ?record.state, "query already ended; duplicate invocation ignored");
        return Ok(record);
    }
    let resume = request.handoff.as_ref().map(|h| h.resume.clone());
    let cancel = CancellationToken::new();
    if let Some(resume) = &resume {
        if !claim(store, &id, resume.generation).await? {
            tracing::info!(query_id = %id, generation = resume.generation, "generation already claimed; duplicate invocation ignored");
            return Ok(record);
        }
        // A resumed query is ended by its coordinator loop, cancelled or
        // not: it stops the tasks and deletes the objects.
        if store.cancel_requested(&id).await? {
            cancel.cancel();
        }
    } else {
        if store.cancel_requested(&id).await? {
            record.fail(QueryFailure::canceled());
            store.write_record(&record).await?;
            return Ok(record);
        }
        record.start();
        store.write_record(&record).await?;
    }

    let squall = SquallConfig::from_env()?;
    let poll = Duration::from_millis(squall.state_poll_ms.max(10));
    let progress = Arc::new(QueryProgress::default());
    let done = Arc::new(Notify::new());
    let watcher = tokio::spawn(watch(
        store.clone(),
        record.clone(),
        cancel.clone(),
        Arc::clone(&progress),
        Arc::clone(&done),
        poll,
    ));
    let catalog = request.catalog.clone().or_else(|| {
        std::env::var("SQUALL_DEFAULT_CATALOG")
            .ok()
            .filter(|c| !c.is_empty())
    });
    let outcome = async {
        let engine = aws_engine(EngineOptions {
            catalog,
            settings: request.settings.clone(),
        })
        .await?;
        let options = RunOptions {
            settings: request.session.clone(),
            cancel: cancel.clone(),
            progress: Arc::clone(&progress),
            query_id: Some(id.clone()),
            resume,
            return_handoffs: true,
            identity: request.identity.clone(),
        };
        engine.sql_or_hand_over(&request.sql, &options).await
    }
    .await;
    // The watcher finishes the write it may be doing before the final one.
    done.notify_one();
    if let Err(e) = watcher.await {
        tracing::warn!(%e, query_id = %id, "progress watcher failed");
    }
    record.progress = ProgressRecord::of(&progress);
    let earlier = request
        .handoff
        .as_ref()
        .map(|h| h.state_requests)
        .unwrap_or_default();
    let outcome = match outcome {
        Ok(Outcome::HandedOver(handed)) => {
            // The record stays RUNNING: the next invocation goes on with it.
            match start_successor(&request, handed, earlier + requests.snapshot()).await {
                Ok(()) => return Ok(record),
                Err(message) => {
                    record.fail(QueryFailure::new(ErrorKind::Internal, message));
                    store.write_record(&record).await?;
                    return Ok(record);
                }
            }
        }
        Ok(Outcome::Finished(result)) => Ok(result),
        Err(e) => Err(e),
    };
    let canceled = cancel.is_cancelled() || store.cancel_requested(&id).await.unwrap_or(false);
    match outcome {
        Ok(result) if canceled => {
            result.batches.discard().await;
            record.fail(QueryFailure::canceled())
        }
        Err(_) if canceled => record.fail(QueryFailure::canceled()),
        Ok(result) => {
            let limits = PageLimits {
                rows: request.page_rows.unwrap_or(PageLimits::default().rows),
                bytes: request.page_bytes.unwrap_or(PageLimits::default().bytes),
            };
            // Read from the final stage's objects and written page by page:
            // never the whole result in memory. A statement that changes
            // something (the API recorded its update type) answers with one
            // row, its count, read here for Trino's `updateCount`.
            let mut update_count = None;
            let batches = if record.update_type.is_some() {
                match result.batches.into_stream().try_collect::<Vec<_>>().await {
                    Ok(batches) => {
                        update_count = squall_planner::query_record::update_count_of(&batches);
                        futures::stream::iter(batches.into_iter().map(Ok)).boxed()
                    }
                    Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                }
            } else {
                result.batches.into_stream()
            };
            let pages = paginate_stream(&result.schema, batches, limits);
            let stored = store.write_result(&id, &result.schema, pages).await;
            match stored {
                Ok(index) => {
                    record.profile = result.profile.map(|mut profile| {
                        profile.requests.state = earlier + requests.snapshot();
                        // The write of this very record.
                        profile.requests.state.put += 1;
                        profile
                    });
                    record.update_count = update_count;
                    record.finish(index);
                }
                Err(e) => record.fail(QueryFailure::new(
                    ErrorKind::Internal,
                    format!("storing the result of query {id}: {e}"),
                )),
            }
        }
        Err(e) => {
            // The message can quote the SQL's literals: only at debug level.
            tracing::info!(query_id = %id, "query failed");
            tracing::debug!(query_id = %id, error = %e, "query failed");
            record.fail(QueryFailure::from_datafusion(&e));
        }
    }
    store.write_record(&record).await?;
    Ok(record)
}

/// While the query runs: cancels it once a cancel is requested, and rewrites
/// its record when the progress has changed. Returns when `done` is notified.
async fn watch(
    store: ObjectQueryStore,
    mut record: QueryRecord,
    cancel: CancellationToken,
    progress: Arc<QueryProgress>,
    done: Arc<Notify>,
    poll: Duration,
) {
    let id = record.query_id.clone();
    loop {
        tokio::select! {
            _ = done.notified() => return,
            _ = tokio::time::sleep(poll) => {}
        }
        if !cancel.is_cancelled() {
            match store.cancel_requested(&id).await {
                Ok(true) => {
                    tracing::info!(query_id = %id, "cancel requested; stopping the query");
                    cancel.cancel();
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(%e, query_id = %id, "looking for a cancel request failed"),
            }
        }
        let now = ProgressRecord::of(&progress);
        if now != record.progress && !cancel.is_cancelled() {
            record.progress = now;
            if let Err(e) = store.write_record(&record).await {
                tracing::warn!(%e, query_id = %id, "recording progress failed");
            }
        }
    }
}

/// The runtime a function's `main` runs on: tokio's multi-threaded one,
/// its threads with squall's stacks (a statement's syntax tree is walked
/// recursively on them: `squall_core::executor::THREAD_STACK_BYTES`).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(squall_core::executor::THREAD_STACK_BYTES)
        .enable_all()
        .build()
}

/// JSON logs (Lambda's log format) filtered by `SQUALL_LOG` (default `info`).
pub fn init_tracing() {
    let filter = std::env::var("SQUALL_LOG").unwrap_or_else(|_| "info".to_string());
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_current_span(true)
        .without_time()
        .try_init();
}
