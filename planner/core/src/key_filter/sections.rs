//! Key hashing, what one build task collects ([`KeyCollector`]), the key
//! section it appends to its exchange object, and merging the sections of
//! every task of a stage into one filter ([`merge_sections`]).

use std::collections::HashSet;
use std::hash::BuildHasherDefault;

use arrow::array::{Array, ArrayRef};
use arrow::buffer::NullBuffer;
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::execution::memory_pool::MemoryReservation;

use super::distinct::DistinctSketch;
use super::filter::{KeyFilter, PreHashed, SplitBlockBloom, read_u64};
use super::ranges::KeyRanges;
use crate::error::{Result, SquallError};

/// Seed of the key hash; distinct from the repartitioning seed so filter bits
/// are independent of which shuffle partition a key lands in.
const KEY_HASH_SEED: u64 = 0x5155_414c_4c5f_4b46;
const SECTION_MAGIC: &[u8; 4] = b"SQKS";
/// Key sections carry the value ranges of the keys too (see [`crate::key_ranges`]).
const SECTION_VERSION: u8 = 2;
const SECTION_OVERFLOW: u8 = 1;

/// Hash the key tuple of every row of `keys` into `out` (resized to the row count).
pub fn key_hashes(keys: &[ArrayRef], out: &mut Vec<u64>) -> Result<()> {
    let rows = keys.first().map(|k| k.len()).unwrap_or(0);
    out.clear();
    out.resize(rows, 0);
    let state = RandomState::with_seed(KEY_HASH_SEED);
    create_hashes(keys, &state, out.as_mut_slice()).map_err(SquallError::from)?;
    Ok(())
}

/// Rows whose key has no NULL in any column (`None`: every row).
pub fn non_null_keys(keys: &[ArrayRef]) -> Option<NullBuffer> {
    keys.iter().fold(None, |acc, k| {
        NullBuffer::union(acc.as_ref(), k.logical_nulls().as_ref())
    })
}

/// Collects the distinct key hashes one build task sees, up to a limit, and
/// the range of its keys (kept even past the limit).
#[derive(Debug)]
pub struct KeyCollector {
    hashes: HashSet<u64, BuildHasherDefault<PreHashed>>,
    ranges: KeyRanges,
    max_keys: usize,
    overflow: bool,
    scratch: Vec<u64>,
    /// The memory the collector holds, reserved in its task's pool: when
    /// the pool refuses it more, the collector gives up as it does past
    /// `max_keys` (the filter is skipped; the task goes on).
    reservation: Option<MemoryReservation>,
}

/// One build task's key section, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The task's sorted distinct key hashes; `None` when it saw more than it may collect.
    pub hashes: Option<Vec<u64>>,
    pub ranges: KeyRanges,
}

impl KeyCollector {
    /// A collector for keys of `columns` columns.
    pub fn new(max_keys: usize, columns: usize) -> Self {
        Self {
            hashes: HashSet::default(),
            ranges: KeyRanges::empty(columns),
            max_keys,
            overflow: false,
            scratch: Vec::new(),
            reservation: None,
        }
    }

    /// The same collector, its memory reserved in `reservation`'s pool.
    pub fn with_reservation(mut self, reservation: MemoryReservation) -> Self {
        self.reservation = Some(reservation);
        self.account();
        self
    }

    /// Bytes the collector holds: its hash table (a control byte per slot)
    /// and its scratch hashes.
    pub fn memory_size(&self) -> usize {
        self.hashes.capacity() * (std::mem::size_of::<u64>() + 1)
            + self.scratch.capacity() * std::mem::size_of::<u64>()
    }

    /// Grow (or shrink) the reservation to what the collector holds; when
    /// the pool refuses, stop collecting.
    fn account(&mut self) {
        let want = self.memory_size();
        let refused = match self.reservation.as_mut() {
            None => return,
            Some(reservation) => reservation.try_resize(want).is_err(),
        };
        if refused {
            self.overflow = true;
            self.hashes = HashSet::default();
            let now = self.memory_size();
            if let Some(reservation) = self.reservation.as_mut() {
                reservation.resize(now);
            }
        }
    }

    /// Add the keys of one batch (rows with a NULL key are skipped).
    pub fn insert(&mut self, keys: &[ArrayRef]) -> Result<()> {
        self.ranges.observe(keys)?;
        if self.overflow {
            return Ok(());
        }
        key_hashes(keys, &mut self.scratch)?;
        let valid = non_null_keys(keys);
        for (i, h) in self.scratch.iter().enumerate() {
            if valid.as_ref().is_none_or(|v| v.is_valid(i)) {
                self.hashes.insert(*h);
            }
        }
        if self.hashes.len() > self.max_keys {
            self.overflow = true;
            self.hashes = HashSet::default();
        }
        self.account();
        Ok(())
    }

