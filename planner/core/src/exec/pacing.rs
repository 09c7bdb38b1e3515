//! Pacing: making a task's plan yield to its runtime often, so that a task
//! that is stopped (its query cancelled, timed out or stopped by its marker)
//! ends within milliseconds, and so that the CPU executor's threads are
//! shared between the tasks of every running query instead of being held by
//! one heavy operator.
//!
//! A task stops at its next yield (a `Pending` from its future): aborting a
//! tokio task, or dropping it, cannot interrupt a `poll` in progress.
//! DataFusion's leaves consume tokio's cooperative budget, which makes most
//! plans yield every few batches. Joins are the exception: one input batch
//! can cost them the product of both sides. A nested-loop join evaluates its
//! filter on every (build row, probe row) pair of a probe batch before it
//! polls its probe input again: with the 600 k rows of TPC-H SF 0.1
//! `lineitem` on the build side, one 8192-row probe batch is 5·10⁹ pairs,
//! tens of seconds inside a single `poll`, and if the filter matches nothing
//! it emits nothing in between. An unnest is the other: one input row of
//! a 50-million-element array is 6,000 output batches it makes without
//! polling its input again, and an aggregate above it pulls them all in one
//! `poll` (`SELECT count(*) FROM (SELECT unnest(range(1, 50000000)))`).
//!
//! ```text
//!            PaceExec (yield)                         after every join and unnest: yield once the task
//!                │                                    has run YIELD_AFTER without a break
//!      NestedLoopJoinExec
//!        │              │
//!  CountRowsExec   PaceExec (yield, probe slices)     probe batches cut into slices of at most
//!   (build rows)        │                             PAIRS_PER_SLICE / build rows rows, so the
//!        │           probe input                      join polls its probe input every few ms
//!    build input
//! ```
//!
//! The worker adds these nodes to a task's plan after decoding it, and the
//! engine to a plan it runs in its own process ([`pace_plan`]); they are
//! never planned, serialized or shipped, and they change no row: slices of
//! a batch are the batch, in order.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec,
};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::unnest::UnnestExec;
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowAggExec};
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
    RecordBatchStream, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::{Stream, StreamExt};

/// Longest a paced stream lets its task run without a yield.
pub const YIELD_AFTER: Duration = Duration::from_millis(10);

/// Most (build row, probe row) pairs one probe slice of a nested-loop join
/// costs: a few milliseconds of filter evaluation (DataFusion's nested-loop
/// join evaluates some 10⁸ pairs a second per core). A slice has at least
/// one probe row, so a build side of more rows than this costs more per
/// slice: one probe row against all of it.
pub const PAIRS_PER_SLICE: usize = 1 << 18;

/// `plan` with every join and unnest paced (see the module docs).
pub fn pace_plan(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    pace_plan_with(plan, PAIRS_PER_SLICE)
}

/// [`pace_plan`] with probe slices of at most `pairs_per_slice` pairs.
pub fn pace_plan_with(
    plan: Arc<dyn ExecutionPlan>,
    pairs_per_slice: usize,
) -> Result<Arc<dyn ExecutionPlan>> {
    let paced = plan.transform_up(|node| {
        let many_rows_per_poll = node.downcast_ref::<HashJoinExec>().is_some()
            || node.downcast_ref::<CrossJoinExec>().is_some()
            || node.downcast_ref::<SortMergeJoinExec>().is_some()
            || node.downcast_ref::<UnnestExec>().is_some();
        let node = if many_polls_per_row(&node) {
            pace_inputs(node)?
        } else {
            node
        };
        if let Some(nlj) = node.downcast_ref::<NestedLoopJoinExec>() {
            let build_rows = Arc::new(AtomicUsize::new(0));
            let left: Arc<dyn ExecutionPlan> = Arc::new(CountRowsExec::new(
                Arc::clone(nlj.left()),
                Arc::clone(&build_rows),
            ));
            let right: Arc<dyn ExecutionPlan> = Arc::new(PaceExec::probe(
                Arc::clone(nlj.right()),
                build_rows,
                pairs_per_slice,
            ));
            let join = Arc::clone(&node).replace_children(
                vec![left, right],
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
            )?;
            return Ok(Transformed::yes(Arc::new(PaceExec::new(join)) as _));
        }
        if many_rows_per_poll {
            return Ok(Transformed::yes(Arc::new(PaceExec::new(node)) as _));
        }
        Ok(Transformed::yes(node))
    })?;
    // The task's own loop over its plan's batches (the exchange writer's,
    // or the collection of a result) is such a consumer too.
    Ok(paced_once(paced.data))
}

