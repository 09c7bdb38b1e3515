//! Broadcast inputs combined into one object: the exchange's second level
//! for replicated reads.
//!
//! A broadcast read replicates the build side of a join to every task of the
//! probe stage: read as it was written, each of `N` probe tasks makes one GET
//! per map object of the build stage, `M x N` in all. At SF1000-like task
//! counts that is most of a query's requests (TPC-H q03 on the scale proxy:
//! 250 orders map objects x 1,002 lineitem scan tasks = 250,500 GETs). So
//! once the build stage is finished, the coordinator reads each map object's
//! bytes once (one GET each, all partitions: their IPC streams are adjacent,
//! and a read decodes concatenated streams) and writes them back to back as
//! ONE object; every probe task then reads that object with one GET:
//! `M + 1 PUT + N` requests.
//!
//! ```text
//!   build stage s2 (M map objects)       coordinator          probe stage s3 (N tasks)
//!   s2/t0/a0 ──┐                                               ┌── task 0: 1 GET
//!   s2/t1/a0 ──┼── M GETs ──> s2/broadcast (1 PUT) ── N GETs ──┼── task 1: 1 GET
//!   ...      ──┘                                               └── ...
//! ```
//!
//! Combined only when it saves requests (`M x N > M + N + 1`), when the
//! objects hold at most `squall.shuffle.combine_max_bytes` (they pass through
//! the coordinator's memory), and never at the cost of the query: a failed
//! combine leaves the probe tasks reading the map objects themselves.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::error::Result;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use squall_core::exchange::broadcast_object_key;
use squall_core::exec::ReadMode;
use squall_core::scan::{Leaf, leaves};
use squall_core::task::{MapOutput, ObjectRange};

use super::coalesce::span;
use super::launch::task_count;
use super::{QueryJob, StageRun};
use crate::backend::Backend;
use crate::profile::QueryProfile;

/// GETs in flight while the coordinator reads a build stage's objects.
const READS_IN_FLIGHT: usize = 32;

/// Tasks that will read stage `si`'s output as a broadcast (0 if none).
fn broadcast_readers(job: &QueryJob, si: usize) -> usize {
    let id = job.staged.stages[si].id;
    job.staged
        .stages
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            leaves(&s.plan).iter().any(|l| {
                matches!(l, Leaf::ShuffleRead(r) if r.stage() == id && r.mode() == ReadMode::Broadcast)
            })
        })
        .map(|(ci, _)| task_count(job, ci))
        .sum()
}

/// For the finished stage `si`: its accepted outputs combined into one
/// object when its broadcast readers would otherwise make more requests;
/// `None` when not worth it, too big, or the combine failed (logged).
pub(super) async fn combine_broadcast(
    job: &QueryJob,
    backend: &Backend,
    runs: &[StageRun],
    si: usize,
    profile: &mut QueryProfile,
) -> Option<ObjectRange> {
    let readers = broadcast_readers(job, si);
    let spans: Vec<ObjectRange> = runs[si]
        .tasks
        .iter()
        .filter_map(|t| t.accepted.as_ref().map(|(_, o, _)| o))
        .filter_map(|o: &MapOutput| span(o, &(0..o.partitions.len())))
        .collect();
    let m = spans.len();
    let bytes: u64 = spans.iter().map(|r| r.len).sum();
    if readers == 0 || m < 2 || m * readers <= m + readers + 1 {
        return None;
    }
    if bytes > job.config.shuffle.combine_max_bytes as u64 {
        tracing::info!(
            stage = job.staged.stages[si].id,
            bytes,
            "broadcast input left uncombined: larger than squall.shuffle.combine_max_bytes"
        );
        return None;
    }
    let stage = job.staged.stages[si].id;
    match write_combined(job, backend, stage, &spans).await {
        Ok(range) => {
            profile.s3_get += m as u64;
            profile.s3_put += 1;
            profile.broadcasts_combined += 1;
            profile.combine_get_requests += m as u64;
            Some(range)
        }
        Err(e) => {
            tracing::warn!(%e, stage, "combining a broadcast input failed; its readers read the map objects");
            None
        }
    }
}

async fn write_combined(
    job: &QueryJob,
    backend: &Backend,
    stage: u32,
    spans: &[ObjectRange],
) -> Result<ObjectRange> {
    let store = Arc::clone(&backend.exchange_store);
    let parts: Vec<Bytes> = futures::stream::iter(spans.iter().cloned())
        .map(|r| {
            let store = Arc::clone(&store);
            async move {
                store
                    .get_range(&Path::from(r.key.as_str()), r.offset..r.offset + r.len)
                    .await
            }
        })
        .buffered(READS_IN_FLIGHT)
        .try_collect()
        .await
        .map_err(datafusion::error::DataFusionError::from)?;
    let key = broadcast_object_key(
        &backend.exchange_prefix,
        job.config.shuffle.prefixes,
        &job.query_id,
        stage,
    );
    let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
    store
        .put(&Path::from(key.as_str()), PutPayload::from_iter(parts))
        .await
        .map_err(datafusion::error::DataFusionError::from)?;
    Ok(ObjectRange {
        key,
        offset: 0,
        len,
        rows: spans.iter().map(|r| r.rows).sum(),
    })
}
