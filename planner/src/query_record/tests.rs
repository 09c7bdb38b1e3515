//! Tests of the query record and both stores.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use arrow::array::{Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::parser::ParserError;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};

use super::*;

#[test]
fn errors_keep_their_kind() {
    let e = DataFusionError::Plan("table 'x' not found".into()).context("planning");
    assert_eq!(
        QueryFailure::from_datafusion(&e),
        QueryFailure::new(ErrorKind::Plan, "table 'x' not found")
    );
    let e = DataFusionError::SQL(
        Box::new(ParserError::ParserError("bad at Line: 1, Column: 2".into())),
        None,
    );
    assert_eq!(QueryFailure::from_datafusion(&e).kind, ErrorKind::Syntax);
    let e = DataFusionError::Execution("stage s1, task 0 failed".into());
    assert_eq!(
        QueryFailure::from_datafusion(&e).message,
        "stage s1, task 0 failed"
    );
}

fn batch(schema: &SchemaRef, from: i64, n: i64) -> RecordBatch {
    RecordBatch::try_new(
        Arc::clone(schema),
        vec![
            Arc::new(Int64Array::from_iter_values(from..from + n)),
            Arc::new(StringArray::from_iter_values(
                (from..from + n).map(|i| format!("row {i}")),
            )),
        ],
    )
    .unwrap()
}

fn stream_of(pages: &[RecordBatch]) -> BoxStream<'static, Result<RecordBatch>> {
    let pages: Vec<Result<RecordBatch>> = pages.iter().cloned().map(Ok).collect();
    futures::stream::iter(pages).boxed()
}

/// Pages of rows that do not compress: `pages` of them are several parts of
/// a multipart upload.
fn big_pages(pages: i64) -> (SchemaRef, Vec<RecordBatch>) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let page = |p: i64| {
        let ids = p * 1000..(p + 1) * 1000;
        let names = ids.clone().map(|i| {
            let h = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            format!(
                "{h:016x}{:016x}{:016x}",
                h.rotate_left(17),
                h.rotate_left(41)
            )
        });
        RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(ids)),
                Arc::new(StringArray::from_iter_values(names)),
            ],
        )
        .unwrap()
    };
    let batches = (0..pages).map(page).collect();
    (schema, batches)
}

/// A result of several upload parts, written as its pages come and read
/// back a page at a time; a stream failing half way stores nothing.
async fn large_result(store: &dyn QueryStore) {
    let (schema, pages) = big_pages(450);
    let index = store
        .write_result("big", &schema, stream_of(&pages))
        .await
        .unwrap();
    let bytes: u64 = index.pages.iter().map(|p| p.len).sum();
    assert!(
        bytes > 2 * object::RESULT_PART_BYTES as u64,
        "{bytes} bytes: not a multipart result"
    );
    assert_eq!(index.rows(), 450_000);
    for n in [0, 157, 449] {
        let page = store
            .read_page("big", &schema, &index.pages[n])
            .await
            .unwrap();
        assert_eq!(page, pages[n]);
    }
    store.forget("big").await.unwrap();

    let failing = futures::stream::iter(pages.clone().into_iter().map(Ok))
        .chain(futures::stream::once(async {
            Err(DataFusionError::Execution(
                "the result's reader failed".into(),
            ))
        }))
        .boxed();
    let err = store
        .write_result("broken", &schema, failing)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("the result's reader failed"),
        "{err}"
    );
}

