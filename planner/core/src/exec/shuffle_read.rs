//! [`ShuffleReadExec`]: a stage-plan leaf that reads an upstream stage's output.
//!
//! A read starts *unresolved*: it knows the upstream stage, the schema, and
//! how it reads (its [`ReadMode`]). The worker *binds* it to the accepted map
//! outputs of that stage ([`InputBinding`]): output partition `i` of the
//! bound node streams the byte ranges `binding.partitions[i]`, fetched with
//! ranged GETs (a few in flight) and decoded as Arrow IPC.
//!
//! - [`ReadMode::Hash`]: the task's hash partition(s) of a shuffle.
//! - [`ReadMode::Gather`]: every partition of every map output, each its own
//!   partition (under a `CoalescePartitionsExec` / `SortPreservingMergeExec`).
//! - [`ReadMode::Broadcast`]: everything, concatenated into one partition (the
//!   build side of a join, replicated to every task of the probe stage).
//!
//! A read reports the properties of the node it replaced as far as its mode
//! keeps them ([`ReadMode::keeps`], [`BoundaryProperties`]): the operators
//! above it were planned against those, and a worker rebuilds them against
//! the read.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::coop::make_cooperative;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, SchedulingType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use object_store::path::Path;

use super::boundary::{BoundaryProperties, Keeps};
use crate::config::SquallConfig;
use crate::exchange::{byte_split, decode_partition, stream_header};
use crate::task::{InputBinding, ObjectRange};

/// How a read maps upstream partitions to its own output partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    Hash,
    Gather,
    Broadcast,
}

impl ReadMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hash => "hash",
            Self::Gather => "gather",
            Self::Broadcast => "broadcast",
        }
    }

    /// What a read in this mode keeps of the properties of an input with
    /// `input_partitions` partitions (see [`BoundaryProperties`]).
    pub fn keeps(self, input_partitions: usize) -> Keeps {
        Keeps {
            // Only a gather reads each upstream partition (of one map
            // output) as a partition of its own, in order; a hash read
            // concatenates the map outputs of every upstream task, a
            // broadcast concatenates everything.
            orderings: self == Self::Gather,
            // A constant of each input partition is a constant of every
            // output partition only if there was one input partition (then
            // it is a constant of all rows); a read's partitions mix rows of
            // several input partitions, or of parts of them.
            partition_constants: input_partitions <= 1,
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "hash" => Some(Self::Hash),
            "gather" => Some(Self::Gather),
            "broadcast" => Some(Self::Broadcast),
            _ => None,
        }
    }
}

