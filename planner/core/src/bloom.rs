//! Join-key filters: what a hash join's build side publishes so that the
//! probe side's scan tasks drop rows before they shuffle.
//!
//! ```text
//!  build stage tasks                      coordinator                       probe stage tasks
//!  KeyCollector per task  --key section-->  merge_sections (all tasks!)  --filter-->  KeyFilter::contains
//!  (distinct key hashes,     in the map      distinct count n -> exact set
//!   appended to its object)  object          or Bloom filter sized for n
//! ```
//!
//! Keys are hashed with DataFusion's `create_hashes` under one fixed seed, so
//! every worker computes the same 64-bit hash for the same key tuple (the
//! join keys of both sides have the same types). A row whose key has a NULL
//! in any column never matches an equi-join key (`NULL = x` is not true), so
//! the build side never inserts such keys and the probe side drops such rows.
//!
//! A filter is only correct when it holds the keys of EVERY build task:
//! [`merge_sections`] refuses to build one from an incomplete set.
//!
//! Small key sets travel as an exact set of hashes (false positives only on
//! a 64-bit hash collision); larger ones as a split-block Bloom filter (the
//! layout Parquet uses: 256-bit blocks, 8 bits set per key) sized from the
//! actual distinct count and the configured false-positive rate.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::buffer::{BooleanBuffer, NullBuffer};
use datafusion::common::hash_utils::{RandomState, create_hashes};

use crate::error::{Result, SquallError};
use crate::key_ranges::KeyRanges;

/// Seed of the key hash; distinct from the repartitioning seed so filter bits
/// are independent of which shuffle partition a key lands in.
const KEY_HASH_SEED: u64 = 0x5155_414c_4c5f_4b46;
const FILTER_MAGIC: &[u8; 4] = b"SQKF";
const SECTION_MAGIC: &[u8; 4] = b"SQKS";
const FORMAT_VERSION: u8 = 1;
/// Key sections carry the value ranges of the keys too (see [`crate::key_ranges`]).
const SECTION_VERSION: u8 = 2;
const SECTION_OVERFLOW: u8 = 1;
const KIND_EXACT: u8 = 0;
const KIND_BLOOM: u8 = 1;

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
        Ok(())
    }

    /// Fold another collector (another partition of the same task) into this one.
    pub fn absorb(&mut self, other: KeyCollector) {
        let ranges = std::mem::replace(&mut self.ranges, KeyRanges::empty(0));
        self.ranges = ranges.merge(other.ranges);
        if self.overflow || other.overflow {
            self.overflow = true;
            self.hashes = HashSet::default();
            return;
        }
        self.hashes.extend(other.hashes);
        if self.hashes.len() > self.max_keys {
            self.overflow = true;
            self.hashes = HashSet::default();
        }
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
        let r = s.as_ref()?.ranges.clone();
        merged = Some(match merged {
            Some(m) => m.merge(r),
            None => r,
        });
    }
    merged
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
    let mut all = Vec::new();
    for (task, s) in sections.iter().enumerate() {
        match s.as_ref().and_then(|s| s.hashes.as_ref()) {
            Some(keys) => all.extend_from_slice(keys),
            _ => {
                return Ok(Merged::Skipped(format!(
                    "build task {task} saw more than {} distinct keys",
                    sizing.max_keys
                )));
            }
        }
        if all.len() > sizing.max_keys.saturating_mul(4).max(1 << 20) {
            // Bound the memory of the merge; dedup what we have and go on.
            all.sort_unstable();
            all.dedup();
        }
    }
    all.sort_unstable();
    all.dedup();
    if all.len() > sizing.max_keys {
        return Ok(Merged::Skipped(format!(
            "{} distinct keys, more than squall.bloom.max_keys = {}",
            all.len(),
            sizing.max_keys
        )));
    }
    Ok(Merged::Filter(KeyFilter::from_distinct(&all, sizing)))
}

/// A membership filter over key hashes.
#[derive(Debug, Clone)]
pub enum KeyFilter {
    /// Exactly these hashes.
    Exact(HashSet<u64, BuildHasherDefault<PreHashed>>),
    Bloom(SplitBlockBloom),
}

