//! The coordinator: drives one staged query to completion over the seams
//! (object store, completion queue, invoker), whatever the backend.
//!
//! ```text
//!            +-- launch ready stages (all inputs accepted) --> Invoker::invoke(TaskSpec bytes)
//!  loop  ----+-- CompletionQueue::receive(query queue)
//!            +-- accept first successful attempt of a task; ignore duplicates and stale attempts
//!            +-- failed attempt -> new attempt (up to squall.task.max_attempts)
//!            +-- silent attempt past its deadline -> another attempt beside it (deadlines.rs)
//!  end: read the final stage's outputs, delete every exchange object and the queue
//! ```
//!
//! Recovery, and fault injection when `squall.fault.*` asks for it, wrap the
//! backend's seams for the query: its exchange store retries and hedges
//! requests, and its invoker retries throttled invocations
//! (`squall_core::recovery`). Completion messages may come twice, late, out
//! of order or never: the first accepted attempt of a task wins, later
//! reports of it are counted as duplicates and ignored, a failure of an
//! attempt that was already superseded is ignored, and a task that stays
//! silent gets a new attempt once it is overdue.
//!
//! A stage's shuffle reads are *resolved* here: when all of its inputs have
//! an accepted attempt per task, each of its tasks gets an [`InputBinding`]
//! per read, naming exactly the accepted objects and byte ranges.
//! What it does not do: plan (see `stages`, `split`) or execute operators.
//!
//! Layout: the event loop is here ([`run_query`]); [`launch`] starts ready
//! stages and their tasks, [`coalesce`] sizes a reduce stage's tasks from
//! its measured map outputs, [`grid`] forms a combine stage's tasks (the
//! two-level exchange of hash reads) from its input's measured outputs,
//! [`combine`] merges a finished broadcast input into one object, [`inputs`] resolves shuffle reads, [`key_filter`]
//! builds a finished stage's join-key filter, [`deadlines`] relaunches
//! silent attempts, and [`finish`] reads the result and cleans up;
//! [`checkpoint`] hands a query over to a fresh run past the run's deadline
//! (`squall.coordinator.max_run_secs`) and resumes it there.

use crate::error::PlannerError;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use bytes::Bytes;
use datafusion::error::Result;
use squall_core::config::SquallConfig;
use squall_core::fault::{FaultyInvoker, hash_text};
use squall_core::key_filter::FilterSizing;
use squall_core::recovery::{Backoff, RetryingInvoker, StoreStats, layered_store};
use squall_core::requests::RequestCounts;
use squall_core::task::{
    FilterBinding, MapOutput, ScanAssignment, TaskMetrics, TaskOutcome, TaskReport,
};

use crate::partitions::PartitionCount;
use crate::profile::{QueryProfile, StageProfile};
use deadlines::{Deadlines, RunningMedian, relaunch_overdue, waiting_for};
use key_filter::FilterBuilds;

mod checkpoint;
pub mod coalesce;
mod combine;
mod completions;
mod deadlines;
mod drive;
mod fingerprint;
mod finish;
mod grid;
mod inputs;
mod key_filter;
mod launch;
mod launcher;

pub use checkpoint::{HandedOver, Handoff, Resume};
use completions::Completions;
use drive::drive;
use finish::{Shards, query_requests, stop_and_cleanup};
use launch::{launch_ready, task_count};
use launcher::{Launcher, Sent};

use crate::backend::Backend;
use crate::result_stream::ResultObjects;
use crate::stages::StagedPlan;

/// Everything the coordinator needs to run a query.
pub struct QueryJob {
    pub query_id: String,
    pub staged: StagedPlan,
    /// Per stage (same order): its plan encoded for the workers, as checked
    /// at planning (`plan_check::encode_checked`).
    pub stage_plans: Vec<Bytes>,
    /// Per stage (same order as `staged.stages`): scan assignments per task.
    /// Empty for stages without scans.
    pub scan_tasks: Vec<Vec<Vec<ScanAssignment>>>,
    /// Session settings sent to every task.
    pub settings: Vec<(String, String)>,
    pub max_attempts: u32,
    pub silence_timeout: Duration,
    /// Per stage: row groups pruned by statistics before making tasks.
    pub row_groups_pruned: Vec<u64>,
    /// Per stage: partitions of partitioned tables its scans read and pruned.
    pub partitions: Vec<PartitionCount>,
    /// Per stage: compressed bytes its scans read (after pruning), which
    /// weigh its place in the launch order (see `launch::launch_ranks`).
    pub scan_bytes: Vec<u64>,
    /// Cancels the query (and its running tasks) when triggered.
    pub cancel: CancellationToken,
    /// Live task counts, for clients polling the query.
    pub progress: Arc<QueryProgress>,
    /// How join-key filters are sized and shipped.
    pub filters: FilterShipping,
    /// Injected faults the coordinator itself applies (`corrupt_payload_rate`).
    pub faults: squall_core::config::FaultOptions,
    /// The query's settings: store retries and hedging, throttle retries,
    /// attempt deadlines, and the faults injected at the seams.
    pub config: SquallConfig,
    /// Requests planning made (listings, footers), for the profile.
    pub planning_requests: RequestCounts,
    /// When this run hands the query over, and the checkpoint it resumes from.
    pub handoff: Handoff,
}

