//! [`SpillingOutput`]: a map task's output under a memory bound.
//!
//! It wraps the task's [`MapObjectBuilder`] and the memory reservation that
//! accounts for what the builder holds (encoded bytes and rows waiting in
//! the coalescers). After every push it resizes the reservation; when the
//! pool refuses, or the builder holds more than the spill threshold, it
//! *spills*: it flushes the coalescers, takes every partition's encoded
//! bytes out of the builder and appends them to one local temporary file
//! (made by the runtime's `DiskManager`, so its folder and its size limit
//! apply; on Lambda that is `/tmp`), recording each partition's segments,
//! and shrinks the reservation. The partitions' IPC streams go on where
//! they stopped, so a partition's segments in order followed by its tail in
//! memory are exactly the stream it would have been:
//!
//! ```text
//!  spill file   | p0 | p1 | p2 | p0 | p2 | p0 | p1 | ...     (spill 1, spill 2, spill 3)
//!  memory       p0 tail, p1 tail, p2 tail                    (after the last spill)
//!  object       | p0 seg seg seg tail | p1 seg seg tail | p2 seg seg tail | keys |
//! ```
//!
//! [`SpillingOutput::finish`] lists the object's bytes in that order for the
//! upload (see `upload`), and the partition ranges as they were without a
//! spill. When the `DiskManager` is disabled a refused reservation fails
//! the task with a "resources exhausted" error naming the stage output (the
//! threshold alone is then ignored).
//!
//! What it does not do: read the file back (the upload does) or bound the
//! memory of other operators. Spill writes are synchronous, like
//! DataFusion's own spills, through a small write buffer.

use std::io::{BufWriter, Write};
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use datafusion::execution::{DiskManager, SpillFile, SpillWriter};

use super::upload::{ObjectBytes, Piece, Segment};
use crate::error::SquallError;
use crate::exchange::MapObjectBuilder;
use crate::task::PartitionRange;

/// Write buffer of the spill file (spilled segments are often small: one
/// per partition per spill).
const SPILL_WRITE_BUFFER: usize = 256 * 1024;

/// How much a map task spilled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpillStats {
    pub spills: usize,
    pub bytes: u64,
}

/// A map task's output: encoded in memory, spilled to a local file when it
/// outgrows its memory.
pub struct SpillingOutput {
    builder: MapObjectBuilder,
    reservation: MemoryReservation,
    /// Spill once the builder holds more than this (0 = only when refused).
    threshold: usize,
    disk: Arc<DiskManager>,
    /// The exchange object's key, for errors and the spill file's name.
    key: String,
    spill: Option<LocalSpill>,
    stats: SpillStats,
}

/// The spill file and where each partition's segments are in it.
struct LocalSpill {
    /// Keeps the file alive (it is deleted when the last handle goes).
    file: Arc<dyn SpillFile>,
    writer: BufWriter<Box<dyn SpillWriter>>,
    len: u64,
    segments: Vec<Vec<Segment>>,
}

impl SpillingOutput {
    pub fn new(
        builder: MapObjectBuilder,
        reservation: MemoryReservation,
        threshold: usize,
        disk: Arc<DiskManager>,
        key: String,
    ) -> Self {
        Self {
            builder,
            reservation,
            threshold,
            disk,
            key,
            spill: None,
            stats: SpillStats::default(),
        }
    }

    pub fn stats(&self) -> SpillStats {
        self.stats
    }

    /// Bytes held in memory (and reserved).
    #[cfg(test)]
    pub fn held_bytes(&self) -> usize {
        self.builder.held_bytes()
    }

    /// Append `batch` to output partition `partition`, spilling if the
    /// output no longer fits.
    pub fn push(&mut self, partition: usize, batch: RecordBatch) -> Result<()> {
        self.builder
            .push(partition, batch)
            .map_err(DataFusionError::from)?;
        self.fit()
    }

