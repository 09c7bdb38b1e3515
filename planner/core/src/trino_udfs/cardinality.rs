//! Trino's `cardinality(x)`: the elements of an array (its own, not those
//! of the arrays it holds) or the entries of a map, as a BIGINT.
//! DataFusion's counts every element of a nested array
//! (`cardinality(ARRAY[ARRAY[1, 2], ARRAY[3]])` was 3; Trino's is 2).

use std::sync::Arc;

use arrow::array::{Array, AsArray, Int64Array};
use arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::Rows;

/// The name the planner writes `cardinality(x)` as.
pub const CARDINALITY: &str = "squall_cardinality";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Cardinality {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Cardinality {
    signature: Signature,
}

impl ScalarUDFImpl for Cardinality {
    fn name(&self) -> &str {
        CARDINALITY
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(_, _)
            | DataType::Map(_, _)
            | DataType::Null => Ok(DataType::Int64),
            other => Err(DataFusionError::Plan(format!(
                "cardinality: an array or a map expected, not {other}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let array = args.args[0].to_array(call.count)?;
        let lengths: Vec<Option<i64>> = match array.data_type() {
            DataType::List(_) => {
                let l = array.as_list::<i32>();
                (0..l.len())
                    .map(|i| l.is_valid(i).then(|| i64::from(l.value_length(i))))
                    .collect()
            }
            DataType::LargeList(_) => {
                let l = array.as_list::<i64>();
                (0..l.len())
                    .map(|i| l.is_valid(i).then(|| l.value_length(i)))
                    .collect()
            }
            DataType::FixedSizeList(_, n) => (0..array.len())
                .map(|i| array.is_valid(i).then_some(i64::from(*n)))
                .collect(),
            DataType::Map(_, _) => {
                let m = array.as_map();
                let offsets = m.value_offsets();
                (0..m.len())
                    .map(|i| {
                        m.is_valid(i)
                            .then(|| i64::from(offsets[i + 1] - offsets[i]))
                    })
                    .collect()
            }
            _ => vec![None; array.len()],
        };
        call.answer(Arc::new(Int64Array::from(lengths)))
    }
}
