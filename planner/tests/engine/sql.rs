//! Statements beyond TPC-H.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assorted_sql_matches_datafusion() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    let reference = single_node(&data.path).await;
    for sql in ASSORTED_SQL {
        let expected = single_node_csv(&reference, sql).await;
        let actual = squall_csv(&engine, sql).await;
        assert_same(sql, &expected, &actual, sql);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_explain_and_errors() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    engine
        .sql("set squall.shuffle.partitions = 3")
        .await
        .unwrap();
    let r = engine
        .sql("explain select l_returnflag, count(*) from lineitem group by 1")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("Stage s1"), "{text}");
    assert!(text.contains("ShuffleWriteExec: hash="), "{text}");
    assert!(
        text.contains("hash x3, up to 3 tasks"),
        "SET must reach the planner: {text}"
    );

    let r = engine
        .sql("explain analyze select count(*) from orders")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains("profile") && text.contains("stage"), "{text}");

    let err = engine
        .sql("select nope from lineitem")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
    let err = engine
        .sql("select * from missing_table")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing_table"), "{err}");
    let err = engine
        .sql("set squall.no_such_knob = 1")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("no_such_knob"), "{err}");
    assert!(engine.sql("").await.is_err());
}
