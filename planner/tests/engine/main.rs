//! End-to-end tests of the engine on the embedded backend. One binary; each
//! module covers one concern:
//!
//! - `tpch`: the 22 queries distributed, equal to the TPC-H answers (SF 0.1)
//!   and to single-node DataFusion on the same files.
//! - `many_tasks`: the 22 queries with tiny row groups and task targets, so
//!   every stage runs as many tasks and exchanges have many map outputs.
//! - `coalesce`: reduce tasks formed from the measured partition sizes (one
//!   GET per map object for a range of partitions) and broadcast inputs
//!   combined into one object: equal answers, fewer GETs.
//! - `two_level`: the two-level exchange of hash reads forced on (combine
//!   stages between map stages and their partitioned readers) over many map
//!   tasks: equal answers, fewer exchange GETs, the grids in EXPLAIN
//!   ANALYZE, nothing left behind, crashing combine tasks retried.
//! - `tree`: tree invocation as the coordinator drives it (large stages
//!   start in batches of one stage, at most the fan-out each; tasks of a
//!   launcher that died start again by their deadlines): equal answers.
//! - `staged_plans`: snapshots of the staged plans of the 22 queries.
//! - `clustered`: aggregations grouped by the column a table's row groups
//!   follow (line items by order key) run with no exchange, over many
//!   tasks cut only between row groups with no key in common; NULL keys,
//!   overlapping row groups, floating-point keys and rolled-up grouping
//!   sets keep the exchange. Equal to single-node DataFusion either way.
//! - `small_queries`: queries reading less than
//!   `squall.query.single_task_bytes` run as one task (the 22 queries at SF
//!   0.1, right answers); the threshold counts projected bytes, CSV files
//!   by their size; EXPLAIN names the choice. Every other module runs its
//!   queries staged (`common::settings`).
//! - `concurrency`: two queries at once on one engine.
//! - `handoff`: queries longer than one coordinator run (a tiny
//!   `squall.coordinator.max_run_secs`): checkpointed, handed over and
//!   resumed from a fresh plan, in process and by the caller, equal to
//!   single-node DataFusion, no accepted task launched again, nothing left
//!   behind; a checkpoint of another plan refused by name.
//! - `retries`: injected task failures are retried, answers stay right, and
//!   no exchange object or queue is left behind; an undecodable task payload
//!   fails the query at once, naming its stage and task.
//! - `faults`: the 22 queries under each injected fault kind (task crashes
//!   and hangs, store errors and slow requests, duplicated, late and lost
//!   messages, throttled invocations, all at once): right answers, the
//!   recovery seen in the profiles, nothing left behind; clean failures
//!   naming stage, task and cause once retries are spent.
//! - `cancel`: cancelling a running query stops its tasks and cleans up.
//! - `limits`: the statement timeout stops the workers and cleans up; the
//!   per-query memory limit fails a join (naming stage and task) and lets a
//!   sort spill; locations outside the allowed roots are refused.
//! - `key_filter`: join-key filters on and off, join semantics with NULL keys,
//!   multi-column keys and empty build sides, filters under task crashes.
//! - `key_filter_at_scale`: filters in plans made as SF1000's would be
//!   (through a join into the scanning stage; from a filtered aggregation).
//! - `requests`: the requests a query makes of S3, SQS and Lambda, as the
//!   profile counts them at the seams, add up (GETs per non-empty range,
//!   PUTs per map object, a cleanup LIST per shard written to, a DELETE per
//!   object, a SendMessage per report) and are priced.
//! - `spill`: a map output beyond the memory limit (or the spill threshold)
//!   spills to local disk and is uploaded in parts; the answer equals
//!   single-node DataFusion's and the profile shows the spills.
//! - `results`: results read batch by batch from the final stage's objects,
//!   equal to single-node DataFusion, the objects deleted after the last
//!   batch, when dropped half read, and when nobody reads them.
//! - `mistyped_sql`: statements that are not Trino's SQL or read a value
//!   as what it is not (a field of a DATE, an empty select list as a
//!   value, an interval compared with a number): refused at planning,
//!   naming the problem; a difference of two dates is their days.
//! - `correlated_subqueries`: correlated subqueries DataFusion refuses,
//!   planned as joins.
//! - `sql`: statements beyond TPC-H (SET, EXPLAIN, VALUES, empty results, errors).
//! - `trino_sql`: SQL Trino clients send that DataFusion refuses or answers
//!   wrong (rows in a subquery, ANY / ALL, EXCEPT / INTERSECT ALL, FETCH,
//!   USING joins, Trino's functions, SIMILAR TO).
//! - `trino_statements`: CREATE SCHEMA, RENAME, DELETE / UPDATE with
//!   subqueries, an engine of one request, transactions, SHOW SESSION.
//! - `nested_data`: array columns as rows (`CROSS JOIN UNNEST`, `LEFT JOIN
//!   UNNEST ... ON true`, `WITH ORDINALITY`), JSON and URL text, more of
//!   Trino's functions, and the session's `current_user`.
//! - `catalog`: unreadable tables set aside, tables of many files, files
//!   added later, tables named by their folders, S3 locations refused.
//! - `file_schemas`: files of one table that disagree (widened column types,
//!   columns added later, names in other cases).
//! - `browsing`: SHOW, information_schema, system.jdbc, qualified names.
//! - `literals`: decimal literals are DECIMALs and exponents DOUBLEs, as in
//!   Trino; TPC-H on tables whose money is DOUBLE answers right.
//! - `select_lists`: a `*` beside an item naming its columns again, and
//!   items DataFusion names alike, named apart.
//! - `dates`: EXTRACT reads Trino's fields as Trino's functions do.
//! - `lambdas`: lambdas name the fields of arrays of rows.
//! - `operators`: `IS DISTINCT FROM` and `||` bind as in Trino's grammar.
//! - `outer_joins`: the padded side is not constant; collected left joins.
//! - `grouping_sets`: a grouping set's NULL-padded columns are not constant.
//! - `filter_pushdown`: run-time filters pass a semi join by its keys.
//! - `planned_shapes`: plans that failed to build or check (a union of a
//!   projected aggregate, a failed statistics shortcut).
//! - `generated_rows`: `generate_series`, `range` and `WITH RECURSIVE`.
//! - `partitions`: Hive-style partitioned tables (folder catalog and
//!   `CREATE EXTERNAL TABLE ... PARTITIONED BY`): answers, pruning in EXPLAIN
//!   and the profile, refused layouts.
//! - `prepared`: `DESCRIBE OUTPUT` / `DESCRIBE INPUT` of prepared statements.
//! - `show_stats`: `SHOW STATS FOR t` from Parquet footers.
//! - `windows`: two window functions with different `PARTITION BY` lists over
//!   a grouped aggregate of a join, in a CTE joined to itself, at two scale
//!   factors and several partition counts, equal to single-node DataFusion;
//!   every staged plan of TPC-H, `sql` and those queries round-trips through
//!   the task codec with its properties.
//!
//! Every test builds its data in a temporary folder (shared per scale factor
//! and layout within this binary).

// Test code: a failed expectation panics (the workspace denies these lints
// in library code; clippy.toml allows them only inside #[test] functions).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod browsing;
mod cancel;
mod coalesce;
mod filter_pushdown;
mod grouping_sets;
mod key_filter;
mod key_filter_at_scale;

mod catalog;
mod clustered;
mod concurrency;
mod correlated_subqueries;
mod dates;
mod delta_deletion_vectors;
mod delta_tables;
mod faults;
mod fetch_with_ties;
mod file_schemas;
mod generated_rows;
mod handoff;
mod iceberg_tables;
mod lambdas;
mod limits;
mod literals;
mod many_tasks;
mod mistyped_sql;
mod nested_data;
mod operators;
mod outer_joins;
mod partition_nulls;
mod partitions;
mod planned_shapes;
mod prepared;
mod requests;
mod results;
mod retries;
mod reused_stages;
mod scalar_subqueries;
mod select_lists;
mod show_stats;
mod small_queries;
mod spill;
mod sql;
mod staged_plans;
mod text_tables;
mod tpch;
mod tree;
mod trino_aggregates;
mod trino_math;
mod trino_sql;
mod trino_statements;
mod two_level;
mod windows;
