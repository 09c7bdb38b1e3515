//! Sending the coordinator's invocations off its event loop.
//!
//! ```text
//!  event loop                         sender task (tokio)
//!  ----------                         -------------------
//!  enqueue (stage, task, attempt) ─┐
//!  top_up: encode while room ──────┼──> Request::One / Request::Batch ──> Invoker::invoke
//!                                  │         (launch_concurrency at once)  Invoker::invoke_batch
//!  Sent { attempts, at, result } <─┴──────────────────────────────────────────┘
//! ```
//!
//! The loop never awaits an invocation: it queues attempts, encodes their
//! payloads only as room frees up (at most [`Launcher::max_in_flight`]
//! tasks encoded and not yet sent, so a stage of 100,000 tasks never holds
//! 100,000 payloads), and goes on receiving completions while Lambda
//! answers, throttles back off, or a local emulator makes launches wait.
//! Each attempt's deadline starts when its invocation was *sent*
//! ([`Sent::at`]), not when it was queued: an attempt still waiting to be
//! sent is never overdue.
//!
//! **Tree invocation.** A stage launching at least
//! `squall.task.tree_min_tasks` tasks at once, on a backend that launches
//! batches ([`Invoker::launches_batches`]: Lambda, with a payload location),
//! goes out in batches of `squall.task.tree_fanout`: one launcher
//! invocation per batch, which invokes the batch's tasks itself (Lambada's
//! tree). At 100,000 tasks and a fan-out of 100 the coordinator sends 1,000
//! requests instead of 100,000; the batch's payloads travel in one object
//! (one PUT per batch, not one per spilled payload). Retries and duplicates
//! go out one by one. A launcher that dies leaves its tasks silent: their
//! deadlines launch them again, the same path as a dead worker.
//!
//! What it does not do: decide what to launch (`launch`, `deadlines`) or
//! build payloads (`launch::encode_task`).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use datafusion::error::Result;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use squall_core::error::SquallError;
use squall_core::seams::Invoker;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::launch::encode_task;
use super::{QueryJob, StageRun};
use crate::backend::Backend;

/// One attempt of one task: (stage index, task, attempt).
pub(super) type Attempt = (usize, usize, u32);

/// What the sender task is asked to send.
enum Request {
    One(Attempt, Bytes),
    /// Tasks of one stage, through one launcher invocation.
    Batch(Vec<Attempt>, Vec<Bytes>),
}

/// Attempts whose invocation went out (or could not).
pub(super) struct Sent {
    pub attempts: Vec<Attempt>,
    /// When the platform accepted it (or refused it for good).
    pub at: Instant,
    pub result: std::result::Result<(), SquallError>,
}

/// How a stage's first launch is batched.
#[derive(Debug, Clone, Copy)]
struct Tree {
    min_tasks: usize,
    fanout: usize,
}

/// The coordinator's launches: queued attempts, and a sender task that
/// invokes them concurrently while the event loop goes on.
pub(super) struct Launcher {
    /// Attempts to send, in order; `true` where they may share a batch.
    queued: VecDeque<(Attempt, bool)>,
    /// Tasks handed to the sender task and not yet reported sent.
    in_flight: usize,
    max_in_flight: usize,
    tree: Option<Tree>,
    requests: mpsc::UnboundedSender<Request>,
    sent: mpsc::UnboundedReceiver<Sent>,
    sender: tokio::task::AbortHandle,
}

impl Launcher {
    pub fn start(job: &QueryJob, invoker: Arc<dyn Invoker>) -> Self {
        let concurrency = job.config.task.launch_concurrency.max(1);
        let tree =
            (invoker.launches_batches() && job.config.task.tree_min_tasks > 0).then(|| Tree {
                min_tasks: job.config.task.tree_min_tasks,
                fanout: job.config.task.tree_fanout.max(2),
            });
        let batch = tree.map(|t| t.fanout).unwrap_or(1);
        let (requests, requests_rx) = mpsc::unbounded_channel();
        let (sent_tx, sent) = mpsc::unbounded_channel();
        let sender =
            tokio::spawn(send(invoker, requests_rx, sent_tx, concurrency).in_current_span());
        Self {
            queued: VecDeque::new(),
            in_flight: 0,
            // Enough encoded to keep the sending slots busy (and eight
            // batches going out at once), little enough to hold in memory.
            max_in_flight: 2 * concurrency.max(8 * batch),
            tree,
            requests,
            sent,
            sender: sender.abort_handle(),
        }
    }

    /// Queue the first attempts of all of stage `si`'s tasks.
    pub fn enqueue_stage(&mut self, si: usize, tasks: usize) {
        let batched = self.tree.is_some_and(|t| tasks >= t.min_tasks);
        self.queued
            .extend((0..tasks).map(|t| ((si, t, 0), batched)));
    }

    /// Queue one attempt (a retry or a duplicate).
    pub fn enqueue(&mut self, attempt: Attempt) {
        self.queued.push_back((attempt, false));
    }

