//! [`ObjectQueryStore`]: the [`QueryStore`] in an object store, under one
//! `url/prefix` (S3's `squall.state_location` for the aws backend): what
//! the API, the coordinator function and the workers of one query tell
//! each other.
//!
//! ```text
//! {prefix}/{query}/status.json    QueryRecord: state, times, progress, error, result index
//! {prefix}/{query}/result.arrow   the result's pages back to back, each a complete Arrow IPC stream
//! {prefix}/{query}/cancel         exists once a client asked to cancel (written by the API)
//! {prefix}/{query}/stop           exists once the query has ended: running tasks stop (coordinator)
//! {prefix}/{query}/stop-s2-t7-a0  exists once another attempt of stage 2's task 7 was accepted
//! {prefix}/{query}/run-g1         exists once a coordinator run claimed generation 1 of the query
//! ```
//!
//! Each page is a self-contained IPC stream (schema, dictionaries, one
//! batch, LZ4), so serving a page is one ranged GET. Requests: a record
//! write is one PUT, a read one GET, a cancel request one PUT and each look
//! for one one HEAD, a result one PUT (pages back to back; a multipart
//! upload of 8 MiB parts once it is larger, written as the pages come) and
//! a page one ranged GET.

use std::io::Cursor;
use std::sync::Arc;

use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use squall_core::requests::{CountingStore, RequestCounter};
use squall_core::task::{ObjectLocation, attempt_stop_key};

use super::{PageRange, QueryRecord, QueryStore, ResultIndex};
use crate::error::PlannerError;

/// Query state under one `url/prefix` of an object store.
#[derive(Clone)]
pub struct ObjectQueryStore {
    store: Arc<dyn ObjectStore>,
    /// `s3://bucket` (or any URL `store` is registered under).
    url: String,
    prefix: String,
}

fn store_err(what: &'static str, key: &Path, source: object_store::Error) -> DataFusionError {
    PlannerError::Object {
        what,
        location: key.to_string(),
        source,
    }
    .into()
}

impl ObjectQueryStore {
    /// The store under `prefix` of `store`, which is registered as `url`.
    pub fn new(store: Arc<dyn ObjectStore>, url: &str, prefix: &str) -> Self {
        Self {
            store,
            url: url.to_string(),
            prefix: prefix.trim_matches('/').to_string(),
        }
    }

    /// The same store, every request it makes counted into `requests`.
    pub fn counting(&self, requests: &Arc<RequestCounter>) -> Self {
        Self {
            store: CountingStore::wrap(Arc::clone(&self.store), requests),
            ..self.clone()
        }
    }

    fn key(&self, query_id: &str, name: &str) -> Path {
        Path::from(format!("{}/{query_id}/{name}", self.prefix).trim_start_matches('/'))
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

    /// Creates `{query}/{name}` unless it exists: `true` for the one caller
    /// that created it, `false` for every later one (a conditional PUT). A
    /// coordinator run that resumes a query claims its generation so, so
    /// that a duplicate invocation of it does not run the query twice.
    pub async fn claim(&self, query_id: &str, name: &str) -> Result<bool> {
        let key = self.key(query_id, name);
        let create = object_store::PutOptions::from(object_store::PutMode::Create);
        match self
            .store
            .put_opts(&key, PutPayload::from_static(b""), create)
            .await
        {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(e) => Err(store_err("claiming", &key, e)),
        }
    }

    /// Creates one attempt's stop marker (another attempt of its task was
    /// accepted): that attempt stops, the query's other tasks go on.
    pub async fn write_attempt_stop(
        &self,
        query_id: &str,
        stage: u32,
        task: u32,
        attempt: u32,
    ) -> Result<()> {
        let marker = self.stop_marker(query_id);
        let key = attempt_stop_key(&marker.key, stage, task, attempt);
        self.touch(&Path::from(key)).await
    }
}

#[async_trait]
impl QueryStore for ObjectQueryStore {
    async fn write_record(&self, record: &QueryRecord) -> Result<()> {
        let key = self.key(&record.query_id, "status.json");
        let body = serde_json::to_vec(record).map_err(|e| PlannerError::Corrupt {
            what: "encoding a query record",
            message: format!("{key}: {e}"),
        })?;
        self.store
            .put(&key, PutPayload::from(body))
            .await
            .map_err(|e| store_err("writing", &key, e))?;
        Ok(())
    }

    async fn read_record(&self, query_id: &str) -> Result<Option<QueryRecord>> {
        let key = self.key(query_id, "status.json");
        let bytes = match self.store.get(&key).await {
            Ok(r) => r.bytes().await.map_err(|e| store_err("reading", &key, e))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(store_err("reading", &key, e)),
        };
        let record = serde_json::from_slice(&bytes).map_err(|e| PlannerError::Corrupt {
            what: "decoding a query record",
            message: format!("{key}: {e}"),
        })?;
        Ok(Some(record))
    }

    async fn request_cancel(&self, query_id: &str) -> Result<()> {
        self.touch(&self.key(query_id, "cancel")).await
    }

    async fn cancel_requested(&self, query_id: &str) -> Result<bool> {
        self.exists(&self.key(query_id, "cancel")).await
    }

