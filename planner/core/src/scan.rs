//! Binding a task's work into its stage plan.
//!
//! A stage plan is shared by all tasks of the stage; what differs per task is
//! which row groups its Parquet scans read and which byte ranges its shuffle
//! reads fetch. [`bind_task`] rewrites the decoded plan's leaves with the
//! task's [`ScanAssignment`]s and [`InputBinding`]s: every scan gets file
//! groups whose files carry a `ParquetAccessPlan` selecting exactly the
//! assigned row groups (DataFusion then reads only those, with projection and
//! predicate pushdown as planned).
//!
//! Leaves are matched in the order of [`leaves`]: depth first, children left
//! to right. The planner uses the same function when it makes assignments.

use std::sync::Arc;

use arrow::datatypes::DataType;
use arrow::temporal_conversions::timestamp_ns_to_datetime;
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};

use crate::exec::ShuffleReadExec;
use crate::read_ahead::ReadAheadFactory;
use crate::task::{FileRowGroups, InputBinding, ScanAssignment};

/// A leaf of a stage plan, as far as task binding is concerned.
pub enum Leaf<'a> {
    /// A Parquet scan (`DataSourceExec` over `ParquetSource`).
    ParquetScan(&'a DataSourceExec),
    ShuffleRead(&'a ShuffleReadExec),
    /// Anything else (values, memory, placeholder, empty, ...).
    Other(&'a Arc<dyn ExecutionPlan>),
}

/// The leaves of `plan` in binding order.
pub fn leaves(plan: &Arc<dyn ExecutionPlan>) -> Vec<Leaf<'_>> {
    let mut out = Vec::new();
    collect_leaves(plan, &mut out);
    out
}

fn collect_leaves<'a>(plan: &'a Arc<dyn ExecutionPlan>, out: &mut Vec<Leaf<'a>>) {
    if let Some(read) = plan.downcast_ref::<ShuffleReadExec>() {
        out.push(Leaf::ShuffleRead(read));
        return;
    }
    if let Some(scan) = as_parquet_scan(plan) {
        out.push(Leaf::ParquetScan(scan));
        return;
    }
    let children = plan.children();
    if children.is_empty() {
        out.push(Leaf::Other(plan));
    }
    for child in children {
        collect_leaves(child, out);
    }
}

/// `Some` when `plan` is a Parquet file scan.
pub fn as_parquet_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&DataSourceExec> {
    let dse = plan.downcast_ref::<DataSourceExec>()?;
    dse.downcast_to_file_source::<ParquetSource>().map(|_| dse)
}

/// How a task's scans read: partitions (threads) per scan, and read-ahead.
#[derive(Clone)]
pub struct ScanReading {
    /// Partitions (threads) each scan reads its row groups with.
    pub task_partitions: usize,
    /// Read-ahead window bytes (0 = none) and windows in flight.
    pub read_ahead_bytes: u64,
    pub read_ahead_windows: usize,
    /// Where the scans' object stores are found (read-ahead reads them itself).
    pub runtime: Option<Arc<RuntimeEnv>>,
}

impl ScanReading {
    /// One partition per scan, no read-ahead.
    pub fn plain() -> Self {
        Self {
            task_partitions: 1,
            read_ahead_bytes: 0,
            read_ahead_windows: 0,
            runtime: None,
        }
    }
}

/// Bind scans and reads of `plan` for one task, its scans reading as `reading` says.
pub fn bind_task(
    plan: Arc<dyn ExecutionPlan>,
    scans: &[ScanAssignment],
    inputs: &[InputBinding],
    reading: &ScanReading,
) -> Result<Arc<dyn ExecutionPlan>> {
    let mut state = BindState {
        scans,
        inputs,
        next_scan: 0,
        reads_bound: Vec::new(),
        reading,
    };
    let bound = state.bind(plan)?;
    if state.next_scan != scans.len() {
        return Err(DataFusionError::Internal(format!(
            "task has {} scan assignments but its plan has {} Parquet scans",
            scans.len(),
            state.next_scan
        )));
    }
    Ok(bound)
}

struct BindState<'a> {
    scans: &'a [ScanAssignment],
    inputs: &'a [InputBinding],
    next_scan: usize,
    /// Reads bound so far, by the stage they read.
    reads_bound: Vec<u32>,
    reading: &'a ScanReading,
}

