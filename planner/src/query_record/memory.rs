//! [`MemoryQueryStore`]: the [`QueryStore`] of the embedded service. Records
//! and result pages stay in this process (pages as the batches they are, no
//! encoding); a page's [`PageRange::offset`] is its number.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::error::Result;

use super::{PageRange, QueryRecord, QueryStore, ResultIndex};
use crate::error::PlannerError;

/// Queries kept in memory.
#[derive(Default)]
pub struct MemoryQueryStore {
    queries: Mutex<HashMap<String, Held>>,
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
        mut pages: Vec<RecordBatch>,
    ) -> Result<ResultIndex> {
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
        _schema: &SchemaRef,
        page: &PageRange,
    ) -> Result<RecordBatch> {
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
        Ok(())
    }
}
