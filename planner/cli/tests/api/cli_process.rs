//! The `squall` binary as a process: Ctrl-C (SIGINT) during `squall query`
//! cancels the query, removes its exchange objects and exits 130; `squall
//! serve` at info level logs neither the token nor the SQL's literals.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const LONG: &str =
    "select count(*) from lineitem a, lineitem b where a.l_orderkey + b.l_partkey < 0";

fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid}");
}

/// What an ended child wrote to its piped stderr.
fn stderr_of(child: &mut std::process::Child) -> String {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    stderr
}

#[test]
fn ctrl_c_cancels_the_query_cleans_up_and_exits_130() {
    let exchange = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_squall"))
        .args([
            "query",
            "--catalog",
            &catalog().to_string_lossy(),
            "-c",
            &format!("squall.exchange_location={}", exchange.path().display()),
            "-c",
            "squall.scan.target_task_bytes=50000",
            // Staged, so its scans write exchange objects while the join
            // runs (embedded, a query otherwise runs as one task).
            "-c",
            "squall.query.single_task_bytes=0",
            LONG,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run squall query");
    // Wait until the query has written exchange objects: it is running.
    let started = Instant::now();
    while count_files(exchange.path()) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the query never wrote an exchange object"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "squall query ended early ({status}): {}",
                stderr_of(&mut child)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupted = Instant::now();
    signal(child.id(), "-INT");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            interrupted.elapsed() < Duration::from_secs(20),
            "squall query did not exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr_of(&mut child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelling the query"), "{stderr}");
    assert_eq!(
        count_files(exchange.path()),
        0,
        "exchange objects left behind after Ctrl-C"
    );
    assert!(
        exchange.path().is_dir(),
        "the exchange folder given was removed with its objects"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_logs_carry_no_token_and_no_literals() {
    let token = "tok-3f9c1e-never-logged";
    let mut child = Command::new(env!("CARGO_BIN_EXE_squall"))
        .args([
            "serve",
            "--port",
            "0",
            "--catalog",
            &catalog().to_string_lossy(),
        ])
        .env("SQUALL_API_TOKEN", token)
        .env("SQUALL_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run squall serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    let client = squall_cli::client::TrinoClient::new(
        &base,
        vec![("Authorization".into(), format!("Bearer {token}"))],
        Duration::from_secs(60),
    )
    .unwrap();
    let secret = "s3cr3t-literal-4711";
    for sql in [
        format!("select n_name from nation where n_name = '{secret}'"),
        format!("select cast('{secret}' as int)"),
        format!("selec '{secret}'"),
    ] {
        client.run(&sql, Duration::from_secs(60)).await.unwrap();
    }
    signal(child.id(), "-TERM");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    assert!(
        logs.contains("query submitted") && logs.contains("sql_digest"),
        "{logs}"
    );
    assert!(logs.contains("query failed"), "{logs}");
    assert!(!logs.contains(secret), "a literal reached the log:\n{logs}");
    assert!(!logs.contains(token), "the token reached the log:\n{logs}");
}