impl BindState<'_> {
    /// How many reads of `stage` were bound before this one, which it records.
    fn reads_of(&mut self, stage: u32) -> usize {
        let before = self.reads_bound.iter().filter(|s| **s == stage).count();
        self.reads_bound.push(stage);
        before
    }

    fn bind(&mut self, plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(read) = plan.downcast_ref::<ShuffleReadExec>() {
            // Bindings come in the order of the plan's reads, one per read:
            // two reads of one stage (a stage run once for two identical
            // ones, read by a hash join on one side and broadcast on the
            // other) take theirs in turn.
            let matching = |b: &&InputBinding| b.stage == read.stage();
            let nth = self.reads_of(read.stage());
            let binding = self
                .inputs
                .iter()
                .filter(matching)
                .nth(nth)
                .or_else(|| self.inputs.iter().find(matching))
                .ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "no input binding for the read of stage {}",
                        read.stage()
                    ))
                })?;
            return Ok(Arc::new(read.bind(binding.clone())));
        }
        if let Some(scan) = as_parquet_scan(&plan) {
            let assignment = self.scans.get(self.next_scan).ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "no scan assignment for Parquet scan #{}",
                    self.next_scan
                ))
            })?;
            self.next_scan += 1;
            return bind_scan(scan, assignment, self.reading);
        }
        let children: Vec<Arc<dyn ExecutionPlan>> = plan.children().into_iter().cloned().collect();
        if children.is_empty() {
            return Ok(plan);
        }
        let new_children = children
            .into_iter()
            .map(|c| self.bind(c))
            .collect::<Result<Vec<_>>>()?;
        plan.replace_children(
            new_children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }
}

fn bind_scan(
    scan: &DataSourceExec,
    assignment: &ScanAssignment,
    reading: &ScanReading,
) -> Result<Arc<dyn ExecutionPlan>> {
    let task_partitions = reading.task_partitions.max(1);
    let (config, source) = scan
        .downcast_to_file_source::<ParquetSource>()
        .ok_or_else(|| DataFusionError::Internal("not a Parquet scan".into()))?;
    // A scan DataFusion planned as one partition must stay one partition:
    // the operators above it may rely on seeing all of its rows together.
    let planned = ExecutionPlan::properties(scan)
        .partitioning
        .partition_count();
    let partitions = match (planned, assignment.partitions) {
        (0 | 1, _) => 1,
        (_, 0) => task_partitions,
        (_, n) => n,
    };
    let partition_cols = config.table_partition_cols();
    for file in &assignment.files {
        check_row_groups(file)?;
        if file.partition_values.len() != partition_cols.len() {
            return Err(bad_payload(
                file,
                format!(
                    "{} partition values for a table partitioned by {} columns",
                    file.partition_values.len(),
                    partition_cols.len()
                ),
            ));
        }
    }
    let types: Vec<&DataType> = partition_cols.iter().map(|f| f.data_type()).collect();
    let groups = file_groups(&assignment.files, partitions, &types)?;
    // A column a file names in another case is read from it (the plan
    // codec does not carry the planner's adapter).
    let mut builder = FileScanConfigBuilder::from(config.clone())
        .with_file_groups(groups)
        .with_expr_adapter(Some(Arc::new(crate::case_blind::CaseBlindAdapterFactory)));
    if let (Some(runtime), true) = (&reading.runtime, reading.read_ahead_bytes > 0) {
        let store = runtime.object_store(&config.object_store_url)?;
        let factory = ReadAheadFactory::new(
            source.parquet_file_reader_factory().cloned(),
            store,
            reading.read_ahead_bytes,
            reading.read_ahead_windows,
        )
        .with_memory_pool(Arc::clone(&runtime.memory_pool));
        let source = source
            .clone()
            .with_parquet_file_reader_factory(Arc::new(factory));
        builder = builder.with_source(Arc::new(source));
    }
    let config = builder.build();
    Ok(DataSourceExec::from_data_source(config))
}

/// Refuses a file assignment no planner makes: more row groups than the
/// file has bytes, or a row group past the file's count (each would
/// otherwise panic in the access plan).
fn check_row_groups(file: &FileRowGroups) -> Result<()> {
    let bad = |why: String| bad_payload(file, why);
    if file.row_group_count as u64 > file.size.max(1) {
        return Err(bad(format!(
            "{} row groups in a file of {} bytes",
            file.row_group_count, file.size
        )));
    }
    if let Some(d) = file
        .deleted
        .iter()
        .find(|d| !file.row_groups.contains(&d.row_group))
    {
        return Err(bad(format!(
            "deleted rows of row group {}, which the task does not read",
            d.row_group
        )));
    }
    if let Some(rg) = file
        .row_groups
        .iter()
        .find(|&&rg| rg >= file.row_group_count)
    {
        return Err(bad(format!(
            "row group {rg} of a file with {} row groups",
            file.row_group_count
        )));
    }
    Ok(())
}

fn bad_payload(file: &FileRowGroups, why: String) -> DataFusionError {
    crate::error::SquallError::BadTaskPayload(format!("scan of {}: {why}", file.path)).into()
}

/// A file's partition values as the scan's partition columns' types.
fn partition_values(file: &FileRowGroups, types: &[&DataType]) -> Result<Vec<ScalarValue>> {
    file.partition_values
        .iter()
        .zip(types)
        .map(|(value, ty)| match value {
            Some(text) => ScalarValue::try_from_string(text.clone(), ty).map_err(|e| {
                bad_payload(file, format!("partition value {text:?} is not a {ty}: {e}"))
            }),
            None => ScalarValue::try_from(*ty),
        })
        .collect()
}

