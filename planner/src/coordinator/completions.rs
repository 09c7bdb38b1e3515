//! Receiving a query's completion messages off the event loop.
//!
//! A task of its own receives from the query's queue one receive after
//! another ([`CompletionQueue::receive`]: on SQS a long poll, then
//! concurrent short polls while a backlog lasts) and hands each non-empty
//! batch to the event loop over a bounded channel, so the loop can wait on
//! completions, launches, filter builds and its clock at once without ever
//! dropping a receive half done (a dropped SQS receive would hide its
//! messages until their visibility timeout). When the loop falls behind,
//! the receiver waits rather than piling messages up in memory.
//!
//! [`Completions::finish`] stops receiving after the receive in progress
//! and returns every batch received and not yet taken.

use std::sync::Arc;
use std::time::Duration;

use squall_core::error::{Result, SquallError};
use squall_core::seams::CompletionQueue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Batches received ahead of the event loop.
const AHEAD: usize = 16;
/// How long one receive waits for a first message.
const WAIT: Duration = Duration::from_millis(500);

pub(super) struct Completions {
    batches: mpsc::Receiver<Result<Vec<String>>>,
    stop: CancellationToken,
    receiver: Option<tokio::task::JoinHandle<()>>,
}

impl Completions {
    pub fn start(queue: Arc<dyn CompletionQueue>, address: &str) -> Self {
        let (tx, batches) = mpsc::channel(AHEAD);
        let stop = CancellationToken::new();
        let receiver =
            tokio::spawn(receive(queue, address.to_string(), tx, stop.clone()).in_current_span());
        Self {
            batches,
            stop,
            receiver: Some(receiver),
        }
    }

    /// The next batch of message bodies; an error of the queue ends them.
    pub async fn next(&mut self) -> Result<Vec<String>> {
        match self.batches.recv().await {
            Some(batch) => batch,
            None => Err(SquallError::Queue {
                queue: "completion queue".into(),
                message: "the coordinator's receiver ended".into(),
            }),
        }
    }

    /// Stop receiving once the receive in progress returns; every batch
    /// received and not yet taken (for handing a query over with nothing
    /// received lost).
    pub async fn finish(mut self) -> Result<Vec<String>> {
        self.stop.cancel();
        let mut bodies = Vec::new();
        if let Some(mut receiver) = self.receiver.take() {
            // Keep taking batches while it finishes, so it never waits on a
            // full channel.
            loop {
                tokio::select! {
                    _ = &mut receiver => break,
                    Some(batch) = self.batches.recv() => bodies.extend(batch?),
                }
            }
        }
        while let Ok(batch) = self.batches.try_recv() {
            bodies.extend(batch?);
        }
        Ok(bodies)
    }
}

impl Drop for Completions {
    fn drop(&mut self) {
        if let Some(receiver) = &self.receiver {
            receiver.abort();
        }
    }
}

async fn receive(
    queue: Arc<dyn CompletionQueue>,
    address: String,
    batches: mpsc::Sender<Result<Vec<String>>>,
    stop: CancellationToken,
) {
    while !stop.is_cancelled() {
        match queue.receive(&address, WAIT).await {
            Ok(bodies) if bodies.is_empty() => {}
            Ok(bodies) => {
                if batches.send(Ok(bodies)).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = batches.send(Err(e)).await;
                return;
            }
        }
    }
}
