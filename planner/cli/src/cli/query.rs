//! `squall query`, `squall cost` and `squall config`: one statement on a
//! backend and its result printed; prices; the settings.

use std::io::Write as _;
use std::process::ExitCode;

use arrow::record_batch::RecordBatch;
use datafusion::common::config::ExtensionOptions;
use datafusion::error::{DataFusionError, Result};
use squall_core::config::{SquallConfig, env_var_name};
use squall_planner::{CancellationToken, EngineOptions, QueryResult, RunOptions, StreamedResult};
use squall_tpch as tpch;

use super::{CANCEL_GRACE, EXIT_INTERRUPTED, Format};

/// `squall query`: runs `sql` on `backend`; Ctrl-C cancels the query, waits
/// for its tasks to stop and its exchange objects to go, and exits 130.
/// The statement text: the argument, or the file `--file` names, or
/// standard input for `-` (either way).
pub(super) fn sql_text(file: Option<std::path::PathBuf>, sql: Option<String>) -> Result<String> {
    let unread = |what: String, e: std::io::Error| {
        DataFusionError::IoError(std::io::Error::new(
            e.kind(),
            format!("cannot read the SQL {what}: {e}"),
        ))
    };
    let from_stdin = |what: &str| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| unread(format!("from {what}"), e))?;
        Ok(text)
    };
    match (file, sql) {
        (Some(path), _) if path.as_os_str() == "-" => from_stdin("standard input"),
        (Some(path), _) => std::fs::read_to_string(&path)
            .map_err(|e| unread(format!("file {}", path.display()), e)),
        (None, Some(sql)) if sql == "-" => from_stdin("standard input"),
        (None, Some(sql)) => Ok(sql),
        (None, None) => Err(DataFusionError::Configuration(
            "no SQL: give it as the argument, or --file PATH (- for standard input)".into(),
        )),
    }
}

pub(super) async fn query(
    catalog: Option<String>,
    backend: &str,
    format: Format,
    config: Vec<(String, String)>,
    profile: Option<std::path::PathBuf>,
    sql: &str,
) -> Result<ExitCode> {
    let squall = SquallConfig::from_session(&squall_planner::engine::session_config(&config)?);
    let options = EngineOptions {
        catalog,
        settings: config,
    };
    let engine = match backend {
        "local" => squall_aws::embedded_engine(options).await?,
        "aws" => squall_aws::aws_engine(options).await?,
        other => {
            return Err(DataFusionError::Configuration(format!(
                "unknown backend {other:?} (expected local or aws)"
            )));
        }
    };
    let cancel = CancellationToken::new();
    // `current_user` is who runs the command, as Trino's CLI sends it.
    let user = std::env::var("USER").ok().filter(|u| !u.is_empty());
    let options = RunOptions {
        cancel: cancel.clone(),
        identity: squall_planner::trino_functions::SessionIdentity {
            user,
            ..Default::default()
        },
        ..RunOptions::default()
    };
    // Every format is written as the batches are read (a table in blocks
    // of rows, each aligned on its own), so a result larger than memory
    // prints. Ctrl-C stops the printing too.
    let run = async {
        let result = engine.sql_stream(sql, &options).await?;
        let profiled = result.profile.clone();
        match format {
            // A statement with no result columns (CREATE TABLE, CREATE
            // VIEW, SET): nothing to print. Its table of no columns failed
            // ("must either specify a row count or at least one column").
            _ if result.schema.fields().is_empty() => {
                result.collect().await?;
            }
            Format::Table if is_plan(&result.schema) => {
                print_result(&result.collect().await?, format)?
            }
            Format::Table => print_table_streamed(result).await?,
            Format::Csv | Format::Json => print_streamed(result, format).await?,
        }
        if let Some(path) = &profile {
            write_profile(path, profiled.as_ref(), &squall)?;
        }
        Ok::<_, DataFusionError>(())
    };
    tokio::pin!(run);
    tokio::select! {
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
    }
    Ok(ExitCode::SUCCESS)
}

