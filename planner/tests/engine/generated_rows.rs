//! Rows no table holds: `generate_series` / `range` and `WITH RECURSIVE`,
//! staged and in one task.

use crate::common::*;

/// `generate_series` and `range`, projected, counted, filtered, ordered
/// and joined, staged and one-task: the plan a worker decodes is the one
/// planned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_tables_answer_staged_and_in_one_task() {
    let data = sf001_small_groups();
    for single in ["0", "1000000000000"] {
        let engine = engine(&data.path, &[("squall.query.single_task_bytes", single)]).await;
        for (sql, expected) in [
            ("select * from generate_series(1, 3)", "value\n1\n2\n3\n"),
            ("select count(*) as n from range(1000000)", "n\n1000000\n"),
            (
                "select sum(value) as s from generate_series(1, 100) where value % 2 = 0",
                "s\n2550\n",
            ),
            (
                "select value from range(4) order by value desc",
                "value\n3\n2\n1\n0\n",
            ),
            (
                "select t.value, n_name from generate_series(0, 1) t \
                 join nation on n_nationkey = t.value order by 1",
                "value,n_name\n0,ALGERIA\n1,ARGENTINA\n",
            ),
        ] {
            assert_eq!(
                squall_csv(&engine, sql).await,
                expected,
                "{sql} (single_task_bytes={single})"
            );
        }
    }
}

/// `WITH RECURSIVE`, over values and over tables (its rounds join a scanned
/// table, and a round reads only some of the work table's columns), staged
/// and one-task: its rounds run in one task, planned and decoded alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_queries_answer_staged_and_in_one_task() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    for single in ["0", "1000000000000"] {
        let engine = engine(
            &data.path,
            &[
                ("squall.query.single_task_bytes", single),
                ("squall.scan.target_task_bytes", "20000"),
            ],
        )
        .await;
        for sql in [
            "with recursive r(n) as (select 1 union all select n + 1 from r where n < 10) \
             select sum(n) as s from r",
            "with recursive r(n, s) as (select 1, 'a' union all select n + 1, s || 'b' \
             from r where n < 4) select n, s from r order by n",
            "with recursive r(k, d) as (select r_regionkey, 0 from region union all \
             select n_nationkey, d + 1 from nation join r on n_regionkey = r.k where d < 1) \
             select d, count(*) as c from r group by d order by d",
            "with recursive r(k, d, x) as (select o_orderkey, 0, 'a' from orders \
             where o_orderkey < 40 union all select l_orderkey, d + 1, 'z' from lineitem \
             join r on l_orderkey = r.k where d < 2) \
             select d, x, count(*) as c from r group by d, x order by d, x",
        ] {
            let expected = single_node_csv(&reference, sql).await;
            let actual = squall_csv(&engine, sql).await;
            assert_same(
                &format!("single_task_bytes={single}"),
                &expected,
                &actual,
                sql,
            );
        }
    }
}
