//! The `squall` command.
//!
//! ```text
//! squall query [--catalog DIR|s3://...|glue://DB] [--backend local|aws] [--format table|csv|json] [--config K=V]... "SQL"
//! squall tpch gen --sf SF --out DIR
//! squall tpch run --sf SF [--data DIR] [--queries 1,3,5] [--profile FILE] [--config K=V]...
//! squall tpch driver --sf SF [--data DIR] [--config K=V]...   (JSON lines over stdin/stdout)
//! squall tpch check EXPECTED.csv ACTUAL.csv [--query Q.sql]   (exit 0 on a match, 1 otherwise)
//! squall config                      list every squall.* setting with its default
//! squall cost < INPUTS.jsonl         price CostInputs JSON lines (see squall_planner::cost)
//! squall serve [--port 8080] [--host 127.0.0.1] [--backend local|aws] [--catalog DIR|s3://...|glue://DB] [--token T | --token-secret ID] [--config K=V]...
//! squall loadtest [--clients 8] [--duration 60] [--sf 0.01] [--data DIR] [--queries 1,3] [--seed 1]
//!                 [--heavy N [--heavy-cancel-after 3] [--heavy-timeout 3]] [--config K=V]...
//! squall fuzz [--duration 30] [--seed 1] [--target all|api|worker] [--data DIR]
//! squall bench scheduler [--tasks 100000] [--stages 2] [--config K=V]...
//! squall bench bloom [--keys 10000,100000,1000000] [--hits 0.05,0.5] [--probe-rows 10000000]
//!                    [--rounds 3] [--fpp F] [--distributions dense,orderkey,partsupp]
//! ```
//!
//! `serve` runs the HTTP API (the Trino client protocol, see
//! [`squall_server::router`]) over the embedded engine, or with `--backend aws` over
//! the aws query service (state in S3, a coordinator function per query: the
//! same service as the api Lambda function). It binds 127.0.0.1 by
//! default; a non-loopback address needs a token (`--token` or
//! `SQUALL_API_TOKEN`, or `--token-secret`/`SQUALL_API_TOKEN_SECRET` naming
//! a Secrets Manager secret that holds it, as the deployed api function
//! reads it), or it refuses to start. Once listening it prints
//! `listening on http://ADDR` on stdout (with `--port 0`, the port chosen).
//! Ctrl-C or SIGTERM stops `serve` within a few seconds: it stops its
//! queries (clients see `SERVER_SHUTTING_DOWN`), lets requests in flight
//! finish, and exits 0 (see [`squall_server::serve::serve_until_stopped`]).
//!
//! Errors go to stderr with exit code 1 (2 for usage errors, from clap).
//! Ctrl-C during `squall query` cancels the query, waits up to 10 s for its
//! tasks to stop and its exchange objects to be deleted, and exits with 130.

mod bench;
mod query;
mod serve;
mod tpch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use squall_server::ServerError;

