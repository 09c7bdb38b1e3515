//! Snapshots of the staged plans of the 22 TPC-H queries (2 shuffle
//! partitions, 2 slots), with the data folder replaced by `<data>`.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_staged_plans() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.shuffle.partitions", "2"),
            ("squall.worker_slots", "2"),
            ("squall.scan.target_task_bytes", "200000"),
        ],
    )
    .await;
    let root = data
        .path
        .to_string_lossy()
        .trim_start_matches('/')
        .to_string();
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        let r = engine.sql(&format!("explain {sql}")).await.unwrap();
        let plan = r.batches[0]
            .column(1)
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap()
            .value(0)
            .replace(&root, "<data>");
        insta::assert_snapshot!(format!("tpch_q{q:02}"), plan);
    }
}
