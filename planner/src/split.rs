//! Splitting scan stages into tasks by Parquet row groups (and text files
//! by whole files or byte ranges, [`text_units`]).
//!
//! For every Parquet scan of a stage, the coordinator reads each file's
//! footer (cached across queries by path, size and modification time), drops
//! the row groups whose statistics prove the scan's predicate false, and
//! deals the remaining row groups to tasks in file order, sizing each task
//! toward `squall.scan.target_task_bytes` of compressed data read (the
//! column chunks the scan projects, not the whole row group). A row group is
//! the unit of work: it is never split. Pruned row groups never become tasks.
//!
//! What this module does not do: decide which stages exist (see `stages`) or
//! read any data pages.

use crate::error::PlannerError;
use crate::partitions::{
    PartitionCount, PartitionRegistry, distinct_partitions, table_root, value_text,
};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::physical_plan::{FileScanConfig, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use parquet::file::metadata::ParquetMetaData;
use roaring::{RoaringBitmap, RoaringTreemap};
use squall_core::deleted_rows::DeletedRows;
use squall_core::task::{FileRowGroups, ScanAssignment};

use crate::catalog::DeletedPositions;

/// Row groups of one scan after pruning.
#[derive(Debug, Default)]
pub struct ScanUnits {
    pub units: Vec<RowGroupUnit>,
    pub row_groups_total: usize,
    pub row_groups_pruned: usize,
    /// Partitions of a partitioned table the scan reads, of how many.
    pub partitions: PartitionCount,
}

/// One row group, or a text file or a chunk of one: the unit of scan work.
#[derive(Debug, Clone)]
pub struct RowGroupUnit {
    pub path: String,
    pub file_size: u64,
    /// The file's modification time as listed (ns since the epoch; 0 unknown).
    pub last_modified_ns: i64,
    pub row_group_count: usize,
    pub row_group: usize,
    /// Compressed bytes of the row group's column chunks the scan reads
    /// (the columns it projects): the measure of a task's work.
    pub bytes: u64,
    pub rows: u64,
    /// The file's partition values as text (empty when unpartitioned).
    pub partition_values: Vec<Option<String>>,
    /// The row group's rows deleted without a rewrite, when it has any
    /// (`rows` counts without them).
    pub deleted: Option<DeletedRows>,
    /// Of a text file read as byte ranges, the bytes of each chunk (the
    /// unit is chunk `row_group` of `row_group_count`); 0 for a Parquet row
    /// group or a text file read whole ([`FileRowGroups::chunk_bytes`]).
    pub chunk_bytes: u64,
}

/// The footers of every file `scan` reads (once each), with the schema of
/// its files' columns, and the rows deleted from those files in place
/// (deletion vectors).
pub async fn scan_footers(
    scan: &DataSourceExec,
    runtime: &RuntimeEnv,
    cache: &FooterCache,
) -> Result<(SchemaRef, Vec<Arc<ParquetMetaData>>, u64)> {
    let (config, _) = scan
        .downcast_to_file_source::<ParquetSource>()
        .ok_or_else(|| PlannerError::Internal("not a Parquet scan".into()))?;
    let files = listed_once(config);
    let deleted = files
        .iter()
        .filter_map(|f| f.extensions.get::<DeletedPositions>())
        .map(|d| d.0.len())
        .sum();
    let footers = read_footers(&files, &config.object_store_url, runtime, cache).await?;
    Ok((Arc::clone(config.file_schema()), footers, deleted))
}

/// The bytes of the files `config` reads: a file split into byte ranges
/// counts each range once.
pub fn listed_bytes(config: &FileScanConfig) -> u64 {
    config
        .file_groups
        .iter()
        .flat_map(|g| g.files())
        .map(|f| match &f.range {
            Some(r) => (r.end - r.start).max(0) as u64,
            None => f.object_meta.size,
        })
        .sum()
}

/// The files of a scan, each once: the planner may have split one file
/// into byte ranges.
fn listed_once(config: &FileScanConfig) -> Vec<&PartitionedFile> {
    let mut seen = std::collections::HashSet::new();
    config
        .file_groups
        .iter()
        .flat_map(|g| g.files())
        .filter(|f| seen.insert(f.object_meta.location.to_string()))
        .collect()
}

/// List the row groups a scan must read, pruning by statistics when
/// `prune`. Its files are those of the partitions planning kept; `registry`
/// says how many the table has.
pub async fn scan_units(
    scan: &DataSourceExec,
    runtime: &RuntimeEnv,
    cache: &FooterCache,
    registry: &PartitionRegistry,
    prune: bool,
) -> Result<ScanUnits> {
    let (config, source) = scan
        .downcast_to_file_source::<ParquetSource>()
        .ok_or_else(|| PlannerError::Internal("not a Parquet scan".into()))?;
    let file_schema = Arc::clone(config.file_schema());
    let predicate: Option<Arc<PruningPredicate>> = match (prune, source.filter()) {
        (true, Some(p)) => PruningPredicateBuilder::new()
            .with_file_schema(Arc::clone(&file_schema))
            .build(p),
        _ => None,
    };

    // The columns the scan reads, by top-level name (a nested column's
    // leaves all count); `None` reads every column.
    let projected: Option<std::collections::HashSet<String>> =
        source.projection().map(|projection| {
            projection
                .column_indices()
                .into_iter()
                .filter_map(|i| file_schema.fields().get(i).map(|f| f.name().clone()))
                .collect()
        });

    let mut out = ScanUnits::default();
    let files = listed_once(config);
    out.partitions = partitions_read(config, &files, registry);
    let footers = read_footers(&files, &config.object_store_url, runtime, cache).await?;
    for (file, metadata) in files.into_iter().zip(footers) {
        let path = file.object_meta.location.to_string();
        let partition_values = file
            .partition_values
            .iter()
            .map(value_text)
            .collect::<Result<Vec<_>>>()?;
        let count = metadata.num_row_groups();
        out.row_groups_total += count;
        let keep = match &predicate {
            Some(pp) => {
                let stats = RowGroupStatistics::new(&metadata, &file_schema);
                pp.prune(&stats).unwrap_or_else(|e| {
                    tracing::debug!(%e, file = %path, "row-group pruning skipped");
                    vec![true; count]
                })
            }
            None => vec![true; count],
        };
        let deleted = file.extensions.get::<DeletedPositions>();
        if let Some(DeletedPositions(positions)) = deleted
            && let Some(last) = positions.max()
            && last >= metadata.file_metadata().num_rows().max(0) as u64
        {
            return Err(datafusion::error::DataFusionError::Plan(format!(
                "file {path}: its deletion vector deletes row {last}, and the file has {} rows \
                 (the vector belongs to another version of the file)",
                metadata.file_metadata().num_rows()
            )));
        }
        let mut first_row = 0u64;
        for (i, rg) in metadata.row_groups().iter().enumerate() {
            let rows = rg.num_rows().max(0) as u64;
            let start = first_row;
            first_row += rows;
            if !keep.get(i).copied().unwrap_or(true) {
                out.row_groups_pruned += 1;
                continue;
            }
            let gone = deleted
                .map(|DeletedPositions(p)| within(p, start, rows))
                .unwrap_or_default();
            if rows > 0 && gone.len() == rows {
                // Every row deleted: nothing to read.
                out.row_groups_pruned += 1;
                continue;
            }
            let deleted_rows = match gone.is_empty() {
                true => None,
                false => Some(DeletedRows::new(i, rows, &gone)?),
            };
            out.units.push(RowGroupUnit {
                path: path.clone(),
                file_size: file.object_meta.size,
                last_modified_ns: file
                    .object_meta
                    .last_modified
                    .timestamp_nanos_opt()
                    .unwrap_or(0),
                row_group_count: count,
                row_group: i,
                bytes: match &projected {
                    None => rg.compressed_size().max(0) as u64,
                    Some(names) => rg
                        .columns()
                        .iter()
                        .filter(|c| {
                            c.column_path()
                                .parts()
                                .first()
                                .is_some_and(|top| names.contains(top))
                        })
                        .map(|c| c.compressed_size().max(0) as u64)
                        .sum(),
                },
                rows: rows - gone.len(),
                partition_values: partition_values.clone(),
                deleted: deleted_rows,
                chunk_bytes: 0,
            });
        }
    }
    Ok(out)
}

/// The partitions of a partitioned table a scan's `files` are in, of how many.
fn partitions_read(
    config: &FileScanConfig,
    files: &[&PartitionedFile],
    registry: &PartitionRegistry,
) -> PartitionCount {
    let Some(first) = config.table_partition_cols().first() else {
        return PartitionCount::default();
    };
    let read = distinct_partitions(files.iter().map(|f| f.partition_values.as_slice()));
    let total = files.first().and_then(|f| {
        let root = table_root(f.object_meta.location.as_ref(), first.name())?;
        registry.partitions(config.object_store_url.as_str(), root)
    });
    PartitionCount { read, total }
}

/// The positions of `positions` (a file's) within the `rows` rows from
/// `start`, counted from the first of them.
fn within(positions: &RoaringTreemap, start: u64, rows: u64) -> RoaringBitmap {
    let mut iter = positions.iter();
    iter.advance_to(start);
    iter.take_while(|&p| p < start + rows)
        .map(|p| (p - start) as u32)
        .collect()
}

/// The fewest tasks a stage is dealt beside its bytes over the target:
/// `min_tasks`, and with `min_task_bytes` only while each task still reads
/// that many bytes (a deployment spreads a stage of a few GB over more
/// functions than the target alone would, without fanning a small one
/// out): `squall.scan.min_tasks` / `min_task_bytes` for a scan stage (whose
/// row groups stay whole, so it never gets more tasks than row groups),
/// `squall.shuffle.*` for a reduce stage (`coordinator::coalesce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub min_tasks: usize,
    pub min_task_bytes: usize,
}

