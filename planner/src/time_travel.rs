//! Trino's time travel: `orders FOR VERSION AS OF 3` and `orders FOR
//! TIMESTAMP AS OF TIMESTAMP '2024-06-01 00:00:00 UTC'` read a Delta or
//! Iceberg table as of a version (a Delta version, an Iceberg snapshot id)
//! or a time.
//!
//! sqlparser does not parse the clause, so the text names the table as of
//! that point instead (`"orders@v3"`, `"orders@t1717200000000"`: the time
//! in milliseconds since the epoch), and the catalog reads the table at it
//! under that name (`catalog::named::travel_name`): a table of its own,
//! never brought up to date, planned and run like any other. A time
//! without a zone is UTC.

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Word};

/// `sql` with each table's time travel clause turned into the name of the
/// table at that point; `None` when it has none.
pub fn rewrite(sql: &str) -> Result<Option<String>> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("version") && !lower.contains("timestamp") {
        return Ok(None);
    }
    let Ok(mut tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Ok(None);
    };
    let mut changed = false;
    while let Some((table, end, point)) = next_clause(&tokens)? {
        let Token::Word(word) = &tokens[table] else {
            return Err(refused("it follows no table name"));
        };
        // An unquoted name is read in lowercase; the new one is quoted.
        let name = match word.quote_style {
            Some(_) => word.value.clone(),
            None => word.value.to_lowercase(),
        };
        tokens[table] = Token::Word(Word {
            value: format!("{name}@{point}"),
            quote_style: Some('"'),
            keyword: Keyword::NoKeyword,
        });
        // The clause and the space before it.
        tokens.drain(table + 1..end);
        changed = true;
    }
    Ok(changed.then(|| tokens.iter().map(crate::trino_sql::token_text).collect()))
}

