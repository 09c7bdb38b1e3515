//! The exchange object format.
//!
//! A map task writes ONE object per attempt. The object holds all of the
//! task's output partitions back to back; each partition is an Arrow IPC
//! stream without its schema message (record batches with compressed
//! buffers, then the end-of-stream marker); with `squall.shuffle.byte_split`
//! the values of fixed-width columns are laid out byte plane by byte plane
//! before they are compressed ([`byte_split`]). The task reports each
//! partition's byte range and row count; an empty partition has no bytes at
//! all (`len == 0`). The reader knows the schema (it is the read's own) and
//! puts the schema message back in front of each stream it decodes
//! ([`stream_header`]): at a thousand partitions a map task's partitions
//! hold a few hundred rows each, and each carried its own copy of the
//! schema (about 500 bytes for seven columns).
//!
//! ```text
//!  object  {prefix}/{shard}/{query}/s{stage}/t{task}/a{attempt}
//!  +----------------------+----------------------+-----+----------------------+
//!  | IPC stream, part 0   | IPC stream, part 1   | ... | IPC stream, part R-1 |
//!  +----------------------+----------------------+-----+----------------------+
//!  ^ offset 0             ^ ranges[1].offset
//! ```
//!
//! A reduce task range-reads its partitions from every accepted map object
//! (one GET for a contiguous range of them: their streams are adjacent) and
//! decodes them with [`decode_partition`]. This module owns the bytes and
//! the keys only: it does no I/O (see `exec::shuffle_read` /
//! `exec::shuffle_write`, which also spills a map output that outgrows its
//! memory to local disk and uploads it in parts; the layout stays the same).
//!
//! **Keys** are attempt-scoped and spread over `squall.shuffle.prefixes`
//! shards (`exchange/keys.rs`).

use std::sync::Arc;

use arrow::compute::BatchCoalescer;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{
    DictionaryTracker, IpcDataGenerator, IpcWriteContext, IpcWriteOptions, write_message,
};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;

use crate::config::ShuffleOptions;
use crate::error::{Result, SquallError};
use crate::task::PartitionRange;

mod byte_split;
mod keys;
pub use byte_split::{join_batch, split_batch, split_width};
pub use keys::{
    MAX_SHARDS, broadcast_object_key, filter_object_key, map_object_key, query_prefix, shard,
    stage_shards,
};

/// Whether a query's exchange objects hold their fixed-width columns byte
/// plane by byte plane: `squall.shuffle.byte_split`, unless they are not
/// compressed (the layout only helps a codec). Writers and readers of one
/// query decide alike, from the query's settings.
pub fn byte_split(shuffle: &ShuffleOptions) -> bool {
    shuffle.byte_split && !matches!(shuffle.compression.parse(), Ok(Compression::None))
}

/// Compression of exchange objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    /// Zstandard at a level (`zstd` is level 3; `zstd:1` and the fast
    /// negative levels trade some of its ratio for speed).
    Zstd(i32),
}

/// The level `squall.shuffle.compression=zstd` means (zstd's own default).
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

impl std::str::FromStr for Compression {
    type Err = SquallError;
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let unknown = || {
            SquallError::Config(format!(
                "squall.shuffle.compression: unknown codec {s:?} (expected lz4, zstd, zstd:LEVEL \
                 with LEVEL from -7 to 22, or none)"
            ))
        };
        match lower.as_str() {
            "none" | "" => Ok(Self::None),
            "lz4" | "lz4_frame" => Ok(Self::Lz4),
            "zstd" => Ok(Self::Zstd(DEFAULT_ZSTD_LEVEL)),
            other => {
                let level = other
                    .strip_prefix("zstd:")
                    .and_then(|l| l.trim().parse::<i32>().ok())
                    .ok_or_else(unknown)?;
                // zstd accepts far lower levels, but below -7 its ratio is
                // near none and the bytes saved no longer pay.
                if (-7..=22).contains(&level) {
                    Ok(Self::Zstd(level))
                } else {
                    Err(unknown())
                }
            }
        }
    }
}

impl Compression {
    fn ipc_options(self) -> Result<IpcWriteOptions> {
        Ok(match self {
            Self::None => IpcWriteOptions::default(),
            Self::Lz4 => {
                IpcWriteOptions::default().try_with_compression(Some(CompressionType::LZ4_FRAME))?
            }
            Self::Zstd(level) => IpcWriteOptions::default()
                .try_with_compression(Some(CompressionType::ZSTD))?
                .try_with_compression_level(Some(level))?,
        })
    }
}