    /// Forgets the attempts queued and not yet handed to the sender task
    /// (a run handing its query over: the next run queues them again);
    /// those being sent are still reported by [`Launcher::next_sent`].
    pub fn drop_queued(&mut self) -> usize {
        let dropped = self.queued.len();
        self.queued.clear();
        dropped
    }

    /// Tasks handed to the sender task and not yet reported sent.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Attempts queued or being sent.
    pub fn pending(&self) -> usize {
        self.queued.len() + self.in_flight
    }

    /// Encode and hand over queued attempts while there is room: a batch
    /// (consecutive batchable attempts of one stage, at most the fan-out)
    /// or a single attempt at a time.
    pub fn top_up(
        &mut self,
        job: &QueryJob,
        backend: &Backend,
        address: &str,
        runs: &[StageRun],
    ) -> Result<()> {
        let fanout = self.tree.map(|t| t.fanout).unwrap_or(1);
        while self.in_flight < self.max_in_flight && !self.queued.is_empty() {
            let mut attempts: Vec<Attempt> = Vec::new();
            let mut batched = false;
            while let Some(&(a, b)) = self.queued.front() {
                if let Some(first) = attempts.first()
                    && !(batched && b && a.0 == first.0 && attempts.len() < fanout)
                {
                    break;
                }
                self.queued.pop_front();
                // Another attempt of it was accepted while this one waited.
                if runs[a.0]
                    .tasks
                    .get(a.1)
                    .is_some_and(|t| t.accepted.is_some())
                {
                    continue;
                }
                if attempts.is_empty() {
                    batched = b;
                }
                attempts.push(a);
            }
            if attempts.is_empty() {
                continue;
            }
            let mut payloads = Vec::with_capacity(attempts.len());
            for &(si, t, attempt) in &attempts {
                payloads.push(encode_task(job, backend, address, runs, si, t, attempt)?);
            }
            self.in_flight += attempts.len();
            let request = if attempts.len() == 1 {
                Request::One(attempts[0], payloads.remove(0))
            } else {
                Request::Batch(attempts, payloads)
            };
            if self.requests.send(request).is_err() {
                return Err(crate::error::PlannerError::Internal(
                    "the coordinator's sender task ended early".into(),
                )
                .into());
            }
        }
        Ok(())
    }

    /// The invocations sent since the last call (at least one; pending
    /// forever while none is in flight). Should the sender task have ended
    /// with invocations in flight (it panicked), one failed [`Sent`] says
    /// so: the query fails rather than waiting for answers that cannot
    /// come (its silence would not count while launches are pending).
    pub async fn next_sent(&mut self) -> Vec<Sent> {
        if self.in_flight == 0 {
            return std::future::pending().await;
        }
        let Some(first) = self.sent.recv().await else {
            self.in_flight = 0;
            return vec![Sent {
                attempts: Vec::new(),
                at: Instant::now(),
                result: Err(SquallError::Queue {
                    queue: "the coordinator's invocations".into(),
                    message: "its sender task ended with invocations in flight".into(),
                }),
            }];
        };
        let mut sent = vec![first];
        while let Ok(more) = self.sent.try_recv() {
            sent.push(more);
        }
        for s in &sent {
            self.in_flight = self.in_flight.saturating_sub(s.attempts.len());
        }
        sent
    }
}

impl Launcher {
    /// Wait (at most `wait`) for the invocations still being sent, dropping
    /// those not sent yet: once a query's last task has reported, an
    /// invocation can still be waiting for the platform's answer, and its
    /// request belongs in the query's counts.
    pub async fn settle(mut self, wait: std::time::Duration) {
        self.queued.clear();
        let _ = tokio::time::timeout(wait, async {
            while self.in_flight > 0 {
                self.next_sent().await;
            }
        })
        .await;
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        self.sender.abort();
    }
}

/// The sender task: at most `concurrency` requests at once, each answered
/// on `sent` as it completes.
async fn send(
    invoker: Arc<dyn Invoker>,
    mut requests: mpsc::UnboundedReceiver<Request>,
    sent: mpsc::UnboundedSender<Sent>,
    concurrency: usize,
) {
    let mut running = FuturesUnordered::new();
    let mut open = true;
    loop {
        tokio::select! {
            request = requests.recv(), if open && running.len() < concurrency => {
                let Some(request) = request else {
                    open = false;
                    continue;
                };
                let invoker = Arc::clone(&invoker);
                running.push(async move {
                    let (attempts, result) = match request {
                        Request::One(attempt, payload) => (vec![attempt], invoker.invoke(payload).await),
                        Request::Batch(attempts, payloads) => {
                            let result = invoker.invoke_batch(payloads).await;
                            (attempts, result)
                        }
                    };
                    Sent { attempts, at: Instant::now(), result }
                });
            }
            Some(done) = running.next(), if !running.is_empty() => {
                if sent.send(done).is_err() {
                    return;
                }
            }
            else => return,
        }
    }
}
