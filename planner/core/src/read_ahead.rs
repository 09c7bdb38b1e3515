//! Read-ahead for a scan task's Parquet row groups.
//!
//! DataFusion's Parquet decoder asks for one row group's column chunks at a
//! time and decodes them before it asks for the next, so a scan task on
//! Lambda waits out one S3 round trip per row group with its CPU idle, and
//! makes one GET (or more) per row group: with small row groups, most of a
//! query's requests. [`ReadAheadFactory`] gives the decoder a reader that
//! fetches *windows*: the column chunks the decoder reads (learned from its
//! first request in the file) of several consecutive row groups of the
//! task's access plan, up to `window_bytes` together, in one coalesced
//! request (adjacent chunks become one ranged GET). While the decoder works
//! on one window, the next `windows - 1` are already in flight. A reader's
//! first window is its first row group alone, so the decoder starts once
//! that has arrived (about a megabyte, not the whole budget: at 80 MB/s,
//! 8 MiB is 100 ms of an idle CPU per file) while the next window, of the
//! full budget, is fetched.
//!
//! What it costs: up to `windows x window_bytes` per scan partition held in
//! memory (reserved in the task's memory pool, at most an eighth of a
//! memory limit together: a window the pool refuses is not fetched, and
//! the decoder reads as it asks), and the bytes of row
//! groups the decoder ends up skipping (a LIMIT reached, a dynamic filter
//! pruning the rest) fetched for nothing; a reader dropped early aborts
//! what is still in flight. A request the
//! windows do not cover (a column not seen before, page-index reads) goes
//! to the store as it would without read-ahead.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::{
    DefaultParquetFileReaderFactory, ParquetAccessPlan, ParquetFileReaderFactory,
};
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::async_reader::AsyncFileReader;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ParquetMetaData;
use tokio::task::JoinHandle;

/// Makes [`ReadAheadReader`]s over DataFusion's own reader.
pub struct ReadAheadFactory {
    inner: Arc<dyn ParquetFileReaderFactory>,
    window_bytes: u64,
    windows: usize,
    /// Footers its readers loaded, by path: DataFusion may hand the decoder
    /// a fresh reader of a file whose metadata another reader loaded (after
    /// reading Bloom filters), and that reader must know the layout too.
    footers: Footers,
    /// Where windows reserve their bytes (none: unreserved).
    pool: Option<Arc<dyn MemoryPool>>,
}

type Footers = Arc<Mutex<HashMap<String, Arc<ParquetMetaData>>>>;

impl fmt::Debug for ReadAheadFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadAheadFactory")
            .field("window_bytes", &self.window_bytes)
            .field("windows", &self.windows)
            .finish()
    }
}

impl ReadAheadFactory {
    /// Readers of `inner` (the scan's own factory, which may cache footers;
    /// DataFusion's plain one over `store` when it has none) reading ahead
    /// in windows of up to `window_bytes`, `windows` of them in flight (at
    /// least one).
    pub fn new(
        inner: Option<Arc<dyn ParquetFileReaderFactory>>,
        store: Arc<dyn ObjectStore>,
        window_bytes: u64,
        windows: usize,
    ) -> Self {
        Self {
            inner: inner.unwrap_or_else(|| Arc::new(DefaultParquetFileReaderFactory::new(store))),
            window_bytes: window_bytes.max(1),
            windows: windows.max(1),
            footers: Footers::default(),
            pool: None,
        }
    }

