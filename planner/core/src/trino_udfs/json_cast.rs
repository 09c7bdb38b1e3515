//! Casts between JSON text and typed values, as Trino casts its `json`
//! type: `CAST(json_parse(s) AS ARRAY(VARCHAR))`, `CAST(json_extract(d,
//! '$.user') AS ROW(id BIGINT, name VARCHAR))`, `CAST(m AS JSON)`.
//!
//! - [`JSON_CAST`]`(x, 'type', try)`: the JSON text of each row decoded
//!   as the Arrow type the second argument names (how `arrow_cast` names
//!   types): arrays as lists, objects as structs (by field name) or maps,
//!   scalars as the type's values (a number read as text where text is
//!   asked). Text that is not JSON, or JSON of another shape, fails the
//!   query naming the row's text and the type, or is NULL under `try`
//!   (`TRY_CAST`). A value that is not text is cast as any cast does
//!   (`CAST(m AS MAP(VARCHAR, DOUBLE))` of a map).
//! - [`TO_JSON`]`(x)`: any value as JSON text (a string quoted, a list an
//!   array, a struct or map an object); NULL stays NULL.
//!
//! squall writes the calls itself (the planner's JSON casts); users write
//! Trino's casts.

use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, StringArray, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::scalar::ScalarValue;

/// The name of the cast from JSON text.
pub const JSON_CAST: &str = "squall_json_cast";
/// How a failed cast of JSON begins its message.
pub const FAILED_CAST: &str = "CAST of JSON";
/// The name of the cast to JSON text.
pub const TO_JSON: &str = "squall_to_json";

pub(super) fn functions() -> Vec<ScalarUDF> {
    vec![json_cast(), to_json()]
}

/// [`JSON_CAST`], for the planner's casts.
pub fn json_cast() -> ScalarUDF {
    ScalarUDF::new_from_impl(JsonCast {
        signature: Signature::any(3, Volatility::Immutable),
    })
}

fn to_json() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToJson {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonCast {
    signature: Signature,
}

/// The type a literal names, as `arrow_cast` reads it.
fn named_type(arg: Option<&ScalarValue>) -> Result<DataType> {
    let name = match arg {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s))) => s,
        other => {
            return Err(DataFusionError::Plan(format!(
                "{JSON_CAST}: the type must be a text literal, not {other:?}"
            )));
        }
    };
    DataType::from_str(name)
        .map_err(|e| DataFusionError::Plan(format!("{JSON_CAST}: type '{name}': {e}")))
}

