//! The value range of a join's build-side keys, per key column, so probe
//! scans can skip whole Parquet row groups (and pages) whose statistics lie
//! outside it.
//!
//! ```text
//!  build task: KeyRanges::observe(batch keys)   -> min/max per key column, in its key section
//!  coordinator: KeyRanges::merge over ALL tasks -> encoded into every probe task's FilterBinding
//!  probe task:  range_predicate(keys, ranges)   -> `k >= min AND k <= max` pushed into the
//!                                                 Parquet scan below the KeyFilterExec
//! ```
//!
//! The range is a necessary condition only: rows inside it still go through
//! the key filter. Ranges are kept for types whose Parquet statistics order
//! the same way as SQL does (integers, decimals, dates, timestamps, strings);
//! a column of another type, or with strings longer than
//! [`MAX_STRING_BYTES`], is [`ColumnRange::Unbounded`] and prunes nothing.
//! NULL keys never match an equi-join key, so they are ignored here as they
//! are by the key filter.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::source::DataSourceExec;
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion_proto::protobuf;
use prost::Message;

use crate::error::{Result, SquallError};

/// Longest string bound a range keeps (longer ones make the column unbounded).
pub const MAX_STRING_BYTES: usize = 256;

/// What the build side's keys span in one key column.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnRange {
    /// No non-NULL key seen (yet): nothing can match.
    Empty,
    /// Every non-NULL key lies in `[min, max]`.
    Range(ScalarValue, ScalarValue),
    /// No usable bound (type not ordered like its statistics, or too long).
    Unbounded,
}

/// Per key column, the range of the build side's keys.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRanges {
    pub columns: Vec<ColumnRange>,
}

impl KeyRanges {
    /// Nothing seen yet, for `n` key columns.
    pub fn empty(n: usize) -> Self {
        Self {
            columns: vec![ColumnRange::Empty; n],
        }
    }

    /// Widen the ranges by the keys of one batch.
    pub fn observe(&mut self, keys: &[ArrayRef]) -> Result<()> {
        for (range, array) in self.columns.iter_mut().zip(keys) {
            if matches!(range, ColumnRange::Unbounded) || array.null_count() == array.len() {
                continue;
            }
            if !ordered_like_statistics(array.data_type()) {
                *range = ColumnRange::Unbounded;
                continue;
            }
            let mut min = MinAccumulator::try_new(array.data_type()).map_err(SquallError::from)?;
            let mut max = MaxAccumulator::try_new(array.data_type()).map_err(SquallError::from)?;
            min.update_batch(std::slice::from_ref(array))
                .map_err(SquallError::from)?;
            max.update_batch(std::slice::from_ref(array))
                .map_err(SquallError::from)?;
            let min = min.evaluate().map_err(SquallError::from)?;
            let max = max.evaluate().map_err(SquallError::from)?;
            if min.is_null() || max.is_null() {
                continue;
            }
            *range = widen(range.clone(), ColumnRange::Range(min, max));
        }
        Ok(())
    }

    /// The ranges of two key sets together.
    pub fn merge(self, other: KeyRanges) -> KeyRanges {
        if self.columns.len() != other.columns.len() {
            return KeyRanges {
                columns: vec![ColumnRange::Unbounded; self.columns.len().max(other.columns.len())],
            };
        }
        KeyRanges {
            columns: self
                .columns
                .into_iter()
                .zip(other.columns)
                .map(|(a, b)| widen(a, b))
                .collect(),
        }
    }

    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.columns.len() as u32).to_le_bytes());
        for c in &self.columns {
            match c {
                ColumnRange::Empty => out.push(0),
                ColumnRange::Range(min, max) => {
                    out.push(1);
                    for v in [min, max] {
                        let proto = protobuf::ScalarValue::try_from(v)
                            .map_err(|e| SquallError::Plan(format!("key range bound {v}: {e}")))?;
                        let bytes = proto.encode_to_vec();
                        out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                        out.extend_from_slice(&bytes);
                    }
                }
                ColumnRange::Unbounded => out.push(2),
            }
        }
        Ok(out)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self> {
        let bad = |what: String| SquallError::BadTaskPayload(format!("key ranges: {what}"));
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = bytes
                .get(at..at + n)
                .ok_or_else(|| bad(format!("truncated at byte {at}")))?;
            at += n;
            Ok(s)
        };
        let u32_at = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        let n = u32_at(take(4)?);
        if n > 64 {
            return Err(bad(format!("{n} key columns")));
        }
        let mut columns = Vec::with_capacity(n);
        for _ in 0..n {
            columns.push(match take(1)?[0] {
                0 => ColumnRange::Empty,
                1 => {
                    let mut bounds = Vec::with_capacity(2);
                    for _ in 0..2 {
                        let len = u32_at(take(4)?);
                        let proto = protobuf::ScalarValue::decode(take(len)?)
                            .map_err(|e| bad(e.to_string()))?;
                        bounds.push(ScalarValue::try_from(&proto).map_err(|e| bad(e.to_string()))?);
                    }
                    let max = bounds.pop().unwrap_or(ScalarValue::Null);
                    let min = bounds.pop().unwrap_or(ScalarValue::Null);
                    ColumnRange::Range(min, max)
                }
                2 => ColumnRange::Unbounded,
                other => return Err(bad(format!("unknown column tag {other}"))),
            });
        }
        if at != bytes.len() {
            return Err(bad(format!("{} trailing bytes", bytes.len() - at)));
        }
        Ok(Self { columns })
    }

    /// Whether the ranges can rule anything out.
    pub fn is_useful(&self) -> bool {
        self.columns
            .iter()
            .any(|c| !matches!(c, ColumnRange::Unbounded))
    }
}