/// Whether `node` may poll its inputs many times before it returns a batch
/// (or anything): aggregations, sorts, windows, the exchanges and merges
/// that drain their inputs from tasks of their own, and a join building its
/// hash table. Above an input that is always ready (a sort's sorted batches,
/// a join's or an unnest's output) such a loop never yields by itself:
/// `max(x) OVER (PARTITION BY k ORDER BY k)`, whose window holds every row
/// of a partition as a peer, drew the whole sorted input through one poll
/// (18 seconds with 37-row batches, both CPU threads, while a short query
/// waited for its planning).
fn many_polls_per_row(node: &Arc<dyn ExecutionPlan>) -> bool {
    node.downcast_ref::<AggregateExec>().is_some()
        || node.downcast_ref::<SortExec>().is_some()
        || node.downcast_ref::<BoundedWindowAggExec>().is_some()
        || node.downcast_ref::<WindowAggExec>().is_some()
        || node.downcast_ref::<RepartitionExec>().is_some()
        || node.downcast_ref::<CoalescePartitionsExec>().is_some()
        || node.downcast_ref::<SortPreservingMergeExec>().is_some()
        || node.downcast_ref::<HashJoinExec>().is_some()
        || node.downcast_ref::<CrossJoinExec>().is_some()
        || node.downcast_ref::<SortMergeJoinExec>().is_some()
}

/// `node` with each input that is not paced yet paced: its loop over an
/// input yields once its task has run [`YIELD_AFTER`].
fn pace_inputs(node: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    if node
        .children()
        .iter()
        .all(|c| c.downcast_ref::<PaceExec>().is_some())
    {
        return Ok(node);
    }
    let inputs = node
        .children()
        .into_iter()
        .cloned()
        .map(paced_once)
        .collect();
    node.replace_children(
        inputs,
        ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
    )
}

/// `plan` under a [`PaceExec`] unless it is one.
fn paced_once(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if plan.downcast_ref::<PaceExec>().is_some() {
        plan
    } else {
        Arc::new(PaceExec::new(plan))
    }
}

/// Passes its input through, yielding once its task has run
/// [`YIELD_AFTER`] without a break; as the probe input of a nested-loop
/// join, also cuts batches into probe slices.
#[derive(Debug)]
pub struct PaceExec {
    input: Arc<dyn ExecutionPlan>,
    probe: Option<ProbeSlices>,
    properties: Arc<PlanProperties>,
}

/// How a probe input is sliced: `pairs` over the build side's row count.
#[derive(Debug, Clone)]
struct ProbeSlices {
    build_rows: Arc<AtomicUsize>,
    pairs: usize,
}

impl ProbeSlices {
    fn rows(&self) -> usize {
        let build = self.build_rows.load(Ordering::Relaxed).max(1);
        (self.pairs / build).max(1)
    }
}

