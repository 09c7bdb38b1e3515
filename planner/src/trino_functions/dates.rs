//! Trino's dates and times as DataFusion's: the fields of `year(d)` and
//! its kin, `date_add`'s and `date_diff`'s units, and the format letters of
//! `date_format` / `date_parse` (MySQL's) and `format_datetime` /
//! `parse_datetime` (Java's) as chrono's.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::ast::{Expr, Value, ValueWithSpan};

/// `date_part`'s name of a Trino date field function.
pub(super) fn date_field(name: &str) -> Option<&'static str> {
    Some(match name {
        "year" => "year",
        "quarter" => "quarter",
        "month" => "month",
        "week" | "week_of_year" => "week",
        "day" | "day_of_month" => "day",
        "day_of_year" | "doy" => "doy",
        "hour" => "hour",
        "minute" => "minute",
        "second" => "second",
        _ => return None,
    })
}

/// A unit argument: a string literal (`'day'`), as Trino requires.
pub(super) fn unit_of(arg: &Expr, function: &str) -> Result<String> {
    match arg {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(s),
            ..
        }) => Ok(s.to_ascii_lowercase()),
        other => Err(DataFusionError::Plan(format!(
            "{function}: the unit must be a string literal such as 'day', not {other}"
        ))),
    }
}

/// A format string literal of Trino's `date_format` / `date_parse`
/// (MySQL's letters) as a chrono format literal.
pub(super) fn chrono_format(arg: &Expr) -> Result<String> {
    let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(format),
        ..
    }) = arg
    else {
        return Err(DataFusionError::Plan(format!(
            "date_format / date_parse: the format must be a string literal such as '%Y-%m-%d', not {arg}"
        )));
    };
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(letter) = chars.next() else {
            out.push('%');
            break;
        };
        out.push_str(match letter {
            'a' => "%a",
            'b' => "%b",
            'c' => "%-m",
            'd' => "%d",
            'e' => "%-d",
            'f' => "%6f",
            'H' => "%H",
            'h' | 'I' => "%I",
            'i' => "%M",
            'j' => "%j",
            'k' => "%-H",
            'l' => "%-I",
            'M' => "%B",
            'm' => "%m",
            'p' => "%p",
            'r' => "%I:%M:%S %p",
            'S' | 's' => "%S",
            'T' => "%H:%M:%S",
            'v' => "%V",
            'W' => "%A",
            'x' => "%G",
            'Y' => "%Y",
            'y' => "%y",
            '%' => "%%",
            other => {
                return Err(DataFusionError::Plan(format!(
                    "date_format / date_parse: '%{other}' in '{format}' is not a format letter squall knows"
                )));
            }
        });
    }
    Ok(format!("'{}'", out.replace('\'', "''")))
}

/// A Java (Joda) date-time pattern (`format_datetime`, `parse_datetime`):
/// `yyyy-MM-dd HH:mm:ss.SSS`, `EEE`, `MMM`, `a`, quoted text `'T'`, as
/// chrono's letters.
pub(super) fn joda_format(arg: &Expr, function: &str) -> Result<String> {
    let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(format),
        ..
    }) = arg
    else {
        return Err(DataFusionError::Plan(format!(
            "{function}: the format must be a string literal such as 'yyyy-MM-dd', not {arg}"
        )));
    };
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let run = chars[i..].iter().take_while(|&&d| d == c).count();
        i += run;
        if c == '\'' {
            // '' is a quote; 'text' is text.
            if run % 2 == 0 {
                out.push_str(&"'".repeat(run / 2));
                continue;
            }
            out.push_str(&"'".repeat(run / 2));
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        out.push('\'');
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                if chars[i] == '%' {
                    out.push('%');
                }
                out.push(chars[i]);
                i += 1;
            }
            continue;
        }
        if !c.is_ascii_alphabetic() {
            for _ in 0..run {
                out.push_str(if c == '%' { "%%" } else { "" });
                if c != '%' {
                    out.push(c);
                }
            }
            continue;
        }
        out.push_str(match (c, run) {
            ('y' | 'Y' | 'x', 2) => "%y",
            ('y' | 'Y' | 'x', _) => "%Y",
            ('M', 1) => "%-m",
            ('M', 2) => "%m",
            ('M', 3) => "%b",
            ('M', _) => "%B",
            ('d', 1) => "%-d",
            ('d', _) => "%d",
            ('D', _) => "%j",
            ('H', 1) => "%-H",
            ('H', _) => "%H",
            ('h', 1) => "%-I",
            ('h', _) => "%I",
            ('m', 1) => "%-M",
            ('m', _) => "%M",
            ('s', 1) => "%-S",
            ('s', _) => "%S",
            ('S', 1..=3) => "%3f",
            ('S', 4..=6) => "%6f",
            ('S', _) => "%9f",
            ('a', _) => "%p",
            ('E', 1..=3) => "%a",
            ('E', _) => "%A",
            ('e', _) => "%u",
            ('w', _) => "%V",
            ('Z', 1) => "%z",
            ('Z', _) => "%:z",
            ('z', _) => "%Z",
            (other, _) => {
                return Err(DataFusionError::Plan(format!(
                    "{function}: '{other}' in '{format}' is not a pattern letter squall knows"
                )));
            }
        });
    }
    Ok(format!("'{}'", out.replace('\'', "''")))
}