/// `keys[i] >= min_i AND keys[i] <= max_i` over the bounded columns (`false`
/// when a column saw no key at all), or `None` when nothing is bounded.
pub fn range_predicate(
    keys: &[Arc<dyn PhysicalExpr>],
    ranges: &KeyRanges,
) -> Option<Arc<dyn PhysicalExpr>> {
    let mut conjuncts: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
    for (key, range) in keys.iter().zip(&ranges.columns) {
        match range {
            ColumnRange::Unbounded => {}
            ColumnRange::Empty => {
                return Some(Arc::new(Literal::new(ScalarValue::Boolean(Some(false)))));
            }
            ColumnRange::Range(min, max) => {
                let cmp = |op, v: &ScalarValue| -> Arc<dyn PhysicalExpr> {
                    Arc::new(BinaryExpr::new(
                        Arc::clone(key),
                        op,
                        Arc::new(Literal::new(v.clone())),
                    ))
                };
                if min == max {
                    conjuncts.push(cmp(Operator::Eq, min));
                } else {
                    conjuncts.push(cmp(Operator::GtEq, min));
                    conjuncts.push(cmp(Operator::LtEq, max));
                }
            }
        }
    }
    conjuncts
        .into_iter()
        .reduce(|a, b| Arc::new(BinaryExpr::new(a, Operator::And, b)) as Arc<dyn PhysicalExpr>)
}

/// `input` with `predicate` (over `input`'s output) added to the Parquet
/// scan it reads, through projections, filters and repartitioning; `None` when no scan is reachable that way. The scan uses
/// it to skip row groups and pages by their statistics (and, when
/// `datafusion.execution.parquet.pushdown_filters` is on, rows).
///
/// Never through an operator with a row limit: which rows a limit keeps
/// must not depend on the filter.
pub fn push_into_scan(
    input: &Arc<dyn ExecutionPlan>,
    predicate: Arc<dyn PhysicalExpr>,
    config: &ConfigOptions,
) -> datafusion::error::Result<Option<Arc<dyn ExecutionPlan>>> {
    if input.fetch().is_some() {
        return Ok(None);
    }
    if let Some(scan) = input.downcast_ref::<DataSourceExec>() {
        let pushed = scan
            .data_source()
            .try_pushdown_filters(vec![predicate], config)?;
        return Ok(pushed
            .updated_node
            .map(|source| Arc::new(DataSourceExec::new(source)) as Arc<dyn ExecutionPlan>));
    }
    let below = if let Some(p) = input.downcast_ref::<ProjectionExec>() {
        match p.projection_expr().unproject_expr(&predicate) {
            Ok(e) => e,
            Err(_) => return Ok(None),
        }
    } else if let Some(f) = input.downcast_ref::<FilterExec>() {
        match f.projection() {
            None => predicate,
            Some(projection) => {
                let projection = Arc::clone(projection);
                predicate
                    .transform(|e| {
                        let Some(c) = e.downcast_ref::<Column>() else {
                            return Ok(Transformed::no(e));
                        };
                        let index = projection.get(c.index()).copied().ok_or_else(|| {
                            datafusion::error::DataFusionError::Internal(format!(
                                "column {c} outside the filter's projection"
                            ))
                        })?;
                        Ok(Transformed::yes(
                            Arc::new(Column::new(c.name(), index)) as Arc<dyn PhysicalExpr>
                        ))
                    })?
                    .data
            }
        }
    } else if input.downcast_ref::<RepartitionExec>().is_some()
        || input.downcast_ref::<CooperativeExec>().is_some()
    {
        predicate
    } else {
        return Ok(None);
    };
    let children = input.children();
    let [child] = children.as_slice() else {
        return Ok(None);
    };
    match push_into_scan(child, below, config)? {
        Some(child) => Ok(Some(Arc::clone(input).replace_children(
            vec![child],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )?)),
        None => Ok(None),
    }
}