impl ScalarUDFImpl for JsonCast {
    fn name(&self) -> &str {
        JSON_CAST
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Err(DataFusionError::Internal(format!(
            "{JSON_CAST}: the type comes from the arguments"
        )))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let data_type = named_type(args.scalar_arguments.get(1).copied().flatten())?;
        Ok(Arc::new(Field::new(JSON_CAST, data_type, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let target = args.return_field.data_type().clone();
        let lenient = match args.args.get(2) {
            Some(ColumnarValue::Scalar(ScalarValue::Boolean(Some(b)))) => *b,
            _ => false,
        };
        let call = super::Rows::of(&args);
        let rows = call.count;
        let input = args.args[0].to_array(rows)?;
        let out = match input.data_type() {
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
                let text = cast(&input, &DataType::Utf8)?;
                decode(text.as_string::<i32>(), &target, lenient)?
            }
            // Not JSON text: a cast as any other (a map to a map of
            // other types, an array of numbers to one of text).
            _ => {
                let options = arrow::compute::CastOptions {
                    safe: lenient,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(&input, &target, &options)?
            }
        };
        call.answer(out)
    }
}

/// Each row's JSON text decoded as `target`; a row that does not decode is
/// NULL when `lenient`, else the error naming it.
fn decode(text: &StringArray, target: &DataType, lenient: bool) -> Result<ArrayRef> {
    let schema = Arc::new(Schema::new(vec![Field::new("v", target.clone(), true)]));
    let line = |value: Option<&str>| match value {
        Some(v) => format!("{{\"v\":{v}}}\n"),
        None => "{\"v\":null}\n".to_string(),
    };
    let one = |lines: &str, rows: usize| -> std::result::Result<ArrayRef, String> {
        let mut decoder = arrow::json::ReaderBuilder::new(Arc::clone(&schema))
            .with_batch_size(rows.max(1))
            .with_coerce_primitive(true)
            .build_decoder()
            .map_err(|e| e.to_string())?;
        let used = decoder
            .decode(lines.as_bytes())
            .map_err(|e| e.to_string())?;
        if used != lines.len() {
            return Err("more than one value".into());
        }
        let batch: RecordBatch = decoder
            .flush()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "no value".to_string())?;
        if batch.num_rows() != rows {
            return Err(format!("{} values for {rows} rows", batch.num_rows()));
        }
        Ok(Arc::clone(batch.column(0)))
    };
    // Each row must be one JSON value (the decoder reads a stream of them).
    let valid = |v: &str| serde_json::from_str::<serde::de::IgnoredAny>(v).is_ok();
    // JSON inside the type (`MAP(VARCHAR, JSON)`, a `LargeUtf8` leaf): the
    // value there kept as its JSON text.
    let rewritten: Option<Vec<Option<String>>> = has_json_leaf(target).then(|| {
        (0..text.len())
            .map(|i| {
                text.is_valid(i).then(|| {
                    let raw = text.value(i);
                    match serde_json::from_str::<serde_json::Value>(raw) {
                        Ok(mut v) => {
                            json_leaves(&mut v, target);
                            v.to_string()
                        }
                        Err(_) => raw.to_string(),
                    }
                })
            })
            .collect()
    });
    let values: Vec<Option<&str>> = match &rewritten {
        Some(rows) => rows.iter().map(|r| r.as_deref()).collect(),
        None => (0..text.len())
            .map(|i| text.is_valid(i).then(|| text.value(i)))
            .collect(),
    };
    let failed = |value: &str, why: &str| {
        let shown: String = value.chars().take(60).collect();
        let more = if value.chars().count() > 60 {
            "..."
        } else {
            ""
        };
        DataFusionError::Execution(format!(
            "{FAILED_CAST} '{shown}{more}' to {target}: {why} (TRY_CAST is NULL instead)"
        ))
    };
    let mut lines = String::new();
    let mut all_valid = true;
    for value in &values {
        match value {
            Some(v) if !valid(v) => {
                if !lenient {
                    return Err(failed(v, "not JSON"));
                }
                all_valid = false;
                lines.push_str(&line(None));
            }
            v => lines.push_str(&line(*v)),
        }
    }
    if all_valid || lenient {
        match one(&lines, values.len()) {
            Ok(out) => return Ok(out),
            Err(e) if !lenient => {
                // Name the first row that does not decode.
                for v in values.iter().flatten() {
                    if let Err(why) = one(&line(Some(v)), 1) {
                        return Err(failed(v, &why));
                    }
                }
                return Err(DataFusionError::Execution(format!(
                    "{FAILED_CAST} to {target}: {e}"
                )));
            }
            Err(_) => {}
        }
    }
    // Under TRY_CAST, row by row: NULL where a row does not decode.
    let mut parts: Vec<ArrayRef> = Vec::with_capacity(values.len());
    for v in &values {
        let decoded = v
            .filter(|v| valid(v))
            .and_then(|v| one(&line(Some(v)), 1).ok());
        match decoded {
            Some(a) => parts.push(a),
            None => parts.push(arrow::array::new_null_array(target, 1)),
        }
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::concat(&refs)?)
}

/// Whether `t` has a JSON leaf: Trino's `JSON` inside a cast's type, which
/// the planner writes as `LargeUtf8`.
fn has_json_leaf(t: &DataType) -> bool {
    match t {
        DataType::LargeUtf8 => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            has_json_leaf(f.data_type())
        }
        DataType::Struct(fields) => fields.iter().any(|f| has_json_leaf(f.data_type())),
        DataType::Map(entries, _) => has_json_leaf(entries.data_type()),
        _ => false,
    }
}

/// `v` with the values at `t`'s JSON leaves replaced by their JSON text.
fn json_leaves(v: &mut serde_json::Value, t: &DataType) {
    use serde_json::Value;
    match (t, v) {
        // JSON's null too is a JSON value: `null`.
        (DataType::LargeUtf8, v) => *v = Value::String(v.to_string()),
        (_, Value::Null) => {}
        (DataType::List(f) | DataType::LargeList(f), Value::Array(items)) => {
            items.iter_mut().for_each(|i| json_leaves(i, f.data_type()));
        }
        (DataType::Struct(fields), Value::Object(map)) => {
            for f in fields {
                if let Some(x) = map.get_mut(f.name()) {
                    json_leaves(x, f.data_type());
                }
            }
        }
        (DataType::Map(entries, _), Value::Object(map)) => {
            if let DataType::Struct(kv) = entries.data_type()
                && let Some(value) = kv.get(1)
            {
                map.values_mut()
                    .for_each(|x| json_leaves(x, value.data_type()));
            }
        }
        _ => {}
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToJson {
    signature: Signature,
}

impl ScalarUDFImpl for ToJson {
    fn name(&self) -> &str {
        TO_JSON
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = super::Rows::of(&args);
        let rows = call.count;
        let values = args.args[0].to_array(rows)?;
        let out: ArrayRef = Arc::new(as_json(&values)?);
        call.answer(out)
    }
}

/// Each value of `values` as JSON text, NULL for NULL.
fn as_json(values: &ArrayRef) -> Result<StringArray> {
    let values = match values.data_type() {
        // The writer reads views through their plain types.
        DataType::Utf8View | DataType::LargeUtf8 => cast(values, &DataType::Utf8)?,
        _ => Arc::clone(values),
    };
    let schema = Arc::new(Schema::new(vec![Field::new(
        "v",
        values.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema, vec![Arc::clone(&values)])?;
    let mut buf = Vec::new();
    {
        let mut writer = arrow::json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow::json::writer::LineDelimited>(&mut buf);
        writer.write(&batch)?;
        writer.finish()?;
    }
    let text =
        String::from_utf8(buf).map_err(|e| DataFusionError::Internal(format!("{TO_JSON}: {e}")))?;
    let nulls: BooleanArray = arrow::compute::is_null(&values)?;
    let mut out = StringBuilder::with_capacity(values.len(), text.len());
    for (i, line) in text.lines().enumerate() {
        if nulls.value(i) {
            out.append_null();
            continue;
        }
        let inner = line
            .strip_prefix("{\"v\":")
            .and_then(|l| l.strip_suffix('}'))
            .ok_or_else(|| DataFusionError::Internal(format!("{TO_JSON}: {line}")))?;
        out.append_value(inner);
    }
    Ok(out.finish())
}
