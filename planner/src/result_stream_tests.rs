use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use arrow::ipc::CompressionType;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use squall_core::exchange::{decode_partition, stream_header};
use squall_core::task::{MapOutput, PartitionRange};

use super::*;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new(
            "tag",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            true,
        ),
    ]))
}

fn batch(schema: &SchemaRef, from: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (from..from + n as i64).collect();
    let names: Vec<Option<String>> = ids
        .iter()
        .map(|i| (i % 7 != 0).then(|| format!("name-{i}-{}", "x".repeat((*i % 13) as usize))))
        .collect();
    let tags: DictionaryArray<Int32Type> = ids
        .iter()
        .map(|i| Some(["red", "green", "blue"][(*i % 3) as usize]))
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids)),
        Arc::new(StringArray::from(names)),
        Arc::new(tags),
    ];
    RecordBatch::try_new(Arc::clone(schema), columns).unwrap()
}

/// One IPC stream of `batches` (lz4), as the exchange writes them: without
/// the schema message the reader puts back.
fn stream(schema: &SchemaRef, batches: &[RecordBatch]) -> Vec<u8> {
    let options = IpcWriteOptions::default()
        .try_with_compression(Some(CompressionType::LZ4_FRAME))
        .unwrap();
    let mut w = StreamWriter::try_new_with_options(Vec::new(), schema, options).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    let whole = w.into_inner().unwrap();
    let header = stream_header(schema).unwrap();
    assert_eq!(&whole[..header.len()], header.as_slice());
    whole[header.len()..].to_vec()
}

/// Two map objects: the first with three partitions (one empty, one of two
/// streams, as a spilled map output has), the second with one.
async fn objects(store: &Arc<dyn ObjectStore>, schema: &SchemaRef) -> Vec<MapOutput> {
    let mut outputs = Vec::new();
    let layouts: Vec<Vec<Vec<Vec<RecordBatch>>>> = vec![
        vec![
            vec![vec![batch(schema, 0, 100), batch(schema, 100, 3)]],
            vec![],
            vec![
                vec![batch(schema, 200, 50)],
                vec![batch(schema, 250, 1), batch(schema, 251, 400)],
            ],
        ],
        vec![vec![vec![batch(schema, 1000, 2000)]]],
    ];
    for (o, partitions) in layouts.into_iter().enumerate() {
        let mut bytes = b"leading bytes of another section".to_vec();
        let mut ranges = Vec::new();
        for streams in partitions {
            let offset = bytes.len() as u64;
            let mut rows = 0;
            for s in &streams {
                rows += s.iter().map(|b| b.num_rows() as u64).sum::<u64>();
                bytes.extend(stream(schema, s));
            }
            ranges.push(PartitionRange {
                offset,
                len: bytes.len() as u64 - offset,
                rows,
            });
        }
        let key = format!("exchange/q/s3/t{o}/a0");
        store
            .put(&Path::from(key.as_str()), PutPayload::from(bytes))
            .await
            .unwrap();
        outputs.push(MapOutput {
            key,
            partitions: ranges,
            keys: None,
        });
    }
    outputs
}