/// The text `value` and the quoted chrono `format` a parse of it reads,
/// completed as Trino completes a partial date: a year, month or day the
/// format does not read is 1970, January, the first (`date_parse('2020-05',
/// '%Y-%m')` is 2020-05-01 00:00), a minute not read beside an hour 0.
/// chrono refused them ("input is not enough for unique date and time").
pub(super) fn completed_parse(value: &str, format: &str) -> (String, String) {
    let raw = format
        .strip_prefix('\'')
        .and_then(|f| f.strip_suffix('\''))
        .unwrap_or(format)
        .replace("''", "'");
    let mut letters = Vec::new();
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            // Past the flags and widths (`%-d`, `%3f`, `%:z`).
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() || next == '%' {
                    letters.push(next);
                    break;
                }
            }
        }
    }
    let reads = |set: &[char]| set.iter().any(|c| letters.contains(c));
    let day_of_year = reads(&['j']);
    let mut missing: Vec<(&str, &str)> = Vec::new();
    if !reads(&['Y', 'y', 'G']) {
        missing.push(("1970", "%Y"));
    }
    if !day_of_year && !reads(&['m', 'b', 'B', 'h']) {
        missing.push(("01", "%m"));
    }
    if !day_of_year && !reads(&['d', 'e']) {
        missing.push(("01", "%d"));
    }
    if reads(&['H', 'I', 'k', 'l']) && !reads(&['M']) {
        missing.push(("00", "%M"));
    }
    if missing.is_empty() {
        return (value.to_string(), format.to_string());
    }
    let (values, letters): (Vec<&str>, Vec<&str>) = missing.into_iter().unzip();
    (
        format!("(CAST({value} AS VARCHAR) || '|{}')", values.join("|")),
        format!("'{}|{}'", raw.replace('\'', "''"), letters.join("|")),
    )
}

/// `n` units as an interval (`n` any integer expression).
pub(super) fn interval(unit: &str, n: &str) -> Result<String> {
    let (times, unit) = match unit {
        "millisecond" => ("", "millisecond"),
        "second" => ("", "second"),
        "minute" => ("", "minute"),
        "hour" => ("", "hour"),
        "day" => ("", "day"),
        "week" => ("", "week"),
        "month" => ("", "month"),
        "quarter" => ("3 * ", "month"),
        "year" => ("", "year"),
        other => return Err(unknown_unit("date_add", other)),
    };
    Ok(format!(
        "CAST(concat(CAST({times}{n} AS VARCHAR), ' {unit}') AS INTERVAL)"
    ))
}

pub(super) fn unknown_unit(function: &str, unit: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{function}: unknown unit '{unit}' (millisecond, second, minute, hour, day, week, month, quarter, year)"
    ))
}

