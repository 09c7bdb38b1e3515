//! Task invocation through Lambda: one asynchronous (`Event`) invocation per
//! task, sent from a detached tokio task so launching a stage never waits on
//! the Invoke API (`cargo lambda watch` answers `Event` invocations only when
//! the function returns). An invocation that fails (throttled, function
//! missing) becomes a failure report on the task's completion queue, so the
//! coordinator retries it like any failed attempt. A payload over `squall.inline_payload_bytes` (Lambda's async limit
//! is 1 MB; the default keeps well below it) is stored in S3 under
//! `squall.payload_location` and the invocation carries only its location.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::InvocationType;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::error::{Result, SquallError};
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::task::{
    PROTOCOL_VERSION, TaskFailure, TaskIdentity, TaskMetrics, TaskOutcome, TaskReport,
};

use crate::env::AwsEnv;

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
            if let Err(e) = request.send().await {
                let message = format!("invoking Lambda {function}: {}", crate::error_chain(&e));
                tracing::warn!(query_id = %id.query_id, stage = id.stage, task = id.task, %message, "invocation failed");
                report_failure(&*queue, &id, message).await;
            }
        });
        Ok(())
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
