//! Writing one exchange object from its pieces: ranges of a local spill
//! file and bytes in memory, in the object's order.
//!
//! An object held wholly in memory goes in one PUT (up to S3's 5 GiB limit
//! for one): it is in memory already, and requests, not bytes, set the price
//! of an exchange. One that spilled goes as a multipart upload: the pieces
//! are cut into parts of exactly `part_bytes` (the last one shorter),
//! spilled ranges read back from the file one part's worth at a time, with
//! at most `concurrency` parts in flight, so the upload holds at most
//! `concurrency + 1` parts read back from the file besides the tails it was
//! given. The writer reserves those part buffers in the memory pool first
//! ([`reserve_parts`]), with fewer parts in flight when the pool has less
//! room (one at least: at worst one part's buffers go over the limit).
//! Requests are counted as S3 bills them: CreateMultipartUpload, each
//! UploadPart and CompleteMultipartUpload. On any error the parts in flight
//! are dropped and the upload is aborted (S3 keeps the parts of an upload
//! neither completed nor aborted; the exchange bucket's lifecycle rule
//! removes those after a day).
//!
//! The upload drives `object_store`'s `MultipartUpload` itself rather than
//! through `WriteMultipart`, which neither reports its part count nor
//! aborts when a part fails while it finishes.
//!
//! What it does not do: retry a failed part (the S3 client retries each
//! request; a task that still fails is retried by the coordinator as a new
//! attempt, under a key of its own).

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::execution::SpillFile;
use datafusion::execution::memory_pool::MemoryReservation;
use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStore, ObjectStoreExt, PutPayload, PutPayloadMut};
use tokio::task::JoinSet;

use crate::error::SquallError;

/// S3's smallest part (all parts but the last).
pub const MIN_PART_BYTES: usize = 5 * 1024 * 1024;

/// S3's largest single PUT.
pub const MAX_PUT_BYTES: u64 = 5 * 1024 * 1024 * 1024;

/// A range of the spill file holding part of one partition's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub offset: u64,
    pub len: u64,
}

/// One piece of an object.
#[derive(Debug, Clone)]
pub enum Piece {
    Spilled(Segment),
    Memory(Bytes),
}

/// An object's bytes, in order.
pub struct ObjectBytes {
    pieces: Vec<Piece>,
    /// The file the spilled pieces are in (kept until they are uploaded).
    spill: Option<Arc<dyn SpillFile>>,
    len: u64,
}

impl ObjectBytes {
    pub fn new(spill: Option<Arc<dyn SpillFile>>) -> Self {
        Self {
            pieces: Vec::new(),
            spill,
            len: 0,
        }
    }

    pub fn push(&mut self, piece: Piece) {
        self.len += match &piece {
            Piece::Spilled(s) => s.len,
            Piece::Memory(b) => b.len() as u64,
        };
        self.pieces.push(piece);
    }

    /// Bytes of the object.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// No pieces at all (then there is nothing to write).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Some of the object is in the spill file.
    pub fn spilled(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Spilled(_)))
    }
}

/// When to upload in parts, and the part size and parallelism then.
#[derive(Debug, Clone, Copy)]
pub struct UploadOptions {
    /// An object in memory up to this size goes in one PUT.
    pub max_put_bytes: u64,
    pub part_bytes: usize,
    pub concurrency: usize,
}

/// Reserve the part buffers of a multipart upload of up to `wanted` parts
/// in flight (each holding `part_bytes`, plus the one being read back) in
/// `reservation`; returns how many parts may be in flight: the most the
/// pool has room for, and 1 when it has room for none.
pub fn reserve_parts(
    reservation: &mut MemoryReservation,
    part_bytes: usize,
    wanted: usize,
) -> usize {
    for c in (1..=wanted.max(1)).rev() {
        if reservation.try_grow((c + 1) * part_bytes).is_ok() {
            return c;
        }
    }
    tracing::warn!(
        part_bytes,
        "no memory for an upload's part buffers: uploading one part at a time, unreserved"
    );
    1
}

/// Write `object` at `location`; returns the requests it took.
pub async fn upload(
    store: &Arc<dyn ObjectStore>,
    location: &Path,
    object: ObjectBytes,
    options: UploadOptions,
) -> Result<u64, SquallError> {
    let options = UploadOptions {
        part_bytes: options.part_bytes.max(1),
        concurrency: options.concurrency.max(1),
        ..options
    };
    if !object.spilled() && object.len() <= options.max_put_bytes {
        let payload: PutPayload = object
            .pieces
            .into_iter()
            .filter_map(|p| match p {
                Piece::Memory(b) => Some(b),
                Piece::Spilled(_) => None,
            })
            .collect();
        store
            .put(location, payload)
            .await
            .map_err(|e| failed(location, "PUT", e))?;
        return Ok(1);
    }
    let mut upload = store
        .put_multipart(location)
        .await
        .map_err(|e| failed(location, "starting a multipart upload", e))?;
    let mut parts = Parts {
        options,
        current: PutPayloadMut::new(),
        in_flight: JoinSet::new(),
        sent: 0,
        location,
    };
    match send(&mut upload, &mut parts, object).await {
        Ok(()) => Ok(2 + parts.sent),
        Err(e) => {
            parts.in_flight.shutdown().await;
            if let Err(abort) = upload.abort().await {
                tracing::warn!(key = %location, error = %abort, "aborting a multipart upload failed");
            }
            Err(e)
        }
    }
}

