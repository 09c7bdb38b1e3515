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

/// External tables over CSV and newline-delimited JSON run staged (a
/// stage's shipped plan keeps the files of scans other than Parquet's, which
/// workers bind from their assignments) and equal single-node DataFusion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_and_json_tables_run_staged() {
    let dir = tempfile::tempdir().unwrap();
    let (mut csv, mut json) = (String::from("k,v\n"), String::new());
    for i in 0..5_000 {
        csv.push_str(&format!("{},{}\n", i % 31, i));
        json.push_str(&format!("{{\"k\":{},\"v\":{}}}\n", i % 31, i));
    }
    std::fs::write(dir.path().join("t.csv"), &csv).unwrap();
    std::fs::write(dir.path().join("t.json"), &json).unwrap();
    let engine = engine(dir.path(), &[("squall.catalog.allowed_roots", "*")]).await;
    let reference = datafusion::prelude::SessionContext::new();
    for (table, ddl) in [
        (
            "c",
            format!(
                "create external table c stored as csv location '{}' options ('format.has_header' 'true')",
                dir.path().join("t.csv").display()
            ),
        ),
        (
            "j",
            format!(
                "create external table j stored as json location '{}'",
                dir.path().join("t.json").display()
            ),
        ),
    ] {
        engine.sql(&ddl).await.unwrap();
        reference.sql(&ddl).await.unwrap().collect().await.unwrap();
        let sql =
            format!("select k, count(*) as n, sum(v) as s from {table} group by k order by k");
        let r = engine.sql(&sql).await.unwrap();
        assert!(
            r.profile.as_ref().is_some_and(|p| p.stages > 1),
            "{table} runs staged"
        );
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        let expected = single_node_csv(&reference, &sql).await;
        assert_same(table, &expected, &actual, &sql);
    }
}