/// Accumulates the output partitions of one map task and lays them out as one object.
///
/// Rows pushed into a partition are coalesced into batches of about
/// `batch_rows` rows before they are encoded, so hash partitioning into many
/// small slices does not turn into many tiny IPC messages. With a coalescing
/// budget ([`Self::with_coalesce_bytes`]) the coalescers of all partitions
/// together stay near it: each partition's batches are made smaller when
/// there are many partitions (estimated from the schema), and every
/// coalescer is flushed into its stream when they hold more than the budget
/// all the same (so batches are as long as the budget lets them be).
///
/// The builder holds everything in memory. A caller that must bound that
/// memory takes the bytes encoded so far out with [`Self::take_encoded`] (to
/// spill them) and keeps pushing: each partition's stream goes on where it
/// stopped, so the bytes it took out of a partition followed by that
/// partition's tail from [`Self::finish`] are exactly the stream the
/// partition would have been, and [`Self::finish`] reports the ranges of the
/// whole object.
pub struct MapObjectBuilder {
    schema: SchemaRef,
    encoder: Encoder,
    /// Rows per batch as asked for (the session's batch size).
    batch_rows: usize,
    /// Rows per encoded batch of each partition: `batch_rows`, or fewer so
    /// that all partitions' coalescers fit `coalesce_bytes`.
    partition_batch_rows: usize,
    /// Budget of all coalescers together (0 = none).
    coalesce_bytes: usize,
    partitions: Vec<PartitionBuffer>,
    /// Encoded bytes held (in the partitions' streams).
    encoded: usize,
    /// Bytes the coalescers hold (their `size()`).
    coalescing: usize,
}

struct PartitionBuffer {
    coalescer: Option<BatchCoalescer>,
    writer: Option<PartitionStream>,
    rows: u64,
    /// Bytes of this partition's stream taken out by `take_encoded` so far.
    taken: u64,
    /// This partition's share of `MapObjectBuilder::coalescing`.
    coalescing: usize,
}

/// Fewest rows per encoded batch a coalescing budget makes a partition use.
const MIN_PARTITION_BATCH_ROWS: usize = 256;

