//! The 22 TPC-H queries (SF 0.01, 2,000-row row groups) under each kind of
//! injected fault, one test per kind: every answer equal to single-node
//! DataFusion's, the recovery that fault calls for seen in the profiles, and
//! afterwards no exchange object and no completion queue left. Then clean
//! failures, naming stage, task and cause, once retries are spent.
//!
//! Query ids are fixed, so every injected decision is the same on every run.
//! Four queries run at a time on one engine (waits on deadlines overlap).

use futures::StreamExt;
use squall_planner::profile::QueryProfile;
use squall_planner::{Engine, RunOptions};

use crate::common::*;

/// Settings every fault test shares: a seed, attempts enough for 20% crash
/// rates, deadlines scaled to tasks of tens of milliseconds, and a silence
/// timeout of two minutes (tasks here run for milliseconds; a query that
/// stalls fails, saying what it waits for, rather than waiting 15 minutes).
const BASE: &[(&str, &str)] = &[
    ("squall.fault.seed", "6"),
    ("squall.task.max_attempts", "8"),
    ("squall.task.speculation_min_ms", "300"),
    ("squall.task.attempt_timeout_ms", "1500"),
    ("squall.task.silence_timeout_secs", "120"),
];

/// Longer than any query here takes under its faults (seconds), shorter
/// than a stall would hold the suite.
const STALLED: std::time::Duration = std::time::Duration::from_secs(240);

async fn faulty_engine(faults: &[(&str, &str)]) -> Engine {
    let pairs: Vec<(&str, &str)> = BASE.iter().chain(faults).copied().collect();
    engine(&sf001_small_groups().path, &pairs).await
}

