//! # squall-cli
//!
//! The `squall` command, a user's local entry point (`src/main.rs` only
//! wires [`cli::main`]). It drives the engine's libraries and never the
//! other way round: the Lambda functions link none of this crate, its
//! argument parser, its HTTP client or the TPC-H tooling.
//!
//! # Layout
//!
//! - [`cli`]: the command line (`query`, `tpch`, `config`, `cost`, `serve`, `loadtest`, `fuzz`, `bench`).
//! - [`client`]: a small Trino-protocol client (what the load test and the fuzzer drive the API with).
//! - [`loadtest`]: N concurrent clients running TPC-H through the API, every answer checked.
//! - [`scheduler_bench`]: the coordinator scheduling no-op tasks (`squall bench scheduler`).
//! - [`fuzz`]: seeded, bounded-time fuzzing of the API (here) and the worker
//!   (`squall_worker_fuzz`).
//!
//! Its tests are the end-to-end ones that need the `squall` binary or the
//! whole product: `tests/api` (the HTTP API on a real server, the command
//! as a process, the real `trino` client), `tests/aws_emulated` (the aws
//! backend against moto and `cargo lambda watch`) and `tests/bench_runner.rs`
//! (the benchmark runner's own tests).

pub mod cli;
pub mod client;
pub mod fuzz;
pub mod loadtest;
pub mod scheduler_bench;
