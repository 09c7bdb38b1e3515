//! The embedded backend: a local folder as the object store, in-process
//! channels as completion queues, and an in-process invoker that hands
//! workers the very same serialized task bytes a Lambda would receive.
//!
//! Each query runs up to `squall.worker_slots` of its tasks at once; its
//! further invocations wait for one of its slots, as Lambda invocations wait
//! for concurrency. Slots are per query, never shared: a query's tasks never
//! wait for another query's, so a short query starts its tasks at once
//! beside a heavy one that holds its own slots for minutes. The tasks of
//! every query share the CPU executor's threads ([`squall_core::executor`]),
//! taking turns at every yield. A new attempt of a task whose earlier attempt
//! still runs (a duplicate of a straggler or of a silent task) does not wait
//! for a slot: on Lambda it would run beside the straggler, and stragglers
//! holding every slot must not keep their own duplicates from starting.
//!
//! A task's tokio task here only waits: the worker runs the operators on the
//! CPU executor and watches for stops on this runtime. Cancelling a query
//! aborts its tasks, which stops their operators at their next yield.
//!
//! The queue counts, per query, the SQS requests the same calls would have
//! made (`squall_core::requests::sqs_receive_requests`: a receive hands over
//! any number of reports here, SQS 10 per request), so an embedded profile
//! prices like one on AWS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion::execution::runtime_env::RuntimeEnv;
use squall_core::config::SquallConfig;
use squall_core::error::{Result, SquallError};
use squall_core::requests::{Request, RequestCounts, RequestTally, sqs_receive_requests};
use squall_core::seams::{CompletionQueue, Invoker};
use squall_core::worker::{WorkerEnv, handle_task};
use tokio::sync::{Semaphore, mpsc};

use super::Backend;
use super::folder_store::FolderStore;

/// The embedded backend: its [`Backend`] (a local folder for exchange
/// objects, in-process queues, the in-process invoker), and its parts for
/// inspection (open queues, running tasks).
pub struct LocalBackend {
    pub backend: Backend,
    pub queue: Arc<LocalQueue>,
    pub invoker: Arc<LocalInvoker>,
    exchange_root: std::path::PathBuf,
    /// A temporary exchange folder, removed with the backend.
    _exchange_tmp: Option<tempfile::TempDir>,
}

impl LocalBackend {
    /// Exchange objects under `squall.exchange_location` (a temporary folder
    /// when empty); tasks run on `runtime`, at most `squall.worker_slots`
    /// of each query at a time.
    pub fn create(squall: &SquallConfig, runtime: Arc<RuntimeEnv>) -> Result<Self> {
        let folder_error = |dir: &std::path::Path, e: std::io::Error| {
            SquallError::Config(format!("exchange folder {}: {e}", dir.display()))
        };
        let (exchange_root, tmp) = if squall.exchange_location.is_empty() {
            let tmp = crate::temp_dirs::owned_temp_dir(&std::env::temp_dir(), "squall-exchange-")
                .map_err(|e| folder_error(&std::env::temp_dir(), e))?;
            (tmp.path().to_path_buf(), Some(tmp))
        } else {
            let dir = std::path::PathBuf::from(
                squall
                    .exchange_location
                    .strip_prefix("file://")
                    .unwrap_or(&squall.exchange_location),
            );
            std::fs::create_dir_all(&dir).map_err(|e| folder_error(&dir, e))?;
            (dir, None)
        };
        let exchange_root = exchange_root
            .canonicalize()
            .map_err(|e| folder_error(&exchange_root, e))?;
        // Exchange keys are paths as strings, and object_store encodes a
        // '%' in one: the objects would land in a sibling folder.
        if exchange_root.to_string_lossy().contains('%') {
            return Err(folder_error(
                &exchange_root,
                std::io::Error::other("a '%' in the folder's path is not supported"),
            ));
        }
        let queue = Arc::new(LocalQueue::new());
        let env = WorkerEnv {
            runtime,
            queue: Arc::clone(&queue) as _,
        };
        let invoker = Arc::new(LocalInvoker::new(env, squall.resolved_slots()));
        let backend = Backend {
            exchange_store: Arc::new(FolderStore::new(exchange_root.clone())),
            exchange_url: "file://".to_string(),
            exchange_prefix: exchange_root
                .to_string_lossy()
                .trim_start_matches('/')
                .to_string(),
            queue: Arc::clone(&queue) as _,
            invoker: Arc::clone(&invoker) as _,
        };
        Ok(Self {
            backend,
            queue,
            invoker,
            exchange_root,
            _exchange_tmp: tmp,
        })
    }

