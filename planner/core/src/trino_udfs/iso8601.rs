//! Trino's `to_iso8601(x)`: a DATE as `2024-01-02`, a TIMESTAMP as
//! `2024-01-02T10:20:30.000` (as many decimals as its precision: 3, 6 or
//! 9), one with a time zone as its local time there followed by the
//! offset (`Z` for UTC, else `+01:00`; a named zone's offset at that
//! instant).

use std::sync::Arc;

use arrow::array::timezone::Tz;
use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, TimeUnit, TimestampNanosecondType};
use chrono::Offset;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

const NAME: &str = "to_iso8601";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToIso8601 {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToIso8601 {
    signature: Signature,
}

/// The text of each value of `array` (a DATE or TIMESTAMP column).
fn texts(array: &ArrayRef) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(array.len(), array.len() * 24);
    match array.data_type() {
        DataType::Date32 | DataType::Date64 => {
            let days = arrow::compute::cast(array, &DataType::Date32)?;
            for d in days.as_primitive::<arrow::datatypes::Date32Type>().iter() {
                match d.and_then(arrow::temporal_conversions::date32_to_datetime) {
                    Some(d) => out.append_value(d.format("%Y-%m-%d").to_string()),
                    None => out.append_null(),
                }
            }
        }
        DataType::Timestamp(unit, zone) => {
            let decimals = match unit {
                TimeUnit::Second | TimeUnit::Millisecond => "%.3f",
                TimeUnit::Microsecond => "%.6f",
                TimeUnit::Nanosecond => "%.9f",
            };
            let pattern = format!("%Y-%m-%dT%H:%M:%S{decimals}");
            let offset: Option<Tz> = match zone {
                None => None,
                Some(z) => Some(zone_offset(z)?),
            };
            let nanos = arrow::compute::cast(
                array,
                &DataType::Timestamp(TimeUnit::Nanosecond, zone.clone()),
            )?;
            for t in nanos.as_primitive::<TimestampNanosecondType>().iter() {
                let Some(t) = t.and_then(arrow::temporal_conversions::timestamp_ns_to_datetime)
                else {
                    out.append_null();
                    continue;
                };
                let text = match offset {
                    None => t
                        .format(&format!("%Y-%m-%dT%H:%M:%S{decimals}"))
                        .to_string(),
                    Some(o) => {
                        let local = t.and_utc().with_timezone(&o);
                        let body = local.format(&pattern);
                        if local.offset().fix().local_minus_utc() == 0 {
                            format!("{body}Z")
                        } else {
                            format!("{body}{}", local.format("%:z"))
                        }
                    }
                };
                out.append_value(text);
            }
        }
        other => {
            return Err(DataFusionError::Execution(format!(
                "{NAME}: a DATE or TIMESTAMP expected, not {other}"
            )));
        }
    }
    Ok(Arc::new(out.finish()))
}

/// A zone: a fixed offset (`+01:00`, `UTC`) or a named one
/// (`Europe/Paris`); an unknown one is refused, naming it.
fn zone_offset(zone: &str) -> Result<Tz> {
    zone.parse::<Tz>().map_err(|_| {
        DataFusionError::Execution(format!("{NAME}: the time zone {zone} is not known"))
    })
}

impl ScalarUDFImpl for ToIso8601 {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) | DataType::Null => {
                Ok(DataType::Utf8)
            }
            other => Err(DataFusionError::Plan(format!(
                "{NAME}: a DATE or TIMESTAMP expected, not {other}"
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match &args.args[0] {
            ColumnarValue::Array(a) => Ok(ColumnarValue::Array(texts(a)?)),
            ColumnarValue::Scalar(s) => {
                if s.data_type() == DataType::Null {
                    return Ok(ColumnarValue::Scalar(
                        datafusion::scalar::ScalarValue::Utf8(None),
                    ));
                }
                let text = texts(&s.to_array()?)?;
                Ok(ColumnarValue::Scalar(
                    datafusion::scalar::ScalarValue::try_from_array(&text, 0)?,
                ))
            }
        }
    }
}
