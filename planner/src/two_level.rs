//! The two-level exchange of hash reads (Lambada's multi-level exchange,
//! Starling's combiners): placing *combine stages*, and the request model
//! that sizes their grids.
//!
//! A hash exchange read directly costs one ranged GET per map object per
//! reduce task: `M x N`. At SF1000 on 1,000 functions both are about 1,000,
//! a million GETs per exchange. A combine stage between the map stage `S`
//! and its hash reader `T` regroups `S`'s objects into a grid of `a x b`
//! objects: task `(g, h)` reads, from each map object of group `g` (about
//! `M / a` of them), the contiguous partition range `P_h` (one GET each),
//! and writes ONE object under the same layout and the same partitioning
//! (same keys, same `R`, same hash), so every row keeps its partition and
//! only the rows of `P_h` are in it. A reduce task's range then meets only
//! the combine objects of the column(s) it overlaps, `a` per column.
//!
//! ```text
//!  S: M map objects          combine stage: a x b tasks            T: N reduce tasks
//!  group 0 (M/a objects) ──> (0,0) P_0 (0,1) P_1 ... (0,b-1)  ──┐
//!  group 1               ──> (1,0)     (1,1)     ... (1,b-1)  ──┼── a GETs per column a task meets
//!  ...                                                          │
//!  group a-1             ──> (a-1,0)   ...                    ──┘
//! ```
//!
//! Requests, in GETs (`w` = the price of one combine task's PUT, invocation
//! and completion message, in GETs at list prices, 14):
//!
//! ```text
//!  direct     M x N
//!  two-level  M x b  +  a x (N + b - 1)  +  w x a x b
//!             level 1   level 2: N contiguous reduce ranges over b contiguous
//!                       columns meet at most N + b - 1 (task, column) pairs
//! ```
//!
//! Each combine task should move at most `squall.shuffle.target_task_bytes`
//! (a reduce task's share), and there are at least `squall.shuffle.min_tasks`
//! of them, so `a x b >= K`. For a fixed `b` the cost grows with `a`, so the
//! best grid takes `a = ceil(K / b)` and only `b` is searched (up to `K`:
//! beyond, `a` is 1 and a larger `b` only adds requests); near
//! `b = sqrt(N K / M)`, `a = sqrt(M K / N)` it is about `2 sqrt(M N K)`.
//! Example: `M = N = 1,000`, 100 GB at 64 MiB (`K = 1,491`): a 44 x 34 grid,
//! about 100,000 requests instead of 1,000,000.
//!
//! Placement ([`place_combine_stages`]) happens at planning, for the hash
//! reads of a partitioned stage (a combine stage for each side of a join),
//! when the estimated `M x N` summed over the stage's hash reads reaches
//! `squall.shuffle.two_level_min_requests`: `M` from the map
//! stage's scan tasks (or, for a hash stage, its estimated bytes), `N` from
//! the estimated bytes `T` reads. The grid itself is formed from the
//! measured map outputs when the combine stage launches
//! (`coordinator::grid`), which passes its input through unchanged when the
//! grid would not halve the requests. A join-key filter stays the map
//! stage's: its writer publishes the keys; the combine stage only moves bytes.
//!
//! What it does not do: combine broadcast reads (the coordinator merges
//! those into one object, `coordinator::combine`), gathers, or hash reads
//! of a single-task stage.

use crate::error::PlannerError;
use std::sync::Arc;

use arrow::datatypes::{DataType, Schema};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_plan::ExecutionPlan;
use squall_core::config::SquallConfig;
use squall_core::exec::{ReadMode, ShuffleReadExec, ShuffleWriteExec};
use squall_core::scan::{Leaf, leaves};

use crate::coordinator::coalesce::Sizing;
use crate::cost::prices;
use crate::stages::{Stage, StagedPlan, TaskLayout};

/// A combine stage's grid: groups of map objects x contiguous partition
/// ranges, one task (and one object) per cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridShape {
    pub map_groups: usize,
    pub partition_ranges: usize,
}

