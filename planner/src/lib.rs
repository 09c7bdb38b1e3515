//! # squall-planner
//!
//! squall's planner and coordinator and the embedded backend. The contract
//! shared with workers lives in `squall-core`; the `squall` command and the
//! HTTP API live in `squall-server`.
//!
//! # Layout
//!
//! - [`engine`]: the embedded entry point — SQL in, batches and a profile out.
//! - [`error`]: [`PlannerError`], the crate's one error type.
//! - [`stages`]: cutting a DataFusion physical plan into stages.
//! - [`two_level`]: combine stages between big hash exchanges' two sides (the
//!   two-level exchange) and the request model that sizes their grids.
//! - [`explain`]: EXPLAIN's text of a staged plan (task counts, what scans read).
//! - [`key_filter`]: placing join-key filters between the two sides of hash joins
//!   (the filters themselves are `squall_core::key_filter`; building one from a
//!   finished stage is `coordinator::key_filter`).
//! - [`plan_check`]: stage plans keep the properties they were planned with,
//!   across the cut and through the task codec.
//! - [`split`]: splitting scan stages into tasks by Parquet row groups.
//! - [`coordinator`]: the backend-agnostic loop that drives a staged query.
//! - [`backend`]: backends behind the seams; [`backend::local`] is the embedded one.
//! - [`catalog`]: folders of Parquet tables.
//! - [`partitions`]: Hive-style partitioned tables (`key=value` folders).
//! - [`locations`]: the roots SQL may name locations under (`squall.catalog.allowed_roots`).
//! - [`limits`]: settings a session may change, lower-only limits, the statement timeout.
//! - [`profile`]: per-query, per-stage figures.
//! - [`scalar_build`]: a nested-loop join builds its one-row side (a scalar subquery).
//! - [`query_record`]: a query's record (state, progress, failure, result) and the
//!   store it is kept in, the same on every backend.
//! - [`task_settings`]: the session settings sent to every task.
//! - [`cost`]: the modelled AWS cost of a profiled query, at list prices.
//! - [`paging`]: cutting a result into the pages a client reads.
//! - [`temp_dirs`]: temporary folders named by their owner, and sweeping a killed one's.

pub mod any_case;
pub mod any_name;
pub mod at_time_zone;
pub mod backend;
mod bare_values;
pub mod catalog;
pub mod checked_arithmetic;
pub mod clustered;
pub mod compared_aggregates;
pub mod coordinator;
pub mod correlated_limit;
pub mod correlated_scalar;
pub mod cost;
pub mod decimal_division;
pub mod decimal_literals;
pub mod deep_topk;
pub mod describe_prepared;
mod distinct_keys;
pub mod empty_select;
pub mod engine;
pub mod error;
pub mod exists_value;
pub mod explain;
pub mod expr_rules;
pub mod grouping_repeats;
mod hex_literals;
mod ignore_nulls;
pub mod information_schema;
pub mod interval_compare;
mod interval_ranges;
pub mod interval_times;
mod jdbc_columns;
pub mod key_filter;
pub mod lateral_unnest;
pub mod like_escape;
pub mod limits;
pub mod locations;
pub mod map_keys;
pub mod nested_correlation;
pub mod nesting;
pub mod ordered_subqueries;
pub mod outer_in_select;
pub mod paging;
pub mod partitions;
pub mod plan_check;
pub mod profile;
pub mod query_record;
pub mod quoted_names;
pub mod replan;
pub mod result_stream;
pub mod row_fields;
pub mod scalar_build;
pub mod scalar_subquery;
pub mod schema_merge;
pub mod select_names;
pub mod series;
mod session_schema;
pub mod set_stars;
pub mod shortcuts;
pub mod show_session;
pub mod show_stats;
mod signature_errors;
pub mod sort_keys;
pub mod split;
pub mod stages;
pub mod standard_sql;
pub mod table_sample;
pub mod task_settings;
pub mod temp_dirs;
pub mod time_travel;
pub mod timestamp_literals;
pub mod trino_dialect;
pub mod trino_functions;
pub mod trino_session;
pub mod trino_sql;
pub mod trino_types;
pub mod trino_values;
pub mod two_level;
pub mod type_of;
pub mod unmet_orders;
mod using_joins;
pub mod varchar_length;
pub mod window_filter;
mod window_names;
mod with_ties;

pub use coordinator::QueryProgress;
pub use engine::{
    CancellationToken, Engine, EngineOptions, QueryResult, ResultBatches, RunOptions,
    StreamedResult,
};
pub use error::PlannerError;
