//! `nextUri` and `infoUri` follow the request's Host and forwarded headers.

use reqwest::{Method, StatusCode};
use squall_server::{ApiAuth, ApiOptions, EmbeddedOptions};

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_shape_the_uris() {
    let server = start(ApiAuth::None).await;
    let statement = format!("{}/v1/statement", server.base);

    let (_, _, doc) = call(&server, Method::POST, &statement, Some("select 1"), &[]).await;
    assert!(
        doc["nextUri"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/v1/statement/queued/", server.base))
    );
    assert!(
        doc["infoUri"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/v1/query/", server.base))
    );

    let forwarded = [
        ("X-Forwarded-Proto", "https"),
        (
            "X-Forwarded-Host",
            "abc123.execute-api.eu-west-1.amazonaws.com",
        ),
        ("X-Forwarded-Prefix", "/prod"),
    ];
    let public = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod";
    let (status, _, mut doc) = call(
        &server,
        Method::POST,
        &statement,
        Some("select 7 as x"),
        &forwarded,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let mut rows = Vec::new();
    // Follow the public URIs by mapping them back onto the local server.
    while let Some(next) = doc.get("nextUri").and_then(|v| v.as_str()) {
        assert!(
            next.starts_with(&format!("{public}/v1/statement/")),
            "{next}"
        );
        assert!(
            doc["infoUri"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{public}/v1/query/"))
        );
        let local = next.replacen(public, &server.base, 1);
        let (status, _, d) = call(&server, Method::GET, &local, None, &forwarded).await;
        assert_eq!(status, StatusCode::OK, "{d}");
        if let Some(data) = d.get("data") {
            rows.extend(data.as_array().unwrap().iter().cloned());
        }
        doc = d;
    }
    assert_eq!(rows, vec![serde_json::json!([7])]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_prefix_applies_without_forwarded_prefix() {
    let mut api = ApiOptions::new(ApiAuth::None);
    api.path_prefix = "/stage".into();
    let server = start_with(EmbeddedOptions::default(), api, &[]).await;
    let (_, _, doc) = call(
        &server,
        Method::POST,
        &format!("{}/v1/statement", server.base),
        Some("select 1"),
        &[("Host", "gateway.example")],
    )
    .await;
    assert!(
        doc["nextUri"]
            .as_str()
            .unwrap()
            .starts_with("http://gateway.example/stage/v1/statement/queued/"),
        "{doc}"
    );
}
