//! The `squall` binary as a process: Ctrl-C (SIGINT) during `squall query`
//! cancels the query, removes its exchange objects and exits 130; `squall
//! serve` at info level logs neither the token nor the SQL's literals;
//! `squall query` reads a statement longer than a command line holds from
//! a file or standard input, and prints a table of more rows than it holds
//! at once.

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

#[test]
fn a_statement_longer_than_a_command_line_is_read_from_a_file_or_stdin() {
    use std::io::Write;
    // 100,000 keys: about 600 kB, past Linux's 128 kB for one argument.
    let keys: Vec<String> = (1..=100_000).map(|k| k.to_string()).collect();
    let sql = format!(
        "select count(*) as n from orders where o_orderkey in ({})",
        keys.join(",")
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.sql");
    std::fs::write(&file, &sql).unwrap();
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_squall"))
            .args([
                "query",
                "--format",
                "csv",
                "--catalog",
                &catalog().to_string_lossy(),
            ])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run squall query");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    };
    // The keys listed are those up to 100,000.
    let whole = String::from_utf8(
        run(
            &["select count(*) as n from orders where o_orderkey <= 100000"],
            None,
        )
        .stdout,
    )
    .unwrap();
    assert!(whole.starts_with("n\n") && whole.len() > 3, "{whole}");
    for (args, stdin) in [
        (vec!["--file", file.to_str().unwrap()], None),
        (vec!["-f", "-"], Some(sql.as_str())),
        (vec!["-"], Some(sql.as_str())),
    ] {
        let out = run(&args, stdin);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8(out.stdout).unwrap(), whole, "{args:?}");
    }
    let missing = dir.path().join("missing.sql");
    let out = run(&["--file", missing.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read the SQL file") && stderr.contains("missing.sql"),
        "{stderr}"
    );
}

/// The table format streams in blocks of rows (it held every row, three
/// times over as text: `select * from lineitem` at SF1 took 24 GB and the
/// out-of-memory kill): every row is printed, under one header.
#[test]
fn a_table_of_many_rows_is_printed_in_blocks_under_one_header() {
    let out = Command::new(env!("CARGO_BIN_EXE_squall"))
        .args([
            "query",
            "--catalog",
            &catalog().to_string_lossy(),
            "select l_orderkey, l_linenumber from lineitem order by 1, 2",
        ])
        .output()
        .expect("run squall query");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["|", "l_orderkey", "|", "l_linenumber", "|"]
    );
    let rows: Vec<(i64, i64)> = lines[1..]
        .iter()
        .map(|l| {
            let cells: Vec<i64> = l.split('|').filter_map(|c| c.trim().parse().ok()).collect();
            (cells[0], cells[1])
        })
        .collect();
    let csv = Command::new(env!("CARGO_BIN_EXE_squall"))
        .args([
            "query",
            "--format",
            "csv",
            "--catalog",
            &catalog().to_string_lossy(),
            "select count(*) from lineitem",
        ])
        .output()
        .unwrap();
    let count: usize = String::from_utf8(csv.stdout)
        .unwrap()
        .lines()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(count > 10_000, "more rows than one block: {count}");
    assert_eq!(rows.len(), count);
    assert!(
        rows.windows(2).all(|w| w[0] < w[1]),
        "rows in order, none repeated"
    );
}

/// A statement with no result columns (CREATE TABLE ... AS, CREATE VIEW)
/// succeeds and prints nothing, in every format; its empty table failed
/// ("must either specify a row count or at least one column", exit 1).
#[test]
fn statements_without_result_columns_print_nothing_and_succeed() {
    for format in ["table", "csv", "json"] {
        for sql in [
            "create table t as select 1 as x",
            "create view v as select 1 as x",
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_squall"))
                .args(["query", "--format", format, sql])
                .output()
                .expect("run squall query");
            assert!(
                out.status.success(),
                "{format} {sql}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                "",
                "{format} {sql}"
            );
        }
    }
}
