//! The column types of the tables whose metadata names their files, as
//! the Parquet reader reads their files: Delta's schema types
//! ([`delta_fields`]) and Iceberg's ([`iceberg_fields`]), both JSON.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, TimeUnit};
use serde_json::Value;

use super::delta_log::LogError;

/// The fields of a Delta `struct` type.
pub(super) fn delta_fields(t: &Value) -> Result<Fields, LogError> {
    struct_fields(t, "nullable", delta_type)
}

/// The fields of an Iceberg `struct` type (all nullable: a column added
/// later is NULL in older files).
pub(super) fn iceberg_fields(t: &Value) -> Result<Fields, LogError> {
    struct_fields(t, "", iceberg_type)
}

/// A struct type's `fields`, each typed by `type_of`; `nullable` names the
/// attribute saying whether it may be NULL (none: every field may).
fn struct_fields(
    t: &Value,
    nullable: &str,
    type_of: fn(&Value) -> Result<DataType, LogError>,
) -> Result<Fields, LogError> {
    let fields = t
        .get("fields")
        .and_then(Value::as_array)
        .ok_or_else(|| "a struct type without fields".to_string())?;
    fields
        .iter()
        .map(|f| {
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| "a field without its name".to_string())?;
            let ty = type_of(
                f.get("type")
                    .ok_or_else(|| format!("column {name} has no type"))?,
            )
            .map_err(|e| format!("column {name}: {e}"))?;
            let nulls = f.get(nullable).and_then(Value::as_bool).unwrap_or(true);
            Ok(Field::new(name, ty, nulls))
        })
        .collect()
}

/// The Arrow type of a Delta type.
pub(super) fn delta_type(t: &Value) -> Result<DataType, LogError> {
    if let Some(name) = t.as_str() {
        return Ok(match name {
            "string" => DataType::Utf8,
            "long" => DataType::Int64,
            "integer" => DataType::Int32,
            "short" => DataType::Int16,
            "byte" => DataType::Int8,
            "float" => DataType::Float32,
            "double" => DataType::Float64,
            "boolean" => DataType::Boolean,
            "binary" => DataType::Binary,
            "date" => DataType::Date32,
            "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
            decimal if decimal.starts_with("decimal(") => decimal_type(decimal)?,
            other => return Err(format!("the Delta type {other} is not read by squall")),
        });
    }
    let inner = |key: &str| -> Result<DataType, LogError> {
        delta_type(
            t.get(key)
                .ok_or_else(|| format!("a type without its {key}"))?,
        )
    };
    let nulls = |key: &str| t.get(key).and_then(Value::as_bool).unwrap_or(true);
    match t.get("type").and_then(Value::as_str) {
        Some("struct") => Ok(DataType::Struct(delta_fields(t)?)),
        Some("array") => Ok(list_type(inner("elementType")?, nulls("containsNull"))),
        Some("map") => Ok(map_type(
            inner("keyType")?,
            inner("valueType")?,
            nulls("valueContainsNull"),
        )),
        other => Err(format!("the Delta type {other:?} is not read by squall")),
    }
}

/// The Arrow type of an Iceberg type.
pub(super) fn iceberg_type(t: &Value) -> Result<DataType, LogError> {
    if let Some(name) = t.as_str() {
        return Ok(match name {
            "boolean" => DataType::Boolean,
            "int" => DataType::Int32,
            "long" => DataType::Int64,
            "float" => DataType::Float32,
            "double" => DataType::Float64,
            "date" => DataType::Date32,
            "time" => DataType::Time64(TimeUnit::Microsecond),
            "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
            "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            "timestamp_ns" => DataType::Timestamp(TimeUnit::Nanosecond, None),
            "timestamptz_ns" => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            "string" => DataType::Utf8,
            "uuid" => DataType::FixedSizeBinary(16),
            "binary" => DataType::Binary,
            fixed if fixed.starts_with("fixed[") => {
                let n: i32 = fixed
                    .trim_start_matches("fixed[")
                    .trim_end_matches(']')
                    .parse()
                    .map_err(|_| format!("type {fixed}"))?;
                DataType::FixedSizeBinary(n)
            }
            decimal if decimal.starts_with("decimal(") => decimal_type(decimal)?,
            other => return Err(format!("the Iceberg type {other} is not read by squall")),
        });
    }
    let inner = |key: &str| iceberg_type(t.get(key).unwrap_or(&Value::Null));
    match t.get("type").and_then(Value::as_str) {
        Some("struct") => Ok(DataType::Struct(iceberg_fields(t)?)),
        Some("list") => Ok(list_type(inner("element")?, true)),
        Some("map") => Ok(map_type(inner("key")?, inner("value")?, true)),
        other => Err(format!("the Iceberg type {other:?} is not read by squall")),
    }
}

