//! Cutting a DataFusion physical plan into stages.
//!
//! The plan is walked once, top-down; every exchange point becomes a stage
//! boundary, and the subtree below it becomes a stage of its own whose root
//! is a [`ShuffleWriteExec`]. In the consumer, the boundary is replaced by an
//! *unresolved* [`ShuffleReadExec`] naming the upstream stage; the
//! coordinator resolves it with the accepted map outputs when that stage
//! completes.
//!
//! | in the DataFusion plan                    | upstream stage writes   | consumer reads    |
//! |-------------------------------------------|-------------------------|-------------------|
//! | `RepartitionExec` (hash or range)         | hash partitions         | `hash`            |
//! | `CoalescePartitionsExec`, `SortPreservingMergeExec` | its partitions | `gather` (node kept above the read) |
//! | build side of a `CollectLeft` hash join, left side of nested-loop / cross joins, scalar subqueries | its partitions | `broadcast` (one partition, every task) |
//!
//! Partial aggregation stays below a shuffle because it is below the
//! `RepartitionExec` in DataFusion's plan. A `CollectLeft` join whose join
//! type emits unmatched build rows (left, full, left semi/anti/mark) cannot
//! be split across tasks — each task would only see its own probe rows — so
//! it is re-planned as a partitioned join with shuffles on both sides; a
//! null-aware anti join (`NOT IN`), whose answer depends on whether the whole
//! probe side holds a NULL, runs as one task that gathers the probe side.
//!
//! A read reports the properties of the node it replaced — orderings,
//! equivalence classes, constants, constraints — as far as its exchange keeps
//! them ([`BoundaryProperties`]); an order the exchange loses (a hash read
//! concatenates map outputs, a broadcast concatenates everything) is restored
//! by a sort above the read. Every node rebuilt above a cut is then checked
//! against the node DataFusion planned: one that lost a property it was
//! planned with fails the cut, naming its stage; the engine runs that plan whole.
//!
//! How many tasks a stage gets is decided from its leaves ([`TaskLayout`]).
//! Example, TPC-H Q1 with 2 shuffle partitions:
//!
//! ```text
//! Stage 1 [scan]   ShuffleWriteExec(hash [l_returnflag, l_linestatus], 2)
//!                    AggregateExec(Partial) <- FilterExec <- DataSourceExec(parquet)
//! Stage 2 [hash 2] ShuffleWriteExec(passthrough)
//!                    SortExec <- AggregateExec(FinalPartitioned) <- ShuffleReadExec(stage 1, hash)
//! Stage 3 [single] ShuffleWriteExec(passthrough)
//!                    SortPreservingMergeExec <- ShuffleReadExec(stage 2, gather)
//! ```

use crate::error::PlannerError;
use std::sync::Arc;

use datafusion::common::JoinType;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, PartitionMode,
};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::scalar_subquery::ScalarSubqueryExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    ReplaceChildrenOptions, StatisticsArgs, StatisticsContext,
};
use squall_core::exec::{BoundaryProperties, ReadMode, ShuffleReadExec, ShuffleWriteExec};
use squall_core::scan::{Leaf, leaves};

use crate::plan_check::{LOST_PROPERTIES, lost_properties, unmet_requirements};

#[path = "stages/display.rs"]
mod display;
#[path = "stages/isolate.rs"]
mod isolate;
#[path = "stages/reuse.rs"]
mod reuse;
use isolate::isolate_filtered_aggregations;
pub use reuse::{calls_volatile, reuse_saves_scans, reuse_stages};

/// A query cut into stages, upstream stages first; the last one is final.
#[derive(Debug, Clone)]
pub struct StagedPlan {
    pub stages: Vec<Stage>,
}

/// One stage: a plan fragment run by one or more tasks.
#[derive(Debug, Clone)]
pub struct Stage {
    pub id: u32,
    /// Root is a [`ShuffleWriteExec`].
    pub plan: Arc<dyn ExecutionPlan>,
    /// Upstream stages this stage reads.
    pub inputs: Vec<u32>,
    pub layout: TaskLayout,
    /// DataFusion's estimate of the rows this stage outputs, when it has one.
    pub est_rows: Option<usize>,
    /// Stages whose join-key filters this stage applies: it starts only after
    /// they have finished (see `bloom`).
    pub filter_inputs: Vec<u32>,
    /// The column its scan's tasks follow, when the stage finishes an
    /// aggregation grouped by it with no exchange (`crate::clustered`).
    pub clustered_on: Option<String>,
}

