//! `UNNEST(m) AS t(k, v)` of a map and `UNNEST(a) AS t(x, y)` of an array
//! of rows, as Trino reads them: a map's entries as key and value columns,
//! a row's fields as columns. The planner writes such an UNNEST as the
//! unnest of parts side by side, [`UNNEST_PART`]`(x, i)`: the list of the
//! map's keys (`i` = 0) or values (1), or of the rows' `i`th field.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, make_array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::scalar::ScalarValue;

/// The name of the function.
pub const UNNEST_PART: &str = "squall_unnest_part";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(UnnestPart {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct UnnestPart {
    signature: Signature,
}

/// The fields `t` holds side by side: a map's key and value, a row's fields.
fn parts(t: &DataType) -> Result<Vec<FieldRef>> {
    let refused = || {
        DataFusionError::Plan(format!(
            "UNNEST of one value into several columns needs a map (key, value) or an array of \
             rows (their fields), not {t}"
        ))
    };
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) => Ok(fields.iter().cloned().collect()),
            _ => Err(refused()),
        },
        DataType::List(item) | DataType::LargeList(item) => match item.data_type() {
            DataType::Struct(fields) => Ok(fields.iter().cloned().collect()),
            _ => Err(refused()),
        },
        _ => Err(refused()),
    }
}

fn unexpected(t: &DataType) -> DataFusionError {
    DataFusionError::Internal(format!("{UNNEST_PART} of {t}"))
}

fn index(arg: Option<&ScalarValue>) -> Result<usize> {
    match arg {
        Some(ScalarValue::Int64(Some(i))) if *i >= 0 => Ok(*i as usize),
        other => Err(DataFusionError::Plan(format!(
            "{UNNEST_PART}: the part must be a literal index, not {other:?}"
        ))),
    }
}

impl ScalarUDFImpl for UnnestPart {
    fn name(&self) -> &str {
        UNNEST_PART
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Err(DataFusionError::Internal(format!(
            "{UNNEST_PART}: the type comes from the arguments"
        )))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let i = index(args.scalar_arguments.get(1).copied().flatten())?;
        let fields = parts(args.arg_fields[0].data_type())?;
        let part = fields.get(i).ok_or_else(|| {
            DataFusionError::Plan(format!(
                "UNNEST into {} or more columns of a value of {} parts",
                i + 1,
                fields.len()
            ))
        })?;
        let item = Field::new("item", part.data_type().clone(), true);
        Ok(Arc::new(Field::new(
            UNNEST_PART,
            DataType::List(Arc::new(item)),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let i = match &args.args[1] {
            ColumnarValue::Scalar(s) => index(Some(s))?,
            ColumnarValue::Array(_) => index(None)?,
        };
        let call = super::Rows::of(&args);
        let rows = call.count;
        let input = args.args[0].to_array(rows)?;
        let (offsets, nulls, values) = match input.data_type() {
            DataType::Map(..) => {
                let map = input.as_map();
                let entries: ArrayRef = Arc::new(map.entries().clone());
                (map.offsets().clone(), map.nulls().cloned(), entries)
            }
            DataType::List(_) => {
                let list = input.as_list::<i32>();
                (
                    list.offsets().clone(),
                    list.nulls().cloned(),
                    Arc::clone(list.values()),
                )
            }
            DataType::LargeList(_) => {
                let large = arrow::compute::cast(
                    &input,
                    &DataType::List(Arc::new(Field::new(
                        "item",
                        match input.data_type() {
                            DataType::LargeList(f) => f.data_type().clone(),
                            _ => DataType::Null,
                        },
                        true,
                    ))),
                )?;
                let list = large.as_list::<i32>();
                (
                    list.offsets().clone(),
                    list.nulls().cloned(),
                    Arc::clone(list.values()),
                )
            }
            other => return Err(parts(other).err().unwrap_or_else(|| unexpected(other))),
        };
        let rows_of = values
            .as_struct_opt()
            .ok_or_else(|| unexpected(input.data_type()))?;
        let column = rows_of.column(i);
        // A NULL row's fields are NULL.
        let column = match NullBuffer::union(rows_of.nulls(), column.nulls()) {
            Some(n) if Some(&n) != column.nulls() => {
                make_array(column.to_data().into_builder().nulls(Some(n)).build()?)
            }
            _ => Arc::clone(column),
        };
        let item = Arc::new(Field::new("item", column.data_type().clone(), true));
        let out: ArrayRef = Arc::new(ListArray::try_new(item, offsets, column, nulls)?);
        call.answer(out)
    }
}
