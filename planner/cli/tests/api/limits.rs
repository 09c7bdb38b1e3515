//! Admission and limits through the API: the running-query cap with its
//! FIFO queue and a full queue refused; the statement timeout (server-wide
//! and per session, which can only lower it) stopping the query's workers;
//! the per-query memory limit failing a query that cannot spill; session
//! settings that may not change; table locations outside the allowed roots;
//! statements nesting deeper than squall walks.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions, QueryService, QueryState};

use crate::common::*;

const LONG: &str =
    "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0";

async fn post(server: &TestServer, sql: &str, headers: &[(&str, &str)]) -> Value {
    let (status, _, doc) = call(
        server,
        Method::POST,
        &format!("{}/v1/statement", server.base),
        Some(sql),
        headers,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    doc
}

async fn state(server: &TestServer, id: &str) -> QueryState {
    server.service.status(id).await.unwrap().state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_cap_queues_in_order_and_refuses_a_full_queue() {
    let embedded = EmbeddedOptions {
        max_running: 1,
        max_queued: 2,
        ..EmbeddedOptions::default()
    };
    let server = start_with(embedded, ApiOptions::new(ApiAuth::None), &[]).await;
    let long = post(&server, LONG, &[]).await;
    let long_id = long["id"].as_str().unwrap().to_string();
    let q = "select count(*) from lineitem where l_comment like '%a%'";
    let second = post(&server, q, &[]).await;
    let third = post(&server, q, &[]).await;
    for doc in [&second, &third] {
        assert_eq!(doc["stats"]["state"], "QUEUED", "{doc}");
        assert_eq!(doc["stats"]["queued"], true);
    }
    assert_eq!(server.service.admission(), (1, 2));
    // A fourth query finds the queue full: refused at once, as Trino does.
    let (_, _, full) = call(
        &server,
        Method::GET,
        post(&server, "select 4", &[]).await["nextUri"]
            .as_str()
            .unwrap(),
        None,
        &[],
    )
    .await;
    assert_trino_error(&full, "QUERY_QUEUE_FULL", "INSUFFICIENT_RESOURCES");
    assert!(
        full["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_queued_queries"),
        "{full}"
    );

    // The queued queries run one at a time, in the order they came.
    let (second_id, third_id) = (
        second["id"].as_str().unwrap().to_string(),
        third["id"].as_str().unwrap().to_string(),
    );
    server.service.cancel(&long_id).await.unwrap();
    let started = Instant::now();
    loop {
        let (s2, s3) = (
            state(&server, &second_id).await,
            state(&server, &third_id).await,
        );
        if s3 != QueryState::Queued {
            assert_eq!(s2, QueryState::Finished, "the third query started first");
        }
        if s3 == QueryState::Finished {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "queued queries never ran"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // A query's slot is released just after its record says it finished.
    let finished = Instant::now();
    while server.service.admission() != (0, 0) {
        assert!(
            finished.elapsed() < Duration::from_secs(10),
            "a finished query kept its slot: {:?}",
            server.service.admission()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for doc in [&second, &third] {
        let (_, _, d) = call(
            &server,
            Method::GET,
            doc["nextUri"].as_str().unwrap(),
            None,
            &[],
        )
        .await;
        let next = d["nextUri"].as_str().unwrap().to_string();
        let (_, _, d) = call(&server, Method::GET, &next, None, &[]).await;
        assert_eq!(d["stats"]["state"], "FINISHED", "{d}");
    }
}

/// Waits until the query's workers run tasks, by the workers' own count.
async fn wait_for_workers(id: &str) {
    let id = id.to_string();
    assert!(
        eventually(60, || squall_core::activity::running_tasks(&id) > 0).await,
        "query {id} never ran a task"
    );
}

async fn assert_workers_stopped(server: &TestServer, id: &str) {
    let id = id.to_string();
    assert!(
        eventually(30, || squall_core::activity::running_tasks(&id) == 0).await,
        "workers still run tasks of {id}"
    );
    let engine = server.engine.clone();
    assert!(
        eventually(30, || engine.open_queues() == 0
            && count_files(engine.exchange_root()) == 0)
        .await,
        "the query left its queue or exchange objects behind"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_fails_the_query_and_stops_its_workers() {
    let server = start_with(
        EmbeddedOptions::default(),
        ApiOptions::new(ApiAuth::None),
        &[
            ("squall.query.timeout_secs", "2"),
            ("squall.scan.target_task_bytes", "50000"),
        ],
    )
    .await;
    // A session asking for more time gets the server's limit.
    let session = [("X-Trino-Session", "squall.query.timeout_secs=600")];
    let doc = post(&server, LONG, &session).await;
    let id = doc["id"].as_str().unwrap().to_string();
    wait_for_workers(&id).await;
    let started = Instant::now();
    let mut doc = doc;
    while let Some(next) = doc["nextUri"].as_str().map(str::to_string) {
        doc = call(&server, Method::GET, &next, None, &session).await.2;
    }
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_trino_error(&doc, "EXCEEDED_TIME_LIMIT", "INSUFFICIENT_RESOURCES");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("exceeded the timeout of 2 s"), "{message}");
    assert_workers_stopped(&server, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_can_set_a_shorter_timeout() {
    let server = start(ApiAuth::None).await;
    let out = run_query(
        &server,
        LONG,
        &[("X-Trino-Session", "squall.query.timeout_secs=1")],
    )
    .await;
    assert_trino_error(out.last(), "EXCEEDED_TIME_LIMIT", "INSUFFICIENT_RESOURCES");
    assert_workers_stopped(&server, &out.id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_stops_the_workers_by_their_own_count() {
    let server = start_with(
        EmbeddedOptions::default(),
        ApiOptions::new(ApiAuth::None),
        &[("squall.scan.target_task_bytes", "50000")],
    )
    .await;
    let doc = post(&server, LONG, &[]).await;
    let id = doc["id"].as_str().unwrap().to_string();
    wait_for_workers(&id).await;
    let (status, _, _) = call(
        &server,
        Method::DELETE,
        doc["nextUri"].as_str().unwrap(),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_workers_stopped(&server, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_limit_fails_a_query_that_cannot_spill() {
    let server = start_with(
        EmbeddedOptions::default(),
        ApiOptions::new(ApiAuth::None),
        &[("squall.query.memory_limit_bytes", "65536")],
    )
    .await;
    let sql = "select o_orderpriority, count(*) from orders join lineitem on o_orderkey = l_orderkey \
               group by o_orderpriority";
    let out = run_query(&server, sql, &[]).await;
    assert_trino_error(
        out.last(),
        "EXCEEDED_LOCAL_MEMORY_LIMIT",
        "INSUFFICIENT_RESOURCES",
    );
    let message = out.last()["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("stage s")
            && message.contains("task")
            && message.contains("squall.query.memory_limit_bytes"),
        "{message}"
    );
    assert_workers_stopped(&server, &out.id).await;
    // A session cannot lift the limit, only lower it.
    let out = run_query(
        &server,
        sql,
        &[("X-Trino-Session", "squall.query.memory_limit_bytes=0")],
    )
    .await;
    assert_trino_error(
        out.last(),
        "EXCEEDED_LOCAL_MEMORY_LIMIT",
        "INSUFFICIENT_RESOURCES",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_cannot_change_deployment_settings() {
    let server = start(ApiAuth::None).await;
    for header in [
        "squall.exchange_location=/tmp/elsewhere",
        "squall.catalog.allowed_roots=*",
        "squall.worker_function=arn:aws:lambda:us-east-1:1:function:other",
    ] {
        let out = run_query(&server, "select 1", &[("X-Trino-Session", header)]).await;
        assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
    }
    for sql in [
        "SET SESSION squall.catalog.allowed_roots = '*'",
        "SET datafusion.runtime.temp_directory = '/tmp/x'",
    ] {
        let out = run_query(&server, sql, &[]).await;
        assert_trino_error(out.last(), "INVALID_SESSION_PROPERTY", "USER_ERROR");
        assert!(
            out.headers
                .iter()
                .all(|h| h.get("x-trino-set-session").is_none())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_cannot_name_locations_outside_the_allowed_roots() {
    let server = start(ApiAuth::None).await;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("out.parquet");
    let cases = [
        "create external table secrets stored as parquet location '/etc/'".to_string(),
        format!(
            "create external table t2 stored as parquet location '{}/../'",
            catalog().display()
        ),
        format!("copy (select 1 as x) to '{}'", target.display()),
        "create external table s3t stored as parquet location 's3://other-bucket/x/'".to_string(),
    ];
    for sql in &cases {
        let out = run_query(&server, sql, &[]).await;
        assert_trino_error(out.last(), "GENERIC_USER_ERROR", "USER_ERROR");
        let message = out.last()["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("outside the allowed roots")
                && message.contains("squall.catalog.allowed_roots"),
            "{sql}: {message}"
        );
    }
    assert!(!target.exists(), "COPY wrote outside the roots");
    // URL tables are off: a path is not a table name.
    let out = run_query(&server, "select * from '/etc/passwd'", &[]).await;
    assert_trino_error(out.last(), "TABLE_NOT_FOUND", "USER_ERROR");
    // Inside the catalog's root a location is fine.
    let sql = format!(
        "create external table nation_again stored as parquet location '{}/nation/'",
        catalog().display()
    );
    let out = run_query(&server, &sql, &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    let out = run_query(&server, "select count(*) from nation_again", &[]).await;
    assert_eq!(out.rows, vec![serde_json::json!([25])]);
}

/// A statement whose operators nest deeper than squall walks (200,000
/// `1 + 1 + ...` terms, 20,000 UNION ALL branches; 600 terms once
/// overflowed a planning thread's stack and ended the process) is refused
/// by name, and the server answers the next statement; a chain within the
/// ceiling answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_nesting_too_deep_are_refused_and_the_server_stays_up() {
    let server = start(ApiAuth::None).await;
    let chain = |n: usize| vec!["1"; n].join("+");
    let out = run_query(&server, &format!("select {}", chain(200_000)), &[]).await;
    assert_trino_error(out.last(), "GENERIC_USER_ERROR", "USER_ERROR");
    let message = out.last()["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("nests expressions more than 5000 deep"),
        "{message}"
    );
    let out = run_query(&server, &format!("select {} as n", chain(3_000)), &[]).await;
    assert!(out.error().is_none(), "{}", out.last());
    assert_eq!(out.rows, vec![serde_json::json!([3000])]);
    let alternatives = (0..2_000)
        .map(|i| format!("n_nationkey = {i}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let out = run_query(
        &server,
        &format!("select count(*) from nation where {alternatives}"),
        &[],
    )
    .await;
    assert!(out.error().is_none(), "{}", out.last());
    assert_eq!(out.rows, vec![serde_json::json!([25])]);
}
