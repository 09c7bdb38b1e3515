//! Trino's prepared statements: `PREPARE name FROM <statement>`, `EXECUTE
//! name [USING v1, v2, ...]`, `DESCRIBE OUTPUT name`, `DESCRIBE INPUT name`
//! and `DEALLOCATE PREPARE name`, as JDBC, the Go client and the Python
//! client (`legacy_prepared_statements=True`, and `cursor.describe(sql)`)
//! use them.
//!
//! As with session properties, the client keeps the statements: a
//! `PREPARE` is answered with an `X-Trino-Added-Prepare: name=<statement>`
//! header, the client sends all it holds with every request in
//! `X-Trino-Prepared-Statement: name1=<statement>,name2=...`, and a
//! `DEALLOCATE PREPARE` is answered with `X-Trino-Deallocated-Prepare:
//! name`; statements are form-encoded (`+` for a space). So nothing is
//! kept on the server, and every backend answers them alike: the HTTP API
//! writes an `EXECUTE` as its statement with the values in place of its
//! `?` (as `EXECUTE IMMEDIATE`), and a `DESCRIBE` as `DESCRIBE OUTPUT
//! '<statement>'` for the engine (`squall_planner::describe_prepared`).

use axum::http::HeaderMap;
use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::error::ServerError;
use crate::execute_immediate::{numbered, split_top_level, strip_keyword, substitute};
use crate::service::{QueryState, QueryStatus};

/// A prepared-statement statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prepared {
    Prepare { name: String, statement: String },
    Execute { name: String, values: Vec<String> },
    Describe { output: bool, name: String },
    Deallocate { name: String },
}

/// The prepared-statement statement `sql` is, if it is one.
pub fn parse(sql: &str) -> Option<Prepared> {
    let text = sql.trim();
    let text = text.strip_suffix(';').unwrap_or(text).trim_end();
    if let Some(rest) = strip_keyword(text, "PREPARE") {
        let (name, rest) = statement_name(rest.trim_start())?;
        let statement = strip_keyword(rest.trim_start(), "FROM")?.trim();
        return (!statement.is_empty()).then(|| Prepared::Prepare {
            name,
            statement: statement.to_string(),
        });
    }
    if let Some(rest) = strip_keyword(text, "EXECUTE") {
        let (name, rest) = statement_name(rest.trim_start())?;
        // `EXECUTE IMMEDIATE '...'` is not a name.
        if name.eq_ignore_ascii_case("immediate") && rest.trim_start().starts_with('\'') {
            return None;
        }
        let rest = rest.trim();
        let values = match rest.is_empty() {
            true => Vec::new(),
            false => split_top_level(strip_keyword(rest, "USING")?.trim()),
        };
        return Some(Prepared::Execute { name, values });
    }
    if let Some(rest) = strip_keyword(text, "DESCRIBE") {
        let rest = rest.trim_start();
        let (output, rest) = match strip_keyword(rest, "OUTPUT") {
            Some(rest) => (true, rest),
            None => (false, strip_keyword(rest, "INPUT")?),
        };
        let (name, rest) = statement_name(rest.trim_start())?;
        return rest
            .trim()
            .is_empty()
            .then_some(Prepared::Describe { output, name });
    }
    let rest = strip_keyword(text, "DEALLOCATE")?;
    let (name, rest) = statement_name(strip_keyword(rest.trim_start(), "PREPARE")?.trim_start())?;
    rest.trim()
        .is_empty()
        .then_some(Prepared::Deallocate { name })
}

/// A statement's name at the start of `s` (an identifier, or one in double
/// quotes) and what follows it.
fn statement_name(s: &str) -> Option<(String, &str)> {
    if let Some(quoted) = s.strip_prefix('"') {
        let end = quoted.find('"')?;
        return Some((quoted[..end].to_string(), &quoted[end + 1..]));
    }
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    let name = &s[..end];
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()))
        .then(|| (name.to_string(), &s[end..]))
}

/// The prepared statements a request carries: `(name, statement)`.
pub fn from_headers(headers: &HeaderMap) -> Result<Vec<(String, String)>, ServerError> {
    let mut statements = Vec::new();
    for header in ["X-Trino-Prepared-Statement", "X-Presto-Prepared-Statement"] {
        for value in headers.get_all(header) {
            let text = value.to_str().map_err(|_| ServerError::BadRequest {
                message: format!("{header} header is not ASCII"),
            })?;
            for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let (name, encoded) =
                    item.split_once('=')
                        .ok_or_else(|| ServerError::BadRequest {
                            message: format!("{header}: expected name=statement, found {item:?}"),
                        })?;
                statements.push((name.trim().to_string(), form_decoded(encoded.trim())?));
            }
        }
        if !statements.is_empty() {
            break;
        }
    }
    Ok(statements)
}

