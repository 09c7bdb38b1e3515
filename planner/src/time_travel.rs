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
        let mut value = k + 4;
        let point = match by {
            Some(Keyword::VERSION) => match solid.get(value).map(|&i| &tokens[i]) {
                Some(Token::Number(n, _)) => match n.parse::<u64>() {
                    Ok(v) => format!("v{v}"),
                    Err(_) => return Err(refused(&format!("version {n} is not a version"))),
                },
                _ => return Err(refused("FOR VERSION AS OF takes a version number")),
            },
            _ => {
                if keyword(value) == Some(Keyword::TIMESTAMP) {
                    value += 1;
                }
                match solid.get(value).map(|&i| &tokens[i]) {
                    Some(Token::SingleQuotedString(text)) => match millis(text) {
                        Some(ms) => format!("t{ms}"),
                        None => {
                            return Err(refused(&format!(
                                "{text:?} is not a time (write TIMESTAMP 'YYYY-MM-DD HH:MM:SS[.fff] [UTC|+hh:mm]')"
                            )));
                        }
                    },
                    _ => {
                        return Err(refused(
                            "FOR TIMESTAMP AS OF takes a timestamp literal (TIMESTAMP '2024-06-01 00:00:00 UTC')",
                        ));
                    }
                }
            }
        };
        return Ok(Some((solid[k - 1], solid[value] + 1, point)));
    }
    Ok(None)
}

/// The milliseconds since the epoch of a timestamp literal's text; without
/// a zone, UTC.
fn millis(text: &str) -> Option<i64> {
    let text = text.trim();
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
        assert!(rewrite("select * from t for timestamp as of now()").is_err());
    }
}
