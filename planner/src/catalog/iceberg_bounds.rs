//! An Iceberg manifest's column bounds (`lower_bounds`, `upper_bounds`,
//! `null_value_counts`, by field id, each value's binary form) as the
//! Delta-style statistics document file skipping reads
//! (`delta_stats.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::super::avro;

/// The current schema's top-level columns whose bounds a manifest's
/// entries give and [`super::delta_stats`] uses, by field id: their names
/// and Iceberg types.
pub(super) fn bounded_columns(
    doc: &Value,
    schema_id: Option<i64>,
) -> HashMap<i64, (String, String)> {
    let current_id = schema_id.or_else(|| doc.get("current-schema-id").and_then(Value::as_i64));
    let schemas = doc
        .get("schemas")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_else(|| doc.get("schema").cloned().into_iter().collect());
    let Some(current) = schemas
        .iter()
        .find(|s| current_id.is_none() || s.get("schema-id").and_then(Value::as_i64) == current_id)
    else {
        return HashMap::new();
    };
    current
        .get("fields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            let ty = f.get("type")?.as_str()?;
            matches!(
                ty,
                "int" | "long" | "date" | "timestamp" | "timestamptz" | "string"
            )
            .then(|| {
                Some((
                    f.get("id")?.as_i64()?,
                    (f.get("name")?.as_str()?.to_string(), ty.to_string()),
                ))
            })?
        })
        .collect()
}

/// A manifest entry's column bounds and counts as the Delta log writes
/// its statistics (`numRecords`, `minValues`, `maxValues`, `nullCount`),
/// for [`super::delta_stats`]: Iceberg's bounds are each value's binary
/// form (little-endian integers, days, microseconds, UTF-8 text).
pub(super) fn file_stats(
    data: &Value,
    columns: &HashMap<i64, (String, String)>,
) -> Option<Arc<str>> {
    if columns.is_empty() {
        return None;
    }
    // An int-keyed map: an array of {key, value} records, or an Avro map.
    let entries = |key: &str| -> Vec<(i64, Value)> {
        match data.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|e| Some((e.get("key")?.as_i64()?, e.get("value")?.clone())))
                .collect(),
            Some(Value::Object(map)) => map
                .iter()
                .filter_map(|(k, v)| Some((k.parse().ok()?, v.clone())))
                .collect(),
            _ => Vec::new(),
        }
    };
    let mut stats = serde_json::Map::new();
    if let Some(rows) = data.get("record_count") {
        stats.insert("numRecords".into(), rows.clone());
    }
    for (key, bound) in [("lower_bounds", "minValues"), ("upper_bounds", "maxValues")] {
        let values: serde_json::Map<String, Value> = entries(key)
            .into_iter()
            .filter_map(|(id, value)| {
                let (name, ty) = columns.get(&id)?;
                let bytes = avro::unhex(value.as_str()?)?;
                Some((name.clone(), bound_json(&bytes, ty)?))
            })
            .collect();
        stats.insert(bound.into(), Value::Object(values));
    }
    let nulls: serde_json::Map<String, Value> = entries("null_value_counts")
        .into_iter()
        .filter_map(|(id, count)| Some((columns.get(&id)?.0.clone(), count)))
        .collect();
    stats.insert("nullCount".into(), Value::Object(nulls));
    Some(Arc::from(Value::Object(stats).to_string()))
}

/// An Iceberg bound's bytes as Delta's statistics write the value.
fn bound_json(bytes: &[u8], ty: &str) -> Option<Value> {
    let int = || -> Option<i64> {
        match bytes.len() {
            4 => Some(i64::from(i32::from_le_bytes(bytes.try_into().ok()?))),
            8 => Some(i64::from_le_bytes(bytes.try_into().ok()?)),
            _ => None,
        }
    };
    Some(match ty {
        "int" | "long" => Value::from(int()?),
        "date" => {
            let day = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?
                .checked_add_signed(chrono::Duration::days(int()?))?;
            Value::String(day.format("%Y-%m-%d").to_string())
        }
        "timestamp" | "timestamptz" => {
            let at = chrono::DateTime::from_timestamp_micros(int()?)?.naive_utc();
            let zone = if ty == "timestamptz" { "Z" } else { "" };
            Value::String(format!("{}{zone}", at.format("%Y-%m-%dT%H:%M:%S%.6f")))
        }
        "string" => Value::String(String::from_utf8(bytes.to_vec()).ok()?),
        _ => return None,
    })
}
