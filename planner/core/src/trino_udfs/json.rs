//! Trino's JSON functions over JSON text (see the module above).

use arrow::datatypes::DataType;
use datafusion::error::Result;
use serde_json::Value;

use super::{Arg, refused};

/// One step of a JSON path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(i64),
}

/// The steps of a path in Trino's subset of JSONPath: `$`, then `.name`,
/// `["name"]`, `['name']` or `[index]`.
fn path(function: &str, text: &str) -> Result<Vec<Step>> {
    let bad = |why: &str| {
        refused(
            function,
            format!(
                "invalid JSON path '{text}': {why} (a path is $ followed by .name, [\"name\"] or \
                 [index] steps)"
            ),
        )
    };
    let text_trimmed = text.trim();
    let Some(mut rest) = text_trimmed.strip_prefix('$') else {
        return Err(bad("it does not begin with $"));
    };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return Err(bad("a '.' names no key"));
            }
            if name == "*" || name.contains(['*', ' ', '(', ')', '?', '@']) {
                return Err(bad(&format!("'{name}' is not a key squall can follow")));
            }
            steps.push(Step::Key(name.to_string()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let after = after.trim_start();
            if let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let body = &after[1..];
                let close = body
                    .find(quote)
                    .ok_or_else(|| bad("a quoted key is not closed"))?;
                let tail = body[close + 1..].trim_start();
                let tail = tail
                    .strip_prefix(']')
                    .ok_or_else(|| bad("a quoted key is not followed by ]"))?;
                steps.push(Step::Key(body[..close].to_string()));
                rest = tail;
            } else {
                let close = after.find(']').ok_or_else(|| bad("a [ is not closed"))?;
                let index = after[..close].trim();
                let index: i64 = index
                    .parse()
                    .map_err(|_| bad(&format!("'[{index}]' is not an array index")))?;
                steps.push(Step::Index(index));
                rest = &after[close + 1..];
            }
        } else {
            return Err(bad(&format!("unexpected '{rest}'")));
        }
    }
    Ok(steps)
}

/// The value `steps` lead to in `value`, if any.
fn follow<'a>(mut value: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    for step in steps {
        value = match (step, value) {
            (Step::Key(k), Value::Object(map)) => map.get(k)?,
            (Step::Index(i), Value::Array(items)) => items.get(usize::try_from(*i).ok()?)?,
            // Trino reads `$.0` and `$["0"]` as an array's index too.
            (Step::Key(k), Value::Array(items)) => items.get(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

/// `text` as JSON, or `None` if it is not JSON.
fn document(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// `text` as JSON, or the error naming why it is not.
fn document_of(function: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| {
        let shown: String = text.chars().take(60).collect();
        let more = if text.chars().count() > 60 { "..." } else { "" };
        refused(function, format!("'{shown}{more}' is not JSON: {e}"))
    })
}

fn written(value: &Value) -> String {
    value.to_string()
}

pub(super) fn parse(args: &[Arg]) -> Result<Option<String>> {
    document_of("json_parse", args[0].text).map(|v| Some(written(&v)))
}

pub(super) fn format(args: &[Arg]) -> Result<Option<String>> {
    document_of("json_format", args[0].text).map(|v| Some(written(&v)))
}

pub(super) fn extract(args: &[Arg]) -> Result<Option<String>> {
    let steps = path("json_extract", args[1].text)?;
    Ok(document(args[0].text).and_then(|d| follow(&d, &steps).map(written)))
}

/// The value at the path if it is a scalar (a string without its quotes),
/// NULL for arrays, objects and null.
pub(super) fn extract_scalar(args: &[Arg]) -> Result<Option<String>> {
    let steps = path("json_extract_scalar", args[1].text)?;
    let Some(d) = document(args[0].text) else {
        return Ok(None);
    };
    Ok(match follow(&d, &steps) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
        _ => None,
    })
}

/// The array's element at the index (from the end when negative), NULL past
/// either end or if the document is not an array.
pub(super) fn array_get(args: &[Arg]) -> Result<Option<String>> {
    let index: i64 = args[1].text.trim().parse().map_err(|_| {
        refused(
            "json_array_get",
            format!("the index '{}' is not an integer", args[1].text),
        )
    })?;
    let Some(Value::Array(items)) = document(args[0].text) else {
        return Ok(None);
    };
    let at = if index < 0 {
        items.len().checked_sub(index.unsigned_abs() as usize)
    } else {
        Some(index as usize)
    };
    Ok(at.and_then(|i| items.get(i)).map(written))
}

pub(super) fn array_length(args: &[Arg]) -> Result<Option<i64>> {
    Ok(match document(args[0].text) {
        Some(Value::Array(items)) => Some(items.len() as i64),
        _ => None,
    })
}

/// The size of the object or array at the path (0 for a scalar), NULL where
/// the path leads nowhere.
pub(super) fn size(args: &[Arg]) -> Result<Option<i64>> {
    let steps = path("json_size", args[1].text)?;
    let Some(d) = document(args[0].text) else {
        return Ok(None);
    };
    Ok(follow(&d, &steps).map(|v| match v {
        Value::Array(items) => items.len() as i64,
        Value::Object(map) => map.len() as i64,
        _ => 0,
    }))
}

/// Whether the array holds the value, compared as the value's type: a
/// number with numbers, a string with strings, a boolean with booleans.
pub(super) fn array_contains(args: &[Arg]) -> Result<Option<bool>> {
    let Some(Value::Array(items)) = document(args[0].text) else {
        return Ok(None);
    };
    let needle = &args[1];
    let found = match needle.data_type {
        DataType::Boolean => {
            let b = needle.text == "true";
            items.iter().any(|v| v.as_bool() == Some(b))
        }
        t if t.is_numeric() => {
            let n: f64 = needle.text.parse().unwrap_or(f64::NAN);
            items.iter().any(|v| v.as_f64() == Some(n))
        }
        _ => items.iter().any(|v| v.as_str() == Some(needle.text)),
    };
    Ok(Some(found))
}

pub(super) fn is_scalar(args: &[Arg]) -> Result<Option<bool>> {
    let v = document_of("is_json_scalar", args[0].text)?;
    Ok(Some(!matches!(v, Value::Array(_) | Value::Object(_))))
}

#[cfg(test)]
mod tests {
    use super::{Step, path};

    #[test]
    fn paths_are_read_as_trino_reads_them() {
        assert_eq!(path("f", "$").unwrap(), vec![]);
        assert_eq!(
            path("f", "$.a.b[2][\"c d\"]['e']").unwrap(),
            vec![
                Step::Key("a".into()),
                Step::Key("b".into()),
                Step::Index(2),
                Step::Key("c d".into()),
                Step::Key("e".into()),
            ]
        );
        for bad in ["a.b", "$.", "$[x]", "$.a[*]", "$..a", "$.*", "$[\"a"] {
            let e = path("json_extract", bad).unwrap_err().to_string();
            assert!(e.contains(&format!("invalid JSON path '{bad}'")), "{e}");
        }
    }
}
