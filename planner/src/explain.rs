//! EXPLAIN's text of a staged plan: each stage with its task count (planned,
//! or as run for EXPLAIN ANALYZE), what its scans read after pruning, and
//! what each combine stage (two-level exchange) is expected to save, or
//! the grid it got and the GETs measured.
//! What it does not do: plan or run anything (see `engine`, `stages`).

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::error::Result;

use crate::coordinator::QueryJob;
use crate::coordinator::coalesce::Sizing;
use crate::profile::QueryProfile;
use crate::result_stream::StreamedResult;
use crate::stages::{StagedPlan, TaskLayout};
use crate::two_level::{GridChoice, planned_choice, read_bytes};

/// EXPLAIN: the stages with their planned task counts, then the scans' and
/// the combine stages' lines.
pub fn planned(staged: &StagedPlan, job: &QueryJob) -> String {
    let counts: Vec<String> = (0..staged.stages.len())
        .map(|i| planned_tasks(staged, job, i))
        .collect();
    staged.display(Some(&counts)) + &scan_summary(staged, job) + &combine_plans(staged, job)
}

/// EXPLAIN ANALYZE: the stages with the tasks they ran, then the grids the
/// combine stages formed and the GETs measured.
pub fn analyzed(staged: &StagedPlan, profile: &QueryProfile) -> String {
    let counts: Vec<String> = profile
        .stage_profiles
        .iter()
        .map(|s| match &s.grid {
            Some(g) if g.forwarded => format!("{} (forwarded its input)", tasks_text(s.tasks)),
            Some(g) => format!(
                "{}, grid {} x {}",
                tasks_text(s.tasks),
                g.map_groups,
                g.partition_ranges
            ),
            None => tasks_text(s.tasks),
        })
        .collect();
    staged.display(Some(&counts)) + &combine_results(staged, profile)
}

/// The planned grid of the combine stage at `i`, from the planner's estimates.
fn planned_grid(staged: &StagedPlan, job: &QueryJob, i: usize) -> Option<GridChoice> {
    let stage = &staged.stages[i];
    planned_choice(
        &stage.layout,
        read_bytes(staged, stage),
        Sizing::from_config(&job.config),
    )
}

/// EXPLAIN's line per combine stage: the requests it is expected to save.
fn combine_plans(staged: &StagedPlan, job: &QueryJob) -> String {
    let mut out = String::new();
    for (i, stage) in staged.stages.iter().enumerate() {
        let (
            TaskLayout::Combine {
                source,
                map_tasks,
                reduce_tasks,
                ..
            },
            Some(grid),
        ) = (&stage.layout, planned_grid(staged, job, i))
        else {
            continue;
        };
        let reader = staged
            .consumers(stage.id)
            .next()
            .map(|r| format!(" for s{}", r.id))
            .unwrap_or_default();
        out.push_str(&format!(
            "Stage s{} combines s{source}{reader} (two-level exchange): about {map_tasks} x {reduce_tasks} = {} GETs read directly, about {} requests through a {} x {} grid (estimates; the grid is formed from the measured map outputs{})\n",
            stage.id,
            grid.direct.round() as u64,
            grid.two_level.round() as u64,
            grid.shape.map_groups,
            grid.shape.partition_ranges,
            if grid.pays() {
                ""
            } else {
                "; it forwards them if the grid would not halve the requests"
            },
        ));
    }
    out
}

