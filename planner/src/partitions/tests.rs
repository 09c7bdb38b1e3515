//! Tests of partition layout inspection and counting.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::{ObjectStoreExt, PutPayload};

use super::*;
use squall_core::requests::{CountingStore, RequestCounter};

fn set(values: &[&str]) -> BTreeSet<String> {
    values.iter().map(|v| v.to_string()).collect()
}

#[test]
fn types_are_the_narrowest_that_read_every_value() {
    assert_eq!(infer_type(&set(&["1995", "-3", "0"])), DataType::Int64);
    assert_eq!(
        infer_type(&set(&["2026-11-01", "1998-02-28"])),
        DataType::Date32
    );
    assert_eq!(infer_type(&set(&["2026-11-01", "1998"])), DataType::Utf8);
    assert_eq!(infer_type(&set(&["1-URGENT", "5-LOW"])), DataType::Utf8);
    assert_eq!(infer_type(&set(&["1", HIVE_NULL])), DataType::Int64);
    assert_eq!(infer_type(&set(&[HIVE_NULL])), DataType::Utf8);
}

#[test]
fn a_file_names_its_table_folder() {
    assert_eq!(
        table_root("data/orders/o_year=1995/p=x/f.parquet", "o_year"),
        Some("data/orders")
    );
    assert_eq!(table_root("o_year=1995/f.parquet", "o_year"), Some(""));
    assert_eq!(table_root("data/orders/f.parquet", "o_year"), None);
    // A folder that only ends with the column's name is not its folder.
    assert_eq!(
        table_root("data/xo_year=1/o_year=2/f.parquet", "o_year"),
        Some("data/xo_year=1")
    );
}

#[test]
fn counts_add_up_and_only_known_totals_make_a_total() {
    let a = PartitionCount {
        read: 2,
        total: Some(10),
    };
    let b = PartitionCount {
        read: 1,
        total: Some(4),
    };
    let sum = PartitionCount::sum([a, b, PartitionCount::default()].into_iter());
    assert_eq!((sum.read, sum.total, sum.pruned()), (3, Some(14), 11));
    let unknown = PartitionCount {
        read: 1,
        total: None,
    };
    assert_eq!(PartitionCount::sum([a, unknown].into_iter()).total, None);
    assert_eq!(
        PartitionCount::sum(std::iter::empty()),
        PartitionCount::default()
    );
    let registry = PartitionRegistry::default();
    registry.record("s3://bucket/", "/t/orders/", 7);
    assert_eq!(registry.partitions("s3://bucket", "t/orders"), Some(7));
    assert_eq!(registry.partitions("s3://other/", "t/orders"), None);
}

/// [`inspect`] of the folder `table` of `store`, its files named `*.parquet`.
async fn inspect_named(store: &dyn ObjectStore, table: &str) -> Result<TableLayout> {
    let location = format!("memory://{table}");
    inspect(
        store,
        &Path::from(table),
        table,
        &location,
        DataFiles::NamedParquet,
    )
    .await
}

