//! Integer `+`, `-` and `*` that fail on overflow, as Trino's do
//! (`NUMERIC_VALUE_OUT_OF_RANGE`). DataFusion's operators wrap: `BIGINT
//! 9223372036854775807 + 1` answered -9223372036854775808, and the product
//! of two INTEGER columns past 2^31 a wrong number, silently. The planner
//! (`squall_planner::checked_arithmetic`) writes an integer operation as
//! one of these functions; each computes with Arrow's checked kernels and
//! names its column as the operator would (`a + b`), so names, plans'
//! texts and clients' headers stay as they were.
//!
//! DECIMAL arithmetic whose type DataFusion caps at 38 digits is checked
//! after the operator, by [`DECIMAL_FITS`]: Arrow's kernels fail only past
//! 128 bits, so `DECIMAL(38)` nines `+ 1` answered a 39-digit value that
//! clients read as 38 digits (Trino fails it: `Decimal overflow`).

use std::fmt::Write as _;
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Decimal128Type, DecimalType, Field, FieldRef};
use arrow::error::ArrowError;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Expr, Operator, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::physical_expr_common::datum::apply;

/// The functions, one per operator, and the DECIMAL check.
pub(super) fn functions() -> Vec<ScalarUDF> {
    [Operator::Plus, Operator::Minus, Operator::Multiply]
        .into_iter()
        .map(|op| {
            ScalarUDF::new_from_impl(Checked {
                op,
                signature: Signature::any(2, Volatility::Immutable),
            })
        })
        .chain([ScalarUDF::new_from_impl(DecimalFits {
            signature: Signature::any(1, Volatility::Immutable),
        })])
        .collect()
}

/// A value of `values` with more than `precision` digits. The values'
/// buffer is checked whole first, with no branch per value for its NULL;
/// only where a slot is out of range (it may be a NULL's) are the values
/// walked again, NULLs skipped.
pub fn too_long(values: &arrow::array::Decimal128Array, precision: u8) -> Option<i128> {
    let bound = 10_i128
        .checked_pow(u32::from(precision))
        .unwrap_or(i128::MAX);
    let out = |v: &i128| *v >= bound || *v <= -bound;
    if !values.values().iter().any(out) {
        return None;
    }
    values.iter().flatten().find(|v| out(v))
}

/// The name of the function that fails on a DECIMAL value with more
/// digits than its type's precision and otherwise is its argument.
pub const DECIMAL_FITS: &str = "squall_decimal_fits";

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalFits {
    signature: Signature,
}

impl ScalarUDFImpl for DecimalFits {
    fn name(&self) -> &str {
        DECIMAL_FITS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t @ DataType::Decimal128(..)] => Ok(t.clone()),
            _ => Err(DataFusionError::Plan(format!(
                "{DECIMAL_FITS}: one DECIMAL expected, not {args:?}"
            ))),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let [field] = args.arg_fields else {
            return Err(DataFusionError::Plan(format!(
                "{DECIMAL_FITS}: one argument expected"
            )));
        };
        let t = self.return_type(&[field.data_type().clone()])?;
        Ok(Arc::new(Field::new(self.name(), t, field.is_nullable())))
    }

    /// As its argument names its column.
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        match args {
            [a] => Ok(OperatorName(a).to_string()),
            _ => Ok(self.name().to_string()),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "{DECIMAL_FITS}: one argument expected"
            )));
        };
        let DataType::Decimal128(precision, scale) = value.data_type() else {
            return Err(DataFusionError::Internal(format!(
                "{DECIMAL_FITS}: a DECIMAL expected, not {}",
                value.data_type()
            )));
        };
        let too_long = match value {
            ColumnarValue::Scalar(ScalarValue::Decimal128(Some(v), ..)) => {
                (!Decimal128Type::is_valid_decimal_precision(*v, precision)).then_some(*v)
            }
            ColumnarValue::Scalar(_) => None,
            ColumnarValue::Array(a) => too_long(a.as_primitive::<Decimal128Type>(), precision),
        };
        match too_long {
            None => Ok(value.clone()),
            // An arithmetic overflow: a data error the task does not retry.
            Some(v) => Err(DataFusionError::ArrowError(
                Box::new(ArrowError::ArithmeticOverflow(format!(
                    "decimal overflow: {} has more than the {precision} digits of \
                     DECIMAL({precision}, {scale}) (NUMERIC_VALUE_OUT_OF_RANGE; \
                     cast to DOUBLE for more)",
                    Decimal128Type::format_decimal(v, 40, scale)
                ))),
                None,
            )),
        }
    }
}

/// The name of the function computing `op` with an overflow check, if it
/// has one.
pub fn name_of(op: Operator) -> Option<&'static str> {
    match op {
        Operator::Plus => Some("squall_checked_add"),
        Operator::Minus => Some("squall_checked_subtract"),
        Operator::Multiply => Some("squall_checked_multiply"),
        _ => None,
    }
}

/// The operator a checked function's name stands for.
fn operator_named(name: &str) -> Option<Operator> {
    [Operator::Plus, Operator::Minus, Operator::Multiply]
        .into_iter()
        .find(|op| name_of(*op) == Some(name))
}

/// `e`'s column name as DataFusion's `Expr::schema_name` writes it, written
/// through this module's functions as through the operators they stand
/// for. Each function's `schema_name` returns a string, so in a chain `a +
/// b + c + ...` every level built the string of everything below it (the
/// nested calls of DataFusion's naming reach each one): naming a chain of
/// N checked operations copied O(N^2) bytes, and planning names the select
/// list at every rule (a sum of 1,000 DECIMAL columns: seconds). Written
/// here in one pass, down to any other expression.
struct OperatorName<'a>(&'a Expr);