/// Runs the 22 queries on `engine`, checks every answer and that nothing is
/// left behind; returns the profiles, summed into one.
async fn run_22(kind: &str, engine: &Engine) -> QueryProfile {
    let reference = single_node(&sf001_small_groups().path).await;
    let mut expected = Vec::new();
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        expected.push(single_node_csv(&reference, sql).await);
    }
    let runs = futures::stream::iter(1..=22usize)
        .map(|q| async move {
            let sql = squall_tpch::query(q).unwrap();
            let options = RunOptions {
                query_id: Some(format!("{kind}-q{q:02}")),
                ..Default::default()
            };
            // A query that stalls fails the test, naming it, rather
            // than holding the suite.
            let run = tokio::time::timeout(STALLED, engine.sql_with(sql, &options));
            let result = run
                .await
                .unwrap_or_else(|_| panic!("{kind}: q{q:02} still running after {STALLED:?}"));
            (q, result)
        })
        .buffer_unordered(4)
        .collect::<Vec<_>>()
        .await;
    let mut sum = QueryProfile::default();
    for (q, result) in runs {
        let sql = squall_tpch::query(q).unwrap();
        let r = result.unwrap_or_else(|e| panic!("{kind}: q{q:02} failed: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(&format!("{kind}: q{q:02}"), &expected[q - 1], &actual, sql);
        let p = r.profile.unwrap();
        sum.tasks += p.tasks;
        sum.tasks_launched += p.tasks_launched;
        sum.retries += p.retries;
        sum.speculative += p.speculative;
        sum.duplicates += p.duplicates;
        sum.invoke_throttles += p.invoke_throttles;
        sum.store_retries += p.store_retries;
        sum.store_hedges += p.store_hedges;
        sum.wall_ms += p.wall_ms;
    }
    eprintln!(
        "faults {kind}: 22/22 right; {} tasks, {} retried, {} beside silent ones, {} duplicate messages, \
         {} throttles, {} store retries, {} hedged reads; {} ms of query time",
        sum.tasks,
        sum.retries,
        sum.speculative,
        sum.duplicates,
        sum.invoke_throttles,
        sum.store_retries,
        sum.store_hedges,
        sum.wall_ms
    );
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "{kind}: exchange objects left behind"
    );
    assert_eq!(
        engine.open_queues(),
        0,
        "{kind}: completion queues left behind"
    );
    assert_eq!(engine.running_tasks(), 0, "{kind}: tasks still running");
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_20_percent_of_tasks_crashing() {
    let engine = faulty_engine(&[("squall.fault.task_crash_rate", "0.2")]).await;
    let p = run_22("crash", &engine).await;
    assert!(
        p.retries > p.tasks / 10,
        "{} retries of {} tasks",
        p.retries,
        p.tasks
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_10_percent_of_tasks_hanging() {
    let engine = faulty_engine(&[("squall.fault.task_hang_rate", "0.1")]).await;
    let p = run_22("hang", &engine).await;
    // Every hanging attempt was overtaken by a duplicate (a hang lasts 300 s).
    assert!(p.speculative > 0, "no straggler was duplicated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_5_percent_of_store_requests_failing() {
    let engine = faulty_engine(&[("squall.fault.store_error_rate", "0.05")]).await;
    let p = run_22("store_errors", &engine).await;
    assert!(p.store_retries > 0, "no store request was retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_5_percent_of_store_requests_slow() {
    let engine = faulty_engine(&[
        ("squall.fault.store_slow_rate", "0.05"),
        ("squall.fault.store_slow_ms", "2000"),
        ("squall.store.hedge_after_ms", "100"),
    ])
    .await;
    let p = run_22("store_slow", &engine).await;
    assert!(p.store_hedges > 0, "no slow read was hedged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_10_percent_of_messages_duplicated_and_late() {
    let engine = faulty_engine(&[
        ("squall.fault.message_duplicate_rate", "0.1"),
        ("squall.fault.message_delay_rate", "0.1"),
        ("squall.fault.message_delay_ms", "200"),
    ])
    .await;
    let p = run_22("messages_duplicated", &engine).await;
    assert!(p.duplicates > 0, "no duplicate message was seen");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_10_percent_of_messages_lost() {
    let engine = faulty_engine(&[("squall.fault.message_loss_rate", "0.1")]).await;
    let p = run_22("messages_lost", &engine).await;
    assert!(p.speculative > 0, "no silent task was run again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_20_percent_of_invocations_throttled() {
    let engine = faulty_engine(&[
        ("squall.fault.invoke_throttle_rate", "0.2"),
        ("squall.task.invoke_backoff_ms", "10"),
    ])
    .await;
    let p = run_22("throttles", &engine).await;
    assert!(p.invoke_throttles > 0, "no invocation was throttled");
    assert_eq!(p.retries, 0, "a throttle cost a task attempt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_with_every_fault_at_once() {
    let engine = faulty_engine(&[
        ("squall.fault.task_crash_rate", "0.1"),
        ("squall.fault.task_hang_rate", "0.05"),
        ("squall.fault.store_error_rate", "0.03"),
        ("squall.fault.store_slow_rate", "0.03"),
        ("squall.fault.store_slow_ms", "1000"),
        ("squall.store.hedge_after_ms", "100"),
        ("squall.fault.message_duplicate_rate", "0.05"),
        ("squall.fault.message_loss_rate", "0.05"),
        ("squall.fault.message_delay_rate", "0.05"),
        ("squall.fault.message_delay_ms", "200"),
        ("squall.fault.invoke_throttle_rate", "0.1"),
        ("squall.task.invoke_backoff_ms", "10"),
    ])
    .await;
    let p = run_22("all", &engine).await;
    assert!(
        p.retries > 0 && p.speculative > 0,
        "retries {}, speculative {}",
        p.retries,
        p.speculative
    );
}

/// Runs `sql` expecting a failure; returns its message after checking that
/// nothing is left behind.
async fn failure(engine: &Engine, sql: &str) -> String {
    let err = engine.sql(sql).await.unwrap_err().to_string();
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "exchange objects left behind: {err}"
    );
    assert_eq!(
        engine.open_queues(),
        0,
        "completion queues left behind: {err}"
    );
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spent_retries_fail_cleanly_naming_stage_task_and_cause() {
    let sql = "select count(*) from lineitem";
    // Every store request fails: the task's store retries are spent, then its attempts.
    let engine = faulty_engine(&[
        ("squall.fault.store_error_rate", "1.0"),
        ("squall.task.max_attempts", "2"),
        ("squall.store.retry_backoff_ms", "1"),
    ])
    .await;
    let err = failure(&engine, sql).await;
    assert!(
        err.contains("stage s") && err.contains(", task ") && err.contains("2 attempt"),
        "{err}"
    );
    assert!(err.contains("503 Slow Down"), "{err}");

    // Every invocation is throttled: the invoke retries are spent.
    let engine = faulty_engine(&[
        ("squall.fault.invoke_throttle_rate", "1.0"),
        ("squall.task.invoke_retries", "2"),
        ("squall.task.invoke_backoff_ms", "1"),
    ])
    .await;
    let err = failure(&engine, sql).await;
    assert!(
        err.contains("invoking task ") && err.contains("throttled 3 times"),
        "{err}"
    );

    // Every completion message is lost: the attempts are spent on duplicates,
    // and the query fails after the silence timeout, naming what it waits for.
    let engine = faulty_engine(&[
        ("squall.fault.message_loss_rate", "1.0"),
        ("squall.task.max_attempts", "2"),
        ("squall.task.attempt_timeout_ms", "100"),
        ("squall.task.speculation_min_ms", "100"),
        ("squall.task.silence_timeout_secs", "1"),
    ])
    .await;
    let err = failure(&engine, sql).await;
    assert!(
        err.contains("no task reported")
            && err.contains("stage s")
            && err.contains("2 attempt(s), 0 being sent, attempts [] reported"),
        "{err}"
    );
}
