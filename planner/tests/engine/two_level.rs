//! The two-level exchange of hash reads: combine stages forced between every
//! hash map stage and its partitioned reader
//! (`squall.shuffle.two_level_min_requests=1`), on data with many map tasks
//! (SF 0.01 with 400-row row groups, one row group per scan task) and every
//! join partitioned. Answers equal single-node DataFusion with and without
//! it, the two-level runs make fewer exchange GETs, EXPLAIN shows the
//! combine stages and EXPLAIN ANALYZE their grids, nothing is left in the
//! exchange store; and combine tasks that crash are retried to the right
//! answer.

use squall_planner::RunOptions;
use squall_planner::profile::QueryProfile;

use crate::common::*;

const QUERIES: [usize; 4] = [5, 9, 18, 21];

/// A GROUP BY with many groups (2,000 parts) over every lineitem scan task.
const GROUP_BY: &str = "select l_partkey, count(*) as n, sum(l_quantity) as q \
                        from lineitem group by l_partkey order by l_partkey";

/// Many map tasks, many partitions, small reduce tasks, every join
/// partitioned, every shuffle kept (a clustered aggregation would take
/// Q18's `GROUP BY l_orderkey` off the exchange: `clustered`).
const BASE: &[(&str, &str)] = &[
    ("squall.scan.clustered_aggregation", "false"),
    ("squall.scan.target_task_bytes", "1"),
    ("squall.shuffle.partitions", "64"),
    ("squall.shuffle.target_task_bytes", "131072"),
    ("squall.shuffle.min_tasks", "1"),
    ("squall.worker_slots", "3"),
    (
        "datafusion.optimizer.hash_join_single_partition_threshold",
        "0",
    ),
    (
        "datafusion.optimizer.hash_join_single_partition_threshold_rows",
        "0",
    ),
];

fn statements() -> Vec<(String, &'static str)> {
    QUERIES
        .iter()
        .map(|q| (format!("q{q:02}"), squall_tpch::query(*q).unwrap()))
        .chain([("group by".to_string(), GROUP_BY)])
        .collect()
}

async fn two_level_engine(min_requests: &str, more: &[(&str, &str)]) -> squall_planner::Engine {
    let pairs: Vec<(&str, &str)> = BASE
        .iter()
        .copied()
        .chain([("squall.shuffle.two_level_min_requests", min_requests)])
        .chain(more.iter().copied())
        .collect();
    engine(&sf001_tiny_groups().path, &pairs).await
}

/// Combine stages of a profile that formed a grid (did not forward).
fn grids(p: &QueryProfile) -> impl Iterator<Item = &squall_planner::profile::StageProfile> {
    p.stage_profiles
        .iter()
        .filter(|s| s.grid.as_ref().is_some_and(|g| !g.forwarded))
}

