//! [`KeyFilter`]: the membership filter a probe task applies, an exact set
//! of key hashes or a [`SplitBlockBloom`] filter, and its encoding.
//!
//! The Bloom filter is squall's own, not the `bloomfilter` crate: on the
//! probe path it checks 2-3 times as many rows per second (it uses the key
//! hash every row already has, where the crate hashes it again with
//! SipHash) and builds 7 times as fast, for 2-15% more bytes at the same
//! measured false-positive rate; `squall bench bloom` measures both (the
//! README's "Which Bloom filter" has the figures).

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use arrow::array::{ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;

use super::sections::{FilterSizing, key_hashes, non_null_keys};
use crate::error::{Result, SquallError};

const FILTER_MAGIC: &[u8; 4] = b"SQKF";
const FORMAT_VERSION: u8 = 1;
const KIND_EXACT: u8 = 0;
const KIND_BLOOM: u8 = 1;

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
        Self {
            blocks: vec![[0; 8]; Self::blocks_for(keys, fpp)],
            keys: 0,
        }
    }

    /// Blocks of a filter sized for `keys` distinct keys at false-positive
    /// rate `fpp`: a power of two.
    pub fn blocks_for(keys: usize, fpp: f64) -> usize {
        let fpp = fpp.clamp(1e-6, 0.5);
        // Bits for an SBBF at this rate (the formula Parquet uses).
        let bits = -8.0 * keys.max(1) as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
        ((bits / 256.0).ceil() as usize).max(1).next_power_of_two()
    }

    /// Shrink to `blocks` blocks (a power of two, rounded up to one; no
    /// more than the filter has): block `j` of the result is the OR of the
    /// blocks `j * f .. (j + 1) * f`, `f` the ratio. A key picks its block
    /// as `(hash >> 32) * blocks >> 32` and its bits from the low half, so
    /// the result is exactly the filter of `blocks` blocks the same keys
    /// would have made: a filter filled at its largest size is sized to the
    /// keys it got once they are all in.
    pub fn fold_to(&mut self, blocks: usize) {
        let blocks = blocks.max(1).next_power_of_two();
        if blocks >= self.blocks.len() {
            return;
        }
        let f = self.blocks.len() / blocks;
        self.blocks = self
            .blocks
            .chunks_exact(f)
            .map(|group| {
                let mut out = [0u32; 8];
                for block in group {
                    for w in 0..8 {
                        out[w] |= block[w];
                    }
                }
                out
            })
            .collect();
    }

    /// Set the number of distinct keys the filter reports holding (a
    /// filter filled with repeated keys counts each insert).
    pub fn set_keys(&mut self, keys: u64) {
        self.keys = keys;
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
            // All eight words tested without a branch between them: a probe
            // of a large filter waits on its block's cache miss, and a
            // branch per word kept the next rows' loads from overlapping it.
            Some(block) => block
                .iter()
                .zip(m)
                .fold(true, |all, (word, bit)| all & (word & bit != 0)),
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

pub(super) fn read_u64(bytes: &[u8], at: usize) -> Result<u64> {
    bytes
        .get(at..at + 8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .ok_or_else(|| SquallError::BadTaskPayload(format!("key filter: truncated at byte {at}")))
}
