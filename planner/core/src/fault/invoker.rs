//! [`FaultyInvoker`]: an [`Invoker`] wrapper that refuses invocations as
//! throttled (`squall.fault.invoke_throttle_rate`), the way Lambda answers
//! 429 TooManyRequests when a burst exceeds its concurrency. A throttled
//! invocation never starts; stopping tasks passes through.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::{Occurrences, happens, hash_text};
use crate::config::FaultOptions;
use crate::error::{Result, SquallError};
use crate::requests::RequestCounts;
use crate::seams::Invoker;
use crate::task::{ObjectLocation, TaskIdentity};

/// Injects throttled invocations into `inner`.
pub struct FaultyInvoker {
    inner: Arc<dyn Invoker>,
    seed: u64,
    rate: f64,
    seen: Occurrences,
}

impl FaultyInvoker {
    /// Wraps `inner` when `options` throttle invocations; returns `inner` otherwise.
    pub fn wrap(inner: Arc<dyn Invoker>, options: &FaultOptions) -> Arc<dyn Invoker> {
        if options.invoke_throttle_rate <= 0.0 {
            return inner;
        }
        Arc::new(Self {
            inner,
            seed: options.seed,
            rate: options.invoke_throttle_rate,
            seen: Occurrences::default(),
        })
    }
}

impl FaultyInvoker {
    /// The injected throttle of this invocation of `payload`, if it is one.
    fn throttle(&self, payload: &Bytes) -> Option<SquallError> {
        let id = TaskIdentity::salvage(payload).unwrap_or_default();
        let query = hash_text(&[&id.query_id]);
        let coords = [
            query,
            u64::from(id.stage),
            u64::from(id.task),
            u64::from(id.attempt),
        ];
        let n = self.seen.next(hash_text(&[&format!("{coords:?}")]));
        happens(
            self.rate,
            self.seed,
            "invoke_throttle",
            &[coords[0], coords[1], coords[2], coords[3], n],
        )
        .then(|| SquallError::Throttled {
            stage: id.stage,
            task: id.task,
            message: "429 TooManyRequests (injected by squall.fault.invoke_throttle_rate)".into(),
        })
    }
}

#[async_trait]
impl Invoker for FaultyInvoker {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        if let Some(throttled) = self.throttle(&payload) {
            return Err(throttled);
        }
        self.inner.invoke(payload).await
    }

    fn launches_batches(&self) -> bool {
        self.inner.launches_batches()
    }

    /// A batch through one launcher invocation is throttled as a whole when
    /// the draw for its first task says so; without a launcher, task by task.
    async fn invoke_batch(&self, payloads: Vec<Bytes>) -> Result<()> {
        if !self.inner.launches_batches() {
            for payload in payloads {
                self.invoke(payload).await?;
            }
            return Ok(());
        }
        if let Some(first) = payloads.first()
            && let Some(throttled) = self.throttle(first)
        {
            return Err(throttled);
        }
        self.inner.invoke_batch(payloads).await
    }

    async fn cancel(&self, query_id: &str) -> Result<()> {
        self.inner.cancel(query_id).await
    }

    async fn stop_attempt(
        &self,
        query_id: &str,
        stage: u32,
        task: u32,
        attempt: u32,
    ) -> Result<()> {
        self.inner
            .stop_attempt(query_id, stage, task, attempt)
            .await
    }

    fn stop_marker(&self, query_id: &str) -> Option<ObjectLocation> {
        self.inner.stop_marker(query_id)
    }

    fn take_requests(&self, query_id: &str) -> RequestCounts {
        self.inner.take_requests(query_id)
    }
}
