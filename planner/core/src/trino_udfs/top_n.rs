//! Trino's `max_by(x, y, n)` and `min_by(x, y, n)` (and `max(x, n)`,
//! `min(x, n)`, which are `max_by(x, x, n)`): the `x` of the `n` rows of
//! largest (smallest) `y`, in that order, `y`'s NULLs left out. A group
//! keeps only its `n` best rows, whatever its size: each batch's `y`s are
//! row-encoded once and compared as bytes with the group's `n`-th best, and
//! only a row that enters the top `n` has its `x` copied. Partial states
//! travel between stages as the `n` best `x`s and `y`s.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::compute::SortOptions;
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;

pub const MAX_BY_N: &str = "squall_max_by_n";
pub const MIN_BY_N: &str = "squall_min_by_n";

pub(super) fn functions() -> [AggregateUDF; 2] {
    [(MAX_BY_N, true), (MIN_BY_N, false)].map(|(name, largest)| {
        AggregateUDF::new_from_impl(TopN {
            name,
            largest,
            signature: Signature::any(3, Volatility::Immutable),
        })
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TopN {
    name: &'static str,
    largest: bool,
    signature: Signature,
}

fn list_of(t: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(t.clone(), true)))
}

impl AggregateUDFImpl for TopN {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(list_of(&args[0]))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let [x, y] = [0, 1].map(|i| args.input_fields[i].data_type().clone());
        Ok(vec![
            Arc::new(Field::new(format!("{}[x]", args.name), list_of(&x), true)),
            Arc::new(Field::new(format!("{}[y]", args.name), list_of(&y), true)),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let n = args.exprs[2]
            .downcast_ref::<Literal>()
            .and_then(|l| l.value().cast_to(&DataType::Int64).ok());
        let n = match n {
            Some(ScalarValue::Int64(Some(n))) if n > 0 => n as usize,
            _ => {
                return Err(DataFusionError::Plan(format!(
                    "{}: the number of values must be a positive integer constant, not {}",
                    self.name, args.exprs[2]
                )));
            }
        };
        let [x, y] = [0, 1].map(|i| args.expr_fields[i].data_type().clone());
        // Encoded so that the best row's bytes sort first.
        let options = SortOptions {
            descending: self.largest,
            nulls_first: false,
        };
        Ok(Box::new(Best {
            n,
            converter: RowConverter::new(vec![SortField::new_with_options(y.clone(), options)])?,
            x,
            y,
            rows: Vec::new(),
            bytes: 0,
        }))
    }
}

/// A group's best rows so far, best first: `y` encoded, `y` and `x`.
#[derive(Debug)]
struct Best {
    n: usize,
    converter: RowConverter,
    x: DataType,
    y: DataType,
    rows: Vec<(OwnedRow, ScalarValue, ScalarValue)>,
    bytes: usize,
}

impl Best {
    fn add(&mut self, x: &ArrayRef, y: &ArrayRef) -> Result<()> {
        let keys = self.converter.convert_columns(&[Arc::clone(y)])?;
        for i in 0..y.len() {
            if y.is_null(i) {
                continue;
            }
            let key = keys.row(i);
            if self.rows.len() == self.n && key >= self.rows[self.n - 1].0.row() {
                continue;
            }
            // After the rows it equals: the first seen stays first.
            let at = self.rows.partition_point(|(k, _, _)| k.row() <= key);
            let (xv, yv) = (
                ScalarValue::try_from_array(x, i)?,
                ScalarValue::try_from_array(y, i)?,
            );
            self.bytes += key.as_ref().len() + xv.size() + yv.size();
            self.rows.insert(at, (key.owned(), yv, xv));
            if self.rows.len() > self.n
                && let Some((k, yv, xv)) = self.rows.pop()
            {
                self.bytes -= k.as_ref().len() + xv.size() + yv.size();
            }
        }
        Ok(())
    }

    fn list(values: Vec<ScalarValue>, t: &DataType) -> Result<ScalarValue> {
        let values = if values.is_empty() {
            arrow::array::new_empty_array(t)
        } else {
            ScalarValue::iter_to_array(values)?
        };
        let field = Arc::new(Field::new_list_field(t.clone(), true));
        Ok(ScalarValue::List(Arc::new(ListArray::new(
            field,
            OffsetBuffer::from_lengths([values.len()]),
            values,
            None,
        ))))
    }
}

impl Accumulator for Best {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], &values[1])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (Some(xs), Some(ys)) = (
            states[0].as_list_opt::<i32>(),
            states[1].as_list_opt::<i32>(),
        ) else {
            return Err(DataFusionError::Internal(
                "top n: two list state columns expected".into(),
            ));
        };
        for i in 0..xs.len() {
            if xs.is_valid(i) && ys.is_valid(i) {
                self.add(&xs.value(i), &ys.value(i))?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let xs = self.rows.iter().map(|(_, _, x)| x.clone()).collect();
        let ys = self.rows.iter().map(|(_, y, _)| y.clone()).collect();
        Ok(vec![Self::list(xs, &self.x)?, Self::list(ys, &self.y)?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.rows.is_empty() {
            return ScalarValue::try_from(&list_of(&self.x));
        }
        let xs = self.rows.iter().map(|(_, _, x)| x.clone()).collect();
        Self::list(xs, &self.x)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.bytes + self.converter.size()
    }
}
