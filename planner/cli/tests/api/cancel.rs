//! DELETE on `nextUri` cancels the query and stops its tasks.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::Value;
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions};

use crate::common::*;

const LONG: &str =
    "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0";

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
