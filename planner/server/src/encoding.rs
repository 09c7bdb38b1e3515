//! Arrow values as Trino's JSON value encodings: the `data` rows of a page.
//!
//! | Trino type | JSON |
//! |---|---|
//! | `tinyint` … `bigint` | number |
//! | `real`, `double` | number; `"NaN"`, `"Infinity"`, `"-Infinity"` as strings |
//! | `decimal(p,s)` | string, `"123.45"`, exactly `s` decimals |
//! | `varchar` | string |
//! | `boolean` | `true` / `false` |
//! | `date` | `"YYYY-MM-DD"` |
//! | `time(p)` | `"HH:MM:SS.fff"` (p digits) |
//! | `timestamp(p)` | `"YYYY-MM-DD HH:MM:SS.fff"` (p digits) |
//! | `timestamp(p) with time zone` | local time in the zone, then the zone: `"… UTC"`, `"… +08:00"` |
//! | `varbinary` | base64 string |
//! | `array(t)` | JSON array of `t`'s encoding |
//! | `row(...)` | JSON array of the fields' encodings |
//! | `varchar` standing in for other Arrow types | Arrow's display text |
//!
//! NULL is `null` everywhere. Conversion is column by column, then rows are
//! assembled; the types come from [`types`](crate::types), which follows the
//! same table.

use arrow::array::cast::AsArray;
use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Date32Type, Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, TimeUnit, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow::error::ArrowError;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use base64::Engine as _;
use serde_json::{Number, Value};

use crate::types::precision;

