//! The end of a query: reading the final stage's outputs, and deleting
//! every exchange object and the completion queue however the query ended.

use crate::error::PlannerError;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use squall_core::exchange::{decode_partition, query_prefix};
use squall_core::task::MapOutput;

use crate::backend::Backend;

/// Read every partition of the final stage's outputs, in task then partition order.
pub(super) async fn read_outputs(
    backend: &Backend,
    outputs: &[MapOutput],
) -> Result<Vec<RecordBatch>> {
    let mut batches = Vec::new();
    for out in outputs {
        if out.partitions.iter().all(|p| p.len == 0) {
            continue;
        }
        let unreadable = |source| {
            DataFusionError::from(PlannerError::Object {
                what: "reading result object",
                location: out.key.clone(),
                source,
            })
        };
        let bytes = backend
            .exchange_store
            .get(&Path::from(out.key.as_str()))
            .await
            .map_err(unreadable)?
            .bytes()
            .await
            .map_err(unreadable)?;
        for p in &out.partitions {
            if p.len == 0 {
                continue;
            }
            let slice = bytes.slice(p.offset as usize..(p.offset + p.len) as usize);
            batches.extend(decode_partition(slice)?);
        }
    }
    Ok(batches)
}

/// Delete every exchange object of the query and its queue. Errors are
/// logged, never returned: cleanup must not hide the query's own outcome.
pub async fn cleanup(query_id: &str, backend: &Backend, address: &str) {
    let prefix = Path::from(query_prefix(&backend.exchange_prefix, query_id));
    let store = Arc::clone(&backend.exchange_store);
    let locations = store.list(Some(&prefix)).map_ok(|m| m.location).boxed();
    let deleted: Vec<_> = store.delete_stream(locations).collect().await;
    for r in deleted {
        if let Err(e) = r {
            tracing::warn!(%e, query_id, "deleting exchange object failed");
        }
    }
    if let Err(e) = backend.queue.delete(address).await {
        tracing::warn!(%e, query_id, "deleting completion queue failed");
    }
}
