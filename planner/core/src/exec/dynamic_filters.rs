//! Run-time filters inside one task: the keys a hash join has built, and
//! the bound a top-k sort has reached, filter the scans below them in the
//! same task before their rows reach the join or the sort.
//!
//! These are DataFusion's dynamic filters. The planner switches them off
//! (`engine::session_config`): a plan is cut into stages that run in
//! different processes, where a filter object cannot link a join to a scan.
//! A worker links them again in the plan of the one task it runs
//! ([`link_dynamic_filters`]), where the join and the scan do share a
//! process. An embedded one-task query is DataFusion's whole plan; on a
//! staged query, a scan task's broadcast joins filter its own scans.
//!
//! ```text
//!   HashJoinExec (CollectLeft)  ── built keys ──┐
//!     │          │                              │ DynamicFilterPhysicalExpr
//!   build      DynamicFilterExec  <─────────────┤ (rows: adaptive)
//!                │                              │
//!              DataSourceExec (parquet)  <──────┘ (row groups: statistics)
//! ```
//!
//! Two things are squall's own:
//!
//! - **Which joins may publish.** A partitioned join's filter routes a
//!   probe row to the build partition DataFusion's hash repartitioning
//!   would send it to. That holds only when both inputs are DataFusion's own
//!   hash repartitions in the task; a join reading squall's exchange
//!   partitions keeps no filter.
//! - **Rows, not only row groups.** DataFusion gives the filter to the scan,
//!   which prunes row groups by their statistics; with
//!   `datafusion.execution.parquet.pushdown_filters` off (the default, and
//!   squall's: late materialization slows plain predicates) no row is
//!   removed before the join. [`DynamicFilterExec`] applies a filter to the
//!   scan's rows where they would otherwise go into a hash table (a join's
//!   build side) or an aggregation before they reach the filter's join: a
//!   row removed there saves an insert and its memory. Along a chain of
//!   probes a removed row saves a hash lookup, about what the filter's own
//!   lookup costs (more, for a partitioned join's filter, which first
//!   routes the row to its partition), so there the filter only prunes row
//!   groups. Filters are tried most selective first, and one that passes
//!   almost every row is only sampled from then on.
//!
//! Measured on TPC-H SF10 (one task, 4 partitions), filters linked against
//! not: q18 0.55 (the orders of the 624 big orders only, instead of all
//! 15 M into the join with the line items), q07 0.65; see the README.

