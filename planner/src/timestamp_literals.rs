//! Timestamp literals written as Trino takes them: `TIMESTAMP '2024-02-28
//! 10:00'` (no seconds), `TIMESTAMP '2024-2-8 9:05:00'` (one-digit month,
//! day or hour), and the same text in `CAST('...' AS TIMESTAMP)` or
//! `TRY_CAST`. Trino reads a timestamp's text as `year-month-day[ hour:
//! minute[:second[.fraction]]][ zone]`, each part of month to second one
//! or two digits; DataFusion's parser wants two digits each and the
//! seconds, so such a literal failed its query at planning ("Error parsing
//! timestamp from '2024-02-28 10:00': error parsing time") and a `TRY_CAST`
//! answered NULL.
//!
//! [`rewrite`] writes the text of such a literal in full (`2024-02-28
//! 10:00:00`), the zone or offset after it kept as written. Text that is
//! not of that form is left alone, and DataFusion's refusal names it.
//! What it does not do: text in a column cast to a timestamp is
//! DataFusion's cast, which wants the seconds.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{DataType, Expr, Value, VisitorMut};

/// `statement` with its timestamp literals' text written in full.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut TimestampLiterals)
}

struct TimestampLiterals;

fn is_timestamp(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(..) | DataType::Datetime(_))
}

impl VisitorMut for TimestampLiterals {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        let value = match expr {
            Expr::TypedString(t) if is_timestamp(&t.data_type) => &mut t.value.value,
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } if is_timestamp(data_type) => match inner.as_mut() {
                Expr::Value(v) => &mut v.value,
                _ => return ControlFlow::Continue(()),
            },
            _ => return ControlFlow::Continue(()),
        };
        if let Value::SingleQuotedString(text) = value
            && let Some(full) = in_full(text)
        {
            *text = full;
        }
        ControlFlow::Continue(())
    }
}

/// The leading run of ASCII digits of `s` (at most `max`), and the rest.
fn digits(s: &str, max: usize) -> Option<(&str, &str)> {
    let n = s.bytes().take(max).take_while(u8::is_ascii_digit).count();
    (n > 0).then(|| s.split_at(n))
}

/// `text` as `YYYY-MM-DD HH:MM:SS[.fraction]` and whatever followed it,
/// where it is a timestamp Trino reads and not already written so; `None`
/// otherwise (including text already in full).
fn in_full(text: &str) -> Option<String> {
    let s = text.trim();
    let (year, rest) = digits(s, 9)?;
    if year.len() < 4 {
        return None;
    }
    let (month, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let (day, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let mut out = format!("{year}-{month:0>2}-{day:0>2}");
    let time = rest
        .strip_prefix(" T")
        .or_else(|| rest.strip_prefix(' '))
        .or_else(|| rest.strip_prefix('T'));
    let tail = match time.and_then(|t| digits(t, 2)) {
        Some((hour, r)) if r.starts_with(':') => {
            let (minute, mut r) = digits(r.strip_prefix(':')?, 2)?;
            let mut second = "0";
            let mut fraction = None;
            if let Some(s) = r.strip_prefix(':') {
                (second, r) = digits(s, 2)?;
                if let Some(f) = r.strip_prefix('.') {
                    let (digits, rest) = digits(f, usize::MAX)?;
                    (fraction, r) = (Some(digits), rest);
                }
            }
            out.push_str(&format!(" {hour:0>2}:{minute:0>2}:{second:0>2}"));
            if let Some(f) = fraction {
                out.push('.');
                out.push_str(f);
            }
            r
        }
        // A date alone, or followed by what is not a time (a zone).
        _ => rest,
    };
    // What follows must be a zone or an offset, not more of a time.
    if tail
        .trim_start()
        .starts_with(|c: char| c.is_ascii_digit() || c == ':' || c == '.')
    {
        return None;
    }
    out.push_str(tail);
    (out != s).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trino_timestamp_text_is_written_in_full() {
        for (text, full) in [
            ("2024-02-28 10:00", Some("2024-02-28 10:00:00")),
            ("2024-2-8 9:05", Some("2024-02-08 09:05:00")),
            ("2024-02-28 10:00:01", None),
            ("2024-02-28 1:2:3.25", Some("2024-02-28 01:02:03.25")),
            ("2024-02-28T10:00", Some("2024-02-28 10:00:00")),
            ("2024-02-28 10:00 UTC", Some("2024-02-28 10:00:00 UTC")),
            ("2024-02-28 10:00+05:00", Some("2024-02-28 10:00:00+05:00")),
            (
                "2024-02-28 10:00 America/New_York",
                Some("2024-02-28 10:00:00 America/New_York"),
            ),
            ("2024-02-28", None),
            ("2024-2-8", Some("2024-02-08")),
            (" 2024-02-28 10:00 ", Some("2024-02-28 10:00:00")),
            // Not timestamps Trino reads: left for DataFusion to refuse.
            ("24-02-28 10:00", None),
            ("2024-02-28 10", None),
            ("2024-02-28 10:00:000", None),
            ("2024-02-28 100:00", None),
            ("2024-2-8 10", None),
            ("2024-02-28 10:00.5", None),
            ("abc", None),
            ("", None),
        ] {
            assert_eq!(in_full(text).as_deref(), full, "{text:?}");
        }
    }

    #[test]
    fn literals_and_casts_of_literals_are_rewritten() {
        let text = |sql| crate::trino_sql::rewritten_text(sql, rewrite);
        assert_eq!(
            text(
                "SELECT TIMESTAMP '2024-02-28 10:00', CAST('2024-2-8 9:05' AS TIMESTAMP(3)), TRY_CAST('2024-02-28 10:00' AS TIMESTAMP)"
            ),
            "SELECT TIMESTAMP '2024-02-28 10:00:00', CAST('2024-02-08 09:05:00' AS TIMESTAMP(3)), TRY_CAST('2024-02-28 10:00:00' AS TIMESTAMP)"
        );
        // Other types and columns are left as they are.
        assert_eq!(
            text("SELECT CAST('2024-2-8 9:05' AS VARCHAR), CAST(x AS TIMESTAMP) FROM t"),
            "SELECT CAST('2024-2-8 9:05' AS VARCHAR), CAST(x AS TIMESTAMP) FROM t"
        );
    }
}
