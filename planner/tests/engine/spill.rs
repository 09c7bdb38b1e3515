//! Map outputs beyond memory: a scan task whose output is larger than the
//! query's memory limit (or than the spill threshold) spills it to local
//! disk and uploads it in parts, and the query answers as single-node
//! DataFusion does; the profile shows the spills and the multipart requests.

use squall_planner::profile::StageProfile;

use crate::common::*;

/// Nearly every comment is distinct: the scan stage's output is about as
/// large as the comments themselves (12 MB at SF 0.1).
const SQL: &str = "SELECT count(*), sum(n) FROM \
                   (SELECT l_comment, count(*) AS n FROM lineitem GROUP BY l_comment) t";

/// The stage that scans lineitem (the only one reading row groups).
fn scan_stage(stages: &[StageProfile]) -> &StageProfile {
    stages
        .iter()
        .find(|s| s.row_groups > 0)
        .expect("a scan stage")
}

/// An engine whose memory `limit` (the setting `key`) the scan task of
/// [`SQL`] meets alone.
async fn one_scan_task_under(
    data: &std::path::Path,
    key: &str,
    limit: usize,
) -> squall_planner::Engine {
    engine(
        data,
        &[
            // One scan task for all of lineitem, one task at a time (tasks
            // side by side would share the limit).
            ("squall.scan.target_task_bytes", "1073741824"),
            ("squall.worker_slots", "1"),
            // Reduce tasks small enough for their final aggregation to fit:
            // one per partition.
            ("squall.shuffle.partitions", "32"),
            ("squall.shuffle.target_task_bytes", "0"),
            (key, &limit.to_string()),
            ("datafusion.execution.sort_spill_reservation_bytes", "65536"),
        ],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_output_beyond_the_memory_limit_spills_and_answers_right() {
    let data = sf01();
    let limit = 4 * 1024 * 1024;
    let engine = one_scan_task_under(&data.path, "squall.query.memory_limit_bytes", limit).await;
    let r = engine
        .sql(SQL)
        .await
        .unwrap_or_else(|e| panic!("under a {limit}-byte limit: {e}"));
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let expected = single_node_csv(&single_node(&data.path).await, SQL).await;
    assert_same("spilled map output", &expected, &actual, SQL);

    let profile = r.profile.unwrap();
    let scan = scan_stage(&profile.stage_profiles);
    assert_eq!(scan.tasks, 1);
    assert!(
        scan.spills > 0 && scan.spill_bytes > 0,
        "the scan stage did not spill: {scan:?}"
    );
    assert!(
        scan.spill_bytes > (limit as u64),
        "spilled only {} bytes",
        scan.spill_bytes
    );
    // A multipart upload: create, at least two parts, complete.
    assert!(scan.put_requests >= 4, "{scan:?}");
    assert!(
        profile.peak_memory_bytes <= limit as u64,
        "a task held {} bytes, above the limit {limit}",
        profile.peak_memory_bytes
    );
    assert!(
        profile
            .display()
            .contains("exchange writers spilled to local disk"),
        "{}",
        profile.display()
    );
    assert_eq!(count_files(engine.exchange_root()), 0);
    assert_eq!(engine.open_queues(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spill_threshold_spills_without_a_memory_limit() {
    let data = sf01();
    let one_task = ("squall.scan.target_task_bytes", "1073741824");
    // Not spilled: one PUT per task, however large its object (over 5 MiB
    // here, S3's smallest part).
    let unspilled = engine(&data.path, &[one_task]).await;
    let r = unspilled.sql(SQL).await.unwrap();
    let profile = r.profile.unwrap();
    let scan = scan_stage(&profile.stage_profiles);
    assert_eq!(scan.spills, 0, "{scan:?}");
    assert!(scan.bytes_out / scan.tasks as u64 > 5 << 20, "{scan:?}");
    assert_eq!(scan.put_requests, scan.tasks as u64, "{scan:?}");

    let engine = engine(
        &data.path,
        &[
            one_task,
            ("squall.shuffle.spill_threshold_bytes", "1048576"),
        ],
    )
    .await;
    let actual = squall_csv(&engine, SQL).await;
    let expected = single_node_csv(&single_node(&data.path).await, SQL).await;
    assert_same("spilled by the threshold", &expected, &actual, SQL);
    let r = engine.sql(SQL).await.unwrap();
    let profile = r.profile.unwrap();
    let scan = scan_stage(&profile.stage_profiles);
    assert!(scan.spills >= 10, "{scan:?}");
    assert!(scan.put_requests >= 4, "{scan:?}");
    assert_eq!(profile.spills, scan.spills);
    assert_eq!(count_files(engine.exchange_root()), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spilled_uploads_meeting_store_faults_still_answer_right() {
    // 10% of store requests fail, multipart creations, parts and completions
    // too (half the failed parts and completions after they were stored).
    // A failed part is not retried by the store (another put_part would be
    // another part number): the task fails and the coordinator retries it,
    // under a key of its own. Never a wrong answer or an object left behind.
    // Fault decisions hash the objects' keys, which differ per query: the
    // query runs until a run has met faults (almost always the first).
    let data = sf01();
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "1073741824"),
            ("squall.shuffle.spill_threshold_bytes", "1048576"),
            ("squall.shuffle.upload_part_bytes", "5242880"),
            ("squall.fault.store_error_rate", "0.1"),
            ("squall.task.max_attempts", "12"),
        ],
    )
    .await;
    let expected = single_node_csv(&single_node(&data.path).await, SQL).await;
    let mut met = false;
    for run in 0..5 {
        let r = engine
            .sql(SQL)
            .await
            .unwrap_or_else(|e| panic!("run {run} with store faults: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same("spilled under store faults", &expected, &actual, SQL);
        let profile = r.profile.unwrap();
        assert!(scan_stage(&profile.stage_profiles).spills > 0);
        assert_eq!(count_files(engine.exchange_root()), 0);
        if profile.store_retries > 0 || profile.retries > 0 {
            met = true;
            break;
        }
    }
    assert!(met, "five runs met no store fault");
    assert_eq!(engine.open_queues(), 0);
}

/// The process's memory budget (`squall.process_memory_bytes`) holds
/// without a query limit: the same map output spills under it and the
/// query answers right; an aggregate that cannot spill and cannot fit
/// fails naming the budget, and the engine answers the next query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_process_budget_spills_what_can_and_names_itself_where_nothing_can() {
    let data = sf01();
    let budget = 8 * 1024 * 1024;
    let engine = one_scan_task_under(&data.path, "squall.process_memory_bytes", budget).await;
    let r = engine
        .sql(SQL)
        .await
        .unwrap_or_else(|e| panic!("under an {budget}-byte process budget: {e}"));
    let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let expected = single_node_csv(&single_node(&data.path).await, SQL).await;
    assert_same("spilled under the process budget", &expected, &actual, SQL);
    let profile = r.profile.unwrap();
    assert!(scan_stage(&profile.stage_profiles).spills > 0, "no spill");
    // One aggregate of every comment (16 MB) in one task cannot spill.
    let whole = "select cardinality(array_agg(l_comment)) from lineitem";
    let err = engine
        .sql(whole)
        .await
        .expect_err("an aggregate beyond the budget")
        .to_string();
    assert!(err.contains("this process's memory budget"), "{err}");
    let n = squall_csv(&engine, "select count(*) as n from nation").await;
    assert_eq!(n, "n\n25\n");
    assert_eq!(count_files(engine.exchange_root()), 0);
}

/// A sort under a memory limit a few times DataFusion's reservation for
/// merging its spilled runs (`sort_spill_reservation_bytes`, 10 MiB, left
/// as it is) spills and answers: two sorts' reservations took 20 of 48 MiB
/// and the sort of a 40 MB input failed ("ExternalSorterMerge[1] asked for
/// 10485760 more bytes"); a reservation is now at most an eighth of the
/// limit. Under a query's limit and under the process's budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sort_spills_under_a_limit_near_its_merge_reservation() {
    let data = sf01();
    let sql = "select count(*) as n, max(rn) as last, min(c) as first from (select l_comment as c, \
               row_number() over (order by l_comment, l_orderkey, l_linenumber) as rn from lineitem) t";
    let expected = single_node_csv(&single_node(&data.path).await, sql).await;
    for key in [
        "squall.query.memory_limit_bytes",
        "squall.process_memory_bytes",
    ] {
        let limit = 48 << 20;
        let engine = engine(
            &data.path,
            &[("squall.worker_slots", "1"), (key, &limit.to_string())],
        )
        .await;
        let r = engine
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("under {key} = {limit}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(key, &expected, &actual, sql);
        let peak = r.profile.unwrap().peak_memory_bytes;
        assert!(peak <= limit as u64, "{key}: a task held {peak} bytes");
    }
}