    /// Fold another collector (another partition of the same task) into this one.
    pub fn absorb(&mut self, other: KeyCollector) {
        let ranges = std::mem::replace(&mut self.ranges, KeyRanges::empty(0));
        self.ranges = ranges.merge(other.ranges);
        if self.overflow || other.overflow {
            self.overflow = true;
            self.hashes = HashSet::default();
            self.account();
            return;
        }
        self.hashes.extend(other.hashes);
        if self.hashes.len() > self.max_keys {
            self.overflow = true;
            self.hashes = HashSet::default();
        }
        self.account();
    }

    /// Whether the task saw more distinct keys than it may collect.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// The task's key section: its distinct hashes (none past `max_keys`)
    /// and the ranges of its keys.
    pub fn finish(self) -> Result<Vec<u8>> {
        let mut sorted: Vec<u64> = self.hashes.into_iter().collect();
        sorted.sort_unstable();
        let ranges = self.ranges.encode()?;
        let mut out = Vec::with_capacity(24 + 8 * sorted.len() + ranges.len());
        out.extend_from_slice(SECTION_MAGIC);
        out.push(SECTION_VERSION);
        out.push(if self.overflow { SECTION_OVERFLOW } else { 0 });
        out.extend_from_slice(&[0; 2]);
        out.extend_from_slice(&(sorted.len() as u64).to_le_bytes());
        for h in sorted {
            out.extend_from_slice(&h.to_le_bytes());
        }
        out.extend_from_slice(&(ranges.len() as u64).to_le_bytes());
        out.extend_from_slice(&ranges);
        Ok(out)
    }
}

/// Decode one task's key section.
pub fn decode_section(bytes: &[u8]) -> Result<Section> {
    let bad = |what: &str| SquallError::BadTaskPayload(format!("key section: {what}"));
    if bytes.len() < 16 || &bytes[..4] != SECTION_MAGIC {
        return Err(bad("not a key section"));
    }
    if bytes[4] != SECTION_VERSION {
        return Err(bad(&format!(
            "format version {} (expected {SECTION_VERSION})",
            bytes[4]
        )));
    }
    let overflow = bytes[5] & SECTION_OVERFLOW != 0;
    let n = read_u64(bytes, 8)? as usize;
    let ranges_at = n
        .checked_mul(8)
        .and_then(|b| b.checked_add(16))
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| bad(&format!("{} bytes for {n} keys", bytes.len())))?;
    let ranges_len = read_u64(bytes, ranges_at)? as usize;
    let ranges = bytes
        .get(ranges_at + 8..)
        .filter(|r| r.len() == ranges_len)
        .ok_or_else(|| {
            bad(&format!(
                "ranges of {ranges_len} bytes do not end the section"
            ))
        })?;
    let hashes = bytes[16..ranges_at]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    Ok(Section {
        hashes: (!overflow).then_some(hashes),
        ranges: KeyRanges::decode(ranges)?,
    })
}

/// The range of the keys of ALL tasks of a build stage, or `None` unless
/// every task reported its section (a range from some tasks only would
/// prune row groups that match keys of the others).
pub fn merge_ranges(sections: &[Option<Section>]) -> Option<KeyRanges> {
    let mut merged: Option<KeyRanges> = None;
    for s in sections {
        merged = merge_range(merged, s.as_ref()?.ranges.clone());
    }
    merged
}

fn merge_range(merged: Option<KeyRanges>, r: KeyRanges) -> Option<KeyRanges> {
    Some(match merged {
        Some(m) => m.merge(r),
        None => r,
    })
}

/// How the filter of a build side is made.
#[derive(Debug, Clone, Copy)]
pub struct FilterSizing {
    /// No filter when the build side has more distinct keys than this.
    pub max_keys: usize,
    /// Up to this many keys, an exact set; above, a Bloom filter.
    pub exact_max_keys: usize,
    /// Target false-positive rate of a Bloom filter.
    pub fpp: f64,
}

/// The outcome of merging a build stage's key sections.
#[derive(Debug)]
pub enum Merged {
    Filter(KeyFilter),
    /// No filter: why (too many keys, ...). The probe side runs unfiltered.
    Skipped(String),
}