impl MapObjectBuilder {
    pub fn new(
        schema: SchemaRef,
        partitions: usize,
        compression: Compression,
        batch_rows: usize,
    ) -> Result<Self> {
        let batch_rows = batch_rows.max(1);
        let options = compression.ipc_options()?;
        let mut numbered = DictionaryTracker::new(false);
        IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
            &schema,
            &mut numbered,
            &options,
        );
        Ok(Self {
            encoder: Encoder {
                options,
                context: IpcWriteContext::default(),
                dictionary_ids: numbered.dict_id().len(),
                byte_split: false,
            },
            schema,
            batch_rows,
            partition_batch_rows: batch_rows,
            coalesce_bytes: 0,
            partitions: (0..partitions)
                .map(|_| PartitionBuffer {
                    coalescer: None,
                    writer: None,
                    rows: 0,
                    taken: 0,
                    coalescing: 0,
                })
                .collect(),
            encoded: 0,
            coalescing: 0,
        })
    }

    /// Bound the memory of the coalescers of all partitions together to
    /// about `bytes` (0 = no bound): each partition coalesces toward fewer
    /// rows when `batch_rows` rows of every partition would not fit in half
    /// of it (estimated from the schema), and all coalescers are flushed
    /// when they hold more than `bytes`.
    pub fn with_coalesce_bytes(mut self, bytes: usize) -> Self {
        self.coalesce_bytes = bytes;
        self.partition_batch_rows = if bytes == 0 {
            self.batch_rows
        } else {
            // A coalescer reserves its whole batch with its first row: sized
            // to fill the budget exactly, all of them together would pass it
            // by their few bytes of bookkeeping, and every push would flush
            // them all into batches of a few rows. Half leaves the other
            // half for what the estimate misses (string data, null masks).
            let per_partition = bytes / 2 / self.partitions.len().max(1);
            (per_partition / estimated_row_bytes(&self.schema)).clamp(
                MIN_PARTITION_BATCH_ROWS.min(self.batch_rows),
                self.batch_rows,
            )
        };
        self
    }

    /// Lay out the values of fixed-width columns byte plane by byte plane
    /// ([`byte_split`]); readers must then join them back.
    pub fn with_byte_split(mut self, on: bool) -> Self {
        self.encoder.byte_split = on;
        self
    }

    pub fn num_partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Rows per encoded batch of each partition.
    pub fn partition_batch_rows(&self) -> usize {
        self.partition_batch_rows
    }

    /// Memory the builder holds: the bytes encoded so far (and not taken
    /// out) and the rows its coalescers are holding.
    pub fn held_bytes(&self) -> usize {
        self.encoded + self.coalescing
    }

    /// Bytes encoded so far and not taken out.
    pub fn encoded_bytes(&self) -> usize {
        self.encoded
    }

    /// Bytes the coalescers hold.
    pub fn coalescing_bytes(&self) -> usize {
        self.coalescing
    }

    /// Append `batch` to output partition `partition`.
    pub fn push(&mut self, partition: usize, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let count = self.partitions.len();
        let buf = self.partitions.get_mut(partition).ok_or_else(|| {
            SquallError::Plan(format!(
                "output partition {partition} out of range 0..{count}"
            ))
        })?;
        buf.rows += batch.num_rows() as u64;
        let before = stream_len(&buf.writer);
        let coalescer = buf.coalescer.get_or_insert_with(|| {
            BatchCoalescer::new(Arc::clone(&self.schema), self.partition_batch_rows)
        });
        coalescer.push_batch(batch)?;
        self.encoder.write_completed(coalescer, &mut buf.writer)?;
        let size = coalescer.size();
        self.coalescing = self.coalescing - buf.coalescing + size;
        buf.coalescing = size;
        self.encoded += stream_len(&buf.writer) - before;
        if self.coalesce_bytes > 0 && self.coalescing > self.coalesce_bytes {
            self.flush_coalescers()?;
        }
        Ok(())
    }

    /// Encode the rows every coalescer holds (as short batches).
    ///
    /// Each coalescer is dropped once flushed (the next push makes a new
    /// one): a string-view coalescer doubles the blocks it copies strings
    /// into with every block it starts, up to 1 MiB, and keeps doing so
    /// after a flush, so a reused one would soon start a 1 MiB block for a
    /// few rows in each of many partitions.
    pub fn flush_coalescers(&mut self) -> Result<()> {
        for buf in &mut self.partitions {
            let Some(mut coalescer) = buf.coalescer.take() else {
                continue;
            };
            let before = stream_len(&buf.writer);
            coalescer.finish_buffered_batch()?;
            self.encoder
                .write_completed(&mut coalescer, &mut buf.writer)?;
            self.coalescing -= buf.coalescing;
            buf.coalescing = 0;
            self.encoded += stream_len(&buf.writer) - before;
        }
        Ok(())
    }

    /// Flush the coalescers and take every partition's bytes encoded so far
    /// out of the builder, as `(partition, bytes)` in partition order
    /// (partitions with nothing new are left out). The streams go on where
    /// they stopped.
    pub fn take_encoded(&mut self) -> Result<Vec<(usize, Vec<u8>)>> {
        self.flush_coalescers()?;
        let mut taken = Vec::new();
        for (i, buf) in self.partitions.iter_mut().enumerate() {
            let Some(writer) = buf.writer.as_mut() else {
                continue;
            };
            let bytes = std::mem::take(&mut writer.bytes);
            if !bytes.is_empty() {
                buf.taken += bytes.len() as u64;
                taken.push((i, bytes));
            }
        }
        self.encoded = 0;
        Ok(taken)
    }

    /// Finish every partition and return each partition's tail (the bytes of
    /// its stream not taken out by [`Self::take_encoded`]; empty for an empty
    /// partition) with each partition's range in the whole object. The
    /// object is, for each partition in order, the bytes taken out of it
    /// followed by its tail.
    pub fn finish(mut self) -> Result<(Vec<Bytes>, Vec<PartitionRange>)> {
        self.flush_coalescers()?;
        let mut tails = Vec::with_capacity(self.partitions.len());
        let mut ranges = Vec::with_capacity(self.partitions.len());
        let mut offset = 0u64;
        for buf in self.partitions {
            match buf.writer {
                Some(writer) => {
                    let tail = Bytes::from(writer.finish());
                    let len = buf.taken + tail.len() as u64;
                    ranges.push(PartitionRange {
                        offset,
                        len,
                        rows: buf.rows,
                    });
                    offset += len;
                    tails.push(tail);
                }
                None => {
                    ranges.push(PartitionRange {
                        offset,
                        len: 0,
                        rows: 0,
                    });
                    tails.push(Bytes::new());
                }
            }
        }
        Ok((tails, ranges))
    }
}

fn stream_len(writer: &Option<PartitionStream>) -> usize {
    writer.as_ref().map_or(0, |w| w.bytes.len())
}

/// One partition's Arrow IPC stream as it is written: the bytes not yet
/// taken out, and the dictionaries it has sent. What arrow's `StreamWriter`
/// writes but for the schema message, encoded with the builder's shared
/// [`IpcWriteContext`].
struct PartitionStream {
    bytes: Vec<u8>,
    dictionaries: DictionaryTracker,
}

