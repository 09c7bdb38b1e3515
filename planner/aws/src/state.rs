//! Query state in S3: what the API, the coordinator function and the
//! workers of one query tell each other, under `squall.state_location`.
//!
//! ```text
//! {state}/{query}/status.json    QueryRecord: state, times, progress, error, result index
//! {state}/{query}/result.arrow   the result's pages back to back, each a complete Arrow IPC stream
//! {state}/{query}/cancel         exists once a client asked to cancel (written by the API)
//! {state}/{query}/stop           exists once the query has ended: running tasks stop (coordinator)
//! ```
//!
//! ```text
//!  API ──submit──> status.json QUEUED ──invoke──> coordinator function
//!                                                   │ status.json RUNNING (+ progress every squall.state_poll_ms)
//!  API ──DELETE──> cancel ─────(polled)───────────> │ cancels the query
//!                                                   │ stop <─(polled by running workers)
//!                                                   │ result.arrow, then status.json FINISHED / FAILED / CANCELED
//!  API <──status / page── status.json, one ranged GET of result.arrow per page
//! ```
//!
//! `status.json` is written by the API once (QUEUED, or a final state for
//! statements it answers itself) and then only by the coordinator function,
//! so there is one writer at a time and no read-modify-write race. A cancel
//! is a separate object for the same reason: the API never overwrites the
//! coordinator's record. Pages are cut by the coordinator
//! (`squall_planner::paging`) and each is a self-contained IPC stream
//! (schema, dictionaries, one batch), so serving a page is one ranged GET and
//! never loads the whole result. This module does not decide what the API
//! answers; it only stores and reads.

use std::io::Cursor;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::record_batch::RecordBatch;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};
use squall_core::config::SquallConfig;
use squall_core::task::ObjectLocation;
use squall_planner::profile::QueryProfile;
pub use squall_planner::query_record::{ErrorKind, ProgressRecord, QueryFailure, QueryState};

use crate::env::AwsEnv;
use crate::error::AwsError;
use crate::s3::aws_runtime;
use crate::s3::split_s3_url;

/// Byte range and row count of one page in `result.arrow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRange {
    pub offset: u64,
    pub len: u64,
    pub rows: u64,
}

/// Where each page of a finished query's result is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultIndex {
    /// The result's schema: an Arrow IPC stream without batches, base64.
    pub schema: String,
    /// At least one page (an empty result is one empty page).
    pub pages: Vec<PageRange>,
}

impl ResultIndex {
    pub fn decode_schema(&self) -> Result<SchemaRef> {
        let bytes = STANDARD
            .decode(&self.schema)
            .map_err(|e| AwsError::Corrupt {
                what: "result schema",
                message: format!("not base64: {e}"),
            })?;
        Ok(StreamReader::try_new(Cursor::new(bytes), None)?.schema())
    }
}

/// `status.json`: one query as the API reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    pub query_id: String,
    /// The unguessable part of the query's URIs.
    pub slug: String,
    pub sql: String,
    pub state: QueryState,
    /// Milliseconds since the Unix epoch.
    pub submitted_ms: u64,
    #[serde(default)]
    pub started_ms: Option<u64>,
    #[serde(default)]
    pub ended_ms: Option<u64>,
    #[serde(default)]
    pub error: Option<QueryFailure>,
    #[serde(default)]
    pub progress: ProgressRecord,
    #[serde(default)]
    pub rows: u64,
    #[serde(default)]
    pub profile: Option<QueryProfile>,
    /// Set when FINISHED.
    #[serde(default)]
    pub result: Option<ResultIndex>,
    /// Trino's `updateType` of a statement that is not a query (`SET SESSION`).
    #[serde(default)]
    pub update_type: Option<String>,
    /// Session properties the client is asked to set and to clear.
    #[serde(default)]
    pub session_set: Vec<(String, String)>,
    #[serde(default)]
    pub session_clear: Vec<String>,
}

impl QueryRecord {
    /// A query accepted now and not yet started.
    pub fn queued(query_id: &str, slug: &str, sql: &str) -> Self {
        Self {
            query_id: query_id.to_string(),
            slug: slug.to_string(),
            sql: sql.to_string(),
            state: QueryState::Queued,
            submitted_ms: now_ms(),
            started_ms: None,
            ended_ms: None,
            error: None,
            progress: ProgressRecord::default(),
            rows: 0,
            profile: None,
            result: None,
            update_type: None,
            session_set: Vec::new(),
            session_clear: Vec::new(),
        }
    }

    pub fn start(&mut self) {
        self.state = QueryState::Running;
        self.started_ms = Some(now_ms());
    }

