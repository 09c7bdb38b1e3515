//! Aggregations grouped by a column the table is clustered on run with no
//! exchange before them (`squall_planner::clustered`): line items are
//! written in order-key order, runs of their row groups share an order at
//! their ends, and tasks are cut only between row groups with no order in
//! common. Answers equal single-node DataFusion's, over many tasks; where
//! the statistics do not show the order (NULL keys, overlapping row groups,
//! a floating-point key, a column the table is not ordered by, a rolled-up
//! grouping set) or allows too few cuts (a column of two values) the
//! exchange stays.

use std::sync::Arc;

use arrow::array::{Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};

use crate::common::*;

const CLUSTERED: &str = "no exchange before its aggregation";

async fn explained(engine: &squall_planner::Engine, sql: &str) -> String {
    squall_csv(engine, &format!("explain {sql}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregations_by_the_order_key_of_line_items_need_no_exchange() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    // A few tasks (row groups are cut only where no order spans them, one
    // boundary in six), four hash partitions.
    let engine = engine_with(&data.path, "true", "100000").await;
    let unclustered = engine_with(&data.path, "false", "100000").await;
    for sql in [
        "select l_orderkey, count(*) as n, sum(l_quantity) as q, avg(l_discount) as d, \
         count(distinct l_suppkey) as s from lineitem group by l_orderkey order by l_orderkey",
        "select l_orderkey, l_linestatus, max(l_shipdate) as m from lineitem \
         group by l_orderkey, l_linestatus having count(*) > 2 order by 1, 2",
        "select count(*), sum(n) from (select l_orderkey, count(*) as n from lineitem \
         where l_shipdate > date '1995-01-01' group by l_orderkey) t",
        // TPC-H Q18's inner aggregation, filtered, joined to orders.
        "select o_orderkey, o_totalprice from orders where o_orderkey in \
         (select l_orderkey from lineitem group by l_orderkey having sum(l_quantity) > 200) \
         order by o_orderkey",
        // Through a broadcast join's probe side (TPC-H Q3's shape).
        "select l_orderkey, o_orderdate, sum(l_extendedprice) as r from orders join lineitem \
         on o_orderkey = l_orderkey where o_orderdate < date '1995-03-15' \
         group by l_orderkey, o_orderdate order by r desc, l_orderkey limit 20",
    ] {
        let plan = explained(&engine, sql).await;
        assert!(plan.contains(CLUSTERED), "{sql}\n{plan}");
        let expected = single_node_csv(&reference, sql).await;
        assert_same("clustered", &expected, &squall_csv(&engine, sql).await, sql);
        let plan = explained(&unclustered, sql).await;
        assert!(!plan.contains(CLUSTERED), "{sql}\n{plan}");
        assert_same(
            "exchanged",
            &expected,
            &squall_csv(&unclustered, sql).await,
            sql,
        );
    }
    let sql = "select l_orderkey, count(*) from lineitem group by l_orderkey";
    let plan = explained(&engine, sql).await;
    let tasks = plan
        .lines()
        .find(|l| l.contains(CLUSTERED))
        .and_then(|l| {
            l.split(", ")
                .nth(1)?
                .strip_suffix(" tasks")?
                .parse::<usize>()
                .ok()
        })
        .unwrap_or(0);
    assert!(
        tasks > 1,
        "the aggregation runs in several scan tasks:\n{plan}"
    );

    // Not clustered: a column the table is not ordered by, a rolled-up
    // grouping set (its NULL group spans tasks).
    for sql in [
        "select l_partkey, count(*) from lineitem group by l_partkey order by 1",
        "select l_orderkey, count(*) from lineitem group by rollup (l_orderkey) \
         order by 1 nulls first",
    ] {
        let plan = explained(&engine, sql).await;
        assert!(!plan.contains(CLUSTERED), "{sql}\n{plan}");
        let expected = single_node_csv(&reference, sql).await;
        assert_same(
            "not clustered",
            &expected,
            &squall_csv(&engine, sql).await,
            sql,
        );
    }
}

async fn engine_with(
    data: &std::path::Path,
    clustered: &str,
    task_bytes: &str,
) -> squall_planner::Engine {
    engine(
        data,
        &[
            ("squall.scan.target_task_bytes", task_bytes),
            ("squall.shuffle.partitions", "4"),
            ("squall.scan.clustered_aggregation", clustered),
        ],
    )
    .await
}

/// Tables of 8 files of one row group each whose key `k` (and float `f`)
/// are `keys(file)`: sorted ranges that share their ends, overlapping
/// ranges, ranges with NULLs.
fn write_table(dir: &std::path::Path, name: &str, keys: impl Fn(i64) -> Vec<Option<i64>>) {
    for file in 0..8 {
        let k = keys(file);
        let f: Float64Array = k.iter().map(|k| k.map(|k| k as f64)).collect();
        let v: Int64Array = (0..k.len() as i64).map(Some).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
            Field::new("v", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from(k)), Arc::new(f), Arc::new(v)],
        )
        .expect("a batch");
        write_parquet(dir.join(name).join(format!("part-{file}.parquet")), batch);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_row_groups_that_follow_one_another_are_clustered() {
    let dir = tempfile::tempdir().expect("a folder");
    // Each file's keys run from 10*file to 10*file+9, and an even file's
    // on to 10*file+10: the next file starts with the key it ends with.
    write_table(dir.path(), "chained", |file| {
        let shared = (file % 2 == 0).then_some(Some(10 * file + 10));
        (0..50)
            .map(|i| Some(10 * file + i / 5))
            .chain(shared)
            .collect()
    });
    write_table(dir.path(), "overlapping", |file| {
        (0..50).map(|i| Some((file * 7 + i * 3) % 40)).collect()
    });
    write_table(dir.path(), "with_nulls", |file| {
        (0..50)
            .map(|i| (i % 9 != 0).then_some(10 * file + i / 5))
            .collect()
    });
    // Sorted, but of two values: cut only once, the scan would run as two
    // tasks instead of eight.
    write_table(dir.path(), "few_values", |file| vec![Some(file / 4); 50]);
    let reference = single_node(dir.path()).await;
    // A task per file.
    let engine = engine_with(dir.path(), "true", "16").await;
    for (table, column, clustered) in [
        ("chained", "k", true),
        ("chained", "f", false),
        // Computed under the column's name (the scan computes it).
        ("(select k % 3 as k, v from chained) t", "k", false),
        ("(select -k as k, v from chained) t", "k", false),
        ("overlapping", "k", false),
        ("with_nulls", "k", false),
        ("few_values", "k", false),
    ] {
        let sql = format!(
            "select {column}, count(*) as n, sum(v) as s from {table} group by {column} \
             order by {column} nulls first"
        );
        let plan = explained(&engine, &sql).await;
        assert_eq!(plan.contains(CLUSTERED), clustered, "{sql}\n{plan}");
        if clustered {
            assert!(
                plan.contains("[scan, 4 tasks, clustered on k"),
                "a task per pair of files:\n{plan}"
            );
        }
        let expected = single_node_csv(&reference, &sql).await;
        assert_same(table, &expected, &squall_csv(&engine, &sql).await, &sql);
    }
}
