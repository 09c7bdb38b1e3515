//! Tests of a map output under a memory bound: spilling (after every push,
//! or when the pool refuses) leaves the object and its ranges exactly as
//! without a spill; without a disk manager a refusal fails naming the
//! output; the upload sends one PUT or exact parts, bounded in flight,
//! counts its requests and aborts on a failed part.

use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arrow::array::{Int64Array, StringViewArray};
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::execution::DiskManager;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryPool};
use futures::FutureExt;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};

use super::spill::{SpillStats, SpillingOutput};
use super::upload::{ObjectBytes, Piece, UploadOptions, upload};
use super::*;
use crate::exchange::{decode_partition, stream_header};
use crate::task::PartitionRange;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("s", DataType::Utf8View, true),
    ]))
}

fn batch(start: i64, n: i64) -> RecordBatch {
    let k = Int64Array::from_iter_values(start..start + n);
    let s = StringViewArray::from_iter(
        (start..start + n)
            .map(|i| (i % 5 != 0).then(|| format!("row {i} {}", "x".repeat((i % 50) as usize)))),
    );
    RecordBatch::try_new(schema(), vec![Arc::new(k), Arc::new(s)]).unwrap()
}

/// 3 partitions; whole batches of 100 rows (the coalescers never hold rows
/// when a spill comes, so spilling cannot change batch boundaries).
fn pushes() -> Vec<(usize, RecordBatch)> {
    (0..60)
        .map(|i| ((i * 5 % 3) as usize, batch(i * 100, 100)))
        .collect()
}

fn output(pool: &Arc<dyn MemoryPool>, threshold: usize, disk: Arc<DiskManager>) -> SpillingOutput {
    let builder = MapObjectBuilder::new(schema(), 3, Compression::Lz4, 100).unwrap();
    let reservation = MemoryConsumer::new("ShuffleWriteExec[test]").register(pool);
    SpillingOutput::new(builder, reservation, threshold, disk, "x/q/s1/t0/a0".into())
}

fn disk() -> Arc<DiskManager> {
    Arc::new(DiskManagerBuilder::default().build().unwrap())
}

fn unlimited() -> Arc<dyn MemoryPool> {
    Arc::new(GreedyMemoryPool::new(usize::MAX))
}

/// Push everything, upload to memory, read the object back.
async fn write(
    mut out: SpillingOutput,
    pushes: &[(usize, RecordBatch)],
    options: UploadOptions,
) -> (Bytes, Vec<PartitionRange>, SpillStats, u64) {
    for (p, b) in pushes {
        out.push(*p, b.clone()).unwrap();
    }
    let stats = out.stats();
    let (object, ranges, _reservation) = out.finish().unwrap();
    assert_eq!(object.spilled(), stats.spills > 0);
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("x/q/s1/t0/a0");
    let requests = upload(&store, &path, object, options).await.unwrap();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    (bytes, ranges, stats, requests)
}

const ONE_PUT: UploadOptions = UploadOptions {
    max_put_bytes: 1 << 30,
    part_bytes: 1 << 30,
    concurrency: 4,
};

#[tokio::test]
async fn spilling_after_every_push_keeps_the_object_byte_for_byte() {
    let (whole, whole_ranges, stats, requests) =
        write(output(&unlimited(), 0, disk()), &pushes(), ONE_PUT).await;
    assert_eq!(stats, SpillStats::default());
    assert_eq!(requests, 1);

    // Spilled: in parts, however small the object.
    let parts = UploadOptions {
        max_put_bytes: 1 << 30,
        part_bytes: 4096,
        concurrency: 3,
    };
    let (spilled, ranges, stats, requests) =
        write(output(&unlimited(), 1, disk()), &pushes(), parts).await;
    assert_eq!(stats.spills, 60);
    assert!(stats.bytes > 0 && stats.bytes < whole.len() as u64);
    assert_eq!(ranges, whole_ranges);
    assert_eq!(spilled, whole, "the spilled object differs");
    let parts = whole.len().div_ceil(4096) as u64;
    assert_eq!(requests, 2 + parts, "create + {parts} parts + complete");

    // Each partition's range is one IPC stream with its rows, in order.
    for (p, r) in ranges.iter().enumerate() {
        let bytes = spilled.slice(r.offset as usize..(r.offset + r.len) as usize);
        let got = decode_partition(bytes, &stream_header(&schema()).unwrap(), false).unwrap();
        let want: Vec<RecordBatch> = pushes()
            .into_iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, b)| b)
            .collect();
        assert_eq!(got, want, "partition {p}");
    }
}

