//! Trino's `histogram(x)`: the map of each distinct non-NULL value of a
//! group to the number of times it comes (NULL for a group with none).
//! And `approx_most_frequent(buckets, x, capacity)`: the `buckets` values
//! that come most often, with their counts, counted exactly (the
//! `capacity` of Trino's sketch is not needed, so its memory is
//! `histogram`'s); values of equal counts come in the order first seen.
//! Values are counted by their row encoding (any type Arrow can sort);
//! memory grows with the distinct values, not the rows, and is reported
//! to the memory pool through `size`. Partial counts travel between stages
//! as two lists, the values and their counts.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListArray, MapArray, StructArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type};
use arrow::row::{OwnedRow, RowConverter, SortField};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;

const NAME: &str = "histogram";
const MOST_FREQUENT: &str = "approx_most_frequent";

pub(super) fn function() -> AggregateUDF {
    AggregateUDF::new_from_impl(Histogram {
        signature: Signature::any(1, Volatility::Immutable),
        name: NAME,
        value: 0,
    })
}

pub(super) fn most_frequent() -> AggregateUDF {
    AggregateUDF::new_from_impl(Histogram {
        signature: Signature::any(3, Volatility::Immutable),
        name: MOST_FREQUENT,
        value: 1,
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Histogram {
    signature: Signature,
    name: &'static str,
    /// The argument whose values are counted.
    value: usize,
}

fn entries(key: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("key", key.clone(), false),
        Field::new("value", DataType::Int64, false),
    ])
}

fn map_type(key: &DataType) -> DataType {
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries(key)), false)),
        false,
    )
}

impl AggregateUDFImpl for Histogram {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(map_type(&args[self.value]))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let key = args.input_fields[self.value].data_type().clone();
        Ok(vec![
            Arc::new(Field::new_list(
                format!("{}[values]", args.name),
                Field::new_list_field(key, true),
                true,
            )),
            Arc::new(Field::new_list(
                format!("{}[counts]", args.name),
                Field::new_list_field(DataType::Int64, true),
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let key = args.expr_fields[self.value].data_type().clone();
        let top = if self.value == 0 {
            None
        } else {
            Some(buckets(&args)?)
        };
        Ok(Box::new(Counts {
            top,
            value: self.value,
            converter: RowConverter::new(vec![SortField::new(key.clone())])?,
            key,
            counts: HashMap::new(),
            order: Vec::new(),
            bytes: 0,
        }))
    }
}

/// `approx_most_frequent`'s number of buckets: a positive integer literal,
/// the same for every group, as Trino requires it.
fn buckets(args: &AccumulatorArgs) -> Result<usize> {
    let literal = args.exprs[0]
        .downcast_ref::<Literal>()
        .map(|l| l.value().clone());
    match literal.map(|v| v.cast_to(&DataType::Int64)) {
        Some(Ok(ScalarValue::Int64(Some(n)))) if n > 0 => Ok(n as usize),
        _ => Err(DataFusionError::Plan(format!(
            "{MOST_FREQUENT}: the number of buckets must be a positive integer constant, \
             not {}",
            args.exprs[0]
        ))),
    }
}

/// One group's counts, by value, in the order values first came.
#[derive(Debug)]
struct Counts {
    /// The most values evaluated (`approx_most_frequent`'s buckets).
    top: Option<usize>,
    /// The argument counted.
    value: usize,
    key: DataType,
    converter: RowConverter,
    counts: HashMap<Box<[u8]>, usize>,
    order: Vec<(OwnedRow, i64)>,
    bytes: usize,
}

impl Counts {
    fn add(&mut self, values: &ArrayRef, counts: Option<&Int64Array>) -> Result<()> {
        let rows = self.converter.convert_columns(&[Arc::clone(values)])?;
        for i in 0..values.len() {
            if values.is_null(i) {
                continue;
            }
            let n = counts.map_or(1, |c| c.value(i));
            let row = rows.row(i);
            match self.counts.get(row.as_ref()) {
                Some(&at) => self.order[at].1 += n,
                None => {
                    let owned = row.owned();
                    self.bytes += 2 * owned.as_ref().len() + 48;
                    self.counts.insert(owned.as_ref().into(), self.order.len());
                    self.order.push((owned, n));
                }
            }
        }
        Ok(())
    }

    /// The values and their counts, as two arrays.
    fn arrays(&self) -> Result<(ArrayRef, Int64Array)> {
        let values = self
            .converter
            .convert_rows(self.order.iter().map(|(r, _)| r.row()))?;
        let [values] = <[ArrayRef; 1]>::try_from(values).map_err(|_| {
            DataFusionError::Internal(format!("{NAME}: one column of values expected"))
        })?;
        let counts = Int64Array::from_iter_values(self.order.iter().map(|(_, n)| *n));
        Ok((values, counts))
    }
}

fn one_list(values: ArrayRef, nullable: bool) -> ScalarValue {
    let field = Arc::new(Field::new_list_field(values.data_type().clone(), nullable));
    let list = ListArray::new(
        field,
        OffsetBuffer::from_lengths([values.len()]),
        values,
        None,
    );
    ScalarValue::List(Arc::new(list))
}

impl Accumulator for Counts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[self.value], None)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let bad =
            || DataFusionError::Internal(format!("{NAME}: lists of values and counts expected"));
        let (Some(values), Some(counts)) = (
            states[0].as_list_opt::<i32>(),
            states[1].as_list_opt::<i32>(),
        ) else {
            return Err(bad());
        };
        for i in 0..values.len() {
            if values.is_null(i) || counts.is_null(i) {
                continue;
            }
            let counts = counts.value(i);
            let counts = counts.as_primitive_opt::<Int64Type>().ok_or_else(bad)?;
            if counts.len() != values.value_length(i) as usize {
                return Err(bad());
            }
            self.add(&values.value(i), Some(counts))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (values, counts) = self.arrays()?;
        Ok(vec![
            one_list(values, true),
            one_list(Arc::new(counts), true),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let map_type = map_type(&self.key);
        if self.order.is_empty() {
            return ScalarValue::try_from(&map_type);
        }
        let (mut values, mut counts) = self.arrays()?;
        if let Some(top) = self.top.filter(|&top| top < counts.len()) {
            let mut by_count: Vec<u32> = (0..counts.len() as u32).collect();
            by_count.sort_by_key(|&i| std::cmp::Reverse(counts.value(i as usize)));
            by_count.truncate(top);
            let indices = arrow::array::UInt32Array::from(by_count);
            values = arrow::compute::take(&values, &indices, None)?;
            counts = arrow::compute::take(&counts, &indices, None)?
                .as_primitive::<Int64Type>()
                .clone();
        }
        let entries =
            StructArray::try_new(entries(&self.key), vec![values, Arc::new(counts)], None)?;
        let DataType::Map(field, _) = map_type else {
            return Err(DataFusionError::Internal(format!(
                "{NAME}: a map type expected"
            )));
        };
        let map = MapArray::try_new(
            field,
            OffsetBuffer::from_lengths([entries.len()]),
            entries,
            None,
            false,
        )?;
        ScalarValue::try_from_array(&map, 0)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.bytes + self.converter.size()
    }
}
