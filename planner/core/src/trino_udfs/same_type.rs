//! `sign`, `ceiling` and `floor` in Trino's types: of an integer, that
//! integer type (DataFusion's made every integer a DOUBLE: `sign(-5)` was
//! `-1.0`, `floor(7)` `7.0`); `sign` of a DECIMAL is a DECIMAL(1, 0), and
//! `ceiling` and `floor` of a DECIMAL(p, s) a DECIMAL(p - s + 1, 0) (DataFusion
//! kept the scale: `769.00`). Of a DOUBLE or REAL, DataFusion's functions,
//! which answer as Trino's. Each wraps DataFusion's function of its name and
//! takes its place in the session.

use std::sync::Arc;

use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::prelude::SessionContext;

/// Put Trino's `signum` (`sign`), `ceil` and `floor` in the session in
/// place of DataFusion's.
pub(super) fn register(ctx: &SessionContext) {
    for name in ["signum", "ceil", "floor"] {
        let Ok(inner) = ctx.udf(name) else {
            continue;
        };
        if inner.inner().downcast_ref::<SameType>().is_some() {
            continue;
        }
        ctx.register_udf(ScalarUDF::new_from_impl(SameType {
            inner: inner.as_ref().clone(),
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SameType {
    /// DataFusion's function of the name.
    inner: ScalarUDF,
    signature: Signature,
}

impl SameType {
    fn is_sign(&self) -> bool {
        self.inner.name() == "signum"
    }

    /// Trino's type of the call on `input`, where it is not DataFusion's.
    fn trino_type(&self, input: &DataType) -> Option<DataType> {
        match input {
            t if t.is_integer() => Some(t.clone()),
            DataType::Decimal128(..) if self.is_sign() => Some(DataType::Decimal128(1, 0)),
            DataType::Decimal128(p, s) if *s > 0 => {
                Some(DataType::Decimal128((*p as i8 - *s + 1).max(1) as u8, 0))
            }
            _ => None,
        }
    }
}

impl ScalarUDFImpl for SameType {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [t] if t.is_integer() => Ok(vec![t.clone()]),
            [DataType::Decimal128(..)] if self.is_sign() => Ok(arg_types.to_vec()),
            _ => super::coerced_as(&self.inner, arg_types),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first().and_then(|t| self.trino_type(t)) {
            Some(t) => Ok(t),
            None => self.inner.return_type(arg_types),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let input = args.arg_fields.first().map(|f| f.data_type().clone());
        match input.and_then(|t| self.trino_type(&t)) {
            Some(t) => {
                let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
                Ok(Arc::new(Field::new(self.name(), t, nullable)))
            }
            None => self.inner.return_field_from_args(args),
        }
    }

    fn output_ordering(&self, input: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(input)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args.first().map(|a| a.data_type());
        let Some(to) = input.as_ref().and_then(|t| self.trino_type(t)) else {
            return self.inner.inner().invoke_with_args(args);
        };
        let input = input.unwrap_or(DataType::Null);
        // Of an integer, `ceil` and `floor` are the value itself.
        if input.is_integer() && !self.is_sign() {
            return Ok(args.args[0].clone());
        }
        // Otherwise DataFusion's function of what it takes (a DOUBLE for
        // `signum`, the DECIMAL itself for `ceil` and `floor`), its exact
        // whole-number answer then cast to Trino's type.
        let takes = if self.is_sign() {
            DataType::Float64
        } else {
            input.clone()
        };
        let value = args.args[0].cast_to(&takes, None)?;
        let inner_args = ScalarFunctionArgs {
            arg_fields: vec![Arc::new(Field::new("a", takes.clone(), true))],
            return_field: Arc::new(Field::new(self.name(), takes, true)),
            args: vec![value],
            number_rows: args.number_rows,
            config_options: args.config_options,
        };
        Ok(match self.inner.inner().invoke_with_args(inner_args)? {
            ColumnarValue::Array(a) => ColumnarValue::Array(cast(&a, &to)?),
            ColumnarValue::Scalar(s) => ColumnarValue::Scalar(s.cast_to(&to)?),
        })
    }
}
