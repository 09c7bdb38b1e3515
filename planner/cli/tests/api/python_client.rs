//! Running a Python script that drives `squall serve` with the real `trino`
//! client (`tests/trino_client.py`, `tests/trino_heavy.py`): the script gets
//! this build's `squall` binary, a missing `trino` module is a failure that
//! says how to install it (never a skip), and the script must say that all
//! its checks passed.

use std::process::Command;

/// Runs `tests/{script}` and returns its stdout once it printed `passed`.
pub fn run_trino_script(script: &str, passed: &str) -> String {
    let path = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(&path)
        .arg(env!("CARGO_BIN_EXE_squall"))
        .env_remove("SQUALL_API_TOKEN")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 ({e}): install Python 3 and `python3 -m pip install trino`")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(3) && !stderr.contains("No module named"),
        "a Python package the script needs is missing (it says which and how to install it):\n{stderr}"
    );
    assert!(
        out.status.success(),
        "{script} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains(passed),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}
