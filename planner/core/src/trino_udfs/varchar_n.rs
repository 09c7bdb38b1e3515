//! Casts to `VARCHAR(n)` as Trino makes them: text longer than `n`
//! characters is cut to `n`; any other value whose text is longer fails
//! (`Cannot cast '12345' to varchar(2)`; `TRY_CAST` gives NULL). DataFusion
//! reads `VARCHAR(n)` as `VARCHAR` and kept every character. SQL writes
//! `CAST(x AS VARCHAR(n))` as `squall_varchar(x, CAST(x AS VARCHAR), n,
//! try)`: the value for its type, its text as squall writes it.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::Rows;

pub const VARCHAR_N: &str = "squall_varchar";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(VarcharN {
        signature: Signature::any(4, Volatility::Immutable),
    })
}

/// Whether `message` is a cast to `VARCHAR(n)` of a value too long.
pub fn is_too_long(message: &str) -> bool {
    message.contains("Cannot cast '") && message.contains("' to varchar(")
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct VarcharN {
    signature: Signature,
}

fn constant(arg: &ColumnarValue, what: &str) -> Result<ScalarValue> {
    match arg {
        ColumnarValue::Scalar(s) => Ok(s.clone()),
        ColumnarValue::Array(_) => Err(DataFusionError::Internal(format!(
            "{VARCHAR_N}: {what} must be a constant"
        ))),
    }
}

impl ScalarUDFImpl for VarcharN {
    fn name(&self) -> &str {
        VARCHAR_N
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let text_value = matches!(
            args.args[0].data_type(),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
        );
        let n = match constant(&args.args[2], "the length")?.cast_to(&DataType::Int64)? {
            ScalarValue::Int64(Some(n)) if n >= 0 => n as usize,
            other => {
                return Err(DataFusionError::Plan(format!(
                    "varchar({other}): the length must be a constant of 0 or more"
                )));
            }
        };
        let lenient = matches!(
            constant(&args.args[3], "try")?,
            ScalarValue::Boolean(Some(true))
        );
        let text: ArrayRef = cast(&args.args[1].to_array(call.count)?, &DataType::Utf8)?;
        let mut out = StringBuilder::with_capacity(text.len(), text.len() * n.min(64));
        for v in text.as_string::<i32>().iter() {
            match v {
                None => out.append_null(),
                Some(s) => match s.char_indices().nth(n) {
                    None => out.append_value(s),
                    Some((cut, _)) if text_value => out.append_value(&s[..cut]),
                    Some(_) if lenient => out.append_null(),
                    Some(_) => {
                        return Err(DataFusionError::Execution(format!(
                            "Cannot cast '{s}' to varchar({n}): it is {} characters long",
                            s.chars().count()
                        )));
                    }
                },
            }
        }
        call.answer(Arc::new(out.finish()))
    }
}
