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

/// The prefixes holding every exchange object of `job`: one per shard its
/// stages' tasks wrote to.
pub(super) fn exchange_prefixes(job: &QueryJob, backend: &Backend) -> Vec<Path> {
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
pub async fn cleanup(job: &QueryJob, backend: &Backend, address: &str, keep: &HashSet<String>) {
    let query_id = job.query_id.as_str();
    let store = Arc::clone(&backend.exchange_store);
    let prefixes = exchange_prefixes(job, backend);
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