/// Send every piece as parts, then complete the upload.
async fn send(
    upload: &mut Box<dyn MultipartUpload>,
    parts: &mut Parts<'_>,
    object: ObjectBytes,
) -> Result<(), SquallError> {
    let file = match &object.spill {
        Some(spill) => {
            let path = spill.path().ok_or_else(|| SquallError::Spill {
                key: parts.location.to_string(),
                message: "the spill file has no local path to read it back from".into(),
            })?;
            let file = std::fs::File::open(path).map_err(|e| read_failed(parts.location, e))?;
            Some(Arc::new(file))
        }
        None => None,
    };
    for piece in object.pieces {
        match piece {
            Piece::Memory(bytes) => parts.feed(upload, bytes).await?,
            Piece::Spilled(segment) => {
                let file = file.as_ref().ok_or_else(|| SquallError::Spill {
                    key: parts.location.to_string(),
                    message: "a spilled piece without a spill file".into(),
                })?;
                let end = segment.offset + segment.len;
                let mut offset = segment.offset;
                while offset < end {
                    // Read what fills the current part, so at most one
                    // part is being put together at a time.
                    let n = (parts.room() as u64).min(end - offset);
                    let bytes = read_range(file, offset, n as usize)
                        .await
                        .map_err(|e| read_failed(parts.location, e))?;
                    parts.feed(upload, bytes).await?;
                    offset += n;
                }
            }
        }
    }
    if parts.current.content_length() > 0 {
        parts.send_current(upload).await?;
    }
    while parts.join_one().await? {}
    upload
        .complete()
        .await
        .map_err(|e| failed(parts.location, "completing the multipart upload", e))?;
    Ok(())
}

/// The parts of one multipart upload: the one being put together and the
/// ones in flight.
struct Parts<'a> {
    options: UploadOptions,
    current: PutPayloadMut,
    in_flight: JoinSet<object_store::Result<()>>,
    sent: u64,
    location: &'a Path,
}

impl Parts<'_> {
    /// Bytes the current part still takes.
    fn room(&self) -> usize {
        self.options.part_bytes - self.current.content_length()
    }

    async fn feed(
        &mut self,
        upload: &mut Box<dyn MultipartUpload>,
        mut bytes: Bytes,
    ) -> Result<(), SquallError> {
        while !bytes.is_empty() {
            let n = self.room().min(bytes.len());
            self.current.push(bytes.split_to(n));
            if self.room() == 0 {
                self.send_current(upload).await?;
            }
        }
        Ok(())
    }

    /// Send the current part once fewer than `concurrency` are in flight.
    async fn send_current(
        &mut self,
        upload: &mut Box<dyn MultipartUpload>,
    ) -> Result<(), SquallError> {
        while self.in_flight.len() >= self.options.concurrency {
            self.join_one().await?;
        }
        let part = std::mem::take(&mut self.current).freeze();
        self.in_flight.spawn(upload.put_part(part));
        self.sent += 1;
        Ok(())
    }

    /// Wait for one part in flight; `false` when none is.
    async fn join_one(&mut self) -> Result<bool, SquallError> {
        match self.in_flight.join_next().await {
            None => Ok(false),
            Some(Ok(Ok(()))) => Ok(true),
            Some(Ok(Err(e))) => Err(failed(self.location, "uploading a part", e)),
            Some(Err(e)) => Err(SquallError::Exchange {
                key: self.location.to_string(),
                message: format!("uploading a part: {e}"),
            }),
        }
    }
}

async fn read_range(file: &Arc<std::fs::File>, offset: u64, len: usize) -> std::io::Result<Bytes> {
    let file = Arc::clone(file);
    tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; len];
        let mut f = file.as_ref();
        f.seek(SeekFrom::Start(offset))?;
        f.read_exact(&mut buf)?;
        Ok(Bytes::from(buf))
    })
    .await
    .map_err(std::io::Error::other)?
}

fn failed(location: &Path, what: &str, e: object_store::Error) -> SquallError {
    SquallError::Exchange {
        key: location.to_string(),
        message: format!("writing it ({what}): {e}"),
    }
}

fn read_failed(location: &Path, e: std::io::Error) -> SquallError {
    SquallError::Spill {
        key: location.to_string(),
        message: format!("reading the spill file back: {e}"),
    }
}
