//! Trino's functions over text that DataFusion does not have, as functions
//! of the session: JSON (`json_extract_scalar`, `json_parse`, ...), URLs
//! (`url_extract_host`, ...), `hamming_distance` and `format` (Java's
//! `String.format`). Athena and Trino users
//! keep logs and events as JSON text and URLs in columns, and query them with
//! these; before, squall named them unknown. And `regexp_extract_all` and
//! `regexp_split`, arrays of a regular expression's matches and pieces.
//!
//! The engine and the workers register the same functions (a stage plan
//! names them, and a worker decodes it with its own registry). Each is
//! NULL on a NULL argument, as Trino's are, and computes row by row over
//! text: an argument of another type (a JSON document given as a number, an
//! index) is read as its text.
//!
//! JSON values are text, as Trino's client protocol carries its `json`
//! type: `json_parse` checks a document and writes it canonically (objects'
//! keys sorted, no white space), and a function taking JSON reads text.
//! Paths follow Trino's subset of JSONPath: `$`, then `.name`, `["name"]`
//! or `[index]` steps; any other path is refused, naming it.
//! `json_extract` and `json_extract_scalar` answer NULL where the document
//! is not JSON or the path leads nowhere (as Trino's do); `json_parse`
//! refuses text that is not JSON, naming the error. Casts between JSON
//! text and arrays, maps and rows are [`json_cast`]'s.

mod array_pieces;
mod binary_length;
mod by_type;
mod bytes_and_text;
pub mod cardinality;
pub mod checked;
mod checksum;
mod codes;
pub mod distinct_key;
mod distributions;
mod duration;
mod entropy;
mod format;
mod histogram;
mod iso8601;
mod json;
pub mod json_cast;
pub mod map_first;
mod moments;
pub mod multimap;
mod reduce;
mod regexp_arrays;
mod regexp_position;
mod same_type;
pub mod sort_by;
mod square_root;
pub mod top_n;
pub mod unnest_part;
mod url_parts;
pub mod varchar_n;
mod zone_offset;

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringArray, StringBuilder,
};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

/// Register the functions with `ctx`, `sum` that fails on overflow
/// ([`crate::checked_sum`]) and `avg` of DECIMALs that rounds its last
/// digit ([`crate::rounded_avg`]).
pub fn register(ctx: &SessionContext) {
    for udf in functions() {
        ctx.register_udf(udf);
    }
    by_type::register(ctx);
    same_type::register(ctx);
    crate::zoned_stamps::register(ctx);
    crate::checked_sum::register(ctx);
    crate::rounded_avg::register(ctx);
    crate::window_flags::register(ctx);
    ctx.register_udaf(histogram::function());
    ctx.register_udaf(histogram::most_frequent());
    ctx.register_udaf(checksum::function());
    ctx.register_udaf(entropy::function());
    for udaf in top_n::functions() {
        ctx.register_udaf(udaf);
    }
    ctx.register_higher_order_function(Arc::new(reduce::function()));
    ctx.register_higher_order_function(Arc::new(sort_by::function()));
    for udaf in moments::functions() {
        ctx.register_udaf(udaf);
    }
}

/// The types `udf`'s signature coerces `arg_types` to: for a function of
/// squall's that answers as a DataFusion function does for some arguments.
pub(crate) fn coerced_as(
    udf: &impl datafusion::logical_expr::type_coercion::functions::UDFCoercionExt,
    arg_types: &[arrow::datatypes::DataType],
) -> datafusion::error::Result<Vec<arrow::datatypes::DataType>> {
    let fields: Vec<arrow::datatypes::FieldRef> = arg_types
        .iter()
        .map(|t| Arc::new(arrow::datatypes::Field::new("a", t.clone(), true)))
        .collect();
    Ok(
        datafusion::logical_expr::type_coercion::functions::fields_with_udf(&fields, udf)?
            .iter()
            .map(|f| f.data_type().clone())
            .collect(),
    )
}

