//! Trino's `regexp_extract_all(s, pattern[, group])` (every match, or its
//! group, as an array) and `regexp_split(s, pattern)` (the pieces between
//! matches), which DataFusion does not have. A pattern that is not a regular
//! expression is refused, naming it; NULL in, NULL out.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListBuilder, StringBuilder};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use regex::Regex;

use super::refused;

pub(super) fn functions() -> Vec<ScalarUDF> {
    ["regexp_extract_all", "regexp_split"]
        .into_iter()
        .map(|name| {
            ScalarUDF::new_from_impl(RegexpArray {
                name,
                signature: Signature::variadic_any(Volatility::Immutable),
            })
        })
        .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexpArray {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for RegexpArray {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let arity = if self.name == "regexp_split" {
            2..=2
        } else {
            2..=3
        };
        if !arity.contains(&arg_types.len()) {
            return Err(refused(
                self.name,
                format!("takes {arity:?} arguments, not {}", arg_types.len()),
            ));
        }
        Ok(DataType::List(Arc::new(Field::new(
            "item",
            DataType::Utf8,
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = super::Rows::of(&args);
        let rows = call.count;
        let text = |i: usize| -> Result<ArrayRef> {
            Ok(cast(&args.args[i].to_array(rows)?, &DataType::Utf8)?)
        };
        let (strings, patterns) = (text(0)?, text(1)?);
        let (strings, patterns) = (strings.as_string::<i32>(), patterns.as_string::<i32>());
        let groups = match args.args.get(2) {
            Some(g) => Some(cast(&g.to_array(rows)?, &DataType::Int64)?),
            None => None,
        };
        let groups = groups
            .as_ref()
            .and_then(|g| g.as_any().downcast_ref::<Int64Array>());
        let mut out = ListBuilder::new(StringBuilder::new());
        // The last pattern compiled (a literal pattern compiles once).
        let mut compiled: Option<(String, Regex)> = None;
        for row in 0..rows {
            if strings.is_null(row)
                || patterns.is_null(row)
                || groups.is_some_and(|g| g.is_null(row))
            {
                out.append(false);
                continue;
            }
            let pattern = patterns.value(row);
            if compiled.as_ref().is_none_or(|(p, _)| p != pattern) {
                let re = Regex::new(pattern).map_err(|e| {
                    refused(
                        self.name,
                        format!("'{pattern}' is not a regular expression: {e}"),
                    )
                })?;
                compiled = Some((pattern.to_string(), re));
            }
            let Some((_, re)) = compiled.as_ref() else {
                continue;
            };
            let s = strings.value(row);
            if self.name == "regexp_split" {
                for piece in re.split(s) {
                    out.values().append_value(piece);
                }
            } else {
                let group = groups.map_or(0, |g| g.value(row));
                let group = usize::try_from(group)
                    .ok()
                    .filter(|g| *g < re.captures_len())
                    .ok_or_else(|| {
                        refused(
                            self.name,
                            format!("pattern '{pattern}' has no group {group}"),
                        )
                    })?;
                for c in re.captures_iter(s) {
                    out.values().append_option(c.get(group).map(|m| m.as_str()));
                }
            }
            out.append(true);
        }
        let out: ArrayRef = Arc::new(out.finish());
        call.answer(out)
    }
}
