//! Trino's `SHOW STATS FOR t`: a table's statistics from its Parquet
//! footers, read as scan planning reads them (no row is read, so it costs
//! one GET per file footer, not a scan: at SF1000 the lineitem table's
//! statistics come from its footers alone). One row per column, Trino's
//! columns: `data_size` (the uncompressed bytes of a text or binary
//! column's chunks), `distinct_values_count` (NULL: footers do not say),
//! `nulls_fraction`, `low_value` and `high_value` (the least minimum and
//! greatest maximum of the row groups' statistics, as text, for columns
//! other than text, as Trino shows them), then a last row with the table's
//! `row_count`. A statistic a file does not keep (no statistics written, a
//! column the file lacks, a partition column) is NULL for the column.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::display::array_value_to_string;
use datafusion::common::TableReference;
use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::parquet_to_arrow_schema;
use parquet::file::metadata::ParquetMetaData;

use crate::split::FooterCache;

/// A column's statistics over a table's files.
struct ColumnStats {
    field: Arc<Field>,
    data_size: Option<u64>,
    nulls: Option<u64>,
    low: Option<MinAccumulator>,
    high: Option<MaxAccumulator>,
}

/// The query that answers `SHOW STATS FOR <reference>`.
pub async fn stats_query(ctx: &SessionContext, reference: TableReference) -> Result<String> {
    let provider = ctx.table_provider(reference).await?;
    let table = ctx.read_table(provider)?;
    let schema = Arc::new(table.schema().as_arrow().clone());
    let physical = table.create_physical_plan().await?;
    let (file_schema, footers, deleted) = match parquet_scan(&physical) {
        Some(scan) => {
            crate::split::scan_footers(scan, &ctx.runtime_env(), &FooterCache::default()).await?
        }
        None => (Arc::new(Schema::empty()), Vec::new(), 0),
    };
    let mut columns: Vec<ColumnStats> = schema
        .fields()
        .iter()
        .map(|field| ColumnStats {
            field: Arc::clone(field),
            data_size: Some(0).filter(|_| is_text(field.data_type())),
            nulls: Some(0),
            low: MinAccumulator::try_new(field.data_type()).ok(),
            high: MaxAccumulator::try_new(field.data_type()).ok(),
        })
        .collect();
    let mut rows: Option<u64> = (!footers.is_empty()).then_some(0);
    for footer in &footers {
        let file_rows: i64 = footer.row_groups().iter().map(|g| g.num_rows()).sum();
        rows = rows.map(|r| r + file_rows.max(0) as u64);
        // A partition column is in no file: unknown.
        for column in columns
            .iter_mut()
            .filter(|c| file_schema.field_with_name(c.field.name()).is_ok())
        {
            add_file(column, footer)?;
        }
    }
    // Rows deleted in place (deletion vectors) are not the table's.
    rows = rows.map(|r| r.saturating_sub(deleted));
    for column in columns
        .iter_mut()
        .filter(|c| footers.is_empty() || file_schema.field_with_name(c.field.name()).is_err())
    {
        (column.data_size, column.nulls, column.low, column.high) = (None, None, None, None);
    }
    let mut out = Vec::with_capacity(columns.len() + 1);
    for column in &mut columns {
        let fraction = match (column.nulls, rows) {
            // At most 1: a file's nulls count its deleted rows too.
            (Some(n), Some(r)) if r > 0 => Some((n as f64 / r as f64).min(1.0)),
            (Some(_), Some(_)) => Some(0.0),
            _ => None,
        };
        let shown = !is_text(column.field.data_type());
        let low = bound(column.low.as_mut().map(|a| a.evaluate()), shown)?;
        let high = bound(column.high.as_mut().map(|a| a.evaluate()), shown)?;
        out.push(format!(
            "({}, {}, NULL, {}, NULL, {low}, {high})",
            text(column.field.name()),
            double(column.data_size.map(|b| b as f64)),
            double(fraction),
        ));
    }
    out.push(format!(
        "(NULL, NULL, NULL, NULL, {}, NULL, NULL)",
        double(rows.map(|r| r as f64))
    ));
    Ok(format!(
        "SELECT CAST(column_name AS VARCHAR) AS column_name, CAST(data_size AS DOUBLE) AS data_size, \
         CAST(distinct_values_count AS DOUBLE) AS distinct_values_count, \
         CAST(nulls_fraction AS DOUBLE) AS nulls_fraction, CAST(row_count AS DOUBLE) AS row_count, \
         CAST(low_value AS VARCHAR) AS low_value, CAST(high_value AS VARCHAR) AS high_value \
         FROM (VALUES {}) AS stats(column_name, data_size, distinct_values_count, nulls_fraction, \
         row_count, low_value, high_value)",
        out.join(", ")
    ))
}