    /// Windows reserve their bytes in `pool` first; one the pool refuses is
    /// not fetched (the decoder's requests then go to the store as they come).
    pub fn with_memory_pool(mut self, pool: Arc<dyn MemoryPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Bytes per window: the setting, and under a memory limit at most an
    /// eighth of it across the windows in flight, so read-ahead never
    /// crowds out the operators (a window of one row group may still be
    /// larger, and then the pool may refuse it).
    fn window_budget(&self) -> u64 {
        match self.pool.as_ref().map(|p| p.memory_limit()) {
            Some(MemoryLimit::Finite(limit)) => self
                .window_bytes
                .min((limit / 8 / self.windows) as u64)
                .max(1),
            _ => self.window_bytes,
        }
    }
}

impl ParquetFileReaderFactory for ReadAheadFactory {
    fn create_reader(
        &self,
        partition_index: usize,
        file: PartitionedFile,
        metadata_size_hint: Option<usize>,
        metrics: &ExecutionPlanMetricsSet,
    ) -> datafusion::error::Result<Box<dyn AsyncFileReader + Send>> {
        let inner =
            self.inner
                .create_reader(partition_index, file.clone(), metadata_size_hint, metrics)?;
        let planned = file
            .extensions
            .get::<ParquetAccessPlan>()
            .map(|p| p.row_group_indexes());
        Ok(Box::new(ReadAheadReader {
            inner,
            opener: Opener {
                factory: Arc::clone(&self.inner),
                partition_index,
                file,
                metrics: metrics.clone(),
            },
            footers: Arc::clone(&self.footers),
            pool: self.pool.clone(),
            planned,
            window_bytes: self.window_budget(),
            windows: self.windows,
            layout: None,
            columns: BTreeSet::new(),
            ahead: VecDeque::new(),
            started: false,
        }))
    }
}

/// Opens more readers of the same file, one per window in flight (each
/// counts its bytes in the scan's metrics as DataFusion's reader does).
struct Opener {
    factory: Arc<dyn ParquetFileReaderFactory>,
    partition_index: usize,
    file: PartitionedFile,
    metrics: ExecutionPlanMetricsSet,
}

/// Where a file's row groups and their column chunks lie.
struct Layout {
    /// Per row group of the file, the byte range of each column chunk.
    chunks: Vec<Vec<Range<u64>>>,
    /// The row groups the task reads, in the order the decoder reads them.
    order: Vec<usize>,
}

impl Layout {
    fn new(metadata: &ParquetMetaData, planned: Option<&[usize]>) -> Self {
        let chunks: Vec<Vec<Range<u64>>> = metadata
            .row_groups()
            .iter()
            .map(|rg| {
                rg.columns()
                    .iter()
                    .map(|c| {
                        let (start, len) = c.byte_range();
                        start..start.saturating_add(len)
                    })
                    .collect()
            })
            .collect();
        let order = match planned {
            Some(p) => p.iter().copied().filter(|&i| i < chunks.len()).collect(),
            None => (0..chunks.len()).collect(),
        };
        Self { chunks, order }
    }

    /// The position in `order` of the row group holding `range`, and the
    /// column chunk it lies in; positions from `near` on are looked at
    /// first (the decoder moves forward).
    fn locate(&self, range: &Range<u64>, near: usize) -> Option<(usize, usize)> {
        let near = near.min(self.order.len());
        (near..self.order.len()).chain(0..near).find_map(|pos| {
            self.chunks[self.order[pos]]
                .iter()
                .position(|c| c.start <= range.start && range.end <= c.end)
                .map(|col| (pos, col))
        })
    }

