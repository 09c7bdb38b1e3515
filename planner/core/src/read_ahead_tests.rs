use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetAccessPlan;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::source::DataSourceExec;
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::physical_plan::collect;
use datafusion::prelude::SessionContext;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use super::*;
use crate::requests::{CountingStore, RequestCounter};

const ROWS_PER_GROUP: usize = 1_000;
const GROUPS: usize = 40;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("pad", DataType::Utf8, false),
        Field::new("v", DataType::Int64, false),
    ]))
}

/// A file of GROUPS row groups of three columns, in an in-memory store.
async fn file() -> (Arc<dyn ObjectStore>, Path, u64) {
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema(), Some(props)).unwrap();
    for g in 0..GROUPS {
        let base = (g * ROWS_PER_GROUP) as i64;
        let k = Int64Array::from_iter_values(base..base + ROWS_PER_GROUP as i64);
        let pad =
            StringArray::from_iter_values((0..ROWS_PER_GROUP).map(|i| format!("row {i:>40}")));
        let v = Int64Array::from_iter_values((0..ROWS_PER_GROUP as i64).map(|i| i * 7 + g as i64));
        let batch =
            RecordBatch::try_new(schema(), vec![Arc::new(k), Arc::new(pad), Arc::new(v)]).unwrap();
        w.write(&batch).unwrap();
    }
    w.close().unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("t/data.parquet");
    let size = buf.len() as u64;
    store.put(&path, PutPayload::from(buf)).await.unwrap();
    (store, path, size)
}

/// Scan columns `projection` of row groups `groups` with `window_bytes` of
/// read-ahead (0 = none); the rows, and the GETs the scan made.
async fn scan(
    groups: &[usize],
    projection: &[usize],
    window_bytes: u64,
) -> (Vec<RecordBatch>, u64) {
    scan_in(groups, projection, window_bytes, None).await
}

/// [`scan`] with windows reserving their bytes in `pool`.
async fn scan_in(
    groups: &[usize],
    projection: &[usize],
    window_bytes: u64,
    pool: Option<Arc<dyn MemoryPool>>,
) -> (Vec<RecordBatch>, u64) {
    let (store, path, size) = file().await;
    let counter = RequestCounter::new();
    let counted = CountingStore::wrap(store, &counter);
    let mut plan = ParquetAccessPlan::new_none(GROUPS);
    for &g in groups {
        plan.scan(g);
    }
    let piece = PartitionedFile::new(path.to_string(), size).with_extension(plan);
    let mut source = ParquetSource::new(schema());
    if window_bytes > 0 {
        let mut factory = ReadAheadFactory::new(None, Arc::clone(&counted), window_bytes, 2);
        if let Some(pool) = pool {
            factory = factory.with_memory_pool(pool);
        }
        source = source.with_parquet_file_reader_factory(Arc::new(factory));
    }
    let config = FileScanConfigBuilder::new(
        ObjectStoreUrl::parse("memory://").unwrap(),
        Arc::new(source),
    )
    .with_file_groups(vec![FileGroup::new(vec![piece])])
    .with_projection_indices(Some(projection.to_vec()))
    .unwrap()
    .build();
    let ctx = SessionContext::new();
    ctx.register_object_store(&url::Url::parse("memory://").unwrap(), Arc::clone(&counted));
    let exec = DataSourceExec::from_data_source(config);
    let batches = collect(exec, ctx.task_ctx()).await.unwrap();
    (batches, counter.snapshot().get)
}

fn rows(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| arrow::util::display::array_value_to_string(c, r).unwrap())
                    .collect(),
            );
        }
    }
    out
}

#[tokio::test]
async fn read_ahead_reads_the_same_rows_with_fewer_requests() {
    let groups: Vec<usize> = (0..GROUPS).filter(|g| g % 3 != 1).collect();
    for projection in [vec![0, 2], vec![2], vec![0, 1, 2]] {
        let (plain, plain_gets) = scan(&groups, &projection, 0).await;
        let (ahead, ahead_gets) = scan(&groups, &projection, 1 << 20).await;
        let (want, got) = (rows(&plain), rows(&ahead));
        assert_eq!(want.len(), groups.len() * ROWS_PER_GROUP, "{projection:?}");
        assert_eq!(want, got, "{projection:?}");
        assert!(
            ahead_gets * 3 < plain_gets,
            "columns {projection:?}: {ahead_gets} GETs with read-ahead, {plain_gets} without"
        );
    }
}

