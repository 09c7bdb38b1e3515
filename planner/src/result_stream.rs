//! A query's result as it lies in the store: the final stage's map objects,
//! read batch by batch when the caller asks for the next one, never as a
//! whole.
//!
//! The final stage writes its output like every other stage (each
//! partition one or more Arrow IPC streams, `squall_core::exchange`), and
//! the coordinator keeps those objects when it sweeps the query's others
//! ([`ResultObjects`] owns them from then on). Reading walks the non-empty
//! partitions in task then partition order, fetches each with ranged GETs of
//! at most [`READ_CHUNK`] bytes, cuts the bytes into whole IPC messages
//! (a message's length is in its own header) and decodes one message at a
//! time, so what is held is one chunk and one batch whatever the result's
//! size. The objects are deleted once the last batch has been read, or, for
//! a result dropped before its end, from a task spawned at the drop.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::buffer::Buffer;
use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::StreamDecoder;
use arrow::record_batch::RecordBatch;
use bytes::BytesMut;
use datafusion::error::{DataFusionError, Result};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use squall_core::requests::RequestCounts;
use squall_core::task::MapOutput;

use crate::engine::QueryResult;
use crate::error::PlannerError;
use crate::profile::QueryProfile;

/// The rows of a statement's result, as [`crate::Engine::sql_stream`] hands them out.
#[derive(Debug)]
pub enum ResultBatches {
    /// Made in this process (DDL, `EXPLAIN`, `SET`, ...).
    Memory(Vec<RecordBatch>),
    /// The final stage's objects in the exchange store, read batch by batch
    /// as they are asked for and deleted after the last.
    Objects(ResultObjects),
}

impl ResultBatches {
    /// The batches in order, one at a time.
    pub fn into_stream(self) -> BoxStream<'static, Result<RecordBatch>> {
        match self {
            Self::Memory(batches) => futures::stream::iter(batches.into_iter().map(Ok)).boxed(),
            Self::Objects(objects) => objects.into_stream(),
        }
    }

    /// Every batch, in memory.
    pub async fn collect(self) -> Result<Vec<RecordBatch>> {
        match self {
            Self::Memory(batches) => Ok(batches),
            Self::Objects(objects) => objects.collect().await,
        }
    }

    /// The statement's timeout also bounds the reading of its result: past
    /// `at`, reading fails with the timeout's error (the objects are still
    /// deleted).
    pub fn with_deadline(
        self,
        at: std::time::Instant,
        query_id: &str,
        timeout: std::time::Duration,
    ) -> Self {
        match self {
            Self::Objects(objects) => Self::Objects(objects.with_deadline(at, query_id, timeout)),
            memory => memory,
        }
    }

    /// Drops the rows (deleting the objects that hold them).
    pub async fn discard(self) {
        if let Self::Objects(objects) = self {
            objects.discard().await;
        }
    }
}

/// The result of one statement, its rows still to be read.
#[derive(Debug)]
pub struct StreamedResult {
    pub schema: SchemaRef,
    pub batches: ResultBatches,
    /// Present when the statement ran distributed.
    pub profile: Option<QueryProfile>,
}

impl StreamedResult {
    pub(crate) fn memory(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self {
            schema,
            batches: ResultBatches::Memory(batches),
            profile: None,
        }
    }

    /// The whole result in memory.
    pub async fn collect(self) -> Result<QueryResult> {
        Ok(QueryResult {
            batches: self.batches.collect().await?,
            schema: self.schema,
            profile: self.profile,
        })
    }
}

/// Bytes one ranged GET of a result object asks for.
pub const READ_CHUNK: u64 = 8 << 20;

/// One partition's bytes inside a result object.
#[derive(Debug, Clone)]
struct Segment {
    key: String,
    start: u64,
    end: u64,
}

/// The final stage's objects of a finished query, owned by its result.
pub struct ResultObjects {
    store: Arc<dyn ObjectStore>,
    schema: SchemaRef,
    segments: VecDeque<Segment>,
    /// Every object to delete once the result is read (or dropped).
    keys: Vec<String>,
    rows: u64,
    chunk: u64,
    /// The final stage's writers split fixed-width columns into byte planes
    /// (`squall_core::exchange::byte_split`).
    byte_split: bool,
    /// When reading must have ended: the statement's timeout covers the
    /// reading of its result (query id and timeout, for its error).
    deadline: Option<(std::time::Instant, String, std::time::Duration)>,
}

impl std::fmt::Debug for ResultObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultObjects")
            .field("objects", &self.keys.len())
            .field("segments", &self.segments.len())
            .field("rows", &self.rows)
            .finish()
    }
}

