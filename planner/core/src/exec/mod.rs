//! Execution nodes at stage boundaries.
//!
//! A stage plan is an ordinary DataFusion plan whose root is a
//! [`ShuffleWriteExec`] and whose leaves are Parquet scans or
//! [`ShuffleReadExec`]s. The only other node of squall's own is
//! `key_filter::KeyFilterExec`, which applies a join-key filter published by
//! another stage just below the writer; it lives with the rest of the key
//! filters in [`crate::key_filter`].
//! A read reports the [`BoundaryProperties`] of the node it replaced, so
//! the operators above it keep what they were planned with. A worker also
//! paces the joins and unnests of the plan it runs ([`pace_plan`]: [`PaceExec`],
//! [`CountRowsExec`]) so that its task yields often, and limits the runs of
//! its recursive queries ([`limit_recursion`]); those nodes are never
//! planned or shipped.
//!
//! ```text
//!   stage 2:  ShuffleWriteExec(hash k, 4)          stage 3: ShuffleWriteExec(passthrough)
//!               AggregateExec(partial)                      AggregateExec(final)
//!                 DataSourceExec(parquet)   ---->             ShuffleReadExec(stage 2, hash)
//! ```

mod boundary;
mod dynamic_filters;
mod nullable_side;
mod pacing;
mod recursion_limit;
mod shuffle_read;
mod shuffle_write;
mod window_order;

pub use boundary::{BoundaryProperties, Keeps};
pub use dynamic_filters::{DynamicFilterExec, enable_dynamic_filters, link_dynamic_filters};
pub use nullable_side::{GuardNullableSides, NullableSideExec};
pub use pacing::{
    CountRowsExec, PAIRS_PER_SLICE, PaceExec, YIELD_AFTER, pace_plan, pace_plan_with,
};
pub use recursion_limit::{RECURSION_TOO_DEEP, RecursionLimitExec, limit_recursion};
pub use shuffle_read::{MAX_FETCHES_IN_FLIGHT, ReadMode, ShuffleReadExec, fetches_in_flight};
pub use shuffle_write::ShuffleWriteExec;
pub use window_order::sort_unordered_windows;
