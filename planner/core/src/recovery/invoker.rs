//! [`RetryingInvoker`]: retries invocations refused as throttled (Lambda's
//! 429 TooManyRequests, or `squall.fault.invoke_throttle_rate`) with
//! exponential backoff and jitter, at most `squall.task.invoke_retries` times.
//!
//! A throttle is not a failed attempt: the task never started, so nothing
//! is learned about it and nothing of it needs cleaning up; spending one of
//! its `squall.task.max_attempts` on a burst of the account's concurrency
//! would fail queries for a reason that waiting fixes. Once the retries are
//! spent the error goes up, naming the stage and task, and fails the query.
//!
//! It is made per query, so it counts that query's invocations: accepted
//! and throttled ones, injected throttles included ([`Invoker::take_requests`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use super::Backoff;
use crate::error::{Result, SquallError};
use crate::requests::RequestCounts;
use crate::seams::Invoker;
use crate::task::ObjectLocation;

/// Retries throttled invocations of `inner`.
pub struct RetryingInvoker {
    inner: Arc<dyn Invoker>,
    retries: u32,
    backoff: Backoff,
    throttles: AtomicU64,
    accepted: AtomicU64,
}

impl RetryingInvoker {
    pub fn new(inner: Arc<dyn Invoker>, retries: u32, backoff: Backoff) -> Self {
        Self {
            inner,
            retries,
            backoff,
            throttles: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        }
    }

    /// Throttled invocations so far (each one retried or, the last, given up).
    pub fn throttles(&self) -> u64 {
        self.throttles.load(Ordering::Relaxed)
    }
}

impl RetryingInvoker {
    /// `send` until it is not throttled, at most `retries` more times after
    /// a backoff each; an accepted invocation counts one. `what` starts the
    /// error's message ("a launcher of N tasks ").
    async fn retried<F, Fut>(&self, what: &str, send: F) -> Result<()>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        let mut retry = 0;
        loop {
            match send().await {
                Err(SquallError::Throttled {
                    stage,
                    task,
                    message,
                }) => {
                    self.throttles.fetch_add(1, Ordering::Relaxed);
                    if retry >= self.retries {
                        return Err(SquallError::Invoke {
                            stage,
                            task,
                            message: format!(
                                "{what}throttled {} times, retries spent (squall.task.invoke_retries): {message}",
                                retry + 1
                            ),
                        });
                    }
                    let wait = self.backoff.delay(retry);
                    tracing::info!(
                        stage,
                        task,
                        retry,
                        ?wait,
                        "{what}invocation throttled; retrying"
                    );
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                other => {
                    if other.is_ok() {
                        self.accepted.fetch_add(1, Ordering::Relaxed);
                    }
                    return other;
                }
            }
        }
    }
}

#[async_trait]
impl Invoker for RetryingInvoker {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        self.retried("", || self.inner.invoke(payload.clone()))
            .await
    }

    fn launches_batches(&self) -> bool {
        self.inner.launches_batches()
    }

    /// A batch through one launcher invocation is sent again whole when it
    /// is throttled; without a launcher, each task is invoked (and retried)
    /// in turn.
    async fn invoke_batch(&self, payloads: Vec<Bytes>) -> Result<()> {
        if !self.inner.launches_batches() {
            for payload in payloads {
                self.invoke(payload).await?;
            }
            return Ok(());
        }
        // One launcher invocation (the backend counts the ones it makes).
        let what = format!("a launcher of {} tasks ", payloads.len());
        self.retried(&what, || self.inner.invoke_batch(payloads.clone()))
            .await
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

    /// The backend's counts for the query, plus the invocations sent
    /// through this wrapper.
    fn take_requests(&self, query_id: &str) -> RequestCounts {
        self.inner.take_requests(query_id)
            + RequestCounts {
                invoke: self.accepted.load(Ordering::Relaxed),
                invoke_throttled: self.throttles(),
                ..RequestCounts::default()
            }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::config::FaultOptions;
    use crate::fault::FaultyInvoker;

    #[derive(Default)]
    struct Started(Mutex<Vec<Bytes>>);

    #[async_trait]
    impl Invoker for Started {
        async fn invoke(&self, payload: Bytes) -> Result<()> {
            self.0.lock().unwrap().push(payload);
            Ok(())
        }
    }

    fn payload(task: u32) -> Bytes {
        Bytes::from(format!(
            r#"{{"protocol":1,"query_id":"q","stage":1,"task":{task},"attempt":0,"reply_to":"r"}}"#
        ))
    }

    fn faulty(rate: f64, inner: &Arc<Started>) -> Arc<dyn Invoker> {
        let options = FaultOptions {
            seed: 5,
            invoke_throttle_rate: rate,
            ..Default::default()
        };
        FaultyInvoker::wrap(Arc::clone(inner) as _, &options)
    }

    #[tokio::test]
    async fn throttles_are_retried_until_the_task_starts() {
        let started = Arc::new(Started::default());
        let backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(2));
        let invoker = RetryingInvoker::new(faulty(0.5, &started), 20, backoff);
        for task in 0..40 {
            invoker.invoke(payload(task)).await.unwrap();
        }
        assert_eq!(
            started.0.lock().unwrap().len(),
            40,
            "every task started once"
        );
        assert!(
            (5..100).contains(&invoker.throttles()),
            "{}",
            invoker.throttles()
        );
        // Every Invoke request is counted: 40 accepted, the throttled ones besides.
        let counts = invoker.take_requests("q");
        assert_eq!(
            (counts.invoke, counts.invoke_throttled),
            (40, invoker.throttles())
        );
    }

    #[tokio::test]
    async fn spent_retries_fail_naming_stage_and_task() {
        let started = Arc::new(Started::default());
        let backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(2));
        let invoker = RetryingInvoker::new(faulty(1.0, &started), 3, backoff);
        let err = invoker.invoke(payload(7)).await.unwrap_err().to_string();
        assert!(
            err.contains("task 1/7") && err.contains("throttled 4 times"),
            "{err}"
        );
        assert_eq!(invoker.throttles(), 4);
        assert!(started.0.lock().unwrap().is_empty());
    }
}
