//! Short runs of `squall loadtest` (also with heavy clients beside the
//! TPC-H ones) and `squall fuzz` (the library calls behind them), so both
//! keep working: a few seconds each here; longer runs
//! with `SQUALL_FUZZ_SECS=300 SQUALL_FUZZ_SEED=7 cargo test --workspace
//! --test api fuzz` or the subcommands.

use std::time::Duration;

use squall_cli::fuzz::{FuzzOptions, run as fuzz};
use squall_cli::loadtest::heavy::HeavyOptions;
use squall_cli::loadtest::{LoadOptions, run as load};

use crate::common::*;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_load_test_answers_every_query_right() {
    let options = LoadOptions {
        clients: 4,
        duration: Duration::from_secs(4),
        scale_factor: 0.01,
        data: Some(catalog().clone()),
        settings: vec![("squall.server.max_running_queries".into(), "2".into())],
        ..LoadOptions::default()
    };
    let report = load(&options).await.unwrap();
    println!("{}", report.display());
    assert!(report.completed > 0, "{}", report.display());
    assert_eq!(report.wrong, 0, "{}", report.display());
    assert_eq!(report.error_count(), 0, "{}", report.display());
    assert!(report.max_running <= 2, "{}", report.display());
    assert!(report.latency_ms(0.5) > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_queries_answer_right_beside_heavy_ones() {
    let options = LoadOptions {
        clients: 3,
        duration: Duration::from_secs(6),
        scale_factor: 0.01,
        data: Some(catalog().clone()),
        queries: vec![1, 3, 6, 12],
        heavy: HeavyOptions {
            clients: 2,
            cancel_after: Duration::from_secs(2),
            timeout: Duration::from_secs(2),
        },
        ..LoadOptions::default()
    };
    let report = load(&options).await.unwrap();
    println!("{}", report.display());
    assert!(report.completed > 0, "{}", report.display());
    assert_eq!(report.wrong, 0, "{}", report.display());
    assert_eq!(report.error_count(), 0, "{}", report.display());
    let heavy = &report.heavy;
    // One client cancels its heavy statements, the other lets them time out.
    assert!(heavy.cancelled > 0, "{}", report.display());
    assert!(heavy.timed_out > 0, "{}", report.display());
    assert!(heavy.other.is_empty(), "{}", report.display());
}

async fn fuzz_target(api: bool, worker: bool) {
    let options = FuzzOptions {
        duration: Duration::from_secs(env_u64("SQUALL_FUZZ_SECS", 4)),
        seed: env_u64("SQUALL_FUZZ_SEED", 1),
        api,
        worker,
        data: Some(catalog().clone()),
        case_deadline: Duration::from_secs(60),
        concurrency: 3,
    };
    let report = fuzz(&options).await.unwrap();
    println!("{}", report.display());
    assert!(report.findings.is_empty(), "{}", report.display());
    let target = if api { "api" } else { "worker" };
    assert!(report.cases(target) > 0, "{}", report.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_the_api() {
    fuzz_target(true, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzz_the_worker() {
    fuzz_target(false, true).await;
}

/// Random queries (`bench/sql_fuzz.py`: joins of every kind on NULL and
/// duplicate keys, subqueries, grouping sets, windows, set operations)
/// answered alike staged over many tasks and as one task of small batches,
/// and as DuckDB answers them. A fixed seed: the same queries each run;
/// longer runs with `SQUALL_SQL_FUZZ_QUERIES=300 SQUALL_SQL_FUZZ_SEED=7`.
#[test]
fn random_queries_answer_alike_staged_as_one_task_and_in_duckdb() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let queries = env_u64("SQUALL_SQL_FUZZ_QUERIES", 30).to_string();
    let seed = env_u64("SQUALL_SQL_FUZZ_SEED", 1).to_string();
    let out = std::process::Command::new("python3")
        .args([
            "bench/sql_fuzz.py",
            "--duckdb",
            "--queries",
            &queries,
            "--seed",
            &seed,
        ])
        .args(["--squall", env!("CARGO_BIN_EXE_squall")])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}): install Python 3"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "a Python package is missing: run `python3 -m pip install trino duckdb pyarrow`\n{stderr}"
    );
    assert!(
        out.status.success() && stdout.contains(&format!("{queries} queries, 0 findings")),
        "sql_fuzz.py found answers that differ ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}
