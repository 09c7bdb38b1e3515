//! `length(x)` of a VARBINARY counts its bytes, as Trino's does; of text,
//! its characters, as DataFusion's `length` (`character_length`), which
//! this function calls for everything but binary values; a BIGINT, as in
//! Trino. DataFusion's read
//! a VARBINARY as text and failed on bytes that are not UTF-8
//! (`length(from_hex('00ff'))`: "Encountered non UTF-8 data").

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Int64Array};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::Rows;

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Length {
        text: datafusion::functions::unicode::character_length(),
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Length {
    /// DataFusion's `character_length`, for text.
    text: Arc<ScalarUDF>,
    signature: Signature,
}

impl ScalarUDFImpl for Length {
    fn name(&self) -> &str {
        "length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 1 {
            return Err(datafusion::error::DataFusionError::Plan(format!(
                "length takes one argument, not {}",
                arg_types.len()
            )));
        }
        Ok(arg_types
            .iter()
            .map(|t| match t {
                t if is_binary(t) => DataType::Binary,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => t.clone(),
                _ => DataType::Utf8,
            })
            .collect())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if !args.arg_fields.iter().any(|f| is_binary(f.data_type())) {
            let mut text = args;
            text.return_field = Arc::new(arrow::datatypes::Field::new(
                "length",
                self.text
                    .return_type(&[text.arg_fields[0].data_type().clone()])?,
                true,
            ));
            return match self.text.invoke_with_args(text)? {
                ColumnarValue::Array(a) => Ok(ColumnarValue::Array(cast(&a, &DataType::Int64)?)),
                ColumnarValue::Scalar(v) => Ok(ColumnarValue::Scalar(v.cast_to(&DataType::Int64)?)),
            };
        }
        let call = Rows::of(&args);
        let bytes = cast(&args.args[0].to_array(call.count)?, &DataType::Binary)?;
        let out: Int64Array = bytes
            .as_binary::<i32>()
            .iter()
            .map(|v| v.map(|v| v.len() as i64))
            .collect();
        call.answer(Arc::new(out) as ArrayRef)
    }
}