/// Merge the key sections of ALL tasks of a build stage into one filter.
///
/// `sections[i]` is task `i`'s section (whose `hashes` are `None` when that
/// task saw more keys than it may collect). A task whose section is missing
/// (`None`) makes this an error: a filter built from some tasks only would
/// drop probe rows that match keys of the others.
pub fn merge_sections(sections: &[Option<Section>], sizing: FilterSizing) -> Result<Merged> {
    if let Some(missing) = sections.iter().position(|s| s.is_none()) {
        return Err(SquallError::Plan(format!(
            "key filter: build task {missing} of {} has not reported its keys; a partial filter is never applied",
            sections.len()
        )));
    }
    let mut union = KeyUnion::new(sizing);
    for (task, s) in sections.iter().enumerate() {
        if let Some(s) = s {
            union.add(task, s.clone());
        }
    }
    Ok(union.finish())
}

/// Why no filter is made when build task `task` saw more than `max_keys` keys.
pub fn task_overflowed(task: usize, max_keys: usize) -> String {
    format!(
        "build task {task} saw more than {max_keys} distinct keys, or more than its memory limit let it hold"
    )
}

/// A build stage's union holds its keys exactly up to this many (a hash
/// set of at most 2^21 slots, ~19 MB); past it, in a Bloom filter sized
/// for `max_keys` and a [`DistinctSketch`] of their count.
pub const UNION_EXACT_KEYS: usize = 1 << 20;
/// The most keys a union's Bloom filter is sized for (its bits: 128 MiB at
/// a 1% false-positive rate); a larger `max_keys` counts as this.
pub const UNION_MAX_KEYS: usize = 1 << 26;

/// The distinct keys of a build stage's sections, merged as they arrive
/// (the coordinator folds each task's section in as the task finishes), and
/// the range of their keys. Once the keys are known to be too many (a task
/// overflowed, or more than `max_keys` distinct ones so far) it drops the
/// hashes, keeps only the reason and the ranges, and the filter is skipped
/// whatever the other tasks hold.
///
/// Its memory is bounded whatever `max_keys` is: up to [`UNION_EXACT_KEYS`]
/// distinct keys it holds the hashes; past that it inserts them into the
/// Bloom filter the most keys allowed would need and counts them with a
/// [`DistinctSketch`], and at the end folds the filter down to the size
/// its count needs ([`SplitBlockBloom::fold_to`]: the same bits a filter
/// sized for that count would have). At 16 million keys and 1%: 32 MiB,
/// where a set of the hashes took ~290 MB and their sorted copy 128 MB
/// more.
#[derive(Debug)]
pub struct KeyUnion {
    sizing: FilterSizing,
    keys: UnionKeys,
    ranges: Option<KeyRanges>,
    sections: usize,
    /// Keys of the sections folded in, summed (a key in two sections counts twice).
    section_keys: u64,
    skipped: Option<String>,
}

/// [`KeyUnion::projected_skip`] projects from at least this many sections...
pub const PROJECT_MIN_SECTIONS: usize = 8;
/// ...and at least this fraction of the stage's tasks.
pub const PROJECT_MIN_FRACTION: f64 = 0.01;

#[derive(Debug)]
enum UnionKeys {
    Exact(HashSet<u64, BuildHasherDefault<PreHashed>>),
    Sketched {
        bloom: SplitBlockBloom,
        distinct: DistinctSketch,
    },
}

impl KeyUnion {
    pub fn new(sizing: FilterSizing) -> Self {
        Self {
            sizing,
            keys: UnionKeys::Exact(HashSet::default()),
            ranges: None,
            sections: 0,
            section_keys: 0,
            skipped: None,
        }
    }

    fn max_keys(&self) -> usize {
        self.sizing.max_keys.min(UNION_MAX_KEYS)
    }

    /// Fold in the section of build task `task`.
    pub fn add(&mut self, task: usize, section: Section) {
        self.sections += 1;
        self.ranges = merge_range(self.ranges.take(), section.ranges);
        if self.skipped.is_some() {
            return;
        }
        let Some(keys) = section.hashes else {
            self.skip(task_overflowed(task, self.sizing.max_keys));
            return;
        };
        self.section_keys += keys.len() as u64;
        let max_keys = self.max_keys();
        let hold = UNION_EXACT_KEYS.max(self.sizing.exact_max_keys);
        let too_many = match &mut self.keys {
            UnionKeys::Exact(set) => {
                set.extend(keys);
                if set.len() > max_keys {
                    Some(format!("{}", set.len()))
                } else {
                    if set.len() > hold {
                        let mut bloom = SplitBlockBloom::with_capacity(max_keys, self.sizing.fpp);
                        let mut distinct = DistinctSketch::new();
                        for h in set.drain() {
                            bloom.insert(h);
                            distinct.insert(h);
                        }
                        self.keys = UnionKeys::Sketched { bloom, distinct };
                    }
                    None
                }
            }
            UnionKeys::Sketched { bloom, distinct } => {
                for h in keys {
                    bloom.insert(h);
                    distinct.insert(h);
                }
                let n = distinct.estimate();
                (n > max_keys as f64).then(|| format!("about {n:.0}"))
            }
        };
        if let Some(n) = too_many {
            let limit = if max_keys < self.sizing.max_keys {
                format!("the {max_keys} a key filter can hold")
            } else {
                format!("squall.bloom.max_keys = {max_keys}")
            };
            self.skip(format!(
                "{n} distinct keys in {} build tasks, more than {limit}",
                self.sections
            ));
        }
    }