impl std::fmt::Display for OperatorName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Expr::ScalarFunction(call) => match call.args.as_slice() {
                [a] if call.func.name() == DECIMAL_FITS => OperatorName(a).fmt(f),
                [a, b] => match operator_named(call.func.name()) {
                    Some(op) => write!(f, "{} {op} {}", OperatorName(a), OperatorName(b)),
                    None => self.0.schema_name().fmt(f),
                },
                _ => self.0.schema_name().fmt(f),
            },
            Expr::BinaryExpr(binary) => write!(
                f,
                "{} {} {}",
                OperatorName(&binary.left),
                binary.op,
                OperatorName(&binary.right)
            ),
            e => e.schema_name().fmt(f),
        }
    }
}

/// Whether values of `t` are checked for overflow: Trino's integer types
/// and unsigned ones of files.
pub fn is_checked_type(t: &DataType) -> bool {
    t.is_integer()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Checked {
    op: Operator,
    signature: Signature,
}

impl Checked {
    fn word(&self) -> &'static str {
        match self.op {
            Operator::Plus => "addition",
            Operator::Minus => "subtraction",
            _ => "multiplication",
        }
    }
}

/// Trino's name of an integer type.
fn type_name(t: &DataType) -> String {
    match t {
        DataType::Int8 => "tinyint".into(),
        DataType::Int16 => "smallint".into(),
        DataType::Int32 => "integer".into(),
        DataType::Int64 => "bigint".into(),
        other => other.to_string().to_lowercase(),
    }
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        name_of(self.op).unwrap_or("squall_checked")
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [a, b] if a == b && is_checked_type(a) => Ok(a.clone()),
            _ => Err(DataFusionError::Plan(format!(
                "{}: two integers of one type expected, not {args:?}",
                self.name()
            ))),
        }
    }

    /// NULL where an operand is, as the operator's.
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let t = self.return_type(
            &args
                .arg_fields
                .iter()
                .map(|f| f.data_type().clone())
                .collect::<Vec<_>>(),
        )?;
        let nullable = args.arg_fields.iter().any(|f| f.is_nullable());
        Ok(Arc::new(Field::new(self.name(), t, nullable)))
    }

    /// As the operator names its column: `a + b`.
    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        let [a, b] = args else {
            return Ok(self.name().to_string());
        };
        let mut s = String::new();
        let _ = write!(s, "{} {} {}", OperatorName(a), self.op, OperatorName(b));
        Ok(s)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [a, b] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "{}: two arguments expected",
                self.name()
            )));
        };
        let kernel = match self.op {
            Operator::Plus => arrow::compute::kernels::numeric::add,
            Operator::Minus => arrow::compute::kernels::numeric::sub,
            _ => arrow::compute::kernels::numeric::mul,
        };
        apply(a, b, kernel).map_err(|e| match e.find_root() {
            DataFusionError::ArrowError(inner, _)
                if matches!(inner.as_ref(), ArrowError::ArithmeticOverflow(_)) =>
            {
                let detail = inner.to_string();
                let values = detail
                    .rsplit_once("Overflow happened on: ")
                    .map(|(_, v)| v.to_string())
                    .unwrap_or(detail);
                // Still an arithmetic overflow: a data error the task does
                // not retry.
                DataFusionError::ArrowError(
                    Box::new(ArrowError::ArithmeticOverflow(format!(
                        "{} {} overflow: {values} is out of the type's range \
                         (NUMERIC_VALUE_OUT_OF_RANGE; cast to DECIMAL or DOUBLE for more)",
                        type_name(&a.data_type()),
                        self.word()
                    ))),
                    None,
                )
            }
            _ => e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{binary_expr, col};

    /// The checked functions and the DECIMAL check name their columns as the
    /// operators they stand for, nested in each other and in other
    /// expressions; a chain thousands deep is named in one pass.
    #[test]
    fn checked_operations_are_named_as_their_operators() {
        let udfs = functions();
        let udf = |name: &str| {
            udfs.iter()
                .find(|u| u.name() == name)
                .cloned()
                .expect("a checked function")
        };
        let (add, mul, fits) = (
            udf("squall_checked_add"),
            udf("squall_checked_multiply"),
            udf(DECIMAL_FITS),
        );
        let checked = fits.call(vec![add.call(vec![
            mul.call(vec![col("a"), col("b")]),
            fits.call(vec![binary_expr(col("c"), Operator::Minus, col("d"))]),
        ])]);
        let plain = binary_expr(
            binary_expr(col("a"), Operator::Multiply, col("b")),
            Operator::Plus,
            binary_expr(col("c"), Operator::Minus, col("d")),
        );
        assert_eq!(
            checked.schema_name().to_string(),
            plain.schema_name().to_string()
        );
        let inside = datafusion::functions::expr_fn::abs(checked.clone());
        let plain_inside = datafusion::functions::expr_fn::abs(plain);
        assert_eq!(
            inside.schema_name().to_string(),
            plain_inside.schema_name().to_string()
        );

        let (mut chain, mut plain) = (col("x"), col("x"));
        for _ in 0..3000 {
            chain = fits.call(vec![add.call(vec![chain, col("x")])]);
            plain = binary_expr(plain, Operator::Plus, col("x"));
        }
        assert_eq!(
            chain.schema_name().to_string(),
            plain.schema_name().to_string()
        );
    }
}
