//! Task invocation through Lambda: one asynchronous (`Event`) invocation per
//! task. [`Invoker::invoke`] waits up to `squall.task.invoke_answer_ms` for
//! Lambda's answer: accepted is `Ok`; a throttle (429 TooManyRequests) is
//! [`SquallError::Throttled`], which the coordinator's one throttle-retry
//! layer (`squall_core::recovery::RetryingInvoker`, driven by
//! `squall.task.invoke_retries`) waits out and sends again, without spending
//! one of the task's attempts (so does a 5xx of the Invoke API or a dropped
//! connection; the SDK itself does not retry); any other refusal (a missing
//! function, a bad request) is [`SquallError::Invoke`] and fails the query.
//! An answer that takes longer (`cargo lambda watch` answers `Event`
//! invocations only when the function returns) counts as accepted: the
//! request completes in the background, and if it fails after all the
//! failure becomes a report on the task's completion queue, so the
//! coordinator retries it like any failed attempt. A payload over `squall.inline_payload_bytes` (Lambda's async limit
//! is 1 MB; the default keeps well below it) is stored in S3 under
//! `squall.payload_location` and the invocation carries only its location.
//!
//! Nothing reaches into a running invocation, so stopping tasks goes through
//! S3: with a state store, every task carries the location of its query's
//! stop marker, and [`Invoker::cancel`] (called whenever a query ends)
//! creates it; running workers see it within `squall.task.stop_poll_ms`.
//!
//! What the invoker stores for a query (spilled payloads, their cleanup,
//! stop markers) is counted per query ([`Invoker::take_requests`]); the
//! Invoke requests themselves are counted by the coordinator's retrying
//! wrapper (`squall_core::recovery::RetryingInvoker`).
//!
//! [`FunctionStarter`] starts one function asynchronously (the API starting
//! a coordinator) and tells its caller whether the invocation was accepted.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;

use async_trait::async_trait;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::error::{Result, SquallError};
use squall_core::requests::{CountingStore, Request, RequestCounts, RequestTally};
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::task::{FailureKind, ObjectLocation, TaskIdentity, TaskReport};

use crate::env::AwsEnv;
use crate::state::ObjectQueryStore;

/// What a worker invocation carries when the task itself is in S3.
#[derive(Debug, Serialize, Deserialize)]
pub struct PayloadPointer {
    /// `s3://bucket/key` of the serialized task.
    pub payload_location: String,
    /// The task's bytes within that object, `[offset, length]`, when it
    /// shares the object with the other tasks of a launch batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[u64; 2]>,
}

/// What a launcher invocation (tree invocation) carries: the worker
/// function invokes each task of the batch itself.
#[derive(Debug, Serialize, Deserialize)]
pub struct LaunchBatch {
    pub launch: BatchSpec,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BatchSpec {
    /// The function to invoke with each task.
    pub function: String,
    /// `s3://bucket/key` of the batch: the tasks' payloads back to back.
    pub payloads: String,
    /// Each task's `[offset, length]` in it.
    pub tasks: Vec<[u64; 2]>,
    /// A task of at most this many bytes goes inline; a larger one as a
    /// pointer to its range of the batch object.
    pub inline_limit: usize,
    /// Invocations in flight at once.
    pub concurrency: usize,
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
    state: Option<ObjectQueryStore>,
    /// How long an invocation waits for Lambda's answer.
    answer_wait: Duration,
    /// Invocations still waiting for Lambda's answer (answered or not, the
    /// launch goes on after `answer_wait`; a permit is held until the answer).
    unanswered: Arc<Semaphore>,
    /// S3 requests made for each query (by query id).
    requests: RequestTally,
    /// Invocations a launcher (tree invocation) keeps in flight at once.
    launcher_concurrency: usize,
}

impl LambdaInvoker {
    pub fn new(
        env: &AwsEnv,
        queue: Arc<dyn CompletionQueue>,
        function: &str,
        inline_limit: usize,
        payloads: Option<(Arc<dyn ObjectStore>, String, String)>,
    ) -> Self {
        // The SDK does not retry invocations itself: a throttle goes up to
        // the coordinator's one retry layer, which counts and bounds it.
        let config = aws_sdk_lambda::config::Builder::from(&env.sdk)
            .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
            .build();
        Self {
            client: aws_sdk_lambda::Client::from_conf(config),
            queue,
            function: function.to_string(),
            inline_limit,
            payloads,
            state: None,
            answer_wait: Duration::from_millis(250),
            unanswered: Arc::new(Semaphore::new(1024)),
            requests: RequestTally::default(),
            launcher_concurrency: 64,
        }
    }

