//! What this worker process is running: a process-wide count of running
//! tasks per query, kept by the worker itself ([`crate::worker::handle_task`]
//! holds a [`RunningTask`] while a task runs, however the task ends — done,
//! failed, stopped by a marker or aborted by its invoker).
//!
//! It is the worker's own record, independent of the invoker's and the
//! coordinator's bookkeeping, so a test (or an operator) can check that a
//! cancelled or timed-out query really has no task left running here.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

fn running() -> &'static Mutex<HashMap<String, usize>> {
    static RUNNING: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// Marks one task of a query as running in this process until dropped.
#[derive(Debug)]
pub struct RunningTask {
    query_id: String,
}

impl RunningTask {
    pub fn start(query_id: &str) -> Self {
        let mut map = running().lock().unwrap_or_else(|p| p.into_inner());
        *map.entry(query_id.to_string()).or_default() += 1;
        Self {
            query_id: query_id.to_string(),
        }
    }
}

impl Drop for RunningTask {
    fn drop(&mut self) {
        let mut map = running().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.query_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.query_id);
            }
        }
    }
}

/// Tasks of `query_id` running in this process now.
pub fn running_tasks(query_id: &str) -> usize {
    running()
        .lock()
        .map(|m| m.get(query_id).copied().unwrap_or(0))
        .unwrap_or(0)
}

/// Tasks of every query running in this process now.
pub fn all_running_tasks() -> usize {
    running().lock().map(|m| m.values().sum()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_guards() {
        let a = RunningTask::start("qa1");
        let b = RunningTask::start("qa1");
        let c = RunningTask::start("qa2");
        assert_eq!(running_tasks("qa1"), 2);
        drop(a);
        assert_eq!(running_tasks("qa1"), 1);
        drop((b, c));
        assert_eq!(running_tasks("qa1"), 0);
        assert_eq!(running_tasks("qa2"), 0);
    }
}
