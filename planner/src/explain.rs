//! EXPLAIN's text of a staged plan: each stage with its task count (planned,
//! or as run for EXPLAIN ANALYZE) and what its scans read after pruning.
//! What it does not do: plan or run anything (see `engine`, `stages`).

use crate::coordinator::QueryJob;
use crate::profile::QueryProfile;
use crate::stages::{StagedPlan, TaskLayout};

/// EXPLAIN: the stages with their planned task counts, then the scans' lines.
pub fn planned(staged: &StagedPlan, job: &QueryJob) -> String {
    let counts: Vec<String> = (0..staged.stages.len())
        .map(|i| planned_tasks(staged, job, i))
        .collect();
    staged.display(Some(&counts)) + &scan_summary(staged, job)
}

/// EXPLAIN ANALYZE: the stages with the tasks they ran.
pub fn analyzed(staged: &StagedPlan, profile: &QueryProfile) -> String {
    let counts: Vec<String> = profile
        .stage_profiles
        .iter()
        .map(|s| tasks_text(s.tasks))
        .collect();
    staged.display(Some(&counts))
}

/// EXPLAIN's lines on what the scans of each stage read: partitions of
/// partitioned tables and row groups, after pruning.
fn scan_summary(staged: &StagedPlan, job: &QueryJob) -> String {
    let mut out = String::new();
    for (i, stage) in staged.stages.iter().enumerate() {
        let Some(tasks) = job.scan_tasks.get(i).filter(|t| !t.is_empty()) else {
            continue;
        };
        let kept: usize = tasks
            .iter()
            .flatten()
            .flat_map(|a| &a.files)
            .map(|f| f.row_groups.len())
            .sum();
        let pruned = job.row_groups_pruned.get(i).copied().unwrap_or(0);
        let partitions = match job.partitions.get(i) {
            Some(p) if p.read > 0 || p.total.is_some() => match p.total {
                Some(total) => {
                    format!("{} of {total} partitions ({} pruned), ", p.read, p.pruned())
                }
                None => format!("{} partitions, ", p.read),
            },
            _ => String::new(),
        };
        out.push_str(&format!(
            "Stage s{} scans: {partitions}{kept} of {} row groups ({pruned} pruned by statistics)\n",
            stage.id,
            kept as u64 + pruned
        ));
    }
    out
}

/// EXPLAIN's task count of stage `i`: a hash stage's tasks are formed from
/// its measured inputs when it launches, so only their ceiling is known.
fn planned_tasks(staged: &StagedPlan, job: &QueryJob, i: usize) -> String {
    match &staged.stages[i].layout {
        TaskLayout::Hash { partitions } if job.config.shuffle.target_task_bytes > 0 => {
            format!("up to {} (sized from its inputs)", tasks_text(*partitions))
        }
        TaskLayout::Hash { partitions } => tasks_text(*partitions),
        TaskLayout::Scan => tasks_text(job.scan_tasks.get(i).map(|t| t.len()).unwrap_or(1)),
        TaskLayout::Single { .. } => tasks_text(1),
    }
}

fn tasks_text(n: usize) -> String {
    format!("{n} task{}", if n == 1 { "" } else { "s" })
}
