//! `squall tpch driver`: one long-lived embedded engine that a benchmark
//! runner drives over stdin/stdout, one JSON line per command.
//!
//! The runner (`bench/run.py`) keeps one process per engine and alternates
//! them query by query, so the process must stay up between queries (warm
//! footer cache and allocator, as a user's would) and answer each command
//! with one line:
//!
//! ```text
//! runner                                  squall tpch driver --sf 1
//!   <------------------------------------ {"ready":true,"pid":..,"scale_factor":1,...}
//!   run 3 [ACTUAL.csv [EXPECTED.csv]] ---> run q03, check it cell by cell
//!   <------------------------------------ {"query":3,"wall_ms":..,"rows":10,"check":"ok",
//!                                            "oracle":"answers","profile":{..},"cost":{..}}
//!   expected 3 PATH ---------------------> write the expected answer (CSV) to PATH
//!   <------------------------------------ {"query":3,"expected":"PATH","oracle":"answers"}
//!   quit (or end of input) --------------> exit
//! ```
//!
//! `wall_ms` covers planning and running the query and collecting its
//! batches, not the answer check. The expected answer is EXPECTED.csv when
//! given (the runner's oracle process wrote it), else the one squall carries
//! (SF 0.1 and 1) or, at other scale factors, single-node DataFusion on the
//! same files, computed once per query in this process. A runner that
//! measures this process's memory passes EXPECTED.csv: DataFusion's run
//! would otherwise stay in the measured process's memory. Errors are replies
//! (`{"error": ...}`), never an exit: the runner decides what a failure means.
//! This module does not time repetitions or measure memory; the runner does
//! both, from outside the process.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde_json::{Value, json};
use squall_core::config::SquallConfig;
use std::io::{BufRead, Write};

use super::run::{check_answer, default_data_dir, ensure_data, expected_csv, to_csv};
use squall_planner::cost::profile_cost;
use squall_planner::engine::{Engine, EngineOptions};

/// What the driver runs on.
#[derive(Debug, Clone)]
pub struct DriverOptions {
    pub scale_factor: f64,
    /// Data folder; default `data/tpch/sf{SF}` (generated if missing).
    pub data: Option<PathBuf>,
    pub settings: Vec<(String, String)>,
}

/// One embedded engine over one TPC-H data folder.
pub struct Driver {
    engine: Engine,
    config: SquallConfig,
    scale_factor: f64,
    catalog: String,
    reference: Option<SessionContext>,
    expected: HashMap<usize, (String, &'static str)>,
}

impl Driver {
    /// Make sure the data exists and start the engine.
    pub async fn new(opts: &DriverOptions) -> Result<Self> {
        let dir = opts
            .data
            .clone()
            .unwrap_or_else(|| default_data_dir(opts.scale_factor));
        ensure_data(opts.scale_factor, &dir, true)?;
        let catalog = dir.to_string_lossy().to_string();
        let engine = Engine::local(EngineOptions {
            catalog: Some(catalog.clone()),
            settings: opts.settings.clone(),
        })
        .await?;
        let config = SquallConfig::from_session(&engine.context().copied_config());
        Ok(Self {
            engine,
            config,
            scale_factor: opts.scale_factor,
            catalog,
            reference: None,
            expected: HashMap::new(),
        })
    }

    /// The first line the driver prints.
    pub fn ready_line(&self) -> Value {
        json!({
            "ready": true,
            "pid": std::process::id(),
            "scale_factor": self.scale_factor,
            "data": self.catalog,
            "worker_slots": self.config.resolved_slots(),
            "worker_memory_mb": self.config.worker_memory_mb,
            "coordinator_memory_mb": self.config.coordinator_memory_mb,
        })
    }

    /// Answer one command line; `None` for `quit`.
    pub async fn handle(&mut self, line: &str) -> Option<Value> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let reply = match words.as_slice() {
            [] => Ok(json!({ "error": "empty command" })),
            ["quit"] | ["exit"] => return None,
            ["run", q] => self.run(q, None, None).await,
            ["run", q, path] => self.run(q, Some(PathBuf::from(path)), None).await,
            ["run", q, path, expected] => {
                self.run(q, Some(PathBuf::from(path)), Some(PathBuf::from(expected)))
                    .await
            }
            ["expected", q, path] => self.write_expected(q, PathBuf::from(path)).await,
            _ => Ok(json!({
                "error": format!("unknown command {line:?}: expected `run N [FILE [EXPECTED]]`, `expected N FILE` or `quit`")
            })),
        };
        Some(reply.unwrap_or_else(|e| json!({ "error": e.to_string() })))
    }