/// The IPC end-of-stream marker (metadata version 5): a continuation
/// marker and a zero length.
const END_OF_STREAM: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];

impl PartitionStream {
    /// A stream with nothing written yet: its schema message is left out
    /// (the reader's [`stream_header`]), but its dictionaries take the ids
    /// encoding the schema gives them (0, 1, ... in the schema's order, as
    /// the reader's header numbers them).
    fn new(dictionary_ids: usize) -> Self {
        let mut dictionaries = DictionaryTracker::new(false);
        for _ in 0..dictionary_ids {
            dictionaries.next_dict_id();
        }
        Self {
            bytes: Vec::new(),
            dictionaries,
        }
    }

    fn write(
        &mut self,
        batch: &RecordBatch,
        options: &IpcWriteOptions,
        context: &mut IpcWriteContext,
    ) -> Result<()> {
        let (dictionaries, message) =
            IpcDataGenerator::default().encode(batch, &mut self.dictionaries, options, context)?;
        for dictionary in dictionaries {
            write_message(&mut self.bytes, dictionary, options)?;
        }
        write_message(&mut self.bytes, message, options)?;
        Ok(())
    }

    /// The stream's remaining bytes, ended.
    fn finish(mut self) -> Vec<u8> {
        self.bytes.extend_from_slice(&END_OF_STREAM);
        self.bytes
    }
}

/// Bytes a coalescer holds per row, roughly: fixed-width values as they
/// are, a view as its 16 bytes and 32 of data, other values as 32 bytes.
fn estimated_row_bytes(schema: &SchemaRef) -> usize {
    schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Boolean => 1,
            DataType::Utf8View | DataType::BinaryView => 48,
            t => t.primitive_width().unwrap_or(32),
        })
        .sum::<usize>()
        .max(1)
}

/// How a builder encodes batches: one encoder state for all partitions (a
/// map task writes hundreds of partition streams, and a compressor each,
/// zstd's context being a few hundred KiB to allocate and clear, cost more
/// than the few rows each of them holds at large partition counts).
struct Encoder {
    options: IpcWriteOptions,
    context: IpcWriteContext,
    /// Dictionary ids the schema's dictionary columns take in each
    /// partition's stream (numbered once, not per partition).
    dictionary_ids: usize,
    /// Fixed-width columns written byte plane by byte plane.
    byte_split: bool,
}

impl Encoder {
    /// Encode the batches `coalescer` has completed into `writer`'s stream.
    fn write_completed(
        &mut self,
        coalescer: &mut BatchCoalescer,
        writer: &mut Option<PartitionStream>,
    ) -> Result<()> {
        while let Some(done) = coalescer.next_completed_batch() {
            let stream = match writer {
                Some(stream) => stream,
                None => writer.insert(PartitionStream::new(self.dictionary_ids)),
            };
            let done = if self.byte_split {
                split_batch(&done)?
            } else {
                done
            };
            stream.write(&done, &self.options, &mut self.context)?;
        }
        Ok(())
    }
}

/// The schema message of the streams of `schema`, which map objects leave
/// out: [`decode_partition`] reads it in front of each stream. Computed
/// once per read.
pub fn stream_header(schema: &Schema) -> Result<Vec<u8>> {
    let options = IpcWriteOptions::default();
    let message = IpcDataGenerator::default().schema_to_bytes_with_dictionary_tracker(
        schema,
        &mut DictionaryTracker::new(false),
        &options,
    );
    let mut bytes = Vec::new();
    write_message(&mut bytes, message, &options)?;
    Ok(bytes)
}

/// Decode the bytes of one partition, or of adjacent partitions read with
/// one ranged GET (exactly the range the map tasks reported): one IPC stream
/// after another, each ending with its end-of-stream marker, each read
/// after `header` (the [`stream_header`] of the read's schema), its
/// columns joined back if the writer split them (`byte_split`).
pub fn decode_partition(bytes: Bytes, header: &[u8], byte_split: bool) -> Result<Vec<RecordBatch>> {
    use std::io::Read;
    let len = bytes.len() as u64;
    let mut cursor = std::io::Cursor::new(bytes);
    let mut batches = Vec::new();
    while cursor.position() < len {
        let mut reader = StreamReader::try_new(header.chain(&mut cursor), None)?;
        for batch in &mut reader {
            let batch = batch?;
            batches.push(if byte_split {
                join_batch(&batch)?
            } else {
                batch
            });
        }
        if !reader.is_finished() {
            return Err(arrow::error::ArrowError::IpcError(
                "partition stream ends before its end-of-stream marker".to_string(),
            )
            .into());
        }
    }
    Ok(batches)
}

#[cfg(test)]
mod tests;
