//! Trino's interval ranges, `INTERVAL '2-3' YEAR TO MONTH` and `INTERVAL
//! '1 02:03:04.5' DAY TO SECOND` (and the other ranges of one kind), which
//! DataFusion refuses ("Unsupported Interval Expression"), written as the
//! interval of each field's value; the literal pass
//! ([`crate::decimal_literals`]) calls it for each interval it meets.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::ast;

/// `INTERVAL '2-3' YEAR TO MONTH`, `INTERVAL '1 02:03:04.5' DAY TO
/// SECOND` and the other ranges of Trino's and standard SQL (DataFusion:
/// "Unsupported Interval Expression"), as the interval of each field's
/// value (`INTERVAL '2 YEAR 3 MONTH'`); a leading `-` negates them all.
/// `None` where the fields are not a range of one kind.
pub(crate) fn interval_range(interval: &ast::Interval) -> Result<Option<ast::Expr>> {
    use ast::DateTimeField as F;
    const YEAR_MONTH: [(&str, F); 2] = [("YEAR", F::Year), ("MONTH", F::Month)];
    const DAY_SECOND: [(&str, F); 4] = [
        ("DAY", F::Day),
        ("HOUR", F::Hour),
        ("MINUTE", F::Minute),
        ("SECOND", F::Second),
    ];
    let (Some(first), Some(last)) = (&interval.leading_field, &interval.last_field) else {
        return Ok(None);
    };
    let position = |units: &[(&str, F)], f: &F| units.iter().position(|(_, u)| u == f);
    let units: Vec<&str> = match [&YEAR_MONTH[..], &DAY_SECOND[..]]
        .into_iter()
        .find_map(|units| Some((units, position(units, first)?, position(units, last)?)))
    {
        Some((units, a, b)) if a < b => units[a..=b].iter().map(|(name, _)| *name).collect(),
        _ => return Ok(None),
    };
    let refused = |text: &str| {
        DataFusionError::Plan(format!(
            "invalid INTERVAL '{text}' {first} TO {last}: expected {} values ({})",
            units.len(),
            match units[0] {
                "YEAR" => "'years-months'",
                _ => "'days hours:minutes:seconds', from the first field given",
            }
        ))
    };
    let ast::Expr::Value(v) = interval.value.as_ref() else {
        return Ok(None);
    };
    let Some(text) = v.value.clone().into_string() else {
        return Ok(None);
    };
    let trimmed = text.trim();
    let (sign, digits) = match trimmed.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", trimmed.strip_prefix('+').unwrap_or(trimmed)),
    };
    let values: Vec<&str> = digits.split([' ', ':', '-']).collect();
    let number = |x: &&str| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit() || c == '.');
    if values.len() != units.len() || !values.iter().all(number) {
        return Err(refused(&text));
    }
    let parts: Vec<String> = values
        .iter()
        .zip(&units)
        .map(|(value, unit)| format!("{sign}{value} {unit}"))
        .collect();
    crate::trino_sql::expression(
        &format!("INTERVAL '{}'", parts.join(" ")),
        "an interval range",
    )
    .map(Some)
}
