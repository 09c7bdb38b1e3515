//! [`FaultyQueue`]: a [`CompletionQueue`] wrapper that loses, duplicates and
//! delays the completion messages a task sends
//! (`squall.fault.message_loss_rate`, `message_duplicate_rate`,
//! `message_delay_rate` and `message_delay_ms`).
//!
//! A duplicate is sent at once and again after a random part of
//! `message_delay_ms`; a delayed message is sent only after
//! `message_delay_ms`, so later messages overtake it (reordering). Both late
//! sends happen in a detached task, so the sender does not wait for them,
//! and may find the queue already gone (its query has ended), as a late SQS
//! delivery would. Creating, receiving and deleting queues pass through.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{Occurrences, draw, happens, hash_text};
use crate::config::FaultOptions;
use crate::error::Result;
use crate::requests::RequestCounts;
use crate::seams::CompletionQueue;

/// Injects message loss, duplication and delay into the sends of `inner`.
pub struct FaultyQueue {
    inner: Arc<dyn CompletionQueue>,
    options: FaultOptions,
    scope: Vec<u64>,
    seen: Occurrences,
}

impl FaultyQueue {
    /// Wraps `inner` when `options` inject any message fault; returns `inner`
    /// otherwise. `scope` are the sender's coordinates (stage, task, attempt).
    pub fn wrap(
        inner: Arc<dyn CompletionQueue>,
        options: &FaultOptions,
        scope: &[u64],
    ) -> Arc<dyn CompletionQueue> {
        if options.message_loss_rate <= 0.0
            && options.message_duplicate_rate <= 0.0
            && options.message_delay_rate <= 0.0
        {
            return inner;
        }
        Arc::new(Self {
            inner,
            options: options.clone(),
            scope: scope.to_vec(),
            seen: Occurrences::default(),
        })
    }

    fn later(&self, address: &str, body: String, after: Duration) {
        let inner = Arc::clone(&self.inner);
        let address = address.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Err(e) = inner.send(&address, body).await {
                tracing::info!(%e, "a late completion message found no queue");
            }
        });
    }
}

#[async_trait]
impl CompletionQueue for FaultyQueue {
    async fn create(&self, query_id: &str) -> Result<String> {
        self.inner.create(query_id).await
    }

    async fn send(&self, address: &str, body: String) -> Result<()> {
        let key = hash_text(&[address]);
        let mut coords = self.scope.clone();
        coords.extend([key, self.seen.next(key)]);
        let o = &self.options;
        let delay = Duration::from_millis(o.message_delay_ms);
        if happens(o.message_loss_rate, o.seed, "message_loss", &coords) {
            tracing::info!("completion message lost (squall.fault.message_loss_rate)");
            return Ok(());
        }
        if happens(o.message_delay_rate, o.seed, "message_delay", &coords) {
            tracing::info!("completion message delayed (squall.fault.message_delay_rate)");
            self.later(address, body, delay);
            return Ok(());
        }
        if happens(
            o.message_duplicate_rate,
            o.seed,
            "message_duplicate",
            &coords,
        ) {
            tracing::info!("completion message duplicated (squall.fault.message_duplicate_rate)");
            let after = delay.mul_f64(draw(o.seed, "message_duplicate_after", &coords));
            self.later(address, body.clone(), after);
        }
        self.inner.send(address, body).await
    }

    async fn receive(&self, address: &str, wait: Duration) -> Result<Vec<String>> {
        self.inner.receive(address, wait).await
    }

    async fn delete(&self, address: &str) -> Result<()> {
        self.inner.delete(address).await
    }

    fn take_requests(&self, address: &str) -> RequestCounts {
        self.inner.take_requests(address)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Sink(Mutex<Vec<String>>);

    #[async_trait]
    impl CompletionQueue for Sink {
        async fn create(&self, q: &str) -> Result<String> {
            Ok(q.to_string())
        }
        async fn send(&self, _: &str, body: String) -> Result<()> {
            self.0.lock().unwrap().push(body);
            Ok(())
        }
        async fn receive(&self, _: &str, _: Duration) -> Result<Vec<String>> {
            Ok(self.0.lock().unwrap().drain(..).collect())
        }
        async fn delete(&self, _: &str) -> Result<()> {
            Ok(())
        }
    }

    async fn deliveries(options: &FaultOptions) -> Vec<String> {
        let sink = Arc::new(Sink::default());
        for task in 0..200u64 {
            let q = FaultyQueue::wrap(Arc::clone(&sink) as _, options, &[1, task, 0]);
            q.send("a", format!("m{task}")).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        sink.receive("a", Duration::ZERO).await.unwrap()
    }

    #[tokio::test]
    async fn messages_are_lost_duplicated_and_reordered_reproducibly() {
        let options = FaultOptions {
            seed: 3,
            message_loss_rate: 0.1,
            message_duplicate_rate: 0.1,
            message_delay_rate: 0.1,
            message_delay_ms: 20,
            ..Default::default()
        };
        let got = deliveries(&options).await;
        let mut counts = std::collections::HashMap::new();
        for m in &got {
            *counts.entry(m.clone()).or_insert(0) += 1;
        }
        let lost = (0..200)
            .filter(|t| !counts.contains_key(&format!("m{t}")))
            .count();
        let doubled = counts.values().filter(|n| **n == 2).count();
        assert!((5..40).contains(&lost), "{lost} of 200 lost at 10%");
        assert!(
            (5..40).contains(&doubled),
            "{doubled} of 200 duplicated at 10%"
        );
        let order: Vec<usize> = got.iter().map(|m| m[1..].parse().unwrap()).collect();
        assert!(
            order.windows(2).any(|w| w[0] > w[1]),
            "nothing arrived out of order"
        );
        // The same seed loses and duplicates the same messages.
        let mut again = deliveries(&options).await;
        let mut first = got.clone();
        first.sort();
        again.sort();
        assert_eq!(first, again);
    }
}
