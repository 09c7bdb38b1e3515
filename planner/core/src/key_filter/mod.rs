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
//!
//! # Layout
//!
//! - [`sections`]: key hashing, [`KeyCollector`] (one build task's distinct
//!   key hashes and key ranges), key sections, [`merge_sections`].
//! - [`filter`]: [`KeyFilter`] (exact set or [`SplitBlockBloom`]) and its encoding.
//! - [`distinct`]: [`DistinctSketch`], counting a union's keys past the
//!   million it holds exactly.
//! - [`ranges`]: [`KeyRanges`], the build keys' value range per column, and the
//!   range predicate pushed into probe scans for row-group pruning.
//! - [`exec`]: [`KeyFilterExec`], the node that applies a bound filter in a probe task.
//!
//! Where the planner places filters is `squall_planner::key_filter`; how the
//! coordinator builds one from a finished stage is
//! `squall_planner::coordinator::key_filter`. The user-visible name of the
//! feature and its settings is `squall.bloom.*`.

pub mod distinct;
pub mod exec;
pub mod filter;
pub mod ranges;
pub mod sections;

pub use distinct::DistinctSketch;
pub use exec::{BoundFilter, CHECK_ROWS, KeyFilterExec};
pub use filter::{KeyFilter, PreHashed, SplitBlockBloom};
pub use ranges::{ColumnRange, KeyRanges, MAX_STRING_BYTES, push_into_scan, range_predicate};
pub use sections::{
    FilterSizing, KeyCollector, KeyUnion, Merged, PROJECT_MIN_FRACTION, PROJECT_MIN_SECTIONS,
    Section, UNION_EXACT_KEYS, UNION_MAX_KEYS, decode_section, key_hashes, merge_ranges,
    merge_sections, non_null_keys, task_overflowed,
};

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
