//! The exchange object format.
//!
//! A map task writes ONE object per attempt. The object holds all of the
//! task's output partitions back to back; each partition is a self-contained
//! Arrow IPC stream (schema, record batches, end-of-stream marker) with
//! compressed buffers. The task reports each partition's byte range and row
//! count; an empty partition has no bytes at all (`len == 0`).
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
//! `exec::shuffle_write`).
//!
//! **Keys** are attempt-scoped and spread over `squall.shuffle.prefixes`
//! shards ([`map_object_key`]): S3 serves about 3,500 PUTs and 5,500 GETs
//! per second per prefix, so a query's objects under one prefix would be
//! throttled at a few hundred concurrent tasks. The shard comes before the
//! query id, so the shard prefixes outlive any one query and keep the
//! partitions S3 splits them into; a stage's tasks take consecutive shards
//! from a start that a hash of (query, stage) picks ([`shard`]). Everything
//! of a query is found by listing `{prefix}/{shard}/{query}/` for each shard
//! its stages wrote to ([`stage_shards`], [`query_prefix`]).

use std::sync::Arc;

use arrow::compute::BatchCoalescer;
use arrow::datatypes::SchemaRef;
use arrow::ipc::CompressionType;
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow::record_batch::RecordBatch;
use bytes::Bytes;

use crate::error::{Result, SquallError};
use crate::task::PartitionRange;

/// Compression of exchange objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Lz4,
    Zstd,
}

impl std::str::FromStr for Compression {
    type Err = SquallError;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "" => Ok(Self::None),
            "lz4" | "lz4_frame" => Ok(Self::Lz4),
            "zstd" => Ok(Self::Zstd),
            other => Err(SquallError::Config(format!(
                "squall.shuffle.compression: unknown codec {other:?} (expected lz4, zstd or none)"
            ))),
        }
    }
}

impl Compression {
    fn ipc_options(self) -> Result<IpcWriteOptions> {
        let codec = match self {
            Self::None => None,
            Self::Lz4 => Some(CompressionType::LZ4_FRAME),
            Self::Zstd => Some(CompressionType::ZSTD),
        };
        Ok(IpcWriteOptions::default().try_with_compression(codec)?)
    }
}

/// Accumulates the output partitions of one map task and lays them out as one object.
///
/// Rows pushed into a partition are coalesced into batches of about
/// `batch_rows` rows before they are encoded, so hash partitioning into many
/// small slices does not turn into many tiny IPC messages.
pub struct MapObjectBuilder {
    schema: SchemaRef,
    options: IpcWriteOptions,
    batch_rows: usize,
    partitions: Vec<PartitionBuffer>,
}

struct PartitionBuffer {
    coalescer: Option<BatchCoalescer>,
    writer: Option<StreamWriter<Vec<u8>>>,
    rows: u64,
}

impl MapObjectBuilder {
    pub fn new(
        schema: SchemaRef,
        partitions: usize,
        compression: Compression,
        batch_rows: usize,
    ) -> Result<Self> {
        Ok(Self {
            schema,
            options: compression.ipc_options()?,
            batch_rows: batch_rows.max(1),
            partitions: (0..partitions)
                .map(|_| PartitionBuffer {
                    coalescer: None,
                    writer: None,
                    rows: 0,
                })
                .collect(),
        })
    }

    pub fn num_partitions(&self) -> usize {
        self.partitions.len()
    }

    /// Bytes encoded so far (held in memory until the object is written).
    pub fn buffered_bytes(&self) -> usize {
        self.partitions
            .iter()
            .filter_map(|p| p.writer.as_ref())
            .map(|w| w.get_ref().len())
            .sum()
    }

    /// Append `batch` to output partition `partition`.
    pub fn push(&mut self, partition: usize, batch: RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let count = self.partitions.len();
        let schema = Arc::clone(&self.schema);
        let batch_rows = self.batch_rows;
        let options = self.options.clone();
        let buf = self.partitions.get_mut(partition).ok_or_else(|| {
            SquallError::Plan(format!(
                "output partition {partition} out of range 0..{count}"
            ))
        })?;
        buf.rows += batch.num_rows() as u64;
        let coalescer = buf
            .coalescer
            .get_or_insert_with(|| BatchCoalescer::new(Arc::clone(&schema), batch_rows));
        coalescer.push_batch(batch)?;
        while let Some(done) = coalescer.next_completed_batch() {
            write_batch(&mut buf.writer, &schema, &options, &done)?;
        }
        Ok(())
    }

