//! The seams a backend implements. The coordinator loop and the worker are
//! written against these traits (plus `object_store::ObjectStore` for data
//! and exchange objects) and never against a concrete backend.
//!
//! | seam               | embedded (`local`)        | `aws`                 |
//! |--------------------|---------------------------|-----------------------|
//! | object store       | a local folder            | S3                    |
//! | [`CompletionQueue`]| in-process channels       | one SQS queue a query |
//! | [`Invoker`]        | in-process task slots     | Lambda `Invoke`       |
//!
//! Both count, per query, the requests they make of their service
//! (`take_requests`), for the query's profile (`crate::requests`).

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::Result;
use crate::requests::RequestCounts;
use crate::task::ObjectLocation;

/// Where task reports travel. Each query gets its own queue, so concurrent
/// queries never see each other's messages. Delivery is at-least-once:
/// consumers must tolerate duplicates and reordering.
#[async_trait]
pub trait CompletionQueue: Send + Sync {
    /// Create the queue of a query; returns the address tasks reply to.
    async fn create(&self, query_id: &str) -> Result<String>;
    /// Send one message (used by workers).
    async fn send(&self, address: &str, body: String) -> Result<()>;
    /// Receive what is available, waiting up to `wait` for the first message.
    async fn receive(&self, address: &str, wait: Duration) -> Result<Vec<String>>;
    /// Delete the queue and anything left in it.
    async fn delete(&self, address: &str) -> Result<()>;

    /// The requests made of the queue service for `address` by this
    /// process's `create`, `receive` and `delete` (not `send`: a sender
    /// counts its own, in its report), forgetting them. The coordinator asks
    /// once, when its query has ended.
    fn take_requests(&self, _address: &str) -> RequestCounts {
        RequestCounts::default()
    }
}

/// Starts a task from its serialized [`crate::task::TaskSpec`] bytes.
/// Returns once the task is accepted for execution, not when it finishes.
/// An invocation refused because of throttling returns
/// [`crate::SquallError::Throttled`], which callers may retry after a backoff.
#[async_trait]
pub trait Invoker: Send + Sync {
    async fn invoke(&self, payload: Bytes) -> Result<()>;

    /// Whether this backend starts a batch of tasks through one launcher
    /// invocation ([`Invoker::invoke_batch`]), so that a large stage costs
    /// the coordinator one request per batch rather than per task.
    fn launches_batches(&self) -> bool {
        false
    }

    /// Starts every task of `payloads` (tasks of one stage). Returns once
    /// the batch is accepted: with a launcher invocation (Lambda), the tasks
    /// themselves start shortly after, and a task that never starts is one
    /// that stays silent, which its deadline answers. Without one, each
    /// task is invoked in turn.
    async fn invoke_batch(&self, payloads: Vec<Bytes>) -> Result<()> {
        for payload in payloads {
            self.invoke(payload).await?;
        }
        Ok(())
    }

    /// Stop every task of `query_id` that is still running, as far as the
    /// backend can. Returns when they are stopped (or cannot be reached).
    ///
    /// The coordinator calls this whenever a query ends (finished, failed or
    /// cancelled), so stragglers and duplicates stop too. A backend that
    /// cannot reach running tasks directly (Lambda) creates the query's
    /// [`Invoker::stop_marker`] here instead.
    async fn cancel(&self, _query_id: &str) -> Result<()> {
        Ok(())
    }

    /// Stop one attempt of a task, when another attempt of the same task was
    /// accepted (the loser of a speculative duplicate), as far as the backend
    /// can; never waits for it. A backend that cannot reach one invocation
    /// (Lambda) leaves it to the query's stop marker, written when the query
    /// ends; whatever the attempt wrote is swept with the query's objects.
    async fn stop_attempt(
        &self,
        _query_id: &str,
        _stage: u32,
        _task: u32,
        _attempt: u32,
    ) -> Result<()> {
        Ok(())
    }

    /// Where the tasks of `query_id` look for their stop marker (sent in
    /// every `TaskSpec`), or `None` when the backend stops tasks itself.
    fn stop_marker(&self, _query_id: &str) -> Option<ObjectLocation> {
        None
    }

    /// The requests made for `query_id` so far (invocations, and what the
    /// backend stores for them: spilled payloads, stop markers), forgetting
    /// them. The coordinator asks once, when its query has ended.
    fn take_requests(&self, _query_id: &str) -> RequestCounts {
        RequestCounts::default()
    }
}
