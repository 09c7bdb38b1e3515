//! Two queries at once on one engine: both answers right, no crossed messages.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_queries_at_once() {
    let data = sf001_small_groups();
    let engine = std::sync::Arc::new(
        engine(&data.path, &[("squall.scan.target_task_bytes", "50000")]).await,
    );
    let reference = single_node(&data.path).await;
    let (q1, q2) = (
        squall_tpch::query(1).unwrap(),
        squall_tpch::query(9).unwrap(),
    );
    let (a, b) = {
        let (e1, e2) = (engine.clone(), engine.clone());
        let h1 = tokio::spawn(async move { squall_csv(&e1, q1).await });
        let h2 = tokio::spawn(async move { squall_csv(&e2, q2).await });
        (h1.await.unwrap(), h2.await.unwrap())
    };
    assert_same("q01", &single_node_csv(&reference, q1).await, &a, q1);
    assert_same("q09", &single_node_csv(&reference, q2).await, &b, q2);
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
}
