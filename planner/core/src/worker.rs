//! Running one task: from the serialized [`TaskSpec`] bytes a worker receives
//! (a Lambda event payload, or the same bytes handed over in process) to the
//! one [`TaskReport`] it sends to the query's completion queue.
//!
//! ```text
//! payload --decode--> TaskSpec --decode plan--> stage plan --bind leaves--> ShuffleWriteExec
//!                                                                             | write object
//!                      completion queue <--send-- TaskReport <----------------+
//! ```
//!
//! A worker never panics on bad input: a payload that does not decode, a
//! wrong protocol version, a plan that does not bind — each becomes a failure
//! report naming the stage and task (as far as they could be read). Failures
//! another attempt cannot fix are reported not retryable, so the query fails
//! at once: a bad payload or setting, a plan that cannot be built (`plan`),
//! an internal DataFusion error (`internal`: a broken invariant), a task over
//! its memory limit (`memory_limit`).
//!
//! The task's operators run on the CPU executor ([`crate::executor`]); the
//! stop-marker watch and the report stay on the caller's runtime.
//!
//! A task whose spec names a stop marker (the aws backend, where nothing can
//! reach into a running Lambda invocation) looks for that object when it
//! starts and then every `squall.task.stop_poll_ms` while it runs; once the
//! marker exists the task is dropped wherever it is (between batches, during
//! a read) and ends `stopped` without writing its output; it sends no report,
//! since its query has ended.
//!
//! Every request a task makes is counted into its report
//! (`TaskMetrics::requests`, see [`crate::requests`]): its stores' through
//! the registry's counting layer, its stop-marker looks, the GET of a
//! payload that came through S3 ([`handle_fetched_task`]) and the
//! SendMessage of the report itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::DataFusionError;
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryLimit, MemoryPool};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::prelude::{SessionConfig, SessionContext};
use object_store::ObjectStoreExt;
use object_store::path::Path;
use tracing::{Instrument, info_span};

use crate::activity::RunningTask;
use crate::codec::decode_plan;
use crate::config::SquallConfig;
use crate::error::{Result, SquallError};
use crate::exec::{ShuffleWriteExec, enable_dynamic_filters, link_dynamic_filters, pace_plan};
use crate::executor::{join_error_text, spawn_cpu};
use crate::fault;
use crate::key_filter::KeyFilter;
use crate::key_filter::{BoundFilter, KeyFilterExec};
use crate::key_filter::{KeyRanges, push_into_scan, range_predicate};
use crate::memory::PeakTrackingPool;
use crate::recovery::{LayeredRegistry, StoreStats};
use crate::requests::{RequestCounter, RequestCounts};
use crate::scan::{ScanReading, bind_task};
use crate::seams::CompletionQueue;
mod failures;
mod metrics;
mod stop;
use failures::{failure_kind, name_files, scanned_files};
use metrics::collect_metrics;
pub use stop::worker_has_own_process;
use stop::{die, stop_requested};

use crate::task::{
    FailureKind, FilterBinding, FilterData, PROTOCOL_VERSION, TaskIdentity, TaskMetrics,
    TaskOutcome, TaskReport, TaskSpec,
};

/// Longest a stopped task waits for its operators to stop.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// What a worker process holds across tasks.
#[derive(Clone)]
pub struct WorkerEnv {
    /// Object stores (data and exchange) are registered here.
    pub runtime: Arc<RuntimeEnv>,
    /// Where reports are sent.
    pub queue: Arc<dyn CompletionQueue>,
}

/// Run the task in `payload`, send its report, and return the report.
pub async fn handle_task(payload: &[u8], env: &WorkerEnv) -> TaskReport {
    handle_fetched_task(payload, env, RequestCounts::default()).await
}

