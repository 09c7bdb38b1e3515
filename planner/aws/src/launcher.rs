//! The worker's side of tree invocation: a launcher invocation starts a
//! batch of tasks itself.
//!
//! ```text
//! coordinator ── PUT batch object (payloads back to back) ──> S3
//!             ── Invoke(worker, {"launch": {payloads, tasks: [[off, len]..]}})
//!                   └─ launcher: GET batch object, then per task
//!                        Invoke(worker, payload inline | {payload_location, range})
//! ```
//!
//! At 100,000 tasks and a fan-out of 100, the coordinator sends 1,000
//! invocations and 1,000 PUTs; a thousand launchers send the rest in
//! parallel, each `concurrency` at a time, waiting out throttles with the
//! same backoff as the coordinator (`squall.task.invoke_retries`,
//! `invoke_backoff_ms`). A task whose invocation is refused for good is
//! reported failed on its query's queue, as a late refusal is, so the
//! coordinator retries it; a launcher that dies leaves its remaining tasks
//! silent, and their deadlines start them again. A task over the inline
//! limit is sent as a pointer to its range of the batch object (one ranged
//! GET when it starts): no PUT of its own.
//!
//! What it does not do: run tasks (the worker does, in another invocation).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use squall_core::config::SquallConfig;
use squall_core::error::{Result, SquallError};
use squall_core::recovery::Backoff;
use squall_core::task::TaskIdentity;

use crate::lambda::{BatchSpec, LambdaInvoker, PayloadPointer, report_failure};

/// What one launcher invocation did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Launched {
    /// Tasks Lambda accepted.
    pub started: usize,
    /// Tasks refused for good (reported failed on their queues).
    pub refused: usize,
    /// Throttled invocations sent again.
    pub throttled: usize,
}

/// Starts every task of `batch`, whose object's bytes are `object`, through
/// `invoker` (the worker function's).
pub async fn launch_batch(
    invoker: &LambdaInvoker,
    batch: &BatchSpec,
    object: Bytes,
    config: &SquallConfig,
) -> Result<Launched> {
    let mut events = Vec::with_capacity(batch.tasks.len());
    for &[offset, len] in &batch.tasks {
        let (start, end) = (offset as usize, (offset + len) as usize);
        let payload = object.get(start..end).ok_or_else(|| {
            SquallError::BadTaskPayload(format!(
                "launch batch {}: task bytes {start}..{end} outside its {} bytes",
                batch.payloads,
                object.len()
            ))
        })?;
        let payload = object.slice_ref(payload);
        let id = TaskIdentity::salvage(&payload).unwrap_or_default();
        let body = if payload.len() <= batch.inline_limit {
            payload
        } else {
            let pointer = PayloadPointer {
                payload_location: batch.payloads.clone(),
                range: Some([offset, len]),
            };
            Bytes::from(
                serde_json::to_vec(&pointer)
                    .map_err(|e| SquallError::BadTaskPayload(e.to_string()))?,
            )
        };
        events.push((id, body));
    }
    let backoff = Backoff::new(
        Duration::from_millis(config.task.invoke_backoff_ms),
        Duration::from_secs(5),
    );
    let retries = config.task.invoke_retries;
    let outcomes: Vec<(bool, usize)> = futures::stream::iter(events)
        .map(|(id, body)| async move {
            let mut throttled = 0;
            loop {
                match invoker.send_event(id.clone(), body.clone()).await {
                    Ok(()) => return (true, throttled),
                    Err(SquallError::Throttled { message, .. }) if throttled < retries as usize => {
                        tracing::info!(query_id = %id.query_id, stage = id.stage, task = id.task, %message, "invocation throttled; retrying");
                        tokio::time::sleep(backoff.delay(throttled as u32)).await;
                        throttled += 1;
                    }
                    Err(e) => {
                        let message = format!("the launcher of its batch could not start it: {e}");
                        tracing::warn!(query_id = %id.query_id, stage = id.stage, task = id.task, %message, "task not started");
                        report_failure(invoker.queue(), &id, message).await;
                        return (false, throttled);
                    }
                }
            }
        })
        .buffer_unordered(batch.concurrency.max(1))
        .collect()
        .await;
    let mut launched = Launched::default();
    for (started, throttled) in outcomes {
        if started {
            launched.started += 1;
        } else {
            launched.refused += 1;
        }
        launched.throttled += throttled;
    }
    Ok(launched)
}