#[tokio::test]
async fn inspect_finds_columns_partitions_and_files() {
    let store = Arc::new(InMemory::new());
    for key in [
        "t/dt=2026-11-01/region=EU/a.parquet",
        "t/dt=2026-11-01/region=US/b.parquet",
        "t/dt=2026-11-02/region=EU/c.parquet",
        "t/dt=2026-11-02/region=EU/d.parquet",
        "t/_SUCCESS",
        "t/.hidden/x.parquet",
        "t/dt=2026-11-02/_tmp/e.parquet",
        "t/dt=2026-11-02/region=EU/000000_0",
    ] {
        store
            .put(&Path::from(key), PutPayload::from_static(b"x"))
            .await
            .unwrap();
    }
    let layout = inspect_named(store.as_ref(), "t").await.unwrap();
    assert_eq!(
        layout,
        TableLayout {
            files: 4,
            columns: vec![
                ("dt".to_string(), DataType::Date32),
                ("region".to_string(), DataType::Utf8)
            ],
            partitions: 3,
            other_files: 1,
            other_example: Some("dt=2026-11-02/region=EU/000000_0".into()),
            null_folders: vec![],
            spelled_otherwise: vec![],
            folders: vec![],
        }
    );
    store
        .put(
            &Path::from("t/loose.parquet"),
            PutPayload::from_static(b"x"),
        )
        .await
        .unwrap();
    let err = inspect_named(store.as_ref(), "t")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("partitioned differently"), "{err}");
    let flat = inspect_named(store.as_ref(), "nothing").await.unwrap();
    assert_eq!((flat.files, flat.columns.len(), flat.partitions), (0, 0, 0));
    // Folders that are no partitions (Firehose's 2024/05/01/) hold rows;
    // hidden and bookkeeping ones do not; mixed with key=value, refused.
    for key in [
        "n/top.parquet",
        "n/2024/05/a.parquet",
        "n/2024/05/b.parquet",
        "n/2024/06/c.parquet",
        "n/_tmp/d.parquet",
        "n/2024/.x/e.parquet",
    ] {
        store
            .put(&Path::from(key), PutPayload::from_static(b"x"))
            .await
            .unwrap();
    }
    let nested = inspect_named(store.as_ref(), "n").await.unwrap();
    assert_eq!((nested.files, nested.columns.len()), (4, 0));
    assert_eq!(nested.folders, ["", "2024/05", "2024/06"]);
    store
        .put(
            &Path::from("n/2024/k=1/f.parquet"),
            PutPayload::from_static(b"x"),
        )
        .await
        .unwrap();
    let err = inspect_named(store.as_ref(), "n")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not a key=value partition folder beside others"),
        "{err}"
    );
}

/// A big table on a store listed in key order is listed as key ranges at
/// once, and the listing holds every object once, in key order, as one
/// listing would: files after the first pages in the folder they end in,
/// a file at the top between folders, an object named as a folder.
#[tokio::test]
async fn big_tables_listed_as_ranges_at_once_list_every_object_once() {
    use object_store::{ObjectStoreExt, PutPayload};
    let store = Arc::new(InMemory::new());
    let mut keys = vec!["t/_SUCCESS".to_string(), "t/dt=0050".to_string()];
    for day in 0..100 {
        for part in 0..60 {
            keys.push(format!("t/dt={day:04}/part-{part:03}.parquet"));
        }
    }
    keys.push("t/dt=0070.parquet".to_string());
    keys.push("u/dt=0000/part-000.parquet".to_string());
    for key in &keys {
        store
            .put(&Path::from(key.as_str()), PutPayload::from_static(b"x"))
            .await
            .unwrap();
    }
    let root = Path::from("t");
    let (pages, ranges) = (RequestCounter::new(), RequestCounter::new());
    let counted = |counter: &Arc<RequestCounter>| {
        CountingStore::new(
            Arc::clone(&store) as Arc<dyn ObjectStore>,
            Arc::clone(counter),
        )
    };
    let once = list_table(
        &counted(&pages),
        &root,
        "t",
        "memory://t",
        Listing::Sequential,
    )
    .await
    .unwrap();
    let at_once = list_table(
        &counted(&ranges),
        &root,
        "t",
        "memory://t",
        Listing::RangesAtOnce,
    )
    .await
    .unwrap();
    // 7 pages one after the other; 5, the folders, then ranges at once.
    assert_eq!(pages.snapshot().list, 7);
    assert!(ranges.snapshot().list > 10, "{:?}", ranges.snapshot());
    let names = |l: &[ObjectMeta]| l.iter().map(|m| m.location.to_string()).collect::<Vec<_>>();
    let mut want: Vec<String> = keys.into_iter().filter(|k| k.starts_with("t/")).collect();
    want.sort();
    assert_eq!(names(&once), want);
    assert_eq!(names(&at_once), want);
    // A table of folders holding few files each is listed once.
    let flat = Arc::new(InMemory::new());
    for i in 0..6000 {
        let key = format!("f/k={i:05}/x.parquet");
        flat.put(&Path::from(key), PutPayload::from_static(b"x"))
            .await
            .unwrap();
    }
    let listed = list_table(
        flat.as_ref(),
        &Path::from("f"),
        "f",
        "memory://f",
        Listing::RangesAtOnce,
    )
    .await
    .unwrap();
    assert_eq!(listed.len(), 6000);
}
