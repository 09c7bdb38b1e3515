//! Trino's Teradata functions `to_char(x, format)`, `to_date(s, format)`
//! and `to_timestamp(s, format)`, whose formats are Teradata's (`yyyy-mm-dd
//! hh24:mi:ss`). DataFusion has functions of the same names that read
//! chrono's formats (`%Y-%m-%d`): `to_char(d, 'yyyy-mm-dd')` answered the
//! text `yyyy-mm-dd`, silently, and `to_date` failed to parse. A constant
//! format without `%` is read as Teradata's and written as chrono's (one
//! with `%` is chrono's already, as DataFusion's users write it).

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::ast::{Expr, Value, ValueWithSpan};

/// `name(args)` with a Teradata format written with chrono's; `None` where
/// it is not such a call.
pub(super) fn rewritten(name: &str, args: &[Expr]) -> Result<Option<String>> {
    if !matches!(name, "to_char" | "to_date" | "to_timestamp") || args.len() != 2 {
        return Ok(None);
    }
    let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(format),
        ..
    }) = &args[1]
    else {
        return Ok(None);
    };
    if format.contains('%') {
        return Ok(None);
    }
    let chrono = chrono_format(name, format)?;
    let call = format!("{name}(({}), '{}')", args[0], chrono.replace('\'', "''"));
    // Trino's `to_timestamp` is a TIMESTAMP without a zone (DataFusion's
    // has the session's).
    Ok(Some(match name {
        "to_timestamp" => format!("CAST({call} AS TIMESTAMP)"),
        _ => call,
    }))
}

/// A Teradata format as chrono's: `yyyy`, `yy`, `mm`, `dd`, `hh24`, `hh`,
/// `mi`, `ss` (any case) and the separators `- / , . ; :` and space, as
/// Trino takes them; anything else is refused, naming it.
fn chrono_format(name: &str, format: &str) -> Result<String> {
    const TOKENS: [(&str, &str); 8] = [
        ("yyyy", "%Y"),
        ("hh24", "%H"),
        ("yy", "%y"),
        ("mm", "%m"),
        ("dd", "%d"),
        ("hh", "%I"),
        ("mi", "%M"),
        ("ss", "%S"),
    ];
    let lower = format.to_ascii_lowercase();
    let mut out = String::new();
    let mut rest = lower.as_str();
    while let Some(c) = rest.chars().next() {
        if let Some((token, chrono)) = TOKENS.iter().find(|(t, _)| rest.starts_with(t)) {
            out.push_str(chrono);
            rest = &rest[token.len()..];
        } else if matches!(c, '-' | '/' | ',' | '.' | ';' | ':' | ' ') {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        } else {
            return Err(DataFusionError::Plan(format!(
                "{name}: '{format}' is not a Teradata date format (it takes yyyy, yy, mm, dd, \
                 hh24, hh, mi, ss and the separators - / , . ; : and space; at '{rest}')"
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::chrono_format;

    #[test]
    fn teradata_formats_as_chrono_formats() {
        assert_eq!(
            chrono_format("to_char", "yyyy-mm-dd hh24:mi:ss").unwrap(),
            "%Y-%m-%d %H:%M:%S"
        );
        assert_eq!(chrono_format("to_date", "YY/MM/DD").unwrap(), "%y/%m/%d");
        assert_eq!(chrono_format("to_char", "hh:mi").unwrap(), "%I:%M");
        let e = chrono_format("to_char", "yyyy-Month")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a Teradata date format"), "{e}");
    }
}
