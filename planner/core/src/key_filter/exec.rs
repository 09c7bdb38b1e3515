//! [`KeyFilterExec`]: drops rows whose join key cannot match the keys another
//! stage published (see [`crate::key_filter`]).
//!
//! The planner puts it directly below the [`crate::exec::ShuffleWriteExec`] of a
//! stage that feeds a hash join, naming the stage that publishes the other
//! side's keys. The coordinator starts this stage only after that one has
//! finished and its filter is built; the worker binds the filter into the
//! node ([`KeyFilterExec::bind`]). An unbound node refuses to run: a task
//! must never quietly skip or half-apply a filter.
//!
//! A filter that turns out not to be selective costs a hash per row for
//! nothing, so each partition stops applying it when, after its first
//! [`CHECK_ROWS`] rows, it has dropped less than `squall.bloom.min_drop_ratio`
//! of them (dropping fewer rows is always correct).

use std::fmt;
use std::sync::Arc;

use arrow::compute::filter_record_batch;
use arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet, Time,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::KeyFilter;
use crate::config::SquallConfig;

/// Rows a partition checks before it may give up on an unselective filter.
pub const CHECK_ROWS: usize = 100_000;

/// What a bound [`KeyFilterExec`] applies.
#[derive(Debug, Clone)]
pub enum BoundFilter {
    Filter(Arc<KeyFilter>),
    /// The publishing stage made no filter (e.g. too many keys): pass every row.
    PassAll(String),
}

/// Keeps only rows whose key may be among the keys stage `source_stage` published.
#[derive(Debug)]
pub struct KeyFilterExec {
    input: Arc<dyn ExecutionPlan>,
    source_stage: u32,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    filter: Option<BoundFilter>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl KeyFilterExec {
    pub fn new(
        input: Arc<dyn ExecutionPlan>,
        source_stage: u32,
        keys: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Self {
        // Dropping rows keeps the input's partitioning, ordering and equivalences.
        let properties = Arc::clone(input.properties());
        Self {
            input,
            source_stage,
            keys,
            filter: None,
            metrics: ExecutionPlanMetricsSet::new(),
            properties,
        }
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    pub fn source_stage(&self) -> u32 {
        self.source_stage
    }

    pub fn keys(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.keys
    }

    /// This node with its filter bound.
    pub fn bind(&self, filter: BoundFilter) -> Self {
        let mut node = Self::new(
            Arc::clone(&self.input),
            self.source_stage,
            self.keys.clone(),
        );
        node.filter = Some(filter);
        node
    }
}

impl DisplayAs for KeyFilterExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let keys: Vec<String> = self.keys.iter().map(|e| e.to_string()).collect();
        write!(
            f,
            "KeyFilterExec: keys=[{}] in filter of s{}",
            keys.join(", "),
            self.source_stage
        )?;
        match &self.filter {
            Some(BoundFilter::Filter(k)) => write!(f, " ({}, {} keys)", k.kind(), k.keys()),
            Some(BoundFilter::PassAll(why)) => write!(f, " (none: {why})"),
            None => Ok(()),
        }
    }
}

impl ExecutionPlan for KeyFilterExec {
    fn name(&self) -> &str {
        "KeyFilterExec"
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
        for e in &self.keys {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "KeyFilterExec takes one child".into(),
            ));
        }
        let mut node = Self::new(children.remove(0), self.source_stage, self.keys.clone());
        node.filter = self.filter.clone();
        Ok(Arc::new(node))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let filter = match &self.filter {
            Some(BoundFilter::Filter(f)) => Arc::clone(f),
            Some(BoundFilter::PassAll(_)) => return self.input.execute(partition, context),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "the key filter of stage s{} was not bound to this task",
                    self.source_stage
                )));
            }
        };
        let min_drop = SquallConfig::from_session(context.session_config())
            .bloom
            .min_drop_ratio;
        let input = self.input.execute(partition, context)?;
        let schema = input.schema();
        let dropped = MetricBuilder::new(&self.metrics).counter("rows_dropped", partition);
        let checked = MetricBuilder::new(&self.metrics).counter("rows_checked", partition);
        let time = MetricBuilder::new(&self.metrics).elapsed_compute(partition);
        let mut state = FilterState {
            filter,
            keys: self.keys.clone(),
            scratch: Vec::new(),
            min_drop,
            seen: 0,
            dropped_here: 0,
            active: true,
            dropped,
            checked,
            time,
        };
        let stream = input.map(move |batch| batch.and_then(|b| state.apply(b)));
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

struct FilterState {
    filter: Arc<KeyFilter>,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    scratch: Vec<u64>,
    min_drop: f64,
    seen: usize,
    dropped_here: usize,
    active: bool,
    dropped: Count,
    checked: Count,
    time: Time,
}

impl FilterState {
    fn apply(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        if !self.active || batch.num_rows() == 0 {
            return Ok(batch);
        }
        let _timer = self.time.timer();
        let rows = batch.num_rows();
        let arrays = self
            .keys
            .iter()
            .map(|k| k.evaluate(&batch).and_then(|v| v.into_array(rows)))
            .collect::<Result<Vec<_>>>()?;
        let mask = self.filter.evaluate(&arrays, &mut self.scratch)?;
        let kept = mask.true_count();
        self.seen += rows;
        self.dropped_here += rows - kept;
        self.checked.add(rows);
        self.dropped.add(rows - kept);
        if self.seen >= CHECK_ROWS && (self.dropped_here as f64) < self.min_drop * self.seen as f64
        {
            self.active = false;
        }
        if kept == rows {
            return Ok(batch);
        }
        Ok(filter_record_batch(&batch, &mask)?)
    }
}
