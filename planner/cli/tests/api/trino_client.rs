//! Runs `tests/trino_client.py`: the real `trino` Python client against
//! `squall serve`. A missing `trino` module is a failure that says how to
//! install it, never a skip.

use std::process::Command;

#[test]
fn trino_python_client_against_squall_serve() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/trino_client.py");
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
        "trino_client.py failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("trino client: all checks passed"),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
}