/// [`handle_task`] for a payload whose fetching took `fetched` requests
/// (the GET of a payload that came through S3): the report counts them
/// with the task's own.
pub async fn handle_fetched_task(
    payload: &[u8],
    env: &WorkerEnv,
    fetched: RequestCounts,
) -> TaskReport {
    let started = Instant::now();
    let requests = RequestCounter::new();
    requests.add(&fetched);
    let mut queue = Arc::clone(&env.queue);
    let (mut report, reply_to) = match TaskSpec::decode(payload) {
        Ok(spec) => {
            let _running = RunningTask::start(&spec.query_id);
            let span = info_span!("task", query_id = %spec.query_id, stage = spec.stage, task = spec.task, attempt = spec.attempt);
            if let Ok(config) = session_config(&spec.settings) {
                let faults = SquallConfig::from_session(&config).fault;
                queue = fault::FaultyQueue::wrap(queue, &faults, &coordinates(&spec));
            }
            let report = run_task(&spec, env, started, &requests)
                .instrument(span)
                .await;
            (report, spec.reply_to.clone())
        }
        Err(e) => {
            let id = TaskIdentity::salvage(payload).unwrap_or_default();
            let kind = match e {
                SquallError::ProtocolVersion { .. } => FailureKind::Protocol,
                _ => FailureKind::BadPayload,
            };
            let report = failure_report(&id, kind, e.to_string(), false, started);
            (report, id.reply_to)
        }
    };
    if reply_to.is_empty() {
        tracing::error!(error = ?report.outcome, "task report has no reply address; dropped");
        return report;
    }
    if report.failure_kind() == Some(FailureKind::Stopped) {
        // The stop marker exists once the query has ended: its queue is gone
        // or going, and nobody reads this report.
        return report;
    }
    // What the attempt asked of S3, and the SendMessage of this report.
    report.metrics.requests = requests.snapshot();
    report.metrics.requests.sqs_send += 1;
    match report.encode() {
        Ok(body) => {
            if let Err(e) = queue.send(&reply_to, body).await {
                tracing::error!(%e, "sending task report failed");
            }
        }
        Err(e) => tracing::error!(%e, "encoding task report failed"),
    }
    report
}

async fn run_task(
    spec: &TaskSpec,
    env: &WorkerEnv,
    started: Instant,
    requests: &Arc<RequestCounter>,
) -> TaskReport {
    tracing::info!("task started");
    // The operators run on the CPU executor; this runtime only waits for
    // them and watches the stop marker, so a busy task never delays the
    // look. Dropping `work` (a stop, or this task being stopped) aborts it
    // at its next yield. A panic anywhere in the task (a payload no
    // coordinator makes reaching code that trusts it) ends the task with a
    // report, not the worker.
    let work = spawn_cpu({
        let (spec, env, requests) = (spec.clone(), env.clone(), Arc::clone(requests));
        async move { execute(&spec, &env, &requests).await }.in_current_span()
    });
    tokio::pin!(work);
    let ended = tokio::select! {
        joined = &mut work => Ok(joined),
        marker = stop_requested(spec, env, requests) => Err(marker),
    };
    let result = match ended {
        Ok(joined) => joined.unwrap_or_else(|e| {
            Err(SquallError::Task {
                stage: spec.stage,
                task: spec.task,
                message: format!("the task panicked: {}", join_error_text(e)),
            })
        }),
        Err((marker, superseded)) => {
            // Wait (briefly) for the operators to let go, so that the
            // invocation ends with its work, not before it.
            let seen = Instant::now();
            work.abort();
            let stopped = tokio::time::timeout(STOP_WAIT, &mut work).await.is_ok();
            let operators_stopped_ms = stopped.then(|| seen.elapsed().as_millis() as u64);
            if superseded {
                tracing::info!(%marker, operators_stopped_ms, "task stopped: another attempt of it was accepted");
            } else {
                tracing::info!(%marker, operators_stopped_ms, "task stopped by its query's stop marker");
            }
            Err(SquallError::Stopped {
                stage: spec.stage,
                task: spec.task,
                marker,
            })
        }
    };
    if let Err(e) = &result {
        // An execution or data error's text can quote data values (a
        // failed cast, a bad literal): it goes to the coordinator, and to
        // the log only at debug level. The other kinds name squall's own
        // conditions.
        let kind = failure_kind(e);
        if matches!(kind, FailureKind::Execution | FailureKind::Data) {
            tracing::info!(error_kind = %kind, "task failed");
            tracing::debug!(error = %e, "task failed");
        } else {
            tracing::info!(error_kind = %kind, error = %e, "task failed");
        }
    } else {
        tracing::info!("task succeeded");
    }
    match result {
        Ok((outcome, mut metrics)) => {
            metrics.wall_ms = started.elapsed().as_millis() as u64;
            TaskReport {
                protocol: PROTOCOL_VERSION,
                query_id: spec.query_id.clone(),
                stage: spec.stage,
                task: spec.task,
                attempt: spec.attempt,
                outcome,
                metrics,
            }
        }
        Err(e) => {
            let kind = failure_kind(&e);
            // Another attempt cannot fix a bad payload, a bad setting, a
            // stopped query, a plan that cannot be built, a broken internal
            // invariant, or a task that needs more memory than its limit.
            let retryable = !matches!(
                kind,
                FailureKind::BadPayload
                    | FailureKind::Config
                    | FailureKind::Stopped
                    | FailureKind::Plan
                    | FailureKind::Internal
                    | FailureKind::Data
                    | FailureKind::MemoryLimit
            );
            let id = TaskIdentity {
                query_id: spec.query_id.clone(),
                stage: spec.stage,
                task: spec.task,
                attempt: spec.attempt,
                reply_to: String::new(),
            };
            failure_report(&id, kind, e.to_string(), retryable, started)
        }
    }
}

