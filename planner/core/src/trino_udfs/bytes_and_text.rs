//! Trino's `xxhash64(b)`, `sha1(b)` and `crc32(b)` of VARBINARY (the hash
//! as 8 bytes, big-endian, as Trino gives it; SHA-1's 20 bytes; the
//! checksum as BIGINT),
//! `split_to_map(s, entry_delimiter, key_value_delimiter)` (a map of text,
//! refusing a repeated key or an entry without exactly one key-value
//! delimiter, as Trino does), `split_to_multimap` (the same, each key's
//! values in an array, in the order met) and `human_readable_seconds(x)`
//! (`1 hour, 2 minutes, 42 seconds`, in weeks, days, hours, minutes and
//! seconds, rounded to the second) and `format_number(x)` (`123K`, `1.23M`:
//! three significant digits and a unit, as Trino writes it). NULL in, NULL
//! out.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayBuilder, ArrayRef, AsArray, BinaryBuilder, Int64Builder, ListBuilder, MapBuilder,
    StringBuilder,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Fields, Float64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{Rows, refused};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    XxHash64,
    Sha1,
    Crc32,
    SplitToMap,
    SplitToMultimap,
    HumanReadableSeconds,
    FormatNumber,
}

pub(super) fn functions() -> Vec<ScalarUDF> {
    [
        (Kind::XxHash64, 1),
        (Kind::Sha1, 1),
        (Kind::Crc32, 1),
        (Kind::SplitToMap, 3),
        (Kind::SplitToMultimap, 3),
        (Kind::HumanReadableSeconds, 1),
        (Kind::FormatNumber, 1),
    ]
    .into_iter()
    .map(|(kind, n)| {
        ScalarUDF::new_from_impl(Function {
            kind,
            signature: Signature::any(n, Volatility::Immutable),
        })
    })
    .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Function {
    kind: Kind,
    signature: Signature,
}

fn text_map() -> DataType {
    let entries = Fields::from(vec![
        Field::new("keys", DataType::Utf8, false),
        Field::new("values", DataType::Utf8, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

/// `map(varchar, array(varchar))`, as the multimap functions build it.
fn text_multimap() -> DataType {
    let entries = Fields::from(vec![
        Field::new("keys", DataType::Utf8, false),
        Field::new(
            "values",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            true,
        ),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

impl ScalarUDFImpl for Function {
    fn name(&self) -> &str {
        match self.kind {
            Kind::XxHash64 => "xxhash64",
            Kind::Sha1 => "sha1",
            Kind::Crc32 => "crc32",
            Kind::SplitToMap => "split_to_map",
            Kind::SplitToMultimap => "split_to_multimap",
            Kind::HumanReadableSeconds => "human_readable_seconds",
            Kind::FormatNumber => "format_number",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::XxHash64 | Kind::Sha1 => DataType::Binary,
            Kind::Crc32 => DataType::Int64,
            Kind::SplitToMap => text_map(),
            Kind::SplitToMultimap => text_multimap(),
            Kind::HumanReadableSeconds | Kind::FormatNumber => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = Rows::of(&args);
        let rows = call.count;
        let arg = |i: usize, to: &DataType| -> Result<ArrayRef> {
            let array: &ColumnarValue = &args.args[i];
            let array = array.to_array(rows)?;
            cast(&array, to).map_err(|e| {
                refused(
                    self.name(),
                    format!("an argument of type {} is not {to}: {e}", array.data_type()),
                )
            })
        };
        let out: ArrayRef = match self.kind {
            Kind::XxHash64 | Kind::Sha1 | Kind::Crc32 => {
                let bytes = arg(0, &DataType::Binary)?;
                let bytes = bytes.as_binary::<i32>();
                if self.kind == Kind::Sha1 {
                    use sha1::Digest;
                    let mut b = BinaryBuilder::with_capacity(rows, rows * 20);
                    for v in bytes.iter() {
                        b.append_option(v.map(sha1::Sha1::digest));
                    }
                    Arc::new(b.finish())
                } else if self.kind == Kind::XxHash64 {
                    let mut b = BinaryBuilder::with_capacity(rows, rows * 8);
                    for v in bytes.iter() {
                        b.append_option(
                            v.map(|v| twox_hash::XxHash64::oneshot(0, v).to_be_bytes()),
                        );
                    }
                    Arc::new(b.finish())
                } else {
                    let mut b = Int64Builder::with_capacity(rows);
                    for v in bytes.iter() {
                        b.append_option(v.map(|v| i64::from(crc32fast::hash(v))));
                    }
                    Arc::new(b.finish())
                }
            }
            Kind::HumanReadableSeconds | Kind::FormatNumber => {
                let numbers = arg(0, &DataType::Float64)?;
                let mut b = StringBuilder::with_capacity(rows, rows * 24);
                for v in numbers.as_primitive::<Float64Type>().iter() {
                    b.append_option(match self.kind {
                        Kind::FormatNumber => v.map(|v| format_number(v as i64)),
                        _ => v.map(human_readable_seconds).transpose()?,
                    });
                }
                Arc::new(b.finish())
            }
            Kind::SplitToMap | Kind::SplitToMultimap => {
                let [s, entry, kv] = [0, 1, 2].map(|i| arg(i, &DataType::Utf8));
                let (s, entry, kv) = (s?, entry?, kv?);
                let (s, entry, kv) = (
                    s.as_string::<i32>(),
                    entry.as_string::<i32>(),
                    kv.as_string::<i32>(),
                );
                // A row's three texts; `None` where one is NULL.
                let texts = |row: usize| {
                    (!s.is_null(row) && !entry.is_null(row) && !kv.is_null(row))
                        .then(|| (s.value(row), entry.value(row), kv.value(row)))
                };
                if self.kind == Kind::SplitToMap {
                    let mut b = map_builder(StringBuilder::new());
                    for row in 0..rows {
                        match texts(row) {
                            Some((s, e, kv)) => split_to_map(s, e, kv, &mut b)?,
                            None => b.append(false)?,
                        }
                    }
                    Arc::new(b.finish())
                } else {
                    let mut b = map_builder(ListBuilder::new(StringBuilder::new()));
                    for row in 0..rows {
                        match texts(row) {
                            Some((s, e, kv)) => split_to_multimap(s, e, kv, &mut b)?,
                            None => b.append(false)?,
                        }
                    }
                    Arc::new(b.finish())
                }
            }
        };
        call.answer(out)
    }
}

/// A builder of maps of text keys, its fields named as the map types of
/// these functions name them.
fn map_builder<V: ArrayBuilder>(values: V) -> MapBuilder<StringBuilder, V> {
    MapBuilder::new(
        Some(arrow::array::MapFieldNames {
            entry: "entries".into(),
            key: "keys".into(),
            value: "values".into(),
        }),
        StringBuilder::new(),
        values,
    )
}

/// One row of `split_to_multimap`: each key once, in the order first met,
/// with its values in the order met.
fn split_to_multimap(
    s: &str,
    entry: &str,
    kv: &str,
    b: &mut MapBuilder<StringBuilder, ListBuilder<StringBuilder>>,
) -> Result<()> {
    let mut keys: Vec<&str> = Vec::new();
    let mut values: Vec<Vec<&str>> = Vec::new();
    for (k, v) in entries("split_to_multimap", s, entry, kv)? {
        match keys.iter().position(|x| *x == k) {
            Some(i) => values[i].push(v),
            None => {
                keys.push(k);
                values.push(vec![v]);
            }
        }
    }
    for (k, vs) in keys.into_iter().zip(values) {
        b.keys().append_value(k);
        for v in vs {
            b.values().values().append_value(v);
        }
        b.values().append(true);
    }
    b.append(true).map_err(DataFusionError::from)
}

/// One row of `split_to_map`.
fn split_to_map(
    s: &str,
    entry: &str,
    kv: &str,
    b: &mut MapBuilder<StringBuilder, StringBuilder>,
) -> Result<()> {
    const NAME: &str = "split_to_map";
    let mut seen = HashSet::new();
    for (k, v) in entries(NAME, s, entry, kv)? {
        if !seen.insert(k) {
            return Err(refused(
                NAME,
                format!("duplicate keys ({k}) are not allowed"),
            ));
        }
        b.keys().append_value(k);
        b.values().append_value(v);
    }
    b.append(true).map_err(DataFusionError::from)
}

/// The key-value pairs of `s`, its entries split by `entry` and each by
/// `kv` (exactly once), for the function `name`.
fn entries<'a>(name: &str, s: &'a str, entry: &str, kv: &str) -> Result<Vec<(&'a str, &'a str)>> {
    if entry.is_empty() || kv.is_empty() {
        return Err(refused(name, "the delimiters must not be empty"));
    }
    if entry == kv {
        return Err(refused(
            name,
            "the entry and key-value delimiters must differ",
        ));
    }
    // A trailing entry delimiter ends the last entry; it adds none.
    let s = s.strip_suffix(entry).unwrap_or(s);
    if s.is_empty() {
        return Ok(Vec::new());
    }
    s.split(entry)
        .map(|e| {
            let mut parts = e.split(kv);
            match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(v), None) => Ok((k, v)),
                _ => Err(refused(
                    name,
                    format!(
                        "the key-value delimiter must appear exactly once in each entry; bad entry: '{e}'"
                    ),
                )),
            }
        })
        .collect()
}

/// Trino's `human_readable_seconds`, of a finite number of seconds.
fn human_readable_seconds(seconds: f64) -> Result<String> {
    if !seconds.is_finite() {
        return Err(refused(
            "human_readable_seconds",
            format!("{seconds} is not a number of seconds"),
        ));
    }
    let mut rest = seconds.abs().round() as u64;
    let mut parts = Vec::new();
    for (unit, size) in [
        ("week", 604_800),
        ("day", 86_400),
        ("hour", 3_600),
        ("minute", 60),
        ("second", 1),
    ] {
        let n = rest / size;
        rest %= size;
        if n > 0 {
            parts.push(format!("{n} {unit}{}", if n == 1 { "" } else { "s" }));
        }
    }
    if parts.is_empty() {
        return Ok("0 seconds".into());
    }
    let sign = if seconds < 0.0 { "-" } else { "" };
    Ok(format!("{sign}{}", parts.join(", ")))
}

/// Trino's `format_number` of a whole number (a DOUBLE is truncated first):
/// thousands, millions, billions, trillions, quadrillions as K, M, B, T, Q,
/// with up to two decimals below 10, one below 100, none above (HALF_UP).
fn format_number(value: i64) -> String {
    let mut x = value as f64;
    let mut unit = "";
    for u in ["K", "M", "B", "T", "Q"] {
        if x.abs() < 1000.0 {
            break;
        }
        x /= 1000.0;
        unit = u;
    }
    let decimals = if x < 10.0 {
        2
    } else if x < 100.0 {
        1
    } else {
        0
    };
    let scale = 10f64.powi(decimals);
    let rounded = (x * scale).round() / scale;
    let text = format!("{rounded:.*}", decimals as usize);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text}{unit}")
}