/// Every function of this module.
pub fn functions() -> Vec<ScalarUDF> {
    use Kernel::*;
    let all = [
        ("json_parse", 1, Text(json::parse)),
        ("json_format", 1, Text(json::format)),
        ("json_extract", 2, Text(json::extract)),
        ("json_extract_scalar", 2, Text(json::extract_scalar)),
        ("json_array_get", 2, Text(json::array_get)),
        ("json_array_length", 1, Int(json::array_length)),
        ("json_size", 2, Int(json::size)),
        ("json_array_contains", 2, Bool(json::array_contains)),
        ("is_json_scalar", 1, Bool(json::is_scalar)),
        ("url_extract_protocol", 1, Text(url_parts::protocol)),
        ("url_extract_host", 1, Text(url_parts::host)),
        ("url_extract_port", 1, Int(url_parts::port)),
        ("url_extract_path", 1, Text(url_parts::path)),
        ("url_extract_query", 1, Text(url_parts::query)),
        ("url_extract_fragment", 1, Text(url_parts::fragment)),
        ("url_extract_parameter", 2, Text(url_parts::parameter)),
        ("url_encode", 1, Text(url_parts::encode)),
        ("url_decode", 1, Text(url_parts::decode)),
        ("hamming_distance", 2, Int(hamming_distance)),
        ("to_base", 2, Text(to_base)),
        ("from_base", 2, Int(from_base)),
        ("soundex", 1, Text(codes::soundex)),
        ("luhn_check", 1, Bool(codes::luhn_check)),
        ("bit_count", 2, Int(codes::bit_count)),
        // Trino's `strpos(s, sub, n)` (`crate::trino_udfs` names it apart
        // from DataFusion's two-argument `strpos`; the planner writes it).
        ("squall_strpos_instance", 3, Int(codes::strpos_instance)),
        ("normal_cdf", 3, Float(distributions::normal_cdf)),
        (
            "inverse_normal_cdf",
            3,
            Float(distributions::inverse_normal_cdf),
        ),
        ("beta_cdf", 3, Float(distributions::beta_cdf)),
        (
            "inverse_beta_cdf",
            3,
            Float(distributions::inverse_beta_cdf),
        ),
        (
            "wilson_interval_lower",
            3,
            Float(distributions::wilson_interval_lower),
        ),
        (
            "wilson_interval_upper",
            3,
            Float(distributions::wilson_interval_upper),
        ),
        // Any number of arguments.
        ("format", 0, Text(format::format)),
    ];
    all.into_iter()
        .map(|(name, arity, kernel)| {
            ScalarUDF::new_from_impl(RowWise {
                name,
                signature: match arity {
                    0 => Signature::variadic_any(Volatility::Immutable),
                    n => Signature::any(n, Volatility::Immutable),
                },
                kernel,
            })
        })
        .chain(json_cast::functions())
        .chain([
            unnest_part::function(),
            map_first::function(),
            map_first::from_entries(),
            iso8601::function(),
            varchar_n::function(),
            binary_length::function(),
            cardinality::function(),
            duration::function(),
            regexp_position::function(),
            square_root::function(),
            distinct_key::function(),
        ])
        .chain(regexp_arrays::functions())
        .chain(array_pieces::functions())
        .chain(multimap::functions())
        .chain(zone_offset::functions())
        .chain(checked::functions())
        .chain(bytes_and_text::functions())
        .collect()
}

/// An argument of a row: its text, and the type it was given as (JSON's
/// `json_array_contains` tells a number from a string by it).
pub(crate) struct Arg<'a> {
    pub text: &'a str,
    pub data_type: &'a DataType,
}