/// A failure while making the decoded plan runnable: a fault of the plan
/// (not retried) unless it came from reading a store (retried).
fn plan_failure(spec: &TaskSpec, e: SquallError) -> SquallError {
    let transient = match &e {
        SquallError::ObjectStore(_) | SquallError::Exchange { .. } | SquallError::Io(_) => true,
        SquallError::DataFusion(d) => matches!(
            d.find_root(),
            DataFusionError::ObjectStore(_) | DataFusionError::IoError(_)
        ),
        _ => false,
    };
    let bad_payload = match &e {
        SquallError::BadTaskPayload(_) => true,
        SquallError::DataFusion(DataFusionError::External(inner)) => matches!(
            inner.downcast_ref::<SquallError>(),
            Some(SquallError::BadTaskPayload(_))
        ),
        _ => false,
    };
    if transient || bad_payload {
        return e;
    }
    SquallError::TaskPlan {
        stage: spec.stage,
        task: spec.task,
        message: e.to_string(),
    }
}

/// Session config of a task: defaults plus the settings the coordinator sent.
pub fn session_config(settings: &[(String, String)]) -> Result<SessionConfig> {
    let mut config = SessionConfig::new().with_option_extension(SquallConfig::default());
    // The session zone the plan was made in (the planner's config):
    // functions read it where they run (`to_timestamp` of a column, which
    // `date_parse` is, stamps its values with it), and a task's values
    // must have the types planned ("to_timestamp returned Timestamp(ns)
    // while Timestamp(ns, \"UTC\") was promised").
    config.options_mut().execution.time_zone = Some("UTC".to_string());
    for (k, v) in settings {
        config
            .options_mut()
            .set(k, v)
            .map_err(|e| SquallError::Config(format!("{k}={v}: {e}")))?;
    }
    Ok(config)
}

/// A task's coordinates for fault decisions: stage, task, attempt.
fn coordinates(spec: &TaskSpec) -> [u64; 3] {
    [
        u64::from(spec.stage),
        u64::from(spec.task),
        u64::from(spec.attempt),
    ]
}

