use super::*;

#[test]
fn footer_tail_follows_the_footers_read() {
    assert_eq!(footer_hint(None), FOOTER_PREFETCH_BYTES);
    // 35 KB (TPC-H SF1 lineitem) -> a quarter more, in 4 KiB steps.
    assert_eq!(footer_hint(Some(35_056)), 45_056);
    assert_eq!(footer_hint(Some(1_079)), FOOTER_MIN_PREFETCH_BYTES);
    assert_eq!(footer_hint(Some(1 << 20)), FOOTER_PREFETCH_BYTES);
}

/// A Parquet file of `groups` row groups of a few columns, in memory.
fn parquet_file(groups: usize) -> bytes::Bytes {
    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, Arc::clone(&schema), Some(props)).unwrap();
    let n = groups as i64 * 100;
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("row {i}")),
            )),
        ],
    )
    .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    bytes::Bytes::from(out)
}

#[tokio::test]
async fn a_footer_longer_than_the_tail_is_read_whole() {
    use object_store::memory::InMemory;
    use object_store::{ObjectStoreExt, PutPayload};
    let store = Arc::new(InMemory::new());
    let file = parquet_file(40);
    let trailer = &file[file.len() - 8..];
    let footer_len = u64::from(u32::from_le_bytes(trailer[..4].try_into().unwrap())) + 8;
    assert!(
        footer_len > FOOTER_MIN_PREFETCH_BYTES as u64,
        "{footer_len}"
    );
    let path = Path::from("t/a.parquet");
    store
        .put(&path, PutPayload::from(file.clone()))
        .await
        .unwrap();
    let meta = store.head(&path).await.unwrap();
    let url = datafusion::execution::object_store::ObjectStoreUrl::parse("memory://").unwrap();
    let runtime = RuntimeEnv::default();
    runtime.register_object_store(url.as_ref(), store);
    for hint in [FOOTER_PREFETCH_BYTES, FOOTER_MIN_PREFETCH_BYTES] {
        let cache = FooterCache::default();
        let (metadata, len) = cache.footer(&runtime, &url, &meta, hint).await.unwrap();
        assert_eq!(metadata.num_row_groups(), 40, "tail of {hint} bytes");
        assert_eq!(len, Some(footer_len), "tail of {hint} bytes");
        // Cached: no read, no length.
        let (again, len) = cache.footer(&runtime, &url, &meta, hint).await.unwrap();
        assert_eq!((again.num_row_groups(), len), (40, None));
    }
}

/// The footer cache holds at most its bytes: past them the oldest
/// footers go, the newest stay.
#[test]
fn cached_footers_keep_to_their_bytes_oldest_out_first() {
    use arrow::array::{Int64Array, RecordBatch};
    let batch = RecordBatch::try_from_iter([(
        "x",
        Arc::new(Int64Array::from(vec![1, 2, 3])) as arrow::array::ArrayRef,
    )])
    .unwrap();
    let mut bytes = Vec::new();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let footer = Arc::new(
        ParquetMetaDataReader::new()
            .parse_and_finish(&bytes::Bytes::from(bytes))
            .unwrap(),
    );
    let size = footer.memory_size();
    let key = |n: u64| ("file:///".to_string(), format!("f{n}"), n, 0i64);
    let mut cache = CachedFooters::default();
    for n in 0..5 {
        cache.insert(key(n), Arc::clone(&footer), 2 * size);
        cache.insert(key(n), Arc::clone(&footer), 2 * size);
    }
    assert!(cache.bytes <= 2 * size);
    assert_eq!(cache.by_key.len(), 2);
    assert!(cache.by_key.contains_key(&key(3)) && cache.by_key.contains_key(&key(4)));
    assert_eq!(cache.order.len(), 2);
}