impl Stage {
    /// True when the stage's writer collects join keys for a filter.
    pub fn publishes_filter(&self) -> bool {
        self.plan
            .downcast_ref::<ShuffleWriteExec>()
            .is_some_and(|w| w.published_keys().is_some())
    }
}

/// How a stage's work is divided into tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskLayout {
    /// Parquet row groups are spread over tasks (broadcast reads are replicated).
    Scan,
    /// One task per hash partition of the shuffle it reads.
    Hash { partitions: usize },
    /// Exactly one task (gathers, values, anything not partition-parallel).
    Single { reason: &'static str },
    /// The middle of a two-level exchange: tasks that regroup the map
    /// objects of stage `source` (hash partitions, `partitions` of them) into
    /// a grid of fewer objects for its hash reader; the grid is formed when
    /// it launches (see `two_level`). `map_tasks` and `reduce_tasks` are the
    /// planner's estimates that placed it.
    Combine {
        source: u32,
        partitions: usize,
        map_tasks: usize,
        reduce_tasks: usize,
    },
}

impl std::fmt::Display for TaskLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scan => write!(f, "scan"),
            Self::Hash { partitions } => write!(f, "hash x{partitions}"),
            Self::Single { reason } => write!(f, "single ({reason})"),
            Self::Combine { partitions, .. } => write!(f, "combine x{partitions}"),
        }
    }
}

impl StagedPlan {
    /// The position in `stages` of stage `id`.
    pub fn index(&self, id: u32) -> Option<usize> {
        self.stages.iter().position(|s| s.id == id)
    }

    pub fn final_stage(&self) -> Option<&Stage> {
        self.stages.last()
    }

    pub fn stage(&self, id: u32) -> Option<&Stage> {
        self.stages.iter().find(|s| s.id == id)
    }

    /// Stages that read `id`.
    pub fn consumers(&self, id: u32) -> impl Iterator<Item = &Stage> {
        self.stages.iter().filter(move |s| s.inputs.contains(&id))
    }

    /// The reads of stage `id` in all stages: one, but for a stage run once
    /// for identical ones ([`reuse_stages`]), read by each of their readers.
    pub fn reads_of(&self, id: u32) -> usize {
        self.consumers(id)
            .flat_map(|s| leaves(&s.plan))
            .filter(|l| matches!(l, Leaf::ShuffleRead(r) if r.stage() == id))
            .count()
    }
}

/// Cut `plan` into stages. `shuffle_partitions` is the partition count used
/// when a join must be re-planned as a partitioned join.
///
/// Every node rebuilt over a cut must keep the properties DataFusion planned
/// it with; one that does not fails the cut ([`LOST_PROPERTIES`]).
pub fn split_stages(plan: Arc<dyn ExecutionPlan>, shuffle_partitions: usize) -> Result<StagedPlan> {
    let mut cutter = Cutter {
        stages: Vec::new(),
        shuffle_partitions: shuffle_partitions.max(1),
        lost: Vec::new(),
    };
    let root = cutter.rewrite(plan)?;
    cutter.add_stage(root, None, None)?;
    let staged = StagedPlan {
        stages: cutter.stages,
    };
    if let Some(first) = cutter.lost.first() {
        return Err(first.error(&staged));
    }
    Ok(staged)
}

struct Cutter {
    stages: Vec<Stage>,
    shuffle_partitions: usize,
    /// Nodes whose rebuilt properties lost something they were planned with.
    lost: Vec<Lost>,
}

/// A node that lost properties when the plan was cut below it.
struct Lost {
    node: String,
    /// Upstream stages read below the rebuilt node.
    reads: Vec<u32>,
    lost: Vec<String>,
}

