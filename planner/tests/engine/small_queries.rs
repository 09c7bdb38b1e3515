//! Queries that read little run as one task (`squall.query.single_task_bytes`):
//! the whole DataFusion plan, with the worker's cores as partitions, no
//! exchange. Answers equal to the TPC-H answers and single-node DataFusion;
//! the decision follows the bytes the scans project, shows in EXPLAIN, and
//! leaves nothing behind.

use crate::common::*;
use squall_planner::profile::QueryProfile;
use squall_tpch::run::to_csv;

/// The product's threshold on the aws backend, as a setting.
fn default_threshold() -> String {
    squall_core::config::AWS_SINGLE_TASK_BYTES.to_string()
}

async fn profile_of(engine: &squall_planner::Engine, sql: &str) -> (String, QueryProfile) {
    let r = engine
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("squall failed: {e}\n{sql}"));
    let csv = to_csv(&r.schema, &r.batches).expect("csv");
    (csv, r.profile.expect("a distributed query has a profile"))
}

/// At SF 0.1 every TPC-H query reads less than the default threshold: each
/// runs as one task of one stage, with both of the worker's cores, unless
/// its key filters cut an aggregation (then its staged plan shows a key
/// filter), and answers right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_sf01_as_single_tasks_match_answers_and_datafusion() {
    let data = sf01();
    let threshold = default_threshold();
    let engine = engine(
        &data.path,
        &[("squall.query.single_task_bytes", threshold.as_str())],
    )
    .await;
    let reference = single_node(&data.path).await;
    let mut failures = Vec::new();
    let mut one_task = 0;
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        let (actual, profile) = profile_of(&engine, sql).await;
        if (profile.stages, profile.tasks) == (1, 1) {
            one_task += 1;
        } else {
            let explain = squall_csv(&engine, &format!("explain {sql}")).await;
            if !explain.contains("KeyFilterExec") {
                failures.push(format!(
                    "q{q:02} ran {} stages, {} tasks, without a key filter to stage for",
                    profile.stages, profile.tasks
                ));
            }
        }
        failures.extend(tpch_sf01_differences(&reference, q, &actual).await);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(one_task >= 17, "{one_task} of 22 queries as one task");
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "exchange objects left"
    );
    assert_eq!(engine.open_queues(), 0);
}

/// The decision counts the bytes of the columns a query projects, after
/// row-group pruning: a threshold just under what Q6 reads stages it, one
/// just over runs it as one task, and EXPLAIN says which and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threshold_is_the_projected_bytes() {
    let data = sf01();
    let sql = squall_tpch::query(6).unwrap();
    // What Q6's scan reads, as the single task measures it.
    let probe = engine(
        &data.path,
        &[("squall.query.single_task_bytes", "1000000000")],
    )
    .await;
    let (expected, profile) = profile_of(&probe, sql).await;
    assert_eq!(profile.tasks, 1);
    let read = profile.scan_bytes;
    assert!(read > 0, "Q6 reads something");
    // Q6 reads 4 of lineitem's 16 columns: far less than its row groups.
    let whole: u64 = std::fs::read_dir(data.path.join("lineitem"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(
        read * 2 < whole,
        "{read} bytes read of a {whole}-byte table"
    );

    let under = (read / 2).to_string();
    let staged = engine(
        &data.path,
        &[("squall.query.single_task_bytes", under.as_str())],
    )
    .await;
    let (actual, profile) = profile_of(&staged, sql).await;
    assert!(profile.stages > 1, "Q6 over the threshold is staged");
    assert_same("Q6 staged", &expected, &actual, sql);

    let over = (read * 2).to_string();
    let single = engine(
        &data.path,
        &[("squall.query.single_task_bytes", over.as_str())],
    )
    .await;
    let (actual, profile) = profile_of(&single, sql).await;
    assert_eq!((profile.stages, profile.tasks), (1, 1));
    assert_same("Q6 as one task", &expected, &actual, sql);

    let explain = squall_csv(&single, &format!("explain {sql}")).await;
    assert!(
        explain.contains("single (small query), 1 task"),
        "EXPLAIN shows the one task and why:\n{explain}"
    );
}

/// Sources whose size is known only from their files (CSV) count their
/// bytes; a big CSV table stays staged, a small one runs as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_tables_count_their_file_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    let mut text = String::from("k,v\n");
    for i in 0..20_000 {
        text.push_str(&format!("{},{}\n", i % 97, i));
    }
    std::fs::write(&csv, &text).unwrap();
    let sql = "select k, count(*) as n, sum(v) as s from t group by k order by k";
    let reference = datafusion::prelude::SessionContext::new();
    reference
        .register_csv("t", csv.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    let expected = single_node_csv(&reference, sql).await;
    let create = format!(
        "create external table t stored as csv location '{}' options ('format.has_header' 'true')",
        csv.display()
    );
    for (threshold, one_task) in [(text.len() / 2, false), (text.len() * 2, true)] {
        let threshold = threshold.to_string();
        let engine = engine(
            dir.path(),
            &[
                ("squall.query.single_task_bytes", threshold.as_str()),
                ("squall.catalog.allowed_roots", "*"),
            ],
        )
        .await;
        engine.sql(&create).await.unwrap();
        let (actual, profile) = profile_of(&engine, sql).await;
        assert_eq!(profile.tasks == 1, one_task, "threshold {threshold}");
        assert_same("CSV group by", &expected, &actual, sql);
    }
}

/// A small query whose key filter cuts an aggregation's input stays staged:
/// Q17's filter of the parts it asks for keeps lineitem's average per part
/// to those parts, which one DataFusion plan would compute for every part.
/// With key filters off, the same query runs as one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_filters_that_cut_an_aggregation_keep_a_query_staged() {
    let data = sf01();
    let sql = squall_tpch::query(17).unwrap();
    let threshold = default_threshold();
    let staged = engine(
        &data.path,
        &[("squall.query.single_task_bytes", threshold.as_str())],
    )
    .await;
    let (expected, profile) = profile_of(&staged, sql).await;
    assert!(profile.stages > 1, "Q17 stays staged");
    let explain = squall_csv(&staged, &format!("explain {sql}")).await;
    let aggregation = explain.find("AggregateExec").expect("an aggregation");
    assert!(
        explain[aggregation..].contains("KeyFilterExec"),
        "a key filter below an aggregation:\n{explain}"
    );
    let unfiltered = engine(
        &data.path,
        &[
            ("squall.query.single_task_bytes", threshold.as_str()),
            ("squall.bloom.enabled", "false"),
        ],
    )
    .await;
    let (actual, profile) = profile_of(&unfiltered, sql).await;
    assert_eq!((profile.stages, profile.tasks), (1, 1));
    assert_same("Q17 as one task", &expected, &actual, sql);
}