/// What a function computes for one row whose arguments are all non-NULL;
/// `Ok(None)` is NULL.
#[derive(Debug, Clone, Copy)]
enum Kernel {
    Text(fn(&[Arg]) -> Result<Option<String>>),
    Int(fn(&[Arg]) -> Result<Option<i64>>),
    Bool(fn(&[Arg]) -> Result<Option<bool>>),
    Float(fn(&[Arg]) -> Result<Option<f64>>),
}

/// A function of this module; its name says which (two are equal when
/// their names are).
#[derive(Debug)]
struct RowWise {
    name: &'static str,
    signature: Signature,
    kernel: Kernel,
}

impl PartialEq for RowWise {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for RowWise {}

impl std::hash::Hash for RowWise {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for RowWise {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kernel {
            Kernel::Text(_) => DataType::Utf8,
            Kernel::Int(_) => DataType::Int64,
            Kernel::Bool(_) => DataType::Boolean,
            Kernel::Float(_) => DataType::Float64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let rows = call.count;
        let types: Vec<DataType> = args.args.iter().map(|a| a.data_type()).collect();
        let texts: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| {
                let array = a.to_array(rows)?;
                if array.data_type() == &DataType::Utf8 {
                    Ok(array)
                } else {
                    cast(&array, &DataType::Utf8).map_err(|e| {
                        DataFusionError::Execution(format!(
                            "{}: an argument of type {} has no text: {e}",
                            self.name,
                            array.data_type()
                        ))
                    })
                }
            })
            .collect::<Result<_>>()?;
        let texts: Vec<&StringArray> = texts
            .iter()
            .map(|a| {
                a.as_any().downcast_ref::<StringArray>().ok_or_else(|| {
                    DataFusionError::Internal(format!("{}: text arguments expected", self.name))
                })
            })
            .collect::<Result<_>>()?;
        let row_args = |row: usize| -> Option<Vec<Arg>> {
            texts
                .iter()
                .zip(&types)
                .map(|(t, data_type)| {
                    t.is_valid(row).then(|| Arg {
                        text: t.value(row),
                        data_type,
                    })
                })
                .collect()
        };
        let out: ArrayRef = match self.kernel {
            Kernel::Text(f) => {
                let mut b = StringBuilder::with_capacity(rows, rows * 16);
                for row in 0..rows {
                    b.append_option(row_args(row).map(|a| f(&a)).transpose()?.flatten());
                }
                Arc::new(b.finish())
            }
            Kernel::Int(f) => {
                let mut b = Int64Builder::with_capacity(rows);
                for row in 0..rows {
                    b.append_option(row_args(row).map(|a| f(&a)).transpose()?.flatten());
                }
                Arc::new(b.finish())
            }
            Kernel::Bool(f) => {
                let mut b = BooleanBuilder::with_capacity(rows);
                for row in 0..rows {
                    b.append_option(row_args(row).map(|a| f(&a)).transpose()?.flatten());
                }
                Arc::new(b.finish())
            }
            Kernel::Float(f) => {
                let mut b = Float64Builder::with_capacity(rows);
                for row in 0..rows {
                    b.append_option(row_args(row).map(|a| f(&a)).transpose()?.flatten());
                }
                Arc::new(b.finish())
            }
        };
        call.answer(out)
    }
}

/// Whether `message` is (or quotes) an error a function of this module,
/// the series ceiling, or a function of DataFusion's given a time zone or a
/// date part it does not know, raised about its arguments: the same rows fail
/// again (a task is not retried), and it is the user's
/// (`INVALID_FUNCTION_ARGUMENT`, `INVALID_CAST_ARGUMENT` for a cast).
pub fn is_argument_error(message: &str) -> bool {
    is_cast_error(message)
        || message.contains("would build an array of")
        || message.contains("Invalid timezone \"")
        || message.contains("must be a positive integer constant")
        || (message.contains("Date part '") && message.contains("not supported"))
        // DataFusion's functions refusing an argument, which reach clients
        // as internal errors unless named here.
        || [
            "invalid Unicode scalar value",
            "regex parse error",
            "step can't be 0",
            "NTILE requires a positive integer",
            "zero raised to a negative power",
            "negative count not allowed",
            "Unsupported date_trunc granularity",
            "field position must not be zero",
            "map key must be unique",
            "map requires key and value lists to have the same length",
            "map key cannot be null",
            "overlay start position must be",
            "requires start to be 1 based",
            "Failed to decode value using",
            "' is out of range",
            ": offset must be at least 0",
        ]
        .iter()
        .any(|refusal| message.contains(refusal))
        || ["array_sort: ", "reduce: "]
            .iter()
            .any(|higher_order| message.contains(higher_order))
        || functions()
            .iter()
            .any(|f| message.contains(&format!("{}: ", f.name())))
}

/// Whether `message` is (or quotes) a cast of JSON that failed.
pub fn is_cast_error(message: &str) -> bool {
    message.contains(json_cast::FAILED_CAST) || varchar_n::is_too_long(message)
}

/// The rows a call computes: one when every argument is a scalar (and its
/// answer is a scalar), else the batch's.
pub(crate) struct Rows {
    scalar: bool,
    pub count: usize,
}

impl Rows {
    pub(crate) fn of(args: &ScalarFunctionArgs) -> Self {
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        Rows {
            scalar,
            count: if scalar { 1 } else { args.number_rows },
        }
    }

