//! `FETCH FIRST n ROWS WITH TIES`, staged over many tasks, against the rows
//! single-node DataFusion finds from the clause's definition: the rows
//! whose keys sort no later than the key of the (m + n)-th row, less the
//! first m (`OFFSET m`).

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_with_ties_keeps_every_row_tied_with_the_last() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await;
    let reference = single_node(&data.path).await;
    // The key sorts ascending here; `last` is the key of the (m + n)-th row
    // (the greatest of the first m + n).
    let by_definition = |key: &str, m: usize, n: usize, measure: &str| {
        format!(
            "with t as (select {key} as k, o_orderkey from orders), \
             last as (select max(k) as k from (select k from t order by k limit {})), \
             first_m as (select k, o_orderkey from t order by k limit {m}) \
             select (select count(*) from t where k <= (select k from last)) \
                    - (select count(*) from first_m) as n, \
                    (select sum({measure}) from t where k <= (select k from last)) \
                    - coalesce((select sum({measure}) from first_m), 0) as s",
            m + n
        )
    };
    // With no OFFSET the rows kept are known (the measure can be any column);
    // after one, only their keys are (which of a tied key's rows the OFFSET
    // skips is any).
    for (key, m, n, measure) in [
        ("o_orderpriority", 0, 1, "o_orderkey"),
        ("o_custkey", 0, 25, "o_orderkey"),
        ("o_orderdate", 0, 100, "o_orderkey"),
        ("o_custkey", 7, 30, "k"),
        ("o_custkey", 0, 20000, "o_orderkey"),
        ("o_custkey", 14990, 20, "k"),
    ] {
        let offset = if m > 0 {
            format!("offset {m} rows ")
        } else {
            String::new()
        };
        let sql = format!(
            "select count(*) as n, sum({measure}) as s from \
             (select {key} as k, o_orderkey from orders order by {key} \
              {offset}fetch next {n} rows with ties)"
        );
        let expected = single_node_csv(&reference, &by_definition(key, m, n, measure)).await;
        assert_same(
            "with ties",
            &expected,
            &squall_csv(&engine, &sql).await,
            &sql,
        );
    }
    // NULL keys tie with each other; the sort key need not be selected, and
    // the rows come back in the query's order.
    let nulls = squall_csv(
        &engine,
        "select count(*) as n, sum(o_orderkey) as s from (select o_orderkey from orders \
         order by nullif(o_orderkey % 5, 0) nulls first fetch first row with ties)",
    )
    .await;
    let expected = single_node_csv(
        &reference,
        "select count(*) as n, sum(o_orderkey) as s from orders where o_orderkey % 5 = 0",
    )
    .await;
    assert_same(
        "null ties",
        &expected,
        &nulls,
        "nullif(o_orderkey % 5, 0) nulls first",
    );
    let ordered = squall_csv(
        &engine,
        "select n_name from nation order by n_regionkey desc, length(n_name) \
         fetch first 3 rows with ties",
    )
    .await;
    let expected = single_node_csv(
        &reference,
        "select n_name from nation where n_regionkey = 4 and length(n_name) <= \
         (select length(n_name) from nation where n_regionkey = 4 order by length(n_name) \
          limit 1 offset 2) order by length(n_name), n_name",
    )
    .await;
    let sorted = |csv: &str| {
        let mut lines: Vec<&str> = csv.lines().skip(1).collect();
        lines.sort();
        lines.join("\n")
    };
    assert_eq!(sorted(&ordered), sorted(&expected));
    // Ties are ties on every key: a UNION and a DISTINCT keep their order.
    assert_eq!(
        squall_csv(
            &engine,
            "select n_regionkey from nation union all select r_regionkey from region \
             order by 1 fetch first 3 rows with ties"
        )
        .await,
        "n_regionkey\n0\n0\n0\n0\n0\n0\n"
    );
    assert_eq!(
        squall_csv(
            &engine,
            "select distinct n_regionkey from nation order by 1 desc fetch first 2 rows with ties"
        )
        .await,
        "n_regionkey\n4\n3\n"
    );
    // Without an ORDER BY no row ties with another: named, as is PERCENT.
    for (sql, says) in [
        (
            "select n_name from nation fetch first 2 rows with ties",
            "needs an ORDER BY",
        ),
        (
            "select n_name from nation order by 1 fetch first 10 percent rows only",
            "PERCENT",
        ),
    ] {
        let e = engine.sql(sql).await.expect_err(sql).to_string();
        assert!(e.contains(says), "{sql}: {e}");
    }
}
