//! The two filters under test behind one trait, each built from the same
//! distinct key hashes at the same target false-positive rate.
//!
//! - [`Squall`]: [`KeyFilter`] forced to its Bloom form (exact-set threshold
//!   0), probed through [`KeyFilter::evaluate`], the code `KeyFilterExec` runs.
//! - [`Crate`]: `bloomfilter::Bloom<u64>` over the same hashes (it hashes
//!   them again with SipHash-1-3: the crate takes `T: Hash` and no
//!   precomputed hash), probed by the same batch loop as `evaluate`.
//!
//! The per-row loops of both are monomorphic (one dynamic call per batch or
//! per hash slice), so the trait costs neither side anything per key.

use arrow::array::{ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;
use bloomfilter::Bloom;
use squall_core::key_filter::{FilterSizing, KeyFilter, key_hashes, non_null_keys};

use crate::{BenchError, Result};

/// Seed of the crate's two SipHash keys (fixed: a filter travels between tasks).
const CRATE_SEED: [u8; 32] = *b"squall key filter seed, 32 bytes";

/// Which filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Squall,
    Crate,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Self::Squall, Self::Crate];

    pub fn name(self) -> &'static str {
        match self {
            Self::Squall => "squall-sbbf",
            Self::Crate => "bloomfilter",
        }
    }

    /// A filter of this kind for the distinct hashes `hashes` at rate `fpp`.
    pub fn build(self, hashes: &[u64], fpp: f64) -> Result<Box<dyn Contestant>> {
        match self {
            Self::Squall => Ok(Box::new(Squall::build(hashes, fpp)?)),
            Self::Crate => Ok(Box::new(Crate::build(hashes, fpp)?)),
        }
    }
}

/// A membership filter over key hashes, as the benchmark drives it.
pub trait Contestant {
    fn kind(&self) -> Kind;
    /// Its serialized form (what would travel to the probe tasks).
    fn encode(&self) -> Vec<u8>;
    /// The filter decoded from [`Contestant::encode`]'s bytes.
    fn decode(&self, bytes: Vec<u8>) -> Result<Box<dyn Contestant>>;
    fn contains(&self, hash: u64) -> bool;
    /// How many of `hashes` the filter contains (the filter alone, no hashing).
    fn count_contained(&self, hashes: &[u64]) -> usize;
    /// Rows of a batch whose keys may match (key not NULL, hash in the filter).
    fn evaluate(&self, keys: &[ArrayRef], scratch: &mut Vec<u64>) -> Result<BooleanArray>;
}

/// squall's filter in its Bloom form.
#[derive(Debug)]
pub struct Squall(KeyFilter);

impl Squall {
    pub fn build(hashes: &[u64], fpp: f64) -> Result<Self> {
        let sizing = FilterSizing {
            max_keys: usize::MAX,
            exact_max_keys: 0,
            fpp,
        };
        let filter = KeyFilter::from_distinct(hashes, sizing);
        if filter.kind() != "bloom" {
            return Err(BenchError::Option {
                option: "keys",
                message: format!("{} keys made a {} filter", hashes.len(), filter.kind()),
            });
        }
        Ok(Self(filter))
    }
}

impl Contestant for Squall {
    fn kind(&self) -> Kind {
        Kind::Squall
    }

    fn encode(&self) -> Vec<u8> {
        self.0.encode()
    }

    fn decode(&self, bytes: Vec<u8>) -> Result<Box<dyn Contestant>> {
        Ok(Box::new(Self(KeyFilter::decode(&bytes)?)))
    }

    fn contains(&self, hash: u64) -> bool {
        self.0.contains(hash)
    }

    fn count_contained(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|h| self.0.contains(**h)).count()
    }

    fn evaluate(&self, keys: &[ArrayRef], scratch: &mut Vec<u64>) -> Result<BooleanArray> {
        Ok(self.0.evaluate(keys, scratch)?)
    }
}

/// The `bloomfilter` crate's filter.
#[derive(Debug)]
pub struct Crate(Bloom<u64>);

impl Crate {
    pub fn build(hashes: &[u64], fpp: f64) -> Result<Self> {
        let mut bloom = Bloom::new_for_fp_rate_with_seed(hashes.len().max(1), fpp, &CRATE_SEED)
            .map_err(|message| BenchError::Crate {
                what: "new_for_fp_rate_with_seed",
                message,
            })?;
        for h in hashes {
            bloom.set(h);
        }
        Ok(Self(bloom))
    }
}

impl Contestant for Crate {
    fn kind(&self) -> Kind {
        Kind::Crate
    }

    fn encode(&self) -> Vec<u8> {
        self.0.to_bytes()
    }

    fn decode(&self, bytes: Vec<u8>) -> Result<Box<dyn Contestant>> {
        let bloom = Bloom::from_bytes(bytes).map_err(|message| BenchError::Crate {
            what: "from_bytes",
            message,
        })?;
        Ok(Box::new(Self(bloom)))
    }

    fn contains(&self, hash: u64) -> bool {
        self.0.check(&hash)
    }

    fn count_contained(&self, hashes: &[u64]) -> usize {
        hashes.iter().filter(|h| self.0.check(h)).count()
    }

    fn evaluate(&self, keys: &[ArrayRef], scratch: &mut Vec<u64>) -> Result<BooleanArray> {
        // KeyFilter::evaluate's loop, with the crate's check.
        key_hashes(keys, scratch)?;
        let valid = non_null_keys(keys);
        let hashes = scratch.as_slice();
        let bits = match &valid {
            None => BooleanBuffer::collect_bool(hashes.len(), |i| self.0.check(&hashes[i])),
            Some(v) => BooleanBuffer::collect_bool(hashes.len(), |i| {
                v.is_valid(i) && self.0.check(&hashes[i])
            }),
        };
        Ok(BooleanArray::new(bits, None))
    }
}
