//! The one throttle-retry layer against Lambda's real wire answers: a local
//! HTTP server speaks the Invoke API (429 TooManyRequestsException as Lambda
//! sends it, then 202), the real `aws-sdk-lambda` client talks to it through
//! [`LambdaInvoker`], and the coordinator's [`RetryingInvoker`] retries it
//! as `squall.task.invoke_retries` says, counting every throttle.

// Test code: a failed expectation panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_config::{BehaviorVersion, Region};
use aws_credential_types::Credentials;
use axum::Router;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::post;
use bytes::Bytes;
use squall_aws::AwsEnv;
use squall_aws::lambda::LambdaInvoker;
use squall_core::error::SquallError;
use squall_core::recovery::{Backoff, RetryingInvoker};
use squall_core::seams::Invoker;
use squall_planner::backend::local::LocalQueue;

/// A Lambda Invoke endpoint that throttles the first `throttles` requests.
async fn fake_lambda(throttles: usize) -> (String, Arc<AtomicUsize>) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let app = Router::new().route(
        "/2015-03-31/functions/{name}/invocations",
        post(move || {
            let counter = Arc::clone(&counter);
            async move {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                if n < throttles {
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        [
                            ("x-amzn-errortype", "TooManyRequestsException"),
                            ("content-type", "application/json"),
                        ],
                        r#"{"Reason":"ReservedFunctionConcurrentInvocationLimitExceeded","Type":"User","message":"Rate Exceeded."}"#,
                    )
                        .into_response()
                } else {
                    (StatusCode::ACCEPTED, "").into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn invoker(endpoint: &str, retries: u32) -> RetryingInvoker {
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(Credentials::new(
                "test", "test", None, None, "test",
            )),
        )
        .build();
    let env = AwsEnv {
        sdk,
        s3_endpoint: None,
    };
    let lambda = LambdaInvoker::new(&env, Arc::new(LocalQueue::new()), "worker", 1 << 20, None)
        .with_answer_wait(Duration::from_secs(10));
    RetryingInvoker::new(
        Arc::new(lambda),
        retries,
        Backoff::new(Duration::from_millis(1), Duration::from_millis(5)),
    )
}

fn payload() -> Bytes {
    Bytes::from_static(
        br#"{"protocol":1,"query_id":"q","stage":3,"task":7,"attempt":0,"reply_to":"r"}"#,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttles_are_retried_by_the_one_layer() {
    let (endpoint, seen) = fake_lambda(2).await;
    let invoker = invoker(&endpoint, 3);
    invoker.invoke(payload()).await.unwrap();
    assert_eq!(invoker.throttles(), 2);
    // Two throttled requests and the accepted one: the SDK sent each once.
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spent_throttle_retries_fail_naming_stage_and_task() {
    let (endpoint, seen) = fake_lambda(usize::MAX).await;
    let invoker = invoker(&endpoint, 2);
    let err = invoker.invoke(payload()).await.unwrap_err();
    match &err {
        SquallError::Invoke {
            stage,
            task,
            message,
        } => {
            assert_eq!((*stage, *task), (3, 7));
            assert!(message.contains("squall.task.invoke_retries"), "{message}");
            assert!(message.contains("TooManyRequests"), "{message}");
        }
        other => panic!("expected an invoke error, got {other:?}"),
    }
    assert_eq!(invoker.throttles(), 3);
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}
