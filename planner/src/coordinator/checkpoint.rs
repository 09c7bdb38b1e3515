//! Hand-offs: a query longer than one coordinator run. When a run's
//! deadline (`squall.coordinator.max_run_secs`) passes, the event loop
//! stops launching, captures its state as a [`Checkpoint`], which is written
//! (JSON, zstd) under the query's own exchange prefix, and the run returns
//! [`HandedOver`] instead of a result: it stops no task and deletes no
//! object or queue, so running tasks go on and their reports wait in the
//! query's queue. A fresh run (the coordinator function invoked again, or
//! the engine in process) plans the same SQL again, reopens the same queue,
//! loads the checkpoint, checks that the staged plan and its scan tasks are
//! the ones checkpointed, restores the loop's state and goes on.
//!
//! ```text
//!  run g ── deadline ── capture ──> {prefix}/{shard}/{query}/checkpoint/g{g+1}  (1 PUT)
//!            (no stop marker, no cleanup: tasks keep running, reports queue up)
//!  run g+1 ── plan again ── same queue ── load (1 GET), fingerprints ── restore ── loop
//! ```
//!
//! What is kept, per stage: launched, its tasks' attempts, accepted
//! outputs (attempt, [`MapOutput`], [`TaskMetrics`]), failures and reported
//! attempts, its filter binding, read groups and combined object, and its
//! times as ages; the profile so far and each stage's request counts. What
//! is formed again: run-time medians (from the accepted tasks' run times),
//! a combine stage's grid (from its input's accepted outputs, as at its
//! launch) and key filters being built when the run handed over (started
//! again for every finished stage that publishes one and has none). A task
//! accepted before the hand-off is never launched again; an attempt silent
//! at the hand-off keeps running and its deadline goes on counting from
//! where it was: the time between the runs, when no run could hear its
//! report, does not count (else the first pass of the next run would
//! duplicate tasks whose reports wait in the queue).
//!
//! Size: accepted outputs dominate (a map output lists every partition's
//! byte range), about what their completion messages held. Encoded as a
//! stream (JSON into zstd), never whole in memory; the run that resumes
//! decodes it as a stream too. The checkpoint is deleted with the query's
//! other exchange objects when the query ends, by the sweep of the run that
//! ends it, and by the bucket's lifecycle rule if no run does.
//!
//! What it does not do: start the next run (the engine or the coordinator
//! function does), or decide who may run a generation (the coordinator
//! function claims it in the state store).

use std::time::{Duration, Instant};

use bytes::Bytes;
use datafusion::error::Result;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::exchange::{query_prefix, shard};
use squall_core::recovery::StoreStats;
use squall_core::requests::RequestCounts;
use squall_core::task::{FilterBinding, MapOutput, ObjectRange, TaskMetrics};

use super::coalesce::Sizing;
use super::completions::Completions;
use super::fingerprint::fingerprints;
use super::grid::Grid;
use super::inputs::accepted;
use super::key_filter::{FilterBuild, FilterBuilds};
use super::launcher::Launcher;
use super::{QueryJob, StageRun, TaskRun};
use crate::backend::Backend;
use crate::error::PlannerError;
use crate::profile::{QueryProfile, QueryRequests};
use crate::query_record::now_ms;
use crate::stages::TaskLayout;

/// The version of the checkpoint's layout.
const FORMAT: u32 = 1;

/// zstd level of checkpoints: fast, and JSON of byte ranges shrinks well.
const ZSTD_LEVEL: i32 = 3;

/// Where a run resumes its query from: what the run that handed over tells
/// its successor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resume {
    /// Key of the checkpoint in the exchange store.
    pub checkpoint: String,
    /// The generation of the run that resumes (1 for the first successor).
    pub generation: u32,
    /// Wall time of the query when it was handed over, in milliseconds.
    pub elapsed_ms: u64,
}

/// What one coordinator run knows of hand-offs.
#[derive(Debug, Clone, Default)]
pub struct Handoff {
    /// When this run hands the query over (`None`: never).
    pub deadline: Option<Instant>,
    /// The checkpoint this run resumes from (`None`: the query's first run).
    pub resume: Option<Resume>,
    /// Hand-offs allowed in all (`squall.coordinator.max_handoffs`).
    pub max_handoffs: u32,
    /// How long past its deadline a run waits for a first batch of reports
    /// before it hands over anyway (a tenth of the run, 1 s to 30 s).
    pub grace: Duration,
}