impl GridShape {
    pub fn cells(&self) -> usize {
        self.map_groups * self.partition_ranges
    }
}

/// What a grid is chosen from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridInputs {
    /// Map objects (`M`).
    pub map_objects: usize,
    /// Partitions that hold rows: the most partition ranges there can be.
    pub partitions: usize,
    /// Reduce tasks expected to read the exchange (`N`).
    pub reduce_tasks: usize,
    /// Combine tasks at least (`K`): the bytes over the task target, and the
    /// minimum task count.
    pub min_cells: usize,
}

/// The best grid for some [`GridInputs`] and the requests it is modelled at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridChoice {
    pub shape: GridShape,
    /// Requests of the direct exchange, in GETs: `M x N`.
    pub direct: f64,
    /// Requests of the two-level exchange through `shape`, in GETs.
    pub two_level: f64,
}

impl GridChoice {
    /// Whether the grid at least halves the requests (an extra stage costs
    /// a round of task start-up and I/O, so a small saving is not worth it).
    pub fn pays(&self) -> bool {
        self.two_level * 2.0 <= self.direct
    }
}

/// The price of one combine task beyond its GETs, in GETs: its object's PUT,
/// its invocation and its completion message.
pub fn task_weight() -> f64 {
    (prices::S3_PER_PUT_OR_LIST + prices::LAMBDA_PER_REQUEST + prices::SQS_PER_REQUEST)
        / prices::S3_PER_GET
}

/// Requests of a two-level exchange with an `a x b` grid, in GETs.
pub fn two_level_requests(map_objects: usize, reduce_tasks: usize, shape: GridShape) -> f64 {
    let (m, n) = (map_objects as f64, reduce_tasks as f64);
    let (a, b) = (shape.map_groups as f64, shape.partition_ranges as f64);
    m * b + a * (n + b - 1.0) + task_weight() * a * b
}

/// The grid that makes the fewest requests with at least `min_cells` cells
/// (or as many as `M x partitions` allows).
pub fn choose_grid(x: GridInputs) -> GridChoice {
    let m = x.map_objects.max(1);
    let n = x.reduce_tasks.max(1);
    let k = x.min_cells.max(1);
    let choice = |b: usize| {
        let shape = GridShape {
            map_groups: k.div_ceil(b).clamp(1, m),
            partition_ranges: b,
        };
        GridChoice {
            shape,
            direct: (m * n) as f64,
            two_level: two_level_requests(m, n, shape),
        }
    };
    let mut best = choice(1);
    // From `b >= K` on, `a` is 1 and a larger `b` only adds requests.
    for b in 2..=x.partitions.max(1).min(k) {
        let c = choice(b);
        // A grid that reaches `min_cells` beats one that does not; of two
        // that do not, the one with more cells (smaller tasks).
        let better = match (c.shape.cells() >= k, best.shape.cells() >= k) {
            (true, true) => c.two_level < best.two_level,
            (true, false) => true,
            (false, true) => false,
            (false, false) => {
                (c.shape.cells(), -c.two_level) > (best.shape.cells(), -best.two_level)
            }
        };
        if better {
            best = c;
        }
    }
    best
}

/// Combine tasks at least, for `bytes` of exchange: one per
/// `target_task_bytes` (none when it is 0), and at least the minimum task
/// count (while each still moves `min_task_bytes`).
pub fn min_cells(bytes: u64, sizing: Sizing) -> usize {
    let by_bytes = match sizing.target_bytes {
        0 => 1,
        t => usize::try_from(bytes.div_ceil(t)).unwrap_or(usize::MAX),
    };
    by_bytes.max(sizing.least(bytes)).max(1)
}

/// One combine stage placed between a map stage and its hash reader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CombinePlacement {
    /// The combine stage's id, and its index in the staged plan when it was
    /// inserted (the stages from there on moved up one).
    pub combine: u32,
    pub index: usize,
    /// The map stage it reads, and the stage that reads it instead.
    pub source: u32,
    pub reader: u32,
}