/// `decimal(p, s)`.
fn decimal_type(spec: &str) -> Result<DataType, LogError> {
    let bad = || format!("type {spec}");
    let inner = spec.trim_start_matches("decimal(").trim_end_matches(')');
    let (p, s) = inner.split_once(',').ok_or_else(bad)?;
    let p: u8 = p.trim().parse().map_err(|_| bad())?;
    let s: i8 = s.trim().parse().map_err(|_| bad())?;
    Ok(DataType::Decimal128(p, s))
}

/// A list as Parquet's standard layout names its element.
fn list_type(element: DataType, nulls: bool) -> DataType {
    DataType::List(Arc::new(Field::new("element", element, nulls)))
}

/// A map as Parquet's standard layout names its entries.
fn map_type(key: DataType, value: DataType, nulls: bool) -> DataType {
    let entries = Fields::from(vec![
        Field::new("key", key, false),
        Field::new("value", value, nulls),
    ]);
    DataType::Map(
        Arc::new(Field::new("key_value", DataType::Struct(entries), false)),
        false,
    )
}

/// `ty` (a column's Arrow type, made from the log's type `t`: Delta's or
/// Iceberg's JSON) with each nested struct field's metadata set by
/// `metadata_of` from the field's JSON: how files name it.
pub(super) fn with_field_metadata(
    ty: &DataType,
    t: &Value,
    metadata_of: &dyn Fn(&Value) -> std::collections::HashMap<String, String>,
) -> DataType {
    let inner = |f: &Field, json: Option<&Value>| match json {
        Some(json) => Arc::new(f.clone().with_data_type(with_field_metadata(
            f.data_type(),
            json,
            metadata_of,
        ))),
        None => Arc::new(f.clone()),
    };
    match ty {
        DataType::Struct(fields) => {
            let described: Vec<&Value> = t
                .get("fields")
                .and_then(Value::as_array)
                .map(|fs| fs.iter().collect())
                .unwrap_or_default();
            DataType::Struct(
                fields
                    .iter()
                    .zip(described)
                    .map(|(f, json)| {
                        let typed = inner(f, json.get("type"));
                        Arc::new(typed.as_ref().clone().with_metadata(metadata_of(json)))
                    })
                    .collect(),
            )
        }
        DataType::List(f) => {
            DataType::List(inner(f, t.get("elementType").or_else(|| t.get("element"))))
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return ty.clone();
            };
            let typed: Fields = kv
                .iter()
                .zip([
                    t.get("keyType").or_else(|| t.get("key")),
                    t.get("valueType").or_else(|| t.get("value")),
                ])
                .map(|(f, json)| inner(f, json))
                .collect();
            DataType::Map(
                Arc::new(
                    entries
                        .as_ref()
                        .clone()
                        .with_data_type(DataType::Struct(typed)),
                ),
                *sorted,
            )
        }
        _ => ty.clone(),
    }
}

/// `fields` (the columns of the Delta `schema`) each, nested fields too,
/// with the file column it is read from in its metadata: its physical
/// name, and in `id` mode its field id.
pub(super) fn mapped_fields(
    schema: &Value,
    fields: arrow::datatypes::Fields,
    by_id: bool,
) -> arrow::datatypes::Fields {
    use squall_core::case_blind::{FILE_COLUMN, FILE_FIELD_ID};
    let metadata_of = |json: &Value| {
        let mapping = json.get("metadata");
        let mut metadata = std::collections::HashMap::new();
        if let Some(physical) = mapping
            .and_then(|m| m.get("delta.columnMapping.physicalName"))
            .and_then(Value::as_str)
        {
            metadata.insert(FILE_COLUMN.to_string(), physical.to_string());
        }
        if let Some(id) = mapping
            .and_then(|m| m.get("delta.columnMapping.id"))
            .and_then(Value::as_i64)
            .filter(|_| by_id)
        {
            metadata.insert(FILE_FIELD_ID.to_string(), id.to_string());
        }
        metadata
    };
    match with_field_metadata(
        &arrow::datatypes::DataType::Struct(fields.clone()),
        schema,
        &metadata_of,
    ) {
        arrow::datatypes::DataType::Struct(mapped) => mapped,
        _ => fields,
    }
}
