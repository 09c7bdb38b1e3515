//! Runs `tests/trino_heavy.py`: one heavy statement (a nested-loop join over
//! TPC-H SF 0.1 `lineitem × lineitem`) on `squall serve`, driven by the real
//! `trino` Python client, must not take the service down. A missing `trino`
//! module is a failure that says how to install it, never a skip.

use crate::python_client::run_trino_script;

#[test]
fn a_heavy_query_neither_starves_the_api_nor_outlives_its_cancel() {
    let stdout = run_trino_script("trino_heavy.py", "heavy query: all checks passed");
    // The figures the script measured, for whoever runs the test with --nocapture.
    println!("{stdout}");
}