    fn skip(&mut self, reason: String) {
        self.skipped = Some(reason);
        self.keys = UnionKeys::Exact(HashSet::default());
    }

    /// Why no filter can be made from these keys, once that is known.
    pub fn skipped(&self) -> Option<&str> {
        self.skipped.as_deref()
    }

    /// Sections folded in.
    pub fn sections(&self) -> usize {
        self.sections
    }

    /// The range of the keys folded in (`None` before any).
    pub fn ranges(&self) -> Option<&KeyRanges> {
        self.ranges.as_ref()
    }

    /// Distinct keys folded in (estimated past [`UNION_EXACT_KEYS`]).
    pub fn distinct(&self) -> f64 {
        match &self.keys {
            UnionKeys::Exact(set) => set.len() as f64,
            UnionKeys::Sketched { distinct, .. } => distinct.estimate(),
        }
    }

    /// Why the filter will be skipped, projected from the sections folded
    /// in so far to all `tasks` of the stage: when they are at least
    /// [`PROJECT_MIN_SECTIONS`] and [`PROJECT_MIN_FRACTION`] of the tasks,
    /// share (almost) no keys, so each task brings keys of its own (a stage
    /// partitioned by the key, or a table's unique key), and at their mean
    /// the stage would hold more than twice `max_keys`. A build stage of a
    /// thousand tasks with hundreds of millions of keys is then known to
    /// make no filter after a dozen tasks, not after the seventy that reach
    /// `max_keys`. Sections that overlap (a key column that repeats across
    /// tasks: the union grows slower than the tasks) are never projected.
    /// A wrong projection costs only the filter, never an answer.
    pub fn projected_skip(&self, tasks: usize) -> Option<String> {
        let k = self.sections;
        if self.skipped.is_some()
            || k < PROJECT_MIN_SECTIONS
            || (k as f64) < PROJECT_MIN_FRACTION * tasks as f64
            || tasks <= k
        {
            return None;
        }
        let distinct = self.distinct();
        if distinct < 0.95 * self.section_keys as f64 {
            return None;
        }
        let projected = distinct * tasks as f64 / k as f64;
        let max_keys = self.max_keys();
        (projected > 2.0 * max_keys as f64).then(|| {
            format!(
                "about {distinct:.0} distinct keys in {k} of {tasks} build tasks, about {projected:.0} projected for the stage, more than squall.bloom.max_keys = {max_keys}"
            )
        })
    }

    /// Bytes the union holds for its keys.
    pub fn memory_size(&self) -> usize {
        match &self.keys {
            UnionKeys::Exact(set) => set.capacity() * (std::mem::size_of::<u64>() + 1),
            UnionKeys::Sketched { bloom, distinct } => bloom.bytes() + distinct.memory_size(),
        }
    }

    /// The filter of the keys folded in: the caller has folded in every
    /// build task's section.
    pub fn finish(self) -> Merged {
        if let Some(reason) = self.skipped {
            return Merged::Skipped(reason);
        }
        match self.keys {
            UnionKeys::Exact(set) => {
                let mut all: Vec<u64> = set.into_iter().collect();
                all.sort_unstable();
                Merged::Filter(KeyFilter::from_distinct(&all, self.sizing))
            }
            UnionKeys::Sketched {
                mut bloom,
                distinct,
            } => {
                let n = distinct.estimate().ceil() as usize;
                // Sized with a margin for the count's error (0.8% standard).
                let size_for = n + n / 32;
                bloom.fold_to(SplitBlockBloom::blocks_for(size_for, self.sizing.fpp));
                bloom.set_keys(n as u64);
                Merged::Filter(KeyFilter::Bloom(bloom))
            }
        }
    }
}