/// EXPLAIN ANALYZE's line per combine stage: its grid and the GETs measured.
fn combine_results(staged: &StagedPlan, profile: &QueryProfile) -> String {
    let mut out = String::new();
    for s in &profile.stage_profiles {
        let Some(g) = &s.grid else {
            continue;
        };
        let reader = staged.consumers(s.stage).next().and_then(|r| {
            profile
                .stage_profiles
                .iter()
                .find(|p| p.stage == r.id)
                .map(|p| format!("; its reader s{} made {} GETs", p.stage, p.get_requests))
        });
        let what = if g.forwarded {
            format!(
                "forwarded (a {} x {} grid was modelled at {} requests, direct {})",
                g.map_groups, g.partition_ranges, g.two_level_requests, g.direct_requests
            )
        } else {
            format!(
                "a {} x {} grid, {} tasks: {} GETs, {} PUTs (modelled {} requests, direct {})",
                g.map_groups,
                g.partition_ranges,
                s.tasks,
                s.get_requests,
                s.put_requests,
                g.two_level_requests,
                g.direct_requests
            )
        };
        out.push_str(&format!(
            "Stage s{} combined s{}'s {} map objects: {what}{}\n",
            s.stage,
            g.source,
            g.map_objects,
            reader.unwrap_or_default()
        ));
    }
    out
}

/// EXPLAIN's lines on what the scans of each stage read: partitions of
/// partitioned tables and row groups, after pruning; text files, read whole
/// or as byte ranges.
fn scan_summary(staged: &StagedPlan, job: &QueryJob) -> String {
    use squall_core::scan::{Leaf, leaves};
    let mut out = String::new();
    for (i, stage) in staged.stages.iter().enumerate() {
        let Some(tasks) = job.scan_tasks.get(i).filter(|t| !t.is_empty()) else {
            continue;
        };
        // Which of the stage's scans (in assignment order) read text files.
        let text: Vec<bool> = leaves(&stage.plan)
            .iter()
            .filter(|l| l.is_file_scan())
            .map(|l| matches!(l, Leaf::TextScan(_)))
            .collect();
        let (mut kept, mut any_parquet) = (0usize, false);
        let mut text_files = std::collections::HashSet::new();
        let mut ranged = std::collections::HashSet::new();
        let mut chunks = 0usize;
        for task in tasks {
            for (k, assignment) in task.iter().enumerate() {
                let is_text = text.get(k).copied().unwrap_or(false);
                any_parquet |= !is_text;
                for f in &assignment.files {
                    if !is_text {
                        kept += f.row_groups.len();
                        continue;
                    }
                    text_files.insert((k, f.path.as_str()));
                    if f.chunk_bytes > 0 {
                        ranged.insert((k, f.path.as_str()));
                        chunks += f.row_groups.len();
                    }
                }
            }
        }
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
        if any_parquet {
            out.push_str(&format!(
                "Stage s{} scans: {partitions}{kept} of {} row groups ({pruned} pruned by statistics)\n",
                stage.id,
                kept as u64 + pruned
            ));
        }
        if !text_files.is_empty() {
            let how = match ranged.len() {
                0 => "each read whole".to_string(),
                n => format!("{n} of them in {chunks} chunks read as byte ranges"),
            };
            let partitions = if any_parquet { "" } else { partitions.as_str() };
            out.push_str(&format!(
                "Stage s{} scans: {partitions}{} text files, {how}\n",
                stage.id,
                text_files.len()
            ));
        }
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
        TaskLayout::Combine { .. } => match planned_grid(staged, job, i) {
            Some(g) => format!(
                "about {} (a {} x {} grid; formed from its input)",
                tasks_text(g.shape.cells()),
                g.shape.map_groups,
                g.shape.partition_ranges
            ),
            None => "formed from its input".to_string(),
        },
    }
}

fn tasks_text(n: usize) -> String {
    format!("{n} task{}", if n == 1 { "" } else { "s" })
}

/// A result of `(plan_type, plan)` rows, as EXPLAIN answers.
pub(crate) fn text_result(rows: Vec<(&str, String)>) -> Result<StreamedResult> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("plan_type", DataType::Utf8, false),
        Field::new("plan", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from_iter_values(rows.iter().map(|(k, _)| *k))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|(_, v)| v.as_str()),
            )),
        ],
    )?;
    Ok(StreamedResult::memory(schema, vec![batch]))
}