/// The profile of a query (none for a statement that ran no stages) and
/// its modelled AWS cost, as one JSON object.
fn write_profile(
    path: &std::path::Path,
    profile: Option<&squall_planner::profile::QueryProfile>,
    config: &SquallConfig,
) -> Result<()> {
    let cost = profile.map(|p| squall_planner::cost::profile_cost(p, config));
    let doc = serde_json::json!({ "profile": profile, "cost": cost });
    let text =
        serde_json::to_string_pretty(&doc).map_err(|e| DataFusionError::External(Box::new(e)))?;
    std::fs::write(path, text)
        .map_err(|e| DataFusionError::External(format!("writing {}: {e}", path.display()).into()))
}

/// CSV or JSON written batch by batch as the result is read.
async fn print_streamed(result: StreamedResult, format: Format) -> Result<()> {
    use futures::StreamExt;
    // Buffered: stdout alone flushes at every line.
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut batches = result.batches.into_stream();
    match format {
        Format::Csv => {
            // Each batch formatted into a buffer of its own, then written.
            let mut text = Vec::new();
            let mut header = true;
            while let Some(batch) = batches.next().await {
                let batch = batch?;
                text.clear();
                arrow::csv::WriterBuilder::new()
                    .with_header(std::mem::take(&mut header))
                    .build(&mut text)
                    .write(&tpch::run::nested_as_text(&batch)?)?;
                let _ = out.write_all(&text);
            }
            if header {
                text.clear();
                arrow::csv::WriterBuilder::new()
                    .with_header(true)
                    .build(&mut text)
                    .write(&tpch::run::nested_as_text(&RecordBatch::new_empty(
                        result.schema.clone(),
                    ))?)?;
                let _ = out.write_all(&text);
            }
        }
        _ => {
            let mut writer = arrow::json::ArrayWriter::new(&mut out);
            while let Some(batch) = batches.next().await {
                writer.write(&batch?)?;
            }
            writer.finish()?;
            let _ = writeln!(out);
        }
    }
    let _ = out.flush();
    Ok(())
}

/// Rows the table format aligns together: the widths of a block are its
/// own, so a block is all the table output holds in memory.
const TABLE_BLOCK_ROWS: usize = 10_000;

/// The table format written a block of rows at a time: the first block
/// with the header, each later one as rows under the last (its columns as
/// wide as its own cells need).
async fn print_table_streamed(result: StreamedResult) -> Result<()> {
    use futures::StreamExt;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut batches = result.batches.into_stream();
    let mut block: Vec<RecordBatch> = Vec::new();
    let mut rows = 0;
    let mut first = true;
    let mut write_block = |block: &mut Vec<RecordBatch>, first: &mut bool| -> Result<()> {
        let table = arrow::util::pretty::pretty_format_batches(&cut_cells(block)?)?.to_string();
        block.clear();
        // Later blocks drop their top border, header and rule: the rows
        // continue the table above.
        let text = if std::mem::take(first) {
            table.as_str()
        } else {
            table.splitn(4, '\n').nth(3).unwrap_or_default()
        };
        let _ = writeln!(out, "{text}");
        Ok(())
    };
    while let Some(batch) = batches.next().await {
        let batch = batch?;
        rows += batch.num_rows();
        block.push(batch);
        if rows >= TABLE_BLOCK_ROWS {
            write_block(&mut block, &mut first)?;
            rows = 0;
        }
    }
    if first || !block.is_empty() {
        if block.is_empty() {
            block.push(RecordBatch::new_empty(result.schema.clone()));
        }
        write_block(&mut block, &mut first)?;
    }
    let _ = out.flush();
    Ok(())
}

/// Whether a result is an EXPLAIN's (plan_type, plan), printed as text.
fn is_plan(schema: &arrow::datatypes::Schema) -> bool {
    schema.fields().len() == 2
        && schema.field(0).name() == "plan_type"
        && schema.field(1).name() == "plan"
}

