//! # squall-planner
//!
//! squall's planner and coordinator and the embedded backend. The contract
//! shared with workers lives in `squall-core`; the `squall` command and the
//! HTTP API live in `squall-server`.
//!
//! # Layout
//!
//! - [`engine`]: the embedded entry point — SQL in, batches and a profile out.
//! - [`stages`]: cutting a DataFusion physical plan into stages.
//! - [`bloom`]: placing join-key filters between the two sides of hash joins.
//! - [`plan_check`]: stage plans keep the properties they were planned with,
//!   across the cut and through the task codec.
//! - [`split`]: splitting scan stages into tasks by Parquet row groups.
//! - [`coordinator`]: the backend-agnostic loop that drives a staged query.
//! - [`backend`]: backends behind the seams; [`backend::local`] is the embedded one.
//! - [`catalog`]: folders of Parquet tables.
//! - [`locations`]: the roots SQL may name locations under (`squall.catalog.allowed_roots`).
//! - [`redact`]: SQL as logs show it (literals replaced, a digest).
//! - [`limits`]: settings a session may change, lower-only limits, the statement timeout.
//! - [`profile`]: per-query, per-stage figures.
//! - [`cost`]: the modelled AWS cost of a profiled query, at list prices.
//! - [`paging`]: cutting a result into the pages a client reads.
//! - [`tpch`]: data generation, the 22 queries, and answer checking.

pub mod backend;
pub mod bloom;
pub mod catalog;
pub mod coordinator;
pub mod cost;
pub mod engine;
pub mod limits;
pub mod locations;
pub mod paging;
pub mod plan_check;
pub mod profile;
pub mod redact;
pub mod split;
pub mod stages;
pub mod tpch;

pub use coordinator::QueryProgress;
pub use engine::{CancellationToken, Engine, EngineOptions, QueryResult, RunOptions};
