//! `SHOW STATS FOR t`: a table's statistics from its Parquet footers,
//! equal to what a scan of its rows computes.

use std::sync::Arc;

use arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use super::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_statistics_come_from_the_footers() {
    let data = sf001_small_groups();
    let e = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    let stats = squall_csv(&e, "SHOW STATS FOR orders").await;
    let lines: Vec<&str> = stats.lines().collect();
    assert_eq!(
        lines[0],
        "column_name,data_size,distinct_values_count,nulls_fraction,row_count,low_value,high_value"
    );
    // The bounds and the row count a scan computes.
    let scanned = single_node_csv(
        &reference,
        "select cast(min(o_orderkey) as varchar), cast(max(o_orderkey) as varchar), \
         cast(min(o_orderdate) as varchar), cast(max(o_orderdate) as varchar), \
         cast(min(o_totalprice) as varchar), cast(max(o_totalprice) as varchar), count(*) \
         from orders",
    )
    .await;
    let v: Vec<&str> = scanned.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(lines[1], format!("o_orderkey,,,0.0,,{},{}", v[0], v[1]));
    assert_eq!(lines[5], format!("o_orderdate,,,0.0,,{},{}", v[2], v[3]));
    assert_eq!(lines[4], format!("o_totalprice,,,0.0,,{},{}", v[4], v[5]));
    assert_eq!(lines[10], format!(",,,,{}.0,,", v[6]));
    // A text column: its size, no bounds.
    let comment: Vec<&str> = lines[9].split(',').collect();
    assert_eq!(comment[0], "o_comment");
    assert!(comment[1].parse::<f64>().unwrap() > 0.0, "{}", lines[9]);
    assert_eq!(&comment[5..], ["", ""]);
    let err = e
        .sql("SHOW STATS FOR (SELECT 1)")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SHOW STATS FOR t (not those of a query)"),
        "{err}"
    );
}

/// A column added in a later file counts the earlier file's rows as NULL;
/// a column typed INTEGER in one file and BIGINT in another has bounds
/// over both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_span_files_of_different_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::create_dir_all(&t).unwrap();
    let old = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
    write_parquet(
        t.join("a.parquet"),
        RecordBatch::try_new(old, vec![Arc::new(Int32Array::from(vec![-5, 2, 3]))]).unwrap(),
    );
    let new = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("note", DataType::Utf8, true),
    ]));
    write_parquet(
        t.join("b.parquet"),
        RecordBatch::try_new(
            new,
            vec![
                Arc::new(Int64Array::from(vec![4, 5_000_000_000])),
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
        )
        .unwrap(),
    );
    let e = engine(dir.path(), &[]).await;
    let stats = squall_csv(&e, "SHOW STATS FOR t").await;
    let lines: Vec<&str> = stats.lines().skip(1).collect();
    assert_eq!(lines[0], "id,,,0.0,,-5,5000000000");
    assert!(
        lines[1].starts_with("note,") && lines[1].contains(",,0.8,,,"),
        "{stats}"
    );
    assert_eq!(lines[2], ",,,,5.0,,");
}
