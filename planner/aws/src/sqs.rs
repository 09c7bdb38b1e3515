//! Completion queues on SQS: one queue per query (`{prefix}{query_id}`), so
//! concurrent queries never see each other's messages. Delivery is
//! at-least-once, which the coordinator tolerates (duplicates are counted
//! and ignored).
//!
//! A receive long-polls for up to 10 messages (SQS's most per request). A
//! full batch means more are waiting: it then drains with
//! [`DRAIN_RECEIVERS`] short polls at once, again while they come back
//! full, up to [`MAX_PER_RECEIVE`] messages, so a burst of completions
//! costs a round trip per 80 messages rather than per 10. What was received
//! is deleted in batches of 10 in the background, off the coordinator's
//! path (a message whose delete is late or lost comes back as a duplicate).
//! Requests: one ReceiveMessage and one DeleteMessageBatch per 10 messages,
//! as before, plus the empty long polls of an idle query and the drain's
//! short polls that come back short.
//!
//! Every request this process makes for a queue is counted under its
//! address ([`CompletionQueue::take_requests`]), except SendMessage, which
//! the sender counts in its report.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, QueueAttributeName};
use squall_core::error::{Result, SquallError};
use squall_core::requests::{Request, RequestCounts, RequestTally};
use squall_core::seams::CompletionQueue;

use crate::env::AwsEnv;

pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    prefix: String,
    requests: Arc<RequestTally>,
}

impl SqsQueue {
    pub fn new(env: &AwsEnv, prefix: &str) -> Self {
        Self {
            client: aws_sdk_sqs::Client::new(&env.sdk),
            prefix: prefix.to_string(),
            requests: Arc::default(),
        }
    }
}

fn err(queue: &str, e: impl std::fmt::Display) -> SquallError {
    SquallError::Queue {
        queue: queue.to_string(),
        message: e.to_string(),
    }
}

/// An SDK error with its whole chain (its Display is only the top line).
fn sdk_err<E: std::error::Error>(queue: &str, e: E) -> SquallError {
    err(queue, crate::error_chain(&e))
}

/// Most messages one ReceiveMessage returns.
const BATCH: usize = 10;
/// Short polls at once while a queue has a backlog.
pub const DRAIN_RECEIVERS: usize = 8;
/// Most messages one [`CompletionQueue::receive`] returns.
pub const MAX_PER_RECEIVE: usize = 400;

impl SqsQueue {
    async fn receive_batch(
        &self,
        address: &str,
        wait_secs: i32,
    ) -> Result<Vec<aws_sdk_sqs::types::Message>> {
        self.requests.count(address, Request::SqsReceive, 1);
        let out = self
            .client
            .receive_message()
            .queue_url(address)
            .max_number_of_messages(BATCH as i32)
            .wait_time_seconds(wait_secs)
            .send()
            .await
            .map_err(|e| sdk_err(address, e))?;
        Ok(out.messages.unwrap_or_default())
    }
}

#[async_trait]
impl CompletionQueue for SqsQueue {
    async fn create(&self, query_id: &str) -> Result<String> {
        let name: String = format!("{}{query_id}", self.prefix)
            .chars()
            .take(80)
            .collect();
        let out = self
            .client
            .create_queue()
            .queue_name(&name)
            .attributes(QueueAttributeName::MessageRetentionPeriod, "3600")
            .send()
            .await
            .map_err(|e| sdk_err(&name, e))?;
        let address = out
            .queue_url
            .ok_or_else(|| err(&name, "CreateQueue returned no queue URL"))?;
        self.requests.count(&address, Request::SqsCreateQueue, 1);
        Ok(address)
    }

    async fn send(&self, address: &str, body: String) -> Result<()> {
        self.client
            .send_message()
            .queue_url(address)
            .message_body(body)
            .send()
            .await
            .map_err(|e| sdk_err(address, e))?;
        Ok(())
    }

    async fn receive(&self, address: &str, wait: Duration) -> Result<Vec<String>> {
        let wait_secs = wait.as_secs().clamp(1, 20) as i32;
        let mut messages = self.receive_batch(address, wait_secs).await?;
        let mut full = messages.len() == BATCH;
        while full && messages.len() < MAX_PER_RECEIVE {
            let more = futures::future::join_all(
                (0..DRAIN_RECEIVERS).map(|_| self.receive_batch(address, 0)),
            )
            .await;
            full = true;
            for batch in more {
                match batch {
                    Ok(m) => {
                        full &= m.len() == BATCH;
                        messages.extend(m);
                    }
                    Err(e) => {
                        full = false;
                        tracing::debug!(%e, "a draining receive failed; the messages come later");
                    }
                }
            }
        }
        let handles: Vec<String> = messages
            .iter()
            .filter_map(|m| m.receipt_handle.clone())
            .collect();
        let batches = handles.len().div_ceil(BATCH) as u64;
        self.requests
            .count(address, Request::SqsDeleteBatch, batches);
        for chunk in handles.chunks(BATCH) {
            let entries: Vec<DeleteMessageBatchRequestEntry> = chunk
                .iter()
                .enumerate()
                .filter_map(|(i, handle)| {
                    DeleteMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .receipt_handle(handle)
                        .build()
                        .ok()
                })
                .collect();
            let (client, queue) = (self.client.clone(), address.to_string());
            tokio::spawn(async move {
                let sent = client
                    .delete_message_batch()
                    .queue_url(&queue)
                    .set_entries(Some(entries))
                    .send()
                    .await;
                if let Err(e) = sent {
                    // Undeleted messages come back as duplicates, which are
                    // tolerated; a queue deleted meanwhile has ended its query.
                    let e = sdk_err(&queue, e);
                    if e.to_string().contains("QueueDoesNotExist") {
                        tracing::debug!(error = %e, "deleting received messages of an ended query");
                    } else {
                        tracing::warn!(error = %e, "deleting received messages failed");
                    }
                }
            });
        }
        Ok(messages.into_iter().filter_map(|m| m.body).collect())
    }

    /// Deleting a queue already gone (a second cleanup sweep) is not an error.
    async fn delete(&self, address: &str) -> Result<()> {
        self.requests.count(address, Request::SqsDeleteQueue, 1);
        match self.client.delete_queue().queue_url(address).send().await {
            Ok(_) => Ok(()),
            Err(e) => {
                let e = sdk_err(address, e);
                if e.to_string().contains("QueueDoesNotExist") {
                    Ok(())
                } else {
                    Err(e)
                }
            }
        }
    }

    fn take_requests(&self, address: &str) -> RequestCounts {
        self.requests.take(address)
    }
}
