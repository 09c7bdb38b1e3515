//! Execution nodes at stage boundaries.
//!
//! A stage plan is an ordinary DataFusion plan whose root is a
//! [`ShuffleWriteExec`] and whose leaves are Parquet scans or
//! [`ShuffleReadExec`]s. Nothing else in a stage plan is squall's own.
//!
//! ```text
//!   stage 2:  ShuffleWriteExec(hash k, 4)          stage 3: ShuffleWriteExec(passthrough)
//!               AggregateExec(partial)                      AggregateExec(final)
//!                 DataSourceExec(parquet)   ---->             ShuffleReadExec(stage 2, hash)
//! ```

mod shuffle_read;
mod shuffle_write;

pub use shuffle_read::{ReadMode, ShuffleReadExec};
pub use shuffle_write::ShuffleWriteExec;