    /// Finish every partition and return the object's chunks (to be stored
    /// back to back, in order) with each partition's range.
    pub fn finish(self) -> Result<(Vec<Bytes>, Vec<PartitionRange>)> {
        let mut chunks = Vec::new();
        let mut ranges = Vec::with_capacity(self.partitions.len());
        let mut offset = 0u64;
        for mut buf in self.partitions {
            if let Some(mut coalescer) = buf.coalescer.take() {
                coalescer.finish_buffered_batch()?;
                while let Some(done) = coalescer.next_completed_batch() {
                    write_batch(&mut buf.writer, &self.schema, &self.options, &done)?;
                }
            }
            match buf.writer {
                Some(mut writer) => {
                    writer.finish()?;
                    let bytes = Bytes::from(writer.into_inner()?);
                    let len = bytes.len() as u64;
                    ranges.push(PartitionRange {
                        offset,
                        len,
                        rows: buf.rows,
                    });
                    offset += len;
                    chunks.push(bytes);
                }
                None => ranges.push(PartitionRange {
                    offset,
                    len: 0,
                    rows: 0,
                }),
            }
        }
        Ok((chunks, ranges))
    }
}

fn write_batch(
    writer: &mut Option<StreamWriter<Vec<u8>>>,
    schema: &SchemaRef,
    options: &IpcWriteOptions,
    batch: &RecordBatch,
) -> Result<()> {
    if writer.is_none() {
        *writer = Some(StreamWriter::try_new_with_options(
            Vec::new(),
            schema,
            options.clone(),
        )?);
    }
    if let Some(w) = writer.as_mut() {
        w.write(batch)?;
    }
    Ok(())
}

