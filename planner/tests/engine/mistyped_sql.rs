//! Statements that are not Trino's SQL, or that read a value as what it is
//! not, refused at planning with the user's error naming the problem, not
//! left to fail in a task or in DataFusion's planner (statements the API's
//! fuzzer made of TPC-H queries); and a difference of two dates, which
//! failed in the task, answered as days.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistyped_statements_are_refused_while_planned() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    for (sql, expected) in [
        // A field of a DATE (DataFusion planned it and failed in the task).
        (
            "select count(*) from lineitem l1 where l1.l_receiptdate.l1 > l_commitdate",
            "cannot read field",
        ),
        ("select l_shipdate['x'] from lineitem", "it is a date"),
        (
            "select l1.l_receiptdate.l1 from lineitem l1",
            "Cannot access field",
        ),
        // An empty select list used as a value (DataFusion's planner
        // stopped on an index out of bounds).
        (
            "select count(*) from orders where not (select from lineitem where l_orderkey = o_orderkey)",
            "Expected: a select list",
        ),
        (
            "select count(*) from orders where o_orderkey in (select from lineitem)",
            "Line: 1, Column: 50",
        ),
        ("select from nation", "Expected: a select list"),
        // An interval compared with a number (DataFusion: an internal
        // error in the task).
        (
            "select count(*) from lineitem where l_receiptdate - l_shipdate > interval '20' day",
            "one is an interval, the other a number",
        ),
        // A feature DataFusion lacks, found as the plan runs: one attempt.
        (
            "select count(distinct l_partkey, l_suppkey) from lineitem",
            "after 1 attempt(s): This feature is not implemented",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains(expected), "{sql}: {text}");
        // Refused before any task ran (but the feature a task found).
        assert!(
            !text.contains("attempt") || sql.contains("distinct"),
            "{sql}: {text}"
        );
    }
    // A difference of two dates is their days (it failed in the task).
    assert_eq!(
        squall_csv(
            &engine,
            "select count(*) as n from lineitem where l_receiptdate - l_shipdate > 20"
        )
        .await,
        squall_csv(
            &engine,
            "select count(*) as n from lineitem where date_diff('day', l_shipdate, l_receiptdate) > 20"
        )
        .await
    );
    // A table made from a query takes NULLs, whatever its source's columns
    // (Trino's); a column declared NOT NULL refuses them.
    engine
        .sql("create table made as select n_nationkey as k, n_name as v from nation")
        .await
        .unwrap();
    // Answered as Trino answers it: one BIGINT, `rows` (DataFusion's is an
    // unsigned `count`, which reached clients as a DECIMAL(20,0)).
    let inserted = engine
        .sql("insert into made values (100, null)")
        .await
        .unwrap();
    assert_eq!(inserted.schema.fields().len(), 1);
    assert_eq!(inserted.schema.field(0).name(), "rows");
    assert_eq!(
        inserted.schema.field(0).data_type(),
        &arrow::datatypes::DataType::Int64
    );
    assert_eq!(
        squall_csv(&engine, "delete from made where k > 20").await,
        "rows\n5\n"
    );
    assert_eq!(
        squall_csv(&engine, "select count(*) as n, count(v) as c from made").await,
        "n,c\n21,21\n"
    );
    engine
        .sql("create table strict (a bigint not null)")
        .await
        .unwrap();
    let err = engine
        .sql("insert into strict values (null)")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("non-nullable but contains null"), "{err}");
    // A row's fields are still read, by name and by position.
    assert_eq!(
        squall_csv(
            &engine,
            "select r.a as a, r['b'] as b, r[1] as c from (select cast(row(1, 'x') as row(a bigint, b varchar)) as r)"
        )
        .await,
        "a,b,c\n1,x,1\n"
    );
}