/// Whole `unit`s from `a` to `b`, toward zero, as Trino's `date_diff`.
pub(super) fn date_diff(unit: &str, a: &str, b: &str) -> Result<String> {
    let seconds = |x: &str| format!("date_part('epoch', CAST({x} AS TIMESTAMP))");
    let per = match unit {
        "millisecond" => Some(0.001),
        "second" => Some(1.0),
        "minute" => Some(60.0),
        "hour" => Some(3600.0),
        "day" => Some(86400.0),
        "week" => Some(604800.0),
        "month" | "quarter" | "year" => None,
        other => return Err(unknown_unit("date_diff", other)),
    };
    if let Some(per) = per {
        return Ok(format!(
            "CAST(trunc(round(({} - {}) * 1000) / {}) AS BIGINT)",
            seconds(b),
            seconds(a),
            per * 1000.0
        ));
    }
    // Calendar months between, less one where the last month is not
    // complete (a plus that many months passes b).
    let months = format!(
        "((date_part('year', {b}) - date_part('year', {a})) * 12 + date_part('month', {b}) - date_part('month', {a}))"
    );
    let whole = format!(
        "CAST(CASE WHEN {months} > 0 AND {a} + {add} > {b} THEN {months} - 1 \
         WHEN {months} < 0 AND {a} + {add} < {b} THEN {months} + 1 ELSE {months} END AS BIGINT)",
        add = interval("month", &months)?,
    );
    Ok(match unit {
        "month" => whole,
        "quarter" => format!("CAST(trunc({whole} / 3.0) AS BIGINT)"),
        _ => format!("CAST(trunc({whole} / 12.0) AS BIGINT)"),
    })
}

/// `CAST(x AS DATE) - CAST(y AS DATE)`, as dbt-trino's `datediff` writes it.
pub(super) fn is_date_difference(expr: &Expr) -> bool {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, DataType};
    let is_date = |e: &Expr| {
        matches!(
            e,
            Expr::Cast {
                data_type: DataType::Date,
                ..
            }
        )
    };
    match expr {
        Expr::Nested(inner) => is_date_difference(inner),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Minus,
            right,
        } => is_date(left) && is_date(right),
        _ => false,
    }
}

/// A date, time or timestamp written as one (a typed literal or a cast).
pub(super) fn is_date_or_time(expr: &Expr) -> bool {
    use datafusion::sql::sqlparser::ast::DataType;
    let temporal = |t: &DataType| {
        matches!(
            t,
            DataType::Date | DataType::Timestamp(..) | DataType::Datetime(_)
        )
    };
    match expr {
        Expr::Nested(inner) => is_date_or_time(inner),
        Expr::TypedString(t) => temporal(&t.data_type),
        Expr::Cast { data_type, .. } => temporal(data_type),
        _ => false,
    }
}

/// The function `EXTRACT(field FROM x)` is in Trino, for Trino's fields
/// (DataFusion's date_part counted DOW from Sunday 0, gave SECOND with its
/// fraction and refused DAY_OF_WEEK, YEAR_OF_WEEK and their short names);
/// `None` for others (EPOCH, MILLISECOND: DataFusion's).
pub(super) fn extract_function(
    field: &datafusion::sql::sqlparser::ast::DateTimeField,
) -> Option<&'static str> {
    use datafusion::sql::sqlparser::ast::DateTimeField as F;
    Some(match field {
        F::Year => "year",
        F::Quarter => "quarter",
        F::Month => "month",
        F::Week(None) => "week",
        F::Day => "day",
        F::DayOfWeek | F::Dow => "day_of_week",
        F::DayOfYear | F::Doy => "day_of_year",
        F::Hour => "hour",
        F::Minute => "minute",
        F::Second => "second",
        F::Custom(name) => match name.value.to_ascii_lowercase().as_str() {
            "day_of_month" => "day",
            "day_of_week" | "dow" => "day_of_week",
            "day_of_year" | "doy" => "day_of_year",
            "week_of_year" => "week",
            "year_of_week" | "yow" => "year_of_week",
            _ => return None,
        },
        _ => return None,
    })
}
