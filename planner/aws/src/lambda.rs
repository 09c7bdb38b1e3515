//! Task invocation through Lambda: one asynchronous (`Event`) invocation per
//! task, sent from a detached tokio task so launching a stage never waits on
//! the Invoke API (`cargo lambda watch` answers `Event` invocations only when
//! the function returns). A throttled invocation (429 TooManyRequests) is
//! sent again after an exponential backoff with jitter, up to 6 times; an
//! invocation that still fails (throttled, function missing) becomes a
//! failure report on the task's completion queue, so the coordinator retries
//! it like any failed attempt. A payload over `squall.inline_payload_bytes` (Lambda's async limit
//! is 1 MB; the default keeps well below it) is stored in S3 under
//! `squall.payload_location` and the invocation carries only its location.
//!
//! Nothing reaches into a running invocation, so stopping tasks goes through
//! S3: with a state store, every task carries the location of its query's
//! stop marker, and [`Invoker::cancel`] (called whenever a query ends)
//! creates it; running workers see it within `squall.task.stop_poll_ms`.
//!
//! [`FunctionStarter`] starts one function asynchronously (the API starting
//! a coordinator) and tells its caller whether the invocation was accepted.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::error::{Result, SquallError};
use squall_core::recovery::Backoff;
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::task::{
    ObjectLocation, PROTOCOL_VERSION, TaskFailure, TaskIdentity, TaskMetrics, TaskOutcome,
    TaskReport,
};

use crate::env::AwsEnv;
use crate::state::StateStore;

/// Retries of an invocation Lambda throttled (429 TooManyRequests).
const THROTTLE_RETRIES: u32 = 6;

/// What a worker invocation carries when the task itself is in S3.
#[derive(Debug, Serialize, Deserialize)]
pub struct PayloadPointer {
    /// `s3://bucket/key` of the serialized task.
    pub payload_location: String,
}

pub struct LambdaInvoker {
    client: aws_sdk_lambda::Client,
    /// Where a failed invocation is reported (the task's reply queue).
    queue: Arc<dyn CompletionQueue>,
    function: String,
    inline_limit: usize,
    /// (store, `s3://bucket`, key prefix) for large payloads.
    payloads: Option<(Arc<dyn ObjectStore>, String, String)>,
    /// Where stop markers go; without one, running tasks cannot be stopped.
    state: Option<StateStore>,
}

impl LambdaInvoker {
    pub fn new(
        env: &AwsEnv,
        queue: Arc<dyn CompletionQueue>,
        function: &str,
        inline_limit: usize,
        payloads: Option<(Arc<dyn ObjectStore>, String, String)>,
    ) -> Self {
        Self {
            client: aws_sdk_lambda::Client::new(&env.sdk),
            queue,
            function: function.to_string(),
            inline_limit,
            payloads,
            state: None,
        }
    }

    /// Stop the tasks of ended queries through stop markers in `state`.
    pub fn with_stop_markers(mut self, state: StateStore) -> Self {
        self.state = Some(state);
        self
    }
}

#[async_trait]
impl Invoker for LambdaInvoker {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        let id = TaskIdentity::salvage(&payload).unwrap_or_default();
        let body = if payload.len() > self.inline_limit {
            let (store, url, prefix) = self.payloads.as_ref().ok_or_else(|| SquallError::Invoke {
                stage: id.stage,
                task: id.task,
                message: format!(
                    "task payload is {} bytes, over the {} byte inline limit, and squall.payload_location is not set",
                    payload.len(),
                    self.inline_limit
                ),
            })?;
            let key = format!(
                "{}/{}/s{}/t{}/a{}",
                prefix.trim_matches('/'),
                id.query_id,
                id.stage,
                id.task,
                id.attempt
            );
            let key = key.trim_start_matches('/').to_string();
            store
                .put(&Path::from(key.as_str()), PutPayload::from(payload))
                .await?;
            let pointer = PayloadPointer {
                payload_location: format!("{url}/{key}"),
            };
            Bytes::from(
                serde_json::to_vec(&pointer)
                    .map_err(|e| SquallError::BadTaskPayload(e.to_string()))?,
            )
        } else {
            payload
        };
        let request = self
            .client
            .invoke()
            .function_name(&self.function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(body.to_vec()));
        let queue = Arc::clone(&self.queue);
        let function = self.function.clone();
        tokio::spawn(async move {
            // Lambda answers a burst beyond the account's concurrency with
            // 429 TooManyRequests: wait and ask again (bounded) rather than
            // spend one of the task's attempts on it.
            let backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
            let mut result = request.clone().send().await;
            for retry in 0..THROTTLE_RETRIES {
                match &result {
                    Err(e) if crate::error_chain(e).contains("TooManyRequests") => {
                        tracing::info!(query_id = %id.query_id, stage = id.stage, task = id.task, retry, "invocation throttled; retrying");
                        tokio::time::sleep(backoff.delay(retry)).await;
                        result = request.clone().send().await;
                    }
                    _ => break,
                }
            }
            if let Err(e) = result {
                let message = format!("invoking Lambda {function}: {}", crate::error_chain(&e));
                tracing::warn!(query_id = %id.query_id, stage = id.stage, task = id.task, %message, "invocation failed");
                report_failure(&*queue, &id, message).await;
            }
        });
        Ok(())
    }

    async fn cancel(&self, query_id: &str) -> Result<()> {
        if let Some(state) = &self.state {
            // The error names the marker's key.
            state.write_stop(query_id).await?;
        }
        // The query has ended: its spilled task payloads are of no more use
        // (an attempt still queued in Lambda finds its payload gone and
        // reports a failure nobody waits for).
        if let Some((store, _, prefix)) = &self.payloads {
            let folder = format!("{}/{query_id}/", prefix.trim_matches('/'));
            let folder = Path::from(folder.trim_start_matches('/'));
            let locations = store.list(Some(&folder)).map_ok(|m| m.location).boxed();
            let deleted: Vec<_> = store.delete_stream(locations).collect().await;
            for r in deleted {
                if let Err(e) = r {
                    tracing::warn!(%e, query_id, "deleting a spilled task payload failed");
                }
            }
        }
        Ok(())
    }

    fn stop_marker(&self, query_id: &str) -> Option<ObjectLocation> {
        self.state.as_ref().map(|s| s.stop_marker(query_id))
    }
}