fn form_decoded(encoded: &str) -> Result<String, ServerError> {
    percent_decode_str(&encoded.replace('+', " "))
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| ServerError::BadRequest {
            message: "X-Trino-Prepared-Statement: a statement is not UTF-8".into(),
        })
}

/// The statement to run for `prepared`, given the client's `statements`;
/// a `PREPARE` or `DEALLOCATE` runs as written (the query service answers
/// it, and [`response_headers`] tell the client).
pub fn rewrite(
    sql: &str,
    prepared: &Prepared,
    statements: &[(String, String)],
) -> Result<String, ServerError> {
    let find = |name: &str| {
        statements
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| {
                statements
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
            })
            .map(|(_, s)| s.as_str())
            .ok_or_else(|| ServerError::PreparedStatementNotFound {
                name: name.to_string(),
            })
    };
    match prepared {
        Prepared::Prepare { .. } => Ok(sql.to_string()),
        Prepared::Deallocate { name } => find(name).map(|_| sql.to_string()),
        Prepared::Execute { name, values } => {
            substitute(find(name)?, values, &format!("EXECUTE {name}"))
        }
        Prepared::Describe { output, name } => {
            let statement = numbered(find(name)?);
            let kind = if *output { "OUTPUT" } else { "INPUT" };
            Ok(format!(
                "DESCRIBE {kind} '{}'",
                statement.replace('\'', "''")
            ))
        }
    }
}

/// The headers that tell the client what a finished `PREPARE` or
/// `DEALLOCATE PREPARE` changed.
pub fn response_headers(status: &QueryStatus) -> Option<(&'static str, String)> {
    if status.state != QueryState::Finished {
        return None;
    }
    match parse(&status.query)? {
        Prepared::Prepare { name, statement } => Some((
            "x-trino-added-prepare",
            format!(
                "{name}={}",
                utf8_percent_encode(&statement, NON_ALPHANUMERIC)
            ),
        )),
        Prepared::Deallocate { name } => Some(("x-trino-deallocated-prepare", name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_statement_statements_are_recognised() {
        assert_eq!(
            parse("PREPARE st_1 FROM select * from t where a = ?;"),
            Some(Prepared::Prepare {
                name: "st_1".into(),
                statement: "select * from t where a = ?".into()
            })
        );
        assert_eq!(
            parse("execute st_1 using 1, 'a,b', DATE '2020-01-01'"),
            Some(Prepared::Execute {
                name: "st_1".into(),
                values: vec!["1".into(), "'a,b'".into(), "DATE '2020-01-01'".into()]
            })
        );
        assert_eq!(
            parse("EXECUTE \"My st\""),
            Some(Prepared::Execute {
                name: "My st".into(),
                values: vec![]
            })
        );
        assert_eq!(
            parse("describe output st_1"),
            Some(Prepared::Describe {
                output: true,
                name: "st_1".into()
            })
        );
        assert_eq!(
            parse("DEALLOCATE PREPARE st_1"),
            Some(Prepared::Deallocate {
                name: "st_1".into()
            })
        );
        for other in [
            "EXECUTE IMMEDIATE 'select 1'",
            "describe nation",
            "describe output 'select 1'",
            "prepared_things",
            "select 1",
            "PREPARE st_1 AS select 1",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn statements_come_from_the_header_form_decoded() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "X-Trino-Prepared-Statement",
            "a=select+%2A+from+t+where+x+%3D+%3F,b=select%201"
                .parse()
                .unwrap(),
        );
        let statements = from_headers(&headers).unwrap();
        assert_eq!(
            statements,
            vec![
                ("a".to_string(), "select * from t where x = ?".to_string()),
                ("b".to_string(), "select 1".to_string())
            ]
        );
        let run = |sql: &str| rewrite(sql, &parse(sql).unwrap(), &statements);
        assert_eq!(
            run("EXECUTE a USING 'it''s'").unwrap(),
            "select * from t where x = ('it''s')"
        );
        assert_eq!(
            run("DESCRIBE INPUT a").unwrap(),
            "DESCRIBE INPUT 'select * from t where x = $1'"
        );
        assert!(
            run("EXECUTE a USING 1, 2")
                .unwrap_err()
                .to_string()
                .contains("2 values given for 1 parameters")
        );
        for sql in ["EXECUTE c", "DEALLOCATE PREPARE c", "DESCRIBE OUTPUT c"] {
            assert_eq!(
                run(sql).unwrap_err().to_string(),
                "Prepared statement not found: c"
            );
        }
    }
}
