//! One schema for a table whose files disagree on a column's type in a way
//! no value is lost by: an integer written as `INT32` by one job and
//! `INT64` by the next, a decimal whose precision grew, a float widened,
//! timestamps written in milliseconds by one writer and microseconds by
//! another.
//!
//! DataFusion merges its files' schemas only when their types are equal, so
//! such a table did not register. This merge widens instead: the table's
//! type is the one every file's values fit, and the scan casts each file's
//! column to it as it reads. Columns some files lack are NULL in theirs.
//! Anything else (a string in one file, an integer in another) is still a
//! conflict, named with both files and types.

use std::collections::HashMap;

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

/// The type values of `a` and of `b` both fit without loss, if any.
pub fn widen(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a.clone());
    }
    // A dictionary-encoded column (pandas' categoricals, as pyarrow writes
    // them) holds its values' type.
    match (a, b) {
        (Dictionary(_, v), other) | (other, Dictionary(_, v)) => return widen(v, other),
        _ => {}
    }
    let signed = |t: &DataType| match t {
        Int8 => Some(8),
        Int16 => Some(16),
        Int32 => Some(32),
        Int64 => Some(64),
        _ => None,
    };
    let unsigned = |t: &DataType| match t {
        UInt8 => Some(8),
        UInt16 => Some(16),
        UInt32 => Some(32),
        UInt64 => Some(64),
        _ => None,
    };
    let int = |bits: u32| match bits {
        8 => Int8,
        16 => Int16,
        32 => Int32,
        _ => Int64,
    };
    let uint = |bits: u32| match bits {
        8 => UInt8,
        16 => UInt16,
        32 => UInt32,
        _ => UInt64,
    };
    let float = |t: &DataType| match t {
        Float16 => Some(16),
        Float32 => Some(32),
        Float64 => Some(64),
        _ => None,
    };
    let string = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let binary = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    match (a, b) {
        _ if signed(a).is_some() && signed(b).is_some() => Some(int(signed(a)?.max(signed(b)?))),
        _ if unsigned(a).is_some() && unsigned(b).is_some() => {
            Some(uint(unsigned(a)?.max(unsigned(b)?)))
        }
        // An unsigned integer fits a signed one of more bits.
        _ if unsigned(a).is_some() && signed(b).is_some() => {
            (signed(b)? > unsigned(a)?).then(|| b.clone())
        }
        _ if signed(a).is_some() && unsigned(b).is_some() => widen(b, a),
        _ if float(a).is_some() && float(b).is_some() => match float(a)?.max(float(b)?) {
            16 => Some(Float16),
            32 => Some(Float32),
            _ => Some(Float64),
        },
        (Decimal128(p1, s1), Decimal128(p2, s2)) => {
            let scale = (*s1).max(*s2);
            let digits = (i16::from(*p1) - i16::from(*s1)).max(i16::from(*p2) - i16::from(*s2));
            let precision = digits + i16::from(scale);
            (scale >= 0 && precision <= 38).then_some(Decimal128(precision as u8, scale))
        }
        // Timestamps of one zone (or none) in different units (Spark and
        // DuckDB write microseconds, pandas nanoseconds, others
        // milliseconds): the finest unit; a value it cannot hold (beyond
        // 2262 in nanoseconds) fails its query when read, not silently.
        (Timestamp(u1, z1), Timestamp(u2, z2)) if z1 == z2 => {
            let rank = |u: &TimeUnit| match u {
                TimeUnit::Second => 0,
                TimeUnit::Millisecond => 1,
                TimeUnit::Microsecond => 2,
                TimeUnit::Nanosecond => 3,
            };
            let unit = if rank(u1) >= rank(u2) { u1 } else { u2 };
            Some(Timestamp(*unit, z1.clone()))
        }
        _ if string(a) && string(b) => Some(if a == &LargeUtf8 || b == &LargeUtf8 {
            LargeUtf8
        } else {
            Utf8View
        }),
        _ if binary(a) && binary(b) => Some(if a == &LargeBinary || b == &LargeBinary {
            LargeBinary
        } else {
            BinaryView
        }),
        // A struct whose files hold different fields (one added later, a
        // field's type widened, fields in another order): every field of
        // either, by name, in the order first seen, each widened; a field
        // one side lacks is NULL in its rows. The scan casts each file's
        // struct to it by name.
        (Struct(fa), Struct(fb)) => {
            let mut fields: Vec<Field> = Vec::with_capacity(fa.len().max(fb.len()));
            for f in fa.iter() {
                fields.push(match fb.find(f.name()) {
                    Some((_, g)) => Field::new(
                        f.name(),
                        widen(f.data_type(), g.data_type())?,
                        f.is_nullable() || g.is_nullable(),
                    ),
                    None => f.as_ref().clone().with_nullable(true),
                });
            }
            for g in fb.iter().filter(|g| fa.find(g.name()).is_none()) {
                fields.push(g.as_ref().clone().with_nullable(true));
            }
            Some(Struct(fields.into()))
        }
        (List(fa), List(fb)) | (List(fa), LargeList(fb)) | (LargeList(fa), List(fb)) => {
            let element = widen(fa.data_type(), fb.data_type())?;
            let field = Field::new(fa.name(), element, fa.is_nullable() || fb.is_nullable());
            Some(match (a, b) {
                (List(_), List(_)) => List(field.into()),
                _ => LargeList(field.into()),
            })
        }
        (Map(ea, sorted), Map(eb, _)) => {
            let entries = widen(ea.data_type(), eb.data_type())?;
            Some(Map(Field::new(ea.name(), entries, false).into(), *sorted))
        }
        _ => None,
    }
}