#[tokio::test]
async fn a_refusing_pool_makes_it_spill_instead_of_failing() {
    let limit = 16 * 1024;
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(limit));
    // Odd batch sizes: the coalescers hold rows when a spill comes.
    let odd: Vec<(usize, RecordBatch)> = (0..80)
        .map(|i| ((i % 3) as usize, batch(i * 37, 37)))
        .collect();
    let mut out = output(&pool, 0, disk());
    for (p, b) in &odd {
        out.push(*p, b.clone()).unwrap();
        assert!(pool.reserved() <= limit);
        assert_eq!(pool.reserved(), out.held_bytes());
    }
    assert!(out.stats().spills > 0);
    let (object, ranges, _reservation) = out.finish().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("o");
    upload(&store, &path, object, ONE_PUT).await.unwrap();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(bytes.len() as u64, ranges[2].offset + ranges[2].len);
    for (p, r) in ranges.iter().enumerate() {
        let got = decode_partition(
            bytes.slice(r.offset as usize..(r.offset + r.len) as usize),
            &stream_header(&schema()).unwrap(),
            false,
        )
        .unwrap();
        let got = arrow::compute::concat_batches(&schema(), &got).unwrap();
        let want: Vec<RecordBatch> = odd
            .iter()
            .filter(|(q, _)| *q == p)
            .map(|(_, b)| b.clone())
            .collect();
        assert_eq!(
            got,
            arrow::compute::concat_batches(&schema(), &want).unwrap()
        );
        assert_eq!(r.rows, got.num_rows() as u64);
    }
}

#[tokio::test]
async fn without_a_disk_manager_a_refusal_fails_naming_the_output() {
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(16 * 1024));
    let disabled = Arc::new(
        DiskManagerBuilder::default()
            .with_mode(DiskManagerMode::Disabled)
            .build()
            .unwrap(),
    );
    // The threshold alone never fails: it is ignored without a disk.
    let (_, _, stats, _) = write(
        output(&unlimited(), 1, Arc::clone(&disabled)),
        &pushes(),
        ONE_PUT,
    )
    .await;
    assert_eq!(stats.spills, 0);

    let mut out = output(&pool, 1, disabled);
    let err = pushes()
        .into_iter()
        .find_map(|(p, b)| out.push(p, b).err())
        .expect("the pool refuses");
    let text = err.to_string();
    assert!(
        matches!(err, DataFusionError::ResourcesExhausted(_)),
        "{text}"
    );
    assert!(
        text.contains("stage output x/q/s1/t0/a0")
            && text.contains("DiskManager is disabled")
            && text.contains("ShuffleWriteExec[test]"),
        "{text}"
    );
}

/// Memory multipart uploads that record their parts, how many were in
/// flight at most, and aborts; part `fail_part` (0-based) fails.
#[derive(Debug, Default)]
struct PartStore {
    memory: InMemory,
    parts: Arc<Mutex<Vec<usize>>>,
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
    aborts: Arc<AtomicUsize>,
    fail_part: Option<usize>,
}

#[derive(Debug)]
struct PartUpload {
    inner: Box<dyn MultipartUpload>,
    parts: Arc<Mutex<Vec<usize>>>,
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
    aborts: Arc<AtomicUsize>,
    fail_part: Option<usize>,
}

#[async_trait]
impl MultipartUpload for PartUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let index = {
            let mut parts = self.parts.lock().unwrap();
            parts.push(data.content_length());
            parts.len() - 1
        };
        let inner = self.inner.put_part(data);
        let (now, most) = (
            Arc::clone(&self.in_flight),
            Arc::clone(&self.most_in_flight),
        );
        let fail = self.fail_part == Some(index);
        async move {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            now.fetch_sub(1, Ordering::SeqCst);
            if fail {
                return Err(object_store::Error::Generic {
                    store: "test",
                    source: "part refused".into(),
                });
            }
            inner.await
        }
        .boxed()
    }
    async fn complete(&mut self) -> object_store::Result<PutResult> {
        self.inner.complete().await
    }
    async fn abort(&mut self) -> object_store::Result<()> {
        self.aborts.fetch_add(1, Ordering::SeqCst);
        self.inner.abort().await
    }
}

impl fmt::Display for PartStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PartStore")
    }
}

