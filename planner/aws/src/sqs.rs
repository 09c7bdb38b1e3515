//! Completion queues on SQS: one queue per query (`{prefix}{query_id}`), so
//! concurrent queries never see each other's messages. Receives long-poll
//! and delete what they received; delivery is at-least-once, which the
//! coordinator tolerates (duplicates are counted and ignored).

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, QueueAttributeName};
use squall_core::error::{Result, SquallError};
use squall_core::seams::CompletionQueue;

use crate::env::AwsEnv;

pub struct SqsQueue {
    client: aws_sdk_sqs::Client,
    prefix: String,
}

impl SqsQueue {
    pub fn new(env: &AwsEnv, prefix: &str) -> Self {
        Self {
            client: aws_sdk_sqs::Client::new(&env.sdk),
            prefix: prefix.to_string(),
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
        out.queue_url
            .ok_or_else(|| err(&name, "CreateQueue returned no queue URL"))
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
        let out = self
            .client
            .receive_message()
            .queue_url(address)
            .max_number_of_messages(10)
            .wait_time_seconds(wait_secs)
            .send()
            .await
            .map_err(|e| sdk_err(address, e))?;
        let messages = out.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(vec![]);
        }
        let entries: Vec<DeleteMessageBatchRequestEntry> = messages
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let handle = m.receipt_handle.clone()?;
                DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(handle)
                    .build()
                    .ok()
            })
            .collect();
        if !entries.is_empty()
            && let Err(e) = self
                .client
                .delete_message_batch()
                .queue_url(address)
                .set_entries(Some(entries))
                .send()
                .await
        {
            // Undeleted messages come back as duplicates, which are tolerated.
            tracing::warn!(error = %sdk_err(address, e), "deleting received messages failed");
        }
        Ok(messages.into_iter().filter_map(|m| m.body).collect())
    }

    async fn delete(&self, address: &str) -> Result<()> {
        self.client
            .delete_queue()
            .queue_url(address)
            .send()
            .await
            .map_err(|e| sdk_err(address, e))?;
        Ok(())
    }
}
