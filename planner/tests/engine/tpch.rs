//! The 22 TPC-H queries at SF 0.1, distributed, against the expected answers
//! and against single-node DataFusion.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_sf01_matches_answers_and_datafusion() {
    let data = sf01();
    let engine = engine(&data.path, &[]).await;
    let reference = single_node(&data.path).await;
    let mut failures = Vec::new();
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        let actual = squall_csv(&engine, sql).await;
        failures.extend(tpch_sf01_differences(&reference, q, &actual).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "exchange objects left behind"
    );
    assert_eq!(engine.open_queues(), 0);
}