impl KeyFilter {
    /// A filter for the distinct hashes `keys`.
    pub fn from_distinct(keys: &[u64], sizing: FilterSizing) -> Self {
        if keys.len() <= sizing.exact_max_keys {
            Self::Exact(keys.iter().copied().collect())
        } else {
            let mut bloom = SplitBlockBloom::with_capacity(keys.len(), sizing.fpp);
            for h in keys {
                bloom.insert(*h);
            }
            Self::Bloom(bloom)
        }
    }

    pub fn contains(&self, hash: u64) -> bool {
        match self {
            Self::Exact(set) => set.contains(&hash),
            Self::Bloom(b) => b.contains(hash),
        }
    }

    /// `exact` or `bloom`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Exact(_) => "exact",
            Self::Bloom(_) => "bloom",
        }
    }

    /// Distinct keys the filter was built from.
    pub fn keys(&self) -> u64 {
        match self {
            Self::Exact(s) => s.len() as u64,
            Self::Bloom(b) => b.keys,
        }
    }

    /// Rows of a batch whose keys may match: key not NULL and hash in the filter.
    pub fn evaluate(&self, keys: &[ArrayRef], scratch: &mut Vec<u64>) -> Result<BooleanArray> {
        key_hashes(keys, scratch)?;
        let valid = non_null_keys(keys);
        let hashes = scratch.as_slice();
        let bits = match &valid {
            None => BooleanBuffer::collect_bool(hashes.len(), |i| self.contains(hashes[i])),
            Some(v) => BooleanBuffer::collect_bool(hashes.len(), |i| {
                v.is_valid(i) && self.contains(hashes[i])
            }),
        };
        Ok(BooleanArray::new(bits, None))
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(FILTER_MAGIC);
        out.push(FORMAT_VERSION);
        match self {
            Self::Exact(set) => {
                out.push(KIND_EXACT);
                out.extend_from_slice(&[0; 2]);
                out.extend_from_slice(&(set.len() as u64).to_le_bytes());
                let mut sorted: Vec<u64> = set.iter().copied().collect();
                sorted.sort_unstable();
                for h in sorted {
                    out.extend_from_slice(&h.to_le_bytes());
                }
            }
            Self::Bloom(b) => {
                out.push(KIND_BLOOM);
                out.extend_from_slice(&[0; 2]);
                out.extend_from_slice(&b.keys.to_le_bytes());
                out.extend_from_slice(&(b.blocks.len() as u64).to_le_bytes());
                for block in &b.blocks {
                    for word in block {
                        out.extend_from_slice(&word.to_le_bytes());
                    }
                }
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let bad = |what: String| SquallError::BadTaskPayload(format!("key filter: {what}"));
        if bytes.len() < 16 || &bytes[..4] != FILTER_MAGIC {
            return Err(bad("not a key filter".into()));
        }
        if bytes[4] != FORMAT_VERSION {
            return Err(bad(format!(
                "format version {} (expected {FORMAT_VERSION})",
                bytes[4]
            )));
        }
        let keys = read_u64(bytes, 8)?;
        match bytes[5] {
            KIND_EXACT => {
                let body = &bytes[16..];
                if body.len() as u64 != keys.saturating_mul(8) {
                    return Err(bad(format!("{} bytes for {keys} keys", body.len())));
                }
                Ok(Self::Exact(
                    body.chunks_exact(8)
                        .map(|c| {
                            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
                        })
                        .collect(),
                ))
            }
            KIND_BLOOM => {
                let blocks = read_u64(bytes, 16)? as usize;
                let body = &bytes[24..];
                if blocks == 0
                    || !blocks.is_power_of_two()
                    || body.len() != blocks.saturating_mul(32)
                {
                    return Err(bad(format!("{} bytes for {blocks} blocks", body.len())));
                }
                let blocks = body
                    .chunks_exact(32)
                    .map(|c| {
                        let mut block = [0u32; 8];
                        for (i, w) in c.chunks_exact(4).enumerate() {
                            block[i] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                        }
                        block
                    })
                    .collect();
                Ok(Self::Bloom(SplitBlockBloom { blocks, keys }))
            }
            other => Err(bad(format!("unknown kind {other}"))),
        }
    }
}

/// A split-block Bloom filter: 256-bit blocks; a key picks one block with the
/// high 32 bits of its hash and sets one bit in each of the block's eight
/// words with the low 32 bits (Putze et al.; Parquet's SBBF layout).
#[derive(Debug, Clone)]
pub struct SplitBlockBloom {
    blocks: Vec<[u32; 8]>,
    keys: u64,
}

const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

impl SplitBlockBloom {
    /// Sized for `keys` distinct keys at false-positive rate `fpp`.
    pub fn with_capacity(keys: usize, fpp: f64) -> Self {
        let fpp = fpp.clamp(1e-6, 0.5);
        // Bits for an SBBF at this rate (the formula Parquet uses).
        let bits = -8.0 * keys.max(1) as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
        let blocks = ((bits / 256.0).ceil() as usize).max(1).next_power_of_two();
        Self {
            blocks: vec![[0; 8]; blocks],
            keys: 0,
        }
    }

    fn block_index(&self, hash: u64) -> usize {
        (((hash >> 32) * self.blocks.len() as u64) >> 32) as usize
    }

    fn mask(hash: u64) -> [u32; 8] {
        let key = hash as u32;
        let mut m = [0u32; 8];
        for i in 0..8 {
            m[i] = 1 << (key.wrapping_mul(SALT[i]) >> 27);
        }
        m
    }

    pub fn insert(&mut self, hash: u64) {
        let i = self.block_index(hash);
        let m = Self::mask(hash);
        if let Some(block) = self.blocks.get_mut(i) {
            for w in 0..8 {
                block[w] |= m[w];
            }
        }
        self.keys += 1;
    }

    pub fn contains(&self, hash: u64) -> bool {
        let m = Self::mask(hash);
        match self.blocks.get(self.block_index(hash)) {
            Some(block) => (0..8).all(|w| block[w] & m[w] != 0),
            None => true,
        }
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.blocks.len() * 32
    }
}

/// A hasher for values that are hashes already.
#[derive(Debug, Default, Clone, Copy)]
pub struct PreHashed(u64);

impl Hasher for PreHashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

fn read_u64(bytes: &[u8], at: usize) -> Result<u64> {
    bytes
        .get(at..at + 8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .ok_or_else(|| SquallError::BadTaskPayload(format!("key filter: truncated at byte {at}")))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int64Array, StringArray};

    use super::*;

    const SIZING: FilterSizing = FilterSizing {
        max_keys: 1_000_000,
        exact_max_keys: 100,
        fpp: 0.01,
    };

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    fn section(keys: &[ArrayRef]) -> Section {
        let mut c = KeyCollector::new(SIZING.max_keys, keys.len());
        c.insert(keys).unwrap();
        decode_section(&c.finish().unwrap()).unwrap()
    }

    fn no_keys(columns: usize) -> Section {
        Section {
            hashes: Some(vec![]),
            ranges: KeyRanges::empty(columns),
        }
    }

    #[test]
    fn exact_filter_keeps_matches_and_drops_nulls() {
        let build = section(&[ints(&[Some(1), Some(2), None, Some(2)])]);
        let Merged::Filter(f) = merge_sections(&[Some(build)], SIZING).unwrap() else {
            panic!("no filter")
        };
        assert_eq!((f.kind(), f.keys()), ("exact", 2));
        let probe = [ints(&[Some(1), Some(3), None, Some(2)])];
        let mask = f.evaluate(&probe, &mut Vec::new()).unwrap();
        assert_eq!(mask, BooleanArray::from(vec![true, false, false, true]));
    }

    #[test]
    fn multi_column_keys_match_whole_tuples() {
        let a = ints(&[Some(1), Some(2)]);
        let b: ArrayRef = Arc::new(StringArray::from(vec!["x", "y"]));
        let build = section(&[a, b]);
        let Merged::Filter(f) = merge_sections(&[Some(build)], SIZING).unwrap() else {
            panic!("no filter")
        };
        let pa = ints(&[Some(1), Some(1), Some(2), Some(2)]);
        let pb: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            Some("y"),
            Some("y"),
            None,
        ]));
        let mask = f.evaluate(&[pa, pb], &mut Vec::new()).unwrap();
        assert_eq!(mask, BooleanArray::from(vec![true, false, true, false]));
    }

    #[test]
    fn bloom_has_no_false_negatives_and_about_the_target_rate() {
        let build: Vec<i64> = (0..50_000).map(|i| i * 3).collect();
        let arr: ArrayRef = Arc::new(Int64Array::from(build));
        let Merged::Filter(f) =
            merge_sections(&[Some(section(std::slice::from_ref(&arr)))], SIZING).unwrap()
        else {
            panic!("no filter")
        };
        assert_eq!(f.kind(), "bloom");
        let mask = f.evaluate(&[arr], &mut Vec::new()).unwrap();
        assert_eq!(
            mask.true_count(),
            50_000,
            "a Bloom filter never drops a member"
        );
        let others: ArrayRef = Arc::new(Int64Array::from(
            (0..50_000).map(|i| i * 3 + 1).collect::<Vec<_>>(),
        ));
        let fp = f.evaluate(&[others], &mut Vec::new()).unwrap().true_count();
        assert!(
            fp < 50_000 * 3 / 100,
            "false positives {fp} of 50000 at fpp 0.01"
        );
        // Round trip.
        let back = KeyFilter::decode(&f.encode()).unwrap();
        assert_eq!(back.keys(), 50_000);
        assert!(back.contains(key_hash_of(0)));
    }

    fn key_hash_of(v: i64) -> u64 {
        let mut out = Vec::new();
        key_hashes(&[ints(&[Some(v)])], &mut out).unwrap();
        out[0]
    }

    #[test]
    fn partial_filters_are_never_built() {
        let a = section(&[ints(&[Some(1)])]);
        let sections = [Some(a), None, Some(no_keys(1))];
        let err = merge_sections(&sections, SIZING).unwrap_err();
        assert!(err.to_string().contains("build task 1 of 3"), "{err}");
        assert!(
            merge_ranges(&sections).is_none(),
            "no range from some tasks only"
        );
    }

    #[test]
    fn overflow_and_too_many_keys_skip_the_filter() {
        let mut c = KeyCollector::new(2, 1);
        c.insert(&[ints(&[Some(1), Some(2), Some(3)])]).unwrap();
        c.insert(&[ints(&[Some(7)])]).unwrap();
        assert!(c.overflowed());
        let over = decode_section(&c.finish().unwrap()).unwrap();
        assert!(over.hashes.is_none());
        // Past the key limit the section still bounds the keys' range.
        let range = merge_ranges(&[Some(over.clone())]).unwrap();
        assert_eq!(
            range.columns[0],
            crate::key_ranges::ColumnRange::Range(
                datafusion::common::ScalarValue::Int64(Some(1)),
                datafusion::common::ScalarValue::Int64(Some(7))
            )
        );
        let merged = merge_sections(&[Some(over)], SIZING).unwrap();
        assert!(matches!(merged, Merged::Skipped(_)));
        let small = FilterSizing {
            max_keys: 1,
            ..SIZING
        };
        let two = section(&[ints(&[Some(1), Some(2)])]);
        assert!(matches!(
            merge_sections(&[Some(two)], small).unwrap(),
            Merged::Skipped(_)
        ));
    }

    #[test]
    fn empty_build_side_drops_every_row() {
        let Merged::Filter(f) =
            merge_sections(&[Some(no_keys(1)), Some(no_keys(1))], SIZING).unwrap()
        else {
            panic!("no filter")
        };
        let mask = f
            .evaluate(&[ints(&[Some(1), None])], &mut Vec::new())
            .unwrap();
        assert_eq!(mask.true_count(), 0);
        let back = KeyFilter::decode(&f.encode()).unwrap();
        assert_eq!(back.keys(), 0);
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(KeyFilter::decode(b"nope").is_err());
        assert!(decode_section(b"SQKS\x02\0\0\0\x05\0\0\0\0\0\0\0").is_err());
        let mut good = KeyCollector::new(10, 1);
        good.insert(&[ints(&[Some(4)])]).unwrap();
        let mut bytes = good.finish().unwrap();
        assert!(decode_section(&bytes).is_ok());
        bytes.push(0);
        assert!(decode_section(&bytes).is_err(), "trailing bytes");
    }
}
