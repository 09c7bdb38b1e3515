//! Trino's `regexp_position(s, pattern[, start[, occurrence]])`: the
//! character position (from 1) where the `occurrence`-th match of `pattern`
//! at or after character `start` begins, -1 where there is none. A pattern
//! that is not a regular expression, or a `start` or `occurrence` below 1,
//! is refused, naming it; NULL in, NULL out.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Builder, Int64Array};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use regex::Regex;

use super::refused;

const NAME: &str = "regexp_position";

pub(super) fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(RegexpPosition {
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexpPosition {
    signature: Signature,
}

impl ScalarUDFImpl for RegexpPosition {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !(2..=4).contains(&arg_types.len()) {
            return Err(refused(
                NAME,
                format!("takes 2 to 4 arguments, not {}", arg_types.len()),
            ));
        }
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let call = super::Rows::of(&args);
        let rows = call.count;
        let array = |i: usize, t: &DataType| -> Result<Option<ArrayRef>> {
            args.args
                .get(i)
                .map(|a| Ok(cast(&a.to_array(rows)?, t)?))
                .transpose()
        };
        let (strings, patterns) = (
            array(0, &DataType::Utf8)?
                .unwrap_or_else(|| Arc::new(arrow::array::NullArray::new(rows))),
            array(1, &DataType::Utf8)?
                .unwrap_or_else(|| Arc::new(arrow::array::NullArray::new(rows))),
        );
        let (strings, patterns) = (strings.as_string::<i32>(), patterns.as_string::<i32>());
        let starts = array(2, &DataType::Int64)?;
        let occurrences = array(3, &DataType::Int64)?;
        let ints = |a: &Option<ArrayRef>| {
            a.as_ref()
                .and_then(|a| a.as_any().downcast_ref::<Int64Array>().cloned())
        };
        let (starts, occurrences) = (ints(&starts), ints(&occurrences));
        let mut out = Int32Builder::with_capacity(rows);
        // The last pattern compiled (a literal pattern compiles once).
        let mut compiled: Option<(String, Regex)> = None;
        for row in 0..rows {
            let null = |a: &Option<Int64Array>| a.as_ref().is_some_and(|a| a.is_null(row));
            if strings.is_null(row) || patterns.is_null(row) || null(&starts) || null(&occurrences)
            {
                out.append_null();
                continue;
            }
            let pattern = patterns.value(row);
            if compiled.as_ref().is_none_or(|(p, _)| p != pattern) {
                let re = Regex::new(pattern).map_err(|e| {
                    refused(
                        NAME,
                        format!("'{pattern}' is not a regular expression: {e}"),
                    )
                })?;
                compiled = Some((pattern.to_string(), re));
            }
            let Some((_, re)) = compiled.as_ref() else {
                continue;
            };
            let start = starts.as_ref().map_or(1, |s| s.value(row));
            let occurrence = occurrences.as_ref().map_or(1, |o| o.value(row));
            if start < 1 || occurrence < 1 {
                return Err(refused(
                    NAME,
                    format!("start ({start}) and occurrence ({occurrence}) must be 1 or more"),
                ));
            }
            out.append_value(position(re, strings.value(row), start, occurrence));
        }
        let out: ArrayRef = Arc::new(out.finish());
        call.answer(out)
    }
}

/// The character position (from 1) of the `occurrence`-th match of `re` in
/// `s` at or after character `start`, or -1.
fn position(re: &Regex, s: &str, start: i64, occurrence: i64) -> i32 {
    // The byte where character `start` begins (past the end: no match).
    let skip = usize::try_from(start - 1).unwrap_or(usize::MAX);
    let Some(mut at) = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()))
        .nth(skip)
    else {
        return -1;
    };
    let mut seen = 0;
    while let Some(m) = re.find_at(s, at) {
        seen += 1;
        if seen == occurrence {
            return i32::try_from(s[..m.start()].chars().count() + 1).unwrap_or(i32::MAX);
        }
        at = if m.end() > m.start() {
            m.end()
        } else {
            // An empty match: the next search starts a character later.
            match s[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => return -1,
            }
        };
    }
    -1
}

#[cfg(test)]
mod tests {
    use super::position;
    use regex::Regex;

    #[test]
    fn positions_count_characters_from_one() {
        let c = Regex::new("c").unwrap();
        assert_eq!(position(&c, "abcabc", 1, 1), 3);
        assert_eq!(position(&c, "abcabc", 4, 1), 6);
        assert_eq!(position(&c, "abcabc", 1, 2), 6);
        assert_eq!(position(&c, "abcabc", 1, 3), -1);
        assert_eq!(position(&c, "abcabc", 7, 1), -1);
        assert_eq!(position(&c, "abcabc", 99, 1), -1);
        assert_eq!(position(&c, "日本c語c", 1, 2), 5);
        let digits = Regex::new(r"\d+").unwrap();
        assert_eq!(position(&digits, "a1b22c333", 1, 3), 7);
        // `^` is the text's start, not the search's.
        assert_eq!(position(&Regex::new("^a").unwrap(), "aba", 2, 1), -1);
        assert_eq!(position(&Regex::new("x*").unwrap(), "ab", 1, 2), 2);
    }
}