/// Runs every statement, checks each answer and that nothing is left
/// behind; returns the profiles.
async fn run_all(min_requests: &str) -> Vec<(String, QueryProfile)> {
    let reference = single_node(&sf001_tiny_groups().path).await;
    let engine = two_level_engine(min_requests, &[]).await;
    let mut profiles = Vec::new();
    for (name, sql) in statements() {
        let result = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("{name}, two_level_min_requests={min_requests}: {e}"));
        let actual = squall_tpch::run::to_csv(&result.schema, &result.batches).unwrap();
        let expected = single_node_csv(&reference, sql).await;
        assert_same(
            &format!("{name}, two_level_min_requests={min_requests}"),
            &expected,
            &actual,
            sql,
        );
        assert_eq!(
            count_files(engine.exchange_root()),
            0,
            "{name}: exchange objects left behind"
        );
        profiles.push((name, result.profile.unwrap()));
    }
    assert_eq!(engine.open_queues(), 0);
    profiles
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_level_exchange_answers_right_with_fewer_gets() {
    let two_level = run_all("1").await;
    let direct = run_all("0").await;
    let mut summary = Vec::new();
    let (mut gets, mut direct_gets) = (0, 0);
    for ((name, with), (_, without)) in two_level.iter().zip(&direct) {
        assert!(
            without.stage_profiles.iter().all(|s| s.grid.is_none()),
            "{name}: a combine stage without the two-level exchange"
        );
        let combined: Vec<String> = grids(with)
            .map(|s| {
                let g = s.grid.as_ref().unwrap();
                format!(
                    "s{} {}x{} over {} objects",
                    s.stage, g.map_groups, g.partition_ranges, g.map_objects
                )
            })
            .collect();
        summary.push(format!(
            "{name}: {} GETs / {} PUTs two-level [{}], {} GETs / {} PUTs direct",
            with.s3_get,
            with.s3_put,
            combined.join(", "),
            without.s3_get,
            without.s3_put
        ));
        gets += with.s3_get;
        direct_gets += without.s3_get;
    }
    println!("exchange requests:\n{}", summary.join("\n"));
    let all: Vec<&QueryProfile> = two_level.iter().map(|(_, p)| p).collect();
    // Every statement has a hash read of the lineitem scan (150 map tasks)
    // by many reduce tasks, so each one combined at least one exchange,
    // and some grid has both several groups and several columns.
    for (name, p) in &two_level {
        assert!(
            grids(p).next().is_some(),
            "{name}: no combine stage ran\n{}",
            p.display()
        );
    }
    assert!(
        all.iter().flat_map(|p| grids(p)).any(|s| {
            let g = s.grid.as_ref().unwrap();
            g.map_groups > 1 && g.partition_ranges > 1 && s.tasks > 2
        }),
        "no grid of several groups and columns"
    );
    assert!(
        gets * 2 < direct_gets,
        "two-level GETs {gets} vs direct {direct_gets}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_combine_stages_and_analyze_their_grids() {
    let engine = two_level_engine("1", &[]).await;
    let sql = squall_tpch::query(18).unwrap();
    let text = |r: squall_planner::QueryResult| {
        r.batches[0]
            .column(1)
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap()
            .value(0)
            .to_string()
    };
    let planned = text(engine.sql(&format!("explain {sql}")).await.unwrap());
    assert!(planned.contains("[combine x64, about "), "{planned}");
    assert!(
        planned.contains("(two-level exchange): about "),
        "{planned}"
    );
    let analyzed = text(engine.sql(&format!("explain analyze {sql}")).await.unwrap());
    assert!(analyzed.contains(", grid "), "{analyzed}");
    assert!(analyzed.contains(" map objects: a "), "{analyzed}");
    assert!(analyzed.contains("its reader s"), "{analyzed}");
    // The default places none at this scale.
    let default = engine_default_explain(sql).await;
    assert!(!default.contains("combine"), "{default}");
    assert_eq!(count_files(engine.exchange_root()), 0);
}

async fn engine_default_explain(sql: &str) -> String {
    let engine = engine(&sf001_tiny_groups().path, BASE).await;
    let r = engine.sql(&format!("explain {sql}")).await.unwrap();
    r.batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<arrow::array::StringArray>()
        .unwrap()
        .value(0)
        .to_string()
}

/// Combine tasks that crash (before or after writing their objects) are
/// retried; the answer stays right and no attempt's object is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashing_combine_tasks_are_retried_to_the_right_answer() {
    let engine = two_level_engine(
        "1",
        &[
            ("squall.fault.task_crash_rate", "0.3"),
            ("squall.fault.seed", "11"),
            ("squall.task.max_attempts", "10"),
        ],
    )
    .await;
    let reference = single_node(&sf001_tiny_groups().path).await;
    let mut combine_retries = 0;
    for q in [18, 21] {
        let sql = squall_tpch::query(q).unwrap();
        let options = RunOptions {
            query_id: Some(format!("two-level-crash-q{q}")),
            ..Default::default()
        };
        let r = engine
            .sql_with(sql, &options)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        let expected = single_node_csv(&reference, sql).await;
        assert_same(&format!("q{q} with crashes"), &expected, &actual, sql);
        let p = r.profile.unwrap();
        combine_retries += grids(&p).map(|s| s.attempts - s.tasks).sum::<usize>();
        assert_eq!(count_files(engine.exchange_root()), 0, "q{q}: objects left");
    }
    assert!(combine_retries > 0, "no combine task crashed");
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(engine.running_tasks(), 0);
}