/// How the coordinator turns build-side key sections into a filter and ships it.
#[derive(Debug, Clone, Copy)]
pub struct FilterShipping {
    pub sizing: FilterSizing,
    /// Filters up to this many bytes go inline in task payloads.
    pub inline_max_bytes: usize,
}

impl FilterShipping {
    pub fn from_options(o: &squall_core::config::BloomOptions) -> Self {
        Self {
            sizing: FilterSizing {
                max_keys: o.max_keys,
                exact_max_keys: o.exact_max_keys,
                fpp: o.fpp,
            },
            inline_max_bytes: o.inline_max_bytes,
        }
    }
}

/// Live progress of a running query.
#[derive(Debug, Default)]
pub struct QueryProgress {
    pub total_tasks: AtomicUsize,
    pub completed_tasks: AtomicUsize,
    pub launched_tasks: AtomicUsize,
    pub total_stages: AtomicUsize,
    pub completed_stages: AtomicUsize,
}

impl QueryProgress {
    fn done(&self, n: &AtomicUsize) {
        n.fetch_add(1, Ordering::Relaxed);
    }
}

/// How a coordinator run ended: the query finished, or the run handed it
/// over to another run ([`checkpoint`]).
// One per query run, moved a few times: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum QueryRun {
    Finished(QueryOutput),
    HandedOver(HandedOver),
}

/// What the event loop ended with.
// One per query run, moved a few times: its size does not matter.
#[allow(clippy::large_enum_variant)]
enum Driven {
    Finished(QueryOutput),
    HandOver(Box<checkpoint::Checkpoint>),
}

/// A finished query: its rows and its profile.
pub struct QueryOutput {
    /// The final stage's objects, kept for the result to be read from.
    pub result: ResultObjects,
    pub profile: QueryProfile,
}

struct StageRun {
    index: usize,
    stage_plan: Bytes,
    tasks: Vec<TaskRun>,
    launched: bool,
    accepted: usize,
    started: Option<Instant>,
    /// When the stage last moved: its launch, or the last task accepted.
    progressed: Option<Instant>,
    finished: Option<Instant>,
    /// For a stage that publishes join keys: its filter, once built.
    filter: Option<FilterBinding>,
    /// Its filter is being built.
    filter_building: bool,
    /// While it runs: the key sections of its accepted tasks, merged so far.
    keys: key_filter::KeyWatch,
    /// Run times of its accepted tasks, for its attempts' deadlines.
    run_times: RunningMedian,
    /// For a stage reading hash partitions: the contiguous partition ranges
    /// its tasks (a hash stage) or its read partitions (a single task) read,
    /// formed from the measured map outputs when it launches ([`coalesce`]).
    groups: Vec<std::ops::Range<usize>>,
    /// Its accepted outputs combined into one object for its broadcast
    /// readers, once finished ([`combine`]).
    combined: Option<squall_core::task::ObjectRange>,
    /// Whether combining was considered (once, when it finished).
    combine_considered: bool,
    /// For a combine stage: its grid, formed when it launches ([`grid`]).
    grid: Option<grid::Grid>,
}

#[derive(Default)]
struct TaskRun {
    attempts: u32,
    accepted: Option<(u32, MapOutput, TaskMetrics)>,
    failures: u32,
    /// When the latest attempt sent was sent (its deadline counts from then).
    launched: Option<Instant>,
    /// Attempts queued on the launcher and not yet sent.
    sending: u32,
    /// Attempts that have reported (succeeded or failed).
    reported: Vec<u32>,
}

impl TaskRun {
    /// Attempts launched that never reported (stopped, lost, still running).
    fn silent(&self) -> usize {
        (self.attempts as usize).saturating_sub(self.reported.len())
    }
}

/// Note attempts whose invocation went out: each one's deadline counts from
/// now, and its stage has progressed. An invocation refused for good
/// (throttle retries spent, a missing function) fails the query, naming
/// its stage and task.
fn record_sent(
    job: &QueryJob,
    runs: &mut [StageRun],
    profile: &mut QueryProfile,
    sent: Sent,
) -> Result<()> {
    sent.result?;
    for (si, t, attempt) in sent.attempts {
        let run = &mut runs[si];
        run.progressed = run.progressed.max(Some(sent.at));
        let Some(task) = run.tasks.get_mut(t) else {
            continue;
        };
        task.sending = task.sending.saturating_sub(1);
        if attempt + 1 >= task.attempts {
            task.launched = Some(sent.at);
        }
        if attempt == 0 {
            profile.tasks_launched += 1;
            job.progress.done(&job.progress.launched_tasks);
        }
    }
    Ok(())
}

