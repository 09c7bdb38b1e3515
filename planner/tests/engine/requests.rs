//! The requests a query makes, as its profile counts them at the seams:
//! they must add up with what the operators, the coordinator and the
//! exchange layout say happened (GETs per non-empty range read, a PUT per
//! map object, a LIST per shard written to, a DELETE per object written,
//! a SendMessage per report), and the cost model must price them.

use std::collections::BTreeSet;

use squall_core::exchange::stage_shards;
use squall_planner::profile::QueryProfile;

use crate::common::*;

/// Orders per priority with a join and a filter: scan stages, hash stages,
/// a gather; small enough to run in a second.
const SQL: &str = "select o_orderpriority, count(*) as n \
    from orders join lineitem on l_orderkey = o_orderkey \
    where l_commitdate < l_receiptdate \
    group by o_orderpriority order by o_orderpriority";

async fn profiled(engine: &squall_planner::Engine, sql: &str) -> QueryProfile {
    engine
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{sql}"))
        .profile
        .expect("a distributed query has a profile")
}

/// Everything that must hold for a query that ran without faults.
fn check_consistent(p: &QueryProfile, prefixes: u32) {
    let r = &p.requests;
    let all = r.total();
    let text = p.display();
    let attempts = p.tasks_launched + p.retries + p.speculative;
    assert_eq!(p.tasks, attempts, "no fault, no extra attempt\n{text}");

    // Tasks: a PUT per map object written (the operator counts one per
    // object with rows), GETs of stages without scans are their exchange
    // reads, one per non-empty range (ShuffleReadExec counts each).
    for s in &p.stage_profiles {
        assert_eq!(s.requests.put, s.put_requests, "s{}: PUTs\n{text}", s.stage);
        if s.row_groups == 0 && s.scan_bytes == 0 {
            assert_eq!(
                s.requests.get, s.get_requests,
                "s{}: exchange GETs are the non-empty ranges read\n{text}",
                s.stage
            );
        } else {
            // A scan stage also reads Parquet: at least a GET per row group.
            assert!(
                s.requests.get >= s.get_requests + s.row_groups.min(1),
                "s{}: scan GETs\n{text}",
                s.stage
            );
        }
        assert_eq!(
            s.requests.sqs_send, s.tasks as u64,
            "s{}: a report each",
            s.stage
        );
        assert_eq!(s.requests.head, 0, "no stop markers embedded");
    }
    let map_objects: u64 = p.stage_profiles.iter().map(|s| s.put_requests).sum();
    assert_eq!(r.tasks.put, map_objects);

    // Coordinator: the result's GET (the final task's one object), the key
    // filters' GETs and PUTs, and the combined broadcasts' (a GET per map
    // object, a PUT each); cleanup deletes every object written, with one
    // LIST per shard the stages wrote to.
    let filter_gets: u64 = p.filters.iter().map(|f| f.get_requests).sum();
    let filter_puts: u64 = p.filters.iter().map(|f| f.put_requests).sum();
    let combined = p.broadcasts_combined;
    assert_eq!(
        r.coordinator.get,
        filter_gets + p.combine_get_requests + 1,
        "{text}"
    );
    assert_eq!(r.coordinator.put, filter_puts + combined, "{text}");
    assert_eq!(
        r.coordinator.delete,
        map_objects + filter_puts + combined,
        "{text}"
    );
    let shards: BTreeSet<u32> = p
        .stage_profiles
        .iter()
        .flat_map(|s| stage_shards(&p.query_id, s.stage, s.tasks as u32, prefixes))
        .collect();
    assert_eq!(
        r.coordinator.list,
        shards.len() as u64,
        "one LIST per shard\n{text}"
    );
    assert!(r.coordinator.list <= u64::from(prefixes));

    // SQS: one queue made and deleted, a SendMessage per report, receives as
    // SQS needs them (10 messages a request at most), as many batch deletes.
    let messages = p.messages as u64;
    assert_eq!(messages, attempts as u64);
    assert_eq!(
        (all.sqs_create_queue, all.sqs_delete_queue),
        (1, 1),
        "{text}"
    );
    assert_eq!(all.sqs_send, messages);
    assert!(all.sqs_delete_batch >= messages.div_ceil(10), "{text}");
    assert!(all.sqs_receive >= all.sqs_delete_batch, "{text}");
    // Lambda: an invocation per attempt.
    assert_eq!((all.invoke, all.invoke_throttled), (attempts as u64, 0));
    assert!(r.state.is_empty() && !r.stop_markers);

    // Shown, and priced.
    assert!(
        text.contains("requests") && text.contains("1 CreateQueue"),
        "{text}"
    );
    let config = squall_core::config::SquallConfig::default();
    let inputs = squall_planner::cost::CostInputs::from_profile(p, &config);
    assert!(inputs.s3_get >= all.get && inputs.s3_list == all.list);
    assert_eq!(inputs.sqs_requests, all.sqs());
    assert_eq!(inputs.worker_invocations, attempts as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requests_of_a_query_add_up() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "100000"),
            ("squall.shuffle.partitions", "3"),
            ("squall.shuffle.prefixes", "4"),
        ],
    )
    .await;
    let first = profiled(&engine, SQL).await;
    check_consistent(&first, 4);
    assert!(first.tasks > 4, "several tasks per stage: {}", first.tasks);
    // The first query registered orders and lineitem; the second finds
    // them registered and their footers cached; each lists each table once
    // (the exact counts are
    // `tables_are_read_when_named_and_footers_once_per_process`'s).
    let second = profiled(&engine, SQL).await;
    check_consistent(&second, 4);
    let (first, second) = (first.requests.planning, second.requests.planning);
    assert_eq!(second.get, 0, "{second:?}");
    assert_eq!(second.list, first.list, "{first:?} {second:?}");
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "objects left behind"
    );
    assert_eq!(engine.open_queues(), 0);
}

