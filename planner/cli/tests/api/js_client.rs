//! Runs `tests/js/trino_js_client.js`: the Node.js Trino client (npm
//! `trino-client`) against `squall serve`. A missing `node` or client
//! module is a failure that says how to install it, never a skip.

use std::process::Command;

#[test]
fn trino_js_client_against_squall_serve() {
    let script = format!("{}/tests/js/trino_js_client.js", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("node")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_squall"))
        .env_remove("SQUALL_API_TOKEN")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run node ({e}): install Node.js, then `npm ci --prefix planner/cli/tests/js`"
            )
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() != Some(3),
        "the `trino-client` module is missing (install it with `npm ci --prefix planner/cli/tests/js`):\n{stderr}"
    );
    assert!(
        out.status.success() && stdout.contains("trino js client: all checks passed"),
        "trino_js_client.js failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}
