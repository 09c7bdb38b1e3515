//! [`ShuffleWriteExec`]: the root of every stage plan.
//!
//! It runs all partitions of its input concurrently and routes every row to
//! an output partition: by hash (or range) of the exchange keys, or — in
//! passthrough mode, used for gathers, broadcasts and the final result — to
//! the output partition with the same index as the input partition. All
//! output partitions go into ONE exchange object (see [`crate::exchange`]).
//!
//! ```text
//!  input partitions ──rows──> SpillingOutput (spill.rs)
//!                               MapObjectBuilder: a coalescer and an IPC stream per output partition
//!                               ── over squall.shuffle.spill_threshold_bytes, or refused by the
//!                                  memory pool ──> local spill file (the runtime's DiskManager)
//!  input exhausted ──> upload (upload.rs): one PUT, or when it spilled a multipart
//!                      upload in partition order (spilled segments read back, then the tails)
//! ```
//!
//! A combine task of a two-level exchange (a hash writer over a hash read
//! whose binding lays out each partition) regroups its input's bytes by
//! partition instead (regroup.rs): no decoding, no hashing.
//!
//! The memory the output holds (encoded bytes and rows waiting in the
//! coalescers) is reserved in the task's memory pool, so a task's output is
//! bounded by its memory limit and the spill threshold, not by its size.

use std::fmt;
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::repartition::BatchPartitioner;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;
use object_store::path::Path;

use crate::config::SquallConfig;
use crate::error::external;
use crate::exchange::{Compression, MapObjectBuilder, byte_split};
use crate::exec::{ReadMode, ShuffleReadExec};
use crate::key_filter::KeyCollector;
use crate::task::{InputBinding, KeySection, MapOutput, ObjectLocation};

mod regroup;
mod spill;
mod upload;

#[cfg(test)]
mod tests;

use spill::SpillingOutput;
use upload::{
    MAX_PUT_BYTES, MIN_PART_BYTES, ObjectBytes, Piece, UploadOptions, reserve_parts, upload,
};

/// Root of a stage plan: writes the stage's output to one exchange object.
#[derive(Debug)]
pub struct ShuffleWriteExec {
    input: Arc<dyn ExecutionPlan>,
    /// `Some(hash or range)` for a shuffle, `None` for passthrough.
    partitioning: Option<Partitioning>,
    /// Where to write; bound by the worker for each attempt.
    output: Option<ObjectLocation>,
    /// Join keys (over the input) whose distinct hashes this stage publishes
    /// for a key filter (see [`crate::key_filter`]).
    publish_keys: Option<Vec<Arc<dyn PhysicalExpr>>>,
    metrics: ExecutionPlanMetricsSet,
    properties: Arc<PlanProperties>,
}

