//! Parquet footers as planning reads them: a process-wide cache of the
//! footers read, bounded by bytes, and the reads themselves (a first GET of
//! a file's tail sized by the footers seen so far, many in flight).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::datasource::listing::PartitionedFile;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::async_reader::MetadataFetch;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use crate::error::PlannerError;

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
pub(super) async fn read_footers(
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

#[cfg(test)]
#[path = "footers_tests.rs"]
mod tests;