#[async_trait]
impl ObjectStore for PartStore {
    async fn put_opts(
        &self,
        l: &Path,
        p: PutPayload,
        o: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.memory.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Ok(Box::new(PartUpload {
            inner: self.memory.put_multipart_opts(l, o).await?,
            parts: Arc::clone(&self.parts),
            in_flight: Arc::clone(&self.in_flight),
            most_in_flight: Arc::clone(&self.most_in_flight),
            aborts: Arc::clone(&self.aborts),
            fail_part: self.fail_part,
        }))
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        self.memory.get_opts(l, o).await
    }
    fn delete_stream(
        &self,
        l: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.memory.delete_stream(l)
    }
    fn list(&self, p: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.memory.list(p)
    }
    async fn list_with_delimiter(&self, p: Option<&Path>) -> object_store::Result<ListResult> {
        self.memory.list_with_delimiter(p).await
    }
    async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> object_store::Result<()> {
        self.memory.copy_opts(f, t, o).await
    }
}

fn memory_object(chunks: &[usize]) -> (ObjectBytes, Vec<u8>) {
    let mut object = ObjectBytes::new(None);
    let mut all = Vec::new();
    for (i, n) in chunks.iter().enumerate() {
        let chunk: Vec<u8> = (0..*n).map(|j| (i * 31 + j) as u8).collect();
        all.extend_from_slice(&chunk);
        object.push(Piece::Memory(Bytes::from(chunk)));
    }
    (object, all)
}

#[tokio::test]
async fn an_upload_is_one_put_or_exact_parts_bounded_in_flight() {
    let options = UploadOptions {
        max_put_bytes: 1000,
        part_bytes: 1000,
        concurrency: 2,
    };
    let path = Path::from("o");

    let store = Arc::new(PartStore::default());
    let (object, _) = memory_object(&[300, 700]);
    let dyn_store: Arc<dyn ObjectStore> = Arc::clone(&store) as _;
    assert_eq!(upload(&dyn_store, &path, object, options).await.unwrap(), 1);
    assert!(store.parts.lock().unwrap().is_empty());

    // 6001 bytes: six whole parts and a last one of one byte.
    let (object, all) = memory_object(&[300, 2500, 1, 0, 1999, 1201]);
    assert_eq!(
        upload(&dyn_store, &path, object, options).await.unwrap(),
        2 + 7
    );
    assert_eq!(
        *store.parts.lock().unwrap(),
        vec![1000, 1000, 1000, 1000, 1000, 1000, 1]
    );
    assert_eq!(store.most_in_flight.load(Ordering::SeqCst), 2);
    let stored = store.get(&path).await.unwrap().bytes().await.unwrap();
    assert_eq!(stored.as_ref(), all.as_slice());
    assert_eq!(store.aborts.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_failed_part_aborts_the_upload() {
    let store = Arc::new(PartStore {
        fail_part: Some(2),
        ..PartStore::default()
    });
    let dyn_store: Arc<dyn ObjectStore> = Arc::clone(&store) as _;
    let (object, _) = memory_object(&[10_000]);
    let path = Path::from("x/q/s1/t0/a0");
    let options = UploadOptions {
        max_put_bytes: 1000,
        part_bytes: 1000,
        concurrency: 2,
    };
    let err = upload(&dyn_store, &path, object, options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("exchange object x/q/s1/t0/a0") && err.contains("part refused"),
        "{err}"
    );
    assert_eq!(store.aborts.load(Ordering::SeqCst), 1);
    assert!(store.get(&path).await.is_err(), "no object after an abort");
}

#[test]
fn upload_part_buffers_are_reserved_as_the_pool_allows() {
    use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryConsumer, MemoryPool};
    let part = 5 * 1024 * 1024;
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(3 * part + 10));
    // Room for three part buffers: two in flight and one being read back.
    let mut r = MemoryConsumer::new("upload").register(&pool);
    assert_eq!(upload::reserve_parts(&mut r, part, 4), 2);
    assert_eq!(r.size(), 3 * part);
    // No room left: one part at a time, nothing reserved.
    let mut more = MemoryConsumer::new("upload 2").register(&pool);
    assert_eq!(upload::reserve_parts(&mut more, part, 4), 1);
    assert_eq!(more.size(), 0);
    drop(r);
    let mut all = MemoryConsumer::new("upload 3").register(&pool);
    assert_eq!(upload::reserve_parts(&mut all, part, 1), 1);
    assert_eq!(all.size(), 2 * part);
}
