//! `squall tpch run`: the TPC-H queries end to end on the embedded backend.
//!
//! Generates the data if it is missing, runs each query distributed, checks
//! every answer — against the expected answers squall carries (SF 0.1 and
//! SF 1) or, at other scale factors, against single-node DataFusion on the
//! same files — and reports time, rows, check result and the query profile.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{SessionConfig, SessionContext};
use serde::Serialize;

use super::compare::compare_csv;
use super::datagen::{GenOptions, completed_scale_factor, generate};
use squall_planner::catalog::register_catalog;
use squall_planner::engine::{Engine, EngineOptions};
use squall_planner::profile::QueryProfile;

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scale_factor: f64,
    /// Data folder; default `data/tpch/sf{SF}`.
    pub data: Option<PathBuf>,
    /// Query numbers; empty = all 22.
    pub queries: Vec<usize>,
    pub settings: Vec<(String, String)>,
    pub progress: bool,
}

/// The outcome of one query.
#[derive(Debug, Clone, Serialize)]
pub struct QueryRun {
    pub query: usize,
    pub wall_ms: f64,
    pub rows: usize,
    /// `ok`, `MISMATCH: ...` or `ERROR: ...`.
    pub check: String,
    /// What the answer was checked against: `answers` or `datafusion`.
    pub oracle: String,
    pub profile: Option<QueryProfile>,
}

impl QueryRun {
    pub fn passed(&self) -> bool {
        self.check == "ok"
    }
}

/// Default data folder for a scale factor.
pub fn default_data_dir(sf: f64) -> PathBuf {
    PathBuf::from(format!("data/tpch/sf{sf}"))
}

/// Make sure the data exists at `dir`, generating it if not.
pub fn ensure_data(sf: f64, dir: &std::path::Path, progress: bool) -> Result<()> {
    if let Some(have) = completed_scale_factor(dir) {
        if (have - sf).abs() < 1e-12 {
            return Ok(());
        }
        return Err(DataFusionError::Plan(format!(
            "{} holds TPC-H data at scale factor {have}, not {sf}; choose another --data folder",
            dir.display()
        )));
    }
    if progress {
        eprintln!("generating TPC-H SF{sf} into {}", dir.display());
    }
    let mut opts = GenOptions::new(sf, dir);
    opts.progress = progress;
    generate(&opts).map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok(())
}

/// The data folder of `opts` as a catalog location, generated if missing.
pub fn prepared_catalog(opts: &RunOptions) -> Result<String> {
    let dir = opts
        .data
        .clone()
        .unwrap_or_else(|| default_data_dir(opts.scale_factor));
    ensure_data(opts.scale_factor, &dir, opts.progress)?;
    Ok(dir.to_string_lossy().to_string())
}

/// Run the queries; one [`QueryRun`] per query, in order.
pub async fn run(opts: &RunOptions, mut on_query: impl FnMut(&QueryRun)) -> Result<Vec<QueryRun>> {
    let catalog = prepared_catalog(opts)?;
    let engine = Engine::local(EngineOptions {
        catalog: Some(catalog.clone()),
        settings: opts.settings.clone(),
    })
    .await?;
    let queries: Vec<usize> = if opts.queries.is_empty() {
        (1..=22).collect()
    } else {
        opts.queries.clone()
    };
    let mut reference: Option<SessionContext> = None;
    let mut out = Vec::new();
    for q in queries {
        let sql = super::query(q)
            .ok_or_else(|| DataFusionError::Plan(format!("no TPC-H query {q} (1..=22)")))?;
        let started = Instant::now();
        let result = engine.sql(sql).await;
        let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
        let run = match result {
            Err(e) => QueryRun {
                query: q,
                wall_ms,
                rows: 0,
                check: format!("ERROR: {e}"),
                oracle: String::new(),
                profile: None,
            },
            Ok(result) => {
                let rows = result.batches.iter().map(|b| b.num_rows()).sum();
                let actual = to_csv(&result.schema, &result.batches)?;
                let (expected, oracle) =
                    expected_csv(opts.scale_factor, q, &catalog, &mut reference).await?;
                let check = check_answer(&expected, &actual, sql);
                QueryRun {
                    query: q,
                    wall_ms,
                    rows,
                    check,
                    oracle: oracle.to_string(),
                    profile: result.profile,
                }
            }
        };
        on_query(&run);
        out.push(run);
    }
    Ok(out)
}