/// Decode the bytes of one partition, or of adjacent partitions read with
/// one ranged GET (exactly the range the map tasks reported): one IPC stream
/// after another, each ending with its end-of-stream marker.
pub fn decode_partition(bytes: Bytes) -> Result<Vec<RecordBatch>> {
    let len = bytes.len() as u64;
    let mut cursor = std::io::Cursor::new(bytes);
    let mut batches = Vec::new();
    while cursor.position() < len {
        let mut reader = StreamReader::try_new(&mut cursor, None)?;
        for batch in &mut reader {
            batches.push(batch?);
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

/// Most prefixes (shards) a query's exchange objects spread over: the
/// shard is written as two hex digits.
pub const MAX_SHARDS: u32 = 256;

/// The shard of task `task` of stage `stage` of query `query` among
/// `shards` (clamped to 1..=[`MAX_SHARDS`]): the stage starts at a shard
/// that a hash of (query, stage) picks, and its tasks take the following
/// shards in turn, so one stage's objects are spread evenly and the stages
/// (and queries) start at different shards.
pub fn shard(query: &str, stage: u32, task: u32, shards: u32) -> u32 {
    let shards = shards.clamp(1, MAX_SHARDS);
    // FNV-1a over the query id and the stage, then a splitmix64 finish: a
    // stable function (keys must not change between builds of the coordinator).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in query.bytes().chain([0xff]).chain(stage.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    ((h % u64::from(shards)) as u32 + task % shards) % shards
}

/// The shards that tasks `0..tasks` of one stage write to.
pub fn stage_shards(query: &str, stage: u32, tasks: u32, shards: u32) -> Vec<u32> {
    let shards = shards.clamp(1, MAX_SHARDS);
    (0..tasks.min(shards))
        .map(|t| shard(query, stage, t, shards))
        .collect()
}

/// Prefix under which the query's exchange objects of one shard live:
/// `{prefix}/{shard:02x}/{query}`. Listing the prefixes of every shard the
/// query wrote to ([`stage_shards`]) finds all of its objects.
pub fn query_prefix(prefix: &str, shard: u32, query: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        format!("{shard:02x}/{query}")
    } else {
        format!("{prefix}/{shard:02x}/{query}")
    }
}

/// Object key of one task attempt's output,
/// `{prefix}/{shard:02x}/{query}/s{stage}/t{task}/a{attempt}`, spread over
/// `shards` prefixes (`squall.shuffle.prefixes`) by [`shard`].
pub fn map_object_key(
    prefix: &str,
    shards: u32,
    query: &str,
    stage: u32,
    task: u32,
    attempt: u32,
) -> String {
    let shard = shard(query, stage, task, shards);
    format!(
        "{}/s{stage}/t{task}/a{attempt}",
        query_prefix(prefix, shard, query)
    )
}

/// Object key of the join-key filter stage `stage` publishes (when too big
/// to travel inline): `{prefix}/{shard:02x}/{query}/s{stage}/filter`, in the
/// shard of the stage's task 0.
pub fn filter_object_key(prefix: &str, shards: u32, query: &str, stage: u32) -> String {
    let shard = shard(query, stage, 0, shards);
    format!("{}/s{stage}/filter", query_prefix(prefix, shard, query))
}

/// Object key of stage `stage`'s map objects combined for its broadcast
/// readers: `{prefix}/{shard:02x}/{query}/s{stage}/broadcast`, in the shard
/// of the stage's task 0.
pub fn broadcast_object_key(prefix: &str, shards: u32, query: &str, stage: u32) -> String {
    let shard = shard(query, stage, 0, shards);
    format!("{}/s{stage}/broadcast", query_prefix(prefix, shard, query))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
        StringArray, StringViewArray, TimestampMicrosecondArray,
    };
    use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("dec", DataType::Decimal128(15, 2), true),
            Field::new("date", DataType::Date32, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("s", DataType::Utf8, true),
            Field::new("sv", DataType::Utf8View, true),
            Field::new("b", DataType::Boolean, true),
        ]))
    }

    fn batch(start: i32, n: i32) -> RecordBatch {
        let r: Vec<i32> = (start..start + n).collect();
        let null = |i: &i32| i % 7 == 0;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from_iter(
                r.iter().map(|i| (!null(i)).then_some(*i)),
            )),
            Arc::new(Int64Array::from_iter(
                r.iter()
                    .map(|i| (!null(i)).then_some(*i as i64 * 1_000_000_007)),
            )),
            Arc::new(Float64Array::from_iter(
                r.iter().map(|i| (!null(i)).then_some(*i as f64 / 3.0)),
            )),
            Arc::new(
                Decimal128Array::from_iter(
                    r.iter().map(|i| (!null(i)).then_some(*i as i128 * 101)),
                )
                .with_precision_and_scale(15, 2)
                .unwrap(),
            ),
            Arc::new(Date32Array::from_iter(
                r.iter().map(|i| (!null(i)).then_some(9000 + *i)),
            )),
            Arc::new(TimestampMicrosecondArray::from_iter(
                r.iter()
                    .map(|i| (!null(i)).then_some(*i as i64 * 1_000_000)),
            )),
            Arc::new(StringArray::from_iter(
                r.iter()
                    .map(|i| (!null(i)).then(|| format!("Customer#{i:09} ünïcode"))),
            )),
            Arc::new(StringViewArray::from_iter(
                r.iter()
                    .map(|i| (!null(i)).then(|| "x".repeat((*i % 40) as usize))),
            )),
            Arc::new(BooleanArray::from_iter(
                r.iter().map(|i| (!null(i)).then_some(i % 2 == 0)),
            )),
        ];
        RecordBatch::try_new(schema(), cols).unwrap()
    }

    fn object(chunks: &[Bytes]) -> Bytes {
        Bytes::from(
            chunks
                .iter()
                .flat_map(|c| c.iter().copied())
                .collect::<Vec<u8>>(),
        )
    }

    #[test]
    fn round_trip_all_types_and_ranges() {
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let mut b = MapObjectBuilder::new(schema(), 3, compression, 100).unwrap();
            b.push(0, batch(0, 250)).unwrap();
            b.push(2, batch(250, 10)).unwrap();
            b.push(0, batch(260, 5)).unwrap();
            let (chunks, ranges) = b.finish().unwrap();
            let obj = object(&chunks);
            assert_eq!(ranges.len(), 3);
            assert_eq!(ranges[0].rows, 255);
            assert_eq!(
                ranges[1],
                PartitionRange {
                    offset: ranges[0].len,
                    len: 0,
                    rows: 0
                }
            );
            assert_eq!(ranges[2].offset, ranges[0].len);
            assert_eq!(obj.len() as u64, ranges[2].offset + ranges[2].len);

            let p0 = decode_partition(obj.slice(0..ranges[0].len as usize)).unwrap();
            let got = arrow::compute::concat_batches(&schema(), &p0).unwrap();
            let want =
                arrow::compute::concat_batches(&schema(), &[batch(0, 250), batch(260, 5)]).unwrap();
            assert_eq!(got, want, "{compression:?}");
            // coalesced toward 100-row batches rather than kept as pushed
            assert!(
                p0.iter().all(|b| b.num_rows() <= 100),
                "{:?}",
                p0.iter().map(|b| b.num_rows()).collect::<Vec<_>>()
            );

            let r2 = ranges[2];
            let p2 = decode_partition(obj.slice(r2.offset as usize..(r2.offset + r2.len) as usize))
                .unwrap();
            assert_eq!(
                arrow::compute::concat_batches(&schema(), &p2).unwrap(),
                batch(250, 10)
            );
            assert!(decode_partition(Bytes::new()).unwrap().is_empty());
        }
    }

    #[test]
    fn adjacent_partitions_decode_from_one_range() {
        let mut b = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 100).unwrap();
        b.push(0, batch(0, 30)).unwrap();
        b.push(1, batch(30, 20)).unwrap();
        b.push(3, batch(50, 7)).unwrap();
        let (chunks, ranges) = b.finish().unwrap();
        let obj = object(&chunks);
        let end = ranges[3].offset + ranges[3].len;
        let got = decode_partition(obj.slice(ranges[1].offset as usize..end as usize)).unwrap();
        let got = arrow::compute::concat_batches(&schema(), &got).unwrap();
        let want =
            arrow::compute::concat_batches(&schema(), &[batch(30, 20), batch(50, 7)]).unwrap();
        assert_eq!(got, want);
        let all = decode_partition(obj.clone()).unwrap();
        assert_eq!(all.iter().map(|b| b.num_rows()).sum::<usize>(), 57);
    }

    #[test]
    fn all_empty_object_has_no_bytes() {
        let mut b = MapObjectBuilder::new(schema(), 4, Compression::Lz4, 8192).unwrap();
        b.push(1, batch(0, 0)).unwrap();
        let (chunks, ranges) = b.finish().unwrap();
        assert!(chunks.is_empty());
        assert!(ranges.iter().all(|r| r.len == 0 && r.rows == 0));
    }

    #[test]
    fn out_of_range_partition_is_an_error() {
        let mut b = MapObjectBuilder::new(schema(), 2, Compression::None, 10).unwrap();
        assert!(b.push(2, batch(0, 3)).is_err());
    }

    #[test]
    fn truncated_range_is_an_error() {
        let mut b = MapObjectBuilder::new(schema(), 1, Compression::Lz4, 10).unwrap();
        b.push(0, batch(0, 30)).unwrap();
        let (chunks, _) = b.finish().unwrap();
        let obj = object(&chunks);
        assert!(decode_partition(obj.slice(0..obj.len() / 2)).is_err());
    }

    #[test]
    fn keys_are_attempt_scoped_and_sharded() {
        let s = shard("q7", 1, 2, 16);
        assert_eq!(
            map_object_key("ex/", 16, "q7", 1, 2, 3),
            format!("ex/{s:02x}/q7/s1/t2/a3")
        );
        assert_eq!(map_object_key("", 1, "q7", 1, 2, 0), "00/q7/s1/t2/a0");
        assert_eq!(query_prefix("/a/b/", 10, "q"), "a/b/0a/q");
        let f = shard("q7", 4, 0, 16);
        assert_eq!(
            filter_object_key("ex", 16, "q7", 4),
            format!("ex/{f:02x}/q7/s4/filter")
        );
        // Every attempt of a task lands in the same shard.
        assert!(map_object_key("ex", 16, "q7", 1, 2, 0).starts_with(&query_prefix("ex", s, "q7")));
    }

    #[test]
    fn a_stage_spreads_evenly_over_the_shards() {
        for shards in [1, 3, 16, 32, 256, 1000] {
            let n = shards.clamp(1, MAX_SHARDS);
            let mut count = vec![0u32; n as usize];
            for t in 0..(n * 5) {
                let s = shard("q1234", 3, t, shards);
                assert!(s < n, "shard {s} of {n}");
                count[s as usize] += 1;
            }
            assert!(count.iter().all(|&c| c == 5), "{shards}: {count:?}");
        }
        // A stage with fewer tasks than shards uses as many shards as tasks.
        let used = stage_shards("q1", 2, 5, 16);
        let mut distinct = used.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!((used.len(), distinct.len()), (5, 5));
        assert_eq!(stage_shards("q1", 2, 100, 16).len(), 16);
        // Stages of one query start at different shards (not all at 0).
        let starts: std::collections::HashSet<u32> =
            (0..32).map(|stage| shard("q1", stage, 0, 16)).collect();
        assert!(starts.len() > 4, "{starts:?}");
        // A fixed function: keys must not change between builds.
        assert_eq!(shard("q0123456789abcdef", 1, 0, 16), 9);
    }
}
