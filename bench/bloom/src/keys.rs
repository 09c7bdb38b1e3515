//! TPC-H join-key distributions and the seeded probe set a benchmark case
//! runs on.
//!
//! A distribution maps a key index `i` (0, 1, 2, ...) to a key tuple. The
//! build side holds indices `0..n`; probe rows are hits (an index drawn from
//! `0..n`) with probability `hit_fraction`, otherwise misses (an index drawn
//! from a miss domain past `n`, as large as the probe set so the measured
//! false-positive rate is taken over many distinct keys).
//!
//! - [`Distribution::Dense`]: `p_partkey`, `c_custkey`: `1, 2, 3, ...`.
//! - [`Distribution::Orderkey`]: `o_orderkey`, sparse as dbgen makes it: of
//!   every 32 consecutive values only the first 8 are used.
//! - [`Distribution::Partsupp`]: the composite `(ps_partkey, ps_suppkey)`,
//!   four suppliers per part by TPC-H's formula, hashed as a two-column key.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array};
use squall_core::seeded::SplitMix64;

/// Rows per probe batch (DataFusion's default batch size).
pub const BATCH_ROWS: usize = 8192;

/// Which TPC-H key a case draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    Dense,
    Orderkey,
    Partsupp,
}

impl Distribution {
    pub const ALL: [Distribution; 3] = [Self::Dense, Self::Orderkey, Self::Partsupp];

    /// Columns of the key.
    pub fn columns(self) -> usize {
        match self {
            Self::Partsupp => 2,
            _ => 1,
        }
    }

    /// Key tuple number `i` of a domain of `domain` keys (second column 0
    /// for one-column keys).
    pub fn key(self, i: u64, domain: u64) -> (i64, i64) {
        match self {
            Self::Dense => (i as i64 + 1, 0),
            Self::Orderkey => (((i / 8) * 32 + i % 8 + 1) as i64, 0),
            Self::Partsupp => {
                // TPC-H 4.2.3: S = SF * 10,000 suppliers for P = SF * 200,000 parts;
                // part p's j-th supplier is (p + j * (S/4 + (p-1)/S)) mod S + 1.
                let parts = domain.div_ceil(4).max(1);
                let suppliers = (parts / 20).max(4);
                let p = i / 4 + 1;
                let j = i % 4;
                let s = (p + j * (suppliers / 4 + (p - 1) / suppliers)) % suppliers + 1;
                (p as i64, s as i64)
            }
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Dense => "dense",
            Self::Orderkey => "orderkey",
            Self::Partsupp => "partsupp",
        })
    }
}

/// The key columns of some key tuples, as Arrow arrays.
pub fn key_arrays(dist: Distribution, tuples: &[(i64, i64)]) -> Vec<ArrayRef> {
    let first: ArrayRef = Arc::new(Int64Array::from_iter_values(tuples.iter().map(|t| t.0)));
    if dist.columns() == 1 {
        return vec![first];
    }
    let second: ArrayRef = Arc::new(Int64Array::from_iter_values(tuples.iter().map(|t| t.1)));
    vec![first, second]
}

/// The inputs of one benchmark case.
#[derive(Debug)]
pub struct CaseData {
    /// The build side's keys (one batch).
    pub build: Vec<ArrayRef>,
    /// Probe batches of [`BATCH_ROWS`] rows.
    pub probe: Vec<Vec<ArrayRef>>,
    /// Per probe row, in order: whether its key is a build key.
    pub is_hit: Vec<bool>,
}

impl CaseData {
    /// `n` build keys and `probe_rows` probe rows of which about
    /// `hit_fraction` are build keys, drawn with `seed`.
    pub fn generate(
        dist: Distribution,
        n: usize,
        probe_rows: usize,
        hit_fraction: f64,
        seed: u64,
    ) -> Self {
        let n = n.max(1) as u64;
        let misses = (3 * n).max(probe_rows as u64).max(1);
        let domain = n + misses;
        let build: Vec<(i64, i64)> = (0..n).map(|i| dist.key(i, domain)).collect();
        let threshold = (hit_fraction.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
        // Seeded, so every run draws the same probe set.
        let mut rng = SplitMix64::new(seed);
        let mut is_hit = Vec::with_capacity(probe_rows);
        let mut probe = Vec::with_capacity(probe_rows.div_ceil(BATCH_ROWS));
        let mut tuples = Vec::with_capacity(BATCH_ROWS);
        for _ in 0..probe_rows {
            let hit = rng.next_u64() < threshold;
            let i = if hit {
                rng.below(n as usize) as u64
            } else {
                n + rng.below(misses as usize) as u64
            };
            is_hit.push(hit);
            tuples.push(dist.key(i, domain));
            if tuples.len() == BATCH_ROWS {
                probe.push(key_arrays(dist, &tuples));
                tuples.clear();
            }
        }
        if !tuples.is_empty() {
            probe.push(key_arrays(dist, &tuples));
        }
        Self {
            build: key_arrays(dist, &build),
            probe,
            is_hit,
        }
    }
}