impl ResultObjects {
    /// The result held in `outputs` (the accepted attempts of the final
    /// stage's tasks, in task order) of `store`.
    pub fn new(store: Arc<dyn ObjectStore>, schema: SchemaRef, outputs: &[MapOutput]) -> Self {
        let mut segments = VecDeque::new();
        let mut rows = 0;
        for out in outputs {
            for p in out.partitions.iter().filter(|p| p.len > 0) {
                rows += p.rows;
                segments.push_back(Segment {
                    key: out.key.clone(),
                    start: p.offset,
                    end: p.offset + p.len,
                });
            }
        }
        Self {
            store,
            schema,
            segments,
            keys: outputs.iter().map(|o| o.key.clone()).collect(),
            rows,
            chunk: READ_CHUNK,
            byte_split: false,
            deadline: None,
        }
    }

    /// The objects' fixed-width columns are split into byte planes (the
    /// query's `squall_core::exchange::byte_split`): join them back.
    pub fn with_byte_split(mut self, on: bool) -> Self {
        self.byte_split = on;
        self
    }

    /// Fails the reading with query `query_id`'s timeout error once `at`
    /// has passed.
    pub fn with_deadline(
        mut self,
        at: std::time::Instant,
        query_id: &str,
        timeout: std::time::Duration,
    ) -> Self {
        self.deadline = Some((at, query_id.to_string(), timeout));
        self
    }

    /// Reads at most `chunk` bytes per GET (tests cut messages across reads).
    pub fn with_chunk(mut self, chunk: u64) -> Self {
        self.chunk = chunk.max(1);
        self
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The objects the result owns.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The requests reading the whole result and deleting its objects
    /// takes: a ranged GET per [`READ_CHUNK`] of every non-empty partition,
    /// a DELETE per object (counted in the query's profile, which ends
    /// before the result is read).
    pub fn requests(&self) -> RequestCounts {
        let get = self
            .segments
            .iter()
            .map(|s| (s.end - s.start).div_ceil(self.chunk))
            .sum();
        RequestCounts {
            get,
            delete: self.keys.len() as u64,
            ..RequestCounts::default()
        }
    }

    /// Rows of the whole result, as the tasks reported them.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The result's batches in order; the objects are deleted after the last.
    pub fn into_stream(mut self) -> BoxStream<'static, Result<RecordBatch>> {
        let deadline = self.deadline.take();
        let reading = match Reading::new(self) {
            Ok(reading) => reading,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        futures::stream::try_unfold(reading, move |mut reading| {
            let late = deadline
                .as_ref()
                .filter(|(at, ..)| std::time::Instant::now() > *at)
                .map(|(_, id, timeout)| crate::limits::timeout_error(id, *timeout));
            async move {
                if let Some(e) = late {
                    return Err(e);
                }
                Ok(reading.next().await?.map(|batch| (batch, reading)))
            }
        })
        .boxed()
    }

    /// Every batch, in memory (what a caller that needs them all does).
    pub async fn collect(self) -> Result<Vec<RecordBatch>> {
        self.into_stream().try_collect().await
    }

    /// Deletes the objects without reading them.
    pub async fn discard(mut self) {
        let keys = std::mem::take(&mut self.keys);
        delete(&self.store, keys).await;
    }
}

impl Drop for ResultObjects {
    fn drop(&mut self) {
        let keys = std::mem::take(&mut self.keys);
        if keys.is_empty() {
            return;
        }
        let store = Arc::clone(&self.store);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move { delete(&store, keys).await });
            }
            Err(_) => tracing::warn!(
                objects = keys.len(),
                "a result dropped outside a runtime leaves its objects behind"
            ),
        }
    }
}

async fn delete(store: &Arc<dyn ObjectStore>, keys: Vec<String>) {
    let locations = futures::stream::iter(keys.into_iter().map(|k| Ok(Path::from(k)))).boxed();
    let deleted: Vec<_> = store.delete_stream(locations).collect().await;
    for r in deleted {
        match r {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => tracing::warn!(%e, "deleting a result object failed"),
        }
    }
}

/// Where reading is: the segment being read, its unread bytes, the IPC
/// stream being decoded.
struct Reading {
    objects: ResultObjects,
    current: Option<SegmentRead>,
    /// The schema message each partition's stream is read after (map
    /// objects leave it out: `squall_core::exchange::stream_header`).
    header: Buffer,
}

struct SegmentRead {
    segment: Segment,
    /// The next byte of the segment to fetch.
    next: u64,
    /// Fetched, not yet decoded.
    pending: BytesMut,
    decoder: StreamDecoder,
    /// Decoded, not yet returned.
    ready: VecDeque<RecordBatch>,
}

impl SegmentRead {
    /// Decodes all of `bytes`, keeping the batches they complete.
    fn decode(&mut self, bytes: &mut Buffer) -> Result<()> {
        while !bytes.is_empty() {
            if let Some(batch) = self.decoder.decode(bytes)? {
                self.ready.push_back(batch);
            }
        }
        Ok(())
    }
}

/// What the front of a partition's bytes holds.
#[derive(Debug, PartialEq, Eq)]
enum Frame {
    /// A whole message of this many bytes (header, metadata, body).
    Message(usize),
    /// An end-of-stream marker of this many bytes; another stream may follow.
    End(usize),
    /// Not all of it yet.
    Incomplete,
}

