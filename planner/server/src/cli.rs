//! The `squall` command.
//!
//! ```text
//! squall query [--catalog DIR|s3://...] [--backend local|aws] [--format table|csv|json] [--config K=V]... "SQL"
//! squall tpch gen --sf SF --out DIR
//! squall tpch run --sf SF [--data DIR] [--queries 1,3,5] [--profile FILE] [--config K=V]...
//! squall tpch driver --sf SF [--data DIR] [--config K=V]...   (JSON lines over stdin/stdout)
//! squall config                      list every squall.* setting with its default
//! squall cost < INPUTS.jsonl         price CostInputs JSON lines (see squall_planner::cost)
//! squall serve [--port 8080] [--host 127.0.0.1] [--backend local|aws] [--catalog DIR|s3://...] [--token T] [--config K=V]...
//! squall loadtest [--clients 8] [--duration 60] [--sf 0.01] [--data DIR] [--queries 1,3] [--seed 1]
//!                 [--heavy N [--heavy-cancel-after 3] [--heavy-timeout 3]] [--config K=V]...
//! squall fuzz [--duration 30] [--seed 1] [--target all|api|worker] [--data DIR]
//! ```
//!
//! `serve` runs the HTTP API (the Trino client protocol, see
//! [`crate::router`]) over the embedded engine, or with `--backend aws` over
//! the aws query service (state in S3, a coordinator function per query: the
//! same service as the api Lambda function). It binds 127.0.0.1 by
//! default; a non-loopback address needs a token (`--token` or
//! `SQUALL_API_TOKEN`), or it refuses to start. Once listening it prints
//! `listening on http://ADDR` on stdout (with `--port 0`, the port chosen).
//!
//! Ctrl-C or SIGTERM stops `serve` within a few seconds: it stops its
//! queries (clients see `SERVER_SHUTTING_DOWN`), lets requests in flight
//! finish, and exits 0 (see [`crate::serve::serve_until_stopped`]).
//!
//! Errors go to stderr with exit code 1 (2 for usage errors, from clap).
//! Ctrl-C during `squall query` cancels the query, waits up to 10 s for its
//! tasks to stop and its exchange objects to be deleted, and exits with 130.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use clap::{Parser, Subcommand, ValueEnum};
use datafusion::common::config::ExtensionOptions;
use datafusion::error::{DataFusionError, Result};
use squall_core::config::{SquallConfig, env_var_name};
use squall_planner::tpch;
use squall_planner::{CancellationToken, Engine, EngineOptions, QueryResult, RunOptions};

use crate::auth::{ApiAuth, check_bind};
use crate::aws::{AwsOptions, AwsService};
use crate::embedded::{EmbeddedOptions, EmbeddedService};
use crate::error::ServerError;
use crate::router::{ApiOptions, router};
use crate::service::QueryService;

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
        /// Folder whose sub-folders are tables of Parquet files.
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
        /// The SQL text (may start with a `--` comment).
        #[arg(allow_hyphen_values = true)]
        sql: String,
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
    /// Serve the HTTP API (Trino client protocol) over the embedded engine or the aws backend.
    Serve {
        /// Port to listen on (0: any free port, printed once listening).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Address to bind; anything but loopback needs --token.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Where queries run: `local` (in this process) or `aws` (a coordinator
        /// Lambda function per query, state in S3 under squall.state_location).
        #[arg(long, env = "SQUALL_BACKEND", default_value = "local")]
        backend: String,
        /// Folder (or s3:// prefix) whose sub-folders are tables of Parquet files.
        #[arg(long, env = "SQUALL_CATALOG")]
        catalog: Option<String>,
        /// Require `Authorization: Bearer TOKEN` (or basic auth with TOKEN as password).
        #[arg(long, env = "SQUALL_API_TOKEN", hide_env_values = true)]
        token: Option<String>,
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
        #[arg(long, default_value_t = tpch::datagen::DEFAULT_ROW_GROUP_ROWS)]
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
        /// both sides' exchange volumes and times (features: bloom).
        #[arg(long)]
        compare: Option<String>,
        /// With --compare: timed runs per side and query (after one warm-up).
        #[arg(long, default_value_t = 3)]
        repeat: usize,
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
            config,
        } => serve_command(&host, port, &backend, catalog, token, config).await,
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
        command => Ok(run_engine_command(command).await?),
    }
}

