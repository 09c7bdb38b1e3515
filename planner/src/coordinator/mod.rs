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
mod finish;
mod grid;
mod inputs;
mod key_filter;
mod launch;
mod launcher;

pub use checkpoint::{HandedOver, Handoff, Resume};
use completions::Completions;
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

async fn drive(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    started: Instant,
    silent: &mut usize,
    resumed: Option<checkpoint::Checkpoint>,
) -> Result<Driven> {
    let mut runs = Vec::with_capacity(job.staged.stages.len());
    if job.stage_plans.len() != job.staged.stages.len() {
        return Err(PlannerError::Internal(format!(
            "query {}: {} encoded stage plans for {} stages",
            job.query_id,
            job.stage_plans.len(),
            job.staged.stages.len()
        ))
        .into());
    }
    for (index, stage_plan) in job.stage_plans.iter().enumerate() {
        let tasks = task_count(job, index);
        runs.push(StageRun {
            index,
            stage_plan: stage_plan.clone(),
            tasks: (0..tasks).map(|_| TaskRun::default()).collect(),
            launched: false,
            accepted: 0,
            started: None,
            progressed: None,
            finished: None,
            filter: None,
            filter_building: false,
            run_times: RunningMedian::default(),
            groups: Vec::new(),
            combined: None,
            combine_considered: false,
            grid: None,
        });
    }
    let mut profile = QueryProfile::new(&job.query_id);
    // Per stage: the requests of every attempt that reported.
    let mut requests = vec![RequestCounts::default(); runs.len()];
    job.progress
        .total_stages
        .store(runs.len(), Ordering::Relaxed);
    job.progress
        .total_tasks
        .store(runs.iter().map(|r| r.tasks.len()).sum(), Ordering::Relaxed);
    let ids: HashMap<u32, usize> = job
        .staged
        .stages
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id, i))
        .collect();

    // Key filters being built, each in a task of its own (aborted if the
    // query ends first).
    let mut filters = FilterBuilds::default();
    let deadlines = Deadlines::from_options(&job.config.task);
    let mut query_times = RunningMedian::default();
    // Invocations go out from a task of their own, completions come in
    // through another: the loop never waits on either.
    let mut launcher = Launcher::start(job, Arc::clone(&backend.invoker));
    let mut completions = Completions::start(Arc::clone(&backend.queue), address);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    if let Some(c) = resumed {
        let (times, builds) = (&mut query_times, &mut filters);
        (profile, requests) =
            checkpoint::restore(c, job, backend, &mut runs, times, builds, &mut launcher)?;
    }
    launch_ready(job, backend, address, &mut runs, &mut launcher)?;
    let final_index = runs.len().saturating_sub(1);
    let mut last_message = Instant::now();
    let mut moved = false;
    while runs
        .get(final_index)
        .is_some_and(|r| r.accepted < r.tasks.len())
    {
        // Past this run's deadline, the query is handed over (every report
        // received so far is in the state captured or sent back to the
        // queue) once this run has taken reports: each run moves it on.
        if job.handoff.due(moved) {
            let (launches, receives, p) = (launcher, completions, &mut profile);
            let resent =
                checkpoint::quiesce(job, backend, address, &mut runs, p, launches, receives)
                    .await?;
            let c = checkpoint::capture(job, &runs, &profile, &requests, started, resent)?;
            return Ok(Driven::HandOver(Box::new(c)));
        }
        let bodies: Vec<String> = tokio::select! {
            _ = job.cancel.cancelled() => {
                return Err(PlannerError::Cancelled { query_id: Some(job.query_id.clone()) }.into());
            }
            Some((si, built)) = filters.next() => {
                let (binding, fp) = built?;
                profile.s3_get += fp.get_requests;
                profile.s3_put += fp.put_requests;
                profile.filters.push(fp);
                runs[si].filter = Some(binding);
                runs[si].filter_building = false;
                launch_ready(job, backend, address, &mut runs, &mut launcher)?;
                continue;
            }
            sent = launcher.next_sent() => {
                for sent in sent {
                    record_sent(job, &mut runs, &mut profile, sent)?;
                }
                launcher.top_up(job, backend, address, &runs)?;
                continue;
            }
            bodies = completions.next() => bodies?,
            _ = tick.tick() => Vec::new(),
        };
        relaunch_overdue(
            job,
            &mut runs,
            &query_times,
            &mut profile,
            &deadlines,
            &mut launcher,
        );
        launcher.top_up(job, backend, address, &runs)?;
        if bodies.is_empty() {
            // Silence while launches are still going out is not the tasks'.
            if launcher.pending() > 0 {
                last_message = Instant::now();
            }
            if last_message.elapsed() > job.silence_timeout {
                return Err(PlannerError::Silent {
                    query_id: job.query_id.clone(),
                    silence: job.silence_timeout,
                    waiting_for: waiting_for(job, &runs),
                }
                .into());
            }
            continue;
        }
        last_message = Instant::now();
        moved = true;
        for body in bodies {
            profile.messages += 1;
            let report = match TaskReport::decode(&body) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(%e, "undecodable completion message ignored");
                    continue;
                }
            };
            if report.query_id != job.query_id {
                tracing::warn!(other = %report.query_id, "message of another query ignored");
                continue;
            }
            let Some(&si) = ids.get(&report.stage) else {
                continue;
            };
            let mut retry = None;
            {
                let run = &mut runs[si];
                let Some(task) = run.tasks.get_mut(report.task as usize) else {
                    continue;
                };
                if !task.reported.contains(&report.attempt) {
                    task.reported.push(report.attempt);
                    requests[si] += report.metrics.requests;
                }
                if task.accepted.is_some() {
                    profile.duplicates += 1;
                    continue;
                }
                match report.outcome {
                    TaskOutcome::Succeeded { output } => {
                        run.run_times.push(report.metrics.wall_ms);
                        query_times.push(report.metrics.wall_ms);
                        task.accepted = Some((report.attempt, output, report.metrics));
                        run.accepted += 1;
                        run.progressed = Some(Instant::now());
                        job.progress.done(&job.progress.completed_tasks);
                        // The first accepted attempt wins: stop the others.
                        for other in (0..task.attempts).filter(|a| !task.reported.contains(a)) {
                            if let Err(e) = backend
                                .invoker
                                .stop_attempt(&job.query_id, report.stage, report.task, other)
                                .await
                            {
                                tracing::warn!(%e, stage = report.stage, task = report.task, attempt = other, "stopping a superseded attempt failed");
                            }
                        }
                        if run.accepted == run.tasks.len() {
                            run.finished = Some(Instant::now());
                            job.progress.done(&job.progress.completed_stages);
                        }
                    }
                    TaskOutcome::Failed { error } => {
                        task.failures += 1;
                        // Only the latest attempt's failure matters; an older one was already retried.
                        if report.attempt + 1 < task.attempts {
                            continue;
                        }
                        if !error.retryable || task.attempts >= job.max_attempts {
                            return Err(PlannerError::TaskFailed {
                                stage: report.stage,
                                task: report.task,
                                attempts: task.attempts,
                                kind: error.kind,
                                message: error.message.clone(),
                            }
                            .into());
                        }
                        tracing::info!(stage = report.stage, task = report.task, attempt = task.attempts, kind = %error.kind, "retrying task");
                        retry = Some((report.task as usize, task.attempts));
                        task.attempts += 1;
                        task.sending += 1;
                    }
                }
            }
            if let Some((t, attempt)) = retry {
                profile.retries += 1;
                launcher.enqueue((si, t, attempt));
            } else if runs[si].finished.is_some() {
                let stage = &job.staged.stages[si];
                if stage.publishes_filter()
                    && runs[si].filter.is_none()
                    && !runs[si].filter_building
                {
                    runs[si].filter_building = true;
                    let build = key_filter::FilterBuild::new(job, backend, &runs[si], stage.id);
                    filters.start(si, build);
                }
                if !runs[si].combine_considered {
                    runs[si].combine_considered = true;
                    runs[si].combined =
                        combine::combine_broadcast(job, backend, &runs, si, &mut profile).await;
                }
                launch_ready(job, backend, address, &mut runs, &mut launcher)?;
            }
        }
        launcher.top_up(job, backend, address, &runs)?;
    }

    // Every invocation's answer in, so the query counts all its requests.
    launcher
        .settle(Duration::from_millis(job.config.task.invoke_answer_ms) + Duration::from_secs(5))
        .await;
    drop(completions);
    *silent = runs
        .iter()
        .flat_map(|r| &r.tasks)
        .map(TaskRun::silent)
        .sum();
    let final_run = &runs[final_index];
    let mut outputs = Vec::new();
    for t in &final_run.tasks {
        if let Some((_, out, _)) = &t.accepted {
            outputs.push(out.clone());
        }
    }
    let result = ResultObjects::new(
        Arc::clone(&backend.exchange_store),
        // What the final stage's writer is given (the writer's own schema
        // for a stage without one).
        job.staged
            .final_stage()
            .map(|s| {
                s.plan
                    .children()
                    .first()
                    .map(|c| c.schema())
                    .unwrap_or_else(|| s.plan.schema())
            })
            .ok_or_else(|| PlannerError::Internal("empty staged plan".into()))?,
        &outputs,
    );
    profile.rows = result.rows();
    profile.wall_ms = started.elapsed().as_millis() as u64;
    for run in &runs {
        let stage = &job.staged.stages[run.index];
        let mut sp = StageProfile::new(stage.id, stage.layout.to_string(), run.tasks.len());
        sp.requests = requests[run.index];
        if let crate::stages::TaskLayout::Combine { source, .. } = &stage.layout {
            sp.grid = run.grid.as_ref().map(|g| g.profile(*source));
        }
        sp.row_groups_pruned += job.row_groups_pruned.get(run.index).copied().unwrap_or(0);
        if let Some(p) = job.partitions.get(run.index) {
            sp.partitions_read = p.read as u64;
            sp.partitions_pruned = p.pruned() as u64;
        }
        for t in &run.tasks {
            sp.attempts += t.attempts as usize;
            if let Some((_, out, m)) = &t.accepted {
                sp.add_task(out, m);
                profile.store_retries += m.store_retries;
                profile.store_hedges += m.store_hedges;
            }
        }
        sp.wall_ms = match (run.started, run.finished) {
            (Some(s), Some(f)) => f.duration_since(s).as_millis() as u64,
            _ => 0,
        };
        profile.add_stage(sp, run.index == final_index);
    }
    Ok(Driven::Finished(QueryOutput { result, profile }))
}