    /// At most `limit` invocations waiting for Lambda's answer at once
    /// (`squall.task.max_unanswered_invokes`); a launch past it waits.
    pub fn with_max_unanswered(mut self, limit: usize) -> Self {
        self.unanswered = Arc::new(Semaphore::new(limit.max(1)));
        self
    }

    /// Wait up to `wait` for Lambda's answer to each invocation
    /// (`squall.task.invoke_answer_ms`).
    pub fn with_answer_wait(mut self, wait: Duration) -> Self {
        self.answer_wait = wait;
        self
    }

    /// Stop the tasks of ended queries through stop markers in `state`.
    pub fn with_stop_markers(mut self, state: ObjectQueryStore) -> Self {
        self.state = Some(state);
        self
    }

    /// Where failed invocations are reported.
    pub(crate) fn queue(&self) -> &dyn CompletionQueue {
        &*self.queue
    }

    /// Invocations a launcher keeps in flight at once.
    pub fn with_launcher_concurrency(mut self, n: usize) -> Self {
        self.launcher_concurrency = n.max(1);
        self
    }

    /// Sends one event invocation of the worker function and waits up to
    /// the answer wait for Lambda's answer (see the module's docs).
    pub(crate) async fn send_event(&self, id: TaskIdentity, body: Bytes) -> Result<()> {
        let request = self
            .client
            .invoke()
            .function_name(&self.function)
            .invocation_type(InvocationType::Event)
            .payload(Blob::new(body.to_vec()));
        // Sent from a task of its own, so a slow answer does not hold the
        // launch and the request still completes after the wait; its permit
        // is given back with the answer.
        let permit = Arc::clone(&self.unanswered)
            .acquire_owned()
            .await
            .map_err(|e| SquallError::Invoke {
                stage: id.stage,
                task: id.task,
                message: format!("invoking Lambda {}: {e}", self.function),
            })?;
        let mut sent = tokio::spawn(async move {
            let answer = request.send().await;
            drop(permit);
            answer
        });
        let refused = |message: String, throttled: bool| {
            let message = format!("invoking Lambda {}: {message}", self.function);
            if throttled {
                SquallError::Throttled {
                    stage: id.stage,
                    task: id.task,
                    message,
                }
            } else {
                SquallError::Invoke {
                    stage: id.stage,
                    task: id.task,
                    message,
                }
            }
        };
        match tokio::time::timeout(self.answer_wait, &mut sent).await {
            Ok(Ok(Ok(_))) => Ok(()),
            Ok(Ok(Err(e))) => Err(refused(crate::error_chain(&e), is_throttle(&e))),
            Ok(Err(join)) => Err(refused(join.to_string(), false)),
            Err(_) => {
                // Still in flight: it counts as accepted; a late refusal is
                // reported on the task's queue.
                let queue = Arc::clone(&self.queue);
                let function = self.function.clone();
                tokio::spawn(async move {
                    let message = match sent.await {
                        Ok(Ok(_)) => return,
                        Ok(Err(e)) => crate::error_chain(&e),
                        Err(join) => join.to_string(),
                    };
                    let message = format!("invoking Lambda {function}: {message}");
                    tracing::warn!(query_id = %id.query_id, stage = id.stage, task = id.task, %message, "invocation failed");
                    report_failure(&*queue, &id, message).await;
                });
                Ok(())
            }
        }
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
            let key = payload_key(prefix, &id, &format!("t{}/a{}", id.task, id.attempt));
            CountingStore::wrap(Arc::clone(store), &self.requests.counter(&id.query_id))
                .put(&Path::from(key.as_str()), PutPayload::from(payload))
                .await?;
            let pointer = PayloadPointer {
                payload_location: format!("{url}/{key}"),
                range: None,
            };
            Bytes::from(
                serde_json::to_vec(&pointer)
                    .map_err(|e| SquallError::BadTaskPayload(e.to_string()))?,
            )
        } else {
            payload
        };
        self.send_event(id, body).await
    }

    fn launches_batches(&self) -> bool {
        self.payloads.is_some()
    }

