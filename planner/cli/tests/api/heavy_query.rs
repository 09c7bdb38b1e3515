//! Runs `tests/trino_heavy.py`: one heavy statement (a nested-loop join over
//! TPC-H SF 0.1 `lineitem × lineitem`) on `squall serve`, driven by the real
//! `trino` Python client, must not take the service down. A missing `trino`
//! module is a failure that says how to install it, never a skip.

use std::process::Command;

#[test]
fn a_heavy_query_neither_starves_the_api_nor_outlives_its_cancel() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/trino_heavy.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_squall"))
        .env_remove("SQUALL_API_TOKEN")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}): install Python 3 and `python3 -m pip install trino`")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named 'trino'") && out.status.code() != Some(3),
        "the `trino` Python client is missing: run `python3 -m pip install trino`\n{stderr}"
    );
    assert!(
        out.status.success(),
        "trino_heavy.py failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("heavy query: all checks passed"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // The figures the script measured, for whoever runs the test with --nocapture.
    println!("{stdout}");
}
