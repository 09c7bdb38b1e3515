//! Scan tasks in the order of a column the table is clustered on.
//!
//! A table written in the order of a column (orders by their key, line
//! items by their order, events by their id) has row groups whose bounds
//! of that column, by their statistics, follow one another: sorted by
//! their lower bound, each row group's upper bound is at most the next
//! one's lower bound. Every value then lies in one row group, or in a run
//! of neighbours that share it at their ends. Tasks that take whole runs
//! of row groups in that order, cut only between two row groups with no
//! value in common, each hold every row of the values they read, so an
//! aggregation grouped by the column is finished in the task
//! (`crate::clustered`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, UInt64Type};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};
use datafusion::datasource::physical_plan::ParquetSource;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::execution::runtime_env::RuntimeEnv;
use squall_core::task::{FileRowGroups, ScanAssignment};

use super::{FooterCache, RowGroupStatistics, ScanUnits, Spread, listed_once, read_footers};
use crate::error::PlannerError;

/// The row groups of `units` (one scan's) in the order of `column`, each
/// with whether a task may end after it (no value of the column lies on
/// both sides); `None` when the statistics do not show the order: a row
/// group without bounds of the column, with NULLs in it (a NULL group
/// would span row groups) or with an unknown NULL count, a type whose
/// order its statistics may not follow (floating point: NaN is left out of
/// their bounds), or two row groups whose ranges overlap.
pub async fn clustered_order(
    scan: &DataSourceExec,
    units: &ScanUnits,
    column: &str,
    runtime: &RuntimeEnv,
    cache: &FooterCache,
) -> Result<Option<Vec<(usize, bool)>>> {
    let (config, _) = scan
        .downcast_to_file_source::<ParquetSource>()
        .ok_or_else(|| PlannerError::Internal("not a Parquet scan".into()))?;
    let table = config.file_schema();
    let Ok(field) = table.field_with_name(column) else {
        return Ok(None);
    };
    if !orderable(field.data_type()) || units.units.is_empty() {
        return Ok(None);
    }
    let files = listed_once(config);
    let footers = read_footers(&files, &config.object_store_url, runtime, cache).await?;
    let column = Column::new_unqualified(column);
    // Per file: each row group's bounds, NULL count checked.
    let mut bounds: HashMap<String, Vec<Option<(ScalarValue, ScalarValue)>>> = HashMap::new();
    for (file, metadata) in files.iter().zip(&footers) {
        let stats = RowGroupStatistics::new(metadata, table);
        let (Some(mins), Some(maxes), Some(nulls)) = (
            stats.min_values(&column),
            stats.max_values(&column),
            stats.null_counts(&column),
        ) else {
            return Ok(None);
        };
        bounds.insert(
            file.object_meta.location.to_string(),
            row_group_bounds(&mins, &maxes, &nulls)?,
        );
    }
    let mut order = Vec::with_capacity(units.units.len());
    for (i, unit) in units.units.iter().enumerate() {
        match bounds.get(&unit.path).and_then(|b| b.get(unit.row_group)) {
            Some(Some((min, max))) => order.push((i, min, max)),
            _ => return Ok(None),
        }
    }
    let mut unordered = false;
    order.sort_by(|a, b| {
        a.1.partial_cmp(b.1)
            .and_then(|o| Some(o.then(a.2.partial_cmp(b.2)?)))
            .unwrap_or_else(|| {
                unordered = true;
                Ordering::Equal
            })
    });
    if unordered {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(order.len());
    for (k, (i, _, max)) in order.iter().enumerate() {
        let cut = match order.get(k + 1) {
            None => true,
            Some((_, next_min, _)) => match max.partial_cmp(next_min) {
                Some(Ordering::Less) => true,
                Some(Ordering::Equal) => false,
                _ => return Ok(None),
            },
        };
        out.push((*i, cut));
    }
    Ok(Some(out))
}

/// Types whose Parquet bounds order every value: integers, decimals,
/// dates and times. Not floating point (writers leave NaN out of the
/// bounds) nor text (old writers' bounds of byte strings compared them
/// signed, and the files do not always say which).
fn orderable(t: &DataType) -> bool {
    t.is_integer()
        || matches!(
            t,
            DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..)
                | DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(..)
                | DataType::Time32(..)
                | DataType::Time64(..)
        )
}

/// Each row group's (min, max), `None` where a bound is missing or the row
/// group holds NULLs (or does not say how many).
fn row_group_bounds(
    mins: &ArrayRef,
    maxes: &ArrayRef,
    nulls: &ArrayRef,
) -> Result<Vec<Option<(ScalarValue, ScalarValue)>>> {
    let nulls = nulls.as_primitive_opt::<UInt64Type>();
    (0..mins.len())
        .map(|i| {
            let no_nulls = nulls.is_some_and(|n| n.is_valid(i) && n.value(i) == 0);
            if !no_nulls || mins.is_null(i) || maxes.is_null(i) {
                return Ok(None);
            }
            Ok(Some((
                ScalarValue::try_from_array(mins, i)?,
                ScalarValue::try_from_array(maxes, i)?,
            )))
        })
        .collect()
}

/// Deal one scan's row groups to tasks in `order` (from
/// [`clustered_order`]), ending a task only where the order allows it,
/// once it holds its share of the bytes (`target_task_bytes` each, at
/// least the tasks `spread` asks for where the cuts allow). A task reads
/// its row groups file by file, each file's ascending.
pub fn assign_in_order(
    units: &ScanUnits,
    order: &[(usize, bool)],
    target_task_bytes: usize,
    spread: Spread,
) -> Vec<Vec<ScanAssignment>> {
    let total: u64 = units.units.iter().map(|u| u.bytes).sum();
    let n_tasks = total
        .div_ceil(target_task_bytes.max(1) as u64)
        .max(spread.least(total))
        .clamp(1, order.len().max(1) as u64);
    let mut runs: Vec<Vec<usize>> = vec![Vec::new()];
    let mut acc = 0u64;
    for &(i, cut) in order {
        acc += units.units[i].bytes;
        if let Some(run) = runs.last_mut() {
            run.push(i);
        }
        let share = total * runs.len() as u64 / n_tasks;
        if cut && acc >= share && (runs.len() as u64) < n_tasks {
            runs.push(Vec::new());
        }
    }
    runs.retain(|r| !r.is_empty());
    if runs.is_empty() {
        return vec![vec![ScanAssignment::default()]];
    }
    runs.into_iter()
        .map(|run| {
            let mut files: BTreeMap<&str, FileRowGroups> = BTreeMap::new();
            for i in run {
                let unit = &units.units[i];
                let file = files
                    .entry(unit.path.as_str())
                    .or_insert_with(|| FileRowGroups {
                        path: unit.path.clone(),
                        size: unit.file_size,
                        last_modified_ns: unit.last_modified_ns,
                        row_group_count: unit.row_group_count,
                        row_groups: Vec::new(),
                        partition_values: unit.partition_values.clone(),
                        deleted: Vec::new(),
                        chunk_bytes: 0,
                    });
                file.row_groups.push(unit.row_group);
                file.deleted.extend(unit.deleted.clone());
            }
            let files = files
                .into_values()
                .map(|mut f| {
                    f.row_groups.sort_unstable();
                    f.deleted.sort_by_key(|d| d.row_group);
                    f
                })
                .collect();
            vec![ScanAssignment {
                files,
                partitions: 0,
            }]
        })
        .collect()
}
