//! Arrow types as Trino types: the `type` string and the structured
//! `typeSignature` of each result column.
//!
//! | Arrow | Trino |
//! |---|---|
//! | Int8 / Int16 / Int32 / Int64 | `tinyint` / `smallint` / `integer` / `bigint` |
//! | UInt8 / UInt16 / UInt32 | the next larger signed integer |
//! | UInt64 | `decimal(20,0)` (no signed integer holds it) |
//! | Float16, Float32 / Float64 | `real` / `double` |
//! | Decimal32/64/128/256(p,s), p ≤ 38 | `decimal(p,s)` |
//! | Utf8 / LargeUtf8 / Utf8View | `varchar` (signature `varchar(2147483647)`, as Trino writes unbounded varchar) |
//! | Boolean | `boolean` |
//! | Date32 / Date64 | `date` |
//! | Time32 / Time64 | `time(p)` |
//! | Timestamp(unit, tz) | `timestamp(p)`, `timestamp(p) with time zone` when tz is set; p = 0/3/6/9 |
//! | Binary / LargeBinary / BinaryView / FixedSizeBinary | `varbinary` |
//! | List / LargeList / FixedSizeList / ListView | `array(element)` |
//! | Struct | `row(name type, ...)` |
//! | Map(key, value) | `map(key, value)` |
//! | Dictionary(k, v) | the type of `v` |
//! | Null | `unknown` |
//! | Duration (a timestamp less a timestamp) | `interval day to second`, `[-]D HH:MM:SS.mmm` |
//! | anything else (intervals, unions, Decimal256 beyond 38 digits) | `varchar`, values rendered as text |
//!
//! The API's `encoding` writes values by these same rules, and the
//! catalog's `information_schema.columns` names column types by them.

use arrow::datatypes::{DataType, TimeUnit};
use serde_json::{Value, json};

/// Trino's length of an unbounded `varchar`.
pub const UNBOUNDED_VARCHAR: i64 = 2_147_483_647;

/// A Trino type: its raw name and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrinoType {
    /// `bigint`, `decimal`, `timestamp with time zone`, `array`, `row`, …
    pub raw: &'static str,
    pub args: Vec<TypeArg>,
}

/// A parameter of a Trino type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeArg {
    /// A number: length, precision, scale.
    Long(i64),
    /// An element type (`array`), a key or value type (`map`).
    Type(TrinoType),
    /// A named field (`row`).
    Named(String, TrinoType),
}

impl TrinoType {
    fn simple(raw: &'static str) -> Self {
        Self {
            raw,
            args: Vec::new(),
        }
    }

    fn with_longs(raw: &'static str, longs: &[i64]) -> Self {
        Self {
            raw,
            args: longs.iter().map(|&l| TypeArg::Long(l)).collect(),
        }
    }

    pub fn varchar() -> Self {
        Self::with_longs("varchar", &[UNBOUNDED_VARCHAR])
    }

    /// The type name as Trino prints it: `varchar`, `decimal(15,2)`,
    /// `timestamp(3) with time zone`, `array(bigint)`, `row(a bigint, b varchar)`.
    pub fn display_name(&self) -> String {
        match (self.raw, self.args.as_slice()) {
            ("varchar", [TypeArg::Long(UNBOUNDED_VARCHAR)]) => "varchar".to_string(),
            ("timestamp with time zone", [TypeArg::Long(p)]) => {
                format!("timestamp({p}) with time zone")
            }
            ("time with time zone", [TypeArg::Long(p)]) => format!("time({p}) with time zone"),
            (raw, []) => raw.to_string(),
            (raw, args) => {
                let inner: Vec<String> = args
                    .iter()
                    .map(|a| match a {
                        TypeArg::Long(l) => l.to_string(),
                        TypeArg::Type(t) => t.display_name(),
                        TypeArg::Named(name, t) => {
                            format!("{} {}", quote_field(name), t.display_name())
                        }
                    })
                    .collect();
                let sep = if raw == "decimal" { "," } else { ", " };
                format!("{raw}({})", inner.join(sep))
            }
        }
    }

    /// The `typeSignature` JSON: `{rawType, arguments: [{kind, value}]}`.
    pub fn signature(&self) -> Value {
        let arguments: Vec<Value> = self
            .args
            .iter()
            .map(|a| match a {
                TypeArg::Long(l) => json!({"kind": "LONG", "value": l}),
                TypeArg::Type(t) => json!({"kind": "TYPE", "value": t.signature()}),
                TypeArg::Named(name, t) => json!({
                    "kind": "NAMED_TYPE",
                    "value": {"fieldName": {"name": name}, "typeSignature": t.signature()},
                }),
            })
            .collect();
        json!({"rawType": self.raw, "arguments": arguments})
    }
}

