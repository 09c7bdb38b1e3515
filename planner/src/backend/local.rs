//! The embedded backend: a local folder as the object store, in-process
//! channels as completion queues, and an in-process invoker that hands
//! workers the very same serialized task bytes a Lambda would receive.
//!
//! Workers run concurrently up to `squall.worker_slots` tasks; more
//! invocations wait for a free slot, as Lambda invocations wait for
//! concurrency.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use squall_core::error::{Result, SquallError};
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::worker::{WorkerEnv, handle_task};
use tokio::sync::{Semaphore, mpsc};

/// In-process completion queues, one per query.
#[derive(Default)]
pub struct LocalQueue {
    queues: Mutex<HashMap<String, QueueEnds>>,
}

struct QueueEnds {
    tx: mpsc::UnboundedSender<String>,
    rx: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>,
}

impl LocalQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of queues that exist (each running query has one).
    pub fn open_queues(&self) -> usize {
        self.queues.lock().map(|q| q.len()).unwrap_or(0)
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, HashMap<String, QueueEnds>>> {
        self.queues.lock().map_err(|e| SquallError::Queue {
            queue: "local".into(),
            message: e.to_string(),
        })
    }
}

#[async_trait]
impl CompletionQueue for LocalQueue {
    async fn create(&self, query_id: &str) -> Result<String> {
        let (tx, rx) = mpsc::unbounded_channel();
        let address = format!("local:{query_id}");
        self.lock()?.insert(
            address.clone(),
            QueueEnds {
                tx,
                rx: Arc::new(tokio::sync::Mutex::new(rx)),
            },
        );
        Ok(address)
    }

    async fn send(&self, address: &str, body: String) -> Result<()> {
        let tx = self
            .lock()?
            .get(address)
            .map(|q| q.tx.clone())
            .ok_or_else(|| SquallError::Queue {
                queue: address.to_string(),
                message: "no such queue (the query has ended)".into(),
            })?;
        tx.send(body).map_err(|_| SquallError::Queue {
            queue: address.to_string(),
            message: "queue closed".into(),
        })
    }

    async fn receive(&self, address: &str, wait: Duration) -> Result<Vec<String>> {
        let rx = self
            .lock()?
            .get(address)
            .map(|q| Arc::clone(&q.rx))
            .ok_or_else(|| SquallError::Queue {
                queue: address.to_string(),
                message: "no such queue".into(),
            })?;
        let mut rx = rx.lock().await;
        let mut out = Vec::new();
        match tokio::time::timeout(wait, rx.recv()).await {
            Ok(Some(first)) => out.push(first),
            Ok(None) | Err(_) => return Ok(out),
        }
        while out.len() < 10 {
            match rx.try_recv() {
                Ok(m) => out.push(m),
                Err(_) => break,
            }
        }
        Ok(out)
    }

    async fn delete(&self, address: &str) -> Result<()> {
        self.lock()?.remove(address);
        Ok(())
    }
}

/// Runs tasks in this process, at most `slots` at a time.
pub struct LocalInvoker {
    env: WorkerEnv,
    slots: Arc<Semaphore>,
    running: Arc<std::sync::atomic::AtomicUsize>,
}

impl LocalInvoker {
    pub fn new(env: WorkerEnv, slots: usize) -> Self {
        Self {
            env,
            slots: Arc::new(Semaphore::new(slots.max(1))),
            running: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }

    /// Tasks invoked and not yet finished.
    pub fn running(&self) -> usize {
        self.running.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[async_trait]
impl Invoker for LocalInvoker {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        let env = self.env.clone();
        let slots = Arc::clone(&self.slots);
        let running = Arc::clone(&self.running);
        running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        tokio::spawn(async move {
            let permit = slots.acquire_owned().await;
            // A panic inside a task must not take the process down silently:
            // run it as its own tokio task and report the panic as a failure.
            let env2 = env.clone();
            let body = payload.clone();
            let outcome = tokio::spawn(async move { handle_task(&body, &env2).await }).await;
            if let Err(e) = outcome {
                tracing::error!(%e, "worker task panicked");
                send_panic_report(&payload, &env, &e.to_string()).await;
            }
            drop(permit);
            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
        Ok(())
    }
}

async fn send_panic_report(payload: &[u8], env: &WorkerEnv, message: &str) {
    use squall_core::task::{
        PROTOCOL_VERSION, TaskFailure, TaskIdentity, TaskMetrics, TaskOutcome, TaskReport,
    };
    let Some(id) = TaskIdentity::salvage(payload) else {
        return;
    };
    let report = TaskReport {
        protocol: PROTOCOL_VERSION,
        query_id: id.query_id,
        stage: id.stage,
        task: id.task,
        attempt: id.attempt,
        outcome: TaskOutcome::Failed {
            error: TaskFailure {
                kind: "panic".into(),
                message: format!("worker panicked: {message}"),
                retryable: true,
            },
        },
        metrics: TaskMetrics::default(),
    };
    if let Ok(body) = report.encode() {
        let _ = env.queue.send(&id.reply_to, body).await;
    }
}
