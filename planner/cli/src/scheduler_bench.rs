//! `squall bench scheduler`: how fast the coordinator schedules tasks.
//!
//! It drives the real coordinator loop (`squall_planner::coordinator::run_query`:
//! launches, the completion queue, acceptance, stage barriers, deadlines,
//! the profile, cleanup) over in-process seams whose tasks do no work: the
//! invoker decodes each task payload and answers at once with a success
//! report on the query's queue (the embedded backend's queue). What is
//! measured is therefore the coordinator's own cost per task: building and
//! encoding a payload, invoking, receiving and decoding the report,
//! accepting it, and the bookkeeping around stage barriers. No exchange
//! object is written (each report names an empty output).
//!
//! The query is a chain of `stages` stages of `tasks / stages` tasks each
//! (the last takes the remainder); each starts when the one before it has
//! finished, as a query's map and reduce stages do. Invocations go out
//! `squall.task.launch_concurrency` at a time, as on every backend.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::datatypes::Schema;
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::error::Result;
use datafusion::physical_plan::empty::EmptyExec;
use object_store::memory::InMemory;
use squall_core::config::SquallConfig;
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::task::{
    MapOutput, PROTOCOL_VERSION, ScanAssignment, TaskMetrics, TaskOutcome, TaskReport, TaskSpec,
};
use squall_planner::CancellationToken;
use squall_planner::backend::Backend;
use squall_planner::backend::local::LocalQueue;
use squall_planner::coordinator::{FilterShipping, QueryJob, QueryProgress, run_query};
use squall_planner::engine::session_config;
use squall_planner::partitions::PartitionCount;
use squall_planner::stages::{Stage, StagedPlan, TaskLayout};

/// What one run measured.
#[derive(Debug, Clone)]
pub struct SchedulerRun {
    pub tasks: usize,
    pub stages: usize,
    pub elapsed: Duration,
    pub messages: usize,
}

impl SchedulerRun {
    pub fn tasks_per_second(&self) -> f64 {
        self.tasks as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The line the command prints last.
    pub fn line(&self) -> String {
        format!(
            "scheduled {} tasks in {:.3} s: {:.0} tasks/s",
            self.tasks,
            self.elapsed.as_secs_f64(),
            self.tasks_per_second()
        )
    }
}

/// Answers every invocation at once with a success report.
struct InstantInvoker {
    queue: Arc<LocalQueue>,
}

#[async_trait]
impl Invoker for InstantInvoker {
    async fn invoke(&self, payload: Bytes) -> squall_core::error::Result<()> {
        let spec = TaskSpec::decode(&payload)?;
        let report = TaskReport {
            protocol: PROTOCOL_VERSION,
            query_id: spec.query_id.clone(),
            stage: spec.stage,
            task: spec.task,
            attempt: spec.attempt,
            outcome: TaskOutcome::Succeeded {
                output: MapOutput {
                    key: spec.output.key.clone(),
                    partitions: Vec::new(),
                    keys: None,
                },
            },
            metrics: TaskMetrics::default(),
        };
        self.queue.send(&spec.reply_to, report.encode()?).await
    }
}

/// Schedules `tasks` no-op tasks in a chain of `stages` stages through the
/// real coordinator, with `settings` (`squall.*`) applied.
pub async fn run(
    tasks: usize,
    stages: usize,
    settings: &[(String, String)],
) -> Result<SchedulerRun> {
    let stages = stages.clamp(1, tasks.max(1));
    let config = SquallConfig::from_session(&session_config(settings)?);
    let queue = Arc::new(LocalQueue::new());
    let backend = Backend {
        exchange_store: Arc::new(InMemory::new()),
        exchange_url: "memory://".to_string(),
        exchange_prefix: "exchange".to_string(),
        queue: Arc::clone(&queue) as _,
        invoker: Arc::new(InstantInvoker { queue }),
    };
    let empty = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
    let per_stage = tasks / stages;
    let mut staged = Vec::with_capacity(stages);
    let mut scan_tasks = Vec::with_capacity(stages);
    for s in 0..stages {
        let n = if s + 1 == stages {
            tasks - per_stage * (stages - 1)
        } else {
            per_stage
        };
        staged.push(Stage {
            id: s as u32 + 1,
            plan: empty.clone(),
            inputs: if s == 0 { vec![] } else { vec![s as u32] },
            layout: TaskLayout::Scan,
            est_rows: None,
            filter_inputs: vec![],
            clustered_on: None,
        });
        // Tasks with no scan work: the stage plan has no Parquet scan.
        scan_tasks.push(vec![Vec::<ScanAssignment>::new(); n.max(1)]);
    }
    let job = QueryJob {
        query_id: format!("bench{}", uuid::Uuid::new_v4().simple()),
        staged: StagedPlan { stages: staged },
        // A stage plan of a realistic size (a few KB), carried by every payload.
        stage_plans: vec![Bytes::from(vec![7u8; 4096]); stages],
        scan_tasks,
        settings: settings.to_vec(),
        max_attempts: config.task.max_attempts.max(1) as u32,
        silence_timeout: Duration::from_secs(config.task.silence_timeout_secs.max(1)),
        row_groups_pruned: vec![0; stages],
        partitions: vec![PartitionCount::default(); stages],
        scan_bytes: vec![0; stages],
        cancel: CancellationToken::new(),
        progress: Arc::new(QueryProgress::default()),
        filters: FilterShipping::from_options(&config.bloom),
        faults: config.fault.clone(),
        config,
        planning_requests: Default::default(),
        handoff: Default::default(),
    };
    let started = Instant::now();
    let out = run_query(job, &backend).await?;
    Ok(SchedulerRun {
        tasks: out.profile.tasks,
        stages,
        elapsed: started.elapsed(),
        messages: out.profile.messages,
    })
}

#[cfg(test)]
#[path = "scheduler_bench_tests.rs"]
mod tests;