/// The IPC encapsulated message format: an optional continuation marker
/// (0xFFFFFFFF), the metadata's length (little-endian i32; 0 ends the
/// stream), the metadata (a flatbuffer `Message` naming the body's length),
/// then the body.
fn frame(bytes: &[u8]) -> std::result::Result<Frame, String> {
    const CONTINUATION: [u8; 4] = [0xff; 4];
    if bytes.len() < 4 {
        return Ok(Frame::Incomplete);
    }
    let (prefix, size) = if bytes[..4] == CONTINUATION {
        if bytes.len() < 8 {
            return Ok(Frame::Incomplete);
        }
        (
            8,
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        )
    } else {
        (
            4,
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        )
    };
    if size == 0 {
        return Ok(Frame::End(prefix));
    }
    let size = size as usize;
    if size > i32::MAX as usize {
        return Err(format!("message metadata of {size} bytes"));
    }
    if bytes.len() < prefix + size {
        return Ok(Frame::Incomplete);
    }
    let message = arrow::ipc::root_as_message(&bytes[prefix..prefix + size])
        .map_err(|e| format!("unreadable message metadata: {e}"))?;
    let body = usize::try_from(message.bodyLength())
        .map_err(|_| format!("negative body length {}", message.bodyLength()))?;
    let total = prefix + size + body;
    Ok(if bytes.len() < total {
        Frame::Incomplete
    } else {
        Frame::Message(total)
    })
}

/// A decoder for a partition's next stream, its schema message (`header`) read.
fn stream_decoder(header: &Buffer) -> Result<StreamDecoder> {
    let mut decoder = StreamDecoder::new();
    let mut header = header.clone();
    while !header.is_empty() {
        decoder.decode(&mut header)?;
    }
    Ok(decoder)
}

impl Reading {
    fn new(objects: ResultObjects) -> Result<Self> {
        let header = squall_core::exchange::stream_header(&objects.schema)?;
        Ok(Self {
            objects,
            current: None,
            header: Buffer::from(header),
        })
    }

    fn corrupt(segment: &Segment, message: String) -> DataFusionError {
        PlannerError::Corrupt {
            what: "result object",
            message: format!(
                "{} bytes {}..{}: {message}",
                segment.key, segment.start, segment.end
            ),
        }
        .into()
    }

    async fn next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(batch) = self.current.as_mut().and_then(|r| r.ready.pop_front()) {
                return Ok(Some(if self.objects.byte_split {
                    squall_core::exchange::join_batch(&batch)?
                } else {
                    batch
                }));
            }
            let Some(read) = self.current.as_mut() else {
                match self.objects.segments.pop_front() {
                    Some(segment) => {
                        let decoder = stream_decoder(&self.header)?;
                        self.current = Some(SegmentRead {
                            next: segment.start,
                            segment,
                            pending: BytesMut::new(),
                            decoder,
                            ready: VecDeque::new(),
                        });
                        continue;
                    }
                    None => {
                        let keys = std::mem::take(&mut self.objects.keys);
                        delete(&self.objects.store, keys).await;
                        return Ok(None);
                    }
                }
            };
            match frame(&read.pending).map_err(|m| Self::corrupt(&read.segment, m))? {
                // The decoder finishes a message without a body (a batch of
                // only NULL-typed columns) once it is given the bytes after
                // it (the next message's, or the end marker's): a call can
                // give a batch and leave bytes to decode, which give the next.
                Frame::End(n) => {
                    let mut end = Buffer::from(read.pending.split_to(n).freeze());
                    read.decode(&mut end)?;
                    read.decoder
                        .finish()
                        .map_err(|e| Self::corrupt(&read.segment, e.to_string()))?;
                    read.decoder = stream_decoder(&self.header)?;
                }
                Frame::Message(n) => {
                    let mut message = Buffer::from(read.pending.split_to(n).freeze());
                    read.decode(&mut message)?;
                }
                Frame::Incomplete if read.next >= read.segment.end => {
                    if !read.pending.is_empty() {
                        return Err(Self::corrupt(
                            &read.segment,
                            format!("ends inside a message ({} bytes left)", read.pending.len()),
                        ));
                    }
                    self.current = None;
                }
                Frame::Incomplete => {
                    let end = read.segment.end.min(read.next + self.objects.chunk);
                    let location = Path::from(read.segment.key.as_str());
                    let bytes = self
                        .objects
                        .store
                        .get_range(&location, read.next..end)
                        .await
                        .map_err(|source| {
                            DataFusionError::from(PlannerError::Object {
                                what: "reading result object",
                                location: read.segment.key.clone(),
                                source,
                            })
                        })?;
                    if bytes.is_empty() {
                        return Err(Self::corrupt(
                            &read.segment,
                            format!("no bytes at {}", read.next),
                        ));
                    }
                    read.next += bytes.len() as u64;
                    read.pending.extend_from_slice(&bytes);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "result_stream_tests.rs"]
mod tests;
