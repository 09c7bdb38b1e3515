//! Trino's functions that take strings or arrays under one name, where
//! DataFusion's take strings only and answered arrays silently wrong:
//! `concat(ARRAY[1], ARRAY[2])` was the text `'[1][2]'` and `reverse(ARRAY[1,
//! 2])` the text `']2 ,1['`. Called with an array, they are `array_concat`
//! and `array_reverse`. And `concat` of strings is NULL when an argument is
//! NULL, as Trino's (and SQL's `||`); DataFusion's skipped NULL arguments.

use arrow::array::{Array, make_array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;

/// Put Trino's `concat` and `reverse` in the session in place of DataFusion's.
pub(super) fn register(ctx: &SessionContext) {
    for (name, lists) in [("concat", "array_concat"), ("reverse", "array_reverse")] {
        let (Ok(text), Ok(lists)) = (ctx.udf(name), ctx.udf(lists)) else {
            continue;
        };
        if text.inner().downcast_ref::<ByType>().is_some() {
            continue;
        }
        ctx.register_udf(ScalarUDF::new_from_impl(ByType {
            text: text.as_ref().clone(),
            lists: lists.as_ref().clone(),
            signature: Signature::user_defined(Volatility::Immutable),
            null_if_any_null: name == "concat",
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ByType {
    /// DataFusion's function of strings.
    text: ScalarUDF,
    /// DataFusion's function of arrays.
    lists: ScalarUDF,
    signature: Signature,
    /// NULL when an argument is NULL (DataFusion's `concat` skips them).
    null_if_any_null: bool,
}

fn is_list(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

impl ByType {
    fn of(&self, types: &[DataType]) -> &ScalarUDF {
        if types.iter().any(is_list) {
            &self.lists
        } else {
            &self.text
        }
    }
}

impl ScalarUDFImpl for ByType {
    fn name(&self) -> &str {
        self.text.name()
    }

    fn aliases(&self) -> &[String] {
        self.text.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        super::coerced_as(self.of(arg_types), arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.of(arg_types).return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args
            .arg_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        self.of(&types).return_field_from_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.text.documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let types: Vec<DataType> = args.args.iter().map(|a| a.data_type()).collect();
        let function = self.of(&types);
        if !self.null_if_any_null || std::ptr::eq(function, &self.lists) {
            return function.inner().invoke_with_args(args);
        }
        let rows = args.number_rows;
        // A NULL scalar argument: every row is NULL.
        if args
            .args
            .iter()
            .any(|a| matches!(a, ColumnarValue::Scalar(s) if s.is_null()))
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from(
                args.return_field.data_type(),
            )?));
        }
        let nulls = args
            .args
            .iter()
            .fold(None, |acc: Option<NullBuffer>, a| match a {
                ColumnarValue::Array(array) => {
                    NullBuffer::union(acc.as_ref(), array.logical_nulls().as_ref())
                }
                ColumnarValue::Scalar(_) => acc,
            });
        let out = function.inner().invoke_with_args(args)?;
        let Some(nulls) = nulls else {
            return Ok(out);
        };
        let out = out.to_array(rows)?;
        let nulls = NullBuffer::union(Some(&nulls), out.logical_nulls().as_ref());
        Ok(ColumnarValue::Array(make_array(
            out.to_data().into_builder().nulls(nulls).build()?,
        )))
    }
}
