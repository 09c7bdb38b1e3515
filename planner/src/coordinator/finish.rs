//! The end of a query: deleting every exchange object but the result's
//! ([`crate::result_stream`]) and the completion queue, however the query ended.
//!
//! Cleanup lists `{prefix}/{shard}/{query}/` for every shard a stage of the
//! query wrote to (`squall_core::exchange::stage_shards`: one LIST for a
//! one-task stage, at most `squall.shuffle.prefixes` for the query), all
//! at once, and deletes what they list in batches (S3's DeleteObjects
//! takes 1,000 keys a request).

use std::collections::HashSet;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::ObjectStore;
use object_store::path::Path;
use squall_core::exchange::{query_prefix, stage_shards};

use squall_core::requests::RequestCounter;

use super::QueryJob;
use super::launch::task_count;
use crate::backend::Backend;
use crate::profile::QueryRequests;
use crate::stages::TaskLayout;

/// Which shards a sweep lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shards {
    /// Those the query's stages, as planned, wrote to.
    Used,
    /// All of them: the query ran under another plan (a resume refused
    /// because its data or settings changed), whose tasks may have written
    /// to shards this plan does not name.
    Every,
}

/// The prefixes holding every exchange object of `job`: one per shard its
/// stages' tasks wrote to.
pub(super) fn exchange_prefixes(job: &QueryJob, backend: &Backend, which: Shards) -> Vec<Path> {
    if which == Shards::Every {
        return (0..squall_core::exchange::MAX_SHARDS)
            .map(|shard| Path::from(query_prefix(&backend.exchange_prefix, shard, &job.query_id)))
            .collect();
    }
    let shards = job.config.shuffle.prefixes;
    let mut used = std::collections::BTreeSet::new();
    for (i, stage) in job.staged.stages.iter().enumerate() {
        let tasks = match stage.layout {
            // Its grid is formed at launch and may have more cells than
            // partitions: every shard.
            TaskLayout::Combine { .. } => u32::MAX,
            _ => u32::try_from(task_count(job, i)).unwrap_or(u32::MAX),
        };
        used.extend(stage_shards(&job.query_id, stage.id, tasks, shards));
    }
    used.into_iter()
        .map(|shard| Path::from(query_prefix(&backend.exchange_prefix, shard, &job.query_id)))
        .collect()
}

/// Delete every exchange object of the query but those in `keep` (the
/// result's, which its reader deletes), and its queue. Errors are logged,
/// never returned: cleanup must not hide the query's own outcome.
pub(super) async fn cleanup(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    keep: &HashSet<String>,
    which: Shards,
) {
    let query_id = job.query_id.as_str();
    let store = Arc::clone(&backend.exchange_store);
    let prefixes = exchange_prefixes(job, backend, which);
    let listers = prefixes.len().max(1);
    let locations = futures::stream::iter(prefixes)
        .map(move |prefix| store.list(Some(&prefix)))
        .flatten_unordered(listers)
        .map_ok(|m| m.location)
        .try_filter({
            let keep = Arc::new(keep.clone());
            move |location| std::future::ready(!keep.contains(location.as_ref()))
        })
        .boxed();
    let deleted: Vec<_> = backend
        .exchange_store
        .delete_stream(locations)
        .collect()
        .await;
    for r in deleted {
        if let Err(e) = r {
            tracing::warn!(%e, query_id, "deleting exchange object failed");
        }
    }
    if let Err(e) = backend.queue.delete(address).await {
        tracing::warn!(%e, query_id, "deleting completion queue failed");
    }
}

/// Stop whatever of the query still runs, then [`cleanup`]; when tasks may
/// have been stopped mid-write (`swept_again`: the query failed, was
/// abandoned, or left silent attempts) sweep once more after a pause: a
/// stopped task may still finish a write it had started (a blocking file
/// write or an S3 PUT in flight is not interrupted), and a task told by a
/// stop marker stops only at its next look.
pub(super) async fn stop_and_cleanup(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    keep: &HashSet<String>,
    swept_again: bool,
    which: Shards,
) {
    if let Err(e) = backend.invoker.cancel(&job.query_id).await {
        tracing::warn!(%e, query_id = %job.query_id, "stopping tasks failed");
    }
    cleanup(job, backend, address, keep, which).await;
    if swept_again {
        let marker_poll = match backend.invoker.stop_marker(&job.query_id) {
            Some(_) => std::time::Duration::from_millis(job.config.task.stop_poll_ms),
            None => std::time::Duration::ZERO,
        };
        tokio::time::sleep(std::time::Duration::from_millis(500) + marker_poll).await;
        cleanup(job, backend, address, keep, which).await;
    }
}

/// The requests of `job` that planning and the coordinator made (the
/// coordinator's are in `coordinator`, its queue's and invoker's are taken
/// from them; the tasks' come from their reports). Call once, at the end.
pub(super) fn query_requests(
    job: &QueryJob,
    backend: &Backend,
    address: &str,
    coordinator: &RequestCounter,
) -> QueryRequests {
    QueryRequests {
        planning: job.planning_requests,
        coordinator: coordinator.snapshot()
            + backend.queue.take_requests(address)
            + backend.invoker.take_requests(&job.query_id),
        stop_markers: backend.invoker.stop_marker(&job.query_id).is_some(),
        ..QueryRequests::default()
    }
}