#[tokio::test]
async fn tiny_windows_still_read_every_row_group_once() {
    // Windows smaller than one row group: one row group per window.
    let groups: Vec<usize> = (5..25).collect();
    let (plain, plain_gets) = scan(&groups, &[0, 2], 0).await;
    let (ahead, ahead_gets) = scan(&groups, &[0, 2], 1).await;
    assert_eq!(rows(&plain), rows(&ahead));
    assert!(ahead_gets <= plain_gets, "{ahead_gets} > {plain_gets}");
}

#[tokio::test]
async fn a_single_row_group_and_no_row_group() {
    let (plain, _) = scan(&[GROUPS - 1], &[1], 0).await;
    let (ahead, _) = scan(&[GROUPS - 1], &[1], 1 << 20).await;
    assert_eq!(rows(&plain), rows(&ahead));
    let (none, gets) = scan(&[], &[0], 1 << 20).await;
    assert!(rows(&none).is_empty());
    assert!(gets <= 2, "{gets} GETs for no row group");
}

#[tokio::test]
async fn the_first_window_is_the_first_row_group_alone() {
    // A budget larger than the file: the first row group comes on its own
    // (the decoder starts on it), every other in the next window. So one
    // more GET than a scan of one row group, whatever the row groups.
    let all: Vec<usize> = (0..GROUPS).collect();
    let (_, one) = scan(&[3], &[0, 2], 1 << 30).await;
    let (ahead, gets) = scan(&all, &[0, 2], 1 << 30).await;
    let (plain, _) = scan(&all, &[0, 2], 0).await;
    assert_eq!(rows(&plain), rows(&ahead));
    assert_eq!(
        gets,
        one + 1,
        "{gets} GETs for all row groups, {one} for one"
    );
}

#[test]
fn windows_take_whole_row_groups_up_to_the_budget() {
    let chunk = |s: u64| vec![s..s + 10, s + 10..s + 30, s + 30..s + 35];
    let layout = Layout {
        chunks: (0..6).map(|i| chunk(i * 35)).collect(),
        order: vec![0, 2, 3, 5],
    };
    let cols: BTreeSet<usize> = [0, 2].into_iter().collect();
    // 15 bytes per row group of these columns.
    let (ranges, end) = layout.window(0, &cols, 30);
    assert_eq!(end, 2);
    assert_eq!(ranges, vec![0..10, 30..35, 70..80, 100..105]);
    // A row group bigger than the budget is a window on its own.
    let (ranges, end) = layout.window(3, &cols, 1);
    assert_eq!((ranges.len(), end), (2, 4));
    assert_eq!(layout.locate(&(72..75), 0), Some((1, 0)));
    assert_eq!(
        layout.locate(&(72..75), 3),
        Some((1, 0)),
        "looked for behind too"
    );
    assert_eq!(
        layout.locate(&(36..40), 0),
        None,
        "row group 1 is not planned"
    );
}

#[tokio::test]
async fn windows_the_pool_refuses_are_not_fetched() {
    use datafusion::execution::memory_pool::GreedyMemoryPool;
    let groups: Vec<usize> = (0..GROUPS).collect();
    let (plain, plain_gets) = scan(&groups, &[0, 2], 0).await;
    // No room for any window: every request goes to the store as asked.
    let tiny: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(16));
    let (refused, refused_gets) = scan_in(&groups, &[0, 2], 1 << 20, Some(Arc::clone(&tiny))).await;
    assert_eq!(rows(&plain), rows(&refused));
    assert_eq!(refused_gets, plain_gets);
    assert_eq!(tiny.reserved(), 0);
    // Room for them: windows, fewer GETs, and nothing reserved once done.
    let room: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(64 << 20));
    let (ahead, ahead_gets) = scan_in(&groups, &[0, 2], 1 << 20, Some(Arc::clone(&room))).await;
    assert_eq!(rows(&plain), rows(&ahead));
    assert!(ahead_gets * 3 < plain_gets, "{ahead_gets} vs {plain_gets}");
    assert_eq!(room.reserved(), 0);
}