/// Place combine stages in `staged` for the hash reads of a stage whose
/// direct reads are estimated at `squall.shuffle.two_level_min_requests`
/// GETs or more, over all its inputs. `scan_tasks[i]` is
/// how many scan tasks stage `i` has (0 for stages without scans). Returns
/// the placements in the order they were inserted.
pub fn place_combine_stages(
    staged: &mut StagedPlan,
    scan_tasks: &[usize],
    config: &SquallConfig,
) -> Result<Vec<CombinePlacement>> {
    let threshold = config.shuffle.two_level_min_requests;
    if threshold == 0 {
        return Ok(Vec::new());
    }
    let sizing = Sizing::from_config(config);
    let tasks = estimated_tasks(staged, scan_tasks, sizing);
    // (reader, source, estimated M, estimated N, partitions)
    let mut wanted = Vec::new();
    for (ti, stage) in staged.stages.iter().enumerate() {
        if !matches!(stage.layout, TaskLayout::Hash { .. }) {
            continue;
        }
        // The stage's reads that a combine stage could serve: hash reads
        // of multi-task stages, by a stage of several tasks.
        let mut reads: Vec<(u32, u32, usize, usize, usize)> = Vec::new();
        for leaf in leaves(&stage.plan) {
            let Leaf::ShuffleRead(read) = leaf else {
                continue;
            };
            if read.mode() != ReadMode::Hash {
                continue;
            }
            let Some(si) = staged.index(read.stage()) else {
                continue;
            };
            let (m, n) = (tasks[si], tasks[ti]);
            // Two reads of one stage (a self-join of a stage run once for
            // two identical ones) share its combine stage.
            let placed = reads.iter().any(|w| w.1 == read.stage());
            if !placed && m > 1 && n > 1 {
                let partitions = read.planned_partitioning().partition_count();
                reads.push((stage.id, read.stage(), m, n, partitions));
            }
        }
        // The threshold counts the reading stage's GETs over all its
        // inputs: each reduce task makes them all, and they are billed and
        // rate-limited together (three inputs of 250 map objects read by
        // 35 tasks are 26,250 GETs, though no one input reaches 10,000).
        // The coordinator still forwards an input whose grid would not
        // halve its own requests (`coordinator::grid`).
        let direct: u64 = reads
            .iter()
            .map(|w| (w.2 as u64).saturating_mul(w.3 as u64))
            .fold(0, u64::saturating_add);
        if direct >= threshold {
            wanted.extend(reads);
        }
    }
    let mut placed = Vec::with_capacity(wanted.len());
    for (reader, source, map_tasks, reduce_tasks, partitions) in wanted {
        let id = staged.stages.iter().map(|s| s.id).max().unwrap_or(0) + 1;
        let si = index_of(staged, source)?;
        let ti = index_of(staged, reader)?;
        let read = hash_read_of(&staged.stages[ti].plan, source)?;
        let read_of = |stage: u32| -> Result<Arc<dyn ExecutionPlan>> {
            Ok(Arc::new(ShuffleReadExec::try_new(
                stage,
                ReadMode::Hash,
                read.schema(),
                read.planned_partitioning().clone(),
                read.carried().clone(),
            )?))
        };
        // Same partitioning as the map stage's writer: every row stays in its partition.
        let writer =
            ShuffleWriteExec::new(read_of(source)?, Some(read.planned_partitioning().clone()));
        let reread = read_of(id)?;
        let est_rows = staged.stages[si].est_rows;
        let t = &mut staged.stages[ti];
        t.plan = replace_read(Arc::clone(&t.plan), source, &reread)?;
        for input in t.inputs.iter_mut().filter(|i| **i == source) {
            *input = id;
        }
        t.inputs.sort_unstable();
        t.inputs.dedup();
        let index = si + 1;
        staged.stages.insert(
            index,
            Stage {
                id,
                plan: Arc::new(writer),
                inputs: vec![source],
                layout: TaskLayout::Combine {
                    source,
                    partitions,
                    map_tasks,
                    reduce_tasks,
                },
                est_rows,
                filter_inputs: Vec::new(),
                clustered_on: None,
            },
        );
        placed.push(CombinePlacement {
            combine: id,
            index,
            source,
            reader,
        });
    }
    Ok(placed)
}