/// Trino quotes field names that are not plain identifiers.
fn quote_field(name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Fractional-second digits of a time unit.
pub fn precision(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// The Trino type of an Arrow type (see the module table).
pub fn trino_type(data_type: &DataType) -> TrinoType {
    match data_type {
        DataType::Null => TrinoType::simple("unknown"),
        DataType::Boolean => TrinoType::simple("boolean"),
        DataType::Int8 => TrinoType::simple("tinyint"),
        DataType::Int16 | DataType::UInt8 => TrinoType::simple("smallint"),
        DataType::Int32 | DataType::UInt16 => TrinoType::simple("integer"),
        DataType::Int64 | DataType::UInt32 => TrinoType::simple("bigint"),
        DataType::UInt64 => TrinoType::with_longs("decimal", &[20, 0]),
        DataType::Float16 | DataType::Float32 => TrinoType::simple("real"),
        DataType::Float64 => TrinoType::simple("double"),
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s) => {
            TrinoType::with_longs("decimal", &[i64::from(*p), i64::from(*s)])
        }
        DataType::Decimal256(p, s) if *p <= 38 => {
            TrinoType::with_longs("decimal", &[i64::from(*p), i64::from(*s)])
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => TrinoType::varchar(),
        DataType::Date32 | DataType::Date64 => TrinoType::simple("date"),
        DataType::Time32(unit) | DataType::Time64(unit) => {
            TrinoType::with_longs("time", &[precision(unit)])
        }
        DataType::Timestamp(unit, None) => TrinoType::with_longs("timestamp", &[precision(unit)]),
        DataType::Timestamp(unit, Some(_)) => {
            TrinoType::with_longs("timestamp with time zone", &[precision(unit)])
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => TrinoType::simple("varbinary"),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => TrinoType {
            raw: "array",
            args: vec![TypeArg::Type(trino_type(f.data_type()))],
        },
        DataType::Struct(fields) => TrinoType {
            raw: "row",
            args: fields
                .iter()
                .map(|f| TypeArg::Named(f.name().clone(), trino_type(f.data_type())))
                .collect(),
        },
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => TrinoType {
                raw: "map",
                args: vec![
                    TypeArg::Type(trino_type(kv[0].data_type())),
                    TypeArg::Type(trino_type(kv[1].data_type())),
                ],
            },
            _ => TrinoType::varchar(),
        },
        DataType::Dictionary(_, value) => trino_type(value),
        DataType::Duration(_) => TrinoType::simple("interval day to second"),
        _ => TrinoType::varchar(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{Field, Fields};

    use super::*;

    #[test]
    fn names() {
        let cases: Vec<(DataType, &str)> = vec![
            (DataType::Int8, "tinyint"),
            (DataType::UInt16, "integer"),
            (DataType::Int64, "bigint"),
            (DataType::UInt64, "decimal(20,0)"),
            (DataType::Float32, "real"),
            (DataType::Float64, "double"),
            (DataType::Decimal128(15, 2), "decimal(15,2)"),
            (DataType::Utf8View, "varchar"),
            (DataType::Boolean, "boolean"),
            (DataType::Date32, "date"),
            (
                DataType::Timestamp(TimeUnit::Millisecond, None),
                "timestamp(3)",
            ),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                "timestamp(6) with time zone",
            ),
            (DataType::Binary, "varbinary"),
            (DataType::new_list(DataType::Int32, true), "array(integer)"),
            (DataType::Null, "unknown"),
            (
                DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano),
                "varchar",
            ),
            (
                DataType::Duration(TimeUnit::Nanosecond),
                "interval day to second",
            ),
            (
                DataType::Struct(Fields::from(vec![
                    Field::new("a", DataType::Int64, true),
                    Field::new("b c", DataType::Utf8, true),
                ])),
                "row(a bigint, \"b c\" varchar)",
            ),
            (
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                "varchar",
            ),
            (
                DataType::Map(
                    Arc::new(Field::new(
                        "entries",
                        DataType::Struct(Fields::from(vec![
                            Field::new("keys", DataType::Utf8, false),
                            Field::new("values", DataType::Int64, true),
                        ])),
                        false,
                    )),
                    false,
                ),
                "map(varchar, bigint)",
            ),
        ];
        for (dt, name) in cases {
            assert_eq!(trino_type(&dt).display_name(), name, "{dt}");
        }
    }

    #[test]
    fn signatures() {
        assert_eq!(
            trino_type(&DataType::Decimal128(15, 2)).signature(),
            json!({"rawType": "decimal", "arguments": [{"kind": "LONG", "value": 15}, {"kind": "LONG", "value": 2}]})
        );
        assert_eq!(
            trino_type(&DataType::Utf8).signature(),
            json!({"rawType": "varchar", "arguments": [{"kind": "LONG", "value": 2147483647}]})
        );
        assert_eq!(
            trino_type(&DataType::Int64).signature(),
            json!({"rawType": "bigint", "arguments": []})
        );
        let list = DataType::List(Arc::new(Field::new("item", DataType::Float64, true)));
        assert_eq!(
            trino_type(&list).signature(),
            json!({"rawType": "array", "arguments": [{"kind": "TYPE", "value": {"rawType": "double", "arguments": []}}]})
        );
    }
}