/// The aws backend builds an engine, and registers its catalog, for every
/// request. A table is registered when a query first names it: the first
/// registration in a process reads each of its Parquet files' footers with
/// one GET, charged to the naming query's planning; tables the query does
/// not name are not read; a later engine reads no footer again. Each query
/// lists each table it names once: registering it, or, registered by an
/// earlier statement, planning its scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_are_read_when_named_and_footers_once_per_process() {
    // Files of their own (new paths, new modification times): no other
    // test of this process has read their footers.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = std::collections::HashMap::new();
    for table in ["orders", "lineitem", "nation"] {
        let to = dir.path().join(table);
        std::fs::create_dir(&to).expect("mkdir");
        for entry in std::fs::read_dir(sf001_small_groups().path.join(table)).expect("ls") {
            let from = entry.expect("entry").path();
            std::fs::copy(&from, to.join(from.file_name().expect("name"))).expect("copy");
            *files.entry(table).or_insert(0u64) += 1;
        }
    }
    let per_request = || async {
        engine(dir.path(), &[("squall.shuffle.partitions", "3")])
            .await
            .for_one_request()
    };
    let first = profiled(&per_request().await, SQL).await;
    let planning = first.requests.planning;
    assert_eq!(
        planning.get,
        files["orders"] + files["lineitem"],
        "a GET per footer of the tables named\n{}",
        first.display()
    );
    assert_eq!(
        planning.list,
        2,
        "each table listed once\n{}",
        first.display()
    );
    let again = profiled(&per_request().await, SQL).await;
    let planning_again = again.requests.planning;
    assert_eq!(
        planning_again.get,
        0,
        "footers read again\n{}",
        again.display()
    );
    assert_eq!(planning_again.list, planning.list, "{}", again.display());
    // An engine that lives on registers a table once: its next query's
    // planning lists the tables again, once each (files written since are
    // read), and reads no footer.
    let serving = per_request().await;
    let named = profiled(&serving, SQL).await.requests.planning;
    let later = profiled(&serving, SQL).await.requests.planning;
    assert_eq!(named, planning_again);
    assert!(later.list == 2 && later.get == 0, "{later:?}");
    // A query reading a table twice lists it once.
    let twice = "select count(*) from orders a join orders b on a.o_orderkey = b.o_orderkey \
        join lineitem on l_orderkey = a.o_orderkey";
    let fresh = profiled(&per_request().await, twice)
        .await
        .requests
        .planning;
    assert_eq!(fresh.list, 2, "{fresh:?}");
    // A query naming another table registers it then.
    let nation = "select count(*) from nation where n_name <> 'x'";
    let other = profiled(&serving, nation).await.requests.planning;
    assert_eq!(other.get, files["nation"], "{other:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_prefix_is_one_cleanup_list() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            ("squall.scan.target_task_bytes", "100000"),
            ("squall.shuffle.prefixes", "1"),
        ],
    )
    .await;
    let p = profiled(&engine, SQL).await;
    check_consistent(&p, 1);
    assert_eq!(p.requests.coordinator.list, 1);
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "objects left behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_invocations_are_counted_apart() {
    let data = sf001_small_groups();
    let engine = engine(
        &data.path,
        &[
            // The query id is part of what decides a throttle: enough tasks
            // (small scan tasks) that some are throttled whatever the id.
            ("squall.fault.invoke_throttle_rate", "0.3"),
            ("squall.fault.seed", "3"),
            ("squall.task.invoke_backoff_ms", "1"),
            ("squall.scan.target_task_bytes", "20000"),
        ],
    )
    .await;
    let p = profiled(&engine, SQL).await;
    let all = p.requests.total();
    assert!(all.invoke_throttled > 0, "{}", p.display());
    assert_eq!(all.invoke_throttled, p.invoke_throttles);
    assert_eq!(
        all.invoke,
        (p.tasks_launched + p.retries + p.speculative) as u64
    );
    let inputs = squall_planner::cost::CostInputs::from_profile(
        &p,
        &squall_core::config::SquallConfig::default(),
    );
    assert_eq!(inputs.worker_invocations, all.invoke + all.invoke_throttled);
}