/// Run `job` to completion on `backend`. Everything it logs, and every
/// task it starts in this process, is inside a `query` span carrying the
/// query id. A run that hands over (a job with a deadline) is abandoned:
/// callers that resume use [`run_query_or_hand_over`].
pub async fn run_query(job: QueryJob, backend: &Backend) -> Result<QueryOutput> {
    let query_id = job.query_id.clone();
    match run_query_or_hand_over(job, backend).await? {
        QueryRun::Finished(out) => Ok(out),
        QueryRun::HandedOver(h) => {
            h.abandon().await;
            Err(PlannerError::Internal(format!(
                "query {query_id}: handed over by a caller that does not resume queries"
            ))
            .into())
        }
    }
}

/// [`run_query`], or the query handed over once `job.handoff.deadline`
/// passes, for another run to resume ([`checkpoint`]).
pub async fn run_query_or_hand_over(job: QueryJob, backend: &Backend) -> Result<QueryRun> {
    let span = tracing::info_span!("query", query_id = %job.query_id);
    run_query_in_span(job, backend).instrument(span).await
}

async fn run_query_in_span(job: QueryJob, backend: &Backend) -> Result<QueryRun> {
    let mut started = Instant::now();
    // The query's view of the seams: recovery, and injected faults if asked for.
    let store_stats = Arc::new(StoreStats::default());
    let invoker = Arc::new(RetryingInvoker::new(
        FaultyInvoker::wrap(Arc::clone(&backend.invoker), &job.config.fault),
        job.config.task.invoke_retries,
        Backoff::new(
            Duration::from_millis(job.config.task.invoke_backoff_ms),
            Duration::from_secs(5),
        ),
    ));
    let backend = &Backend {
        exchange_store: layered_store(
            Arc::clone(&backend.exchange_store),
            &job.config,
            &[hash_text(&[&job.query_id])],
            &store_stats,
        ),
        invoker: Arc::clone(&invoker) as _,
        ..backend.clone()
    };
    // A run that resumes reopens the query's queue (the same address), with
    // the reports that came after the hand-off waiting in it.
    let address = backend.queue.create(&job.query_id).await?;
    let resumed = match checkpoint::load(&job, backend).await {
        Ok(c) => c,
        Err(e) => {
            // The query cannot go on: end it here. Its earlier runs may have
            // planned it otherwise (that is why a resume is refused), so
            // their tasks' objects are looked for under every shard.
            stop_and_cleanup(
                &job,
                backend,
                &address,
                &HashSet::new(),
                true,
                Shards::Every,
            )
            .await;
            return Err(e);
        }
    };
    if let Some(c) = &resumed {
        started = started.checked_sub(c.elapsed()).unwrap_or(started);
    }
    let mut silent = 0;
    let driven = drive(&job, backend, &address, started, &mut silent, resumed).await;
    let mut result = match driven {
        Ok(Driven::Finished(out)) => Ok(out),
        Ok(Driven::HandOver(mut c)) => {
            // This run's requests and recoveries go on in the checkpoint.
            let requests = query_requests(&job, backend, &address, &store_stats.requests);
            c.add_run(requests, invoker.throttles(), &store_stats);
            match checkpoint::write(*c, &job, backend).await {
                Ok(resume) => {
                    let backend = backend.clone();
                    let handed = HandedOver::new(resume, job, backend, address);
                    return Ok(QueryRun::HandedOver(handed));
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    // Stop whatever still runs (stragglers, duplicates, or everything on
    // cancel or failure) before deleting what the query wrote, but for the
    // result's objects: its reader deletes them once read.
    let keep: HashSet<String> = match &result {
        Ok(out) => out.result.keys().iter().cloned().collect(),
        Err(_) => HashSet::new(),
    };
    let swept_again = result.is_err() || silent > 0;
    stop_and_cleanup(&job, backend, &address, &keep, swept_again, Shards::Used).await;
    let mut requests = query_requests(&job, backend, &address, &store_stats.requests);
    if let Ok(out) = &mut result {
        requests.coordinator += out.result.requests();
        requests.tasks = out.profile.requests.tasks;
        // Earlier runs' requests (a query handed over), kept in its profile.
        requests.planning += out.profile.requests.planning;
        requests.coordinator += out.profile.requests.coordinator;
        out.profile.requests = requests;
        out.profile.invoke_throttles += invoker.throttles();
        out.profile.store_retries += store_stats.retries();
        out.profile.store_hedges += store_stats.hedges();
    }
    result.map(QueryRun::Finished)
}