/// Starts one Lambda function with an asynchronous (`Event`) invocation.
pub struct FunctionStarter {
    client: aws_sdk_lambda::Client,
    function: String,
    wait: Duration,
}

/// What became of a start.
#[derive(Debug)]
pub enum Start {
    /// Lambda accepted the invocation (the function runs on its own).
    Accepted,
    /// No answer within the wait: the invocation is still in flight (under
    /// `cargo lambda watch`, which answers event invocations only when the
    /// function returns). The handle resolves with its outcome.
    Pending(tokio::task::JoinHandle<std::result::Result<(), String>>),
}

impl FunctionStarter {
    /// Starts `function`, waiting up to `wait` for Lambda to accept each invocation.
    pub fn new(env: &AwsEnv, function: &str, wait: Duration) -> Self {
        Self {
            client: aws_sdk_lambda::Client::new(&env.sdk),
            function: function.to_string(),
            wait,
        }
    }

    pub fn function(&self) -> &str {
        &self.function
    }

    /// Invokes the function with `payload`. An error names the function and
    /// carries the SDK's whole error chain (endpoint, credentials, throttling).
    pub async fn start(&self, payload: Vec<u8>) -> std::result::Result<Start, String> {
        let request = self
            .client
            .invoke()
            .function_name(&self.function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(payload));
        let function = self.function.clone();
        // Sent from a task of its own, so that a slow answer does not hold the
        // caller and the request still completes after `wait`.
        let mut sent = tokio::spawn(async move {
            match request.send().await {
                Ok(out) => match out.function_error() {
                    Some(kind) => Err(format!("Lambda function {function} failed: {kind}")),
                    None => Ok(()),
                },
                Err(e) => Err(format!(
                    "invoking Lambda function {function}: {}",
                    crate::error_chain(&e)
                )),
            }
        });
        match tokio::time::timeout(self.wait, &mut sent).await {
            Ok(Ok(Ok(()))) => Ok(Start::Accepted),
            Ok(Ok(Err(message))) => Err(message),
            Ok(Err(join)) => Err(format!(
                "invoking Lambda function {}: {join}",
                self.function
            )),
            Err(_) => Ok(Start::Pending(sent)),
        }
    }
}

/// Tell the coordinator an attempt never started.
async fn report_failure(queue: &dyn CompletionQueue, id: &TaskIdentity, message: String) {
    let report = TaskReport {
        protocol: PROTOCOL_VERSION,
        query_id: id.query_id.clone(),
        stage: id.stage,
        task: id.task,
        attempt: id.attempt,
        outcome: TaskOutcome::Failed {
            error: TaskFailure {
                kind: "invoke".into(),
                message,
                retryable: true,
            },
        },
        metrics: TaskMetrics::default(),
    };
    match report.encode() {
        Ok(body) => {
            if let Err(e) = queue.send(&id.reply_to, body).await {
                tracing::error!(%e, "reporting a failed invocation failed");
            }
        }
        Err(e) => tracing::error!(%e, "encoding a failure report failed"),
    }
}
