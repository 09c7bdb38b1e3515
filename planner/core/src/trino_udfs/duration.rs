//! Trino's `parse_duration(text)`: `'3.5d'`, `'42.8ms'`, `'1h'` as an
//! interval day to second (a DURATION of milliseconds, which the API sends
//! as Trino's `interval day to second`), rounded to the millisecond as
//! Trino rounds it. Units `ns`, `us`, `ms`, `s`, `m`, `h`, `d`.

use std::sync::Arc;

use arrow::array::{Array, AsArray, DurationMillisecondArray};
use arrow::datatypes::{DataType, TimeUnit};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{Rows, refused};

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(ParseDuration {
        signature: Signature::string(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseDuration {
    signature: Signature,
}

/// Milliseconds of Trino's duration text.
fn millis(text: &str) -> Result<i64> {
    let t = text.trim();
    let at = t
        .find(|c: char| c.is_ascii_alphabetic())
        .ok_or_else(|| refused("parse_duration", format!("duration is not valid: {text}")))?;
    let (number, unit) = (t[..at].trim(), t[at..].trim());
    let number: f64 = number
        .parse()
        .ok()
        .filter(|n: &f64| n.is_finite() && *n >= 0.0 && !number.starts_with('+'))
        .ok_or_else(|| refused("parse_duration", format!("duration is not valid: {text}")))?;
    let per_ms = match unit {
        "ns" => 1e-6,
        "us" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3_600e3,
        "d" => 86_400e3,
        _ => {
            return Err(refused(
                "parse_duration",
                format!("unknown time unit: {unit} (ns, us, ms, s, m, h or d)"),
            ));
        }
    };
    let ms = (number * per_ms).round();
    if ms > i64::MAX as f64 {
        return Err(refused(
            "parse_duration",
            format!("duration out of range: {text}"),
        ));
    }
    Ok(ms as i64)
}

impl ScalarUDFImpl for ParseDuration {
    fn name(&self) -> &str {
        "parse_duration"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Duration(TimeUnit::Millisecond))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let text = arrow::compute::cast(&args.args[0].to_array(call.count)?, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let out: DurationMillisecondArray = (0..text.len())
            .map(|i| text.is_valid(i).then(|| millis(text.value(i))).transpose())
            .collect::<Result<_>>()?;
        call.answer(Arc::new(out))
    }
}

#[cfg(test)]
mod tests {
    use super::millis;

    #[test]
    fn durations_as_trino_reads_them() {
        for (text, ms) in [
            ("42.8ms", 43),
            ("3.5d", 302_400_000),
            ("1h", 3_600_000),
            (" 90 s ", 90_000),
            ("1500us", 2),
            ("2m", 120_000),
            ("0ns", 0),
        ] {
            assert_eq!(millis(text).unwrap(), ms, "{text}");
        }
        for bad in ["", "5", "abc", "-1s", "1 week", "1.5.2s"] {
            assert!(millis(bad).is_err(), "{bad}");
        }
    }
}