impl Spread {
    /// At least `min_tasks`, whatever the bytes.
    pub fn at_least(min_tasks: usize) -> Self {
        Self {
            min_tasks,
            min_task_bytes: 0,
        }
    }

    /// The fewest tasks for a stage reading `total` bytes.
    pub fn least(self, total: u64) -> u64 {
        let least = self.min_tasks as u64;
        match self.min_task_bytes {
            0 => least,
            bytes => least.min(total.div_ceil(bytes as u64)),
        }
    }
}

/// Deal the row groups of a stage's scans (one [`ScanUnits`] per scan leaf)
/// to tasks. Returns one `Vec<ScanAssignment>` (one entry per scan) per task;
/// always at least one task.
pub fn assign_tasks(
    scans: &[ScanUnits],
    target_task_bytes: usize,
    spread: Spread,
    single: bool,
) -> Vec<Vec<ScanAssignment>> {
    let units: Vec<(usize, &RowGroupUnit)> = scans
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.units.iter().map(move |u| (i, u)))
        .collect();
    let total: u64 = units.iter().map(|(_, u)| u.bytes).sum();
    let n_tasks = if single || units.is_empty() {
        1
    } else {
        let by_bytes = total.div_ceil(target_task_bytes.max(1) as u64);
        by_bytes
            .max(spread.least(total))
            .min(units.len() as u64)
            .max(1) as usize
    };

    let mut tasks: Vec<Vec<ScanAssignment>> =
        vec![vec![ScanAssignment::default(); scans.len()]; n_tasks];
    let mut task = 0usize;
    let mut acc = 0u64;
    for (k, (scan, unit)) in units.iter().enumerate() {
        // Move on once this task holds its share, keeping one unit per remaining task.
        let remaining_units = units.len() - k;
        let remaining_tasks = n_tasks - task - 1;
        let share = total * (task as u64 + 1) / n_tasks as u64;
        if task + 1 < n_tasks
            && (acc >= share || remaining_units <= remaining_tasks)
            && tasks[task].iter().any(|a| !a.files.is_empty())
        {
            task += 1;
        }
        acc += unit.bytes;
        let files = &mut tasks[task][*scan].files;
        match files.last_mut() {
            Some(f) if f.path == unit.path => {
                f.row_groups.push(unit.row_group);
                f.deleted.extend(unit.deleted.clone());
            }
            _ => files.push(FileRowGroups {
                path: unit.path.clone(),
                size: unit.file_size,
                last_modified_ns: unit.last_modified_ns,
                row_group_count: unit.row_group_count,
                row_groups: vec![unit.row_group],
                partition_values: unit.partition_values.clone(),
                deleted: unit.deleted.clone().into_iter().collect(),
                chunk_bytes: unit.chunk_bytes,
            }),
        }
    }
    tasks.retain(|t| t.iter().any(|a| !a.files.is_empty()));
    if tasks.is_empty() {
        tasks.push(vec![ScanAssignment::default(); scans.len()]);
    }
    tasks
}

/// Footers: their cache and their reads.
#[path = "split/footers.rs"]
mod footers;
pub(crate) use footers::footer_hint;
use footers::read_footers;
pub use footers::{FOOTER_CACHE_MAX_BYTES, FooterCache, footers_of};

/// The parts of text files' scans.
#[path = "split/text.rs"]
mod text;
pub use text::{text_chunk_bytes, text_units};

/// Scan tasks in the order of a column the table is clustered on.
#[path = "split/clustered.rs"]
mod clustered;
pub use clustered::{assign_in_order, clustered_order};

/// Row-group statistics of one file, for [`PruningPredicate`].
#[path = "split/row_group_stats.rs"]
mod row_group_stats;
use row_group_stats::RowGroupStatistics;

#[cfg(test)]
#[path = "split/tests.rs"]
mod tests;