    /// The folder holding exchange objects.
    pub fn exchange_root(&self) -> &std::path::Path {
        &self.exchange_root
    }
}

/// In-process completion queues, one per query.
#[derive(Default)]
pub struct LocalQueue {
    queues: Mutex<HashMap<String, QueueEnds>>,
    /// The SQS requests each queue's calls stand for.
    requests: RequestTally,
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

/// Most messages one receive returns (SQS's own limit is 10 per request).
const RECEIVE_BATCH: usize = 1024;

#[async_trait]
impl CompletionQueue for LocalQueue {
    /// The query's queue; an existing one is kept with what waits in it
    /// (as SQS's CreateQueue answers for a name it has): a coordinator run
    /// that resumes a query reopens its queue.
    async fn create(&self, query_id: &str) -> Result<String> {
        let address = format!("local:{query_id}");
        self.requests.count(&address, Request::SqsCreateQueue, 1);
        self.lock()?.entry(address.clone()).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            QueueEnds {
                tx,
                rx: Arc::new(tokio::sync::Mutex::new(rx)),
            }
        });
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
            Ok(None) | Err(_) => {
                self.requests.count(address, Request::SqsReceive, 1);
                return Ok(out);
            }
        }
        // Everything waiting, up to a bound: one pass of the coordinator's
        // loop handles a batch, so a burst of reports costs one wake-up.
        while out.len() < RECEIVE_BATCH {
            match rx.try_recv() {
                Ok(m) => out.push(m),
                Err(_) => break,
            }
        }
        let (receives, deletes) = sqs_receive_requests(out.len() as u64);
        let counter = self.requests.counter(address);
        counter.count(Request::SqsReceive, receives);
        counter.count(Request::SqsDeleteBatch, deletes);
        Ok(out)
    }

    async fn delete(&self, address: &str) -> Result<()> {
        self.requests.count(address, Request::SqsDeleteQueue, 1);
        self.lock()?.remove(address);
        Ok(())
    }

    fn take_requests(&self, address: &str) -> RequestCounts {
        self.requests.take(address)
    }
}

/// Runs tasks in this process, at most `slots` of each query at a time.
pub struct LocalInvoker {
    env: WorkerEnv,
    slots: usize,
    /// Each query's slots, made at its first invocation, dropped on cancel.
    query_slots: Mutex<HashMap<String, Arc<Semaphore>>>,
    running: Arc<std::sync::atomic::AtomicUsize>,
    /// Tasks of each query that have not finished, to stop them on cancel.
    tasks: Arc<Mutex<HashMap<String, Vec<Running>>>>,
}

/// One invoked attempt: (stage, task, attempt) and its tokio task.
struct Running {
    stage: u32,
    task: u32,
    attempt: u32,
    handle: tokio::task::JoinHandle<()>,
}

impl LocalInvoker {
    pub fn new(env: WorkerEnv, slots: usize) -> Self {
        Self {
            env,
            slots: slots.max(1),
            query_slots: Mutex::default(),
            running: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            tasks: Arc::default(),
        }
    }