    async fn write_result(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        pages: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<ResultIndex> {
        let key = self.key(query_id, "result.arrow");
        let ranges = write_pages(&self.store, &key, schema, pages).await?;
        ResultIndex::new(schema, ranges)
    }

    /// One ranged GET.
    async fn read_page(
        &self,
        query_id: &str,
        schema: &SchemaRef,
        page: &PageRange,
    ) -> Result<RecordBatch> {
        read_page_at(
            &self.store,
            &self.key(query_id, "result.arrow"),
            schema,
            page,
        )
        .await
    }

    /// Deletes every object of the query (record, result, markers).
    async fn forget(&self, query_id: &str) -> Result<()> {
        let folder = Path::from(format!("{}/{query_id}", self.prefix).trim_start_matches('/'));
        let objects: Vec<_> = self
            .store
            .list(Some(&folder))
            .try_collect()
            .await
            .map_err(|e| store_err("listing", &folder, e))?;
        for meta in objects {
            match self.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_err("deleting", &meta.location, e)),
            }
        }
        Ok(())
    }
}

/// Bytes of a result buffered before its object becomes a multipart upload
/// (a smaller result is one PUT), and the size of each part after.
pub(super) const RESULT_PART_BYTES: usize = 8 << 20;

/// Parts of a result upload in flight at once.
const RESULT_PARTS_IN_FLIGHT: usize = 4;

/// Writes `pages` back to back as the object `key`, each a complete IPC
/// stream, as they come: at most [`RESULT_PART_BYTES`] times a few held
/// whatever the result's size. No page: one empty page.
pub(super) async fn write_pages(
    store: &Arc<dyn ObjectStore>,
    key: &Path,
    schema: &SchemaRef,
    mut pages: BoxStream<'static, Result<RecordBatch>>,
) -> Result<Vec<PageRange>> {
    let options =
        IpcWriteOptions::default().try_with_compression(Some(CompressionType::LZ4_FRAME))?;
    let encode = |page: &RecordBatch| -> Result<Bytes> {
        let mut writer = StreamWriter::try_new_with_options(Vec::new(), schema, options.clone())?;
        if page.num_rows() > 0 {
            writer.write(page)?;
        }
        writer.finish()?;
        Ok(Bytes::from(writer.into_inner()?))
    };
    let mut ranges = Vec::new();
    let mut offset = 0u64;
    let mut buffered: Vec<Bytes> = Vec::new();
    let mut buffered_len = 0usize;
    let mut upload: Option<WriteMultipart> = None;
    let outcome: Result<()> = async {
        loop {
            let page = match pages.next().await {
                Some(page) => page?,
                None if ranges.is_empty() => RecordBatch::new_empty(Arc::clone(schema)),
                None => return Ok(()),
            };
            let bytes = encode(&page)?;
            let len = bytes.len() as u64;
            ranges.push(PageRange {
                offset,
                len,
                rows: page.num_rows() as u64,
            });
            offset += len;
            match upload.as_mut() {
                Some(up) => {
                    up.wait_for_capacity(RESULT_PARTS_IN_FLIGHT)
                        .await
                        .map_err(|e| store_err("writing", key, e))?;
                    up.put(bytes);
                }
                None => {
                    buffered_len += bytes.len();
                    buffered.push(bytes);
                    if buffered_len >= RESULT_PART_BYTES {
                        let started = store
                            .put_multipart(key)
                            .await
                            .map_err(|e| store_err("writing", key, e))?;
                        let mut up =
                            WriteMultipart::new_with_chunk_size(started, RESULT_PART_BYTES);
                        for b in buffered.drain(..) {
                            up.put(b);
                        }
                        upload = Some(up);
                    }
                }
            }
        }
    }
    .await;
    match (outcome, upload) {
        (Ok(()), Some(up)) => {
            up.finish()
                .await
                .map_err(|e| store_err("writing", key, e))?;
        }
        (Ok(()), None) => {
            store
                .put(key, PutPayload::from_iter(buffered))
                .await
                .map_err(|e| store_err("writing", key, e))?;
        }
        (Err(e), Some(up)) => {
            if let Err(abort) = up.abort().await {
                tracing::warn!(%abort, %key, "aborting a result upload failed");
            }
            return Err(e);
        }
        (Err(e), None) => return Err(e),
    }
    Ok(ranges)
}

/// Page `page` of the result object `key`: one ranged GET.
pub(super) async fn read_page_at(
    store: &Arc<dyn ObjectStore>,
    key: &Path,
    schema: &SchemaRef,
    page: &PageRange,
) -> Result<RecordBatch> {
    let bytes = store
        .get_range(key, page.offset..page.offset + page.len)
        .await
        .map_err(|e| store_err("reading", key, e))?;
    let reader = StreamReader::try_new(Cursor::new(bytes), None)?;
    let mut batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    if batches.len() > 1 {
        return Ok(concat_batches(schema, &batches)?);
    }
    Ok(batches
        .pop()
        .unwrap_or_else(|| RecordBatch::new_empty(Arc::clone(schema))))
}