/// `squall serve`: checks the address and auth before building anything,
/// then serves until Ctrl-C or SIGTERM.
async fn serve_command(
    host: &str,
    port: u16,
    backend: &str,
    catalog: Option<String>,
    token: Option<String>,
    config: Vec<(String, String)>,
) -> std::result::Result<ExitCode, ServerError> {
    let addr = tokio::net::lookup_host((host, port))
        .await
        .map_err(|source| ServerError::Io {
            context: format!("resolving {host}"),
            source,
        })?
        .next()
        .ok_or_else(|| ServerError::BadRequest {
            message: format!("{host} resolves to no address"),
        })?;
    let auth = match token.filter(|t| !t.is_empty()) {
        Some(t) => ApiAuth::Token(t),
        None => ApiAuth::None,
    };
    check_bind(&addr, &auth)?;
    let service: Arc<dyn QueryService> = match backend {
        "local" => {
            let engine = Engine::local(EngineOptions {
                catalog,
                settings: config,
            })
            .await?;
            let squall = SquallConfig::from_session(&engine.context().copied_config());
            Arc::new(EmbeddedService::new(
                Arc::new(engine),
                EmbeddedOptions::from_config(&squall),
            ))
        }
        "aws" => Arc::new(
            AwsService::from_env(AwsOptions {
                catalog,
                settings: config,
                ..AwsOptions::default()
            })
            .await?,
        ),
        other => {
            return Err(ServerError::BadRequest {
                message: format!("unknown backend {other:?} (expected local or aws)"),
            });
        }
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Io {
            context: format!("binding {addr}"),
            source,
        })?;
    let local = listener.local_addr().map_err(|source| ServerError::Io {
        context: "reading the bound address".into(),
        source,
    })?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{local}");
        let _ = out.flush();
    }
    let auth_note = if matches!(auth, ApiAuth::None) {
        "no authentication (loopback only)"
    } else {
        "token required"
    };
    eprintln!("squall serve: {auth_note}; Ctrl-C stops");
    crate::serve::serve_until_stopped(
        listener,
        router(Arc::clone(&service), ApiOptions::new(auth)),
        service,
        shutdown_signal(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C, or SIGTERM where there are signals.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => ctrl_c.await,
        }
    }
    #[cfg(not(unix))]
    ctrl_c.await;
}

