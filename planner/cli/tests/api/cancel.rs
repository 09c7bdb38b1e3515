//! DELETE on `nextUri`, and Trino's kill endpoint `DELETE /v1/query/{id}`,
//! cancel the query and stop its tasks; a shutdown of the service stops
//! every query with SERVER_SHUTTING_DOWN and refuses new ones.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions, QueryService};

use crate::common::*;

const LONG: &str =
    "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0";

/// Polls the query of `doc` until it runs tasks; returns its latest `nextUri`.
async fn until_running(server: &TestServer, mut doc: Value) -> String {
    let started = Instant::now();
    loop {
        let next = doc["nextUri"].as_str().expect("still going").to_string();
        if doc["stats"]["state"] == "RUNNING" && server.engine.running_tasks() > 0 {
            return next;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never ran tasks: {doc}"
        );
        let (status, _, d) = call(server, Method::GET, &next, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "{d}");
        doc = d;
    }
}

async fn post(server: &TestServer, sql: &str) -> Value {
    let (status, _, doc) = call(
        server,
        Method::POST,
        &format!("{}/v1/statement", server.base),
        Some(sql),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    doc
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_stops_a_running_query() {
    let server = start_with(
        EmbeddedOptions::default(),
        ApiOptions::new(ApiAuth::None),
        &[("squall.scan.target_task_bytes", "50000")],
    )
    .await;
    let mut doc = post(&server, LONG).await;
    let id = doc["id"].as_str().unwrap().to_string();
    // Poll until the query runs tasks.
    let started = Instant::now();
    let next = loop {
        let next = doc["nextUri"].as_str().expect("still going").to_string();
        if doc["stats"]["state"] == "RUNNING" && server.engine.running_tasks() > 0 {
            break next;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never ran tasks: {doc}"
        );
        let (status, _, d) = call(&server, Method::GET, &next, None, &[]).await;
        assert_eq!(status, StatusCode::OK, "{d}");
        doc = d;
    };
    let (status, _, body) = call(&server, Method::DELETE, &next, None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");

    // The next GET reports the cancellation, as Trino does, and ends the protocol.
    let (status, _, doc) = call(&server, Method::GET, &next, None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_trino_error(&doc, "USER_CANCELED", "USER_ERROR");
    assert_eq!(doc["id"], id.as_str());

    let info = doc["infoUri"].as_str().unwrap();
    let (_, _, summary) = call(&server, Method::GET, info, None, &[]).await;
    assert_eq!(summary["state"], "CANCELED", "{summary}");

    let engine = server.engine.clone();
    assert!(
        eventually(30, || engine.running_tasks() == 0
            && engine.open_queues() == 0)
        .await,
        "tasks still running after cancel"
    );
    // A cancel of a cancelled query is a no-op.
    let (status, _, _) = call(&server, Method::DELETE, &next, None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The server still answers.
    let out = run_query(&server, "select 1 as one", &[]).await;
    assert_eq!(out.rows, vec![serde_json::json!([1])]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_cancels_a_queued_query() {
    let embedded = EmbeddedOptions {
        max_running: 1,
        ..EmbeddedOptions::default()
    };
    let server = start_with(embedded, ApiOptions::new(ApiAuth::None), &[]).await;
    let running = post(&server, LONG).await;
    let queued = post(&server, "select 1").await;
    let queued_next = queued["nextUri"].as_str().unwrap().to_string();
    // The second query waits for the only running slot.
    let (_, _, doc) = call(&server, Method::GET, &queued_next, None, &[]).await;
    assert_eq!(doc["stats"]["state"], "QUEUED", "{doc}");
    assert_eq!(doc["stats"]["queued"], true);
    let next = doc["nextUri"].as_str().unwrap().to_string();
    assert!(next.contains("/queued/") && next.ends_with("/2"), "{next}");

    let (status, _, _) = call(&server, Method::DELETE, &next, None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, _, doc) = call(&server, Method::GET, &next, None, &[]).await;
    assert_trino_error(&doc, "USER_CANCELED", "USER_ERROR");

    let (status, _, _) = call(
        &server,
        Method::DELETE,
        running["nextUri"].as_str().unwrap(),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let engine = server.engine.clone();
    assert!(eventually(30, || engine.running_tasks() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kill_endpoint_stops_a_running_query() {
    let server = start_with(
        EmbeddedOptions::default(),
        ApiOptions::new(ApiAuth::None),
        &[("squall.scan.target_task_bytes", "50000")],
    )
    .await;
    let doc = post(&server, LONG).await;
    let id = doc["id"].as_str().unwrap().to_string();
    let next = until_running(&server, doc).await;
    let kill = format!("{}/v1/query/{id}", server.base);
    let (status, _, body) = call(&server, Method::DELETE, &kill, None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");

    let (_, _, doc) = call(&server, Method::GET, &next, None, &[]).await;
    assert_trino_error(&doc, "USER_CANCELED", "USER_ERROR");
    let (_, _, summary) = call(&server, Method::GET, &kill, None, &[]).await;
    assert_eq!(summary["state"], "CANCELED", "{summary}");
    let engine = server.engine.clone();
    assert!(
        eventually(30, || engine.running_tasks() == 0
            && engine.open_queues() == 0)
        .await,
        "tasks still running after the kill"
    );
    assert_eq!(
        count_files(engine.exchange_root()),
        0,
        "exchange objects left"
    );
    // The query's memory (the join's build side) is given back.
    let pool = engine.context().runtime_env().memory_pool.clone();
    assert!(
        eventually(30, || pool.reserved() == 0).await,
        "{} bytes still reserved after the kill",
        pool.reserved()
    );
    // Killing it again is a no-op; an unknown query is 404.
    let (status, _, _) = call(&server, Method::DELETE, &kill, None, &[]).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let unknown = format!("{}/v1/query/nosuchquery", server.base);
    let (status, _, doc) = call(&server, Method::DELETE, &unknown, None, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_stops_every_query_and_refuses_new_ones() {
    let embedded = EmbeddedOptions {
        max_running: 1,
        ..EmbeddedOptions::default()
    };
    let server = start_with(
        embedded,
        ApiOptions::new(ApiAuth::None),
        &[("squall.scan.target_task_bytes", "50000")],
    )
    .await;
    let running = post(&server, LONG).await;
    let running_next = until_running(&server, running).await;
    let queued = post(&server, "select 1").await;
    let queued_next = queued["nextUri"].as_str().unwrap().to_string();

    server.service.shutdown(Duration::from_secs(30)).await;
    // Once shutdown returns, the queries' work has stopped and been cleaned up.
    assert_eq!(server.service.active_queries(), 0);
    assert_eq!(server.engine.running_tasks(), 0);
    assert_eq!(server.engine.open_queues(), 0);
    assert_eq!(count_files(server.engine.exchange_root()), 0);
    for next in [&running_next, &queued_next] {
        let (_, _, doc) = call(&server, Method::GET, next, None, &[]).await;
        assert_trino_error(&doc, "SERVER_SHUTTING_DOWN", "INTERNAL_ERROR");
    }
    let refused = run_query(&server, "select 1", &[]).await;
    assert_trino_error(refused.last(), "SERVER_SHUTTING_DOWN", "INTERNAL_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disappears_has_its_query_stopped() {
    // The client timeout as `squall serve -c squall.server.client_timeout_secs=2` sets it.
    let mut config = squall_core::config::SquallConfig::default();
    config.server.client_timeout_secs = 2;
    let embedded = EmbeddedOptions {
        sweep_every: Duration::from_millis(200),
        ..EmbeddedOptions::from_config(&config)
    };
    assert_eq!(embedded.abandon_after, Duration::from_secs(2));
    let server = start_with(
        embedded,
        ApiOptions::new(ApiAuth::None),
        &[("squall.scan.target_task_bytes", "50000")],
    )
    .await;
    let doc = post(&server, LONG).await;
    let next = until_running(&server, doc).await;
    // The client goes away mid-query: no poll, no DELETE.
    let engine = server.engine.clone();
    assert!(
        eventually(30, || engine.running_tasks() == 0
            && engine.open_queues() == 0)
        .await,
        "an abandoned query kept running"
    );
    // A client that comes back learns why.
    let (status, _, doc) = call(&server, Method::GET, &next, None, &[]).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("abandoned") && m.contains("client_timeout_secs")),
        "{doc}"
    );
    // The server still answers.
    let out = run_query(&server, "select 1 as one", &[]).await;
    assert_eq!(out.rows, vec![serde_json::json!([1])]);
}
