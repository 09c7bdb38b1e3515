//! Authentication: 401 without credentials, bearer and basic get in; an
//! open endpoint is never served beyond loopback; where the api function
//! takes its token from.

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use squall_server::ApiAuth;
use squall_server::aws::api_auth;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_required_when_configured() {
    let server = start(ApiAuth::Token("s3cret-token".into())).await;
    let statement = format!("{}/v1/statement", server.base);

    for headers in [
        vec![],
        vec![("Authorization", "Bearer wrong")],
        vec![("Authorization", "Token s3cret-token")],
    ] {
        let (status, h, doc) = call(
            &server,
            Method::POST,
            &statement,
            Some("select 1"),
            &headers,
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{headers:?}");
        assert!(
            h.get_all("www-authenticate")
                .iter()
                .any(|v| v.to_str().unwrap().starts_with("Bearer")
                    && v.to_str().unwrap().contains("Basic realm="))
        );
        assert_trino_error(&doc, "PERMISSION_DENIED", "USER_ERROR");
    }
    // Unauthenticated requests learn nothing about queries either.
    let (status, _, _) = call(
        &server,
        Method::GET,
        &format!("{statement}/executing/x/y/0"),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Nor kill them (Trino's DELETE /v1/query/{id}).
    let (status, _, _) = call(
        &server,
        Method::DELETE,
        &format!("{}/v1/query/x", server.base),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let bearer = [("Authorization", "Bearer s3cret-token")];
    let out = run_query(&server, "select 1 as one", &bearer).await;
    assert_eq!(out.rows, vec![serde_json::json!([1])]);

    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("alice:s3cret-token")
    );
    let out = run_query(
        &server,
        "select 2 as two",
        &[("Authorization", basic.as_str())],
    )
    .await;
    assert_eq!(out.rows, vec![serde_json::json!([2])]);

    // Server info stays open for health checks.
    let (status, _, _) = call(
        &server,
        Method::GET,
        &format!("{}/v1/info", server.base),
        None,
        &[],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[test]
fn serve_refuses_an_open_endpoint_beyond_loopback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_squall"))
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("SQUALL_API_TOKEN")
        .output()
        .expect("run squall");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("refusing to serve on 0.0.0.0") && stderr.contains("--token"),
        "{stderr}"
    );
}

/// The api function's token sources (`squall_server::aws::api_auth`): none
/// means no check, a token is used as it is, and a token beside a token
/// secret is refused before anything is read. (Reading a secret is checked
/// against moto's Secrets Manager in the emulated-stack test.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_function_token_sources() {
    let env = squall_aws::AwsEnv::load().await;
    assert_eq!(api_auth(&env, None, None).await.unwrap(), ApiAuth::None);
    assert_eq!(
        api_auth(&env, None, Some("t0ken".into())).await.unwrap(),
        ApiAuth::Token("t0ken".into())
    );
    let secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:squall-api-token";
    let err = api_auth(&env, Some(secret), Some("t0ken".into()))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(secret) && err.contains("set one"), "{err}");
    assert!(!err.contains("t0ken"), "{err}");
}
