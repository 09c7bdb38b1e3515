//! Queries whose plans DataFusion or squall's checks failed to build,
//! though they answer: a union of an aggregate's projected result, an
//! aggregate DataFusion's statistics shortcut could not shorten, a
//! grouping by a column and a cast of it, and an order a filter implied
//! that a later rule stopped reporting.

use crate::common::*;

/// A union whose input is an aggregate's projected result (sums and a
/// distinct count, cast to the union's types) runs: decoded as a worker
/// decodes it, the input gains a projection passing its columns through
/// (a NULL-able count), which the check of decoded plans took for another
/// plan ("the plan a worker decodes is not the planned one"). One task
/// and staged, equal to single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_union_of_a_projected_aggregate_runs() {
    use arrow::array::{Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let n = 50i64;
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n)) as _,
            true,
        ),
        (
            "k1",
            Arc::new(Int32Array::from_iter_values((0..n).map(|i| (i % 7) as i32))) as _,
            true,
        ),
        (
            "d",
            Arc::new(Date32Array::from_iter_values(
                (0..n).map(|i| 18_000 + (i % 11) as i32),
            )) as _,
            true,
        ),
        (
            "v2",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|i| i as i128 * 125))
                    .with_precision_and_scale(12, 2)
                    .unwrap(),
            ) as _,
            true,
        ),
        (
            "n",
            Arc::new(Int64Array::from_iter(
                (0..n).map(|i| (i % 3 != 0).then_some(i)),
            )) as _,
            true,
        ),
    ])
    .unwrap();
    write_parquet(dir.path().join("f/f.parquet"), batch);
    let reference = single_node(dir.path()).await;
    let sql = "select * from (select sum(t1.id) as c0, sum(t2.v2) as c1, count(distinct t1.d) as c2 \
               from f t1 left join f t2 on t1.k1 = t2.k1 \
               union select t1.k1, t2.v2, t1.n from f t1 left join f t2 on t1.k1 = t2.k1) u \
               order by 1, 2, 3";
    let expected = single_node_csv(&reference, sql).await;
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}");
    }
}

/// An average with a FILTER over a one-row subquery's count, grouped,
/// answers: DataFusion 55.2's shortcut answering aggregates from
/// statistics failed to build its plan ("Input field name count(h.k2) does
/// not match with the projection expression ..."), and the query failed
/// with it; the plan now goes on without the shortcut. One task and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_statistics_shortcut_is_left_out() {
    use arrow::array::{Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let batch = RecordBatch::try_from_iter_with_nullable([
        (
            "k2",
            Arc::new(StringArray::from(vec![Some("a"), None, Some("b")])) as _,
            true,
        ),
        ("x", Arc::new(Int64Array::from(vec![1, 2, 3])) as _, true),
    ])
    .unwrap();
    write_parquet(dir.path().join("h/h.parquet"), batch);
    let sql = "select c0, count(c0) as n from (select avg(c0) filter (where c0 <> 1) as c0 \
               from (select count(k2) as c0 from h) t2) t3 group by c0";
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        assert_eq!(squall_csv(&engine, sql).await, "c0,n\n2.0,1\n", "{pairs:?}");
    }
}

/// A grouping by a column and a function of it that names itself as the
/// column (a cast) answers: DataFusion 55.2's rule dropping the function
/// from the grouping failed ("Projections require unique expression names
/// but the expression \"CAST(nation.n_regionkey AS Int64)\" ... and
/// \"nation.n_regionkey\" ... have the same name"). One task and staged,
/// equal to single-node DataFusion's grouping by the column alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grouping_by_a_column_and_its_cast_runs() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let expected = single_node_csv(
        &reference,
        "select n_regionkey as r, n_regionkey, count(*) as n, sum(n_nationkey) as s from nation \
         group by n_regionkey order by 1",
    )
    .await;
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(&data.path, pairs).await;
        for sql in [
            "select cast(n_regionkey as bigint) as r, n_regionkey, count(*) as n, \
             sum(n_nationkey) as s from nation group by cast(n_regionkey as bigint), n_regionkey order by 1",
            "select cast(n_regionkey as bigint) as r, n_regionkey, count(*) as n, \
             sum(n_nationkey) as s from nation group by 1, 2 order by 1",
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}

/// An ordered aggregate and an ORDER BY over a join whose key a filter
/// made constant by its statistics (`h.k1 <= 0` where `h.k1`'s least value
/// is 0): DataFusion 55.2 left the sort out, then moved the projection
/// above the join into the join, which no longer reported the constant,
/// and its own plan check refused the query ("does not satisfy order
/// requirements", single-node DataFusion alike). A sort now goes where a
/// required order went unreported. One task and staged, answers by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_a_filter_implied_is_kept() {
    use arrow::array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let column = |name: &str, values: Vec<i64>| {
        RecordBatch::try_from_iter_with_nullable([(
            name,
            Arc::new(Int64Array::from(values)) as _,
            true,
        )])
        .unwrap()
    };
    // h.k1 from 0 (its least value: `<= 0` keeps one value), in two
    // files; g.w from -3 to 969, `<= 0` keeping few rows.
    for (file, range) in [("a", 0..700), ("b", 700..1500)] {
        write_parquet(
            dir.path().join(format!("h/{file}.parquet")),
            column("k1", range.map(|i| i % 55).collect()),
        );
    }
    write_parquet(
        dir.path().join("g/g.parquet"),
        column(
            "w",
            (0..80)
                .map(|i| match i % 20 {
                    0 => 0,
                    1 => -3,
                    _ => 100 + i * 11,
                })
                .collect(),
        ),
    );
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, expected) in [
            (
                "select cardinality(array_agg(h.k1 order by h.k1)) as n from h join g \
                 on h.k1 = g.w where g.w <= 0",
                "n\n112\n",
            ),
            (
                "select h.k1 from h join g on h.k1 = g.w where g.w <= 0 order by h.k1 limit 2",
                "k1\n0\n0\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}
