use super::*;

fn units(sizes: &[(&str, u64)]) -> ScanUnits {
    let mut s = ScanUnits::default();
    for (i, (p, b)) in sizes.iter().enumerate() {
        s.units.push(RowGroupUnit {
            path: p.to_string(),
            file_size: 1000,
            last_modified_ns: 0,
            row_group_count: 10,
            row_group: i,
            bytes: *b,
            rows: 10,
            partition_values: vec![],
            deleted: None,
            chunk_bytes: 0,
        });
    }
    s
}

fn count(tasks: &[Vec<ScanAssignment>]) -> Vec<usize> {
    tasks
        .iter()
        .map(|t| {
            t.iter()
                .flat_map(|a| &a.files)
                .map(|f| f.row_groups.len())
                .sum()
        })
        .collect()
}

#[test]
fn sized_by_bytes_never_splitting_a_row_group() {
    let s = units(&[
        ("a", 10),
        ("a", 10),
        ("a", 10),
        ("b", 10),
        ("b", 10),
        ("b", 10),
    ]);
    let t = assign_tasks(std::slice::from_ref(&s), 20, Spread::at_least(1), false);
    assert_eq!(count(&t), vec![2, 2, 2]);
    assert_eq!(
        t[1][0].files.len(),
        2,
        "a task spanning two files lists both"
    );
}

#[test]
fn min_tasks_and_single() {
    let s = units(&[("a", 100), ("a", 100), ("a", 100)]);
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread::at_least(2),
            false
        ))
        .len(),
        2
    );
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread::at_least(8),
            false
        )),
        vec![1, 1, 1]
    );
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1,
            Spread::at_least(8),
            true
        )),
        vec![3]
    );
}

#[test]
fn min_tasks_only_while_each_task_reads_min_task_bytes() {
    // 12 row groups of 100 bytes, a target far above them all.
    let s = units(&[("a", 100); 12]);
    let deal = |min_tasks, min_task_bytes| {
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread {
                min_tasks,
                min_task_bytes,
            },
            false,
        ))
    };
    // 1,200 bytes at 300 a task: 4 of the 8 asked for.
    assert_eq!(deal(8, 300), vec![3, 3, 3, 3]);
    // Enough bytes for all 8 (each reads 150).
    assert_eq!(deal(8, 150).len(), 8);
    // 0 = min_tasks whatever the bytes, up to a task per row group.
    assert_eq!(deal(64, 0).len(), 12);
    // Fewer bytes than one task's minimum: one task.
    assert_eq!(deal(8, 5_000), vec![12]);
    // The target still splits what the minimum would not.
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            400,
            Spread {
                min_tasks: 2,
                min_task_bytes: 1_000
            },
            false
        )),
        vec![4, 4, 4]
    );
    // The clustered split follows the same rule.
    let order: Vec<(usize, bool)> = (0..12).map(|i| (i, true)).collect();
    assert_eq!(
        count(&assign_in_order(
            &s,
            &order,
            1 << 30,
            Spread {
                min_tasks: 8,
                min_task_bytes: 300
            }
        )),
        vec![3, 3, 3, 3]
    );
}

#[test]
fn nothing_to_read_is_one_empty_task() {
    let t = assign_tasks(
        &[ScanUnits::default(), ScanUnits::default()],
        10,
        Spread::at_least(4),
        false,
    );
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].len(), 2);
    assert!(t[0].iter().all(|a| a.files.is_empty()));
}

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

#[test]
fn two_scans_share_tasks() {
    let a = units(&[("a", 10), ("a", 10)]);
    let b = units(&[("b", 10), ("b", 10)]);
    let t = assign_tasks(&[a, b], 20, Spread::at_least(1), false);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0][0].files.len(), 1);
    assert!(t[0][1].files.is_empty());
    assert_eq!(t[1][1].files[0].row_groups, vec![0, 1]);
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

/// Tasks in a clustered order end only where the order allows a cut, take
/// their share of the bytes, and list each file once, its row groups
/// ascending, whatever order the row groups came in.
#[test]
fn tasks_in_a_clustered_order_end_only_at_cuts() {
    let s = units(&[
        ("a", 10),
        ("a", 10),
        ("b", 10),
        ("a", 10),
        ("b", 10),
        ("b", 10),
    ]);
    // Key order: a0 a1 a3 b2 b4 b5; cuts after a1, b2 and the last.
    let order = [
        (0, false),
        (1, true),
        (3, false),
        (2, true),
        (4, false),
        (5, true),
    ];
    let t = assign_in_order(&s, &order, 10, Spread::at_least(1));
    assert_eq!(count(&t), vec![2, 2, 2]);
    let files: Vec<(String, Vec<usize>)> = t[1][0]
        .files
        .iter()
        .map(|f| (f.path.clone(), f.row_groups.clone()))
        .collect();
    assert_eq!(files, vec![("a".into(), vec![3]), ("b".into(), vec![2])]);
    // Without cuts, one task whatever the target.
    let uncut: Vec<(usize, bool)> = (0..6).map(|i| (i, i == 5)).collect();
    let t = assign_in_order(&s, &uncut, 10, Spread::at_least(4));
    assert_eq!(count(&t), vec![6]);
    assert_eq!(t[0][0].files[0].row_groups, vec![0, 1, 3]);
    // A big target: one task; min_tasks splits at the cuts it can.
    assert_eq!(
        count(&assign_in_order(&s, &order, 1 << 30, Spread::at_least(1))),
        vec![6]
    );
    assert_eq!(
        count(&assign_in_order(&s, &order, 1 << 30, Spread::at_least(2))),
        vec![4, 2]
    );
}