/// What the whole-partition decoder makes of the same objects.
async fn expected(store: &Arc<dyn ObjectStore>, outputs: &[MapOutput]) -> Vec<RecordBatch> {
    let mut all = Vec::new();
    for out in outputs {
        let bytes = store
            .get(&Path::from(out.key.as_str()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        for p in out.partitions.iter().filter(|p| p.len > 0) {
            let slice: Bytes = bytes.slice(p.offset as usize..(p.offset + p.len) as usize);
            all.extend(decode_partition(slice, &stream_header(&schema()).unwrap(), false).unwrap());
        }
    }
    all
}

async fn remaining(store: &Arc<dyn ObjectStore>) -> usize {
    use futures::TryStreamExt;
    store
        .list(None)
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .len()
}

#[tokio::test]
async fn batches_come_in_order_whatever_the_read_size_and_the_objects_go() {
    let schema = schema();
    for chunk in [1, 7, 64, 1000, READ_CHUNK] {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let outputs = objects(&store, &schema).await;
        let want = expected(&store, &outputs).await;
        let result =
            ResultObjects::new(Arc::clone(&store), Arc::clone(&schema), &outputs).with_chunk(chunk);
        assert_eq!(result.rows(), 2554);
        let got = result.collect().await.unwrap();
        assert_eq!(got, want, "read {chunk} bytes at a time");
        assert_eq!(remaining(&store).await, 0, "objects left after reading");
    }
}

#[tokio::test]
async fn an_empty_result_reads_as_no_batch() {
    let schema = schema();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let outputs = vec![MapOutput {
        key: "exchange/q/s1/t0/a0".into(),
        partitions: vec![PartitionRange {
            offset: 0,
            len: 0,
            rows: 0,
        }],
        keys: None,
    }];
    store
        .put(
            &Path::from("exchange/q/s1/t0/a0"),
            PutPayload::from(Vec::new()),
        )
        .await
        .unwrap();
    let result = ResultObjects::new(Arc::clone(&store), schema, &outputs);
    assert!(result.collect().await.unwrap().is_empty());
    assert_eq!(remaining(&store).await, 0);
}

#[tokio::test]
async fn a_truncated_object_is_an_error_naming_it() {
    let schema = schema();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let mut outputs = objects(&store, &schema).await;
    // The last partition claims 10 bytes fewer than its streams take.
    outputs[1].partitions[0].len -= 10;
    let err = ResultObjects::new(Arc::clone(&store), schema, &outputs)
        .with_chunk(4096)
        .collect()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("exchange/q/s3/t1/a0"), "{err}");
    assert!(err.contains("ends inside a message"), "{err}");
}

#[tokio::test]
async fn a_result_dropped_unread_deletes_its_objects() {
    let schema = schema();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let outputs = objects(&store, &schema).await;
    let mut stream = ResultObjects::new(Arc::clone(&store), schema, &outputs).into_stream();
    use futures::StreamExt;
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    assert_eq!(remaining_after_deletes(&store).await, 0);
}

/// Batches of only NULL-typed columns have IPC messages without a body,
/// which the decoder finishes only once it sees the next bytes; two such
/// streams in one object, read a byte at a time and whole.
#[tokio::test]
async fn batches_of_only_null_columns_read_back() {
    use arrow::array::NullArray;
    let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new("x", DataType::Null, true)]));
    let nulls = |n: usize| {
        RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(NullArray::new(n)) as ArrayRef],
        )
        .unwrap()
    };
    let first = stream(&schema, &[nulls(3), nulls(2)]);
    let second = stream(&schema, &[nulls(4)]);
    let mut bytes = first.clone();
    bytes.extend_from_slice(&second);
    for chunk in [1, 5, 1000] {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let key = "exchange/q/s1/t0/a0";
        store
            .put(&Path::from(key), PutPayload::from(bytes.clone()))
            .await
            .unwrap();
        let outputs = vec![MapOutput {
            key: key.into(),
            partitions: vec![
                PartitionRange {
                    offset: 0,
                    len: first.len() as u64,
                    rows: 5,
                },
                PartitionRange {
                    offset: first.len() as u64,
                    len: second.len() as u64,
                    rows: 4,
                },
            ],
            keys: None,
        }];
        let got = ResultObjects::new(Arc::clone(&store), Arc::clone(&schema), &outputs)
            .with_chunk(chunk)
            .collect()
            .await
            .unwrap();
        let rows: Vec<usize> = got.iter().map(RecordBatch::num_rows).collect();
        assert_eq!(rows, vec![3, 2, 4], "read {chunk} bytes at a time");
    }
}

/// The statement's timeout bounds the reading of its result: past the
/// deadline the next batch is the timeout's error, and the objects go.
#[tokio::test]
async fn reading_past_the_statement_deadline_fails_with_its_timeout() {
    use futures::StreamExt;
    let schema = schema();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let outputs = objects(&store, &schema).await;
    let timeout = std::time::Duration::from_secs(5);
    let in_time = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let read = ResultObjects::new(Arc::clone(&store), Arc::clone(&schema), &outputs)
        .with_deadline(in_time, "q1", timeout)
        .collect()
        .await
        .unwrap();
    assert!(!read.is_empty());
    let outputs = objects(&store, &schema).await;
    let past = std::time::Instant::now();
    let mut stream = ResultObjects::new(Arc::clone(&store), schema, &outputs)
        .with_deadline(past, "q1", timeout)
        .into_stream();
    let e = stream.next().await.unwrap().unwrap_err().to_string();
    assert!(crate::limits::is_timeout_message(&e), "{e}");
    drop(stream);
    assert_eq!(remaining_after_deletes(&store).await, 0);
}

/// The objects left once the deletes a dropped result spawned have had a
/// second to run.
async fn remaining_after_deletes(store: &Arc<dyn ObjectStore>) -> usize {
    for _ in 0..100 {
        if remaining(store).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    remaining(store).await
}
