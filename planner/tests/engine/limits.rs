//! Limits the engine enforces for every caller (`squall query`, the API,
//! the coordinator function): the statement timeout stops the query's
//! workers and cleans up; the per-query memory limit fails a query that
//! cannot spill (naming the stage and task) and lets a sort spill and
//! answer right; a recursion that does not end and a value larger than
//! the memory left fail at once; SQL cannot name locations outside the
//! allowed roots.

use std::time::{Duration, Instant};

use squall_planner::RunOptions;

use crate::common::*;

const LONG: &str =
    "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_stops_the_workers_and_cleans_up() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.query.timeout_secs", "2"),
            ("squall.scan.target_task_bytes", "50000"),
        ],
    )
    .await;
    let options = RunOptions {
        query_id: Some("qtimeout0001".into()),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let err = engine
        .sql_with(LONG, &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("qtimeout0001 exceeded the timeout of 2 s"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    // The workers' own count, the invoker's, the queue and the exchange.
    assert_eq!(squall_core::activity::running_tasks("qtimeout0001"), 0);
    assert_eq!(engine.running_tasks(), 0);
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
    // The engine still answers.
    let r = engine.sql("select 1").await.unwrap();
    assert_eq!(r.batches[0].num_rows(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_limit_fails_a_join_and_names_stage_and_task() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.query.memory_limit_bytes", "65536")]).await;
    let err = engine
        .sql("select count(*) from orders join lineitem on o_orderkey = l_orderkey")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("stage s")
            && err.contains("task")
            && err.contains(
                "memory limit on this worker (squall.query.memory_limit_bytes) of 65536 bytes"
            )
            && err.contains("(memory_limit)"),
        "{err}"
    );
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_spills_under_the_memory_limit_and_answers_right() {
    let data = sf001_small_groups();
    // The hash stage sorts each supplier's rows for the window (a sort that
    // can spill) and sends on one row per supplier; the scan stage's
    // exchange writer spills what does not fit (see `spill`).
    let sql = "select l_suppkey, max(rn) as m, count(*) as c from (select l_suppkey, \
               row_number() over (partition by l_suppkey order by l_comment, l_orderkey, l_linenumber) as rn \
               from lineitem) t group by l_suppkey order by l_suppkey";
    // One task at a time: tasks running side by side share the query's
    // limit, and which of them gets the memory is a race. One task per hash
    // partition (no coalescing), so each task sorts half of the rows.
    let one_slot = [
        ("squall.worker_slots", "1"),
        ("squall.shuffle.partitions", "2"),
        ("squall.shuffle.target_task_bytes", "0"),
    ];
    let unlimited = engine(&data.path, &one_slot).await;
    let r = unlimited.sql(sql).await.unwrap();
    let expected = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let stages = &r.profile.as_ref().unwrap().stage_profiles;
    let sorting = stages
        .iter()
        .find(|s| s.layout.starts_with("hash"))
        .expect("a hash stage")
        .peak_memory_bytes;
    // A third of what the sort took, so it must spill (with a quarter its
    // merge of the spilled runs does not fit).
    let limit = sorting / 3;
    let limited = engine(
        &data.path,
        &[
            one_slot[0],
            one_slot[1],
            one_slot[2],
            (
                "squall.query.memory_limit_bytes",
                limit.to_string().as_str(),
            ),
            ("datafusion.execution.sort_spill_reservation_bytes", "65536"),
        ],
    )
    .await;
    let r = limited
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("limit {limit} where sorting took {sorting}: {e}"));
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert_same("spilled sort", &expected, &actual, sql);
    let limited_peak = r.profile.as_ref().unwrap().peak_memory_bytes;
    assert!(
        limited_peak <= limit,
        "a task held {limited_peak} bytes, above the limit {limit}"
    );
}

/// A recursion that never stops making rows fails past
/// `squall.query.max_recursion_depth`, and a function asked for values
/// larger than the memory the process has left fails before building them:
/// each at its first attempt (another recurses as deep, asks as much),
/// naming why; a recursion within the limit answers, and so does the next
/// statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_recursions_and_oversized_values_fail_at_once() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.process_memory_bytes", "268435456"),
            ("squall.query.max_recursion_depth", "500"),
        ],
    )
    .await;
    for (sql, says, in_a_task) in [
        (
            "with recursive t(n) as (select 1 union all select n + 1 from t) select count(*) from t",
            "the recursive query t still made rows after 500 iterations",
            true,
        ),
        (
            "with recursive t(k, d) as (select o_orderkey, 0 from orders where o_orderkey < 100 \
             union all select k, d + 1 from t) select max(d) from t",
            "squall.query.max_recursion_depth",
            true,
        ),
        (
            "select max(length(repeat(l_comment, 100000))) from lineitem",
            "repeat(...) would build",
            true,
        ),
        (
            "select max(length(lpad(l_comment, 3000000, '-'))) from lineitem",
            "lpad(...) would build",
            true,
        ),
        // A constant, built as the statement is planned.
        (
            "select cardinality(array_repeat(1, 100000000))",
            "array_repeat(...) would build",
            false,
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
        if in_a_task {
            assert!(err.contains("failed after 1 attempt(s)"), "{sql}: {err}");
        }
    }
    let r = engine
        .sql(
            "with recursive t(n) as (select 1 union all select n + 1 from t where n < 500) \
             select count(*) as c, sum(n) as s, max(length(repeat('ab', n))) as m from t",
        )
        .await
        .unwrap();
    let csv = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(csv.ends_with("500,125250,1000\n"), "{csv}");
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locations_outside_the_roots_are_refused() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[]).await;
    let out = tempfile::tempdir().unwrap();
    for sql in [
        "create external table x stored as parquet location '/etc/'".to_string(),
        format!(
            "copy (select 1 as a) to '{}/a.parquet'",
            out.path().display()
        ),
        format!(
            "explain copy (select 1 as a) to '{}/b.parquet'",
            out.path().display()
        ),
    ] {
        let err = engine.sql(&sql).await.unwrap_err().to_string();
        assert!(err.contains("outside the allowed roots"), "{sql}: {err}");
    }
    assert_eq!(count_files(out.path()), 0);
    // Allowed roots widen it; `*` lifts it.
    let roots = format!("{},{}", data.path.display(), out.path().display());
    let wide = engine_with_roots(&data.path, &roots).await;
    wide.sql(&format!(
        "copy (select 1 as a) to '{}/c.parquet'",
        out.path().display()
    ))
    .await
    .unwrap();
    assert_eq!(count_files(out.path()), 1);
}

async fn engine_with_roots(data: &std::path::Path, roots: &str) -> squall_planner::Engine {
    engine(data, &[("squall.catalog.allowed_roots", roots)]).await
}
