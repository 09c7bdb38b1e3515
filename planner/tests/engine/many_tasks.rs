//! Many tasks per stage: tiny row groups, a tiny task target and more
//! shuffle partitions than slots, so every exchange has many map outputs and
//! every reduce stage many tasks. Scans read ahead in windows of a few
//! row groups, three in flight, so a task's scan goes through many windows.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_many_tasks_per_stage_matches_datafusion() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "20000"),
            ("squall.shuffle.partitions", "5"),
            ("squall.worker_slots", "3"),
            ("squall.scan.task_partitions", "2"),
            ("squall.scan.read_ahead_bytes", "3000"),
            ("squall.scan.read_ahead_windows", "3"),
        ],
    )
    .await;
    let reference = single_node(&data.path).await;
    let mut failures = Vec::new();
    let mut max_tasks = 0;
    let mut exchange_stages = 0;
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        let result = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let profile = result.profile.clone().unwrap();
        max_tasks = max_tasks.max(
            profile
                .stage_profiles
                .iter()
                .map(|s| s.tasks)
                .max()
                .unwrap_or(0),
        );
        exchange_stages = exchange_stages.max(profile.stages);
        let actual = squall_tpch::run::to_csv(&result.schema, &result.batches).unwrap();
        let expected = single_node_csv(&reference, sql).await;
        let c = squall_tpch::compare::compare_csv(&expected, &actual, Some(sql)).unwrap();
        if !c.ok {
            failures.push(format!("q{q:02}: {}", c.message));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        max_tasks >= 10,
        "expected a stage with many tasks, max was {max_tasks}"
    );
    assert!(
        exchange_stages >= 4,
        "expected several exchange stages, max was {exchange_stages}"
    );
    assert_eq!(count_files(engine.exchange_root()), 0);
}