/// `squall cost`: one JSON object of cost inputs per stdin line, one JSON
/// cost breakdown per stdout line.
pub(super) fn cost() -> Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lines() {
        let line = line.map_err(|e| DataFusionError::External(Box::new(e)))?;
        if line.trim().is_empty() {
            continue;
        }
        let inputs: squall_planner::cost::CostInputs = serde_json::from_str(&line)
            .map_err(|e| DataFusionError::Plan(format!("cost inputs {line:?}: {e}")))?;
        let cost = squall_planner::cost::query_cost(&inputs);
        let text =
            serde_json::to_string(&cost).map_err(|e| DataFusionError::External(Box::new(e)))?;
        let _ = writeln!(out, "{text}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `squall config`: every `squall.*` setting, its value here and its
/// environment variable.
pub(super) fn config() -> Result<ExitCode> {
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

pub(super) fn print_result(result: &QueryResult, format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    // EXPLAIN output is text: print it as such.
    if is_plan(&result.schema) && matches!(format, Format::Table) {
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
            let table = arrow::util::pretty::pretty_format_batches(&cut_cells(&batches)?)?;
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

/// Longest cell the table format shows whole, in characters.
const MAX_CELL_CHARS: usize = 1_000;

/// `batches` as text, each cell longer than [`MAX_CELL_CHARS`] cut with a
/// note of its length: the table's layout costs time quadratic in a cell's
/// length (a 100-million-character value took minutes to print); the CSV
/// and JSON formats keep every character.
fn cut_cells(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    use arrow::array::{Array, StringArray};
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default();
    batches
        .iter()
        .map(|batch| {
            let schema = batch.schema();
            let fields: Vec<arrow::datatypes::Field> = schema
                .fields()
                .iter()
                .map(|f| {
                    arrow::datatypes::Field::new(f.name(), arrow::datatypes::DataType::Utf8, true)
                })
                .collect();
            let columns = batch
                .columns()
                .iter()
                .map(|column| {
                    let text = ArrayFormatter::try_new(column.as_ref(), &options)?;
                    let cells: StringArray = (0..column.len())
                        .map(|i| {
                            column.is_valid(i).then(|| {
                                let cell = text.value(i).to_string();
                                match cell.char_indices().nth(MAX_CELL_CHARS) {
                                    Some((end, _)) => format!(
                                        "{}... ({} characters)",
                                        &cell[..end],
                                        cell.chars().count()
                                    ),
                                    None => cell,
                                }
                            })
                        })
                        .collect();
                    Ok(std::sync::Arc::new(cells) as arrow::array::ArrayRef)
                })
                .collect::<std::result::Result<Vec<_>, arrow::error::ArrowError>>()?;
            Ok(RecordBatch::try_new(
                std::sync::Arc::new(arrow::datatypes::Schema::new(fields)),
                columns,
            )?)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, Int64Array, StringArray};

    #[test]
    fn long_cells_are_cut_for_the_table_and_the_rest_kept() {
        let long = "é".repeat(MAX_CELL_CHARS + 500);
        let batch = RecordBatch::try_from_iter(vec![
            (
                "s",
                std::sync::Arc::new(StringArray::from(vec![
                    Some(long.as_str()),
                    Some("a"),
                    None,
                ])) as arrow::array::ArrayRef,
            ),
            (
                "n",
                std::sync::Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as _,
            ),
        ])
        .unwrap();
        let cut = cut_cells(&[batch]).unwrap();
        let s = arrow::array::cast::as_string_array(cut[0].column(0));
        assert_eq!(
            s.value(0),
            format!("{}... (1500 characters)", "é".repeat(MAX_CELL_CHARS))
        );
        assert_eq!(s.value(1), "a");
        assert!(s.is_null(2));
        let n = arrow::array::cast::as_string_array(cut[0].column(1));
        assert_eq!((n.value(0), n.is_null(1), n.value(2)), ("1", true, "3"));
    }
}
