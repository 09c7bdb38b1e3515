//! Tests of partition layout inspection and counting.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::{ObjectStoreExt, PutPayload};

use super::*;

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
