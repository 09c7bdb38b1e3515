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
//!
//! An Iceberg table's manifests give the same per file (column bounds and
//! null counts by field id); [`super::iceberg`] writes them in this form.

use std::collections::{HashMap, HashSet};
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
    // Each file's statistics parsed once, keeping the filtered columns'
    // bounds in their types (a table of 100,000 files is not held as JSON
    // documents).
    // Each column's name, the name the log's statistics give it (its
    // physical name under column mapping) and its type.
    let columns: Vec<(String, String, DataType)> = filters
        .iter()
        .flat_map(|f| f.column_refs())
        .map(|c| c.name.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .filter_map(|name| {
            let field = schema.field_with_name(&name).ok()?;
            let logged = super::logged_table::logged_name(field).to_string();
            Some((name, logged, field.data_type().clone()))
        })
        .collect();
    let parsed = FileStatistics::parse(stats, &columns)?;
    match predicate.prune(&parsed) {
        Ok(kept) => Ok(kept),
        Err(e) => {
            tracing::debug!(error = %e, "Delta statistics not used");
            Ok(all)
        }
    }
}

/// The files' statistics of some columns.
struct FileStatistics {
    files: usize,
    rows: ArrayRef,
    /// Per column: its minimums, maximums (if usable) and null counts.
    columns: HashMap<String, (Option<ArrayRef>, Option<ArrayRef>, ArrayRef)>,
}

/// Which bound of a column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bound {
    Min,
    Max,
}

/// Whether a column's `bound` in the log holds (see the module documentation).
fn usable(ty: &DataType, bound: Bound) -> bool {
    match ty {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => true,
        DataType::Date32 => true,
        DataType::Timestamp(TimeUnit::Microsecond, _) => true,
        DataType::Utf8 => bound == Bound::Min,
        _ => false,
    }
}

impl FileStatistics {
    fn parse(stats: &[Option<&str>], columns: &[(String, String, DataType)]) -> Result<Self> {
        let mut rows = Vec::with_capacity(stats.len());
        let mut bounds: Vec<[Vec<ScalarValue>; 2]> = columns
            .iter()
            .map(|_| {
                [
                    Vec::with_capacity(stats.len()),
                    Vec::with_capacity(stats.len()),
                ]
            })
            .collect();
        let mut nulls: Vec<Vec<Option<u64>>> = columns.iter().map(|_| Vec::new()).collect();
        for text in stats {
            let doc: Option<Value> = text.and_then(|s| serde_json::from_str(s).ok());
            let doc = doc.as_ref();
            rows.push(doc.and_then(|d| d.get("numRecords")?.as_u64()));
            for (c, (_, logged, ty)) in columns.iter().enumerate() {
                for (b, (bound, key)) in [(Bound::Min, "minValues"), (Bound::Max, "maxValues")]
                    .into_iter()
                    .enumerate()
                {
                    let value = doc
                        .filter(|_| usable(ty, bound))
                        .and_then(|d| d.get(key)?.get(logged))
                        .and_then(|v| bound_value(v, ty, bound));
                    bounds[c][b].push(match value {
                        Some(v) => v,
                        None => ScalarValue::try_from(ty)?,
                    });
                }
                nulls[c].push(doc.and_then(|d| d.get("nullCount")?.get(logged)?.as_u64()));
            }
        }
        let mut parsed = HashMap::new();
        for (((name, _, ty), [min, max]), nulls) in columns.iter().zip(bounds).zip(nulls) {
            let array =
                |values: Vec<ScalarValue>, bound| match usable(ty, bound) && !values.is_empty() {
                    true => ScalarValue::iter_to_array(values).ok(),
                    false => None,
                };
            let nulls: ArrayRef = Arc::new(UInt64Array::from(nulls));
            parsed.insert(
                name.clone(),
                (array(min, Bound::Min), array(max, Bound::Max), nulls),
            );
        }
        Ok(Self {
            files: stats.len(),
            rows: Arc::new(UInt64Array::from(rows)),
            columns: parsed,
        })
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
        self.columns.get(&column.name)?.0.clone()
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.columns.get(&column.name)?.1.clone()
    }

    fn num_containers(&self) -> usize {
        self.files
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        Some(Arc::clone(&self.columns.get(&column.name)?.2))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        Some(Arc::clone(&self.rows))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}