/// The rows of `batch` as JSON arrays.
pub fn encode_rows(batch: &RecordBatch) -> Result<Vec<Value>, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .map(|c| column_values(c.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let mut iters: Vec<_> = columns.into_iter().map(Vec::into_iter).collect();
    let rows = (0..batch.num_rows())
        .map(|_| {
            Value::Array(
                iters
                    .iter_mut()
                    .map(|it| it.next().unwrap_or(Value::Null))
                    .collect(),
            )
        })
        .collect();
    Ok(rows)
}

fn mismatch(array: &dyn Array) -> ArrowError {
    ArrowError::InvalidArgumentError(format!(
        "array does not match its type {}",
        array.data_type()
    ))
}

macro_rules! map_values {
    ($array:expr, $opt:expr, $f:expr) => {{
        let typed = $opt.ok_or_else(|| mismatch($array))?;
        Ok((0..typed.len())
            .map(|i| {
                if typed.is_null(i) {
                    Value::Null
                } else {
                    ($f)(typed.value(i))
                }
            })
            .collect())
    }};
}

/// Milliseconds as Trino writes an `interval day to second`.
fn day_to_second(millis: i64) -> String {
    let sign = if millis < 0 { "-" } else { "" };
    let m = millis.unsigned_abs();
    let (days, rest) = (m / 86_400_000, m % 86_400_000);
    let (h, rest) = (rest / 3_600_000, rest % 3_600_000);
    let (min, rest) = (rest / 60_000, rest % 60_000);
    format!(
        "{sign}{days} {h:02}:{min:02}:{:02}.{:03}",
        rest / 1000,
        rest % 1000
    )
}

/// The values of one column, in the encoding of its Trino type.
pub fn column_values(array: &dyn Array) -> Result<Vec<Value>, ArrowError> {
    match array.data_type() {
        DataType::Null => Ok(vec![Value::Null; array.len()]),
        DataType::Boolean => map_values!(array, array.as_boolean_opt(), Value::Bool),
        DataType::Int8 => map_values!(array, array.as_primitive_opt::<Int8Type>(), Value::from),
        DataType::Int16 => map_values!(array, array.as_primitive_opt::<Int16Type>(), Value::from),
        DataType::Int32 => map_values!(array, array.as_primitive_opt::<Int32Type>(), Value::from),
        DataType::Int64 => map_values!(array, array.as_primitive_opt::<Int64Type>(), Value::from),
        DataType::UInt8 => map_values!(array, array.as_primitive_opt::<UInt8Type>(), Value::from),
        DataType::UInt16 => map_values!(array, array.as_primitive_opt::<UInt16Type>(), Value::from),
        DataType::UInt32 => map_values!(array, array.as_primitive_opt::<UInt32Type>(), Value::from),
        // decimal(20,0): a string, as decimals are.
        DataType::UInt64 => map_values!(array, array.as_primitive_opt::<UInt64Type>(), |v: u64| {
            Value::String(v.to_string())
        }),
        DataType::Float16 => {
            map_values!(array, array.as_primitive_opt::<Float16Type>(), |v: F16| {
                real_value(v.to_f32())
            })
        }
        DataType::Float32 => {
            map_values!(array, array.as_primitive_opt::<Float32Type>(), real_value)
        }
        DataType::Float64 => {
            map_values!(array, array.as_primitive_opt::<Float64Type>(), double_value)
        }
        DataType::Utf8 => map_values!(
            array,
            array.as_string_opt::<i32>(),
            |s: &str| Value::String(s.to_string())
        ),
        DataType::LargeUtf8 => {
            map_values!(
                array,
                array.as_string_opt::<i64>(),
                |s: &str| Value::String(s.to_string())
            )
        }
        DataType::Utf8View => {
            map_values!(array, array.as_string_view_opt(), |s: &str| Value::String(
                s.to_string()
            ))
        }
        DataType::Binary => map_values!(array, array.as_binary_opt::<i32>(), base64_value),
        DataType::LargeBinary => map_values!(array, array.as_binary_opt::<i64>(), base64_value),
        DataType::BinaryView => map_values!(array, array.as_binary_view_opt(), base64_value),
        DataType::FixedSizeBinary(_) => {
            map_values!(array, array.as_fixed_size_binary_opt(), base64_value)
        }
        DataType::Date32 => formatted(
            array,
            FormatOptions::new().with_date_format(Some("%Y-%m-%d")),
        ),
        DataType::Date64 => {
            let days = cast(array, &DataType::Date32)?;
            let days = days
                .as_primitive_opt::<Date32Type>()
                .ok_or_else(|| mismatch(array))?;
            formatted(
                days,
                FormatOptions::new().with_date_format(Some("%Y-%m-%d")),
            )
        }
        DataType::Time32(unit) | DataType::Time64(unit) => {
            let format = time_format(precision(unit));
            formatted(array, FormatOptions::new().with_time_format(Some(&format)))
        }
        DataType::Timestamp(unit, None) => {
            let format = timestamp_format(precision(unit));
            formatted(
                array,
                FormatOptions::new().with_timestamp_format(Some(&format)),
            )
        }
        DataType::Timestamp(unit, Some(tz)) => {
            let format = format!("{} {}", timestamp_format(precision(unit)), zone_label(tz));
            let options = FormatOptions::new().with_timestamp_tz_format(Some(&format));
            match ArrayFormatter::try_new(array, &options) {
                Ok(_) => formatted(array, options),
                // A zone this build cannot resolve: the instant in UTC.
                Err(_) => {
                    let utc = cast(array, &DataType::Timestamp(*unit, Some("+00:00".into())))?;
                    let format = format!("{} UTC", timestamp_format(precision(unit)));
                    formatted(
                        &utc,
                        FormatOptions::new().with_timestamp_tz_format(Some(&format)),
                    )
                }
            }
        }
        // Trino's `interval day to second`: `[-]D HH:MM:SS.mmm`.
        DataType::Duration(unit) => {
            let nanos = cast(array, &DataType::Int64)?;
            let per_milli = match unit {
                TimeUnit::Second => -1,
                TimeUnit::Millisecond => 1,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1_000_000,
            };
            map_values!(array, nanos.as_primitive_opt::<Int64Type>(), |v: i64| {
                Value::String(day_to_second(match per_milli {
                    -1 => v.saturating_mul(1_000),
                    d => v / d,
                }))
            })
        }
        DataType::List(_) => list_values(
            array,
            array.as_list_opt::<i32>().map(|l| list_rows(l.iter())),
        ),
        DataType::LargeList(_) => list_values(
            array,
            array.as_list_opt::<i64>().map(|l| list_rows(l.iter())),
        ),
        DataType::FixedSizeList(_, _) => list_values(
            array,
            array.as_fixed_size_list_opt().map(|l| list_rows(l.iter())),
        ),
        DataType::ListView(f) | DataType::LargeListView(f) => {
            let list = cast(array, &DataType::LargeList(f.clone()))?;
            column_values(list.as_ref())
        }
        DataType::Struct(_) => {
            let s = array.as_struct_opt().ok_or_else(|| mismatch(array))?;
            let fields = s
                .columns()
                .iter()
                .map(|c| column_values(c.as_ref()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((0..s.len())
                .map(|i| {
                    if s.is_null(i) {
                        Value::Null
                    } else {
                        Value::Array(
                            fields
                                .iter()
                                .map(|f| f.get(i).cloned().unwrap_or(Value::Null))
                                .collect(),
                        )
                    }
                })
                .collect())
        }
        // A JSON object, as Trino writes a map: keys as text (the client
        // reads them back by the key type).
        DataType::Map(_, _) => {
            let map = array.as_map_opt().ok_or_else(|| mismatch(array))?;
            (0..map.len())
                .map(|i| {
                    if map.is_null(i) {
                        return Ok(Value::Null);
                    }
                    let entries = map.value(i);
                    let keys = column_values(entries.column(0).as_ref())?;
                    let values = column_values(entries.column(1).as_ref())?;
                    Ok(Value::Object(
                        keys.into_iter()
                            .zip(values)
                            .map(|(k, v)| match k {
                                Value::String(k) => (k, v),
                                other => (other.to_string(), v),
                            })
                            .collect(),
                    ))
                })
                .collect()
        }
        DataType::Dictionary(_, value) => {
            let plain = cast(array, value)?;
            column_values(plain.as_ref())
        }
        // Decimals (exact text) and everything shown as varchar.
        _ => formatted(array, FormatOptions::new()),
    }
}

type F16 = <Float16Type as arrow::datatypes::ArrowPrimitiveType>::Native;

fn list_rows(rows: impl Iterator<Item = Option<ArrayRef>>) -> Vec<Option<ArrayRef>> {
    rows.collect()
}

fn list_values(
    array: &dyn Array,
    rows: Option<Vec<Option<ArrayRef>>>,
) -> Result<Vec<Value>, ArrowError> {
    rows.ok_or_else(|| mismatch(array))?
        .into_iter()
        .map(|row| match row {
            None => Ok(Value::Null),
            Some(values) => Ok(Value::Array(column_values(values.as_ref())?)),
        })
        .collect()
}

fn formatted(array: &dyn Array, options: FormatOptions<'_>) -> Result<Vec<Value>, ArrowError> {
    let formatter = ArrayFormatter::try_new(array, &options)?;
    (0..array.len())
        .map(|i| {
            if array.is_null(i) {
                Ok(Value::Null)
            } else {
                formatter.value(i).try_to_string().map(Value::String)
            }
        })
        .collect()
}

fn timestamp_format(precision: i64) -> String {
    format!("%Y-%m-%d {}", time_format(precision))
}

fn time_format(precision: i64) -> String {
    match precision {
        0 => "%H:%M:%S".to_string(),
        p => format!("%H:%M:%S%.{p}f"),
    }
}

/// The zone as Trino writes it after a `timestamp with time zone`.
fn zone_label(tz: &str) -> String {
    match tz {
        "UTC" | "utc" | "Z" | "+00:00" | "+0000" | "+00" | "-00:00" => "UTC".to_string(),
        other => other.replace('%', "%%"),
    }
}

fn double_value(v: f64) -> Value {
    match Number::from_f64(v) {
        Some(n) => Value::Number(n),
        None if v.is_nan() => Value::String("NaN".into()),
        None if v > 0.0 => Value::String("Infinity".into()),
        None => Value::String("-Infinity".into()),
    }
}

/// A `real` as the shortest decimal that reads back as the same f32
/// (`0.1`, not `0.10000000149011612`).
fn real_value(v: f32) -> Value {
    if !v.is_finite() {
        return double_value(f64::from(v));
    }
    double_value(v.to_string().parse::<f64>().unwrap_or(f64::from(v)))
}

fn base64_value(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
        Int32Array, Int64Array, ListArray, NullArray, StringArray, StringViewArray, StructArray,
        TimestampMicrosecondArray, TimestampMillisecondArray, UInt64Array,
    };
    use arrow::datatypes::{Field, Int32Type as I32};
    use serde_json::json;

    use super::*;

    fn values(a: ArrayRef) -> Value {
        Value::Array(column_values(a.as_ref()).unwrap())
    }

    #[test]
    fn scalars() {
        assert_eq!(
            values(Arc::new(Int64Array::from(vec![Some(1), None, Some(-7)]))),
            json!([1, null, -7])
        );
        assert_eq!(
            values(Arc::new(Int32Array::from(vec![2_147_483_647]))),
            json!([2147483647])
        );
        assert_eq!(
            values(Arc::new(UInt64Array::from(vec![u64::MAX]))),
            json!(["18446744073709551615"])
        );
        assert_eq!(
            values(Arc::new(Float64Array::from(vec![
                1.5,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY
            ]))),
            json!([1.5, "NaN", "Infinity", "-Infinity"])
        );
        assert_eq!(
            values(Arc::new(Float32Array::from(vec![0.1f32]))),
            json!([0.1])
        );
        assert_eq!(
            values(Arc::new(BooleanArray::from(vec![Some(true), None]))),
            json!([true, null])
        );
        assert_eq!(
            values(Arc::new(StringArray::from(vec![Some("a\"b"), None]))),
            json!(["a\"b", null])
        );
        assert_eq!(
            values(Arc::new(StringViewArray::from(vec!["view"]))),
            json!(["view"])
        );
        assert_eq!(values(Arc::new(NullArray::new(2))), json!([null, null]));
        assert_eq!(
            values(Arc::new(BinaryArray::from(vec![&b"hi"[..]]))),
            json!(["aGk="])
        );
    }

    #[test]
    fn durations_are_intervals_day_to_second() {
        let d = arrow::array::DurationNanosecondArray::from(vec![
            Some(43_200_000_000_000),
            Some(-(86_400_000_000_000 + 3_723_004_000_000)),
            None,
        ]);
        assert_eq!(
            values(Arc::new(d)),
            json!(["0 12:00:00.000", "-1 01:02:03.004", null])
        );
        let s = arrow::array::DurationSecondArray::from(vec![172_800]);
        assert_eq!(values(Arc::new(s)), json!(["2 00:00:00.000"]));
    }

    #[test]
    fn decimals_dates_timestamps() {
        let d = Decimal128Array::from(vec![Some(12345), Some(-50), None, Some(7)])
            .with_precision_and_scale(15, 2)
            .unwrap();
        assert_eq!(
            values(Arc::new(d)),
            json!(["123.45", "-0.50", null, "0.07"])
        );
        let d0 = Decimal128Array::from(vec![42])
            .with_precision_and_scale(10, 0)
            .unwrap();
        assert_eq!(values(Arc::new(d0)), json!(["42"]));
        assert_eq!(
            values(Arc::new(Date32Array::from(vec![0, 9861]))),
            json!(["1970-01-01", "1996-12-31"])
        );
        let ts = TimestampMillisecondArray::from(vec![1_500_000_000_123]);
        assert_eq!(values(Arc::new(ts)), json!(["2017-07-14 02:40:00.123"]));
        let ts = TimestampMicrosecondArray::from(vec![1_500_000_000_123_456]).with_timezone("UTC");
        assert_eq!(
            values(Arc::new(ts)),
            json!(["2017-07-14 02:40:00.123456 UTC"])
        );
        let ts = TimestampMillisecondArray::from(vec![0]).with_timezone("+08:00");
        assert_eq!(
            values(Arc::new(ts)),
            json!(["1970-01-01 08:00:00.000 +08:00"])
        );
    }

    #[test]
    fn nested() {
        let list = ListArray::from_iter_primitive::<I32, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
            Some(vec![]),
        ]);
        assert_eq!(values(Arc::new(list)), json!([[1, null], null, []]));
        let s = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef,
            ),
        ]);
        assert_eq!(values(Arc::new(s)), json!([[1, "x"], [2, "y"]]));
        let mut map = arrow::array::MapBuilder::new(
            None,
            arrow::array::StringBuilder::new(),
            arrow::array::Int64Builder::new(),
        );
        map.keys().append_value("k");
        map.values().append_value(1);
        map.keys().append_value("j");
        map.values().append_null();
        map.append(true).unwrap();
        map.append(false).unwrap();
        map.append(true).unwrap();
        assert_eq!(
            values(Arc::new(map.finish())),
            json!([{"k": 1, "j": null}, null, {}])
        );
        let mut by_int = arrow::array::MapBuilder::new(
            None,
            arrow::array::Int64Builder::new(),
            arrow::array::StringBuilder::new(),
        );
        by_int.keys().append_value(7);
        by_int.values().append_value("seven");
        by_int.append(true).unwrap();
        assert_eq!(values(Arc::new(by_int.finish())), json!([{"7": "seven"}]));
    }

    #[test]
    fn rows() {
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec![Some("x"), None])),
            ],
        )
        .unwrap();
        assert_eq!(
            Value::Array(encode_rows(&batch).unwrap()),
            json!([[1, "x"], [2, null]])
        );
    }
}