impl ShuffleWriteExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, partitioning: Option<Partitioning>) -> Self {
        let schema = summary_schema();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input,
            partitioning,
            output: None,
            publish_keys: None,
            metrics: ExecutionPlanMetricsSet::new(),
            properties: Arc::new(properties),
        }
    }

    /// Also collect the distinct hashes of `keys` and store them after the
    /// partitions, for the coordinator to merge into a key filter.
    pub fn with_published_keys(mut self, keys: Option<Vec<Arc<dyn PhysicalExpr>>>) -> Self {
        self.publish_keys = keys;
        self
    }

    pub fn published_keys(&self) -> Option<&[Arc<dyn PhysicalExpr>]> {
        self.publish_keys.as_deref()
    }

    /// The same writer over another input (a task's bound plan).
    pub fn with_input(&self, input: Arc<dyn ExecutionPlan>) -> Self {
        let mut node = Self::new(input, self.partitioning.clone());
        node.output = self.output.clone();
        node.publish_keys = self.publish_keys.clone();
        node
    }

    pub fn with_output(mut self, output: ObjectLocation) -> Self {
        self.output = Some(output);
        self
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }

    pub fn partitioning(&self) -> Option<&Partitioning> {
        self.partitioning.as_ref()
    }

    pub fn output(&self) -> Option<&ObjectLocation> {
        self.output.as_ref()
    }

    /// Number of output partitions this writer produces.
    pub fn output_partition_count(&self) -> usize {
        match &self.partitioning {
            Some(p) => p.partition_count(),
            None => self.input.output_partitioning().partition_count(),
        }
    }

    /// The binding of a combine task's read, when this writer regroups its
    /// input's bytes by partition ([`regroup`]): a hash writer over a hash
    /// read of the same partition count whose binding says where each
    /// partition lies.
    fn regroup_binding(&self) -> Option<(&InputBinding, usize)> {
        let Some(Partitioning::Hash(_, n)) = &self.partitioning else {
            return None;
        };
        let read = self.input.downcast_ref::<ShuffleReadExec>()?;
        let binding = read.binding()?;
        (self.publish_keys.is_none()
            && read.mode() == ReadMode::Hash
            && read.planned_partitioning().partition_count() == *n
            && regroup::applies(binding, *n))
        .then_some((binding, *n))
    }

    /// A combine task's write: its input's bytes regrouped by partition.
    async fn write_regrouped(
        &self,
        binding: &InputBinding,
        partitions: usize,
        ctx: &Arc<TaskContext>,
        squall: &SquallConfig,
        output: ObjectLocation,
    ) -> Result<MapOutput> {
        let (regrouped, gets) = regroup::fetch_and_regroup(
            binding,
            partitions,
            ctx,
            &output.key,
            squall.shuffle.fetch_concurrency,
            squall.shuffle.fetch_budget_bytes,
        )
        .await?;
        let mut object = ObjectBytes::new(None);
        for piece in regrouped.pieces {
            object.push(piece);
        }
        let bytes = object.len();
        let store = ctx
            .runtime_env()
            .object_store(ObjectStoreUrl::parse(&output.store_url)?)?;
        let options = UploadOptions {
            max_put_bytes: MAX_PUT_BYTES,
            part_bytes: squall.shuffle.upload_part_bytes.max(MIN_PART_BYTES),
            concurrency: squall.shuffle.upload_concurrency,
        };
        let requests = if bytes > 0 {
            upload(&store, &Path::from(output.key.as_str()), object, options)
                .await
                .map_err(DataFusionError::from)?
        } else {
            0
        };
        drop(regrouped.reservation);
        MetricBuilder::new(&self.metrics)
            .output_rows(0)
            .add(regrouped.rows as usize);
        for (name, n) in [
            ("put_requests", requests as usize),
            ("bytes_written", bytes as usize),
            ("get_requests", gets),
        ] {
            MetricBuilder::new(&self.metrics)
                .global_counter(name)
                .add(n);
        }
        Ok(MapOutput {
            key: output.key,
            partitions: regrouped.partitions,
            keys: None,
        })
    }

    /// Run the input to completion and write the exchange object.
    pub async fn write(&self, ctx: Arc<TaskContext>) -> Result<MapOutput> {
        let output = self.output.clone().ok_or_else(|| {
            DataFusionError::Internal("ShuffleWriteExec has no output location bound".into())
        })?;
        let squall = SquallConfig::from_session(ctx.session_config());
        if let Some((binding, partitions)) = self.regroup_binding() {
            return self
                .write_regrouped(binding, partitions, &ctx, &squall, output)
                .await;
        }
        let compression: Compression = squall.shuffle.compression.parse()?;
        let batch_rows = ctx.session_config().batch_size();
        let inputs = self.input.output_partitioning().partition_count();
        let outputs = self.output_partition_count();
        let builder = MapObjectBuilder::new(self.input.schema(), outputs, compression, batch_rows)?
            .with_coalesce_bytes(coalesce_budget(
                squall.resolved_coalesce_bytes(),
                ctx.memory_pool().memory_limit(),
            ))
            .with_byte_split(byte_split(&squall.shuffle));
        // The output is held in memory until it spills or is written: account for it.
        let reservation = MemoryConsumer::new(format!("ShuffleWriteExec[{}]", output.key))
            .register(ctx.memory_pool());
        let sink = Arc::new(Mutex::new(SpillingOutput::new(
            builder,
            reservation,
            squall.shuffle.spill_threshold_bytes,
            Arc::clone(&ctx.runtime_env().disk_manager),
            output.key.clone(),
        )));
        let rows_written = MetricBuilder::new(&self.metrics).output_rows(0);
        let repart_time = MetricBuilder::new(&self.metrics).subset_time("repart_time", 0);

        // One task per input partition. A JoinSet aborts them all when the
        // write is dropped (a stopped task), so no partition runs on alone.
        let mut partitions_running = tokio::task::JoinSet::new();
        for i in 0..inputs {
            let mut stream = self.input.execute(i, Arc::clone(&ctx))?;
            let mut partitioner = match &self.partitioning {
                Some(p) => Some(BatchPartitioner::try_new(
                    p.clone(),
                    repart_time.clone(),
                    i,
                    inputs,
                )?),
                None => None,
            };
            let sink = Arc::clone(&sink);
            let rows_written = rows_written.clone();
            let publish = self.publish_keys.clone();
            let max_keys = squall.bloom.max_keys;
            let pool = Arc::clone(ctx.memory_pool());
            partitions_running.spawn(async move {
                // The keys' memory counts in the task's pool: refused, the
                // collector gives up and the filter is skipped.
                let mut collector = publish.as_ref().map(|k| {
                    KeyCollector::new(max_keys, k.len()).with_reservation(
                        MemoryConsumer::new(format!("ShuffleWriteExec key collector {i}"))
                            .register(&pool),
                    )
                });
                while let Some(batch) = stream.next().await {
                    let batch = batch?;
                    rows_written.add(batch.num_rows());
                    if let (Some(c), Some(keys)) = (collector.as_mut(), publish.as_ref()) {
                        let arrays = keys
                            .iter()
                            .map(|k| {
                                k.evaluate(&batch)
                                    .and_then(|v| v.into_array(batch.num_rows()))
                            })
                            .collect::<Result<Vec<_>>>()?;
                        c.insert(&arrays)?;
                    }
                    let push = |part: usize, b: RecordBatch| -> Result<()> {
                        sink.lock().map_err(external)?.push(part, b)
                    };
                    match partitioner.as_mut() {
                        Some(p) => p.partition(batch, push)?,
                        None => push(i, batch)?,
                    }
                }
                Ok::<Option<KeyCollector>, DataFusionError>(collector)
            });
        }
        let mut keys: Option<KeyCollector> = None;
        while let Some(joined) = partitions_running.join_next().await {
            if let Some(c) = joined.map_err(external)?? {
                match keys.as_mut() {
                    Some(k) => k.absorb(c),
                    None => keys = Some(c),
                }
            }
        }
        let sink = Arc::try_unwrap(sink)
            .map_err(|_| DataFusionError::Internal("shuffle writer still shared".into()))?
            .into_inner()
            .map_err(external)?;
        let spilled = sink.stats();
        // The reservation stays until the tails it accounts for are written.
        let (mut object, partitions, _reservation) = sink.finish()?;
        let mut key_section = None;
        if self.publish_keys.is_some() {
            let columns = self.publish_keys.as_ref().map_or(0, |k| k.len());
            let collector =
                keys.unwrap_or_else(|| KeyCollector::new(squall.bloom.max_keys, columns));
            let overflow = collector.overflowed();
            let section = collector.finish().map_err(DataFusionError::from)?;
            key_section = Some(KeySection {
                offset: object.len(),
                len: section.len() as u64,
                overflow,
            });
            object.push(Piece::Memory(bytes::Bytes::from(section)));
        }
        let bytes = object.len();
        if !object.is_empty() {
            let url = ObjectStoreUrl::parse(&output.store_url)?;
            let store = ctx.runtime_env().object_store(url)?;
            let part_bytes = squall.shuffle.upload_part_bytes.max(MIN_PART_BYTES);
            // A multipart upload's part buffers are reserved while it runs.
            let mut parts = MemoryConsumer::new(format!("ShuffleWriteExec[{}] upload", output.key))
                .register(ctx.memory_pool());
            let concurrency = if object.spilled() {
                reserve_parts(&mut parts, part_bytes, squall.shuffle.upload_concurrency)
            } else {
                squall.shuffle.upload_concurrency
            };
            let options = UploadOptions {
                max_put_bytes: MAX_PUT_BYTES,
                part_bytes,
                concurrency,
            };
            let requests = upload(&store, &Path::from(output.key.as_str()), object, options)
                .await
                .map_err(DataFusionError::from)?;
            drop(parts);
            MetricBuilder::new(&self.metrics)
                .global_counter("put_requests")
                .add(requests as usize);
        }
        MetricBuilder::new(&self.metrics)
            .global_counter("bytes_written")
            .add(bytes as usize);
        MetricBuilder::new(&self.metrics)
            .global_counter("spills")
            .add(spilled.spills);
        MetricBuilder::new(&self.metrics)
            .global_counter("spill_bytes")
            .add(spilled.bytes as usize);
        if spilled.spills > 0 {
            tracing::info!(
                key = %output.key,
                spills = spilled.spills,
                spill_bytes = spilled.bytes,
                object_bytes = bytes,
                "map output spilled to local disk"
            );
        }
        Ok(MapOutput {
            key: output.key,
            partitions,
            keys: key_section,
        })
    }
}

