//! Trino's `timezone_hour(t)` and `timezone_minute(t)`: the hours and
//! minutes of a timestamp with time zone's offset from UTC at that instant
//! (`Asia/Kolkata` +5 and 30; `America/New_York` -4 in summer, -5 in
//! winter). A timestamp without a zone is UTC, the session's zone: 0.

use std::sync::Arc;

use arrow::array::timezone::Tz;
use arrow::array::{Array, AsArray, Int64Array};
use arrow::datatypes::{DataType, TimeUnit, TimestampNanosecondType};
use chrono::{Offset, TimeZone};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::Rows;

pub(super) fn functions() -> Vec<ScalarUDF> {
    [("timezone_hour", true), ("timezone_minute", false)]
        .into_iter()
        .map(|(name, hours)| {
            ScalarUDF::new_from_impl(ZoneOffset {
                name,
                hours,
                signature: Signature::any(1, Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ZoneOffset {
    name: &'static str,
    hours: bool,
    signature: Signature,
}

impl ScalarUDFImpl for ZoneOffset {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::Timestamp(_, _) | DataType::Null => Ok(DataType::Int64),
            other => Err(DataFusionError::Plan(format!(
                "{}: a timestamp with time zone expected, not {other}",
                self.name
            ))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let array = args.args[0].to_array(call.count)?;
        let zone = match array.data_type() {
            DataType::Timestamp(_, Some(tz)) => Some(tz.parse::<Tz>().map_err(|e| {
                DataFusionError::Execution(format!("{}: time zone {tz}: {e}", self.name))
            })?),
            _ => None,
        };
        let nanos = arrow::compute::cast(&array, &DataType::Timestamp(TimeUnit::Nanosecond, None))?;
        let nanos = nanos.as_primitive::<TimestampNanosecondType>();
        let out: Int64Array = (0..nanos.len())
            .map(|i| {
                nanos.is_valid(i).then(|| {
                    let seconds = match &zone {
                        Some(tz) => {
                            let utc =
                                chrono::DateTime::from_timestamp_nanos(nanos.value(i)).naive_utc();
                            i64::from(tz.offset_from_utc_datetime(&utc).fix().local_minus_utc())
                        }
                        None => 0,
                    };
                    if self.hours {
                        seconds / 3600
                    } else {
                        seconds % 3600 / 60
                    }
                })
            })
            .collect();
        call.answer(Arc::new(out))
    }
}