/// The contract every store keeps: records replace, pages come back as
/// written, an empty result is one empty page, a cancel request stands
/// apart from the record, forgetting removes everything.
async fn round_trip(store: &dyn QueryStore) {
    assert_eq!(store.read_record("q1").await.unwrap(), None);

    let mut record = QueryRecord::queued("q1", "slug", "select 1");
    store.write_record(&record).await.unwrap();
    assert_eq!(
        store.read_record("q1").await.unwrap().unwrap().state,
        QueryState::Queued
    );

    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
    ]));
    let pages = vec![batch(&schema, 0, 3), batch(&schema, 3, 1000)];
    let index = store
        .write_result("q1", &schema, stream_of(&pages))
        .await
        .unwrap();
    assert_eq!(index.pages.len(), 2);
    assert_eq!(index.rows(), 1003);
    assert_eq!(*index.decode_schema().unwrap(), *schema);
    let second = store
        .read_page("q1", &schema, &index.pages[1])
        .await
        .unwrap();
    assert_eq!(second, pages[1]);
    record.finish(index);
    assert_eq!(record.rows, 1003);
    store.write_record(&record).await.unwrap();
    let back = store.read_record("q1").await.unwrap().unwrap();
    assert_eq!(back.state, QueryState::Finished);
    assert_eq!(back.result, record.result);

    let empty = store
        .write_result("q2", &schema, stream_of(&[]))
        .await
        .unwrap();
    assert_eq!(empty.pages.len(), 1);
    assert_eq!(empty.pages[0].rows, 0);
    let page = store
        .read_page("q2", &schema, &empty.pages[0])
        .await
        .unwrap();
    assert_eq!((page.num_rows(), page.schema()), (0, Arc::clone(&schema)));

    assert!(!store.cancel_requested("q1").await.unwrap());
    store.request_cancel("q1").await.unwrap();
    assert!(store.cancel_requested("q1").await.unwrap());
    assert_eq!(
        store.read_record("q1").await.unwrap().unwrap().state,
        QueryState::Finished,
        "a cancel request does not touch the record"
    );

    store.forget("q1").await.unwrap();
    assert_eq!(store.read_record("q1").await.unwrap(), None);
    assert!(!store.cancel_requested("q1").await.unwrap());
    assert!(
        store
            .read_page("q1", &schema, &back.result.unwrap().pages[0])
            .await
            .is_err()
    );
    store.forget("never-there").await.unwrap();
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    let store = MemoryQueryStore::new();
    round_trip(&store).await;
    assert_eq!(store.len(), 1, "q2 is still held");
}

#[tokio::test]
async fn the_memory_store_with_result_files_keeps_the_contract() {
    let parent = tempfile::tempdir().unwrap();
    let store = MemoryQueryStore::with_result_files(parent.path()).unwrap();
    round_trip(&store).await;
    large_result(&store).await;
    let files = |dir: &std::path::Path| {
        walk(dir)
            .into_iter()
            .filter(|p| p.is_file())
            .collect::<Vec<_>>()
    };
    // q2's result stays until it is forgotten; nothing else is left.
    assert_eq!(files(parent.path()).len(), 1, "{:?}", files(parent.path()));
    store.forget("q2").await.unwrap();
    assert!(
        files(parent.path()).is_empty(),
        "{:?}",
        files(parent.path())
    );
    drop(store);
    assert!(
        walk(parent.path()).is_empty(),
        "the result directory is removed"
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(walk(&path));
        }
        all.push(path);
    }
    all
}

#[tokio::test]
async fn the_object_store_keeps_the_contract() {
    let objects = Arc::new(InMemory::new());
    let store = ObjectQueryStore::new(objects.clone(), "memory://", "state/");
    round_trip(&store).await;
    large_result(&store).await;
    assert_eq!(store.stop_marker("q1").key, "state/q1/stop");
    assert_eq!(store.stop_marker("q1").store_url, "memory://");
    store.write_stop("q2").await.unwrap();
    store.write_attempt_stop("q2", 2, 7, 0).await.unwrap();
    assert!(
        objects
            .head(&object_store::path::Path::from("state/q2/stop-s2-t7-a0"))
            .await
            .is_ok()
    );
    // A generation is claimed once: a duplicate invocation finds it taken.
    assert!(store.claim("q2", "run-g1").await.unwrap());
    assert!(!store.claim("q2", "run-g1").await.unwrap());
    assert!(store.claim("q2", "run-g2").await.unwrap());
    store.forget("q2").await.unwrap();
    let left = objects.list(None).collect::<Vec<_>>().await;
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cancel_ends_a_record_canceled() {
    let mut record = QueryRecord::queued("q", "s", "x");
    record.fail(QueryFailure::canceled());
    assert_eq!(record.state, QueryState::Canceled);
}
