//! Queries longer than one coordinator run: with a tiny
//! `squall.coordinator.max_run_secs` a run hands its query over (a
//! checkpoint in the exchange store) and the engine resumes it in process
//! from a fresh plan. Answers equal single-node DataFusion, the profile
//! counts the hand-offs, no accepted task is launched again (attempts ==
//! tasks in every stage: no faults here), nothing is left behind. A caller
//! that resumes hand-offs itself (the coordinator function) gets the
//! hand-off back and resumes it with `RunOptions::resume`; a checkpoint of
//! data that changed since is refused, naming the query and the stage.

use squall_planner::RunOptions;
use squall_planner::engine::Outcome;
use squall_planner::profile::QueryProfile;

use crate::common::*;

/// Every stage ran each of its tasks once: nothing accepted was run again.
fn assert_no_task_rerun(what: &str, p: &QueryProfile) {
    assert_eq!(p.retries, 0, "{what}: retries");
    assert_eq!(p.speculative, 0, "{what}: attempts beside silent ones");
    for s in &p.stage_profiles {
        assert_eq!(
            s.attempts, s.tasks,
            "{what}: stage s{} launched {} attempts for {} tasks",
            s.stage, s.attempts, s.tasks
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handed_over_queries_resume_without_rerunning_tasks() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.coordinator.max_run_secs", "0.05"),
            ("squall.scan.target_task_bytes", "10000"),
            ("squall.worker_slots", "2"),
        ],
    )
    .await;
    let reference = single_node(&data.path).await;
    let mut handoffs = 0;
    // Joins, a key filter (q21's anti and semi joins), a broadcast, sorts.
    for q in [1, 3, 5, 10, 18, 21] {
        let sql = squall_tpch::query(q).unwrap();
        let options = RunOptions {
            query_id: Some(format!("handoff-q{q:02}")),
            ..RunOptions::default()
        };
        let r = engine
            .sql_with(sql, &options)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(
            &format!("q{q:02} handed over"),
            &single_node_csv(&reference, sql).await,
            &actual,
            sql,
        );
        let p = r.profile.unwrap();
        assert_no_task_rerun(&format!("q{q:02}"), &p);
        assert!(p.handoffs == 0 || p.checkpoint_bytes > 0, "q{q:02}: {p:?}");
        handoffs += p.handoffs;
        assert_eq!(
            count_files(engine.exchange_root()),
            0,
            "q{q:02}: objects left"
        );
    }
    assert!(handoffs >= 6, "only {handoffs} hand-offs in 6 queries");
    assert_eq!(engine.open_queues(), 0);
    assert_eq!(engine.running_tasks(), 0);
}

/// Combine stages (the two-level exchange) keep their grids across a
/// hand-off, and EXPLAIN ANALYZE shows the count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn combine_stages_keep_their_grids_across_hand_offs() {
    let data = sf001_tiny_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.coordinator.max_run_secs", "0.05"),
            ("squall.scan.target_task_bytes", "1"),
            ("squall.shuffle.partitions", "64"),
            ("squall.shuffle.target_task_bytes", "131072"),
            ("squall.shuffle.min_tasks", "1"),
            ("squall.shuffle.two_level_min_requests", "1"),
            ("squall.worker_slots", "3"),
            (
                "datafusion.optimizer.hash_join_single_partition_threshold",
                "0",
            ),
            (
                "datafusion.optimizer.hash_join_single_partition_threshold_rows",
                "0",
            ),
        ],
    )
    .await;
    let reference = single_node(&data.path).await;
    let sql = squall_tpch::query(18).unwrap();
    let r = engine.sql(sql).await.unwrap_or_else(|e| panic!("q18: {e}"));
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert_same(
        "q18 two-level, handed over",
        &single_node_csv(&reference, sql).await,
        &actual,
        sql,
    );
    let p = r.profile.unwrap();
    assert_no_task_rerun("q18 two-level", &p);
    assert!(p.handoffs > 0, "no hand-off: {p:?}");
    assert!(
        p.stage_profiles.iter().any(|s| s.grid.is_some()),
        "no combine stage formed a grid: {}",
        p.display()
    );
    let text = engine
        .sql(&format!("explain analyze {sql}"))
        .await
        .unwrap()
        .batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<arrow::array::StringArray>()
        .unwrap()
        .value(1)
        .to_string();
    assert!(text.contains("hand-offs to a fresh run"), "{text}");
    assert_eq!(count_files(engine.exchange_root()), 0);
    assert_eq!(engine.open_queues(), 0);
}

/// The coordinator function's path: the hand-off comes back to the caller,
/// which resumes it with a fresh plan; a resume whose plan differs from the
/// checkpoint's (here a setting changed; changed data changes the scan
/// tasks the same way) is refused by name and ends the query (nothing left
/// behind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_resume_hand_offs_and_a_changed_plan_is_refused() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.coordinator.max_run_secs", "0.001"),
            ("squall.scan.target_task_bytes", "10000"),
            ("squall.worker_slots", "2"),
        ],
    )
    .await;
    let sql = "select o_orderpriority, count(*) as n from orders, lineitem \
               where o_orderkey = l_orderkey and l_commitdate < l_receiptdate \
               group by o_orderpriority order by o_orderpriority";
    let hand_over = |id: &str, resume| RunOptions {
        query_id: Some(id.to_string()),
        return_handoffs: true,
        resume,
        ..RunOptions::default()
    };
    let expected = single_node_csv(&single_node(&data.path).await, sql).await;

    // Resumed by the caller, hand-off after hand-off, to the right answer.
    let mut options = hand_over("handoff-caller", None);
    let mut generations = 0;
    let result = loop {
        match engine.sql_or_hand_over(sql, &options).await.unwrap() {
            Outcome::Finished(r) => break r,
            Outcome::HandedOver(h) => {
                generations += 1;
                assert_eq!(h.resume.generation, generations);
                assert!(
                    h.resume.checkpoint.contains("/checkpoint/g"),
                    "{:?}",
                    h.resume
                );
                options = hand_over("handoff-caller", Some(h.resume.clone()));
            }
        }
    };
    assert!(generations > 0, "never handed over");
    let profile = result.profile.clone().unwrap();
    let r = result.collect().await.unwrap();
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert_same("resumed by the caller", &expected, &actual, sql);
    assert_eq!(profile.handoffs, u64::from(generations));
    assert_no_task_rerun("resumed by the caller", &profile);
    assert!(
        profile.requests.coordinator.put >= u64::from(generations),
        "{profile:?}"
    );
    assert_eq!(count_files(engine.exchange_root()), 0);

    // The plan changes between the hand-off and the resume: refused.
    let Outcome::HandedOver(h) = engine
        .sql_or_hand_over(sql, &hand_over("handoff-changed", None))
        .await
        .unwrap()
    else {
        panic!("the query finished before its first hand-off");
    };
    let changed = RunOptions {
        settings: settings(&[("squall.scan.target_task_bytes", "1000000")]),
        ..hand_over("handoff-changed", Some(h.resume.clone()))
    };
    let err = match engine.sql_or_hand_over(sql, &changed).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("resumed with another plan"),
    };
    assert!(
        err.contains("query handoff-changed") && err.contains("changed since the hand-off"),
        "{err}"
    );
    assert!(err.contains("stage s"), "{err}");
    // The refused query was ended: its tasks stopped, objects and queue gone.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while engine.running_tasks() > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(engine.running_tasks(), 0);
    assert_eq!(count_files(engine.exchange_root()), 0);
    assert_eq!(engine.open_queues(), 0);
}