    async fn expected(&mut self, q: usize) -> Result<(String, &'static str)> {
        if let Some(hit) = self.expected.get(&q) {
            return Ok(hit.clone());
        }
        let found = expected_csv(self.scale_factor, q, &self.catalog, &mut self.reference).await?;
        self.expected.insert(q, found.clone());
        Ok(found)
    }

    async fn write_expected(&mut self, q: &str, path: PathBuf) -> Result<Value> {
        let q = parse_query(q)?;
        let (csv, oracle) = self.expected(q).await?;
        write_file(&path, &csv)?;
        Ok(json!({ "query": q, "expected": path, "oracle": oracle }))
    }

    async fn run(
        &mut self,
        q: &str,
        actual_path: Option<PathBuf>,
        expected_path: Option<PathBuf>,
    ) -> Result<Value> {
        let q = parse_query(q)?;
        let sql =
            super::query(q).ok_or_else(|| DataFusionError::Plan(format!("no TPC-H query {q}")))?;
        let started = Instant::now();
        let result = self.engine.sql(sql).await;
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                return Ok(json!({
                    "query": q, "wall_ms": wall_ms, "rows": 0, "check": format!("ERROR: {e}"),
                }));
            }
        };
        let rows: usize = result.batches.iter().map(|b| b.num_rows()).sum();
        let actual = to_csv(&result.schema, &result.batches)?;
        if let Some(path) = &actual_path {
            write_file(path, &actual)?;
        }
        let (expected, oracle) = match expected_path {
            Some(path) => (
                std::fs::read_to_string(&path).map_err(|e| {
                    DataFusionError::Execution(format!(
                        "cannot read the expected answer {}: {e}",
                        path.display()
                    ))
                })?,
                "file",
            ),
            None => self.expected(q).await?,
        };
        let check = check_answer(&expected, &actual, sql);
        let cost = result
            .profile
            .as_ref()
            .map(|p| profile_cost(p, &self.config));
        Ok(json!({
            "query": q,
            "wall_ms": wall_ms,
            "rows": rows,
            "check": check,
            "oracle": oracle,
            "profile": result.profile,
            "cost": cost,
        }))
    }
}

fn parse_query(q: &str) -> Result<usize> {
    let n: usize = q
        .trim_start_matches(['q', 'Q'])
        .parse()
        .map_err(|_| DataFusionError::Plan(format!("not a query number: {q:?}")))?;
    if super::query(n).is_none() {
        return Err(DataFusionError::Plan(format!(
            "no TPC-H query {n} (1..=22)"
        )));
    }
    Ok(n)
}

fn write_file(path: &std::path::Path, text: &str) -> Result<()> {
    std::fs::write(path, text)
        .map_err(|e| DataFusionError::External(format!("writing {}: {e}", path.display()).into()))
}

/// Print the ready line, then answer every line of `input` on `output`
/// until `quit` or the end of the input. Reading blocks the calling thread
/// between commands, when nothing else runs.
pub async fn serve_lines<R: BufRead, W: Write>(
    driver: &mut Driver,
    input: R,
    mut output: W,
) -> Result<()> {
    write_line(&mut output, &driver.ready_line())?;
    for line in input.lines() {
        let line = line.map_err(io_error)?;
        match driver.handle(&line).await {
            Some(reply) => write_line(&mut output, &reply)?,
            None => break,
        }
    }
    Ok(())
}

fn write_line<W: Write>(output: &mut W, value: &Value) -> Result<()> {
    writeln!(output, "{value}").map_err(io_error)?;
    output.flush().map_err(io_error)
}

fn io_error(e: std::io::Error) -> DataFusionError {
    DataFusionError::External(format!("driver input/output: {e}").into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_numbers() {
        assert_eq!(parse_query("3").ok(), Some(3));
        assert_eq!(parse_query("q07").ok(), Some(7));
        assert!(parse_query("23").is_err());
        assert!(parse_query("x").is_err());
    }
}