fn widen(a: ColumnRange, b: ColumnRange) -> ColumnRange {
    use ColumnRange::*;
    match (a, b) {
        (Unbounded, _) | (_, Unbounded) => Unbounded,
        (Empty, Range(min, max)) | (Range(min, max), Empty) => {
            if too_long(&min) || too_long(&max) {
                Unbounded
            } else {
                Range(min, max)
            }
        }
        (Empty, Empty) => Empty,
        (Range(a_min, a_max), Range(b_min, b_max)) => {
            let min = match a_min.partial_cmp(&b_min) {
                Some(Ordering::Greater) => b_min,
                Some(_) => a_min,
                None => return Unbounded,
            };
            let max = match a_max.partial_cmp(&b_max) {
                Some(Ordering::Less) => b_max,
                Some(_) => a_max,
                None => return Unbounded,
            };
            if too_long(&min) || too_long(&max) {
                Unbounded
            } else {
                Range(min, max)
            }
        }
    }
}

fn too_long(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.len() > MAX_STRING_BYTES,
        _ => false,
    }
}

/// Types whose Parquet min/max statistics order values as SQL compares them.
fn ordered_like_statistics(t: &DataType) -> bool {
    use DataType::*;
    matches!(
        t,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Decimal128(..)
            | Decimal256(..)
            | Date32
            | Date64
            | Timestamp(..)
            | Utf8
            | LargeUtf8
            | Utf8View
    )
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float64Array, Int64Array, StringArray};

    use super::*;

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    #[test]
    fn ranges_widen_over_batches_and_tasks_and_ignore_nulls() {
        let mut a = KeyRanges::empty(2);
        a.observe(&[ints(&[Some(5), None, Some(9)]), ints(&[None, None, None])])
            .unwrap();
        let mut b = KeyRanges::empty(2);
        b.observe(&[ints(&[Some(3)]), ints(&[Some(7)])]).unwrap();
        assert_eq!(a.columns[1], ColumnRange::Empty);
        let m = a.merge(b).merge(KeyRanges::empty(2));
        assert_eq!(
            m.columns,
            vec![
                ColumnRange::Range(ScalarValue::Int64(Some(3)), ScalarValue::Int64(Some(9))),
                ColumnRange::Range(ScalarValue::Int64(Some(7)), ScalarValue::Int64(Some(7))),
            ]
        );
        assert_eq!(KeyRanges::decode(&m.encode().unwrap()).unwrap(), m);
    }

    #[test]
    fn unordered_types_and_long_strings_are_unbounded() {
        let mut r = KeyRanges::empty(2);
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.0, 2.0]));
        let long = "x".repeat(MAX_STRING_BYTES + 1);
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["a", long.as_str()]));
        r.observe(&[floats, strings]).unwrap();
        assert_eq!(r.columns, vec![ColumnRange::Unbounded; 2]);
        assert!(!r.is_useful());
        let keys: Vec<Arc<dyn PhysicalExpr>> = vec![
            Arc::new(datafusion::physical_expr::expressions::Column::new("a", 0)),
            Arc::new(datafusion::physical_expr::expressions::Column::new("b", 1)),
        ];
        assert!(range_predicate(&keys, &r).is_none());
    }

    #[test]
    fn predicates_bound_each_column_and_empty_matches_nothing() {
        use datafusion::physical_expr::expressions::Column;
        let keys: Vec<Arc<dyn PhysicalExpr>> =
            vec![Arc::new(Column::new("a", 0)), Arc::new(Column::new("b", 1))];
        let r = KeyRanges {
            columns: vec![
                ColumnRange::Range(ScalarValue::Int64(Some(3)), ScalarValue::Int64(Some(9))),
                ColumnRange::Range(
                    ScalarValue::Utf8(Some("k".into())),
                    ScalarValue::Utf8(Some("k".into())),
                ),
            ],
        };
        let p = range_predicate(&keys, &r).unwrap().to_string();
        assert_eq!(p, "a@0 >= 3 AND a@0 <= 9 AND b@1 = k", "{p}");
        let empty = KeyRanges::empty(2);
        assert_eq!(range_predicate(&keys, &empty).unwrap().to_string(), "false");
        assert!(KeyRanges::decode(b"\x01\0\0\0\x07").is_err());
        assert!(KeyRanges::decode(b"\x01\0\0\0\x01\xff\0\0\0").is_err());
    }
}