/// The first time travel clause in `tokens`: the index of the table name
/// before it, the index past the clause's last token, and the point it
/// names (`v3`, `t<millis>`).
fn next_clause(tokens: &[Token]) -> Result<Option<(usize, usize, String)>> {
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let keyword = |k: usize| match tokens.get(*solid.get(k)?)? {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    for k in 1..solid.len() {
        let by = keyword(k + 1);
        if keyword(k) != Some(Keyword::FOR)
            || !matches!(by, Some(Keyword::VERSION | Keyword::TIMESTAMP))
            || keyword(k + 2) != Some(Keyword::AS)
            || keyword(k + 3) != Some(Keyword::OF)
        {
            continue;
        }
        let value = k + 4;
        let point = match by {
            Some(Keyword::VERSION) => match solid.get(value).map(|&i| &tokens[i]) {
                Some(Token::Number(n, _)) => match n.parse::<u64>() {
                    Ok(v) => format!("v{v}"),
                    Err(_) => return Err(refused(&format!("version {n} is not a version"))),
                },
                _ => return Err(refused("FOR VERSION AS OF takes a version number")),
            },
            _ => {
                let Some(&start) = solid.get(value) else {
                    return Err(refused("FOR TIMESTAMP AS OF takes a time"));
                };
                let (ms, end) = time_point(&tokens[start..])?;
                return Ok(Some((solid[k - 1], start + end, format!("t{ms}"))));
            }
        };
        return Ok(Some((solid[k - 1], solid[value] + 1, point)));
    }
    Ok(None)
}

/// The time `tokens` begin with, in milliseconds since the epoch, and the
/// number of tokens it takes: a timestamp literal (`TIMESTAMP '2024-06-01
/// 00:00:00 Europe/Vienna'`, a zone's name or offset, none: UTC), or any
/// expression of constants that gives a time (`current_timestamp -
/// INTERVAL '1' DAY`, `date_add('day', -1, now())`), evaluated once, as the
/// statement is read.
fn time_point(tokens: &[Token]) -> Result<(i64, usize)> {
    use datafusion::sql::sqlparser::ast::Expr;
    let mut parser = Parser::new(&crate::trino_dialect::TrinoDialect).with_tokens(tokens.to_vec());
    let expr = parser
        .parse_expr()
        .map_err(|e| refused(&format!("FOR TIMESTAMP AS OF takes a time: {e}")))?;
    // The expression's tokens, not the space after it.
    let end = (0..parser.index().min(tokens.len()))
        .rev()
        .find(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .map_or(0, |i| i + 1);
    let literal = match &expr {
        Expr::Value(v) => v.value.clone().into_string(),
        Expr::TypedString(t)
            if t.data_type
                .to_string()
                .to_ascii_uppercase()
                .starts_with("TIMESTAMP") =>
        {
            t.value.value.clone().into_string()
        }
        _ => None,
    };
    let ms = match literal {
        Some(text) => millis(&text).ok_or_else(|| {
            refused(&format!(
                "{text:?} is not a time (write TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.fff] [UTC|+hh:mm|Europe/Vienna]')"
            ))
        })?,
        None => evaluated_millis(&expr.to_string())?,
    };
    Ok((ms, end))
}

/// The value of `sql`, an expression of constants, as a time in
/// milliseconds since the epoch; Trino's functions read as everywhere else.
fn evaluated_millis(sql: &str) -> Result<i64> {
    use datafusion::common::{DFSchema, ScalarValue};
    use datafusion::execution::SessionStateBuilder;
    use datafusion::logical_expr::Expr as LogicalExpr;
    use datafusion::logical_expr::simplify::SimplifyContext;
    use datafusion::optimizer::simplify_expressions::ExprSimplifier;
    use datafusion::sql::parser::Statement as DFStatement;
    use datafusion::sql::sqlparser::ast::{ExprWithAlias, SelectItem, SetExpr, Statement};
    use std::sync::Arc;

    let not_constant = |e: &dyn std::fmt::Display| {
        refused(&format!(
            "FOR TIMESTAMP AS OF {sql}: not a time of constants ({e})"
        ))
    };
    let statement = crate::trino_sql::statements(&format!("SELECT {sql}"))?
        .pop_front()
        .ok_or_else(|| not_constant(&"no expression"))?;
    let statement = crate::trino_functions::rewrite(
        statement,
        &crate::trino_functions::SessionIdentity::default(),
        "squall",
        "default",
    )?;
    let expr = match statement {
        DFStatement::Statement(s) => match *s {
            Statement::Query(q) => match *q.body {
                SetExpr::Select(select) => match select.projection.into_iter().next() {
                    Some(
                        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. },
                    ) => Some(expr),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| not_constant(&"no expression"))?;
    let state = SessionStateBuilder::new().with_default_features().build();
    let schema = DFSchema::empty();
    let logical = state
        .create_logical_expr_from_sql_expr(ExprWithAlias { expr, alias: None }, &schema)
        .map_err(|e| not_constant(&e))?;
    // Folded to one value as the optimizer folds constants (`now()` the
    // time it is read).
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::new(schema.clone()))
            .with_config_options(Arc::clone(state.config_options()))
            .with_current_time()
            .build(),
    );
    let value = match simplifier
        .coerce(logical, &schema)
        .and_then(|e| simplifier.simplify(e))
        .map_err(|e| not_constant(&e))?
    {
        LogicalExpr::Literal(value, _) => value,
        other => return Err(not_constant(&format!("{other} is no one value"))),
    };
    let ms = match &value {
        ScalarValue::TimestampSecond(Some(v), _) => Some(v.saturating_mul(1000)),
        ScalarValue::TimestampMillisecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => Some(v.div_euclid(1000)),
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(v.div_euclid(1_000_000)),
        ScalarValue::Date32(Some(d)) => Some(i64::from(*d) * 86_400_000),
        ScalarValue::Date64(Some(v)) => Some(*v),
        ScalarValue::Utf8(Some(t))
        | ScalarValue::LargeUtf8(Some(t))
        | ScalarValue::Utf8View(Some(t)) => millis(t),
        _ => None,
    };
    ms.ok_or_else(|| {
        refused(&format!(
            "FOR TIMESTAMP AS OF {sql} is {value} ({}), not a time",
            value.data_type()
        ))
    })
}

/// The milliseconds since the epoch of a timestamp literal's text; without
/// a zone, UTC; a zone by its name (`Europe/Vienna`) as Trino writes one.
fn millis(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Some((local, zone)) = text.rsplit_once(' ')
        && zone.chars().any(|c| c.is_ascii_alphabetic())
        && zone != "UTC"
        && let Ok(zone) = zone.parse::<datafusion::arrow::array::timezone::Tz>()
    {
        let local = millis(local)?;
        let naive = chrono::DateTime::from_timestamp_millis(local)?.naive_utc();
        return naive
            .and_local_timezone(zone)
            .earliest()
            .map(|t| t.timestamp_millis());
    }
    let text = text
        .strip_suffix(" UTC")
        .or_else(|| text.strip_suffix('Z'))
        .map_or(text.to_string(), |t| format!("{t} +00:00"));
    let zoned = [
        "%Y-%m-%d %H:%M:%S%.f %:z",
        "%Y-%m-%dT%H:%M:%S%.f %:z",
        "%Y-%m-%d %H:%M:%S%.f%:z",
    ];
    if let Some(t) = zoned
        .iter()
        .find_map(|f| chrono::DateTime::parse_from_str(&text, f).ok())
    {
        return Some(t.timestamp_millis());
    }
    let naive = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
    ];
    if let Some(t) = naive
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(&text, f).ok())
    {
        return Some(t.and_utc().timestamp_millis());
    }
    chrono::NaiveDate::parse_from_str(&text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc().timestamp_millis())
}

