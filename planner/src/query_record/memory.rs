//! [`MemoryQueryStore`]: the [`QueryStore`] of the embedded service. Records
//! stay in this process. Result pages do too (as the batches they are, no
//! encoding; a page's [`PageRange::offset`] is its number), or, in a store
//! [`MemoryQueryStore::with_result_files`], go to a local file per query as
//! they come (the pages back to back, as [`super::ObjectQueryStore`] lays
//! them out; a page's offset is its first byte), so a result far larger
//! than memory is served a page at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::error::Result;
use futures::TryStreamExt;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use super::object::{read_page_at, write_pages};
use super::{PageRange, QueryRecord, QueryStore, ResultIndex};
use crate::error::PlannerError;

/// Queries kept in memory.
#[derive(Default)]
pub struct MemoryQueryStore {
    queries: Mutex<HashMap<String, Held>>,
    /// Where results go instead of memory: a file store in a directory of
    /// its own, deleted with the store.
    files: Option<(Arc<dyn ObjectStore>, tempfile::TempDir)>,
}

#[derive(Default)]
struct Held {
    record: Option<Arc<QueryRecord>>,
    pages: Vec<RecordBatch>,
    cancel: bool,
}

impl MemoryQueryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Results in files under a new directory inside `parent` (removed when
    /// the store is dropped); records in memory.
    pub fn with_result_files(parent: &std::path::Path) -> Result<Self> {
        let dir = crate::temp_dirs::owned_temp_dir(parent, "squall-results-").map_err(|e| {
            PlannerError::Internal(format!(
                "creating a result directory in {}: {e}",
                parent.display()
            ))
        })?;
        let store = LocalFileSystem::new_with_prefix(dir.path())
            .map_err(|e| PlannerError::Internal(format!("result directory: {e}")))?;
        Ok(Self {
            queries: Mutex::default(),
            files: Some((Arc::new(store.with_automatic_cleanup(true)), dir)),
        })
    }

    fn result_key(query_id: &str) -> Path {
        Path::from(format!("{query_id}/result.arrow"))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Held>> {
        // Plain data: a panic elsewhere while holding the lock leaves nothing half-done.
        self.queries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queries held (with a record, a result or a cancel request).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl QueryStore for MemoryQueryStore {
    async fn write_record(&self, record: &QueryRecord) -> Result<()> {
        let mut queries = self.lock();
        queries.entry(record.query_id.clone()).or_default().record = Some(Arc::new(record.clone()));
        Ok(())
    }

    async fn read_record(&self, query_id: &str) -> Result<Option<QueryRecord>> {
        let queries = self.lock();
        Ok(queries
            .get(query_id)
            .and_then(|h| h.record.as_deref().cloned()))
    }

    async fn request_cancel(&self, query_id: &str) -> Result<()> {
        self.lock().entry(query_id.to_string()).or_default().cancel = true;
        Ok(())
    }

    async fn cancel_requested(&self, query_id: &str) -> Result<bool> {
        Ok(self.lock().get(query_id).is_some_and(|h| h.cancel))
    }

    async fn write_result(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        pages: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<ResultIndex> {
        if let Some((store, _)) = &self.files {
            let key = Self::result_key(query_id);
            let ranges = write_pages(store, &key, schema, pages).await?;
            return ResultIndex::new(schema, ranges);
        }
        let mut pages: Vec<RecordBatch> = pages.try_collect().await?;
        if pages.is_empty() {
            pages.push(RecordBatch::new_empty(Arc::clone(schema)));
        }
        let ranges = pages
            .iter()
            .enumerate()
            .map(|(n, p)| PageRange {
                offset: n as u64,
                len: p.get_array_memory_size() as u64,
                rows: p.num_rows() as u64,
            })
            .collect();
        let index = ResultIndex::new(schema, ranges)?;
        self.lock().entry(query_id.to_string()).or_default().pages = pages;
        Ok(index)
    }

    async fn read_page(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        page: &PageRange,
    ) -> Result<RecordBatch> {
        if let Some((store, _)) = &self.files {
            return read_page_at(store, &Self::result_key(query_id), schema, page).await;
        }
        let queries = self.lock();
        usize::try_from(page.offset)
            .ok()
            .and_then(|n| queries.get(query_id)?.pages.get(n).cloned())
            .ok_or_else(|| {
                PlannerError::Internal(format!(
                    "query {query_id} has no stored page {}",
                    page.offset
                ))
                .into()
            })
    }

    async fn forget(&self, query_id: &str) -> Result<()> {
        self.lock().remove(query_id);
        if let Some((store, _)) = &self.files {
            match store.delete(&Self::result_key(query_id)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => {
                    return Err(PlannerError::Internal(format!(
                        "deleting the result of query {query_id}: {e}"
                    ))
                    .into());
                }
            }
        }
        Ok(())
    }
}
