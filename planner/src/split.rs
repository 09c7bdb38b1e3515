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
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::datatypes::SchemaRef;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::physical_plan::{FileScanConfig, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::async_reader::MetadataFetch;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use roaring::{RoaringBitmap, RoaringTreemap};
use squall_core::deleted_rows::DeletedRows;
use squall_core::task::{FileRowGroups, ScanAssignment};

use crate::catalog::DeletedPositions;

/// Footers a scan's planning reads first, with [`FOOTER_PREFETCH_BYTES`]
/// tails, before it sizes the tail of the rest by them.
const FIRST_FOOTER_READS: usize = 64;

/// Footer reads a scan's planning keeps in flight after its first ones: at
/// thousands of files its time is their bytes at the coordinator's network,
/// and a window (not rounds that each wait for their slowest read) keeps
/// that network busy past a slow GET.
const FOOTER_READS_IN_FLIGHT: usize = 128;

/// The tail of a file a footer read fetches first, until the scan has seen
/// a footer: the footer of a file of a few dozen row groups fits (a TPC-H
/// SF1 lineitem file of 17 row groups has 35 KB); a larger one takes a
/// second GET. At thousands of files the bytes fetched, not the GETs, set
/// planning's time, so once the first footers are read the rest of the
/// scan's files are read with a tail sized by them ([`footer_hint`]).
const FOOTER_PREFETCH_BYTES: usize = 64 * 1024;

/// The smallest tail a footer read fetches.
const FOOTER_MIN_PREFETCH_BYTES: usize = 4 * 1024;

/// The tail to fetch for the footers of a scan's remaining files, given the
/// largest footer (metadata plus its 8-byte trailer) read so far: a quarter
/// more, in 4 KiB steps, at most [`FOOTER_PREFETCH_BYTES`]. The files of one
/// table come from one writer and carry similar footers; one larger than
/// the tail costs a second GET, not a wrong answer.
pub(crate) fn footer_hint(largest: Option<u64>) -> usize {
    match largest {
        None => FOOTER_PREFETCH_BYTES,
        Some(len) => {
            let want = (len as usize).saturating_add(len as usize / 4);
            want.next_multiple_of(4096)
                .clamp(FOOTER_MIN_PREFETCH_BYTES, FOOTER_PREFETCH_BYTES)
        }
    }
}

/// (store url, path, size, last modified): a footer stays valid while these do.
type FooterKey = (String, String, u64, i64);

/// Footers already read, keyed by [`FooterKey`], at most
/// [`FOOTER_CACHE_MAX_BYTES`] of them (the oldest go first): a long-running
/// server or a warm coordinator reading ever new files must not grow
/// without bound.
#[derive(Default)]
pub struct FooterCache {
    entries: Mutex<CachedFooters>,
}

impl FooterCache {
    /// The process's footer cache, shared by its engines: the aws backend
    /// builds an engine per request, and a warm coordinator function must
    /// not read the footers of a table again for every query (at SF1000 a
    /// catalog holds thousands of files). Registration reads a table's
    /// footers through it too (`catalog::parquet_schema`), so planning
    /// finds them there.
    pub fn shared() -> Arc<FooterCache> {
        static SHARED: std::sync::OnceLock<Arc<FooterCache>> = std::sync::OnceLock::new();
        Arc::clone(SHARED.get_or_init(Arc::default))
    }
}

/// The memory the footer cache may hold. At SF1000 the 22 TPC-H queries'
/// footers take a few hundred MB (lineitem alone about 49,000 row groups).
pub const FOOTER_CACHE_MAX_BYTES: usize = 512 * 1024 * 1024;

#[derive(Default)]
struct CachedFooters {
    by_key: HashMap<FooterKey, Arc<ParquetMetaData>>,
    /// Keys in the order they came.
    order: std::collections::VecDeque<FooterKey>,
    bytes: usize,
}

impl CachedFooters {
    fn insert(&mut self, key: FooterKey, footer: Arc<ParquetMetaData>, max_bytes: usize) {
        if self.by_key.contains_key(&key) {
            return;
        }
        self.bytes += footer.memory_size();
        self.order.push_back(key.clone());
        self.by_key.insert(key, footer);
        while self.bytes > max_bytes {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if let Some(gone) = self.by_key.remove(&oldest) {
                self.bytes = self.bytes.saturating_sub(gone.memory_size());
            }
        }
    }
}

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

impl FooterCache {
    /// The footer of `meta`'s file, read with a first GET of its last
    /// `hint` bytes when not cached; and the footer's length (metadata and
    /// trailer) when this call read it.
    async fn footer(
        &self,
        runtime: &RuntimeEnv,
        store_url: &datafusion::execution::object_store::ObjectStoreUrl,
        meta: &object_store::ObjectMeta,
        hint: usize,
    ) -> Result<(Arc<ParquetMetaData>, Option<u64>)> {
        let store = runtime.object_store(store_url)?;
        self.footer_in(&store, store_url.as_str(), meta, hint).await
    }

    /// [`Self::footer`] of a file of `store`, whose URL is `store_url`.
    pub async fn footer_in(
        &self,
        store: &Arc<dyn ObjectStore>,
        store_url: &str,
        meta: &object_store::ObjectMeta,
        hint: usize,
    ) -> Result<(Arc<ParquetMetaData>, Option<u64>)> {
        let key = (
            store_url.to_string(),
            meta.location.to_string(),
            meta.size,
            meta.last_modified.timestamp_millis(),
        );
        if let Ok(entries) = self.entries.lock()
            && let Some(m) = entries.by_key.get(&key)
        {
            return Ok((Arc::clone(m), None));
        }
        let footer_len = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let reader = RangeFetch {
            store: Arc::clone(store),
            path: meta.location.clone(),
            file_size: meta.size,
            footer_len: Arc::clone(&footer_len),
        };
        let metadata = ParquetMetaDataReader::new()
            .with_prefetch_hint(Some(hint))
            .load_and_finish(reader, meta.size)
            .await
            .map_err(|e| PlannerError::Footer {
                file: meta.location.to_string(),
                message: e.to_string(),
            })?;
        let metadata = Arc::new(metadata);
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(key, Arc::clone(&metadata), FOOTER_CACHE_MAX_BYTES);
        }
        let len = footer_len.load(std::sync::atomic::Ordering::Relaxed);
        Ok((metadata, (len > 0).then_some(len)))
    }
}