/// The expected answer of query `q` as CSV, and what it comes from:
/// `answers` (carried, SF 0.1 and 1) or `datafusion` (single-node DataFusion
/// on the files of `catalog`, whose session is made once in `reference`).
pub async fn expected_csv(
    sf: f64,
    q: usize,
    catalog: &str,
    reference: &mut Option<SessionContext>,
) -> Result<(String, &'static str)> {
    if let Some(a) = super::expected_answer(sf, q) {
        return Ok((a.to_string(), "answers"));
    }
    let sql = super::query(q)
        .ok_or_else(|| DataFusionError::Plan(format!("no TPC-H query {q} (1..=22)")))?;
    if reference.is_none() {
        let ctx = SessionContext::new_with_config(SessionConfig::new());
        register_catalog(&ctx, catalog).await?;
        *reference = Some(ctx);
    }
    let ctx = reference
        .as_ref()
        .ok_or_else(|| DataFusionError::Internal("reference".into()))?;
    let df = ctx.sql(sql).await?;
    let schema: SchemaRef = std::sync::Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    Ok((to_csv(&schema, &batches)?, "datafusion"))
}

/// Cell-by-cell check of `actual` against `expected` (both CSV with a
/// header): `ok`, `MISMATCH: ...` or `ERROR: ...`.
pub fn check_answer(expected: &str, actual: &str, sql: &str) -> String {
    match compare_csv(expected, actual, Some(sql)) {
        Ok(c) if c.ok => "ok".to_string(),
        Ok(c) => format!("MISMATCH: {}", c.message),
        Err(e) => format!("ERROR: {e}"),
    }
}

/// Batches as CSV with a header row (NULL as an empty field). Nested
/// values (lists, structs, maps), which CSV has no form for, are written as
/// the table format shows them (`[x, y]`, `{a: 1, b: q}`).
pub fn to_csv(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<String> {
    let mut buf = Vec::new();
    {
        let mut writer = arrow::csv::WriterBuilder::new()
            .with_header(true)
            .build(&mut buf);
        if batches.is_empty() {
            writer.write(&nested_as_text(&RecordBatch::new_empty(schema.clone()))?)?;
        }
        for b in batches {
            writer.write(&nested_as_text(b)?)?;
        }
    }
    String::from_utf8(buf).map_err(|e| DataFusionError::External(Box::new(e)))
}

/// `batch` with each nested column (CSV has no form for one) replaced by
/// its values' text, as the table format shows them.
pub fn nested_as_text(batch: &RecordBatch) -> Result<RecordBatch> {
    use arrow::array::{ArrayRef, StringBuilder};
    use arrow::datatypes::{DataType, Field, Schema};
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let nested =
        |t: &DataType| t.is_nested() || matches!(t, DataType::Map(..) | DataType::Union(..));
    if !batch
        .schema()
        .fields()
        .iter()
        .any(|f| nested(f.data_type()))
    {
        return Ok(batch.clone());
    }
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        if !nested(field.data_type()) {
            fields.push(field.as_ref().clone());
            columns.push(Arc::clone(column));
            continue;
        }
        let options = FormatOptions::default();
        let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
        let mut text = StringBuilder::new();
        for row in 0..column.len() {
            if column.is_null(row) {
                text.append_null();
            } else {
                text.append_value(formatter.value(row).to_string());
            }
        }
        fields.push(Field::new(field.name(), DataType::Utf8, true));
        columns.push(Arc::new(text.finish()));
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, ListBuilder, StringBuilder};

    #[test]
    fn nested_values_are_written_as_text() {
        let mut tags = ListBuilder::new(StringBuilder::new());
        tags.values().append_value("x");
        tags.values().append_value("y");
        tags.append(true);
        tags.append(true);
        tags.append(false);
        let batch = RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
            ("tags", Arc::new(tags.finish()) as ArrayRef),
        ])
        .unwrap();
        let csv = to_csv(&batch.schema(), &[batch]).unwrap();
        assert_eq!(csv, "id,tags\n1,\"[x, y]\"\n2,[]\n3,\n");
    }
}