/// Spread the assigned row groups over up to `partitions` file groups,
/// contiguously; each (file, row groups) piece carries its access plan and
/// its partition values (of `types`).
fn file_groups(
    files: &[FileRowGroups],
    partitions: usize,
    types: &[&DataType],
) -> Result<Vec<FileGroup>> {
    let values = files
        .iter()
        .map(|f| partition_values(f, types))
        .collect::<Result<Vec<_>>>()?;
    let units: Vec<(usize, usize)> = files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.row_groups.iter().map(move |rg| (i, *rg)))
        .collect();
    if units.is_empty() {
        return Ok(vec![FileGroup::new(vec![])]);
    }
    let n = partitions.min(units.len());
    let per = units.len().div_ceil(n);
    units
        .chunks(per)
        .map(|chunk| {
            let mut pieces: Vec<PartitionedFile> = Vec::new();
            let mut i = 0;
            while i < chunk.len() {
                let index = chunk[i].0;
                let file = &files[index];
                let mut plan = ParquetAccessPlan::new_none(file.row_group_count);
                while i < chunk.len() && chunk[i].0 == index {
                    let rg = chunk[i].1;
                    plan.scan(rg);
                    if let Some(deleted) = file.deleted.iter().find(|d| d.row_group == rg) {
                        let kept = deleted.selection().map_err(|why| bad_payload(file, why))?;
                        plan.scan_selection(rg, kept);
                    }
                    i += 1;
                }
                let mut piece = PartitionedFile::new(file.path.clone(), file.size);
                // `path` is a location as the store lists it, already
                // percent-encoded (a Hive folder `ts=10%3A00` is listed as
                // `ts=10%253A00`): parsed, not encoded a second time.
                if let Ok(location) = object_store::path::Path::parse(&file.path) {
                    piece.object_meta.location = location;
                }
                if let Some(t) = timestamp_ns_to_datetime(file.last_modified_ns) {
                    piece.object_meta.last_modified = t.and_utc();
                }
                piece.partition_values.clone_from(&values[index]);
                pieces.push(piece.with_extension(plan));
            }
            Ok(FileGroup::new(pieces))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(path: &str, count: usize, rgs: &[usize]) -> FileRowGroups {
        FileRowGroups {
            path: path.into(),
            size: 100,
            last_modified_ns: 0,
            row_group_count: count,
            row_groups: rgs.to_vec(),
            partition_values: vec![],
            deleted: vec![],
        }
    }

    #[test]
    fn files_keep_their_listed_modification_time() {
        // With the size, it keys the worker's cache of footers: a file
        // rewritten in place must not be read with its old footer.
        let mut file = f("a", 2, &[0, 1]);
        file.last_modified_ns = 1_700_000_000_123_456_789;
        let groups = file_groups(&[file], 1, &[]).unwrap();
        let meta = &groups[0].files()[0].object_meta;
        assert_eq!(
            meta.last_modified.timestamp_nanos_opt(),
            Some(1_700_000_000_123_456_789)
        );
    }

    #[test]
    fn groups_are_contiguous_and_cover_everything() {
        let files = vec![f("a", 4, &[0, 2, 3]), f("b", 2, &[1])];
        let groups = file_groups(&files, 2, &[]).unwrap();
        assert_eq!(groups.len(), 2);
        let paths: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                g.files()
                    .iter()
                    .map(|p| p.object_meta.location.to_string())
                    .collect()
            })
            .collect();
        assert_eq!(
            paths,
            vec![
                vec!["a".to_string()],
                vec!["a".to_string(), "b".to_string()]
            ]
        );
        let plan = groups[0].files()[0]
            .extensions
            .get::<ParquetAccessPlan>()
            .unwrap();
        assert_eq!(plan.row_group_indexes(), vec![0, 2]);
    }

    #[test]
    fn files_carry_their_partition_values_typed() {
        let mut file = f("t/year=1995/region=EU/a", 1, &[0]);
        file.partition_values = vec![Some("1995".into()), None];
        let groups = file_groups(&[file.clone()], 1, &[&DataType::Int32, &DataType::Utf8]).unwrap();
        assert_eq!(
            groups[0].files()[0].partition_values,
            vec![ScalarValue::Int32(Some(1995)), ScalarValue::Utf8(None)]
        );
        file.partition_values = vec![Some("x".into()), None];
        let e = file_groups(&[file], 1, &[&DataType::Int32, &DataType::Utf8]).unwrap_err();
        assert!(e.to_string().contains("partition value \"x\""), "{e}");
    }

    #[test]
    fn empty_assignment_is_one_empty_group() {
        let groups = file_groups(&[], 4, &[]).unwrap();
        assert_eq!(groups.len(), 1);
        assert!(groups[0].files().is_empty());
    }
}