/// The footers of the listed files `files` of the store `store_url`, from
/// `cache` or read as a scan's are.
pub async fn footers_of(
    files: &[object_store::ObjectMeta],
    store_url: &datafusion::execution::object_store::ObjectStoreUrl,
    runtime: &RuntimeEnv,
    cache: &FooterCache,
) -> Result<Vec<Arc<ParquetMetaData>>> {
    let files: Vec<PartitionedFile> = files.iter().cloned().map(PartitionedFile::from).collect();
    let files: Vec<&PartitionedFile> = files.iter().collect();
    read_footers(&files, store_url, runtime, cache).await
}

/// The footers of `files`, from `cache` or read.
async fn read_footers(
    files: &[&PartitionedFile],
    store_url: &datafusion::execution::object_store::ObjectStoreUrl,
    runtime: &RuntimeEnv,
    cache: &FooterCache,
) -> Result<Vec<Arc<ParquetMetaData>>> {
    // The footers not cached yet: the first FIRST_FOOTER_READS at once with
    // the full tail, then the rest FOOTER_READS_IN_FLIGHT at a time (at
    // thousands of files, one after another would take minutes), each with
    // a tail sized by the largest footer read before it was sent.
    let mut footers: Vec<Arc<ParquetMetaData>> = Vec::with_capacity(files.len());
    let split = files.len().min(FIRST_FOOTER_READS);
    let reads: Vec<_> = files[..split]
        .iter()
        .map(|file| cache.footer(runtime, store_url, &file.object_meta, footer_hint(None)))
        .collect();
    let largest = std::sync::atomic::AtomicU64::new(0);
    for (metadata, len) in futures::future::try_join_all(reads).await? {
        largest.fetch_max(len.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
        footers.push(metadata);
    }
    let largest = &largest;
    // Each read sizes its tail when it is sent (first polled), by the
    // footers read by then.
    let rest: Vec<BoxFuture<'_, Result<Arc<ParquetMetaData>>>> = files[split..]
        .iter()
        .map(|file| {
            async move {
                let seen = largest.load(std::sync::atomic::Ordering::Relaxed);
                let hint = footer_hint((seen > 0).then_some(seen));
                let (metadata, len) = cache
                    .footer(runtime, store_url, &file.object_meta, hint)
                    .await?;
                largest.fetch_max(len.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
                Ok(metadata)
            }
            .boxed()
        })
        .collect();
    let rest: Vec<Arc<ParquetMetaData>> = futures::stream::iter(rest)
        .buffered(FOOTER_READS_IN_FLIGHT)
        .try_collect()
        .await?;
    footers.extend(rest);
    Ok(footers)
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

/// Ranged GETs for the footer reader.
struct RangeFetch {
    store: Arc<dyn ObjectStore>,
    path: Path,
    file_size: u64,
    /// The footer's length (metadata and the 8-byte trailer), from the
    /// trailer once a fetch of the file's end returns it.
    footer_len: Arc<std::sync::atomic::AtomicU64>,
}

impl MetadataFetch for RangeFetch {
    fn fetch(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<bytes::Bytes>> {
        async move {
            let at_end = range.end == self.file_size;
            let bytes = self
                .store
                .get_range(&self.path, range)
                .await
                .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))?;
            if at_end && let Some(trailer) = bytes.len().checked_sub(8).map(|i| &bytes[i..]) {
                let metadata_len =
                    u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
                self.footer_len.fetch_max(
                    u64::from(metadata_len) + 8,
                    std::sync::atomic::Ordering::Relaxed,
                );
            }
            Ok(bytes)
        }
        .boxed()
    }
}

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
