//! Launching tasks: a stage starts once every input stage has an accepted
//! attempt per task and every key filter it applies is built; each task's
//! payload carries its stage plan, scan assignment, resolved inputs and
//! filters. A stage reading hash partitions gets its task count here, from
//! the measured sizes of its inputs ([`super::coalesce`]), a combine stage
//! its grid ([`super::grid`]); a combine stage whose grid would not pay
//! forwards its input at once, and its reader may start. A ready stage's
//! tasks are queued on the [`Launcher`], which sends them off the event loop
//! (`squall.task.launch_concurrency` at once).

use crate::error::PlannerError;
use std::time::Instant;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use squall_core::exchange::map_object_key;
use squall_core::scan::leaves;
use squall_core::task::{ObjectLocation, PROTOCOL_VERSION, ScanAssignment, TaskSpec};

use super::coalesce::Sizing;
use super::grid::Grid;
use super::inputs::{accepted, bind_inputs, stage_groups};
use super::launcher::Launcher;
use super::{QueryJob, StageRun, TaskRun};
use crate::backend::Backend;
use crate::stages::{StagedPlan, TaskLayout};
use std::sync::atomic::Ordering;

pub(super) fn task_count(job: &QueryJob, index: usize) -> usize {
    match &job.staged.stages[index].layout {
        TaskLayout::Hash { partitions } => (*partitions).max(1),
        TaskLayout::Scan => job
            .scan_tasks
            .get(index)
            .map(|t| t.len())
            .unwrap_or(1)
            .max(1),
        TaskLayout::Single { .. } => 1,
        // Formed when it launches; at most one per (map object, partition).
        TaskLayout::Combine { partitions, .. } => (*partitions).max(1),
    }
}

/// Launch every stage whose inputs are all complete and that has not been
/// launched: its tasks are formed and queued on `launcher`, which sends them
/// as it has room ([`Launcher::top_up`]).
pub(super) fn launch_ready(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    runs: &mut [StageRun],
    launcher: &mut Launcher,
) -> Result<()> {
    let position = |id: u32| job.staged.index(id);
    let sizing = Sizing::from_config(&job.config);
    // A combine stage that forwards finishes at launch: go round again for
    // the stages that were waiting for it.
    loop {
        let ready: Vec<usize> = (0..runs.len())
            .filter(|&i| {
                let stage = &job.staged.stages[i];
                !runs[i].launched
                    && stage.inputs.iter().all(|input| {
                        position(*input).is_some_and(|j| runs[j].accepted == runs[j].tasks.len())
                    })
                    && stage
                        .filter_inputs
                        .iter()
                        .all(|source| position(*source).is_some_and(|j| runs[j].filter.is_some()))
            })
            .collect();
        if ready.is_empty() {
            return Ok(());
        }
        // Stages heading the longest remaining path go first: they hold up
        // the most work behind them.
        let mut ready = ready;
        let ranks = launch_ranks(&job.staged, &job.scan_bytes);
        ready.sort_by_key(|&i| std::cmp::Reverse(ranks[i]));
        for i in ready {
            form_tasks(job, runs, i, sizing)?;
            runs[i].launched = true;
            runs[i].started = Some(Instant::now());
            runs[i].progressed = runs[i].started;
            if runs[i].grid.as_ref().is_some_and(|g| g.forwards) {
                runs[i].finished = runs[i].started;
                job.progress.done(&job.progress.completed_stages);
                continue;
            }
            let tasks = runs[i].tasks.len();
            for task in &mut runs[i].tasks {
                task.attempts = 1;
                task.sending = 1;
            }
            launcher.enqueue_stage(i, tasks);
        }
        launcher.top_up(job, backend, address, runs)?;
    }
}

/// Each stage's rank in the launch order: the bytes its scans read plus
/// one, plus the largest rank among the stages that wait for it (reading
/// its output or applying its key filter): the work on the longest path
/// from it to the query's end. Slots are few (a process's cores, a
/// deployment's concurrency), so among stages ready at once the small
/// broadcast build that a big scan waits for runs before a big scan that
/// nothing waits for yet.
pub(super) fn launch_ranks(staged: &StagedPlan, scan_bytes: &[u64]) -> Vec<u64> {
    let stages = &staged.stages;
    let mut ranks = vec![0u64; stages.len()];
    // Stages are listed upstream first: consumers come later.
    for i in (0..stages.len()).rev() {
        let id = stages[i].id;
        let after = stages[i + 1..]
            .iter()
            .enumerate()
            .filter(|(_, s)| s.inputs.contains(&id) || s.filter_inputs.contains(&id))
            .map(|(k, _)| ranks[i + 1 + k])
            .max()
            .unwrap_or(0);
        let own = scan_bytes.get(i).copied().unwrap_or(0);
        ranks[i] = own.saturating_add(1).saturating_add(after);
    }
    ranks
}