    /// One launcher invocation of the worker function for the whole batch:
    /// the payloads go into one object (one PUT), and the launcher invokes
    /// each task with its payload inline or as a pointer to its range.
    async fn invoke_batch(&self, payloads: Vec<Bytes>) -> Result<()> {
        let first = payloads.first().cloned().unwrap_or_default();
        let id = TaskIdentity::salvage(&first).unwrap_or_default();
        let Some((store, url, prefix)) = self.payloads.as_ref() else {
            for payload in payloads {
                self.invoke(payload).await?;
            }
            return Ok(());
        };
        let mut tasks = Vec::with_capacity(payloads.len());
        let mut offset = 0u64;
        for p in &payloads {
            tasks.push([offset, p.len() as u64]);
            offset += p.len() as u64;
        }
        let key = payload_key(prefix, &id, &format!("batch-t{}-a{}", id.task, id.attempt));
        let counter = self.requests.counter(&id.query_id);
        let n = payloads.len() as u64;
        CountingStore::wrap(Arc::clone(store), &counter)
            .put(&Path::from(key.as_str()), PutPayload::from_iter(payloads))
            .await?;
        let event = LaunchBatch {
            launch: BatchSpec {
                function: self.function.clone(),
                payloads: format!("{url}/{key}"),
                tasks,
                inline_limit: self.inline_limit,
                concurrency: self.launcher_concurrency,
            },
        };
        let body = Bytes::from(
            serde_json::to_vec(&event).map_err(|e| SquallError::BadTaskPayload(e.to_string()))?,
        );
        self.send_event(id, body).await?;
        // What the launcher does for the batch, counted here as it has no
        // report of its own: the batch's GET and one Invoke per task (its
        // throttle retries are not seen).
        counter.count(Request::Get, 1);
        counter.count(Request::Invoke, n);
        Ok(())
    }

    async fn cancel(&self, query_id: &str) -> Result<()> {
        let requests = self.requests.counter(query_id);
        // Payloads were spilled if this invoker stored anything for the
        // query before its end (attempt stop markers count too: then a
        // LIST finds nothing, harmlessly).
        let spilled = requests.snapshot().put > 0;
        if let Some(state) = &self.state {
            // The error names the marker's key.
            state.counting(&requests).write_stop(query_id).await?;
        }
        // The query has ended: its spilled task payloads are of no more use
        // (an attempt still queued in Lambda finds its payload gone and
        // reports a failure nobody waits for).
        if let Some((store, _, prefix)) = self.payloads.as_ref().filter(|_| spilled) {
            let folder = format!("{}/{query_id}/", prefix.trim_matches('/'));
            let folder = Path::from(folder.trim_start_matches('/'));
            let store = CountingStore::wrap(Arc::clone(store), &requests);
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

    /// A speculative loser stops at its next look at its own marker, not
    /// when the whole query ends.
    async fn stop_attempt(
        &self,
        query_id: &str,
        stage: u32,
        task: u32,
        attempt: u32,
    ) -> Result<()> {
        if let Some(state) = &self.state {
            state
                .counting(&self.requests.counter(query_id))
                .write_attempt_stop(query_id, stage, task, attempt)
                .await?;
        }
        Ok(())
    }

    fn stop_marker(&self, query_id: &str) -> Option<ObjectLocation> {
        self.state.as_ref().map(|s| s.stop_marker(query_id))
    }

    fn take_requests(&self, query_id: &str) -> RequestCounts {
        self.requests.take(query_id)
    }
}

/// The key of a payload object of `id`'s query and stage under `prefix`:
/// `{prefix}/{query}/s{stage}/{leaf}` (the folder a query's end deletes).
fn payload_key(prefix: &str, id: &TaskIdentity, leaf: &str) -> String {
    let key = format!(
        "{}/{}/s{}/{leaf}",
        prefix.trim_matches('/'),
        id.query_id,
        id.stage
    );
    key.trim_start_matches('/').to_string()
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

/// Whether an invocation was refused for now rather than for good: Lambda's
/// 429 TooManyRequests as the SDK surfaces it (the modelled exception, or
/// the bare status), a 5xx of the Invoke API, or a request that never got
/// an answer (a dropped connection, a timeout). Waiting and sending again
/// can succeed; a missing function or a bad request cannot.
pub fn is_throttle(
    e: &aws_sdk_lambda::error::SdkError<
        aws_sdk_lambda::operation::invoke::InvokeError,
        aws_sdk_lambda::config::http::HttpResponse,
    >,
) -> bool {
    use aws_sdk_lambda::error::SdkError;
    if e.as_service_error()
        .is_some_and(|s| s.is_too_many_requests_exception())
    {
        return true;
    }
    match e {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) => true,
        _ => e
            .raw_response()
            .map(|r| r.status().as_u16())
            .is_some_and(|status| status == 429 || status >= 500),
    }
}

/// Tell the coordinator an attempt never started.
pub(crate) async fn report_failure(
    queue: &dyn CompletionQueue,
    id: &TaskIdentity,
    message: String,
) {
    let mut report = TaskReport::failed(id, FailureKind::Invoke, message, true);
    // Its own SendMessage, as a worker counts its report's.
    report.metrics.requests.sqs_send = 1;
    match report.encode() {
        Ok(body) => {
            if let Err(e) = queue.send(&id.reply_to, body).await {
                tracing::error!(%e, "reporting a failed invocation failed");
            }
        }
        Err(e) => tracing::error!(%e, "encoding a failure report failed"),
    }
}
