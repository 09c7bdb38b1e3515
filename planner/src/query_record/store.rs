//! [`QueryStore`]: where a service keeps its queries' records and results.
//! The embedded service keeps them in memory ([`super::MemoryQueryStore`]),
//! the aws one in S3 ([`super::ObjectQueryStore`]); the HTTP API, the
//! coordinator function and the tests talk to either through this trait.
//!
//! A record has one writer at a time (the service until the query starts,
//! then whoever runs it), so a write replaces the record whole and there is
//! no read-modify-write here. A cancel request is kept apart from the
//! record for the same reason: whoever asks never overwrites the runner's
//! record. Results are written once, as pages, and read back one page at a
//! time, so serving a page never loads the whole result.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::error::Result;
use futures::stream::BoxStream;

use super::{PageRange, QueryRecord, ResultIndex};

/// Records, results and cancel requests of queries, by query id.
#[async_trait]
pub trait QueryStore: Send + Sync {
    /// Writes (replaces) the query's record.
    async fn write_record(&self, record: &QueryRecord) -> Result<()>;

    /// The query's record, or `None` when there is no such query.
    async fn read_record(&self, query_id: &str) -> Result<Option<QueryRecord>>;

    /// Records a client's request to cancel the query.
    async fn request_cancel(&self, query_id: &str) -> Result<()>;

    /// Whether a cancel of the query was requested.
    async fn cancel_requested(&self, query_id: &str) -> Result<bool>;

    /// Stores `pages` as the query's result (no pages: one empty page), as
    /// they come, and returns where each page is.
    async fn write_result(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        pages: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<ResultIndex>;

    /// One page of a stored result.
    async fn read_page(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        page: &PageRange,
    ) -> Result<RecordBatch>;

    /// Forgets the query: its record, result and cancel request.
    async fn forget(&self, query_id: &str) -> Result<()>;
}
