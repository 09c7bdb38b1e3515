//! Outer joins staged: the null-padded side's columns are not constants (a
//! constant column added on it plans),
//! and a collected left join made partitioned keeps its output partitions.

use crate::common::*;

/// The columns of an outer join's null-padded side are not constant, even
/// where a filter made them so below the join: grouped, each value is one
/// group (staged, a final aggregation planned as streaming over sorted
/// input emitted a group each time its value changed), and sorted, the
/// NULLs come last (the sort was left out). Embedded one-task and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outer_joins_padded_side_is_not_constant() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let count = |sql| single_node_value(&reference, sql);
    let french =
        count("select count(*) from supplier, nation where s_nationkey = n_nationkey and n_name = 'FRANCE'").await;
    let others =
        count("select count(*) from supplier, nation where s_nationkey = n_nationkey and n_name <> 'FRANCE'").await;
    let sql = "select n_name, count(*) as suppliers from supplier \
               left join nation on s_nationkey = n_nationkey and n_name = 'FRANCE' \
               group by n_name order by n_name";
    let expected = format!("n_name,suppliers\nFRANCE,{french}\n,{others}\n");
    let staged = [
        ("squall.scan.target_task_bytes", "20000"),
        ("squall.shuffle.partitions", "5"),
        (
            "datafusion.optimizer.hash_join_single_partition_threshold",
            "0",
        ),
        (
            "datafusion.optimizer.hash_join_single_partition_threshold_rows",
            "0",
        ),
    ];
    for (what, pairs) in [
        ("staged", &staged[..]),
        (
            "one task",
            &[("squall.query.single_task_bytes", "1000000000000")][..],
        ),
    ] {
        let engine = engine(&data.path, pairs).await;
        let actual = squall_csv(&engine, sql).await;
        assert_eq!(actual, expected, "{what}");
    }
}

/// A left join planned with its preserved side collected (`CollectLeft`,
/// as DataFusion plans it without join reordering) over a probe side of
/// one partition: staged, it becomes a partitioned join, and what was
/// planned above it on one partition still gets one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collected_left_join_over_one_probe_partition_stays_one_partition() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let engine = engine(
        &data.path,
        &[("datafusion.optimizer.join_reordering", "false")],
    )
    .await;
    for sql in [
        "select count(*), count(n_name) from supplier left join nation on s_nationkey = n_nationkey",
        "select n_regionkey, count(*) from supplier left join nation \
         on s_nationkey = n_nationkey and n_regionkey > 1 group by 1 order by 1",
    ] {
        let expected = single_node_csv(&reference, sql).await;
        let actual = squall_csv(&engine, sql).await;
        assert_same(sql, &expected, &actual, sql);
    }
}

/// A nested-loop outer join whose padded side adds a constant column
/// (`true AS found`): DataFusion's projection pushdown swapped that
/// projection past squall's guard of the padded side and back without end,
/// and planning grew until the process ran out of memory. It answers as
/// single-node DataFusion, staged and as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_padded_side_adding_a_constant_column_plans() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let sql = "select n_nationkey, count(found) as n, count(*) as rows from nation d \
               left join (select c_acctbal, true as found from customer) x \
               on x.c_acctbal > d.n_nationkey * 400 group by 1 order by 1";
    for single in ["0", "1000000000000"] {
        let e = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        assert_eq!(
            squall_csv(&e, sql).await,
            single_node_csv(&reference, sql).await,
            "single_task_bytes={single}"
        );
    }
}

/// A filter above an outer self-join naming the padded side's column
/// whose name the preserved side's column shares (`t1.w`, `t2.w`) filters
/// that column: DataFusion 55.2 pushed it down by name, onto `t2.w`, and
/// kept the rows it must drop (here those `t1.w IS NULL` makes unknown).
/// Answers as DuckDB's, one task and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_on_a_padded_column_is_not_moved_to_its_namesake() {
    use arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // Nullable columns, as writers declare them (a NOT NULL `k1` lets the
    // optimizer make the join an inner one).
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "k1",
            Arc::new(Int32Array::from(vec![4, 16, 57, 1])) as _,
            true,
        ),
        (
            "name",
            Arc::new(StringArray::from(vec!["w0", "w35", "w13", "zz"])) as _,
            true,
        ),
        (
            "w",
            Arc::new(Int64Array::from(vec![23, 49, 57, 4])) as _,
            true,
        ),
    ])
    .unwrap();
    write_parquet(dir.path().join("g/g.parquet"), batch);
    let sql = "select t2.w, t2.name, t1.w as w1 from g t1 right join g t2 on t1.w = t2.k1 \
               where not ((t2.name < 'ab' or t1.w in (0, 100, 7)) and t2.k1 is not null) \
               order by 1";
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        assert_eq!(
            squall_csv(&engine, sql).await,
            "w,name,w1\n23,w0,4\n57,w13,57\n",
            "{pairs:?}"
        );
    }
}
