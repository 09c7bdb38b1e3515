//! Malformed requests get the right status and a Trino-shaped error body.

use reqwest::{Method, StatusCode};
use squall_server::ApiAuth;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests() {
    let server = start(ApiAuth::None).await;
    let statement = format!("{}/v1/statement", server.base);

    for body in ["", "  \n\t "] {
        let (status, _, doc) = call(&server, Method::POST, &statement, Some(body), &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}");
        assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");
        assert!(doc["error"]["message"].as_str().unwrap().contains("empty"));
    }

    let (status, headers, doc) = call(&server, Method::GET, &statement, None, &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(headers["allow"], "POST");
    assert_trino_error(&doc, "NOT_SUPPORTED", "USER_ERROR");

    let (status, _, doc) = call(
        &server,
        Method::PUT,
        &format!("{statement}/executing/x/y/0"),
        Some("x"),
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_trino_error(&doc, "NOT_SUPPORTED", "USER_ERROR");

    for method in [Method::GET, Method::DELETE] {
        for kind in ["queued", "executing"] {
            let url = format!("{statement}/{kind}/nosuchquery/slug/0");
            let (status, _, doc) = call(&server, method.clone(), &url, None, &[]).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{method} {url}");
            assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");
        }
    }

    let (status, _, doc) = call(
        &server,
        Method::GET,
        &format!("{}/v2/nothing", server.base),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");

    let (status, _, doc) = call(
        &server,
        Method::POST,
        &statement,
        Some("select 1"),
        &[("X-Trino-Session", "novalue")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");

    // A path the router matches but cannot read (bad percent-encoding).
    for url in [
        format!("{statement}/queued/%FF%FE/slug/1"),
        format!("{}/v1/query/%C3%28", server.base),
    ] {
        let (status, _, doc) = call(&server, Method::GET, &url, None, &[]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{url}");
        assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");
    }

    let (status, _, doc) = call(
        &server,
        Method::GET,
        &format!("{}/v1/info", server.base),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["coordinator"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_slug_and_bad_tokens() {
    let server = start(ApiAuth::None).await;
    let out = run_query(&server, "select 42 as x", &[]).await;
    let first_next = out.docs[0]["nextUri"].as_str().unwrap().to_string();
    // .../queued/{id}/{slug}/1
    let parts: Vec<&str> = first_next.rsplitn(4, '/').collect();
    let (slug, id) = (parts[1], parts[2]);
    assert_eq!(id, out.id);
    let executing = format!("{}/v1/statement/executing/{id}", server.base);

    let (status, _, doc) = call(
        &server,
        Method::GET,
        &format!("{executing}/wrongslug/0"),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_trino_error(&doc, "NOT_FOUND", "USER_ERROR");

    for token in ["garbage", "-1", "1.5", "99999999999999999999999"] {
        let (status, _, doc) = call(
            &server,
            Method::GET,
            &format!("{executing}/{slug}/{token}"),
            None,
            &[],
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "token {token}");
        assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");
    }
    // A number that names no page of the finished query.
    let (status, _, doc) = call(
        &server,
        Method::GET,
        &format!("{executing}/{slug}/7"),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_trino_error(&doc, "GENERIC_USER_ERROR", "USER_ERROR");
    // The right page is still there (within the grace after draining) and idempotent.
    let (status, _, doc) = call(
        &server,
        Method::GET,
        &format!("{executing}/{slug}/0"),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(doc["data"], serde_json::json!([[42]]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_sql_fails_the_query_as_a_user_error() {
    let server = start(ApiAuth::None).await;
    let cases = [
        ("selec 1", "SYNTAX_ERROR"),
        ("select nope from lineitem", "COLUMN_NOT_FOUND"),
        ("select * from no_such_table", "TABLE_NOT_FOUND"),
        ("select 1; select 2", "GENERIC_USER_ERROR"),
    ];
    for (sql, name) in cases {
        let out = run_query(&server, sql, &[]).await;
        let last = out.last();
        assert_trino_error(last, name, "USER_ERROR");
        assert!(out.columns.is_none(), "{sql}");
    }
    let out = run_query(&server, "selec 1", &[]).await;
    let e = &out.last()["error"];
    assert_eq!(e["errorCode"], 1);
    assert_eq!(e["errorLocation"]["lineNumber"], 1, "{e}");
    let out = run_query(&server, "select * from no_such_table", &[]).await;
    assert!(
        out.last()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_table")
    );
}
