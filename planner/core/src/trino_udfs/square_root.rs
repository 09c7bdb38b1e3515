//! `sqrt(x)` of a negative number is NaN, as in Trino (and as `ln(-1)` and
//! `log10(-1)` are here); DataFusion 55's `sqrt` failed the query ("cannot
//! take square root of a negative number"), as an internal error.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float64Type};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(SquareRoot {
        signature: Signature::uniform(1, vec![DataType::Float64], Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SquareRoot {
    signature: Signature,
}

impl ScalarUDFImpl for SquareRoot {
    fn name(&self) -> &str {
        "sqrt"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let values = arrays[0].as_primitive::<Float64Type>();
        let roots: ArrayRef = Arc::new(values.unary::<_, Float64Type>(f64::sqrt));
        Ok(match args.args[0] {
            ColumnarValue::Scalar(_) => {
                ColumnarValue::Scalar(datafusion::scalar::ScalarValue::try_from_array(&roots, 0)?)
            }
            ColumnarValue::Array(_) => ColumnarValue::Array(roots),
        })
    }
}