impl Handoff {
    /// This run's generation: 0 for the first run of a query.
    pub fn generation(&self) -> u32 {
        self.resume.as_ref().map(|r| r.generation).unwrap_or(0)
    }

    /// A run that started at `started` under `config` (no deadline when
    /// `squall.coordinator.max_run_secs` is 0), resuming from `resume`.
    pub fn new(
        config: &squall_core::config::SquallConfig,
        started: Instant,
        resume: Option<Resume>,
    ) -> Self {
        let secs = config.coordinator.max_run_secs;
        let run = (secs.is_finite() && secs > 0.0)
            .then(|| Duration::try_from_secs_f64(secs).ok())
            .flatten();
        Self {
            deadline: run.and_then(|d| started.checked_add(d)),
            resume,
            max_handoffs: config.coordinator.max_handoffs,
            grace: run
                .map(|d| (d / 10).clamp(Duration::from_secs(1), Duration::from_secs(30)))
                .unwrap_or_default(),
        }
    }

    /// Time to hand over: the deadline has passed and this run has taken
    /// reports (`moved`), or its grace has passed too (a run must hand over
    /// before its function's timeout, reports or not).
    pub(super) fn due(&self, moved: bool) -> bool {
        let now = Instant::now();
        self.deadline.is_some_and(|d| {
            now >= d && (moved || d.checked_add(self.grace).is_none_or(|g| now >= g))
        })
    }
}

/// A run that handed its query over: the query goes on in whichever run
/// resumes from [`HandedOver::resume`]; nothing of it was stopped or deleted.
pub struct HandedOver {
    pub resume: Resume,
    job: Box<QueryJob>,
    backend: Backend,
    address: String,
}

impl HandedOver {
    pub(super) fn new(resume: Resume, job: QueryJob, backend: Backend, address: String) -> Self {
        Self {
            resume,
            job: Box::new(job),
            backend,
            address,
        }
    }

    pub fn query_id(&self) -> &str {
        &self.job.query_id
    }

    /// Ends the query here, when no run can resume it (its successor could
    /// not be started): stops its tasks and deletes its exchange objects
    /// (the checkpoint too) and its queue.
    pub async fn abandon(self) {
        let (job, backend) = (&self.job, &self.backend);
        let (keep, which) = (Default::default(), super::Shards::Used);
        super::stop_and_cleanup(job, backend, &self.address, &keep, true, which).await;
    }
}

/// The state of a query's event loop at a hand-off.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Checkpoint {
    format: u32,
    query_id: String,
    /// The generation that resumes from it.
    generation: u32,
    /// When it was captured (Unix ms): ages below count from here.
    captured_ms: u64,
    /// Wall time of the query when it was captured.
    elapsed_ms: u64,
    /// Per stage: what the stage is (plan, layout, scan tasks), hashed.
    fingerprints: Vec<u64>,
    stages: Vec<StageState>,
    /// The profile so far (its requests: planning and coordinator of the
    /// earlier runs; the tasks' are in `requests`).
    pub(super) profile: QueryProfile,
    /// Per stage: the requests of every attempt that reported.
    requests: Vec<RequestCounts>,
}

impl Checkpoint {
    /// Adds the requests and recoveries of the run that hands over (and the
    /// checkpoint's own PUT) to the profile it carries.
    pub(super) fn add_run(&mut self, run: QueryRequests, throttles: u64, store: &StoreStats) {
        let requests = &mut self.profile.requests;
        requests.planning += run.planning;
        requests.coordinator += run.coordinator;
        requests.coordinator.put += 1;
        self.profile.invoke_throttles += throttles;
        self.profile.store_retries += store.retries();
        self.profile.store_hedges += store.hedges();
    }