/// The Parquet scan of a plan of one table.
fn parquet_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&DataSourceExec> {
    if let Some(scan) = plan.downcast_ref::<DataSourceExec>() {
        return scan
            .downcast_to_file_source::<ParquetSource>()
            .map(|_| scan);
    }
    plan.children().into_iter().find_map(parquet_scan)
}

fn is_text(t: &DataType) -> bool {
    if let DataType::Dictionary(_, values) = t {
        return is_text(values);
    }
    matches!(
        t,
        DataType::FixedSizeBinary(_)
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

/// `column`'s statistics of one file folded in; a file without them makes
/// them unknown.
fn add_file(column: &mut ColumnStats, footer: &ParquetMetaData) -> Result<()> {
    let file = footer.file_metadata();
    let arrow = parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
        .unwrap_or_else(|_| Schema::empty());
    let groups = footer.row_groups();
    if arrow.field_with_name(column.field.name()).is_err() {
        // Not in this file (written before the column was added): every
        // row of it NULL.
        let rows: i64 = groups.iter().map(|g| g.num_rows()).sum();
        column.nulls = column.nulls.map(|n| n + rows.max(0) as u64);
        return Ok(());
    }
    // A nested column (no one Parquet column) or one whose statistics do
    // not convert: unknown.
    let converter = StatisticsConverter::try_new(column.field.name(), &arrow, file.schema_descr());
    let Some((converter, index)) = converter
        .ok()
        .and_then(|c| c.parquet_column_index().map(|i| (c, i)))
    else {
        (column.data_size, column.nulls, column.low, column.high) = (None, None, None, None);
        return Ok(());
    };
    if let Some(size) = column.data_size.as_mut() {
        *size += groups
            .iter()
            .map(|g| g.column(index).uncompressed_size().max(0) as u64)
            .sum::<u64>();
    }
    let nulls = converter.row_group_null_counts(groups.iter())?;
    column.nulls = match nulls.null_count() {
        0 => column.nulls.map(|n| n + nulls.values().iter().sum::<u64>()),
        _ => None,
    };
    let target = column.field.data_type();
    let mins = cast_to(converter.row_group_mins(groups.iter())?, target);
    let maxes = cast_to(converter.row_group_maxes(groups.iter())?, target);
    column.low = fold(column.low.take(), mins, |a, v| a.update_batch(&[v]));
    column.high = fold(column.high.take(), maxes, |a, v| a.update_batch(&[v]));
    Ok(())
}

fn cast_to(values: ArrayRef, target: &DataType) -> Option<ArrayRef> {
    // A row group without a minimum leaves the bound unknown.
    if values.null_count() > 0 {
        return None;
    }
    arrow::compute::cast(&values, target).ok()
}

fn fold<A>(
    acc: Option<A>,
    values: Option<ArrayRef>,
    update: impl Fn(&mut A, ArrayRef) -> Result<()>,
) -> Option<A> {
    let (mut acc, values) = (acc?, values?);
    update(&mut acc, values).ok()?;
    Some(acc)
}

fn bound(value: Option<Result<ScalarValue>>, shown: bool) -> Result<String> {
    match value.transpose()? {
        Some(v) if shown && !v.is_null() => {
            let shown = array_value_to_string(&v.to_array()?, 0)?;
            // Timestamps as Trino writes them.
            Ok(text(&match v.data_type() {
                DataType::Timestamp(..) => shown.replacen('T', " ", 1),
                _ => shown,
            }))
        }
        _ => Ok("NULL".to_string()),
    }
}

fn double(value: Option<f64>) -> String {
    match value {
        Some(v) => format!("CAST({v:?} AS DOUBLE)"),
        None => "NULL".to_string(),
    }
}

fn text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
