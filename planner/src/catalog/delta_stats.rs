//! Files of a Delta table skipped by the statistics its log keeps of each
//! (`minValues`, `maxValues`, `nullCount`, `numRecords`), before planning
//! reads a footer of them: a table of 100,000 files sorted by time, asked
//! for one hour, plans the files of that hour, not 100,000 footer GETs.
//!
//! Only bounds that hold are used, as writers write them: integers and
//! dates exactly; a timestamp's bounds are written to the millisecond, cut
//! down, so its maximum is read a millisecond later; a text's minimum is a
//! prefix of it (at most the true minimum) and its maximum, cut and marked
//! by writers in different ways, is not used. Floats (NaN), decimals (JSON
//! numbers past a double's digits), booleans and nested columns are not
//! used. A file without statistics, or without a column's, is kept.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, UInt64Array};
use arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::catalog::Session;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::conjunction;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use serde_json::Value;

/// Which of `stats` (one per file, its log's statistics if any) may hold
/// rows that pass `filters` (conjuncts over `schema`, the table's).
pub(super) fn may_match(
    state: &dyn Session,
    schema: &SchemaRef,
    filters: &[Expr],
    stats: &[Option<&str>],
) -> Result<Vec<bool>> {
    let all = vec![true; stats.len()];
    let Some(filter) = conjunction(filters.iter().cloned()) else {
        return Ok(all);
    };
    let df_schema = DFSchema::try_from(Arc::clone(schema))?;
    let Ok(expr) = state.create_physical_expr(filter, &df_schema) else {
        return Ok(all);
    };
    let Some(predicate) = PruningPredicateBuilder::new()
        .with_file_schema(Arc::clone(schema))
        .build(expr)
    else {
        return Ok(all);
    };
    let parsed = FileStatistics {
        schema: Arc::clone(schema),
        files: stats
            .iter()
            .map(|s| s.and_then(|s| serde_json::from_str(s).ok()))
            .collect(),
    };
    match predicate.prune(&parsed) {
        Ok(kept) => Ok(kept),
        Err(e) => {
            tracing::debug!(error = %e, "Delta statistics not used");
            Ok(all)
        }
    }
}

/// The files' parsed statistics.
struct FileStatistics {
    schema: SchemaRef,
    files: Vec<Option<Value>>,
}

/// Which bound of a column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Min,
    Max,
}

impl FileStatistics {
    fn bounds(&self, column: &Column, bound: Bound) -> Option<ArrayRef> {
        let field = self.schema.field_with_name(&column.name).ok()?;
        let ty = field.data_type();
        let usable = match ty {
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => true,
            DataType::Date32 => true,
            DataType::Timestamp(TimeUnit::Microsecond, _) => true,
            DataType::Utf8 => bound == Bound::Min,
            _ => false,
        };
        if !usable {
            return None;
        }
        let key = match bound {
            Bound::Min => "minValues",
            Bound::Max => "maxValues",
        };
        let values = self
            .files
            .iter()
            .map(|stats| {
                stats
                    .as_ref()
                    .and_then(|s| s.get(key)?.get(field.name()))
                    .and_then(|v| bound_value(v, ty, bound))
                    .map_or_else(|| ScalarValue::try_from(ty), Ok)
            })
            .collect::<Result<Vec<_>>>()
            .ok()?;
        ScalarValue::iter_to_array(values).ok()
    }
}

/// A bound as the log writes it, in the column's type (see the module
/// documentation for which are used).
fn bound_value(value: &Value, ty: &DataType, bound: Bound) -> Option<ScalarValue> {
    let text = match value {
        Value::Number(n) if n.is_i64() => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return None,
    };
    let scalar = ScalarValue::try_from_string(text, ty).ok()?;
    match (scalar, bound) {
        (ScalarValue::TimestampMicrosecond(Some(us), tz), Bound::Max) => Some(
            ScalarValue::TimestampMicrosecond(Some(us.checked_add(1_000)?), tz),
        ),
        (scalar, _) => Some(scalar),
    }
}

impl PruningStatistics for FileStatistics {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds(column, Bound::Min)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.bounds(column, Bound::Max)
    }

    fn num_containers(&self) -> usize {
        self.files.len()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.schema.field_with_name(&column.name).ok()?;
        let counts: UInt64Array = self
            .files
            .iter()
            .map(|s| s.as_ref()?.get("nullCount")?.get(&column.name)?.as_u64())
            .collect();
        Some(Arc::new(counts))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let rows: UInt64Array = self
            .files
            .iter()
            .map(|s| s.as_ref()?.get("numRecords")?.as_u64())
            .collect();
        Some(Arc::new(rows))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}