impl Lost {
    fn error(&self, staged: &StagedPlan) -> DataFusionError {
        let reads: Vec<String> = self.reads.iter().map(|s| format!("s{s}")).collect();
        let stage = self
            .reads
            .first()
            .and_then(|r| staged.consumers(*r).next())
            .map(|s| format!("stage s{}", s.id))
            .unwrap_or_else(|| "a stage".to_string());
        let over = if reads.is_empty() {
            String::new()
        } else {
            format!(" over the read of {}", reads.join(", "))
        };
        PlannerError::StagePlan {
            stage,
            message: format!(
                "{}{over} {LOST_PROPERTIES}: {}",
                self.node,
                self.lost.join("; ")
            ),
        }
        .into()
    }
}

impl Cutter {
    fn add_stage(
        &mut self,
        plan: Arc<dyn ExecutionPlan>,
        partitioning: Option<Partitioning>,
        est_rows: Option<usize>,
    ) -> Result<u32> {
        let id = self.stages.len() as u32 + 1;
        let layout = layout_of(&plan);
        let mut inputs: Vec<u32> = leaves(&plan)
            .iter()
            .filter_map(|l| match l {
                Leaf::ShuffleRead(r) => Some(r.stage()),
                _ => None,
            })
            .collect();
        inputs.sort_unstable();
        inputs.dedup();
        let root: Arc<dyn ExecutionPlan> = Arc::new(ShuffleWriteExec::new(plan, partitioning));
        self.stages.push(Stage {
            id,
            plan: root,
            inputs,
            layout,
            est_rows,
            filter_inputs: Vec::new(),
            clustered_on: None,
        });
        Ok(id)
    }

    fn rewrite(&mut self, plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        // A recursive query's rounds run in one process: nothing inside it
        // is cut (its work table makes its stage a single task).
        if plan.is::<datafusion::physical_plan::recursive_query::RecursiveQueryExec>() {
            return Ok(plan);
        }
        if let Some(join) = plan.downcast_ref::<HashJoinExec>()
            && let Some(isolated) = isolate_filtered_aggregations(join)?
        {
            return self.rewrite(isolated);
        }
        if let Some(rep) = plan.downcast_ref::<RepartitionExec>()
            && matches!(
                rep.partitioning(),
                Partitioning::Hash(..) | Partitioning::Range(..)
            )
        {
            let est = estimated_rows(rep.input());
            let input_partitions = rep.input().output_partitioning().partition_count();
            let input = self.rewrite(Arc::clone(rep.input()))?;
            let partitioning = rep.partitioning().clone();
            let stage = self.add_stage(input, Some(partitioning.clone()), est)?;
            let carried = BoundaryProperties::capture(
                rep.properties().equivalence_properties(),
                ReadMode::Hash.keeps(input_partitions),
            );
            let read: Arc<dyn ExecutionPlan> = Arc::new(ShuffleReadExec::try_new(
                stage,
                ReadMode::Hash,
                rep.schema(),
                partitioning,
                carried,
            )?);
            // A sort-preserving repartition (or one of a single input
            // partition) keeps an order; the read concatenates map outputs,
            // so restore the order per partition.
            return restore_order(read, rep.properties().output_ordering());
        }

        if plan.is::<CoalescePartitionsExec>() || plan.is::<SortPreservingMergeExec>() {
            let child = Arc::clone(single_child(&plan)?);
            let read = self.cut(child, ReadMode::Gather)?;
            return self.replace(plan, vec![read]);
        }

        if let Some(join) = plan.downcast_ref::<HashJoinExec>()
            && *join.partition_mode() == PartitionMode::CollectLeft
        {
            if emits_unmatched_left(join.join_type()) {
                if join.null_aware {
                    // `NOT IN` over a nullable key: whether the probe side holds
                    // a NULL (or any row) decides every output row, so one task
                    // must see the whole probe side.
                    let left = self.broadcast(Arc::clone(join.left()))?;
                    let right = self.cut(Arc::clone(join.right()), ReadMode::Gather)?;
                    return self.replace(plan, vec![left, right]);
                }
                let mut partitioned = self.partitioned_join(join)?;
                // A join of one output partition (its probe side was one)
                // stays one: what is above it was planned on that (a final
                // aggregation with no merge below it).
                if join.properties().output_partitioning().partition_count() == 1 {
                    partitioned = Arc::new(CoalescePartitionsExec::new(partitioned));
                }
                return self.rewrite(partitioned);
            }
            let left = self.broadcast(Arc::clone(join.left()))?;
            let right = self.rewrite(Arc::clone(join.right()))?;
            return self.replace(plan, vec![left, right]);
        }

        if plan.is::<NestedLoopJoinExec>() || plan.is::<CrossJoinExec>() {
            let children: Vec<Arc<dyn ExecutionPlan>> =
                plan.children().into_iter().cloned().collect();
            let mut new_children = Vec::with_capacity(children.len());
            for (i, c) in children.into_iter().enumerate() {
                new_children.push(if i == 0 {
                    self.broadcast(c)?
                } else {
                    self.rewrite(c)?
                });
            }
            return self.replace(plan, new_children);
        }

        if plan.is::<ScalarSubqueryExec>() {
            let children: Vec<Arc<dyn ExecutionPlan>> =
                plan.children().into_iter().cloned().collect();
            let mut new_children = Vec::with_capacity(children.len());
            for (i, c) in children.into_iter().enumerate() {
                new_children.push(if i == 0 {
                    self.rewrite(c)?
                } else {
                    self.broadcast(c)?
                });
            }
            return self.replace(plan, new_children);
        }

        let children: Vec<Arc<dyn ExecutionPlan>> = plan.children().into_iter().cloned().collect();
        if children.is_empty() {
            return Ok(plan);
        }
        let new_children = children
            .into_iter()
            .map(|c| self.rewrite(c))
            .collect::<Result<Vec<_>>>()?;
        self.replace(plan, new_children)
    }