    /// The window starting at position `from`: consecutive planned row
    /// groups whose chunks of `columns` sum to at most `budget` bytes (at
    /// least one row group). Its chunk ranges, sorted, and its end position.
    fn window(
        &self,
        from: usize,
        columns: &BTreeSet<usize>,
        budget: u64,
    ) -> (Vec<Range<u64>>, usize) {
        let mut ranges = Vec::new();
        let mut bytes = 0u64;
        let mut end = from;
        while end < self.order.len() {
            let rg = &self.chunks[self.order[end]];
            let more: Vec<Range<u64>> =
                columns.iter().filter_map(|&c| rg.get(c).cloned()).collect();
            let add: u64 = more.iter().map(|r| r.end - r.start).sum();
            if end > from && bytes + add > budget {
                break;
            }
            bytes += add;
            ranges.extend(more);
            end += 1;
        }
        ranges.sort_by_key(|r| r.start);
        (ranges, end)
    }
}

/// Row groups `from..end` (positions in the layout's order), their chunks
/// fetched or being fetched.
struct Window {
    from: usize,
    end: usize,
    ranges: Vec<Range<u64>>,
    data: WindowData,
    /// Its bytes in the task's memory pool, while it is held.
    _reservation: Option<MemoryReservation>,
}

enum WindowData {
    Pending(JoinHandle<Result<Vec<Bytes>>>),
    Ready(Vec<Bytes>),
}

impl Window {
    /// The bytes of `range` when the window holds them (once fetched).
    async fn slice(&mut self, range: &Range<u64>) -> Result<Option<Bytes>> {
        let Some(i) = self
            .ranges
            .iter()
            .position(|c| c.start <= range.start && range.end <= c.end)
        else {
            return Ok(None);
        };
        if let WindowData::Pending(handle) = &mut self.data {
            let fetched = handle.await.map_err(|e| {
                ParquetError::General(format!("reading ahead: the fetch did not finish: {e}"))
            })??;
            self.data = WindowData::Ready(fetched);
        }
        let WindowData::Ready(chunks) = &self.data else {
            unreachable!("the window's data was just made ready")
        };
        let chunk = &chunks[i];
        let start = (range.start - self.ranges[i].start) as usize;
        Ok(Some(
            chunk.slice(start..start + (range.end - range.start) as usize),
        ))
    }

    fn covers(&self, ranges: &[Range<u64>]) -> bool {
        ranges.iter().all(|r| {
            self.ranges
                .iter()
                .any(|c| c.start <= r.start && r.end <= c.end)
        })
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if let WindowData::Pending(handle) = &self.data {
            handle.abort();
        }
    }
}

/// A Parquet reader that reads a task's row groups ahead in windows.
pub struct ReadAheadReader {
    inner: Box<dyn AsyncFileReader + Send>,
    opener: Opener,
    footers: Footers,
    pool: Option<Arc<dyn MemoryPool>>,
    planned: Option<Vec<usize>>,
    window_bytes: u64,
    windows: usize,
    layout: Option<Layout>,
    /// Column chunks (by index) the decoder has asked for in this file.
    columns: BTreeSet<usize>,
    /// Windows at or after the decoder's position, in order.
    ahead: VecDeque<Window>,
    /// Whether a window was started yet: the first holds one row group.
    started: bool,
}

impl ReadAheadReader {
    fn start(&mut self, from: usize) -> Option<Window> {
        let layout = self.layout.as_ref()?;
        if from >= layout.order.len() || self.columns.is_empty() {
            return None;
        }
        // The first window: one row group (a window holds at least one).
        let budget = if self.started { self.window_bytes } else { 0 };
        let (ranges, end) = layout.window(from, &self.columns, budget);
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        let reservation = match &self.pool {
            Some(pool) => {
                let r = MemoryConsumer::new("read-ahead window").register(pool);
                if r.try_grow(bytes as usize).is_err() {
                    tracing::debug!(bytes, "no memory for a read-ahead window: reading as asked");
                    return None;
                }
                Some(r)
            }
            None => None,
        };
        let mut reader = self
            .opener
            .factory
            .create_reader(
                self.opener.partition_index,
                self.opener.file.clone(),
                None,
                &self.opener.metrics,
            )
            .ok()?;
        tracing::trace!(
            file = %self.opener.file.object_meta.location,
            from, end, ranges = ranges.len(),
            bytes = ranges.iter().map(|r| r.end - r.start).sum::<u64>(),
            "read-ahead window"
        );
        let wanted = ranges.clone();
        let handle = tokio::spawn(async move { reader.get_byte_ranges(wanted).await });
        self.started = true;
        Some(Window {
            from,
            end,
            ranges,
            data: WindowData::Pending(handle),
            _reservation: reservation,
        })
    }