#[derive(Parser, Debug)]
#[command(
    name = "squall",
    version,
    about = "Serverless distributed SQL over Parquet, on AWS Lambda or embedded"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run SQL (one or more `;`-separated statements) and print the last result.
    Query {
        /// Folder (or s3://bucket/prefix) whose sub-folders are tables of
        /// Parquet files, flat or in key=value partition folders; or
        /// glue://DATABASE, a Glue Data Catalog database (aws backend).
        #[arg(long, env = "SQUALL_CATALOG")]
        catalog: Option<String>,
        /// Where tasks run: `local` (in this process) or `aws` (S3, SQS and
        /// Lambda, configured by the standard AWS_* and SQUALL_* variables).
        #[arg(long, env = "SQUALL_BACKEND", default_value = "local")]
        backend: String,
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// A setting, `squall.*` or `datafusion.*` (repeatable).
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
        /// Write the query's profile (stages, tasks, requests by kind and
        /// by who made them, retries) and its modelled AWS cost here, as JSON.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// Read the SQL from this file (`-`: standard input) instead of the
        /// argument, for statements longer than a command line holds.
        #[arg(long, short = 'f', conflicts_with = "sql")]
        file: Option<PathBuf>,
        /// The SQL text (may start with a `--` comment); `-` reads it from
        /// standard input.
        #[arg(allow_hyphen_values = true, required_unless_present = "file")]
        sql: Option<String>,
    },
    /// TPC-H data and runs.
    Tpch {
        #[command(subcommand)]
        command: TpchCommand,
    },
    /// List every squall.* setting, its value here, and its environment variable.
    Config,
    /// Price query usage at AWS list prices: one JSON object of cost inputs
    /// per stdin line (worker_invocations, worker_ms, worker_memory_mb,
    /// coordinator_ms, coordinator_memory_mb, s3_get, s3_put, s3_list,
    /// sqs_requests), one JSON cost breakdown per stdout line.
    Cost,
    /// Load-test the HTTP API on loopback: N clients run TPC-H queries for a
    /// fixed time; every answer is checked. Exits 1 on a wrong answer.
    Loadtest {
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Seconds during which clients submit queries.
        #[arg(long, default_value_t = 60)]
        duration: u64,
        #[arg(long, default_value_t = 0.01)]
        sf: f64,
        /// Data folder (generated if missing); default data/tpch/sf{SF}.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Comma-separated query numbers to draw from; default all 22.
        #[arg(long, value_delimiter = ',')]
        queries: Vec<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Heavy clients beside the others (a nested-loop join over
        /// lineitem × lineitem, cancelled or timed out); with any, the test
        /// runs without and then with them and compares the short queries.
        #[arg(long, default_value_t = 0)]
        heavy: usize,
        /// Seconds after which a cancelling heavy client cancels.
        #[arg(long, default_value_t = 3)]
        heavy_cancel_after: u64,
        /// Statement timeout (seconds) of the other heavy clients.
        #[arg(long, default_value_t = 3)]
        heavy_timeout: u64,
        /// A setting, `squall.*` or `datafusion.*` (repeatable).
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
    },
    /// Fuzz the HTTP API (mutated SQL, malformed requests, raw bytes) and the
    /// worker (mutated task payloads) for a bounded time. Exits 1 on a finding.
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 30)]
        duration: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// `all`, `api` or `worker`.
        #[arg(long, default_value = "all")]
        target: String,
        /// TPC-H SF 0.01 data folder (generated if missing); default data/tpch/sf0.01.
        #[arg(long)]
        data: Option<PathBuf>,
    },
    /// Micro-benchmarks of engine parts, measured side by side in one run.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Serve the HTTP API (Trino client protocol) over the embedded engine or the aws backend.
    Serve {
        /// Port to listen on (0: any free port, printed once listening).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Address to bind; anything but loopback needs --token or --token-secret.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Where queries run: `local` (in this process) or `aws` (a coordinator
        /// Lambda function per query, state in S3 under squall.state_location).
        #[arg(long, env = "SQUALL_BACKEND", default_value = "local")]
        backend: String,
        /// Folder (or s3:// prefix) whose sub-folders are tables of Parquet
        /// files, or glue://DATABASE (aws backend).
        #[arg(long, env = "SQUALL_CATALOG")]
        catalog: Option<String>,
        /// Require `Authorization: Bearer TOKEN` (or basic auth with TOKEN as password).
        #[arg(long, env = "SQUALL_API_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// Require the token held by this Secrets Manager secret (name or ARN,
        /// read once at start-up), as the api function of a stack deployed
        /// with ApiAuth=Token does.
        #[arg(long, env = "SQUALL_API_TOKEN_SECRET", conflicts_with = "token")]
        token_secret: Option<String>,
        /// A setting, `squall.*` or `datafusion.*` (repeatable).
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
    },
}

