//! Resolving a stage's shuffle reads: once its input stages are complete,
//! each task gets an [`InputBinding`] per read naming exactly the accepted
//! map objects and the byte ranges it reads from each.

use crate::error::PlannerError;
use datafusion::error::{DataFusionError, Result};
use squall_core::exec::{ReadMode, ShuffleReadExec};
use squall_core::scan::{Leaf, leaves};
use squall_core::task::{InputBinding, MapOutput, ObjectRange};

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
        let upstream = job
            .staged
            .stages
            .iter()
            .position(|s| s.id == read.stage())
            .ok_or_else(|| {
                DataFusionError::from(PlannerError::Internal(format!(
                    "stage {} reads unknown stage {}",
                    stage.id,
                    read.stage()
                )))
            })?;
        let outputs: Vec<&MapOutput> = runs[upstream]
            .tasks
            .iter()
            .filter_map(|t| t.accepted.as_ref().map(|(_, o, _)| o))
            .collect();
        bindings.push(InputBinding {
            stage: read.stage(),
            store_url: backend.exchange_url.clone(),
            partitions: read_partitions(read, &stage.layout, &outputs, t),
        });
    }
    Ok(bindings)
}

fn range(out: &MapOutput, p: usize) -> Option<ObjectRange> {
    out.partitions
        .get(p)
        .filter(|r| r.len > 0)
        .map(|r| ObjectRange {
            key: out.key.clone(),
            offset: r.offset,
            len: r.len,
            rows: r.rows,
        })
}

fn read_partitions(
    read: &ShuffleReadExec,
    layout: &TaskLayout,
    outputs: &[&MapOutput],
    task: usize,
) -> Vec<Vec<ObjectRange>> {
    match read.mode() {
        ReadMode::Hash => match layout {
            TaskLayout::Hash { .. } => {
                vec![outputs.iter().filter_map(|o| range(o, task)).collect()]
            }
            _ => {
                let n = read.planned_partitioning().partition_count();
                (0..n)
                    .map(|p| outputs.iter().filter_map(|o| range(o, p)).collect())
                    .collect()
            }
        },
        ReadMode::Gather => {
            let parts: Vec<Vec<ObjectRange>> = outputs
                .iter()
                .flat_map(|o| (0..o.partitions.len()).filter_map(move |p| range(o, p)))
                .map(|r| vec![r])
                .collect();
            if parts.is_empty() {
                vec![vec![]]
            } else {
                parts
            }
        }
        ReadMode::Broadcast => vec![
            outputs
                .iter()
                .flat_map(|o| (0..o.partitions.len()).filter_map(move |p| range(o, p)))
                .collect(),
        ],
    }
}