/// The schema of a table of files with `schemas` (file name, its schema):
/// every column of any file, in the order first seen, of the type
/// [`widen`] finds for it; nullable where any file's is or lacks it.
/// Errors name the column, two files and their types.
pub fn merge(schemas: &[(String, Schema)]) -> Result<Schema, String> {
    let mut fields: Vec<Field> = Vec::new();
    let mut first: HashMap<String, (usize, String)> = HashMap::new();
    let mut seen_in: HashMap<String, usize> = HashMap::new();
    for (file, schema) in schemas {
        for field in schema.fields() {
            *seen_in.entry(field.name().clone()).or_default() += 1;
            match first.get(field.name()) {
                None => {
                    first.insert(field.name().clone(), (fields.len(), file.clone()));
                    fields.push(field.as_ref().clone().with_metadata(HashMap::new()));
                }
                Some((i, first_file)) => {
                    let have = &fields[*i];
                    let Some(t) = widen(have.data_type(), field.data_type()) else {
                        return Err(format!(
                            "column {} is {} in {first_file} but {} in {file}, and no type holds both",
                            field.name(),
                            have.data_type(),
                            field.data_type()
                        ));
                    };
                    let nullable = have.is_nullable() || field.is_nullable();
                    fields[*i] = Field::new(field.name(), t, nullable);
                }
            }
        }
    }
    for field in &mut fields {
        if seen_in.get(field.name()).copied().unwrap_or(0) < schemas.len() {
            *field = field.clone().with_nullable(true);
        }
    }
    Ok(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    #[test]
    fn structs_widen_field_by_field() {
        let s = |fields: Vec<Field>| Struct(fields.into());
        let a = s(vec![Field::new("a", Int32, false)]);
        let b = s(vec![
            Field::new("b", Utf8, false),
            Field::new("a", Int64, false),
        ]);
        assert_eq!(
            widen(&a, &b),
            Some(s(vec![
                Field::new("a", Int64, false),
                Field::new("b", Utf8, true),
            ]))
        );
        let list = |t: DataType| List(Field::new("element", t, true).into());
        assert_eq!(
            widen(&list(a.clone()), &list(b.clone())),
            Some(list(s(vec![
                Field::new("a", Int64, false),
                Field::new("b", Utf8, true),
            ])))
        );
        let clash = s(vec![Field::new("a", Utf8, false)]);
        assert_eq!(widen(&a, &clash), None);
    }

    #[test]
    fn dictionaries_widen_as_their_values() {
        let dict = |v: DataType| Dictionary(Box::new(Int32), Box::new(v));
        assert_eq!(widen(&dict(Utf8), &Utf8View), Some(Utf8View));
        assert_eq!(widen(&LargeUtf8, &dict(Utf8)), Some(LargeUtf8));
        assert_eq!(widen(&dict(Int32), &dict(Int64)), Some(Int64));
        assert_eq!(widen(&dict(Utf8), &Int64), None);
    }

    #[test]
    fn types_widen_only_where_no_value_is_lost() {
        assert_eq!(widen(&Int32, &Int64), Some(Int64));
        assert_eq!(widen(&Int8, &Int16), Some(Int16));
        assert_eq!(widen(&UInt16, &UInt64), Some(UInt64));
        assert_eq!(widen(&UInt32, &Int64), Some(Int64));
        assert_eq!(widen(&Int64, &UInt32), Some(Int64));
        assert_eq!(widen(&UInt64, &Int64), None);
        assert_eq!(widen(&Float32, &Float64), Some(Float64));
        assert_eq!(widen(&Int64, &Float64), None);
        assert_eq!(
            widen(&Decimal128(10, 2), &Decimal128(12, 4)),
            Some(Decimal128(12, 4))
        );
        assert_eq!(
            widen(&Decimal128(12, 0), &Decimal128(5, 4)),
            Some(Decimal128(16, 4))
        );
        assert_eq!(widen(&Decimal128(38, 0), &Decimal128(38, 2)), None);
        assert_eq!(widen(&Utf8, &Utf8View), Some(Utf8View));
        assert_eq!(widen(&Utf8, &Int64), None);
        let ts = |u, z: Option<&str>| Timestamp(u, z.map(Into::into));
        assert_eq!(
            widen(
                &ts(TimeUnit::Millisecond, None),
                &ts(TimeUnit::Microsecond, None)
            ),
            Some(ts(TimeUnit::Microsecond, None))
        );
        assert_eq!(
            widen(
                &ts(TimeUnit::Nanosecond, Some("UTC")),
                &ts(TimeUnit::Second, Some("UTC"))
            ),
            Some(ts(TimeUnit::Nanosecond, Some("UTC")))
        );
        assert_eq!(
            widen(
                &ts(TimeUnit::Millisecond, Some("UTC")),
                &ts(TimeUnit::Millisecond, None)
            ),
            None
        );
        assert_eq!(widen(&Date32, &Int32), None);
    }

    #[test]
    fn a_merge_keeps_every_column_and_names_a_conflict() {
        let a = Schema::new(vec![
            Field::new("id", Int32, false),
            Field::new("name", Utf8, true),
        ]);
        let b = Schema::new(vec![
            Field::new("id", Int64, false),
            Field::new("extra", Float64, false),
        ]);
        let merged = merge(&[("a.parquet".into(), a.clone()), ("b.parquet".into(), b)]).unwrap();
        assert_eq!(
            merged,
            Schema::new(vec![
                Field::new("id", Int64, false),
                Field::new("name", Utf8, true),
                Field::new("extra", Float64, true),
            ])
        );
        let c = Schema::new(vec![Field::new("id", Utf8, true)]);
        let err = merge(&[("a.parquet".into(), a), ("c.parquet".into(), c)]).unwrap_err();
        assert!(
            err.contains("column id") && err.contains("a.parquet") && err.contains("c.parquet"),
            "{err}"
        );
    }
}