async fn execute(
    spec: &TaskSpec,
    env: &WorkerEnv,
    requests: &Arc<RequestCounter>,
) -> Result<(TaskOutcome, TaskMetrics)> {
    let mut config = session_config(&spec.settings)?;
    let squall = SquallConfig::from_session(&config);
    if squall.task.dynamic_filters {
        // The task's operators share this process (see exec::dynamic_filters);
        // DataFusion's joins read the switch again when they run.
        enable_dynamic_filters(config.options_mut());
    }
    let coords = coordinates(spec);
    if squall.fault.task_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(squall.fault.task_delay_ms)).await;
    }
    if fault::happens(
        squall.fault.task_hang_rate,
        squall.fault.seed,
        "task_hang",
        &coords,
    ) {
        // A straggler: it runs only after a long time, unless it is stopped
        // first (its query ends, or another attempt of it is accepted).
        tracing::info!(
            hang_ms = squall.fault.task_hang_ms,
            "task hangs (squall.fault.task_hang_rate)"
        );
        tokio::time::sleep(Duration::from_millis(squall.fault.task_hang_ms)).await;
    }
    // A pool of the task's own, to measure its peak (and limit it).
    let pool = Arc::new(PeakTrackingPool::for_task(
        &env.runtime.memory_pool,
        &spec.query_id,
        squall.query.memory_limit_bytes,
        squall.task.memory_limit_bytes,
    ));
    // A sort that spills reserves the memory to merge its runs up front
    // (`datafusion.execution.sort_spill_reservation_bytes`, 10 MiB by
    // default): under a limit of a few times that, shared by the task's
    // sorts and aggregations, every sort that had to spill failed ("Not
    // enough memory to continue external sort"). The reservation is at
    // most an eighth of the task's limit.
    if let MemoryLimit::Finite(limit) = pool.memory_limit() {
        let execution = &mut config.options_mut().execution;
        execution.sort_spill_reservation_bytes =
            execution.sort_spill_reservation_bytes.min(limit / 8);
    }
    // Every store the task opens (data, exchange, filters) retries and
    // hedges its requests, counts them, and carries the injected store
    // faults if any.
    let store_stats = Arc::new(StoreStats::counting_into(requests));
    let registry = LayeredRegistry::new(
        Arc::clone(&env.runtime.object_store_registry),
        &squall,
        &coords,
        Arc::clone(&store_stats),
    );
    let runtime = RuntimeEnvBuilder::from_runtime_env(&env.runtime)
        .with_memory_pool(Arc::clone(&pool) as _)
        .with_object_store_registry(Arc::new(registry))
        .build_arc()?;
    let ctx = SessionContext::new_with_config_rt(config, runtime);
    crate::scalar_subquery::register(&ctx);
    crate::series_limit::register(&ctx);
    crate::value_limit::register(&ctx);
    crate::trino_udfs::register(&ctx);
    let task_ctx = ctx.task_ctx();
    // DataFusion's plan decoder panics on some malformed input: a panic
    // there is a bad payload like any other decoding error.
    let plan = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        decode_plan(&spec.plan, &task_ctx)
    }))
    .map_err(|panic| {
        SquallError::BadTaskPayload(format!(
            "stage plan: the decoder panicked: {}",
            crate::error::panic_text(&panic)
        ))
    })?
    .map_err(|e| SquallError::BadTaskPayload(format!("stage plan: {e}")))?;
    let root = plan.downcast_ref::<ShuffleWriteExec>().ok_or_else(|| {
        SquallError::BadTaskPayload(format!(
            "stage plan root is {}, not ShuffleWriteExec",
            plan.name()
        ))
    })?;
    let input = bind_task(
        Arc::clone(root.input()),
        &spec.scans,
        &spec.inputs,
        &ScanReading {
            task_partitions: squall.resolved_task_partitions(),
            read_ahead_bytes: squall.scan.read_ahead_bytes as u64,
            read_ahead_windows: squall.scan.read_ahead_windows,
            runtime: Some(task_ctx.runtime_env()),
        },
    )
    .map_err(|e| plan_failure(spec, e.into()))?;
    let input = bind_filters(input, &spec.filters, &task_ctx)
        .await
        .map_err(|e| plan_failure(spec, e))?;
    // The task's joins and top-k sorts filter its scans (exec::dynamic_filters).
    let input = if squall.task.dynamic_filters {
        let linked = link_dynamic_filters(input, task_ctx.session_config().options())
            .map_err(|e| plan_failure(spec, e.into()))?;
        tracing::trace!(
            plan = %datafusion::physical_plan::displayable(linked.as_ref()).indent(true),
            "task plan with dynamic filters"
        );
        linked
    } else {
        input
    };
    // The task's scans may not report a constant the plan's ordering used.
    let input =
        crate::exec::sort_unordered_windows(input).map_err(|e| plan_failure(spec, e.into()))?;
    // Joins and unnests yield often, so a stop takes effect at once (see exec::pace_plan).
    let input = pace_plan(input).map_err(|e| plan_failure(spec, e.into()))?;
    let input = crate::exec::limit_recursion(input, squall.query.max_recursion_depth)
        .map_err(|e| plan_failure(spec, e.into()))?;
    let writer = root.with_input(input).with_output(spec.output.clone());

    let crash = fault::happens(
        squall.fault.task_crash_rate,
        squall.fault.seed,
        "task_crash",
        &coords,
    );
    let crash_after_write = fault::draw(squall.fault.seed, "task_crash_when", &coords) < 0.5;
    if crash && !crash_after_write {
        return Err(SquallError::InjectedFault(
            "task crashed before writing its output".into(),
        ));
    }

    let abort = fault::happens(
        squall.fault.task_abort_rate,
        squall.fault.seed,
        "task_abort",
        &coords,
    );
    if abort && !crash_after_write {
        die("before writing its output")?;
    }
    let input = Arc::clone(writer.input());
    let output = writer
        .write(task_ctx)
        .await
        .map_err(|e| name_files(e, || scanned_files(&input)))?;
    tracing::trace!(
        plan = %datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(&writer).indent(true),
        "task plan run"
    );
    if crash {
        return Err(SquallError::InjectedFault(
            "task crashed after writing its output".into(),
        ));
    }
    if abort {
        die("after writing its output")?;
    }

    let mut metrics = collect_metrics(&writer);
    metrics.peak_memory_bytes = pool.peak() as u64;
    metrics.store_retries = store_stats.retries();
    metrics.store_hedges = store_stats.hedges();
    metrics.rows_out = output.partitions.iter().map(|p| p.rows).sum();
    metrics.bytes_out = output.partitions.iter().map(|p| p.len).sum();
    let assigned: u64 = spec
        .scans
        .iter()
        .flat_map(|s| &s.files)
        .map(|f| f.row_groups.len() as u64)
        .sum();
    metrics.row_groups = assigned.saturating_sub(metrics.row_groups_pruned);
    Ok((TaskOutcome::Succeeded { output }, metrics))
}

