//! The combine task of a two-level exchange, at the byte level.
//!
//! A combine task reads one range of partitions from each map object of its
//! group and writes one object holding those partitions. Since each
//! partition of a map object is a run of IPC streams (each ended by its
//! end-of-stream marker; the reader supplies their schema message), the
//! task need not decode and re-hash the rows (which would route every row to
//! the partition it came from anyway): it fetches each range with one GET,
//! cuts it at the partition boundaries its binding's [`RangeLayout`] gives,
//! and writes partition after partition the pieces of every object, so each
//! partition of the new object is again a run of IPC streams
//! (`decode_partition` reads runs of streams). The pieces are slices of the
//! fetched bytes: the task holds what it fetched, no more, and reserves it in
//! the memory pool.

use std::sync::Arc;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::object_store::ObjectStoreUrl;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::ObjectStoreExt;
use object_store::path::Path;

use super::upload::Piece;
use crate::exec::fetches_in_flight;
use crate::task::{InputBinding, ObjectRange, PartitionRange, RangeLayout};

/// What a regrouped object is made of.
pub struct Regrouped {
    /// The object's pieces, in order.
    pub pieces: Vec<Piece>,
    /// Each of the `partitions` output partitions' range in it.
    pub partitions: Vec<PartitionRange>,
    pub rows: u64,
    /// The fetched bytes' reservation (the pieces are slices of them).
    pub reservation: Option<MemoryReservation>,
}

/// Whether `binding` asks for a byte-level regroup into `partitions` partitions.
pub fn applies(binding: &InputBinding, partitions: usize) -> bool {
    !binding.layout.is_empty()
        && binding.partitions.len() == 1
        && binding.partitions[0].len() == binding.layout.len()
        && binding.layout.iter().all(|l| {
            (l.first as usize).saturating_add(l.lens.len()) <= partitions
                && l.lens.len() == l.rows.len()
        })
}

/// Fetch the ranges of `binding` (one GET each, `fetch_concurrency` at a
/// time, more when they are small: [`fetches_in_flight`]) and regroup them
/// by partition.
pub async fn fetch_and_regroup(
    binding: &InputBinding,
    partitions: usize,
    ctx: &Arc<TaskContext>,
    key: &str,
    fetch_concurrency: usize,
    fetch_budget_bytes: usize,
) -> Result<(Regrouped, usize)> {
    let store = ctx
        .runtime_env()
        .object_store(ObjectStoreUrl::parse(&binding.store_url)?)?;
    let ranges = &binding.partitions[0];
    let total: u64 = ranges.iter().map(|r| r.len).sum();
    let reservation =
        MemoryConsumer::new(format!("ShuffleWriteExec[{key}] combine")).register(ctx.memory_pool());
    reservation.try_grow(total as usize)?;
    // Owned futures (no borrowing closure), so the task's future stays Send.
    let gets: Vec<BoxFuture<'static, Result<Bytes>>> = ranges
        .iter()
        .map(|r| {
            let (store, r) = (Arc::clone(&store), r.clone());
            async move {
                store
                    .get_range(&Path::from(r.key.as_str()), r.offset..r.offset + r.len)
                    .await
                    .map_err(|e| {
                        DataFusionError::External(
                            format!(
                                "combine task reading {} at {}+{}: {e}",
                                r.key, r.offset, r.len
                            )
                            .into(),
                        )
                    })
            }
            .boxed()
        })
        .collect();
    let fetched: Vec<Bytes> = futures::stream::iter(gets)
        .buffered(fetches_in_flight(
            ranges,
            fetch_concurrency,
            fetch_budget_bytes,
            1,
        ))
        .try_collect()
        .await?;
    let mut regrouped = regroup(ranges, &binding.layout, fetched, partitions)?;
    regrouped.reservation = Some(reservation);
    Ok((regrouped, ranges.len()))
}

/// Cut each fetched range at its partition boundaries and lay the pieces out
/// partition by partition (objects in binding order within a partition).
pub fn regroup(
    ranges: &[ObjectRange],
    layouts: &[RangeLayout],
    fetched: Vec<Bytes>,
    partitions: usize,
) -> Result<Regrouped> {
    // Per output partition: its pieces, in object order.
    let mut by_partition: Vec<Vec<Bytes>> = vec![Vec::new(); partitions];
    let mut rows_of = vec![0u64; partitions];
    for ((range, layout), bytes) in ranges.iter().zip(layouts).zip(fetched) {
        let sum: u64 = layout.lens.iter().sum();
        if sum != range.len || bytes.len() as u64 != range.len {
            return Err(DataFusionError::Internal(format!(
                "combine task: {} at {}+{} holds {} bytes of partitions, {} fetched",
                range.key,
                range.offset,
                range.len,
                sum,
                bytes.len()
            )));
        }
        let mut at = 0usize;
        for (i, (&len, &rows)) in layout.lens.iter().zip(&layout.rows).enumerate() {
            let p = layout.first as usize + i;
            if len > 0 {
                by_partition[p].push(bytes.slice(at..at + len as usize));
            }
            rows_of[p] += rows;
            at += len as usize;
        }
    }
    let mut pieces = Vec::new();
    let mut out = Vec::with_capacity(partitions);
    let mut offset = 0u64;
    for (p, parts) in by_partition.into_iter().enumerate() {
        let len: u64 = parts.iter().map(|b| b.len() as u64).sum();
        out.push(PartitionRange {
            offset,
            len,
            rows: rows_of[p],
        });
        offset += len;
        pieces.extend(parts.into_iter().map(Piece::Memory));
    }
    Ok(Regrouped {
        pieces,
        partitions: out,
        rows: rows_of.iter().sum(),
        reservation: None,
    })
}

#[cfg(test)]
#[path = "regroup_tests.rs"]
mod tests;
