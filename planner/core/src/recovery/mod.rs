//! Recovery at the seams: what keeps a query right, and finishing, when
//! requests fail, answer late or are refused (`squall.store.*`,
//! `squall.task.invoke_*`). The coordinator adds task-level recovery on top
//! (new attempts for failed or silent tasks, speculative duplicates of
//! stragglers; see the planner's coordinator).
//!
//! ```text
//! coordinator / task ──> ResilientStore ──> CountingStore ──> [FaultyStore] ──> backend store (local folder, S3)
//!                          retries with backoff,  every request sent
//!                          hedges slow reads      (crate::requests)
//! coordinator ─────────> RetryingInvoker ──> [FaultyInvoker] ──> backend invoker (tasks, Lambda)
//!                          retries throttled invocations with backoff
//! ```
//!
//! The fault wrappers (in brackets) are there only when `squall.fault.*`
//! asks for faults; the recovery wrappers always are. Both are applied in
//! the same two places for every backend: [`layered_store`] by the
//! coordinator for its exchange store, and [`LayeredRegistry`] by the worker
//! for every store a task opens.
//!
//! - [`backoff`]: exponential backoff with jitter.
//! - [`store`]: [`ResilientStore`]: bounded retries of transient errors, hedged reads.
//! - [`invoker`]: [`RetryingInvoker`]: bounded retries of throttled invocations.
//! - [`registry`]: [`LayeredRegistry`]: the wrappers around every store a task resolves.

pub mod backoff;
pub mod invoker;
pub mod registry;
pub mod store;

use std::sync::Arc;

use object_store::ObjectStore;

pub use backoff::Backoff;
pub use invoker::RetryingInvoker;
pub use registry::LayeredRegistry;
pub use store::{ResilientStore, StorePolicy, StoreStats, is_transient};

use crate::config::SquallConfig;
use crate::fault::FaultyStore;
use crate::requests::CountingStore;

/// `store` with the configured fault injection (if any) under bounded
/// retries and hedged reads, every request sent (retries and hedges
/// included) counted into `stats.requests`. `scope` are the coordinates of
/// the requester, for reproducible fault decisions.
pub fn layered_store(
    store: Arc<dyn ObjectStore>,
    config: &SquallConfig,
    scope: &[u64],
    stats: &Arc<StoreStats>,
) -> Arc<dyn ObjectStore> {
    let faulty = FaultyStore::wrap(store, &config.fault, scope);
    let counted = CountingStore::wrap(faulty, &stats.requests);
    Arc::new(ResilientStore::new(
        counted,
        StorePolicy::from_options(&config.store),
        Arc::clone(stats),
    ))
}
