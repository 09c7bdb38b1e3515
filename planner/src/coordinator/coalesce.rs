//! Reduce tasks sized from the map outputs (coalesced reduce reads).
//!
//! A map task writes `R` hash partitions into one object, back to back in
//! partition order (`squall_core::exchange`). Once every map task of a
//! shuffle's input stages is accepted, the coordinator knows each partition's
//! exact size, and forms the reading stage's tasks from them, the way
//! Spark's adaptive execution coalesces shuffle partitions: a task takes a
//! *contiguous range* of partitions holding about
//! `squall.shuffle.target_task_bytes`, and reads that range from each map
//! object with ONE ranged GET (the range's partitions are adjacent in the
//! object). A shuffle of `M` map tasks then costs `M x tasks` GETs instead of
//! `M x R`.
//!
//! ```text
//!  partition bytes (summed over the map outputs of every hash read)
//!   p0   p1   p2   p3   p4 ... p999
//!  [40M][ 3M][ 0 ][30M][ 5M]...[ 2M]     target 64 MiB
//!  |--- task 0 ---||--- task 1 ---|...   each task: one GET per map object
//! ```
//!
//! Every hash read of a stage (the two sides of a partitioned join) uses the
//! same ranges, so rows with equal keys still meet in one task. The task
//! count is `ceil(total / target)` clamped to `[min_tasks, max_tasks]` and
//! to `R` (with `min_task_bytes`, `min_tasks` only while each task still
//! reads that many bytes: a small stage spreads over more functions for
//! latency, a tiny one does not fan out); the ranges are the balanced contiguous split into at most that
//! many ranges (smallest largest range), so a few big partitions do not
//! leave the other tasks idle.
//!
//! What it does not do: split a partition larger than the target (a skewed
//! key's rows stay in one task: splitting it is only correct for one side of
//! a join, with the other side's partition replicated).

use std::ops::Range;

use squall_core::config::SquallConfig;
use squall_core::task::{MapOutput, ObjectRange};

use crate::split::Spread;

/// How a stage's reduce tasks are sized from the measured partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    /// Exchange bytes a task should read (0 = one task per partition).
    pub target_bytes: u64,
    /// At least this many tasks (when there are that many partitions)...
    pub min_tasks: usize,
    /// ...while each still reads this many bytes (0 = whatever the bytes).
    pub min_task_bytes: u64,
    /// At most this many tasks (0 = no cap beyond the partitions).
    pub max_tasks: usize,
}

impl Sizing {
    pub fn from_config(config: &SquallConfig) -> Self {
        let min_tasks = match config.shuffle.min_tasks {
            0 => config.resolved_slots(),
            n => n,
        };
        Self {
            target_bytes: config.shuffle.target_task_bytes as u64,
            min_tasks,
            min_task_bytes: config.shuffle.min_task_bytes as u64,
            max_tasks: config.shuffle.max_tasks,
        }
    }

    /// How many tasks `total` bytes over `partitions` partitions should get.
    pub fn tasks(&self, total: u64, partitions: usize) -> usize {
        let wanted = total.div_ceil(self.target_bytes.max(1)) as usize;
        let cap = match self.max_tasks {
            0 => partitions,
            n => n.min(partitions),
        };
        wanted.max(self.least(total)).min(cap).max(1)
    }

    /// The fewest tasks `total` bytes get: `min_tasks`, or (with
    /// `min_task_bytes`) as many of them as each still reads that much.
    pub fn least(&self, total: u64) -> usize {
        let spread = Spread {
            min_tasks: self.min_tasks,
            min_task_bytes: usize::try_from(self.min_task_bytes).unwrap_or(usize::MAX),
        };
        usize::try_from(spread.least(total)).unwrap_or(usize::MAX)
    }
}

/// The contiguous partition ranges of a stage's tasks, for partitions of
/// `sizes` bytes (summed over every map output the stage reads).
pub fn coalesce(sizes: &[u64], sizing: Sizing) -> Vec<Range<usize>> {
    let n = sizes.len();
    if sizing.target_bytes == 0 {
        return (0..n).map(|p| p..p + 1).collect();
    }
    if n == 0 {
        return std::iter::once(0..0).collect();
    }
    let total: u64 = sizes.iter().sum();
    if total == 0 {
        return std::iter::once(0..n).collect();
    }
    let tasks = sizing.tasks(total, n);
    // The smallest bound on a range's bytes that splits the partitions into
    // at most `tasks` contiguous ranges (binary search over the bound).
    let (mut lo, mut hi) = (sizes.iter().copied().max().unwrap_or(0), total);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if split(sizes, mid).len() <= tasks {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    split(sizes, lo)
}

/// Greedy contiguous split: a range closes before the non-empty partition
/// that would take it past `bound`. Empty partitions join the range before
/// them, so no range is only empty partitions (unless all are).
fn split(sizes: &[u64], bound: u64) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut bytes) = (0usize, 0u64);
    for (p, &s) in sizes.iter().enumerate() {
        if s > 0 && bytes > 0 && bytes + s > bound {
            ranges.push(start..p);
            start = p;
            bytes = 0;
        }
        bytes += s;
    }
    ranges.push(start..sizes.len());
    ranges
}

/// Bytes per partition over `outputs` (`partitions` of them), added to `sizes`.
pub fn add_sizes(sizes: &mut Vec<u64>, outputs: &[&MapOutput], partitions: usize) {
    sizes.resize(sizes.len().max(partitions), 0);
    for out in outputs {
        for (p, r) in out.partitions.iter().enumerate().take(partitions) {
            sizes[p] += r.len;
        }
    }
}

/// The one range of `out` holding partitions `range` (adjacent in the
/// object), or `None` when they are all empty.
pub fn span(out: &MapOutput, range: &Range<usize>) -> Option<ObjectRange> {
    let parts = out.partitions.get(range.clone())?;
    let first = parts.iter().find(|r| r.len > 0)?;
    let last = parts.iter().rev().find(|r| r.len > 0)?;
    Some(ObjectRange {
        key: out.key.clone(),
        offset: first.offset,
        len: last
            .offset
            .saturating_add(last.len)
            .saturating_sub(first.offset),
        rows: parts.iter().map(|r| r.rows).sum(),
    })
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
