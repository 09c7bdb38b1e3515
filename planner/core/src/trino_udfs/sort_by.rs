//! Trino's `array_sort(a, (x, y) -> c)`: each row's array sorted by a
//! comparator answering -1, 0 or 1 (anything else, NULL included, fails
//! the query, as in Trino); elements the comparator calls equal keep their
//! order. SQL names it `squall_array_sort_by` (`array_sort` of one argument
//! is DataFusion's).
//!
//! A binary insertion sort run for all the batch's rows at once: each step
//! evaluates the comparator once, over one pair of elements per row still
//! sorting, so a batch costs about `n log n` evaluations for its longest
//! array `n`, not one per comparison of every row.

use std::sync::Arc;

use arrow::array::{Array, AsArray, ListArray, UInt32Array};
use arrow::compute::{cast, take, take_arrays};
use arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature,
    HigherOrderUDF, HigherOrderUDFImpl, LambdaParametersProgress, ValueOrLambda, Volatility,
};

use super::reduce::element;

pub const SORT_BY: &str = "squall_array_sort_by";

pub(super) fn function() -> HigherOrderUDF {
    use ValueOrLambda::{Lambda, Value};
    HigherOrderUDF::new_from_impl(SortBy {
        signature: HigherOrderSignature::exact(vec![Value(()), Lambda(())], Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SortBy {
    signature: HigherOrderSignature,
}

fn fail(message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("array_sort: {message}"))
}

impl HigherOrderUDFImpl for SortBy {
    fn name(&self) -> &str {
        SORT_BY
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn coerce_value_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [list] = arg_types else {
            return Err(fail("takes an array and a comparator"));
        };
        Ok(vec![DataType::List(element(list)?)])
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let [ValueOrLambda::Value(list), ValueOrLambda::Lambda(_)] = fields else {
            return Err(fail("takes an array and a comparator"));
        };
        let x = element(list.data_type())?;
        Ok(LambdaParametersProgress::Complete(vec![vec![
            Arc::clone(&x),
            x,
        ]]))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs) -> Result<FieldRef> {
        let [ValueOrLambda::Value(list), ValueOrLambda::Lambda(compared)] = args.arg_fields else {
            return Err(fail("takes an array and a comparator"));
        };
        if !compared.data_type().is_integer() {
            return Err(DataFusionError::Plan(format!(
                "array_sort: the comparator must answer an integer (-1, 0 or 1), not {}",
                compared.data_type()
            )));
        }
        Ok(Arc::clone(list))
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [ValueOrLambda::Value(list), ValueOrLambda::Lambda(compare)] = args.args.as_slice()
        else {
            return Err(fail("takes an array and a comparator"));
        };
        let list = list.to_array(rows)?;
        let list = cast(&list, &DataType::List(element(list.data_type())?))?;
        let list = list.as_list::<i32>();
        let values = list.values();
        let offsets = list.value_offsets();
        // Per row: the sorted positions so far, the next to insert, and
        // the bounds of its binary search.
        let mut sorted: Vec<Vec<u32>> = Vec::with_capacity(rows);
        let mut sorting: Vec<(usize, usize, usize, usize)> = Vec::new();
        for row in 0..rows {
            let n = if list.is_valid(row) {
                list.value_length(row) as usize
            } else {
                0
            };
            sorted.push(if n == 0 { Vec::new() } else { vec![0] });
            if n > 1 {
                sorting.push((row, 1, 0, 1));
            }
        }
        while !sorting.is_empty() {
            let base = |row: usize| offsets[row] as u32;
            let (outer, (xs, ys)): (Vec<u32>, (Vec<u32>, Vec<u32>)) = sorting
                .iter()
                .map(|&(row, next, lo, hi)| {
                    let mid = (lo + hi) / 2;
                    let at = base(row);
                    (row as u32, (at + next as u32, at + sorted[row][mid]))
                })
                .unzip();
            let outer = UInt32Array::from(outer);
            let x = take(values, &UInt32Array::from(xs), None)?;
            let y = take(values, &UInt32Array::from(ys), None)?;
            let answers = compare
                .evaluate(
                    &[&|| Ok(Arc::clone(&x)), &|| Ok(Arc::clone(&y))],
                    |captured| Ok(take_arrays(captured, &outer, None)?),
                )?
                .into_array(sorting.len())?;
            let answers = cast(&answers, &DataType::Int64)?;
            let answers = answers.as_primitive::<Int64Type>();
            let mut still = Vec::with_capacity(sorting.len());
            for (k, &(row, next, mut lo, mut hi)) in sorting.iter().enumerate() {
                let mid = (lo + hi) / 2;
                match answers.is_valid(k).then(|| answers.value(k)) {
                    Some(-1) => hi = mid,
                    Some(0 | 1) => lo = mid + 1,
                    other => {
                        return Err(fail(format!(
                            "the comparator must answer -1, 0 or 1, not {}",
                            other.map_or("NULL".to_string(), |v| v.to_string())
                        )));
                    }
                }
                if lo < hi {
                    still.push((row, next, lo, hi));
                    continue;
                }
                sorted[row].insert(lo, next as u32);
                if next + 1 < list.value_length(row) as usize {
                    still.push((row, next + 1, 0, sorted[row].len()));
                }
            }
            sorting = still;
        }
        let order: Vec<u32> = (0..rows)
            .flat_map(|row| {
                let at = offsets[row] as u32;
                sorted[row].iter().map(move |&i| at + i)
            })
            .collect();
        let reordered = take(values, &UInt32Array::from(order), None)?;
        let lengths = (0..rows).map(|row| sorted[row].len());
        let field = match list.data_type() {
            DataType::List(f) => Arc::clone(f),
            other => return Err(fail(format!("an array expected, not {other}"))),
        };
        Ok(ColumnarValue::Array(Arc::new(ListArray::try_new(
            field,
            arrow::buffer::OffsetBuffer::from_lengths(lengths),
            reordered,
            list.nulls().cloned(),
        )?)))
    }
}