/// The requests a combine stage was placed to save, as planned: the direct
/// exchange's and the two-level one's with the grid the estimates give.
pub fn planned_choice(
    layout: &TaskLayout,
    estimated_bytes: Option<u64>,
    sizing: Sizing,
) -> Option<GridChoice> {
    let TaskLayout::Combine {
        partitions,
        map_tasks,
        reduce_tasks,
        ..
    } = layout
    else {
        return None;
    };
    let cells = estimated_bytes.map_or(sizing.min_tasks.max(1), |b| min_cells(b, sizing));
    Some(choose_grid(GridInputs {
        map_objects: *map_tasks,
        partitions: *partitions,
        reduce_tasks: *reduce_tasks,
        min_cells: cells,
    }))
}

/// Estimated tasks per stage: scan tasks as split; a hash stage's from the
/// estimated bytes it reads (all partitions when an estimate is missing),
/// as its reduce tasks will be formed at launch; one otherwise.
fn estimated_tasks(staged: &StagedPlan, scan_tasks: &[usize], sizing: Sizing) -> Vec<usize> {
    staged
        .stages
        .iter()
        .enumerate()
        .map(|(i, stage)| match &stage.layout {
            TaskLayout::Scan => scan_tasks.get(i).copied().unwrap_or(1).max(1),
            TaskLayout::Hash { partitions } => match read_bytes(staged, stage) {
                Some(bytes) => sizing.tasks(bytes, *partitions),
                None => *partitions,
            },
            TaskLayout::Single { .. } | TaskLayout::Combine { .. } => 1,
        })
        .collect()
}

/// Estimated bytes the hash reads of `stage` read: the estimated rows of
/// the stages they read times a row's estimated width; `None` when a
/// stage has no estimate.
pub fn read_bytes(staged: &StagedPlan, stage: &Stage) -> Option<u64> {
    let mut total = 0u64;
    for leaf in leaves(&stage.plan) {
        let Leaf::ShuffleRead(read) = leaf else {
            continue;
        };
        if read.mode() != ReadMode::Hash {
            continue;
        }
        let rows = staged.stage(read.stage())?.est_rows? as u64;
        total = total.saturating_add(rows.saturating_mul(row_bytes(&read.schema()) as u64));
    }
    Some(total)
}

/// A row's estimated width in an exchange object (before compression).
fn row_bytes(schema: &Schema) -> usize {
    schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Boolean => 1,
            DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView => 24,
            t => t.primitive_width().unwrap_or(16),
        })
        .sum::<usize>()
        .max(1)
}

fn index_of(staged: &StagedPlan, id: u32) -> Result<usize> {
    staged.index(id).ok_or_else(|| {
        PlannerError::Internal(format!("combine stage placed for unknown stage s{id}")).into()
    })
}

/// The hash read of stage `source` in `plan`.
fn hash_read_of(plan: &Arc<dyn ExecutionPlan>, source: u32) -> Result<&ShuffleReadExec> {
    leaves(plan)
        .into_iter()
        .find_map(|l| match l {
            Leaf::ShuffleRead(r) if r.stage() == source && r.mode() == ReadMode::Hash => Some(r),
            _ => None,
        })
        .ok_or_else(|| {
            PlannerError::Internal(format!("no hash read of stage s{source} to combine")).into()
        })
}

/// `plan` with its hash read of stage `source` replaced by `read`.
fn replace_read(
    plan: Arc<dyn ExecutionPlan>,
    source: u32,
    read: &Arc<dyn ExecutionPlan>,
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        Ok(match node.downcast_ref::<ShuffleReadExec>() {
            Some(r) if r.stage() == source && r.mode() == ReadMode::Hash => {
                Transformed::yes(Arc::clone(read))
            }
            _ => Transformed::no(node),
        })
    })
    .map(|t| t.data)
}

#[cfg(test)]
#[path = "two_level_tests.rs"]
mod tests;