    /// The query's wall time so far: until the hand-off, and since.
    pub(super) fn elapsed(&self) -> Duration {
        let gap = now_ms().saturating_sub(self.captured_ms);
        Duration::from_millis(self.elapsed_ms.saturating_add(gap))
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct StageState {
    launched: bool,
    started_ago_ms: Option<u64>,
    progressed_ago_ms: Option<u64>,
    finished_ago_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filter: Option<FilterBinding>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    groups: Vec<(usize, usize)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    combined: Option<ObjectRange>,
    combine_considered: bool,
    /// A combine stage formed its grid (at its launch).
    grid: bool,
    tasks: Vec<TaskState>,
}

#[derive(Debug, Serialize, Deserialize)]
struct TaskState {
    attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accepted: Option<(u32, MapOutput, TaskMetrics)>,
    #[serde(default)]
    failures: u32,
    launched_ago_ms: Option<u64>,
    /// Its latest attempts queued and never sent: the next run sends them.
    #[serde(default)]
    sending: u32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    reported: Vec<u32>,
}

fn ago(at: Option<Instant>, now: Instant) -> Option<u64> {
    at.map(|t| now.saturating_duration_since(t).as_millis() as u64)
}

fn at(ago_ms: Option<u64>, now: Instant) -> Option<Instant> {
    ago_ms.map(|a| now.checked_sub(Duration::from_millis(a)).unwrap_or(now))
}

/// The key of the checkpoint generation `generation` resumes from:
/// `{prefix}/{shard}/{query}/checkpoint/g{generation}`, in the shard of the
/// final stage's task 0 (one the query's cleanup always lists).
pub(super) fn checkpoint_key(job: &QueryJob, backend: &Backend, generation: u32) -> String {
    let stage = job.staged.final_stage().map(|s| s.id).unwrap_or(0);
    let shard = shard(&job.query_id, stage, 0, job.config.shuffle.prefixes);
    format!(
        "{}/checkpoint/g{generation}",
        query_prefix(&backend.exchange_prefix, shard, &job.query_id)
    )
}

/// Stops the run's launches and receives for a hand-off: attempts queued
/// and not yet sent are left to the next run (each task's `sending`), the
/// invocations being sent are waited for and recorded, and the completion
/// messages received and not yet taken go back to the query's queue for
/// the next run; returns how many went back.
pub(super) async fn quiesce(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    runs: &mut [StageRun],
    profile: &mut QueryProfile,
    mut launcher: Launcher,
    completions: Completions,
) -> Result<u64> {
    launcher.drop_queued();
    while launcher.in_flight() > 0 {
        for sent in launcher.next_sent().await {
            super::record_sent(job, runs, profile, sent)?;
        }
    }
    let bodies = completions.finish().await?;
    let resent = bodies.len() as u64;
    for body in bodies {
        backend.queue.send(address, body).await?;
    }
    Ok(resent)
}

/// The loop's state now, for the next generation (`resent`: completion
/// messages [`quiesce`] sent back to the queue). Fails once the query has
/// made `squall.coordinator.max_handoffs` hand-offs.
pub(super) fn capture(
    job: &QueryJob,
    runs: &[StageRun],
    profile: &QueryProfile,
    requests: &[RequestCounts],
    started: Instant,
    resent: u64,
) -> Result<Checkpoint> {
    let generation = job.handoff.generation() + 1;
    if generation > job.handoff.max_handoffs {
        return Err(PlannerError::TooManyHandoffs {
            query_id: job.query_id.clone(),
            handoffs: job.handoff.max_handoffs,
        }
        .into());
    }
    let now = Instant::now();
    let stages = runs
        .iter()
        .map(|run| StageState {
            launched: run.launched,
            started_ago_ms: ago(run.started, now),
            progressed_ago_ms: ago(run.progressed, now),
            finished_ago_ms: ago(run.finished, now),
            filter: run.filter.clone(),
            groups: run.groups.iter().map(|g| (g.start, g.end)).collect(),
            combined: run.combined.clone(),
            combine_considered: run.combine_considered,
            grid: run.grid.is_some(),
            tasks: run
                .tasks
                .iter()
                .map(|t| TaskState {
                    attempts: t.attempts,
                    accepted: t.accepted.clone(),
                    failures: t.failures,
                    launched_ago_ms: ago(t.launched, now),
                    sending: t.sending,
                    reported: t.reported.clone(),
                })
                .collect(),
        })
        .collect();
    let mut profile = profile.clone();
    profile.handoffs += 1;
    profile.requests.coordinator.sqs_send += resent;
    Ok(Checkpoint {
        format: FORMAT,
        query_id: job.query_id.clone(),
        generation,
        captured_ms: now_ms(),
        elapsed_ms: started.elapsed().as_millis() as u64,
        fingerprints: fingerprints(job)?,
        stages,
        profile,
        requests: requests.to_vec(),
    })
}

/// Writes `checkpoint` (one PUT) and returns where its successor resumes.
pub(super) async fn write(
    checkpoint: Checkpoint,
    job: &QueryJob,
    backend: &Backend,
) -> Result<Resume> {
    let key = checkpoint_key(job, backend, checkpoint.generation);
    let resume = Resume {
        checkpoint: key.clone(),
        generation: checkpoint.generation,
        elapsed_ms: checkpoint.elapsed_ms,
    };
    let query_id = job.query_id.clone();
    // Encoding tens of MB is CPU work: off the I/O threads.
    let bytes = tokio::task::spawn_blocking(move || encode(&checkpoint))
        .await
        .map_err(|e| PlannerError::Internal(format!("query {query_id}: checkpoint: {e}")))??;
    let len = bytes.len();
    backend
        .exchange_store
        .put(&Path::from(key.as_str()), PutPayload::from(bytes))
        .await
        .map_err(|source| PlannerError::Object {
            what: "writing the checkpoint",
            location: key.clone(),
            source,
        })?;
    tracing::info!(
        query_id = %job.query_id,
        generation = resume.generation,
        bytes = len,
        key = %key,
        "query handed over: checkpoint written"
    );
    Ok(resume)
}

fn encode(checkpoint: &Checkpoint) -> Result<Bytes> {
    let corrupt = |e: &dyn std::fmt::Display| PlannerError::Corrupt {
        what: "encoding a checkpoint",
        message: format!("query {}: {e}", checkpoint.query_id),
    };
    let mut encoder =
        zstd::stream::Encoder::new(Vec::new(), ZSTD_LEVEL).map_err(|e| corrupt(&e))?;
    serde_json::to_writer(&mut encoder, checkpoint).map_err(|e| corrupt(&e))?;
    let bytes = encoder.finish().map_err(|e| corrupt(&e))?;
    Ok(Bytes::from(bytes))
}

fn decode(bytes: &[u8], query_id: &str) -> Result<Checkpoint> {
    let corrupt = |e: &dyn std::fmt::Display| PlannerError::Corrupt {
        what: "decoding a checkpoint",
        message: format!("query {query_id}: {e}"),
    };
    let decoder = zstd::stream::Decoder::new(bytes).map_err(|e| corrupt(&e))?;
    let checkpoint: Checkpoint = serde_json::from_reader(decoder).map_err(|e| corrupt(&e))?;
    Ok(checkpoint)
}

/// The checkpoint this run resumes from (one GET), checked against the
/// query it planned; `None` for a query's first run.
pub(super) async fn load(job: &QueryJob, backend: &Backend) -> Result<Option<Checkpoint>> {
    let Some(resume) = &job.handoff.resume else {
        return Ok(None);
    };
    let refused = |reason: String| PlannerError::Resume {
        query_id: job.query_id.clone(),
        reason,
    };
    let path = Path::from(resume.checkpoint.as_str());
    let bytes = async { backend.exchange_store.get(&path).await?.bytes().await }
        .await
        .map_err(|source| PlannerError::Object {
            what: "reading the checkpoint",
            location: resume.checkpoint.clone(),
            source,
        })?;
    let len = bytes.len() as u64;
    let query_id = job.query_id.clone();
    let mut checkpoint = tokio::task::spawn_blocking(move || decode(&bytes, &query_id))
        .await
        .map_err(|e| refused(format!("decoding: {e}")))??;
    checkpoint.profile.checkpoint_bytes += len;
    if checkpoint.format != FORMAT {
        return Err(refused(format!(
            "layout {} (this build reads {FORMAT})",
            checkpoint.format
        ))
        .into());
    }
    if checkpoint.query_id != job.query_id || checkpoint.generation != resume.generation {
        return Err(refused(format!(
            "it is generation {} of query {}, not generation {}",
            checkpoint.generation, checkpoint.query_id, resume.generation
        ))
        .into());
    }
    let now = fingerprints(job)?;
    if now.len() != checkpoint.fingerprints.len() || now.len() != checkpoint.stages.len() {
        return Err(refused(format!(
            "the query now plans {} stages, not {}: the data or the settings changed since the hand-off",
            now.len(),
            checkpoint.fingerprints.len()
        ))
        .into());
    }
    if let Some(i) = (0..now.len()).find(|&i| now[i] != checkpoint.fingerprints[i]) {
        return Err(refused(format!(
            "stage s{} is planned differently (its plan or scan tasks): the data or the settings changed since the hand-off",
            job.staged.stages[i].id
        ))
        .into());
    }
    Ok(Some(checkpoint))
}

/// Restores the loop's state from `checkpoint` into `runs` (as the run
/// that resumes has just built them) and the median run times, and starts
/// the key filters that were being built; returns the profile so far and
/// each stage's request counts.
pub(super) fn restore(
    checkpoint: Checkpoint,
    job: &QueryJob,
    backend: &Backend,
    runs: &mut [StageRun],
    query_times: &mut super::RunningMedian,
    filters: &mut FilterBuilds,
    launcher: &mut Launcher,
) -> Result<(QueryProfile, Vec<RequestCounts>)> {
    use std::sync::atomic::Ordering::Relaxed;
    let now = Instant::now();
    let sizing = Sizing::from_config(&job.config);
    let profile = checkpoint.profile;
    let mut requests = vec![RequestCounts::default(); runs.len()];
    for (r, c) in requests.iter_mut().zip(checkpoint.requests) {
        *r = c;
    }
    for (i, state) in checkpoint.stages.into_iter().enumerate() {
        let run = &mut runs[i];
        run.launched = state.launched;
        run.started = at(state.started_ago_ms, now);
        run.progressed = at(state.progressed_ago_ms, now);
        run.finished = at(state.finished_ago_ms, now);
        run.filter = state.filter;
        run.filter_building = false;
        run.groups = state.groups.into_iter().map(|(s, e)| s..e).collect();
        run.combined = state.combined;
        run.combine_considered = state.combine_considered;
        run.tasks = state
            .tasks
            .into_iter()
            .map(|t| TaskRun {
                attempts: t.attempts,
                accepted: t.accepted,
                failures: t.failures,
                launched: at(t.launched_ago_ms, now),
                sending: t.sending,
                reported: t.reported,
            })
            .collect();
        run.accepted = run.tasks.iter().filter(|t| t.accepted.is_some()).count();
        for t in &run.tasks {
            if let Some((_, _, m)) = &t.accepted {
                run.run_times.push(m.wall_ms);
                query_times.push(m.wall_ms);
            }
        }
        if state.grid {
            let stage = &job.staged.stages[i];
            let TaskLayout::Combine {
                source, partitions, ..
            } = &stage.layout
            else {
                return Err(PlannerError::Resume {
                    query_id: job.query_id.clone(),
                    reason: format!("stage s{} has a grid but is no combine stage", stage.id),
                }
                .into());
            };
            let j = job
                .staged
                .index(*source)
                .filter(|&j| j < i)
                .ok_or_else(|| PlannerError::Resume {
                    query_id: job.query_id.clone(),
                    reason: format!("combine stage s{} reads unknown stage s{source}", stage.id),
                })?;
            let grid = Grid::form(j, &accepted(runs, j), *partitions, sizing);
            if !grid.forwards && grid.tasks() != runs[i].tasks.len() {
                return Err(PlannerError::Resume {
                    query_id: job.query_id.clone(),
                    reason: format!(
                        "combine stage s{} forms {} tasks again, not {}",
                        stage.id,
                        grid.tasks(),
                        runs[i].tasks.len()
                    ),
                }
                .into());
            }
            runs[i].grid = Some(grid);
        }
    }
    // Attempts queued and never sent go out now; the filters being built at
    // the hand-off are built again.
    for (si, run) in runs.iter().enumerate() {
        for (t, task) in run.tasks.iter().enumerate() {
            if task.accepted.is_none() {
                for attempt in task.attempts.saturating_sub(task.sending)..task.attempts {
                    launcher.enqueue((si, t, attempt));
                }
            }
        }
    }
    for (i, (run, stage)) in runs.iter_mut().zip(&job.staged.stages).enumerate() {
        if run.finished.is_some() && stage.publishes_filter() && run.filter.is_none() {
            run.filter_building = true;
            filters.start(i, FilterBuild::new(job, backend, run, stage.id));
        }
    }
    let p = &job.progress;
    p.total_stages.store(runs.len(), Relaxed);
    p.total_tasks
        .store(runs.iter().map(|r| r.tasks.len()).sum(), Relaxed);
    p.launched_tasks.store(profile.tasks_launched, Relaxed);
    p.completed_tasks
        .store(runs.iter().map(|r| r.accepted).sum(), Relaxed);
    p.completed_stages.store(
        runs.iter().filter(|r| r.finished.is_some()).count(),
        Relaxed,
    );
    tracing::info!(
        query_id = %job.query_id,
        generation = job.handoff.generation(),
        accepted = runs.iter().map(|r| r.accepted).sum::<usize>(),
        "query resumed from its checkpoint"
    );
    Ok((profile, requests))
}