    /// Reserve what the builder holds, spilling first when it is over the
    /// threshold or the pool refuses.
    fn fit(&mut self) -> Result<()> {
        let held = self.builder.held_bytes();
        let can_spill = self.disk.tmp_files_enabled();
        if !(can_spill && self.threshold > 0 && held > self.threshold) {
            let refused = match self.reservation.try_resize(held) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if !can_spill {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "stage output {} holds {held} bytes and cannot spill to local disk \
                     (the runtime's DiskManager is disabled): {}",
                    self.key,
                    refused.strip_backtrace()
                )));
            }
        }
        self.spill()?;
        self.reservation.try_resize(self.builder.held_bytes())
    }

    /// Move every partition's encoded bytes to the spill file.
    fn spill(&mut self) -> Result<()> {
        let taken = self.builder.take_encoded().map_err(DataFusionError::from)?;
        if taken.is_empty() {
            return Ok(());
        }
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(LocalSpill::create(
                &self.disk,
                &self.key,
                self.builder.num_partitions(),
            )?),
        };
        let mut bytes = 0u64;
        for (partition, chunk) in taken {
            spill
                .append(partition, &chunk)
                .map_err(|e| spill_error(&self.key, e))?;
            bytes += chunk.len() as u64;
        }
        spill
            .writer
            .flush()
            .map_err(|e| spill_error(&self.key, e))?;
        self.stats.spills += 1;
        self.stats.bytes += bytes;
        tracing::debug!(
            key = %self.key,
            bytes,
            spills = self.stats.spills,
            "map output spilled to local disk"
        );
        Ok(())
    }

    /// Finish the partitions: the object's bytes in order (spilled segments
    /// and tails, partition by partition), each partition's range, and the
    /// reservation that still accounts for the tails (drop it once they are
    /// written).
    pub fn finish(self) -> Result<(ObjectBytes, Vec<PartitionRange>, MemoryReservation)> {
        let (tails, ranges) = self.builder.finish().map_err(DataFusionError::from)?;
        let (file, segments) = match self.spill {
            Some(mut spill) => {
                spill
                    .writer
                    .flush()
                    .map_err(|e| spill_error(&self.key, e))?;
                (Some(spill.file), spill.segments)
            }
            None => (None, Vec::new()),
        };
        let mut object = ObjectBytes::new(file);
        for (p, tail) in tails.into_iter().enumerate() {
            let spilled = segments.get(p).map(Vec::as_slice).unwrap_or(&[]);
            let len = spilled.iter().map(|s| s.len).sum::<u64>() + tail.len() as u64;
            if len != ranges[p].len {
                return Err(DataFusionError::Internal(format!(
                    "stage output {}: partition {p} has {len} bytes spilled and held, its range says {}",
                    self.key, ranges[p].len
                )));
            }
            for s in spilled {
                object.push(Piece::Spilled(*s));
            }
            if !tail.is_empty() {
                object.push(Piece::Memory(tail));
            }
        }
        Ok((object, ranges, self.reservation))
    }
}

impl LocalSpill {
    fn create(disk: &Arc<DiskManager>, key: &str, partitions: usize) -> Result<Self> {
        let file = disk.create_tmp_file(&format!("spilling stage output {key}"))?;
        let writer = BufWriter::with_capacity(SPILL_WRITE_BUFFER, file.open_writer()?);
        Ok(Self {
            file,
            writer,
            len: 0,
            segments: vec![Vec::new(); partitions],
        })
    }

    fn append(&mut self, partition: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)?;
        let len = bytes.len() as u64;
        if let Some(segments) = self.segments.get_mut(partition) {
            segments.push(Segment {
                offset: self.len,
                len,
            });
        }
        self.len += len;
        Ok(())
    }
}

fn spill_error(key: &str, e: std::io::Error) -> DataFusionError {
    SquallError::Spill {
        key: key.to_string(),
        message: e.to_string(),
    }
    .into()
}