    /// Tasks invoked and not yet finished.
    pub fn running(&self) -> usize {
        self.running.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The slots of `query_id`'s tasks.
    fn slots_of(&self, query_id: &str) -> Arc<Semaphore> {
        let mut slots = self
            .query_slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(
            slots
                .entry(query_id.to_string())
                .or_insert_with(|| Arc::new(Semaphore::new(self.slots))),
        )
    }
}

#[async_trait]
impl Invoker for LocalInvoker {
    async fn invoke(&self, payload: Bytes) -> Result<()> {
        let env = self.env.clone();
        let running = Arc::clone(&self.running);
        running.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = squall_core::task::TaskIdentity::salvage(&payload).unwrap_or_default();
        let slots = self.slots_of(&id.query_id);
        let beside_earlier = self.tasks.lock().is_ok_and(|tasks| {
            tasks.get(&id.query_id).is_some_and(|list| {
                list.iter().any(|r| {
                    r.stage == id.stage
                        && r.task == id.task
                        && r.attempt < id.attempt
                        && !r.handle.is_finished()
                })
            })
        });
        // Counts the task as finished however it ends, aborted included.
        struct Finished(Arc<std::sync::atomic::AtomicUsize>);
        impl Drop for Finished {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let finished = Finished(running);
        // Held until the task has dropped everything it held: the memory it
        // frees is given back with the query's (see `squall_core::allocator`).
        let memory = squall_core::allocator::QueryMemory::task();
        let handle = tokio::spawn(async move {
            let _memory = memory;
            let _finished = finished;
            let permit = if beside_earlier {
                None
            } else {
                slots.acquire_owned().await.ok()
            };
            // A panic inside a task must not take the process down silently:
            // run it as its own tokio task and report the panic as a failure.
            let env2 = env.clone();
            let body = payload.clone();
            let inner = tokio::spawn(async move { handle_task(&body, &env2).await });
            let abort_inner = InnerAbort(inner.abort_handle());
            let outcome = inner.await;
            drop(abort_inner); // the inner task is done; aborting it is a no-op
            if let Err(e) = outcome {
                tracing::error!(%e, "worker task panicked");
                send_panic_report(&payload, &env, &e.to_string()).await;
            }
            drop(permit);
        });
        if let Ok(mut tasks) = self.tasks.lock() {
            let list = tasks.entry(id.query_id).or_default();
            list.retain(|r| !r.handle.is_finished());
            list.push(Running {
                stage: id.stage,
                task: id.task,
                attempt: id.attempt,
                handle,
            });
        }
        Ok(())
    }

    async fn stop_attempt(
        &self,
        query_id: &str,
        stage: u32,
        task: u32,
        attempt: u32,
    ) -> Result<()> {
        if let Ok(tasks) = self.tasks.lock()
            && let Some(list) = tasks.get(query_id)
        {
            for r in list {
                if (r.stage, r.task, r.attempt) == (stage, task, attempt) {
                    r.handle.abort();
                }
            }
        }
        Ok(())
    }

    async fn cancel(&self, query_id: &str) -> Result<()> {
        if let Ok(mut slots) = self.query_slots.lock() {
            slots.remove(query_id);
        }
        let handles = self
            .tasks
            .lock()
            .map(|mut t| t.remove(query_id).unwrap_or_default())
            .unwrap_or_default();
        for r in &handles {
            r.handle.abort();
        }
        for r in handles {
            let _ = r.handle.await;
        }
        Ok(())
    }
}

/// Aborts the inner task when the outer one is aborted (dropped mid-await).
struct InnerAbort(tokio::task::AbortHandle);

impl Drop for InnerAbort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn send_panic_report(payload: &[u8], env: &WorkerEnv, message: &str) {
    use squall_core::task::{FailureKind, TaskIdentity, TaskReport};
    let Some(id) = TaskIdentity::salvage(payload) else {
        return;
    };
    let report = TaskReport::failed(
        &id,
        FailureKind::Panic,
        format!("worker panicked: {message}"),
        true,
    );
    if let Ok(body) = report.encode() {
        let _ = env.queue.send(&id.reply_to, body).await;
    }
}
