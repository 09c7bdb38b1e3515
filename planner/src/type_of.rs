//! Trino's `typeof(x)`: the name of `x`'s type as Trino names it (`bigint`,
//! `varchar`, `decimal(15,2)`, `array(bigint)`), the name squall's clients
//! see in a result's columns; DataFusion's `arrow_typeof` answers with
//! Arrow's (`Int64`). The type is known when the query is planned, so the
//! call simplifies to its text there and never reaches a worker.

use arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::prelude::{SessionContext, lit};

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(TypeOf {
        signature: Signature::any(1, Volatility::Immutable),
    }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        let t = args[0].get_type(info.schema().as_ref())?;
        Ok(ExprSimplifyResult::Simplified(lit(
            crate::trino_types::trino_type(&t).display_name(),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let t = args
            .args
            .first()
            .map(|a| a.data_type())
            .ok_or_else(|| DataFusionError::Plan("typeof takes one argument".into()))?;
        Ok(ColumnarValue::Scalar(
            crate::trino_types::trino_type(&t).display_name().into(),
        ))
    }
}