#[derive(Subcommand, Debug)]
enum TpchCommand {
    /// Generate TPC-H Parquet data (one folder per table).
    Gen {
        #[arg(long)]
        sf: f64,
        #[arg(long)]
        out: PathBuf,
        /// Rows per Parquet row group.
        #[arg(long, default_value_t = squall_tpch::datagen::DEFAULT_ROW_GROUP_ROWS)]
        row_group_rows: usize,
    },
    /// Run TPC-H queries distributed on the embedded backend and check every answer.
    Run {
        #[arg(long)]
        sf: f64,
        /// Data folder (generated if missing); default data/tpch/sf{SF}.
        #[arg(long)]
        data: Option<PathBuf>,
        /// Comma-separated query numbers; default all 22.
        #[arg(long, value_delimiter = ',')]
        queries: Vec<usize>,
        /// Write per-query figures as JSON here.
        #[arg(long)]
        profile: Option<PathBuf>,
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
        /// Run each query with a feature on and off, alternating, and print
        /// both sides' exchange volumes and times (features: bloom, or KEY=ON,OFF: one setting at two values, e.g. squall.shuffle.compression=none,lz4).
        #[arg(long)]
        compare: Option<String>,
        /// With --compare: timed runs per side and query (after one warm-up).
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
    /// Compare an answer with the expected one, cell by cell (money to 0.01,
    /// other numbers to a relative 1e-6, ties of the query's ORDER BY as
    /// multisets). Prints `ok` (exit 0) or the first difference (exit 1).
    Check {
        /// The expected answer (CSV with a header; NULL as an empty field).
        expected: PathBuf,
        /// The answer to check, in the same form.
        actual: PathBuf,
        /// The query's SQL file, whose ORDER BY decides which order counts
        /// (without it, rows compare as a multiset).
        #[arg(long)]
        query: Option<PathBuf>,
    },
    /// Serve a benchmark runner: one engine, commands on stdin (`run N`,
    /// `expected N FILE`, `quit`), one JSON line per reply on stdout.
    Driver {
        #[arg(long)]
        sf: f64,
        /// Data folder (generated if missing); default data/tpch/sf{SF}.
        #[arg(long)]
        data: Option<PathBuf>,
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// The coordinator scheduling no-op tasks over in-process seams: launch,
    /// report, accept and stage barriers, nothing else. Prints
    /// `scheduled N tasks in X s: Y tasks/s` last.
    Scheduler {
        /// Tasks in all.
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
        /// Stages in a chain (each starts when the one before has finished).
        #[arg(long, default_value_t = 2)]
        stages: usize,
        /// A setting, `squall.*` (repeatable), e.g. squall.task.launch_concurrency=256.
        #[arg(long = "config", short = 'c', value_parser = parse_setting)]
        config: Vec<(String, String)>,
    },
    /// squall's join-key Bloom filter against the bloomfilter crate on TPC-H
    /// key distributions: build time, serialized bytes, measured false-positive
    /// rate, probe rows/s through the batch path and checks/s of the filter alone.
    Bloom {
        /// Comma-separated build-side key counts.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
        keys: Vec<usize>,
        /// Comma-separated fractions of probe rows whose key is a build key.
        #[arg(long, value_delimiter = ',', default_value = "0.05,0.5")]
        hits: Vec<f64>,
        /// Probe rows per case.
        #[arg(long, default_value_t = 10_000_000)]
        probe_rows: usize,
        /// Timed rounds per case (alternating which filter goes first).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Target false-positive rate of both filters (default: squall.bloom.fpp).
        #[arg(long)]
        fpp: Option<f64>,
        /// Comma-separated key distributions: dense, orderkey, partsupp (default all).
        #[arg(long, value_delimiter = ',')]
        distributions: Vec<String>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
}

/// Exit code after Ctrl-C (128 + SIGINT), as shells report it.
const EXIT_INTERRUPTED: u8 = 130;

/// Longest `squall query` waits, after Ctrl-C, for the query to stop and clean up.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

fn parse_setting(s: &str) -> std::result::Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got {s:?}"))?;
    let k = k.trim();
    if k.is_empty() {
        return Err(format!("empty key in {s:?}"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// Entry point of the `squall` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .max_blocking_threads(squall_core::executor::BLOCKING_THREADS)
        .thread_stack_size(squall_core::executor::THREAD_STACK_BYTES)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // Whatever still runs (a task inside an operator on the CPU executor,
    // a stuck request) must not hold up the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SQUALL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

async fn run(cli: Cli) -> std::result::Result<ExitCode, ServerError> {
    match cli.command {
        Command::Serve {
            port,
            host,
            backend,
            catalog,
            token,
            token_secret,
            config,
        } => {
            let auth = serve::ServeAuth {
                token,
                token_secret,
            };
            serve::serve_command(&host, port, &backend, catalog, auth, config).await
        }
        Command::Loadtest {
            clients,
            duration,
            sf,
            data,
            queries,
            seed,
            heavy,
            heavy_cancel_after,
            heavy_timeout,
            config,
        } => {
            use crate::loadtest::heavy;
            let options = crate::loadtest::LoadOptions {
                clients,
                duration: std::time::Duration::from_secs(duration),
                scale_factor: sf,
                data,
                queries,
                seed,
                settings: config,
                heavy: heavy::HeavyOptions {
                    clients: heavy,
                    cancel_after: std::time::Duration::from_secs(heavy_cancel_after),
                    timeout: std::time::Duration::from_secs(heavy_timeout),
                },
                ..crate::loadtest::LoadOptions::default()
            };
            let report = heavy::run_and_print(&options).await?;
            Ok(if report.wrong == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Fuzz {
            duration,
            seed,
            target,
            data,
        } => {
            let (api, worker) = match target.as_str() {
                "all" => (true, true),
                "api" => (true, false),
                "worker" => (false, true),
                other => {
                    return Err(ServerError::BadRequest {
                        message: format!("unknown fuzz target {other:?} (all, api or worker)"),
                    });
                }
            };
            let options = crate::fuzz::FuzzOptions {
                duration: std::time::Duration::from_secs(duration),
                seed,
                api,
                worker,
                data,
                ..crate::fuzz::FuzzOptions::default()
            };
            let report = crate::fuzz::run(&options).await?;
            print!("{}", report.display());
            Ok(if report.findings.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Query {
            catalog,
            backend,
            format,
            config,
            profile,
            file,
            sql,
        } => {
            let sql = query::sql_text(file, sql)?;
            Ok(query::query(catalog, &backend, format, config, profile, &sql).await?)
        }
        Command::Cost => Ok(query::cost()?),
        Command::Config => Ok(query::config()?),
        Command::Tpch { command } => Ok(tpch::tpch_command(command).await?),
        Command::Bench { command } => Ok(bench::bench_command(command).await?),
    }
}