async fn run_engine_command(command: Command) -> Result<ExitCode> {
    match command {
        Command::Query {
            catalog,
            backend,
            format,
            config,
            sql,
        } => {
            let options = EngineOptions {
                catalog,
                settings: config,
            };
            let engine = match backend.as_str() {
                "local" => Engine::local(options).await?,
                "aws" => squall_aws::aws_engine(options).await?,
                other => {
                    return Err(DataFusionError::Configuration(format!(
                        "unknown backend {other:?} (expected local or aws)"
                    )));
                }
            };
            let cancel = CancellationToken::new();
            let options = RunOptions {
                cancel: cancel.clone(),
                ..RunOptions::default()
            };
            let run = engine.sql_with(&sql, &options);
            tokio::pin!(run);
            let result = tokio::select! {
                r = &mut run => r?,
                _ = tokio::signal::ctrl_c() => {
                    // Stop the query's tasks and delete its exchange objects
                    // before exiting; a second Ctrl-C exits at once.
                    eprintln!("cancelling the query (Ctrl-C again to quit at once)");
                    cancel.cancel();
                    tokio::select! {
                        _ = &mut run => {}
                        _ = tokio::signal::ctrl_c() => {}
                        _ = tokio::time::sleep(CANCEL_GRACE) => {
                            eprintln!("warning: the query did not stop within {} s", CANCEL_GRACE.as_secs());
                        }
                    }
                    return Ok(ExitCode::from(EXIT_INTERRUPTED));
                }
            };
            print_result(&result, format)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Cost => {
            let mut out = std::io::stdout().lock();
            for line in std::io::stdin().lines() {
                let line = line.map_err(|e| DataFusionError::External(Box::new(e)))?;
                if line.trim().is_empty() {
                    continue;
                }
                let inputs: squall_planner::cost::CostInputs = serde_json::from_str(&line)
                    .map_err(|e| DataFusionError::Plan(format!("cost inputs {line:?}: {e}")))?;
                let cost = squall_planner::cost::query_cost(&inputs);
                let text = serde_json::to_string(&cost)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                let _ = writeln!(out, "{text}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Config => {
            let config = SquallConfig::from_env()?;
            let mut out = std::io::stdout().lock();
            for e in config.entries() {
                let key = format!("squall.{}", e.key.trim_start_matches("squall."));
                let _ = writeln!(
                    out,
                    "{key} = {}  ({})\n    {}",
                    e.value.unwrap_or_default(),
                    env_var_name(&key),
                    e.description
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Tpch { command } => match command {
            TpchCommand::Gen {
                sf,
                out,
                row_group_rows,
            } => {
                let mut opts = tpch::datagen::GenOptions::new(sf, &out);
                opts.row_group_rows = row_group_rows;
                let summary = tpch::datagen::generate(&opts)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                for (table, rows, bytes) in &summary.tables {
                    println!("{table:>10} {rows:>12} rows {bytes:>14} bytes");
                }
                Ok(ExitCode::SUCCESS)
            }
            TpchCommand::Run {
                sf,
                data,
                queries,
                profile,
                config,
                compare,
                repeat,
            } => {
                let opts = tpch::run::RunOptions {
                    scale_factor: sf,
                    data,
                    queries,
                    settings: config.clone(),
                    progress: true,
                };
                if let Some(feature) = compare {
                    let feature: tpch::ab::Feature = feature.parse()?;
                    println!("{}", tpch::ab::header());
                    let rows = tpch::ab::compare(&opts, feature, repeat, |r| {
                        println!("{}", tpch::ab::line(r))
                    })
                    .await?;
                    println!("{}", tpch::ab::summary(&rows));
                    if let Some(path) = profile {
                        let text = serde_json::to_string_pretty(&rows)
                            .map_err(|e| DataFusionError::External(Box::new(e)))?;
                        std::fs::write(&path, text).map_err(|e| {
                            DataFusionError::External(
                                format!("writing {}: {e}", path.display()).into(),
                            )
                        })?;
                    }
                    return Ok(if rows.iter().all(|r| r.check == "ok") {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::FAILURE
                    });
                }
                println!(
                    "{:>5} {:>10} {:>8} {:>7} {:>6}  check",
                    "query", "time_ms", "rows", "stages", "tasks"
                );
                let runs = tpch::run::run(&opts, |r| {
                    let (stages, tasks) = r
                        .profile
                        .as_ref()
                        .map(|p| (p.stages, p.tasks))
                        .unwrap_or((0, 0));
                    println!(
                        "{:>5} {:>10.1} {:>8} {:>7} {:>6}  {}",
                        format!("q{:02}", r.query),
                        r.wall_ms,
                        r.rows,
                        stages,
                        tasks,
                        r.check
                    );
                })
                .await?;
                let passed = runs.iter().filter(|r| r.passed()).count();
                let times: Vec<f64> = runs.iter().map(|r| r.wall_ms.max(0.001)).collect();
                let geomean =
                    (times.iter().map(|t| t.ln()).sum::<f64>() / times.len().max(1) as f64).exp();
                let total: f64 = times.iter().sum();
                println!(
                    "{passed}/{} answers correct; total {total:.0} ms, geomean {geomean:.1} ms",
                    runs.len()
                );
                if let Some(path) = profile {
                    write_profile(&path, sf, &runs, &squall_config(&config)?)?;
                    println!("profile written to {}", path.display());
                }
                Ok(if passed == runs.len() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                })
            }
            TpchCommand::Driver { sf, data, config } => {
                let opts = tpch::driver::DriverOptions {
                    scale_factor: sf,
                    data,
                    settings: config,
                };
                let mut driver = tpch::driver::Driver::new(&opts).await?;
                tpch::driver::serve_lines(&mut driver, std::io::stdin().lock(), std::io::stdout())
                    .await?;
                Ok(ExitCode::SUCCESS)
            }
        },
        Command::Serve { .. } | Command::Loadtest { .. } | Command::Fuzz { .. } => Err(
            DataFusionError::Internal("serve is not an engine command".into()),
        ),
    }
}

/// The `squall.*` settings from the environment and `--config`.
fn squall_config(settings: &[(String, String)]) -> Result<SquallConfig> {
    let mut config = SquallConfig::from_env()?;
    for (key, value) in settings {
        if let Some(key) = key.strip_prefix("squall.") {
            ExtensionOptions::set(&mut config, key, value)?;
        }
    }
    Ok(config)
}

fn write_profile(
    path: &std::path::Path,
    sf: f64,
    runs: &[tpch::run::QueryRun],
    config: &SquallConfig,
) -> Result<()> {
    let queries: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            // Every profile figure, plus the run's own.
            let p = r.profile.clone().unwrap_or_default();
            let mut v = serde_json::to_value(&p).unwrap_or_else(|_| serde_json::json!({}));
            if let Some(obj) = v.as_object_mut() {
                obj.insert("query".into(), format!("q{:02}", r.query).into());
                obj.insert("wall_ms".into(), r.wall_ms.into());
                obj.insert("rows".into(), r.rows.into());
                obj.insert("check".into(), r.check.clone().into());
                obj.insert("oracle".into(), r.oracle.clone().into());
                let cost = r
                    .profile
                    .as_ref()
                    .map(|p| squall_planner::cost::profile_cost(p, config));
                obj.insert(
                    "cost".into(),
                    serde_json::to_value(cost).unwrap_or_default(),
                );
            }
            v
        })
        .collect();
    let doc = serde_json::json!({ "scale_factor": sf, "backend": "local", "queries": queries });
    let text =
        serde_json::to_string_pretty(&doc).map_err(|e| DataFusionError::External(Box::new(e)))?;
    std::fs::write(path, text)
        .map_err(|e| DataFusionError::External(format!("writing {}: {e}", path.display()).into()))
}

fn print_result(result: &QueryResult, format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    // EXPLAIN output is text: print it as such.
    let is_plan = result.schema.fields().len() == 2
        && result.schema.field(0).name() == "plan_type"
        && result.schema.field(1).name() == "plan";
    if is_plan && matches!(format, Format::Table) {
        for batch in &result.batches {
            let kinds = arrow::array::cast::as_string_array(batch.column(0));
            let texts = arrow::array::cast::as_string_array(batch.column(1));
            for i in 0..batch.num_rows() {
                let _ = writeln!(out, "== {}\n{}", kinds.value(i), texts.value(i));
            }
        }
        return Ok(());
    }
    match format {
        Format::Table => {
            let batches: Vec<RecordBatch> = if result.batches.is_empty() {
                vec![RecordBatch::new_empty(result.schema.clone())]
            } else {
                result.batches.clone()
            };
            let table = arrow::util::pretty::pretty_format_batches(&batches)?;
            let _ = writeln!(out, "{table}");
        }
        Format::Csv => {
            let text = tpch::run::to_csv(&result.schema, &result.batches)?;
            let _ = out.write_all(text.as_bytes());
        }
        Format::Json => {
            let mut writer = arrow::json::ArrayWriter::new(&mut out);
            let refs: Vec<&RecordBatch> = result.batches.iter().collect();
            writer.write_batches(&refs)?;
            writer.finish()?;
            let _ = writeln!(out);
        }
    }
    Ok(())
}