/// Form stage `i`'s tasks from the measured outputs of what it reads: a
/// stage reading hash partitions gets its tasks (or read partitions) from
/// their sizes, a combine stage its grid (no task when it forwards).
fn form_tasks(job: &QueryJob, runs: &mut [StageRun], i: usize, sizing: Sizing) -> Result<()> {
    let tasks = match &job.staged.stages[i].layout {
        TaskLayout::Combine {
            source, partitions, ..
        } => {
            let j = job.staged.index(*source).ok_or_else(|| {
                DataFusionError::from(PlannerError::Internal(format!(
                    "combine stage s{} reads unknown stage s{source}",
                    job.staged.stages[i].id
                )))
            })?;
            let grid = Grid::form(j, &accepted(runs, j), *partitions, sizing);
            let tasks = grid.tasks();
            tracing::info!(
                stage = job.staged.stages[i].id,
                source,
                map_objects = grid.map_objects,
                map_groups = grid.choice.shape.map_groups,
                partition_ranges = grid.choice.shape.partition_ranges,
                tasks,
                forwards = grid.forwards,
                "combine stage grid formed"
            );
            runs[i].grid = Some(grid);
            Some(tasks)
        }
        TaskLayout::Hash { .. } => {
            let groups = stage_groups(job, runs, i, sizing)?;
            let tasks = (!groups.is_empty()).then_some(groups.len());
            runs[i].groups = groups;
            tasks
        }
        _ => {
            runs[i].groups = stage_groups(job, runs, i, sizing)?;
            None
        }
    };
    if let Some(n) = tasks {
        let total = &job.progress.total_tasks;
        total.fetch_sub(runs[i].tasks.len(), Ordering::Relaxed);
        total.fetch_add(n, Ordering::Relaxed);
        runs[i].tasks = (0..n).map(|_| TaskRun::default()).collect();
    }
    Ok(())
}

/// The payload of attempt `attempt` of task `t` of stage `si`: its stage
/// plan, scan assignment, resolved inputs and filters.
pub(super) fn encode_task(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    runs: &[StageRun],
    si: usize,
    t: usize,
    attempt: u32,
) -> Result<Bytes> {
    let stage = &job.staged.stages[si];
    let scans = job
        .scan_tasks
        .get(si)
        .and_then(|tasks| tasks.get(t))
        .cloned()
        .unwrap_or_else(|| {
            // A single-task or hash stage with scans reads all of them in one place.
            let n = leaves(&stage.plan)
                .iter()
                .filter(|l| l.is_file_scan())
                .count();
            vec![ScanAssignment::default(); n]
        });
    let inputs = bind_inputs(job, backend, runs, si, t)?;
    let mut filters = Vec::with_capacity(stage.filter_inputs.len());
    for source in &stage.filter_inputs {
        let binding = job
            .staged
            .index(*source)
            .and_then(|j| runs[j].filter.clone())
            .ok_or_else(|| {
                DataFusionError::from(PlannerError::Internal(format!(
                    "stage s{} launched before the key filter of s{source}",
                    stage.id
                )))
            })?;
        filters.push(binding);
    }
    let spec = TaskSpec {
        protocol: PROTOCOL_VERSION,
        query_id: job.query_id.clone(),
        stage: stage.id,
        task: t as u32,
        attempt,
        plan: runs[si].stage_plan.clone(),
        scans,
        inputs,
        output: ObjectLocation {
            store_url: backend.exchange_url.clone(),
            key: map_object_key(
                &backend.exchange_prefix,
                job.config.shuffle.prefixes,
                &job.query_id,
                stage.id,
                t as u32,
                attempt,
            ),
        },
        reply_to: address.to_string(),
        settings: job.settings.clone(),
        filters,
        stop_marker: backend.invoker.stop_marker(&job.query_id),
    };
    let mut payload = spec.encode()?;
    let coords = [u64::from(stage.id), t as u64, u64::from(attempt)];
    if squall_core::fault::happens(
        job.faults.corrupt_payload_rate,
        job.faults.seed,
        "corrupt_payload",
        &coords,
    ) {
        payload = squall_core::fault::corrupt_task_payload(&payload);
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::Stage;
    use arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;
    use std::sync::Arc;

    fn stage(id: u32, inputs: &[u32], filter_inputs: &[u32]) -> Stage {
        Stage {
            id,
            plan: Arc::new(EmptyExec::new(Arc::new(Schema::empty()))),
            inputs: inputs.to_vec(),
            layout: TaskLayout::Scan,
            est_rows: None,
            filter_inputs: filter_inputs.to_vec(),
            clustered_on: None,
        }
    }

    /// TPC-H Q9's shape: two big scans shuffled to late joins (s1, s2), two
    /// small broadcast builds (s3, s4) that the biggest scan (s5) waits
    /// for, and a key filter's source (s6) that s7 waits for. The builds
    /// rank above the big scans nothing waits for yet, the filter source
    /// above its own size.
    #[test]
    fn small_builds_a_big_scan_waits_for_rank_first() {
        let staged = StagedPlan {
            stages: vec![
                stage(1, &[], &[]),
                stage(2, &[], &[]),
                stage(3, &[], &[]),
                stage(4, &[], &[]),
                stage(5, &[3, 4], &[]),
                stage(6, &[], &[]),
                stage(7, &[], &[6]),
                stage(8, &[2, 5], &[]),
                stage(9, &[1, 7, 8], &[]),
            ],
        };
        let bytes = [40, 30, 1, 2, 100, 5, 20, 0, 0];
        let ranks = launch_ranks(&staged, &bytes);
        // s9: 0 + 1; s8: 1 + s9; s5: 101 + s8; s3: 2 + s5; s6: 6 + s7 (22).
        assert_eq!(ranks, vec![42, 33, 105, 106, 103, 28, 22, 2, 1]);
        let mut ready: Vec<usize> = vec![0, 1, 2, 3, 5];
        ready.sort_by_key(|&i| std::cmp::Reverse(ranks[i]));
        assert_eq!(ready, vec![3, 2, 0, 1, 5]);
    }
}