    /// `plan` over its rewritten children. The children must still meet its
    /// requirements (distribution, ordering), and its properties must still
    /// give what it was planned with (every ordering, equivalence, constant,
    /// constraint); what it lost is recorded, to fail planning once the
    /// stage that holds it is known.
    fn replace(
        &mut self,
        plan: Arc<dyn ExecutionPlan>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rebuilt = Arc::clone(&plan).replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )?;
        let mut lost = unmet_requirements(&rebuilt)?;
        lost.extend(lost_properties(plan.properties(), rebuilt.properties())?);
        if !lost.is_empty() {
            let reads = leaves(&rebuilt)
                .iter()
                .filter_map(|l| match l {
                    Leaf::ShuffleRead(r) => Some(r.stage()),
                    _ => None,
                })
                .collect();
            self.lost.push(Lost {
                node: plan.name().to_string(),
                reads,
                lost,
            });
        }
        Ok(rebuilt)
    }

    /// Make `child` a stage of its own and return the read that replaces it,
    /// carrying what `mode` keeps of `child`'s properties.
    fn cut(
        &mut self,
        child: Arc<dyn ExecutionPlan>,
        mode: ReadMode,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = child.schema();
        let partitions = child.output_partitioning().partition_count();
        let carried =
            BoundaryProperties::capture(child.equivalence_properties(), mode.keeps(partitions));
        let est = estimated_rows(&child);
        let rewritten = self.rewrite(child)?;
        let stage = self.add_stage(rewritten, None, est)?;
        Ok(Arc::new(ShuffleReadExec::try_new(
            stage,
            mode,
            schema,
            Partitioning::UnknownPartitioning(partitions.max(1)),
            carried,
        )?))
    }

    /// A replicated input: computed once by its own stage, read whole by every task.
    fn broadcast(&mut self, child: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        let ordering = child.output_ordering().cloned();
        // A coalesce directly above is what the broadcast read does anyway.
        let read = if child.is::<CoalescePartitionsExec>() && child.fetch().is_none() {
            let inner = Arc::clone(single_child(&child)?);
            self.cut(inner, ReadMode::Broadcast)?
        } else {
            self.cut(child, ReadMode::Broadcast)?
        };
        // The read concatenates every map output: an order of a
        // single-partition input is restored above it.
        restore_order(read, ordering.as_ref())
    }

    /// Re-plan a `CollectLeft` join as a partitioned join with a shuffle on each side.
    fn partitioned_join(&self, join: &HashJoinExec) -> Result<Arc<dyn ExecutionPlan>> {
        let mut left = Arc::clone(join.left());
        if left.is::<CoalescePartitionsExec>() && left.fetch().is_none() {
            left = Arc::clone(single_child(&left)?);
        }
        let (left_keys, right_keys): (Vec<_>, Vec<_>) = join
            .on()
            .iter()
            .map(|(l, r)| (Arc::clone(l), Arc::clone(r)))
            .unzip();
        let n = self.shuffle_partitions;
        let left: Arc<dyn ExecutionPlan> = Arc::new(RepartitionExec::try_new(
            left,
            Partitioning::Hash(left_keys, n),
        )?);
        let right: Arc<dyn ExecutionPlan> = Arc::new(RepartitionExec::try_new(
            Arc::clone(join.right()),
            Partitioning::Hash(right_keys, n),
        )?);
        join.builder()
            .with_partition_mode(PartitionMode::Partitioned)
            .with_new_children(vec![left, right])?
            .recompute_properties()
            .build_exec()
    }
}