use std::collections::HashSet;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use arrow::array::{Array, BooleanArray};
use arrow::compute::filter_record_batch;
use arrow::datatypes::{Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{DynamicFilterPhysicalExpr, Literal};
use datafusion::physical_expr::utils::{collect_columns, reassign_expr_columns, split_conjunction};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::filter_pushdown::FilterPushdown;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, RecordBatchStream, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::{Stream, StreamExt};

/// Rows a filter is measured on before it may be judged unselective.
pub const MEASURE_ROWS: u64 = 1 << 16;

/// A filter that passes at least this share of the rows it is measured on
/// is only sampled from then on.
pub const UNSELECTIVE_PASS_SHARE: f64 = 0.9;

/// An unselective filter is applied to one batch in this many, to notice
/// when the rows it sees change (a scan moving to other keys).
pub const SAMPLE_EVERY: u64 = 16;

/// Turns DataFusion's dynamic filters on in a task's settings: its
/// operators check the switches again when they run.
pub fn enable_dynamic_filters(options: &mut ConfigOptions) {
    options.optimizer.enable_dynamic_filter_pushdown = true;
    options.optimizer.enable_join_dynamic_filter_pushdown = true;
    options.optimizer.enable_topk_dynamic_filter_pushdown = true;
    options.optimizer.enable_aggregate_dynamic_filter_pushdown = true;
}

/// `plan` with DataFusion's dynamic filters linked between the task's own
/// operators, and applied to the rows of the scans they reach (see the
/// module docs). `options` are the task's settings, with
/// [`enable_dynamic_filters`] applied: the same settings must run the plan.
pub fn link_dynamic_filters(
    plan: Arc<dyn ExecutionPlan>,
    options: &ConfigOptions,
) -> Result<Arc<dyn ExecutionPlan>> {
    let linked = FilterPushdown::new_post_optimization().optimize(plan, options)?;
    let unrouted = linked
        .transform_up(|node| {
            let Some(join) = node.downcast_ref::<HashJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            if *join.partition_mode() != PartitionMode::Partitioned
                || (hash_partitioned_here(join.left()) && hash_partitioned_here(join.right()))
            {
                return Ok(Transformed::no(node));
            }
            // Its filter would route rows by a partitioning its inputs do
            // not have: no filter (the scans' copy stays "all rows").
            Ok(Transformed::yes(Arc::clone(&node).reset_state()?))
        })?
        .data;
    apply_to_rows(unrouted, &HashSet::new())
}

/// `plan` with [`DynamicFilterExec`] over the scans given dynamic filters
/// worth applying to rows. `direct` are the filters of the joins `plan`'s
/// rows reach only as probe rows, through other joins' probes,
/// repartitions, projections and filters: removing a row there saves a few
/// hash lookups, about what the filter's own lookup costs, so those filters
/// only prune the scan's row groups. A filter is applied to rows when they
/// would first go into a hash table (a build side) or an aggregation.
fn apply_to_rows(
    plan: Arc<dyn ExecutionPlan>,
    direct: &HashSet<u64>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let worth = |filters: Vec<Arc<dyn PhysicalExpr>>| -> Vec<Arc<dyn PhysicalExpr>> {
        filters
            .into_iter()
            .filter(|f| f.expression_id().is_none_or(|id| !direct.contains(&id)))
            .collect()
    };
    // Above the scan's own predicate when that keeps the filters' columns
    // (fewer rows to look up), else right above the scan.
    if let Some(f) = plan.downcast_ref::<FilterExec>()
        && let Some(filters) = scan_dynamic_filters(f.input())
    {
        let filters = in_columns_of(worth(filters), &plan.schema());
        if !filters.is_empty() {
            return Ok(Arc::new(DynamicFilterExec::try_new(plan, filters)?));
        }
    }
    if let Some(filters) = scan_dynamic_filters(&plan) {
        let filters = worth(filters);
        if filters.is_empty() {
            return Ok(plan);
        }
        return Ok(Arc::new(DynamicFilterExec::try_new(plan, filters)?));
    }
    let children: Vec<Arc<dyn ExecutionPlan>> = plan.children().into_iter().cloned().collect();
    if children.is_empty() {
        return Ok(plan);
    }
    let none = HashSet::new();
    let probe: HashSet<u64>;
    let child_direct: Vec<&HashSet<u64>> = if plan.downcast_ref::<HashJoinExec>().is_some() {
        // Build rows go into a hash table: every filter is worth it there.
        // Probe rows are looked up and passed on: this join's filters join
        // those of the probes above.
        probe = plan
            .dynamic_expressions_produced()
            .iter()
            .filter_map(|e| e.expression_id())
            .chain(direct.iter().copied())
            .collect();
        vec![&none, &probe]
    } else if passes_rows_on(&plan) {
        vec![direct; children.len()]
    } else {
        vec![&none; children.len()]
    };
    let mut changed = false;
    let mut new_children = Vec::with_capacity(children.len());
    for (child, d) in children.into_iter().zip(child_direct) {
        let new = apply_to_rows(Arc::clone(&child), d)?;
        changed |= !Arc::ptr_eq(&new, &child);
        new_children.push(new);
    }
    if changed {
        plan.replace_children(
            new_children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    } else {
        Ok(plan)
    }
}

/// Whether `plan` hands its input rows on with nothing more than a copy.
fn passes_rows_on(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<RepartitionExec>().is_some()
        || plan.downcast_ref::<ProjectionExec>().is_some()
        || plan.downcast_ref::<FilterExec>().is_some()
        || plan.downcast_ref::<CoalescePartitionsExec>().is_some()
}

/// Whether `plan`'s partitions are those of a DataFusion hash
/// repartitioning in this task (kept by the operators above it), not
/// squall's exchange partitions.
fn hash_partitioned_here(plan: &Arc<dyn ExecutionPlan>) -> bool {
    if let Some(r) = plan.downcast_ref::<RepartitionExec>() {
        return matches!(r.partitioning(), Partitioning::Hash(..));
    }
    if let Some(join) = plan.downcast_ref::<HashJoinExec>()
        && *join.partition_mode() == PartitionMode::CollectLeft
    {
        // Partitioned like its probe side.
        return hash_partitioned_here(join.right());
    }
    let children = plan.children();
    !children.is_empty() && children.into_iter().all(hash_partitioned_here)
}

/// The dynamic filters a Parquet scan was given, in its output's columns.
fn scan_dynamic_filters(plan: &Arc<dyn ExecutionPlan>) -> Option<Vec<Arc<dyn PhysicalExpr>>> {
    let scan = plan.downcast_ref::<DataSourceExec>()?;
    let (_, source) = scan.downcast_to_file_source::<ParquetSource>()?;
    let predicate = datafusion::datasource::physical_plan::FileSource::filter(source)?;
    // The scan's predicate is in the table's columns; its output projects
    // some of them. A filter on columns the output lacks is left to the
    // scan's statistics.
    let filters: Vec<Arc<dyn PhysicalExpr>> = split_conjunction(&predicate)
        .into_iter()
        .filter(|e| e.downcast_ref::<DynamicFilterPhysicalExpr>().is_some())
        .cloned()
        .collect();
    let filters = in_columns_of(filters, &plan.schema());
    (!filters.is_empty()).then_some(filters)
}

/// `filters` in `schema`'s columns (by name); those on a column it lacks
/// are left out, and all of them when a filter's columns are not all there.
fn in_columns_of(
    filters: Vec<Arc<dyn PhysicalExpr>>,
    schema: &Schema,
) -> Vec<Arc<dyn PhysicalExpr>> {
    let remapped: Vec<_> = filters
        .iter()
        .filter_map(|e| reassign_expr_columns(Arc::clone(e), schema).ok())
        .collect();
    if remapped.len() == filters.len() {
        remapped
    } else {
        Vec::new()
    }
}

/// Applies dynamic filters to its input's batches, adaptively (see the
/// module docs). Never planned or shipped: a worker adds it to the plan of
/// the task it runs.
#[derive(Debug)]
pub struct DynamicFilterExec {
    input: Arc<dyn ExecutionPlan>,
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// Per filter: the input columns it reads, and the filter in those
    /// columns only. A filter is evaluated on that narrow batch: DataFusion
    /// evaluates parts of a predicate on copies of the rows still selected,
    /// which would copy every column of a wide scan.
    narrow: Vec<Narrow>,
    /// Per filter, over all partitions: rows measured and rows passed.
    measured: Arc<Vec<Measure>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

#[derive(Debug, Clone)]
struct Narrow {
    columns: Vec<usize>,
    filter: Arc<dyn PhysicalExpr>,
}

impl Narrow {
    fn new(filter: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Result<Self> {
        let mut columns: Vec<usize> = collect_columns(filter).iter().map(|c| c.index()).collect();
        columns.sort_unstable();
        columns.dedup();
        let narrow = schema.project(&columns)?;
        Ok(Self {
            filter: reassign_expr_columns(Arc::clone(filter), &narrow)?,
            columns,
        })
    }
}

#[derive(Debug, Default)]
struct Measure {
    rows: AtomicU64,
    passed: AtomicU64,
}

impl Measure {
    /// Share of the measured rows the filter passed (0 before any).
    fn pass_share(&self) -> f64 {
        let rows = self.rows.load(Ordering::Relaxed);
        if rows == 0 {
            return 0.0;
        }
        self.passed.load(Ordering::Relaxed) as f64 / rows as f64
    }

    fn unselective(&self) -> bool {
        let rows = self.rows.load(Ordering::Relaxed);
        rows >= MEASURE_ROWS
            && self.passed.load(Ordering::Relaxed) as f64 >= UNSELECTIVE_PASS_SHARE * rows as f64
    }
}

impl DynamicFilterExec {
    /// `filters` are in `input`'s columns.
    pub fn try_new(
        input: Arc<dyn ExecutionPlan>,
        filters: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Self> {
        // Fewer rows, same columns, order and partitions.
        let properties = Arc::clone(input.properties());
        let schema = input.schema();
        let narrow = filters
            .iter()
            .map(|f| Narrow::new(f, &schema))
            .collect::<Result<_>>()?;
        let measured = Arc::new(filters.iter().map(|_| Measure::default()).collect());
        Ok(Self {
            input,
            filters,
            narrow,
            measured,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }
}

impl DisplayAs for DynamicFilterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "DynamicFilterExec: ")?;
        for (i, e) in self.filters.iter().enumerate() {
            if i > 0 {
                write!(f, " AND ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for DynamicFilterExec {
    fn name(&self) -> &str {
        "DynamicFilterExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(&self.filters, f)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "DynamicFilterExec takes one child".into(),
            ));
        }
        Ok(Arc::new(Self::try_new(
            children.remove(0),
            self.filters.clone(),
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        Ok(Box::pin(DynamicFilterStream {
            schema: input.schema(),
            input,
            narrow: self.narrow.clone(),
            measured: Arc::clone(&self.measured),
            batches: 0,
            removed: MetricBuilder::new(&self.metrics).counter("rows_removed", partition),
            skipped: MetricBuilder::new(&self.metrics).counter("batches_unfiltered", partition),
            elapsed: MetricBuilder::new(&self.metrics).elapsed_compute(partition),
        }))
    }
}

struct DynamicFilterStream {
    schema: SchemaRef,
    input: SendableRecordBatchStream,
    narrow: Vec<Narrow>,
    measured: Arc<Vec<Measure>>,
    /// Batches this stream has passed on.
    batches: u64,
    removed: Count,
    skipped: Count,
    elapsed: Time,
}

/// Whether a dynamic filter still holds its initial "all rows".
fn passes_all(filter: &Arc<dyn PhysicalExpr>) -> Result<bool> {
    let Some(dynamic) = filter.downcast_ref::<DynamicFilterPhysicalExpr>() else {
        return Ok(false);
    };
    let current = dynamic.current()?;
    Ok(current
        .downcast_ref::<Literal>()
        .is_some_and(|l| matches!(l.value(), ScalarValue::Boolean(Some(true)))))
}

impl DynamicFilterStream {
    fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let _timer = self.elapsed.timer();
        self.batches += 1;
        let sample = self.batches.is_multiple_of(SAMPLE_EVERY);
        let rows_in = batch.num_rows();
        // The most selective filter first: the next ones look only at the
        // rows it keeps.
        let mut order: Vec<usize> = (0..self.narrow.len()).collect();
        order.sort_by(|&a, &b| {
            self.measured[a]
                .pass_share()
                .total_cmp(&self.measured[b].pass_share())
        });
        let mut batch = batch;
        let mut applied = false;
        for i in order {
            let (narrow, measure) = (&self.narrow[i], &self.measured[i]);
            let filter = &narrow.filter;
            if passes_all(filter)? || (measure.unselective() && !sample) {
                continue;
            }
            applied = true;
            let keep = filter
                .evaluate(&batch.project(&narrow.columns)?)?
                .into_array(batch.num_rows())?;
            let keep = keep
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| {
                    DataFusionError::Internal(format!("dynamic filter {filter} is not a predicate"))
                })?;
            let passed = keep.true_count();
            measure
                .rows
                .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            measure.passed.fetch_add(passed as u64, Ordering::Relaxed);
            if passed < batch.num_rows() {
                batch = filter_record_batch(&batch, keep)?;
            }
            if batch.num_rows() == 0 {
                break;
            }
        }
        if !applied {
            self.skipped.add(1);
        }
        self.removed.add(rows_in - batch.num_rows());
        Ok(batch)
    }
}

impl Stream for DynamicFilterStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            return match self.input.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(batch))) => {
                    let kept = self.apply(batch);
                    match kept {
                        // An emptied batch is not worth a poll of the parent.
                        Ok(b) if b.num_rows() == 0 => continue,
                        other => Poll::Ready(Some(other)),
                    }
                }
                other => other,
            };
        }
    }
}

impl RecordBatchStream for DynamicFilterStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

#[cfg(test)]
mod tests;
