//! Reduce tasks sized from the measured map outputs: with many hash
//! partitions, each reduce task reads a contiguous range of them with one
//! GET per map object. Answers equal single-node DataFusion with and without
//! coalescing, and the coalesced run makes far fewer exchange GETs.

use crate::common::*;

const QUERIES: [usize; 6] = [3, 5, 9, 13, 18, 21];

async fn run(target_bytes: &str) -> (u64, usize, Vec<(usize, String)>) {
    let (gets, most, _, results) = run_with(target_bytes, "1", "0").await;
    (gets, most, results)
}

/// GETs of the hash reads, the most and the fewest tasks of a reduce stage,
/// and the answers, at these reduce-task settings.
async fn run_with(
    target_bytes: &str,
    min_tasks: &str,
    min_task_bytes: &str,
) -> (u64, usize, usize, Vec<(usize, String)>) {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "20000"),
            ("squall.shuffle.partitions", "64"),
            ("squall.shuffle.target_task_bytes", target_bytes),
            ("squall.shuffle.min_tasks", min_tasks),
            ("squall.shuffle.min_task_bytes", min_task_bytes),
            ("squall.worker_slots", "3"),
        ],
    )
    .await;
    let (mut gets, mut most_reduce_tasks, mut fewest_reduce_tasks) = (0, 0, usize::MAX);
    let mut results = Vec::new();
    for q in QUERIES {
        let sql = squall_tpch::query(q).unwrap();
        let result = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let profile = result.profile.clone().unwrap();
        // GETs of the hash reads (broadcasts and gathers read whole objects).
        gets += profile
            .stage_profiles
            .iter()
            .filter(|s| s.layout.starts_with("hash"))
            .map(|s| s.get_requests)
            .sum::<u64>();
        let reduce_tasks = profile
            .stage_profiles
            .iter()
            .filter(|s| s.layout.starts_with("hash"))
            .map(|s| s.tasks);
        most_reduce_tasks = most_reduce_tasks.max(reduce_tasks.clone().max().unwrap_or(0));
        fewest_reduce_tasks = fewest_reduce_tasks.min(reduce_tasks.min().unwrap_or(usize::MAX));
        results.push((
            q,
            squall_tpch::run::to_csv(&result.schema, &result.batches).unwrap(),
        ));
    }
    assert_eq!(count_files(engine.exchange_root()), 0);
    (gets, most_reduce_tasks, fewest_reduce_tasks, results)
}

/// `squall.shuffle.min_tasks` with `min_task_bytes`: a reduce stage that the
/// byte target would give a few tasks spreads over more (each still reading
/// at least min_task_bytes), a small one is not fanned out to min_tasks, and
/// the answers stay right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_reduce_stages_spread_while_tasks_read_enough() {
    let reference = single_node(&sf001_small_groups().path).await;
    let (_, coalesced_most, _, _) = run_with("131072", "1", "0").await;
    let (_, spread_most, spread_fewest, spread) = run_with("131072", "32", "16384").await;
    for (q, actual) in &spread {
        let sql = squall_tpch::query(*q).unwrap();
        let expected = single_node_csv(&reference, sql).await;
        let c = squall_tpch::compare::compare_csv(&expected, actual, Some(sql)).unwrap();
        assert!(c.ok, "q{q:02}: {}", c.message);
    }
    assert!(
        spread_most > coalesced_most,
        "the largest reduce stage should spread: {spread_most} tasks against {coalesced_most}"
    );
    assert!(
        spread_fewest < 32,
        "a small reduce stage should stay below min_tasks, got {spread_fewest}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coalesced_reduce_tasks_answer_right_with_fewer_gets() {
    let reference = single_node(&sf001_small_groups().path).await;
    // Small enough that the bigger shuffles get several tasks.
    let (coalesced_gets, coalesced_tasks, coalesced) = run("131072").await;
    let (per_partition_gets, per_partition_tasks, per_partition) = run("0").await;
    for (q, actual) in coalesced.iter().chain(&per_partition) {
        let sql = squall_tpch::query(*q).unwrap();
        let expected = single_node_csv(&reference, sql).await;
        let c = squall_tpch::compare::compare_csv(&expected, actual, Some(sql)).unwrap();
        assert!(c.ok, "q{q:02}: {}", c.message);
    }
    println!(
        "hash-read GETs: {coalesced_gets} coalesced (largest reduce stage {coalesced_tasks} tasks), {per_partition_gets} with one task per partition"
    );
    assert_eq!(
        per_partition_tasks, 64,
        "one task per partition without a target"
    );
    assert!(
        (2..64).contains(&coalesced_tasks),
        "the largest shuffle should get a few tasks, got {coalesced_tasks}"
    );
    assert!(
        coalesced_gets * 3 < per_partition_gets,
        "coalesced GETs {coalesced_gets} vs one task per partition {per_partition_gets}"
    );
}

/// A broadcast build side of many map objects, read by many probe tasks:
/// combined by the coordinator into one object, each probe task makes one
/// GET for it instead of one per map object; answers unchanged. (Q3's
/// probe tasks, the line items', are cut anywhere: clustered by order key
/// for its aggregation, they could end only between orders.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broadcast_inputs_are_combined_into_one_object() {
    let data = sf001_small_groups();
    let reference = single_node(&data.path).await;
    let sql = squall_tpch::query(3).unwrap();
    let expected = single_node_csv(&reference, sql).await;
    let mut gets = Vec::new();
    for combine in ["67108864", "0"] {
        let engine = engine(
            &data.path,
            &[
                ("squall.scan.clustered_aggregation", "false"),
                ("squall.scan.target_task_bytes", "20000"),
                ("squall.shuffle.combine_max_bytes", combine),
            ],
        )
        .await;
        let result = engine.sql(sql).await.unwrap();
        let profile = result.profile.clone().unwrap();
        let actual = squall_tpch::run::to_csv(&result.schema, &result.batches).unwrap();
        assert_same(
            &format!("q03, combine_max_bytes={combine}"),
            &expected,
            &actual,
            sql,
        );
        assert_eq!(
            profile.broadcasts_combined > 0,
            combine != "0",
            "{}",
            profile.display()
        );
        assert_eq!(count_files(engine.exchange_root()), 0);
        gets.push(profile.s3_get);
    }
    println!("q03 exchange GETs: {} combined, {} not", gets[0], gets[1]);
    assert!(gets[0] * 2 < gets[1], "{gets:?}");
}
