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

/// A stage plan shipped to workers carries no list of the table's files:
/// each task's row groups come in its own scan assignment, so the encoded
/// plan of Q1's scan is the same size over 150 row groups as over 30 (the
/// payload of each of its tasks does not grow with the table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shipped_stage_plans_do_not_grow_with_the_row_groups() {
    let sql = squall_tpch::query(1).unwrap();
    let mut sizes = Vec::new();
    for data in [sf001_small_groups(), sf001_tiny_groups()] {
        let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "1")]).await;
        let staged = engine.plan_stages(sql).await.unwrap();
        let ctx = engine.context().task_ctx();
        let plans = squall_planner::plan_check::encode_checked(&staged, &ctx).unwrap();
        sizes.push(plans.iter().map(|p| p.len()).max().unwrap());
    }
    let (few, many) = (sizes[0] as f64, sizes[1] as f64);
    assert!(
        (many - few).abs() <= 0.02 * few,
        "the largest stage plan is {few} bytes over 30 row groups, {many} over 150"
    );
}