    /// `out`, one value per row, as the call's answer.
    pub(crate) fn answer(&self, out: ArrayRef) -> Result<ColumnarValue> {
        if self.scalar {
            datafusion::scalar::ScalarValue::try_from_array(&out, 0).map(ColumnarValue::Scalar)
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// A user's error in a call of `function`.
pub(crate) fn refused(function: &str, why: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{function}: {why}"))
}

/// Trino's `hamming_distance(a, b)`: positions whose characters differ, of
/// two strings of the same length.
fn hamming_distance(args: &[Arg]) -> Result<Option<i64>> {
    let (a, b) = (args[0].text, args[1].text);
    if a.chars().count() != b.chars().count() {
        return Err(refused(
            "hamming_distance",
            "the two strings must be of the same length",
        ));
    }
    Ok(Some(
        a.chars().zip(b.chars()).filter(|(x, y)| x != y).count() as i64,
    ))
}

#[cfg(test)]
mod tests;

/// A radix argument of `function`, 2 to 36.
fn radix(function: &str, arg: &Arg) -> Result<u32> {
    arg.text
        .parse::<u32>()
        .ok()
        .filter(|r| (2..=36).contains(r))
        .ok_or_else(|| {
            refused(
                function,
                format!("radix must be between 2 and 36, not {}", arg.text),
            )
        })
}

/// Trino's `to_base(x, radix)`: `x` in base `radix`, lowercase digits.
fn to_base(args: &[Arg]) -> Result<Option<String>> {
    let radix = radix("to_base", &args[1])?;
    let x: i64 = args[0]
        .text
        .parse()
        .map_err(|_| refused("to_base", format!("not an integer: {}", args[0].text)))?;
    let mut digits = Vec::new();
    let mut n = x.unsigned_abs();
    loop {
        let d = (n % u64::from(radix)) as u32;
        digits.push(char::from_digit(d, radix).unwrap_or('?'));
        n /= u64::from(radix);
        if n == 0 {
            break;
        }
    }
    if x < 0 {
        digits.push('-');
    }
    Ok(Some(digits.into_iter().rev().collect()))
}

/// Trino's `from_base(s, radix)`: the BIGINT `s` writes in base `radix`.
fn from_base(args: &[Arg]) -> Result<Option<i64>> {
    let radix = radix("from_base", &args[1])?;
    i64::from_str_radix(args[0].text, radix)
        .map(Some)
        .map_err(|_| {
            refused(
                "from_base",
                format!("not a base-{radix} number: {}", args[0].text),
            )
        })
}
