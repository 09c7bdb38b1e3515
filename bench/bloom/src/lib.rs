//! # squall-bloom-bench
//!
//! The key-filter benchmark (`squall bench bloom`): squall's split-block
//! Bloom filter ([`squall_core::key_filter::SplitBlockBloom`], what a probe
//! task applies) against the `bloomfilter` crate, on the probe path as
//! [`squall_core::key_filter::KeyFilterExec`] runs it, measured side by side
//! in one run on the same inputs.
//!
//! ```text
//!  build keys (TPC-H distribution, N keys) --key_hashes--> distinct hashes --> each filter, same target fpp
//!  probe batches (8,192 rows, hit fraction h) --evaluate--> BooleanArray     (checks/s, the exec's path)
//!  probe hashes (precomputed)                --contains--> count            (checks/s, the filter alone)
//!  miss rows                                 --contains--> false positives  (measured fpp)
//!  the crate again, sized for squall's measured fpp        --> bytes at an equal measured fpp
//! ```
//!
//! Both filters are fed the same 64-bit key hashes (squall's `key_hashes`,
//! DataFusion's `create_hashes` under the key-filter seed), are configured
//! for the same false-positive rate (`squall.bloom.fpp` unless given), and
//! are timed alternately (A B, then B A, ...) with the median of the rounds
//! reported. It compares Bloom forms only: below `squall.bloom.exact_max_keys`
//! keys squall ships an exact set instead.
//!
//! It is tooling: the engine's crates and the Lambda functions do not link it.
//!
//! # Layout
//!
//! - [`keys`]: TPC-H key distributions (dense part keys, sparse order keys,
//!   composite partsupp keys) and the seeded probe set.
//! - [`contestants`]: the two filters behind one trait.
//! - [`measure`]: the timed runs and the printed table.

pub mod contestants;
pub mod keys;
pub mod measure;

pub use measure::{BenchOptions, CaseResult, EqualFpp, FilterFigures, header, lines, run, summary};

/// What can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Squall(#[from] squall_core::error::SquallError),

    #[error("bloomfilter crate: {what}: {message}")]
    Crate {
        what: &'static str,
        message: &'static str,
    },

    #[error("{filter} on {case}: {message}")]
    Wrong {
        filter: &'static str,
        case: String,
        message: String,
    },

    #[error("bad option {option}: {message}")]
    Option {
        option: &'static str,
        message: String,
    },
}

pub type Result<T, E = BenchError> = std::result::Result<T, E>;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