    /// Ends the query FAILED or CANCELED (by the error's kind).
    pub fn fail(&mut self, error: QueryFailure) {
        self.state = if error.kind == ErrorKind::Canceled {
            QueryState::Canceled
        } else {
            QueryState::Failed
        };
        self.error = Some(error);
        self.ended_ms = Some(now_ms());
    }

    /// Ends the query FINISHED with its stored result.
    pub fn finish(&mut self, result: ResultIndex) {
        self.state = QueryState::Finished;
        self.rows = result.pages.iter().map(|p| p.rows).sum();
        self.result = Some(result);
        self.ended_ms = Some(now_ms());
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Reads and writes query state under one `s3://bucket/prefix`.
#[derive(Clone)]
pub struct StateStore {
    store: Arc<dyn ObjectStore>,
    /// `s3://bucket` (or any URL `store` is registered under).
    url: String,
    prefix: String,
}

fn store_err(what: &'static str, key: &Path, source: object_store::Error) -> DataFusionError {
    AwsError::Object {
        what,
        location: key.to_string(),
        source,
    }
    .into()
}

impl StateStore {
    /// The state store at `squall.state_location` (`SQUALL_STATE_LOCATION`).
    pub async fn from_env() -> Result<Self> {
        let squall = SquallConfig::from_env()?;
        Self::at(&AwsEnv::load().await, &squall.state_location)
    }

    /// The state store at `location` (`s3://bucket/prefix`).
    pub fn at(env: &AwsEnv, location: &str) -> Result<Self> {
        if location.is_empty() {
            return Err(AwsError::MissingSetting {
                setting: "squall.state_location",
                variable: "SQUALL_STATE_LOCATION",
                why: "the aws backend keeps query state there",
                example: "s3://bucket/state",
            }
            .into());
        }
        let runtime = aws_runtime(env)?;
        let (url, prefix) = split_s3_url(location)?;
        let store = runtime.object_store(ObjectStoreUrl::parse(&url)?)?;
        Ok(Self::new(store, &url, &prefix))
    }

    /// A state store over any object store (tests use a local folder).
    pub fn new(store: Arc<dyn ObjectStore>, url: &str, prefix: &str) -> Self {
        Self {
            store,
            url: url.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        }
    }

    fn key(&self, query_id: &str, name: &str) -> Path {
        Path::from(format!("{}/{query_id}/{name}", self.prefix).trim_start_matches('/'))
    }

    pub async fn write_record(&self, record: &QueryRecord) -> Result<()> {
        let key = self.key(&record.query_id, "status.json");
        let body = serde_json::to_vec(record).map_err(|e| AwsError::Corrupt {
            what: "encoding a query record",
            message: format!("{key}: {e}"),
        })?;
        self.store
            .put(&key, PutPayload::from(body))
            .await
            .map_err(|e| store_err("writing", &key, e))?;
        Ok(())
    }

    /// The query's record, or `None` when there is no such query.
    pub async fn read_record(&self, query_id: &str) -> Result<Option<QueryRecord>> {
        let key = self.key(query_id, "status.json");
        let bytes = match self.store.get(&key).await {
            Ok(r) => r.bytes().await.map_err(|e| store_err("reading", &key, e))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_err("reading", &key, e)),
        };
        let record = serde_json::from_slice(&bytes).map_err(|e| AwsError::Corrupt {
            what: "decoding a query record",
            message: format!("{key}: {e}"),
        })?;
        Ok(Some(record))
    }

    async fn exists(&self, key: &Path) -> Result<bool> {
        match self.store.head(key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_err("looking for", key, e)),
        }
    }

    async fn touch(&self, key: &Path) -> Result<()> {
        self.store
            .put(key, PutPayload::from_static(b""))
            .await
            .map_err(|e| store_err("writing", key, e))?;
        Ok(())
    }

    /// Records a client's request to cancel the query.
    pub async fn request_cancel(&self, query_id: &str) -> Result<()> {
        self.touch(&self.key(query_id, "cancel")).await
    }

    pub async fn cancel_requested(&self, query_id: &str) -> Result<bool> {
        self.exists(&self.key(query_id, "cancel")).await
    }

    /// The object whose existence stops the query's running tasks.
    pub fn stop_marker(&self, query_id: &str) -> ObjectLocation {
        ObjectLocation {
            store_url: self.url.clone(),
            key: self.key(query_id, "stop").to_string(),
        }
    }

    /// Creates the query's stop marker: every task still running stops.
    pub async fn write_stop(&self, query_id: &str) -> Result<()> {
        self.touch(&self.key(query_id, "stop")).await
    }