/// DataFusion's row estimate for the output of `plan`, if it has one.
pub(crate) fn estimated_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    StatisticsContext::new()
        .compute(plan.as_ref(), &StatisticsArgs::new())
        .ok()
        .and_then(|s| s.num_rows.get_value().copied())
}

/// Join types whose output includes build (left) rows that matched nothing,
/// which only the one process holding every probe row can know.
fn emits_unmatched_left(t: &JoinType) -> bool {
    matches!(
        t,
        JoinType::Left
            | JoinType::Full
            | JoinType::LeftSemi
            | JoinType::LeftAnti
            | JoinType::LeftMark
    )
}

fn single_child(plan: &Arc<dyn ExecutionPlan>) -> Result<&Arc<dyn ExecutionPlan>> {
    match plan.children().as_slice() {
        [c] => Ok(c),
        other => Err(PlannerError::Internal(format!(
            "{} has {} children, expected one",
            plan.name(),
            other.len()
        ))
        .into()),
    }
}

/// `read`, or a sort of each of its partitions when the node it replaced
/// reported an `ordering` the read does not keep.
fn restore_order(
    read: Arc<dyn ExecutionPlan>,
    ordering: Option<&LexOrdering>,
) -> Result<Arc<dyn ExecutionPlan>> {
    match ordering {
        Some(o) if !read.equivalence_properties().ordering_satisfy(o.clone())? => Ok(Arc::new(
            SortExec::new(o.clone(), read).with_preserve_partitioning(true),
        )),
        _ => Ok(read),
    }
}

/// Decide how a stage (given its plan below the writer) divides into tasks.
fn layout_of(plan: &Arc<dyn ExecutionPlan>) -> TaskLayout {
    let mut scans = 0usize;
    let mut hash_counts: Vec<usize> = Vec::new();
    for leaf in leaves(plan) {
        match leaf {
            Leaf::ParquetScan(scan) | Leaf::TextScan(scan) => {
                // DataFusion planned this scan as one partition, so the
                // operators above may assume they see all of its rows.
                if ExecutionPlan::properties(scan)
                    .partitioning
                    .partition_count()
                    < 2
                {
                    return TaskLayout::Single {
                        reason: "single-partition scan",
                    };
                }
                scans += 1;
            }
            Leaf::ShuffleRead(r) => match r.mode() {
                ReadMode::Hash => hash_counts.push(r.planned_partitioning().partition_count()),
                ReadMode::Gather => return TaskLayout::Single { reason: "gather" },
                ReadMode::Broadcast => {}
            },
            Leaf::Other(other) => {
                if !other.is::<EmptyExec>() {
                    return TaskLayout::Single {
                        reason: "non-splittable source",
                    };
                }
            }
        }
    }
    if contains_unsplittable_join(plan) {
        return TaskLayout::Single {
            reason: "nested-loop join keeping unmatched left rows",
        };
    }
    match (scans, hash_counts.first()) {
        (0, None) => TaskLayout::Single {
            reason: "broadcast input only",
        },
        (_, None) => TaskLayout::Scan,
        (0, Some(&n)) if hash_counts.iter().all(|c| *c == n) => TaskLayout::Hash { partitions: n },
        _ => TaskLayout::Single {
            reason: "mixed inputs",
        },
    }
}

fn contains_unsplittable_join(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if let Some(j) = plan.downcast_ref::<NestedLoopJoinExec>()
        && emits_unmatched_left(j.join_type())
    {
        return true;
    }
    plan.children().into_iter().any(contains_unsplittable_join)
}
