//! Cancelling a running query stops its tasks (checked on the invoker's own
//! count of running tasks) and removes everything the query wrote.

use std::time::Duration;

use squall_planner::{CancellationToken, RunOptions};

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_tasks_and_cleans_up() {
    let data = sf001_small_groups();
    let engine = std::sync::Arc::new(
        engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await,
    );
    let cancel = CancellationToken::new();
    let options = RunOptions {
        cancel: cancel.clone(),
        ..Default::default()
    };
    let e = engine.clone();
    let progress = options.progress.clone();
    let long = tokio::spawn(async move {
        e.sql_with(
            "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0",
            &options,
        )
        .await
    });
    // Wait until tasks are really running.
    let started = std::time::Instant::now();
    while engine.running_tasks() == 0 && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(engine.running_tasks() > 0, "the query never started a task");
    assert!(
        progress
            .launched_tasks
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    cancel.cancel();
    let err = long.await.unwrap().unwrap_err().to_string();
    assert!(err.contains("cancelled"), "{err}");
    assert_eq!(
        engine.running_tasks(),
        0,
        "tasks still running after cancel"
    );
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
}
