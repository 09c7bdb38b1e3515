//! # squall-core
//!
//! The contract both sides of a squall query agree on: the coordinator that
//! plans and drives a query, and the workers (Lambda functions or in-process
//! tasks) that run its pieces. Everything that is encoded by one side and
//! decoded by the other lives here, so the two can never drift apart.
//!
//! # Layout
//!
//! - [`config`]: the typed `squall.*` configuration (a DataFusion config extension).
//! - [`task`]: [`task::TaskSpec`] (what a worker is asked to do) and
//!   [`task::TaskReport`] (the completion message it sends back).
//! - [`exchange`]: the exchange object format — one object per map-task attempt,
//!   its output partitions back to back as compressed Arrow IPC streams.
//! - [`exec`]: the execution nodes at stage boundaries:
//!   [`exec::ShuffleWriteExec`] (a stage's root) and [`exec::ShuffleReadExec`]
//!   (a stage's leaf that reads an upstream stage's outputs).
//! - [`key_filter`]: join-key filters (exact sets and Bloom filters, key
//!   ranges) a build side publishes and a probe side applies, and
//!   [`key_filter::KeyFilterExec`], the node that applies them.
//! - [`codec`]: the plan codec (datafusion-proto plus the nodes above).
//! - [`scan`]: binding a task's row-group assignment into the Parquet scans of its plan.
//! - [`worker`]: running one task from its serialized bytes to its report.
//! - [`executor`]: the CPU executor, a runtime of its own for planning and
//!   operators, apart from the threads that serve requests and watch for stops.
//! - [`seams`]: the small traits a backend implements: completion queue and invoker.
//! - [`memory`]: per-task memory accounting (peak) and limits (per task, per query on a worker).
//! - [`activity`]: the tasks this worker process is running, per query.
//! - [`allocator`]: freed memory given back to the system once no query runs.
//! - [`fault`]: seeded fault injection shared by every backend (wrappers of the seams).
//! - [`recovery`]: retries with backoff, hedged reads, throttle retries (wrappers of the seams).
//! - [`requests`]: counting every request made of S3, SQS and Lambda, where it is made.
//! - [`error`]: the crate's error type.
//!
//! What this crate deliberately does not do: decide how a query is cut into
//! stages or tasks (the planner crate), or talk to any cloud API.

pub mod activity;
pub mod allocator;
pub mod case_blind;
pub mod checked_sum;
pub mod codec;
pub mod config;
pub mod csv_files;
mod delegated_udaf;
pub mod deleted_rows;
pub mod error;
pub mod exchange;
pub mod exec;
pub mod executor;
pub mod fault;
pub mod float_sum;
pub mod guarded_udf;
pub mod json_files;
pub mod key_filter;
pub mod memory;
pub mod nested_names;
pub mod read_ahead;
pub mod recovery;
pub mod requests;
pub mod rounded_avg;
pub mod scalar_subquery;
pub mod scan;
pub mod seams;
pub mod seeded;
pub mod series_limit;
pub mod task;
pub mod text_compression;
pub mod text_files;
pub mod trino_udfs;
pub mod value_limit;
pub mod window_flags;
pub mod worker;
pub mod zoned_stamps;

pub use error::{Result, SquallError};
