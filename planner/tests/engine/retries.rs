//! Injected task failures: retried with new attempts, answers unchanged,
//! nothing left behind; a task that keeps failing fails the query with a
//! message naming its stage and task.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_tasks_give_the_right_answer_and_leave_nothing() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.fault.task_crash_rate", "0.3"),
            ("squall.fault.seed", "42"),
            ("squall.task.max_attempts", "10"),
            ("squall.scan.target_task_bytes", "50000"),
        ],
    )
    .await;
    let reference = single_node(&data.path).await;
    let mut retries = 0;
    for q in [1, 3, 18, 21] {
        let sql = squall_tpch::query(q).unwrap();
        let r = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        retries += r.profile.as_ref().unwrap().retries;
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(
            &format!("q{q:02}"),
            &single_node_csv(&reference, sql).await,
            &actual,
            sql,
        );
    }
    assert!(retries > 0, "no task was retried");
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "exchange objects left behind"
    );
    assert_eq!(engine.open_queues(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exhausted_retries_fail_with_stage_and_task() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.fault.task_crash_rate", "1.0"),
            ("squall.task.max_attempts", "2"),
        ],
    )
    .await;
    let err = engine
        .sql("select count(*) from lineitem")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("stage s") && err.contains("task") && err.contains("injected"),
        "{err}"
    );
    assert!(err.contains("2 attempt"), "{err}");
    assert_eq!(count_files(engine.exchange_root()), 0);
    assert_eq!(engine.open_queues(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_payloads_fail_the_query_naming_stage_and_task() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.fault.corrupt_payload_rate", "1.0")]).await;
    let err = engine
        .sql("select count(*) from nation")
        .await
        .unwrap_err()
        .to_string();
    // Not retried: a payload that does not decode will not decode next time either.
    assert!(
        err.contains("stage s") && err.contains("task 0") && err.contains("1 attempt"),
        "{err}"
    );
    assert!(
        err.contains("could not be decoded") && err.contains("bad_payload"),
        "{err}"
    );
    assert_eq!(count_files(engine.exchange_root()), 0);
    assert_eq!(engine.open_queues(), 0);
}

/// A function refusing the values it meets (`make_date` of month 13, `chr`
/// of a negative code, `split_part` of field 0) fails the query at the
/// first attempt: the same rows fail every attempt, and each attempt was
/// another invocation of every task of the stage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_a_function_refuses_are_not_retried() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.scan.target_task_bytes", "100000")]).await;
    for (sql, says) in [
        (
            "select max(make_date(2020, l_linenumber + 12, 1)) from lineitem",
            "out of range",
        ),
        (
            "select max(chr(-l_linenumber)) from lineitem",
            "invalid Unicode",
        ),
        (
            "select max(split_part(l_comment, ' ', 0)) from lineitem",
            "zero",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(
            err.contains("1 attempt") && err.contains(says),
            "{sql}: {err}"
        );
    }
    assert_eq!(count_files(engine.exchange_root()), 0);
}
