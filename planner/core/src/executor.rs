//! The CPU executor: a tokio runtime of its own for DataFusion's CPU-bound
//! work (planning, and running a task's operators), so that it never runs on
//! the threads that answer HTTP requests, drive a query's coordinator loop
//! or watch a task's stop marker.
//!
//! ```text
//!  control runtime (HTTP API, coordinator loop, stop-marker watch, timers)
//!     │ spawn_cpu(work) ──> CpuTask ── await: the work's output
//!     │                       │ dropped (cancel, stop marker, timeout): the work is aborted
//!     ▼                       ▼
//!  CPU executor "squall-cpu" (one thread per core): operators, planning; every
//!  task yields often (DataFusion's cooperative budget at the leaves, paced
//!  nested-loop joins), so an abort takes effect at once and short queries'
//!  tasks get their turn beside a heavy one's
//! ```
//!
//! This is the dedicated-executor pattern of DataFusion's `thread_pools`
//! example. Its scheduling favours work that arrives over work that only
//! yielded: a task newly started or woken by a finished read runs before
//! the tasks that yielded to let others run, so a short query's tasks get a
//! thread within one time slice (~10 ms) of being ready. The executor is one per process, created on first use and never
//! shut down (its threads end with the process, so a task still inside an
//! operator never holds up an exit). Where it cannot be created the work
//! runs on the caller's runtime, with a warning.
//!
//! What it does not do: stop work by itself. An abort takes effect at the
//! work's next yield; operators that could run long between yields are made
//! to yield (see [`crate::exec::pace_plan`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};

use tokio::runtime::{Handle, Runtime};
use tokio::task::{JoinError, JoinHandle};

static CPU: OnceLock<Option<Runtime>> = OnceLock::new();

/// Blocking threads of each of the process's runtimes (tokio's default is
/// 512). The blocking work here is local file I/O (the embedded exchange
/// and local Parquet, through `object_store`'s `LocalFileSystem`) and
/// spill files: no blocking task waits on another, and more threads than
/// this only add malloc arenas that keep freed memory: measured on
/// `select * from lineitem` at SF1 (6 million rows), the process's peak
/// went from 243-267 MB to 230-236 MB, and through `squall serve` from
/// 288-314 MB to 244 MB, at the same speed.
pub const BLOCKING_THREADS: usize = 2;

/// Stack of every thread of the process's runtimes. SQL nests as deep as
/// its text (`a OR b OR ...` of 5,000 terms is a tree 5,000 levels deep),
/// and the syntax tree is cloned, visited and dropped recursively by code
/// that cannot grow its stack (DataFusion's own walks can); tokio's 2 MiB
/// ended the whole process on a select item of 600 `1 + 1 + ...` terms
/// (debug build). It is reserved, not used: a thread's memory is what it
/// touches.
pub const THREAD_STACK_BYTES: usize = 64 << 20;

/// Threads of the CPU executor: the cores this process may use.
pub fn cpu_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn cpu_handle() -> Option<Handle> {
    CPU.get_or_init(|| {
        match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cpu_threads())
            .thread_name("squall-cpu")
            .thread_stack_size(THREAD_STACK_BYTES)
            .max_blocking_threads(BLOCKING_THREADS)
            // Work arriving from outside (a new task, a read completed on
            // a blocking thread) runs before tasks that only yielded, so
            // short queries' tasks are not kept waiting behind a heavy
            // query's; timers and sockets are looked at every 8 polls.
            .global_queue_interval(1)
            .event_interval(8)
            .enable_all()
            .build()
        {
            Ok(rt) => Some(rt),
            Err(e) => {
                tracing::warn!(%e, "the CPU executor could not start; CPU work runs on the caller's runtime");
                None
            }
        }
    })
    .as_ref()
    .map(|rt| rt.handle().clone())
}

/// Whether the calling thread is one of the CPU executor's.
pub fn on_cpu_executor() -> bool {
    std::thread::current()
        .name()
        .is_some_and(|n| n.starts_with("squall-cpu"))
}

/// Runs `work` on the CPU executor. The returned [`CpuTask`] resolves to its
/// output (or to the [`JoinError`] of a panic); dropping it aborts the work.
pub fn spawn_cpu<F>(work: F) -> CpuTask<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = match cpu_handle() {
        Some(h) => h.spawn(work),
        None => tokio::spawn(work),
    };
    CpuTask { handle }
}

/// Work running on the CPU executor; aborted when dropped.
#[must_use = "dropping a CpuTask aborts its work"]
pub struct CpuTask<T> {
    handle: JoinHandle<T>,
}

impl<T> CpuTask<T> {
    /// Aborts the work now (it stops at its next yield).
    pub fn abort(&self) {
        self.handle.abort();
    }

    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

impl<T> Future for CpuTask<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.handle).poll(cx)
    }
}

impl<T> Drop for CpuTask<T> {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// The message of a panic caught as a [`JoinError`] (or why the work ended).
pub fn join_error_text(e: JoinError) -> String {
    if e.is_cancelled() {
        return "the work was aborted".into();
    }
    match e.try_into_panic() {
        Ok(panic) => panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into()),
        Err(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
