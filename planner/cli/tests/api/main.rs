//! End-to-end tests of the HTTP API: a real server on 127.0.0.1:0, in
//! process, over an `EmbeddedService` and a generated TPC-H SF 0.01 catalog,
//! driven with a plain HTTP client. One binary; each module covers one
//! concern:
//!
//! - `results`: POST and follow `nextUri` to the end; the 22 TPC-H queries
//!   over small pages equal the engine's own answers; every document has the
//!   protocol's shape; a drained query is forgotten.
//! - `types`: column types and typeSignatures, and the JSON value encodings
//!   of bigint, integer, decimal, double (NaN), real, varchar, boolean,
//!   date, timestamp, array and null.
//! - `malformed`: empty SQL (400), wrong methods (405), unknown query ids,
//!   wrong slugs and unknown paths (404), unreadable paths (400), garbage or out-of-range page
//!   tokens (400), bad session headers (400), bad SQL (FAILED with a
//!   USER_ERROR); every error body Trino-shaped.
//! - `auth`: with a token, no or wrong credentials get 401, bearer and basic
//!   get in; `squall serve` refuses a non-loopback address without a token.
//! - `cancel`: a client that disappears has its query stopped; DELETE stops a long query (running or queued): the next GET
//!   says FAILED / USER_CANCELED, the summary says CANCELED, the engine's
//!   tasks stop; the same through Trino's kill endpoint `DELETE
//!   /v1/query/{id}`; a service shutdown stops every query with
//!   SERVER_SHUTTING_DOWN and refuses new ones.
//! - `session`: `SET SESSION` answers with `X-Trino-Set-Session`; session
//!   properties reach the query; bad properties fail as user errors.
//! - `uris`: `nextUri`/`infoUri` follow `Host` and `X-Forwarded-Proto/Host/Prefix`.
//! - `python_client`: how `trino_client` and `heavy_query` run their Python scripts.
//! - `trino_client`: `tests/trino_client.py` drives `squall serve` with the
//!   real `trino` Python client (fails, never skips, when it is missing).
//! - `js_client`: `tests/js/trino_js_client.js`, the same with the Node.js
//!   Trino client (npm `trino-client`): TPC-H answers, pages, errors, a
//!   session property, cancel.
//! - `dbt_project`: `tests/dbt_project.py` runs dbt (dbt-trino) against
//!   `squall serve`: seeds, views, tables swapped in by rename, an
//!   incremental delete+insert model, data tests, dbt's cross-database
//!   macros; the models checked against DuckDB.
//! - `heavy_query`: `tests/trino_heavy.py`, the same client against a
//!   `squall serve` over SF 0.1 running a nested-loop join over
//!   `lineitem × lineitem`: the API and a second client's TPC-H query still
//!   answer, a cancel (DELETE nextUri, and the kill endpoint) stops the
//!   process's CPU use, SIGTERM ends the server.
//! - `limits`: the running-query cap and its FIFO queue (a full queue is
//!   QUERY_QUEUE_FULL), the statement timeout and a cancel stopping the
//!   workers (by the workers' own count), the per-query memory limit,
//!   session settings that may not change, locations outside the allowed roots.
//! - `cli_process`: Ctrl-C in `squall query` (exit 130, no exchange objects
//!   left); `squall serve` logs at info without the token or SQL literals.
//! - `load_and_fuzz`: short runs of the load test (every answer right, also
//!   beside heavy clients whose statements are cancelled or time out), of
//!   the API and worker fuzzers (no finding), and random queries answered
//!   alike staged, as one task and by DuckDB (`bench/sql_fuzz.py`).

// Test code: a failed expectation panics (the workspace denies these lints
// in library code; clippy.toml allows them only inside #[test] functions).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod python_client;

mod auth;
mod cancel;
mod cli_process;
mod dbt_project;
mod heavy_query;
mod js_client;
mod limits;
mod load_and_fuzz;
mod malformed;
mod results;
mod session;
mod trino_client;
mod types;
mod uris;
