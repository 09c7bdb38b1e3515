//! Filters moved down the plan past a semi join (a hash join's run-time
//! filter on the kept side's key, passed on to the other side) filter the
//! other side's key, not its column of the same name; a filter naming no
//! column stays above an aggregation that yields a row from no input; and
//! IN lists folded together keep NULL's answer.

use crate::common::*;

use arrow::array::{Int32Array, Int64Array, RecordBatch};
use std::sync::Arc;

fn write(dir: &std::path::Path, table: &str, columns: Vec<(&str, Arc<dyn arrow::array::Array>)>) {
    let batch =
        RecordBatch::try_from_iter_with_nullable(columns.into_iter().map(|(n, a)| (n, a, true)))
            .unwrap();
    write_parquet(dir.join(format!("{table}/{table}.parquet")), batch);
}

fn longs(values: impl IntoIterator<Item = i64>) -> Arc<dyn arrow::array::Array> {
    Arc::new(Int64Array::from_iter_values(values))
}

/// `d JOIN (h WHERE EXISTS (f WHERE f.n = h.k1 AND f.k1 <> h.x))`: the
/// join's run-time filter on `h.k1` (1 to 2) reaches the semi join below,
/// which passes it to `f` by the key it is equal to, `f.n`. DataFusion 55.2
/// passed it to `f.k1` (all 100), by its name, and the query answered 0
/// rows instead of 2. An `h.k1` BIGINT equal to `f.k1` INTEGER (the key a
/// CAST) failed the query ("Invalid comparison operation: Int32 >=
/// Int64"). One task (DataFusion's own run-time filters) and staged; with
/// the filters applied to rows inside the Parquet reader too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_time_filters_pass_a_semi_join_by_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 2000;
    write(dir.path(), "d", vec![("k", longs([1, 2]))]);
    write(
        dir.path(),
        "h",
        vec![("k1", longs(1..=rows)), ("x", longs((1..=rows).map(|_| 0)))],
    );
    write(
        dir.path(),
        "f",
        vec![
            ("n", longs(1..=rows)),
            ("k1", longs((1..=rows).map(|_| 100))),
        ],
    );
    write(
        dir.path(),
        "narrow",
        vec![(
            "k1",
            Arc::new(Int32Array::from_iter_values(1..=rows as i32)) as _,
        )],
    );
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    let in_reader = [
        ("squall.query.single_task_bytes", "1000000000000"),
        ("datafusion.execution.parquet.pushdown_filters", "true"),
    ];
    for pairs in [&one_task[..], &in_reader[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select count(*) as n from d join (select k1 from h where exists \
                 (select 1 from f where f.n = h.k1 and f.k1 <> h.x)) s on d.k = s.k1",
                "n\n2\n",
            ),
            (
                "select count(*) as n from d join (select k1 from h where exists \
                 (select 1 from narrow where narrow.k1 = h.k1)) s on d.k = s.k1",
                "n\n2\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
}

/// `HAVING count(*) = 1 AND count(*) = 2` is never true: no row. DataFusion
/// 55.2 folds the two conjuncts into `false`, which names no column, and
/// moved it below the aggregation as if it named only grouping columns;
/// the aggregation of no rows then answered one row (0), and a `ROLLUP` one
/// row per set. Where the aggregation has grouping keys and no empty set it
/// yields no row from no input, and the answer was right. Against the
/// answers by hand (single-node DataFusion answers alike wrong), one task
/// and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_naming_no_column_stays_above_an_aggregation() {
    let data = sf001_small_groups();
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(&data.path, pairs).await;
        for (sql, expected) in [
            (
                "select count(*) as n from nation having count(*) = 1 and count(*) = 2",
                "n\n",
            ),
            (
                "select * from (select min(n_nationkey) as m from nation) t where m = 3 and m = 4",
                "m\n",
            ),
            (
                "select n_regionkey, count(*) as n from nation group by rollup (n_regionkey) \
                 having count(*) = 1 and count(*) = 2",
                "n_regionkey,n\n",
            ),
            (
                "select n_regionkey, count(*) as n from nation group by n_regionkey \
                 having count(*) = 1 and count(*) = 2",
                "n_regionkey,n\n",
            ),
            // The filters that hold keep the rows.
            (
                "select count(*) as n from nation having count(*) = 25 and count(*) >= 2",
                "n\n25\n",
            ),
            (
                "select count(*) as n from nation where 1 = 1 having count(*) > 0",
                "n\n25\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}

/// `s IN ('a') AND s IN ('b')` is false, or NULL where `s` is NULL: `NOT`
/// of it keeps the rows of a value, not those of NULL. DataFusion 55.2's
/// simplifier folded it into `false` whatever `s` (and `s NOT IN ('a') OR
/// s NOT IN ('b')` into `true`, `s IN ('a', 'b') AND s NOT IN ('a', 'b',
/// 'c')` into `false`), so `NOT (...)` kept the NULL rows too; and a list
/// holding NULL was reckoned as if it did not (`s IN ('a', 'b') AND s NOT
/// IN (NULL)`, never true, kept 'a' and 'b'). Its optimizer crate is
/// vendored with the fix (`planner/vendor/README.md`). Against the answers
/// by hand, one task and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_lists_folded_together_keep_nulls_answer() {
    use arrow::array::StringArray;
    let dir = tempfile::tempdir().unwrap();
    let strings: Arc<dyn arrow::array::Array> = Arc::new(StringArray::from(vec![
        Some("a"),
        None,
        Some("b"),
        Some("c"),
        None,
    ]));
    write(dir.path(), "t", vec![("s", strings), ("x", longs(0..5))]);
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(dir.path(), pairs).await;
        for (condition, n) in [
            ("not (s in ('a') and s in ('b'))", 3),
            ("(s in ('a') and s in ('b')) is null", 2),
            ("not (s in ('a', 'b') and s not in ('a', 'b', 'c'))", 3),
            ("s not in ('a') or s not in ('b')", 3),
            ("not (s not in ('a') or s not in ('b'))", 0),
            ("s in ('a', 'b') and s not in (null)", 0),
            ("s in ('a', 'b', 'c') and s in ('b', 'c', 'd')", 2),
        ] {
            let sql = format!("select count(*) as n from t where {condition}");
            assert_eq!(
                squall_csv(&engine, &sql).await,
                format!("n\n{n}\n"),
                "{pairs:?}: {sql}"
            );
        }
    }
}

/// A filter on a grouped cast beside the column it casts (`GROUP BY
/// CAST(x AS DOUBLE), x`) filters the cast. DataFusion names the cast's
/// output `h.x` unqualified, beside the column `h.x`, and 55.2's filter
/// pushdown found the expression to filter by that flat name: the filter
/// on the DOUBLE landed on the BIGINT (`n_nationkey = 15.0`) and the query
/// failed at execution ("Invalid comparison operation: Int64 == Float64");
/// a cast to text alike. Now matched by qualifier and name (the vendored
/// optimizer crate). Against the answers by hand, one task and staged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_on_a_grouped_cast_beside_its_column_filters_the_cast() {
    let data = sf001_small_groups();
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(&data.path, pairs).await;
        for (sql, expected) in [
            (
                "select c, k from (select cast(n_nationkey as double) as c, n_nationkey as k \
                 from nation group by cast(n_nationkey as double), n_nationkey) t where c = 15e0",
                "c,k\n15.0,15\n",
            ),
            (
                "select k, c from (select n_nationkey as k, cast(n_nationkey as double) as c \
                 from nation group by n_nationkey, cast(n_nationkey as double)) t \
                 where c = 15e0 and k >= 10",
                "k,c\n15,15.0\n",
            ),
            (
                "select cast(n_nationkey as varchar) as c, n_nationkey as k from nation \
                 group by cast(n_nationkey as varchar), n_nationkey \
                 having cast(n_nationkey as varchar) = '7'",
                "c,k\n7,7\n",
            ),
            (
                "select count(*) as n from (select cast(n_regionkey as double) as c, n_regionkey, \
                 count(*) as m from nation group by cast(n_regionkey as double), n_regionkey) t \
                 where c < 2.5e0",
                "n\n3\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}

/// An expression common to a filter's terms above such a grouping is
/// computed once below the filter (DataFusion's common subexpression
/// elimination), beside every column of the grouping: the cast and its
/// column are two (DataFusion 55.2 kept one: "No field named nation.n_regionkey").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_common_expression_above_a_grouped_cast_beside_its_column_keeps_both() {
    let data = sf001_small_groups();
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(&data.path, pairs).await;
        for (sql, expected) in [
            (
                "select c, k, m from (select cast(n_regionkey as double) as c, n_regionkey as k, \
                 count(*) as m from nation group by cast(n_regionkey as double), n_regionkey) t \
                 where mod(m + k, 3) = 0 or mod(m + k, 3) > 1 order by k",
                "c,k,m\n0.0,0,5\n1.0,1,5\n3.0,3,5\n4.0,4,5\n",
            ),
            (
                "select k from (select mod(m, 3) as k from (select cast(n_regionkey as double) as c, \
                 n_regionkey as r, count(*) as m from nation \
                 group by cast(n_regionkey as double), n_regionkey) t) u where k between 100 and 7",
                "k\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}

/// A DISTINCT aggregate grouped by a cast beside the column it casts:
/// DataFusion's rewrite of a single DISTINCT aggregate into two groupings
/// named both back by one flat name (`orders.o_orderdate`) and failed
/// ("Projections require unique expression names"; found by
/// `bench/sql_fuzz.py`). Such an aggregation keeps its DISTINCT aggregate
/// (`crate::shortcuts`). Single-node DataFusion fails these, so the
/// answers are the same queries' without the cast (the cast's column is
/// the cast of the grouped one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_distinct_aggregate_grouped_by_a_cast_beside_its_column_answers() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let one_task = [("squall.query.single_task_bytes", "1000000000000")];
    for pairs in [&one_task[..], &STAGED[..]] {
        let engine = engine(&data.path, pairs).await;
        for (sql, without) in [
            (
                "select cast(n_regionkey as varchar) as c, n_regionkey as k, count(distinct n_nationkey) as m \
                 from nation group by cast(n_regionkey as varchar), n_regionkey order by k",
                "select cast(k as varchar) as c, k, m from (select n_regionkey as k, \
                 count(distinct n_nationkey) as m from nation group by n_regionkey) t order by k",
            ),
            (
                "select cast(o_orderdate as varchar) as c, o_orderdate as d, max(o_totalprice) as m \
                 from orders group by cast(o_orderdate as varchar), o_orderdate \
                 having count(distinct o_custkey) > 1 order by d limit 5",
                "select cast(d as varchar) as c, d, m from (select o_orderdate as d, max(o_totalprice) as m \
                 from orders group by o_orderdate having count(distinct o_custkey) > 1) t order by d limit 5",
            ),
        ] {
            let expected = single_node_csv(&reference, without).await;
            assert!(expected.lines().count() > 1, "{without}: {expected}");
            assert_eq!(squall_csv(&engine, sql).await, expected, "{pairs:?}: {sql}");
        }
    }
}
