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
use datafusion::datasource::physical_plan::{
    FileGroup, FileScanConfig, FileScanConfigBuilder, ParquetSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};

use crate::exec::ShuffleReadExec;
use crate::read_ahead::ReadAheadFactory;
use crate::task::{FileRowGroups, InputBinding, ScanAssignment};
use crate::text_compression::compression_of;
pub use crate::text_files::as_text_scan;
use crate::text_files::text_kind_splits;

/// A leaf of a stage plan, as far as task binding is concerned.
pub enum Leaf<'a> {
    /// A Parquet scan (`DataSourceExec` over `ParquetSource`).
    ParquetScan(&'a DataSourceExec),
    /// A scan of text files (CSV, JSON; [`as_text_scan`]): dealt to tasks
    /// by files, and by byte ranges where its files may be read so.
    TextScan(&'a DataSourceExec),
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
    if let Some(scan) = as_text_scan(plan) {
        out.push(Leaf::TextScan(scan));
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

impl Leaf<'_> {
    /// Whether the leaf is a file scan tasks are dealt parts of (each
    /// such leaf takes one [`ScanAssignment`], in [`leaves`]' order).
    pub fn is_file_scan(&self) -> bool {
        matches!(self, Leaf::ParquetScan(_) | Leaf::TextScan(_))
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
            "task has {} scan assignments but its plan has {} file scans",
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
        let parquet = as_parquet_scan(&plan);
        let text = as_text_scan(&plan);
        if parquet.is_some() || text.is_some() {
            let assignment = self.scans.get(self.next_scan).ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "no scan assignment for file scan #{}",
                    self.next_scan
                ))
            })?;
            self.next_scan += 1;
            return match (parquet, text) {
                (Some(scan), _) => bind_scan(scan, assignment, self.reading),
                (_, Some(scan)) => bind_text_scan(scan, assignment, self.reading),
                (None, None) => unreachable!("one of the two"),
            };
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

/// The partitions (threads) a task reads `scan` with: its assignment's, or
/// the worker's; one where DataFusion planned the scan as one partition
/// (the operators above it may rely on seeing all of its rows together).
fn scan_partitions(
    scan: &DataSourceExec,
    assignment: &ScanAssignment,
    reading: &ScanReading,
) -> usize {
    let planned = ExecutionPlan::properties(scan)
        .partitioning
        .partition_count();
    match (planned, assignment.partitions) {
        (0 | 1, _) => 1,
        (_, 0) => reading.task_partitions.max(1),
        (_, n) => n,
    }
}

/// Refuses an assignment whose files do not fit the scan (`config`): row
/// groups no planner makes, partition values of another partitioning.
fn check_files(config: &FileScanConfig, assignment: &ScanAssignment) -> Result<()> {
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
    Ok(())
}

/// The types of `config`'s partition columns.
fn partition_types(config: &FileScanConfig) -> Vec<&DataType> {
    config
        .table_partition_cols()
        .iter()
        .map(|f| f.data_type())
        .collect()
}

fn bind_scan(
    scan: &DataSourceExec,
    assignment: &ScanAssignment,
    reading: &ScanReading,
) -> Result<Arc<dyn ExecutionPlan>> {
    let (config, source) = scan
        .downcast_to_file_source::<ParquetSource>()
        .ok_or_else(|| DataFusionError::Internal("not a Parquet scan".into()))?;
    let partitions = scan_partitions(scan, assignment, reading);
    check_files(config, assignment)?;
    if let Some(file) = assignment.files.iter().find(|f| f.chunk_bytes > 0) {
        return Err(bad_payload(
            file,
            "byte ranges of a Parquet file (its row groups are its parts)".into(),
        ));
    }
    let groups = file_groups(
        &assignment.files,
        partitions,
        &partition_types(config),
        row_group_piece,
    )?;
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

/// Bind a scan of text files (CSV, JSON) to the files and byte ranges
/// `assignment` names, read with the compression their names give (the
/// shipped plan carries no files to tell it: `text_compression`).
fn bind_text_scan(
    scan: &DataSourceExec,
    assignment: &ScanAssignment,
    reading: &ScanReading,
) -> Result<Arc<dyn ExecutionPlan>> {
    let config = scan
        .data_source()
        .downcast_ref::<FileScanConfig>()
        .ok_or_else(|| DataFusionError::Internal("not a file scan".into()))?;
    let partitions = scan_partitions(scan, assignment, reading);
    check_files(config, assignment)?;
    let compression = match assignment.files.first() {
        Some(first) => {
            let compression = compression_of(&first.path);
            if let Some(other) = assignment
                .files
                .iter()
                .find(|f| compression_of(&f.path) != compression)
            {
                return Err(bad_payload(
                    first,
                    format!("read beside {}, compressed otherwise", other.path),
                ));
            }
            compression
        }
        None => config.file_compression_type,
    };
    let splits = text_kind_splits(scan).unwrap_or(false) && !compression.is_compressed();
    for file in &assignment.files {
        if file.chunk_bytes > 0 && !splits {
            return Err(bad_payload(
                file,
                "a byte range of a file that is read whole".into(),
            ));
        }
        if file.chunk_bytes == 0 && file.row_group_count != 1 {
            return Err(bad_payload(
                file,
                format!("{} parts of a file read whole", file.row_group_count),
            ));
        }
    }
    let groups = file_groups(
        &assignment.files,
        partitions,
        &partition_types(config),
        byte_range_piece,
    )?;
    let config = FileScanConfigBuilder::from(config.clone())
        .with_file_groups(groups)
        .with_file_compression_type(compression)
        .build();
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

/// What reads a run of consecutive parts `parts` of `file` (row groups, or
/// a text file's chunks): the piece of the file as DataFusion reads it.
type Piece = fn(&FileRowGroups, &[usize], PartitionedFile) -> Result<PartitionedFile>;

/// A Parquet file's row groups `parts`: its access plan, rows deleted in
/// place left out.
fn row_group_piece(
    file: &FileRowGroups,
    parts: &[usize],
    piece: PartitionedFile,
) -> Result<PartitionedFile> {
    let mut plan = ParquetAccessPlan::new_none(file.row_group_count);
    for &rg in parts {
        plan.scan(rg);
        if let Some(deleted) = file.deleted.iter().find(|d| d.row_group == rg) {
            let kept = deleted.selection().map_err(|why| bad_payload(file, why))?;
            plan.scan_selection(rg, kept);
        }
    }
    Ok(piece.with_extension(plan))
}

/// A text file's chunks `parts`, consecutive: the byte range they cover
/// (none for a file read whole or a range that is the whole file). A text
/// reader reads the lines that begin in its range, the first past its
/// start's line break.
fn byte_range_piece(
    file: &FileRowGroups,
    parts: &[usize],
    piece: PartitionedFile,
) -> Result<PartitionedFile> {
    let (Some(&first), Some(&last)) = (parts.first(), parts.last()) else {
        return Ok(piece);
    };
    if file.chunk_bytes == 0 {
        return Ok(piece);
    }
    if parts.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err(bad_payload(file, "chunks that are not consecutive".into()));
    }
    let start = (first as u64).saturating_mul(file.chunk_bytes);
    let end = (last as u64 + 1)
        .saturating_mul(file.chunk_bytes)
        .min(file.size);
    if start >= end {
        return Err(bad_payload(
            file,
            format!("chunk {first} of a file of {} bytes", file.size),
        ));
    }
    if start == 0 && end == file.size {
        return Ok(piece);
    }
    let range = |n: u64| {
        i64::try_from(n).map_err(|_| bad_payload(file, format!("offset {n} out of range")))
    };
    Ok(piece.with_range(range(start)?, range(end)?))
}

/// Spread the assigned parts (row groups, chunks) over up to `partitions`
/// file groups, contiguously; each (file, parts) piece is made by `piece`
/// and carries its partition values (of `types`).
fn file_groups(
    files: &[FileRowGroups],
    partitions: usize,
    types: &[&DataType],
    piece: Piece,
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
                let mut parts = Vec::new();
                while i < chunk.len() && chunk[i].0 == index {
                    parts.push(chunk[i].1);
                    i += 1;
                }
                let mut whole = PartitionedFile::new(file.path.clone(), file.size);
                // `path` is a location as the store lists it, already
                // percent-encoded (a Hive folder `ts=10%3A00` is listed as
                // `ts=10%253A00`): parsed, not encoded a second time.
                if let Ok(location) = object_store::path::Path::parse(&file.path) {
                    whole.object_meta.location = location;
                }
                if let Some(t) = timestamp_ns_to_datetime(file.last_modified_ns) {
                    whole.object_meta.last_modified = t.and_utc();
                }
                whole.partition_values.clone_from(&values[index]);
                pieces.push(piece(file, &parts, whole)?);
            }
            Ok(FileGroup::new(pieces))
        })
        .collect()
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