fn refused(why: &str) -> DataFusionError {
    DataFusionError::Plan(format!("time travel: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_travel_names_the_table_at_its_point() {
        let got = |sql| rewrite(sql).unwrap();
        assert_eq!(
            got("select * from Orders for version as of 3 o where o.x = 1").as_deref(),
            Some("select * from \"orders@v3\" o where o.x = 1")
        );
        assert_eq!(
            got("SELECT 1 FROM db.\"T\" FOR TIMESTAMP AS OF TIMESTAMP '2024-01-01 00:00:01 UTC'")
                .as_deref(),
            Some("SELECT 1 FROM db.\"T@t1704067201000\"")
        );
        assert_eq!(
            got("select * from a for timestamp as of '2024-01-01 02:00:00 +02:00' join b for version as of 0 on true").as_deref(),
            Some("select * from \"a@t1704067200000\" join \"b@v0\" on true")
        );
        assert_eq!(got("select 'for version as of 3', version from t"), None);
        assert!(rewrite("select * from t for version as of x").is_err());
        // A zone by its name, as Trino's documentation writes it.
        assert_eq!(
            got("select * from t for timestamp as of timestamp '2022-03-23 09:59:29.803 Europe/Vienna' v").as_deref(),
            Some("select * from \"t@t1648025969803\" v")
        );
    }

    #[test]
    fn time_travel_evaluates_an_expression_of_constants() {
        let point = |sql: &str| {
            let text = rewrite(sql).unwrap().unwrap();
            let ms: i64 = text
                .split("\"t@t")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            (ms, text)
        };
        let (ms, text) = point(
            "select * from t for timestamp as of timestamp '2024-01-02 00:00:00' - interval '1' day where x = 1",
        );
        assert_eq!(
            (ms, text.as_str()),
            (
                1704067200000,
                "select * from \"t@t1704067200000\" where x = 1"
            )
        );
        let (ms, text) = point(
            "select * from t for timestamp as of date_add('hour', 2, timestamp '2024-01-01 00:00:00') o join u on true",
        );
        assert_eq!(
            (ms, text.as_str()),
            (
                1704074400000,
                "select * from \"t@t1704074400000\" o join u on true"
            )
        );
        let (ms, text) =
            point("select * from t FOR TIMESTAMP AS OF (current_timestamp - INTERVAL '1' DAY), u");
        let now = chrono::Utc::now().timestamp_millis();
        assert!(
            (now - 86_400_000 - ms).abs() < 60_000,
            "{ms} is not a day before {now}"
        );
        assert!(text.ends_with("\", u"), "{text}");
        let (ms, _) = point("select * from t for timestamp as of date '2024-01-01'");
        assert_eq!(ms, 1704067200000);
        // A column, a number, a NULL: no time.
        for sql in [
            "select * from t for timestamp as of x",
            "select * from t for timestamp as of 42",
            "select * from t for timestamp as of null",
            "select * from t for timestamp as of",
        ] {
            let e = rewrite(sql).unwrap_err().to_string();
            assert!(e.contains("time travel"), "{sql}: {e}");
        }
    }
}