/// Load the key filters a task applies and bind them into its plan's
/// [`KeyFilterExec`] nodes. A node without a filter is an error, never a pass.
async fn bind_filters(
    plan: Arc<dyn ExecutionPlan>,
    filters: &[FilterBinding],
    ctx: &TaskContext,
) -> Result<Arc<dyn ExecutionPlan>> {
    let mut loaded: HashMap<u32, BoundFilter> = HashMap::new();
    let mut ranges: HashMap<u32, KeyRanges> = HashMap::new();
    for f in filters {
        if let Some(bytes) = &f.ranges {
            ranges.insert(f.source_stage, KeyRanges::decode(bytes)?);
        }
        let bound = match &f.data {
            FilterData::Inline { bytes } => {
                BoundFilter::Filter(Arc::new(KeyFilter::decode(bytes)?))
            }
            FilterData::Object { location, .. } => {
                let store = ctx
                    .runtime_env()
                    .object_store(ObjectStoreUrl::parse(&location.store_url)?)?;
                let bytes = store
                    .get(&Path::from(location.key.as_str()))
                    .await
                    .map_err(|e| SquallError::Exchange {
                        key: location.key.clone(),
                        message: e.to_string(),
                    })?
                    .bytes()
                    .await
                    .map_err(|e| SquallError::Exchange {
                        key: location.key.clone(),
                        message: e.to_string(),
                    })?;
                BoundFilter::Filter(Arc::new(KeyFilter::decode(&bytes)?))
            }
            FilterData::Skipped { reason } => BoundFilter::PassAll(reason.clone()),
        };
        loaded.insert(f.source_stage, bound);
    }
    let config = ctx.session_config().options();
    let bound = plan.transform_up(|node| {
        let Some(kf) = node.downcast_ref::<KeyFilterExec>() else {
            return Ok(Transformed::no(node));
        };
        let filter = loaded.get(&kf.source_stage()).cloned().ok_or_else(|| {
            DataFusionError::from(SquallError::BadTaskPayload(format!(
                "the plan applies the key filter of stage s{} but the task carries none",
                kf.source_stage()
            )))
        })?;
        let mut node = Arc::new(kf.bind(filter)) as Arc<dyn ExecutionPlan>;
        // Rows outside the published keys' range cannot match: let the scan
        // below skip the row groups (and pages) that hold only such rows.
        let predicate = ranges
            .get(&kf.source_stage())
            .and_then(|r| range_predicate(kf.keys(), r));
        if let Some(predicate) = predicate
            && let Some(input) = push_into_scan(kf.input(), predicate, config.as_ref())?
        {
            node = node.replace_children(
                vec![input],
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            )?;
        }
        Ok(Transformed::yes(node))
    })?;
    Ok(bound.data)
}

fn failure_report(
    id: &TaskIdentity,
    kind: FailureKind,
    message: String,
    retryable: bool,
    started: Instant,
) -> TaskReport {
    let mut report = TaskReport::failed(id, kind, message, retryable);
    report.metrics.wall_ms = started.elapsed().as_millis() as u64;
    report
}

#[cfg(test)]
#[path = "worker/tests.rs"]
mod tests;
