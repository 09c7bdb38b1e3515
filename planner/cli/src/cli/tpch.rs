//! `squall tpch`: data generation, the 22 queries run and checked (or run
//! with a feature on and off), the benchmark driver, and the answer checker
//! the benchmark runner calls for every engine.

use std::path::Path;
use std::process::ExitCode;

use datafusion::common::config::ExtensionOptions;
use datafusion::error::{DataFusionError, Result};
use squall_core::config::SquallConfig;
use squall_tpch as tpch;

use super::TpchCommand;

pub(super) async fn tpch_command(command: TpchCommand) -> Result<ExitCode> {
    match command {
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
                        DataFusionError::External(format!("writing {}: {e}", path.display()).into())
                    })?;
                }
                return Ok(if rows.iter().all(|r| r.check == "ok") {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                });
            }
            let squall = squall_config(&config)?;
            println!(
                "{:>5} {:>10} {:>8} {:>7} {:>6} {:>9} {:>11}  check",
                "query", "time_ms", "rows", "stages", "tasks", "requests", "cost_usd"
            );
            let runs = tpch::run::run(&opts, |r| {
                let (stages, tasks, requests, cost) = r
                    .profile
                    .as_ref()
                    .map(|p| {
                        let c = squall_planner::cost::profile_cost(p, &squall);
                        let t = p.requests.total();
                        (
                            p.stages,
                            p.tasks,
                            t.objects() + t.sqs() + t.invocations(),
                            c.total_usd,
                        )
                    })
                    .unwrap_or((0, 0, 0, 0.0));
                println!(
                    "{:>5} {:>10.1} {:>8} {:>7} {:>6} {:>9} {:>11.7}  {}",
                    format!("q{:02}", r.query),
                    r.wall_ms,
                    r.rows,
                    stages,
                    tasks,
                    requests,
                    cost,
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
                write_profile(&path, sf, &runs, &squall)?;
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
        TpchCommand::Check {
            expected,
            actual,
            query,
        } => check(&expected, &actual, query.as_deref()),
    }
}

/// `squall tpch check`: prints `ok` or the first difference; exit 0 on a
/// match, 1 on a mismatch (the answer checker `bench/run.py` uses).
fn check(expected: &Path, actual: &Path, query: Option<&Path>) -> Result<ExitCode> {
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| DataFusionError::Execution(format!("reading {}: {e}", p.display())))
    };
    let (want, got) = (read(expected)?, read(actual)?);
    let sql = query.map(read).transpose()?;
    let c = tpch::compare::compare_csv(&want, &got, sql.as_deref())
        .map_err(|e| DataFusionError::Execution(format!("comparing answers: {e}")))?;
    for w in &c.warnings {
        eprintln!("warning: {w}");
    }
    if c.ok {
        println!("ok");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("MISMATCH: {}", c.message);
        Ok(ExitCode::FAILURE)
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