    /// Stores `pages` (each a complete IPC stream, LZ4-compressed) as the
    /// query's `result.arrow` and returns where each page is.
    pub async fn write_result(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        pages: &[RecordBatch],
    ) -> Result<ResultIndex> {
        let options =
            IpcWriteOptions::default().try_with_compression(Some(CompressionType::LZ4_FRAME))?;
        let stream = |batch: Option<&RecordBatch>| -> Result<Vec<u8>> {
            let mut writer =
                StreamWriter::try_new_with_options(Vec::new(), schema, options.clone())?;
            if let Some(b) = batch.filter(|b| b.num_rows() > 0) {
                writer.write(b)?;
            }
            writer.finish()?;
            Ok(writer.into_inner()?)
        };
        let mut chunks: Vec<Bytes> = Vec::with_capacity(pages.len().max(1));
        let mut ranges = Vec::with_capacity(pages.len().max(1));
        let mut offset = 0u64;
        let empty = [RecordBatch::new_empty(Arc::clone(schema))];
        let pages = if pages.is_empty() { &empty[..] } else { pages };
        for page in pages {
            let bytes = stream(Some(page))?;
            let len = bytes.len() as u64;
            ranges.push(PageRange {
                offset,
                len,
                rows: page.num_rows() as u64,
            });
            offset += len;
            chunks.push(Bytes::from(bytes));
        }
        let key = self.key(query_id, "result.arrow");
        self.store
            .put(&key, PutPayload::from_iter(chunks))
            .await
            .map_err(|e| store_err("writing", &key, e))?;
        Ok(ResultIndex {
            schema: STANDARD.encode(stream(None)?),
            pages: ranges,
        })
    }

    /// One page of a stored result: one ranged GET.
    pub async fn read_page(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        page: &PageRange,
    ) -> Result<RecordBatch> {
        let key = self.key(query_id, "result.arrow");
        let bytes = self
            .store
            .get_range(&key, page.offset..page.offset + page.len)
            .await
            .map_err(|e| store_err("reading", &key, e))?;
        let reader = StreamReader::try_new(Cursor::new(bytes), None)?;
        let mut batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
        if batches.len() > 1 {
            return Ok(concat_batches(schema, &batches)?);
        }
        Ok(batches
            .pop()
            .unwrap_or_else(|| RecordBatch::new_empty(Arc::clone(schema))))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use object_store::memory::InMemory;

    use super::*;

    fn batch(schema: &SchemaRef, from: i64, n: i64) -> RecordBatch {
        RecordBatch::try_new(
            Arc::clone(schema),
            vec![
                Arc::new(Int64Array::from_iter_values(from..from + n)),
                Arc::new(StringArray::from_iter_values(
                    (from..from + n).map(|i| format!("row {i}")),
                )),
            ],
        )
        .unwrap()
    }

    #[tokio::test]
    async fn records_pages_and_markers_round_trip() {
        let state = StateStore::new(Arc::new(InMemory::new()), "memory://", "state/");
        assert_eq!(state.read_record("q1").await.unwrap(), None);

        let mut record = QueryRecord::queued("q1", "slug", "select 1");
        state.write_record(&record).await.unwrap();
        assert_eq!(
            state.read_record("q1").await.unwrap().unwrap().state,
            QueryState::Queued
        );

        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let pages = [batch(&schema, 0, 3), batch(&schema, 3, 1000)];
        let index = state.write_result("q1", &schema, &pages).await.unwrap();
        assert_eq!(index.pages.len(), 2);
        assert_eq!(index.pages[1].offset, index.pages[0].len);
        assert_eq!(*index.decode_schema().unwrap(), *schema);
        let second = state
            .read_page("q1", &schema, &index.pages[1])
            .await
            .unwrap();
        assert_eq!(second, pages[1]);
        record.finish(index);
        assert_eq!(record.rows, 1003);
        state.write_record(&record).await.unwrap();
        let back = state.read_record("q1").await.unwrap().unwrap();
        assert_eq!(back.state, QueryState::Finished);
        assert_eq!(back.result, record.result);

        let empty = state.write_result("q2", &schema, &[]).await.unwrap();
        assert_eq!(empty.pages.len(), 1);
        assert_eq!(empty.pages[0].rows, 0);
        let page = state
            .read_page("q2", &schema, &empty.pages[0])
            .await
            .unwrap();
        assert_eq!((page.num_rows(), page.schema()), (0, Arc::clone(&schema)));

        assert!(!state.cancel_requested("q1").await.unwrap());
        state.request_cancel("q1").await.unwrap();
        assert!(state.cancel_requested("q1").await.unwrap());
        assert_eq!(state.stop_marker("q1").key, "state/q1/stop");
        assert_eq!(state.stop_marker("q1").store_url, "memory://");
    }

    #[test]
    fn a_cancel_ends_a_record_canceled() {
        let mut record = QueryRecord::queued("q", "s", "x");
        record.fail(QueryFailure::canceled());
        assert_eq!(record.state, QueryState::Canceled);
    }
}
