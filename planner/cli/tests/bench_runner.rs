//! Runs the benchmark runner's own tests (`bench/tests`, Python unittest):
//! the answer comparison, the ratio and geomean arithmetic, the report, the
//! engine processes and their peak-memory accounting, and the whole runner
//! end to end on TPC-H SF 0.01 with this build's `squall` and both peers.
//! Missing Python packages (`duckdb`, `datafusion`, `pyarrow`) are a failure
//! that says how to install them, never a skip. No timed assertions.

use std::process::Command;

#[test]
fn bench_runner_python_tests() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "bench/tests", "-v"])
        .current_dir(root)
        .env("SQUALL_BIN", env!("CARGO_BIN_EXE_squall"))
        .env("BENCH_REQUIRE_E2E", "1")
        .env_remove("SQUALL_WORKER_MEMORY_MB")
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}): install Python 3"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "a Python package is missing: run `python3 -m pip install duckdb datafusion pyarrow`\n{stderr}"
    );
    assert!(
        out.status.success(),
        "bench/tests failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // unittest reports on stderr; nothing may be skipped here.
    assert!(stderr.contains("\nOK"), "stderr:\n{stderr}");
    assert!(
        !stderr.contains("skipped="),
        "a test was skipped:\n{stderr}"
    );
}
