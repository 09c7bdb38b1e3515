//! Following `nextUri` to the end yields the engine's answers.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use squall_server::paging::PageLimits;
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions};
use squall_tpch as tpch;
use squall_tpch::compare::compare_csv;
use squall_tpch::run::to_csv;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_queries_over_http_equal_the_engine() {
    // Seven-row pages: multi-page results for the queries with more rows.
    let embedded = EmbeddedOptions {
        page_limits: PageLimits {
            rows: 7,
            bytes: 1 << 20,
        },
        ..EmbeddedOptions::default()
    };
    let server = start_with(embedded, ApiOptions::new(ApiAuth::None), &[]).await;
    let mut multi_page = 0;
    for n in 1..=22 {
        let sql = tpch::query(n).expect("query");
        let out = run_query(&server, sql, &[("X-Trino-User", "test")]).await;
        assert!(out.error().is_none(), "q{n}: {}", out.last());
        assert_eq!(out.last()["stats"]["state"], "FINISHED", "q{n}");
        let columns = out.columns.clone().expect("columns");
        let expected = server.engine.sql(sql).await.expect("engine");
        assert_eq!(
            columns.len(),
            expected.schema.fields().len(),
            "q{n}: column count"
        );
        let expected_csv = to_csv(&expected.schema, &expected.batches).expect("csv");
        let actual_csv = rows_to_csv(&columns, &out.rows);
        let c = compare_csv(&expected_csv, &actual_csv, Some(sql)).expect("comparable");
        assert!(
            c.ok,
            "q{n}: {}\nexpected:\n{expected_csv}\nactual:\n{actual_csv}",
            c.message
        );
        let data_pages = out.docs.iter().filter(|d| d.get("data").is_some()).count();
        assert!(
            data_pages <= out.rows.len().div_ceil(7).max(1),
            "q{n}: pages bounded by 7 rows"
        );
        if data_pages > 1 {
            multi_page += 1;
        }
    }
    assert!(
        multi_page >= 3,
        "several queries should span pages, got {multi_page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_answer_is_queued_then_progress_then_result() {
    let server = start(ApiAuth::None).await;
    let out = run_query(&server, "select count(*) as n from lineitem", &[]).await;
    let first = &out.docs[0];
    assert_eq!(first["stats"]["state"], "QUEUED");
    assert!(
        first["nextUri"]
            .as_str()
            .unwrap()
            .contains("/v1/statement/queued/")
    );
    assert!(first.get("columns").is_none());
    let last = out.last();
    assert_eq!(last["stats"]["state"], "FINISHED");
    assert_eq!(last["stats"]["progressPercentage"], 100.0);
    assert!(last["stats"]["totalSplits"].as_u64().unwrap() > 0, "{last}");
    assert_eq!(
        last["stats"]["completedSplits"], last["stats"]["totalSplits"],
        "{last}"
    );
    assert_eq!(out.rows, vec![serde_json::json!([60175])]);
    let cols = out.columns.as_ref().unwrap();
    assert_eq!(cols[0]["name"], "n");
    assert_eq!(cols[0]["type"], "bigint");
    // The summary behind infoUri.
    let info = last["infoUri"].as_str().unwrap();
    let (status, _, summary) = call(&server, Method::GET, info, None, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(summary["state"], "FINISHED");
    assert_eq!(summary["query"], "select count(*) as n from lineitem");
    // Empty results still carry their columns.
    let out = run_query(
        &server,
        "select l_orderkey from lineitem where l_orderkey < 0",
        &[],
    )
    .await;
    assert!(out.rows.is_empty());
    assert_eq!(out.columns.unwrap()[0]["name"], "l_orderkey");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drained_queries_are_forgotten() {
    let embedded = EmbeddedOptions {
        drained_grace: Duration::ZERO,
        ..EmbeddedOptions::default()
    };
    let server = start_with(embedded, ApiOptions::new(ApiAuth::None), &[]).await;
    let out = run_query(&server, "select 1 as one", &[]).await;
    assert_eq!(out.rows, vec![serde_json::json!([1])]);
    // The request that served the last page, asked again after a sweep.
    let docs = &out.docs;
    let last_uri = docs[docs.len() - 2]["nextUri"]
        .as_str()
        .unwrap()
        .to_string();
    server.service.sweep().await;
    assert_eq!(server.service.held_queries(), 0);
    let (status, _, doc) = call(&server, Method::GET, &last_uri, None, &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_cancelled_half_read_is_let_go() {
    let embedded = EmbeddedOptions {
        drained_grace: Duration::ZERO,
        ..EmbeddedOptions::default()
    };
    let server = start_with(embedded, ApiOptions::new(ApiAuth::None), &[]).await;
    let client =
        squall_cli::client::TrinoClient::new(&server.base, Vec::new(), Duration::from_secs(60))
            .unwrap();
    // 60,175 rows in pages of at most 1,000: the client stops after two pages.
    let answer = client
        .run_at_most("select * from lineitem", Duration::from_secs(60), 1_500)
        .await
        .unwrap();
    assert!(answer.cut, "{:?}", answer.states);
    assert_eq!(answer.rows.len(), 2_000);
    assert_eq!(answer.states.last().map(String::as_str), Some("FINISHED"));
    // Its pages go at the next sweep, not after the retention time.
    server.service.sweep().await;
    assert_eq!(server.service.held_queries(), 0);
}
