//! Token authentication of the api function, as a stack deployed with
//! `ApiAuth=Token` runs it: `up.sh` (`SQUALL_API_AUTH=token`) keeps the token
//! in moto's Secrets Manager and gives the function only the secret's name
//! (`SQUALL_API_TOKEN_SECRET`); the function reads the value once at
//! start-up. Here: a missing, wrong or malformed credential is refused with
//! a Trino-shaped 401 (on submit and on a query's `nextUri`), the right one
//! is accepted as a bearer token and as a basic-auth password, and the
//! token appears neither in the functions' environment nor in their log.
//! A secret that cannot be read stops start-up with an error naming it
//! (through `squall serve --backend aws --token-secret`, which reads the
//! secret with the same code as the function).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::Stack;
use crate::api::Client;
use crate::api_common::assert_trino_error;

/// The checks against the api function at its function URL.
pub async fn token(client: &Client, stack: &Stack) {
    let token = stack.api_token();
    let statement = format!("{}/v1/statement", client.base);
    let basic = |user_password: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_password)
        )
    };
    let refused = [
        None,
        Some("Bearer wrong-token".to_string()),
        Some(format!("Bearer {token}x")),
        Some(format!("Token {token}")),
        Some(basic("alice:wrong-token")),
        Some(basic(&format!("{token}:"))),
    ];
    for authorization in &refused {
        let anyone = client.with_authorization(authorization.as_deref());
        let (status, headers, doc) = anyone
            .call(Method::POST, &statement, Some("select 1"), &[])
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{authorization:?}: {doc}");
        // Both challenges, in the one header value that survives lambda_http.
        let challenge = headers
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        assert!(
            challenge.starts_with("Bearer realm=") && challenge.contains("Basic realm="),
            "{challenge:?}"
        );
        assert_trino_error(&doc, "PERMISSION_DENIED", "USER_ERROR");
    }

    // A query's nextUri is no way in either.
    let first = client.submit("select 1", &[]).await;
    let next = first["nextUri"].as_str().expect("nextUri").to_string();
    let (status, _, doc) = client
        .with_authorization(None)
        .call(Method::GET, &next, None, &[])
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{doc}");
    assert_trino_error(&doc, "PERMISSION_DENIED", "USER_ERROR");

    // The right token, as a bearer token and as the basic-auth password
    // (what the Trino CLI and the trino Python client send with a password).
    let bearer = client.with_authorization(Some(&format!("Bearer {token}")));
    let done = bearer.follow(first, &[]).await;
    assert_eq!(done.rows, vec![json!([1])], "{}", done.last);
    let basic = client.with_authorization(Some(&basic(&format!("trino-user:{token}"))));
    let out = basic
        .run("select n_name from nation where n_nationkey = 7", &[])
        .await;
    assert_eq!(out.rows, vec![json!(["GERMANY"])], "{}", out.last);

    // Only the secret's name is in the functions' environment, and the
    // value never reaches their log.
    let functions_env = std::fs::read_to_string(stack.functions_env()).expect("functions.env");
    assert!(
        functions_env.contains("SQUALL_API_TOKEN_SECRET=") && !functions_env.contains(token),
        "{functions_env}"
    );
    let log = std::fs::read_to_string(stack.lambda_log()).unwrap_or_default();
    assert!(
        log.contains("API token read from Secrets Manager"),
        "the api function did not log reading its token"
    );
    assert!(
        !log.contains(token),
        "the token appears in the functions' log"
    );
}

/// A token secret that cannot be read stops start-up, naming the secret.
pub fn unreadable_secret(stack: &Stack) {
    let missing = "squall-local/no-such-secret";
    let mut child = Command::new(env!("CARGO_BIN_EXE_squall"))
        .args(["serve", "--backend", "aws", "--port", "0"])
        .args(["--token-secret", missing])
        .envs(stack.env.iter().cloned())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting squall serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for squall serve") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("squall serve started with an unreadable token secret");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        use std::io::Read as _;
        let _ = err.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("secret {missing} could not be read"))
            && stderr.contains("ResourceNotFound"),
        "{stderr}"
    );
}
