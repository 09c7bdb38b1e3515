//! Resolving a stage's shuffle reads: once its input stages are complete,
//! each task gets an [`InputBinding`] per read naming exactly the accepted
//! map objects and the byte ranges it reads from each: for a hash read, one
//! range per map object covering the task's contiguous partitions
//! ([`super::coalesce`]); for a combine stage's task, only the map objects
//! of its cell's group, and its column's partitions ([`super::grid`]). A
//! combine stage that forwards stands for the outputs of the stage it reads.

use crate::error::PlannerError;
use datafusion::error::{DataFusionError, Result};
use squall_core::exec::{ReadMode, ShuffleReadExec};
use squall_core::scan::{Leaf, leaves};
use squall_core::task::{InputBinding, MapOutput, ObjectRange};
use std::ops::Range;

use super::coalesce::{Sizing, add_sizes, coalesce, span};
use super::{QueryJob, StageRun};
use crate::backend::Backend;
use crate::stages::TaskLayout;

pub(super) fn bind_inputs(
    job: &QueryJob,
    backend: &Backend,
    runs: &[StageRun],
    si: usize,
    t: usize,
) -> Result<Vec<InputBinding>> {
    let stage = &job.staged.stages[si];
    let mut bindings = Vec::new();
    for leaf in leaves(&stage.plan) {
        let Leaf::ShuffleRead(read) = leaf else {
            continue;
        };
        let upstream = upstream(job, si, read)?;
        let mut layout = Vec::new();
        let partitions = match (read.mode(), &runs[upstream].combined, &runs[si].grid) {
            (ReadMode::Broadcast, Some(range), _) => vec![vec![range.clone()]],
            (ReadMode::Hash, _, Some(grid)) => {
                let outputs = accepted(runs, upstream);
                layout = grid.cell_layout(&outputs, t);
                vec![grid.cell_ranges(&outputs, t)]
            }
            _ => read_partitions(
                read,
                &stage.layout,
                &runs[si].groups,
                &accepted(runs, upstream),
                t,
            ),
        };
        bindings.push(InputBinding {
            stage: read.stage(),
            store_url: backend.exchange_url.clone(),
            partitions,
            layout,
        });
    }
    Ok(bindings)
}

/// The partition ranges of stage `si`'s tasks (hash stage) or read
/// partitions (single task), from the measured outputs of the stages its
/// hash reads read; empty when it has none, or reads partition counts that
/// differ (then each partition is read on its own).
pub(super) fn stage_groups(
    job: &QueryJob,
    runs: &[StageRun],
    si: usize,
    sizing: Sizing,
) -> Result<Vec<Range<usize>>> {
    let mut sizes = Vec::new();
    let mut count = None;
    for leaf in leaves(&job.staged.stages[si].plan) {
        let Leaf::ShuffleRead(read) = leaf else {
            continue;
        };
        if read.mode() != ReadMode::Hash {
            continue;
        }
        let n = read.planned_partitioning().partition_count();
        if count.is_some_and(|c| c != n) {
            return Ok(Vec::new());
        }
        count = Some(n);
        add_sizes(&mut sizes, &accepted(runs, upstream(job, si, read)?), n);
    }
    Ok(match count {
        Some(n) => coalesce(&sizes[..n.min(sizes.len())], sizing),
        None => Vec::new(),
    })
}

/// The index of the stage `read` (a leaf of stage `si`) reads.
fn upstream(job: &QueryJob, si: usize, read: &ShuffleReadExec) -> Result<usize> {
    job.staged.index(read.stage()).ok_or_else(|| {
        DataFusionError::from(PlannerError::Internal(format!(
            "stage {} reads unknown stage {}",
            job.staged.stages[si].id,
            read.stage()
        )))
    })
}

/// The accepted outputs of stage `i`'s tasks, in task order; for a combine
/// stage that forwards, those of the stage it reads.
pub(super) fn accepted(runs: &[StageRun], i: usize) -> Vec<&MapOutput> {
    let mut i = i;
    while let Some(grid) = runs[i].grid.as_ref().filter(|g| g.forwards) {
        i = grid.source;
    }
    runs[i]
        .tasks
        .iter()
        .filter_map(|t| t.accepted.as_ref().map(|(_, o, _)| o))
        .collect()
}

fn read_partitions(
    read: &ShuffleReadExec,
    layout: &TaskLayout,
    groups: &[Range<usize>],
    outputs: &[&MapOutput],
    task: usize,
) -> Vec<Vec<ObjectRange>> {
    let read_group = |g: &Range<usize>| -> Vec<ObjectRange> {
        outputs.iter().filter_map(|o| span(o, g)).collect()
    };
    match read.mode() {
        ReadMode::Hash => match layout {
            TaskLayout::Hash { .. } => {
                let group = groups.get(task).cloned().unwrap_or(task..task + 1);
                vec![read_group(&group)]
            }
            _ if !groups.is_empty() => groups.iter().map(read_group).collect(),
            _ => {
                let n = read.planned_partitioning().partition_count();
                (0..n).map(|p| read_group(&(p..p + 1))).collect()
            }
        },
        ReadMode::Gather => {
            let parts: Vec<Vec<ObjectRange>> = outputs
                .iter()
                .flat_map(|o| (0..o.partitions.len()).filter_map(move |p| span(o, &(p..p + 1))))
                .map(|r| vec![r])
                .collect();
            if parts.is_empty() {
                vec![vec![]]
            } else {
                parts
            }
        }
        // Everything, so one GET per map object.
        ReadMode::Broadcast => vec![
            outputs
                .iter()
                .filter_map(|o| span(o, &(0..o.partitions.len())))
                .collect(),
        ],
    }
}
