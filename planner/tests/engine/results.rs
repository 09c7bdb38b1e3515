//! Results read from the final stage's objects: batch by batch as they are
//! asked for, equal to single-node DataFusion, and the objects gone after
//! the last batch, after a result dropped half read, and after an EXPLAIN
//! ANALYZE or a statement followed by another.

use std::time::Duration;

use futures::StreamExt;
use squall_planner::RunOptions;
use squall_planner::engine::ResultBatches;
use squall_tpch::run::to_csv;

use super::common::*;

async fn files_drop_to_zero(dir: &std::path::Path) -> usize {
    for _ in 0..200 {
        if count_files(dir) == 0 {
            return 0;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    count_files(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_stream_from_their_objects_and_leave_nothing() {
    let data = sf001_small_groups();
    // Many scan tasks, each writing its part of the result.
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "20000"),
            ("datafusion.execution.batch_size", "500"),
        ],
    )
    .await;
    let sql = "select l_orderkey, l_linenumber, l_comment from lineitem where l_quantity > 10";
    let want = single_node_csv(&single_node(&data.path).await, sql).await;

    let result = engine
        .sql_stream(sql, &RunOptions::default())
        .await
        .unwrap();
    let rows = result.profile.as_ref().unwrap().rows;
    let ResultBatches::Objects(objects) = result.batches else {
        panic!("a distributed SELECT's rows are read from its objects");
    };
    assert!(
        objects.keys().len() > 3,
        "{} result objects",
        objects.keys().len()
    );
    assert_eq!(objects.rows(), rows);
    assert!(
        count_files(engine.exchange_root()) >= objects.keys().len(),
        "the result's objects are there until read"
    );
    let schema = result.schema.clone();
    let mut stream = objects.into_stream();
    let mut batches = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.unwrap();
        assert!(batch.num_rows() <= 500, "one batch at a time");
        batches.push(batch);
    }
    assert_same("streamed", &want, &to_csv(&schema, &batches).unwrap(), sql);
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "objects left after the last batch"
    );

    // Dropped after one batch: deleted all the same.
    let result = engine
        .sql_stream(sql, &RunOptions::default())
        .await
        .unwrap();
    let mut stream = result.batches.into_stream();
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    assert_eq!(
        files_drop_to_zero(engine.exchange_root()).await,
        0,
        "a dropped result's objects stay"
    );

    // EXPLAIN ANALYZE and an earlier statement's result read nothing back.
    engine.sql(&format!("explain analyze {sql}")).await.unwrap();
    let last = engine
        .sql(&format!("{sql}; select count(*) from nation"))
        .await
        .unwrap();
    assert_eq!(last.batches[0].num_rows(), 1);
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "objects left by unread results"
    );
    assert_eq!(engine.open_queues(), 0);
}