    /// Keep `windows` windows in flight from position `pos` on.
    fn top_up(&mut self, pos: usize) {
        while self.ahead.len() < self.windows {
            let from = self.ahead.back().map_or(pos, |w| w.end);
            match self.start(from) {
                Some(w) => self.ahead.push_back(w),
                None => break,
            }
        }
    }

    /// The file's layout, once a reader of the file loaded its footer.
    fn learn_layout(&mut self) {
        if self.layout.is_some() {
            return;
        }
        let path = self.opener.file.object_meta.location.to_string();
        let metadata = self.footers.lock().ok().and_then(|f| f.get(&path).cloned());
        if let Some(m) = metadata {
            self.layout = Some(Layout::new(&m, self.planned.as_deref()));
        }
    }

    async fn read(&mut self, ranges: Vec<Range<u64>>) -> Result<Vec<Bytes>> {
        self.learn_layout();
        let Some(layout) = &self.layout else {
            return self.inner.get_byte_ranges(ranges).await;
        };
        let near = self.ahead.front().map_or(0, |w| w.from);
        let located: Option<Vec<(usize, usize)>> =
            ranges.iter().map(|r| layout.locate(r, near)).collect();
        let Some(located) = located.filter(|l| !l.is_empty()) else {
            // Not column chunks of the planned row groups (e.g. the page index).
            return self.inner.get_byte_ranges(ranges).await;
        };
        let pos = located[0].0;
        let learned = located.iter().any(|(_, col)| !self.columns.contains(col));
        self.columns.extend(located.iter().map(|(_, col)| *col));
        // Windows wholly behind the decoder are done with.
        while self.ahead.front().is_some_and(|w| w.end <= pos) {
            self.ahead.pop_front();
        }
        if self.ahead.front().is_some_and(|w| w.from > pos) {
            // The decoder is behind the windows (it never goes back, so this
            // is a row group it re-reads): serve it directly.
            return self.inner.get_byte_ranges(ranges).await;
        }
        if self.ahead.is_empty()
            && let Some(w) = self.start(pos)
        {
            self.ahead.push_back(w);
        }
        let served = match self.ahead.front_mut() {
            Some(w) if w.covers(&ranges) => {
                let mut out = Vec::with_capacity(ranges.len());
                for r in &ranges {
                    match w.slice(r).await? {
                        Some(b) => out.push(b),
                        None => break,
                    }
                }
                (out.len() == ranges.len()).then_some(out)
            }
            _ => None,
        };
        if learned {
            // Windows fetched before a column was seen lack it: later ones
            // are made with every column seen so far.
            self.ahead.truncate(1);
        }
        self.top_up(pos);
        tracing::trace!(
            file = %self.opener.file.object_meta.location,
            position = pos,
            ranges = ranges.len(),
            served = served.is_some(),
            windows = self.ahead.len(),
            "read-ahead request"
        );
        match served {
            Some(out) => Ok(out),
            None => self.inner.get_byte_ranges(ranges).await,
        }
    }
}

impl AsyncFileReader for ReadAheadReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, Result<Bytes>> {
        async move {
            let mut out = self.read(vec![range]).await?;
            out.pop()
                .ok_or_else(|| ParquetError::General("reading ahead: no bytes returned".into()))
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, Result<Vec<Bytes>>> {
        self.read(ranges).boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, Result<Arc<ParquetMetaData>>> {
        async move {
            let metadata = self.inner.get_metadata(options).await?;
            if let Ok(mut footers) = self.footers.lock() {
                footers.insert(
                    self.opener.file.object_meta.location.to_string(),
                    Arc::clone(&metadata),
                );
            }
            self.learn_layout();
            Ok(metadata)
        }
        .boxed()
    }
}

#[cfg(test)]
#[path = "read_ahead_tests.rs"]
mod tests;