/// Leaf of a stage plan reading another stage's exchange objects.
#[derive(Debug)]
pub struct ShuffleReadExec {
    stage: u32,
    mode: ReadMode,
    schema: SchemaRef,
    /// The partitioning the upstream writer produced, as planned
    /// (`Hash(keys, R)` for a shuffle; `UnknownPartitioning(n)` otherwise).
    planned: Partitioning,
    /// What the read reports about its rows (orderings, equivalences,
    /// constants, constraints): those of the node it replaced, as far as
    /// the exchange keeps them.
    carried: BoundaryProperties,
    binding: Option<InputBinding>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl ShuffleReadExec {
    /// An unresolved read. Fails when `carried` names columns `schema` does not have.
    pub fn try_new(
        stage: u32,
        mode: ReadMode,
        schema: SchemaRef,
        planned: Partitioning,
        carried: BoundaryProperties,
    ) -> Result<Self> {
        let eq = carried.equivalence_properties(&schema)?;
        // Its stream spends tokio's cooperative budget (as DataFusion's own
        // leaves do), so the plan above it yields every few batches even
        // when every range is already in memory.
        let properties = PlanProperties::new(
            eq,
            Self::partitioning(mode, &planned, None),
            EmissionType::Incremental,
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative);
        Ok(Self {
            stage,
            mode,
            schema,
            planned,
            carried,
            binding: None,
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::new(properties),
        })
    }

    /// The same read, bound to concrete byte ranges.
    pub fn bind(&self, binding: InputBinding) -> Self {
        let partitioning =
            Self::partitioning(self.mode, &self.planned, Some(binding.partitions.len()));
        let properties = self
            .properties
            .as_ref()
            .clone()
            .with_partitioning(partitioning);
        Self {
            stage: self.stage,
            mode: self.mode,
            schema: Arc::clone(&self.schema),
            planned: self.planned.clone(),
            carried: self.carried.clone(),
            binding: Some(binding),
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::new(properties),
        }
    }

    /// The read's output partitioning: as planned, or (once bound) one
    /// partition per bound list of ranges.
    fn partitioning(mode: ReadMode, planned: &Partitioning, bound: Option<usize>) -> Partitioning {
        match (mode, bound) {
            (ReadMode::Broadcast, _) => Partitioning::UnknownPartitioning(1),
            (ReadMode::Hash, Some(n)) => match planned {
                Partitioning::Hash(exprs, _) => Partitioning::Hash(exprs.clone(), n),
                _ => Partitioning::UnknownPartitioning(n),
            },
            (ReadMode::Hash, None) => planned.clone(),
            (ReadMode::Gather, Some(n)) => Partitioning::UnknownPartitioning(n),
            (ReadMode::Gather, None) => {
                Partitioning::UnknownPartitioning(planned.partition_count().max(1))
            }
        }
    }

    pub fn stage(&self) -> u32 {
        self.stage
    }

    pub fn mode(&self) -> ReadMode {
        self.mode
    }

    pub fn planned_partitioning(&self) -> &Partitioning {
        &self.planned
    }

    /// The properties the read carries across its exchange.
    pub fn carried(&self) -> &BoundaryProperties {
        &self.carried
    }

    pub fn binding(&self) -> Option<&InputBinding> {
        self.binding.as_ref()
    }
}

impl DisplayAs for ShuffleReadExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "ShuffleReadExec: stage={}, mode={}",
            self.stage,
            self.mode.as_str()
        )?;
        match (&self.binding, &self.planned) {
            (Some(b), _) => write!(f, ", partitions={}", b.partitions.len()),
            (None, Partitioning::Hash(exprs, n)) => {
                let keys: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
                write!(f, ", hash=[{}], partitions={n}", keys.join(", "))
            }
            (None, _) => Ok(()),
        }?;
        if matches!(t, DisplayFormatType::Verbose) && !self.carried.is_empty() {
            write!(f, ", carries: {}", self.carried)?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ShuffleReadExec {
    fn name(&self) -> &str {
        "ShuffleReadExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let binding = self.binding.as_ref().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "ShuffleReadExec of stage {} executed before it was bound to map outputs",
                self.stage
            ))
        })?;
        let ranges: Vec<ObjectRange> = match self.mode {
            ReadMode::Broadcast => binding.partitions.iter().flatten().cloned().collect(),
            _ => binding.partitions.get(partition).cloned().ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "ShuffleReadExec of stage {}: partition {partition} not bound ({} bound)",
                    self.stage,
                    binding.partitions.len()
                ))
            })?,
        };
        let store = context
            .runtime_env()
            .object_store(ObjectStoreUrl::parse(&binding.store_url)?)?;
        let shuffle = SquallConfig::from_session(context.session_config()).shuffle;
        let concurrency = fetches_in_flight(
            &ranges,
            shuffle.fetch_concurrency,
            shuffle.fetch_budget_bytes,
            self.properties.partitioning.partition_count(),
        );
        let gets = MetricBuilder::new(&self.metrics).global_counter("get_requests");
        let fetched = MetricBuilder::new(&self.metrics).global_counter("bytes_fetched");
        let rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let stage = self.stage;
        let header: Arc<[u8]> = stream_header(&self.schema)?.into();
        let split = byte_split(&shuffle);
        let batches = futures::stream::iter(ranges.into_iter().filter(|r| r.len > 0))
            .map(move |r| {
                let store = Arc::clone(&store);
                let header = Arc::clone(&header);
                let (gets, fetched, rows) = (gets.clone(), fetched.clone(), rows.clone());
                async move {
                    // A range no map task reports (past the end of u64) is an
                    // error of the task's payload, not a panic.
                    let end = r.offset.checked_add(r.len).ok_or_else(|| {
                        read_error(stage, &r, "the byte range overflows".to_string())
                    })?;
                    let bytes = store
                        .get_range(&Path::from(r.key.as_str()), r.offset..end)
                        .await
                        .map_err(|e| read_error(stage, &r, e))?;
                    gets.add(1);
                    fetched.add(bytes.len());
                    let batches = decode_partition(bytes, &header, split)
                        .map_err(|e| read_error(stage, &r, e))?;
                    let got: usize = batches.iter().map(|b| b.num_rows()).sum();
                    if got as u64 != r.rows {
                        return Err(read_error(
                            stage,
                            &r,
                            format!("decoded {got} rows, the map task reported {}", r.rows),
                        ));
                    }
                    rows.add(got);
                    Ok(futures::stream::iter(batches.into_iter().map(Ok)))
                }
            })
            .buffered(concurrency)
            .try_flatten();
        Ok(make_cooperative(Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        ))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

fn read_error(stage: u32, r: &ObjectRange, e: impl fmt::Display) -> DataFusionError {
    DataFusionError::External(
        format!(
            "reading stage {stage} output {} ({} bytes at {}): {e}",
            r.key, r.len, r.offset
        )
        .into(),
    )
}

/// Most GETs one read keeps in flight however small its ranges, over all
/// its partitions: each GET in flight holds an HTTP/1.1 connection, and a
/// Lambda function has 1,024 file descriptors, so a task reading five
/// inputs of tiny ranges at once still stays well inside them.
pub const MAX_FETCHES_IN_FLIGHT: usize = 128;

/// How many of `ranges` one of a read's `streams` partitions fetches at
/// once: `concurrency`, or more when the largest range is small enough that
/// more of them fit in `budget` bytes, up to its share of
/// [`MAX_FETCHES_IN_FLIGHT`]. The bytes in flight stay within the larger of
/// `concurrency` times the largest range (what the count alone allows) and
/// `budget`.
pub fn fetches_in_flight(
    ranges: &[ObjectRange],
    concurrency: usize,
    budget: usize,
    streams: usize,
) -> usize {
    let concurrency = concurrency.max(1);
    let largest = ranges.iter().map(|r| r.len).max().unwrap_or(0).max(1);
    let by_bytes = usize::try_from(budget as u64 / largest).unwrap_or(usize::MAX);
    let share = MAX_FETCHES_IN_FLIGHT / streams.max(1);
    concurrency.max(by_bytes.min(share).min(ranges.len()))
}

#[cfg(test)]
#[path = "shuffle_read/tests.rs"]
mod tests;