/// The coalescers' budget: the setting, and at most a quarter of the
/// task's memory limit (coalescers that fill the limit would make the
/// output spill after every push, in ever shorter batches).
fn coalesce_budget(setting: usize, limit: MemoryLimit) -> usize {
    match limit {
        MemoryLimit::Finite(limit) if setting > 0 => setting.min((limit / 4).max(1)),
        _ => setting,
    }
}

fn summary_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::UInt64, false),
        Field::new("offset", DataType::UInt64, false),
        Field::new("len", DataType::UInt64, false),
        Field::new("rows", DataType::UInt64, false),
    ]))
}

impl DisplayAs for ShuffleWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match &self.partitioning {
            Some(Partitioning::Hash(exprs, n)) => {
                let keys: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
                write!(
                    f,
                    "ShuffleWriteExec: hash=[{}], partitions={n}",
                    keys.join(", ")
                )?;
            }
            Some(p) => write!(f, "ShuffleWriteExec: partitioning={p}")?,
            None => write!(f, "ShuffleWriteExec: passthrough")?,
        }
        if let Some(keys) = &self.publish_keys {
            let keys: Vec<String> = keys.iter().map(|e| e.to_string()).collect();
            write!(f, ", publishes key filter on [{}]", keys.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for ShuffleWriteExec {
    fn name(&self) -> &str {
        "ShuffleWriteExec"
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
        if let Some(Partitioning::Hash(exprs, _)) = &self.partitioning {
            for e in exprs {
                if f(e)? == TreeNodeRecursion::Stop {
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        for e in self.publish_keys.iter().flatten() {
            if f(e)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "ShuffleWriteExec takes one child".into(),
            ));
        }
        let input = children.remove(0);
        Ok(Arc::new(self.with_input(input)))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    /// Writes the object, then yields one summary row per output partition.
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "ShuffleWriteExec has one partition, asked for {partition}"
            )));
        }
        let this = Self {
            input: Arc::clone(&self.input),
            partitioning: self.partitioning.clone(),
            output: self.output.clone(),
            publish_keys: self.publish_keys.clone(),
            metrics: self.metrics.clone(),
            properties: Arc::clone(&self.properties),
        };
        let schema = summary_schema();
        let out_schema = Arc::clone(&schema);
        let fut = async move {
            let out = this.write(context).await?;
            let col = |f: &dyn Fn(usize) -> u64| -> ArrayRef {
                Arc::new(UInt64Array::from_iter_values(
                    (0..out.partitions.len()).map(f),
                ))
            };
            let batch = RecordBatch::try_new(
                out_schema,
                vec![
                    col(&|i| i as u64),
                    col(&|i| out.partitions[i].offset),
                    col(&|i| out.partitions[i].len),
                    col(&|i| out.partitions[i].rows),
                ],
            )?;
            Ok(batch)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(fut),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