impl PaceExec {
    /// Yields only.
    pub fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        Self::with(input, None)
    }

    /// Yields, and cuts batches so that each slice times the rows counted
    /// in `build_rows` is at most `pairs_per_slice` pairs.
    pub fn probe(
        input: Arc<dyn ExecutionPlan>,
        build_rows: Arc<AtomicUsize>,
        pairs_per_slice: usize,
    ) -> Self {
        let probe = ProbeSlices {
            build_rows,
            pairs: pairs_per_slice.max(1),
        };
        Self::with(input, Some(probe))
    }

    fn with(input: Arc<dyn ExecutionPlan>, probe: Option<ProbeSlices>) -> Self {
        // Same rows, same order, same partitions.
        let properties = Arc::clone(input.properties());
        Self {
            input,
            probe,
            properties,
        }
    }
}

impl DisplayAs for PaceExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PaceExec: yield after {} ms", YIELD_AFTER.as_millis())?;
        if let Some(p) = &self.probe {
            write!(f, ", probe slices of at most {} pairs", p.pairs)?;
        }
        Ok(())
    }
}

impl ExecutionPlan for PaceExec {
    fn name(&self) -> &str {
        "PaceExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal("PaceExec takes one child".into()));
        }
        Ok(Arc::new(Self::with(children.remove(0), self.probe.clone())))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        Ok(Box::pin(PacedStream {
            schema: input.schema(),
            input,
            probe: self.probe.clone(),
            slicing: None,
            running_since: None,
        }))
    }
}

struct PacedStream {
    schema: SchemaRef,
    input: SendableRecordBatchStream,
    probe: Option<ProbeSlices>,
    /// The batch being cut into slices, and the offset of its next slice.
    slicing: Option<(RecordBatch, usize)>,
    /// When the task started running this time (None right after a yield).
    running_since: Option<Instant>,
}

impl PacedStream {
    fn next_slice(&mut self) -> Option<RecordBatch> {
        let rows = self.probe.as_ref()?.rows();
        let (batch, offset) = self.slicing.as_mut()?;
        let len = rows.min(batch.num_rows() - *offset);
        let slice = batch.slice(*offset, len);
        *offset += len;
        if *offset >= batch.num_rows() {
            self.slicing = None;
        }
        Some(slice)
    }
}

impl Stream for PacedStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let now = Instant::now();
        match self.running_since {
            None => self.running_since = Some(now),
            Some(since) if now.duration_since(since) >= YIELD_AFTER => {
                // Let the executor run other tasks (and drop this one if it
                // was stopped); it polls this one again soon.
                self.running_since = None;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Some(_) => {}
        }
        if let Some(slice) = self.next_slice() {
            return Poll::Ready(Some(Ok(slice)));
        }
        match self.input.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(batch))) => {
                if self.probe.is_none() || batch.num_rows() == 0 {
                    return Poll::Ready(Some(Ok(batch)));
                }
                self.slicing = Some((batch, 0));
                Poll::Ready(self.next_slice().map(Ok))
            }
            Poll::Pending => {
                self.running_since = None;
                Poll::Pending
            }
            other => other,
        }
    }
}

impl RecordBatchStream for PacedStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

/// Passes its input through, counting its rows into a shared counter: the
/// build side of a paced nested-loop join.
#[derive(Debug)]
pub struct CountRowsExec {
    input: Arc<dyn ExecutionPlan>,
    rows: Arc<AtomicUsize>,
    properties: Arc<PlanProperties>,
}

impl CountRowsExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, rows: Arc<AtomicUsize>) -> Self {
        let properties = Arc::clone(input.properties());
        Self {
            input,
            rows,
            properties,
        }
    }
}

impl DisplayAs for CountRowsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "CountRowsExec")
    }
}

impl ExecutionPlan for CountRowsExec {
    fn name(&self) -> &str {
        "CountRowsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "CountRowsExec takes one child".into(),
            ));
        }
        Ok(Arc::new(Self::new(
            children.remove(0),
            Arc::clone(&self.rows),
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let rows = Arc::clone(&self.rows);
        let counted = input.inspect(move |batch| {
            if let Ok(b) = batch {
                rows.fetch_add(b.num_rows(), Ordering::Relaxed);
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, counted)))
    }
}

#[cfg(test)]
mod tests;
