//! The client's session: `X-Trino-*` request headers in, `SET SESSION`
//! statements turned into `X-Trino-Set-Session` headers out.
//!
//! Trino keeps session state in the client: the client sends its user,
//! catalog, schema and session properties with every request, and a
//! `SET SESSION name = value` statement only answers with a
//! `X-Trino-Set-Session: name=value` header that the client adds to its
//! properties. squall does the same, so one client's settings never leak
//! into another's query: properties become per-query settings
//! (`squall.*`, `datafusion.*`). `SET name = value` (DataFusion's form) is
//! taken the same way, and `RESET SESSION name` clears a property.
//!
//! The `X-Presto-*` forms of every header are accepted; the `X-Trino-*`
//! form wins when both are sent. Property values are percent-encoded on the
//! wire both ways.

use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use axum::http::HeaderMap;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionConfig;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::error::ServerError;
use crate::service::{SessionInfo, SessionUpdate};

/// Characters escaped in a session property value on the wire.
const VALUE_ESCAPES: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    ["X-Trino-", "X-Presto-"].iter().find_map(|prefix| {
        headers
            .get(format!("{prefix}{name}"))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    })
}

/// The session of a request, from its headers.
///
/// A `Session` header item that is not `name=value` is a `BadRequest`.
pub fn session_from_headers(headers: &HeaderMap) -> Result<SessionInfo, ServerError> {
    let mut properties = Vec::new();
    let trino: Vec<_> = headers.get_all("X-Trino-Session").iter().collect();
    let values = if trino.is_empty() {
        headers.get_all("X-Presto-Session").iter().collect()
    } else {
        trino
    };
    for value in values {
        let text = value.to_str().map_err(|_| ServerError::BadRequest {
            message: "X-Trino-Session header is not ASCII".into(),
        })?;
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| ServerError::BadRequest {
                    message: format!("invalid session property {item:?}: expected name=value"),
                })?;
            let name = name.trim();
            if name.is_empty() {
                return Err(ServerError::BadRequest {
                    message: format!("invalid session property {item:?}: empty name"),
                });
            }
            let value = percent_decode_str(value.trim())
                .decode_utf8()
                .map_err(|_| ServerError::BadRequest {
                    message: format!("session property {name} is not UTF-8"),
                })?;
            properties.push((name.to_string(), value.into_owned()));
        }
    }
    Ok(SessionInfo {
        user: header(headers, "User").unwrap_or("anonymous").to_string(),
        source: header(headers, "Source").map(str::to_string),
        catalog: header(headers, "Catalog").map(str::to_string),
        schema: header(headers, "Schema").map(str::to_string),
        properties,
    })
}

/// `name=value` as an `X-Trino-Set-Session` header value.
pub fn set_session_header(name: &str, value: &str) -> String {
    format!("{name}={}", utf8_percent_encode(value, VALUE_ESCAPES))
}

/// A statement that changes the client's session instead of running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionStatement {
    Set {
        name: String,
        value: String,
    },
    Reset {
        name: String,
    },
    /// `USE schema` / `USE catalog.schema`.
    Use {
        catalog: Option<String>,
        schema: String,
    },
    /// `PREPARE name FROM statement` (see `crate::prepared`).
    Prepare {
        statement: String,
    },
    /// `DEALLOCATE PREPARE name`.
    Deallocate,
    /// `SET TIME ZONE zone` / `SET TIME ZONE LOCAL`, as written.
    TimeZone {
        zone: String,
    },
}

/// Recognises `SET SESSION name = value`, `SET name = value` /
/// `SET name TO value`, `RESET SESSION name` and `USE [catalog.]schema`
/// (one statement, optional trailing `;`). Values may be quoted with `'`
/// or `"`. Anything else is `None` and runs as SQL.
pub fn parse_session_statement(sql: &str) -> Option<SessionStatement> {
    match crate::prepared::parse(sql) {
        Some(crate::prepared::Prepared::Prepare { statement, .. }) => {
            return Some(SessionStatement::Prepare { statement });
        }
        Some(crate::prepared::Prepared::Deallocate { .. }) => {
            return Some(SessionStatement::Deallocate);
        }
        _ => {}
    }
    let text = sql.trim().trim_end_matches(';').trim();
    let (first, rest) = split_word(text)?;
    if first.eq_ignore_ascii_case("use") {
        return parse_use(rest.trim());
    }
    if first.eq_ignore_ascii_case("reset") {
        let (session, rest) = split_word(rest)?;
        if !session.eq_ignore_ascii_case("session") {
            return None;
        }
        let name = rest.trim();
        return is_name(name).then(|| SessionStatement::Reset {
            name: name.to_string(),
        });
    }
    if !first.eq_ignore_ascii_case("set") {
        return None;
    }
    if let Some((time, after)) = split_word(rest)
        && time.eq_ignore_ascii_case("time")
        && let Some((zone, value)) = split_word(after)
        && zone.eq_ignore_ascii_case("zone")
    {
        return Some(SessionStatement::TimeZone {
            zone: value.trim().to_string(),
        });
    }
    let rest = match split_word(rest) {
        Some((w, r)) if w.eq_ignore_ascii_case("session") => r,
        _ => rest,
    }
    .trim_start();
    let name_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(rest.len());
    let (name, after) = rest.split_at(name_end);
    if !is_name(name) {
        return None;
    }
    let after = after.trim_start();
    let value = if let Some(v) = after.strip_prefix('=') {
        v
    } else {
        let (to, v) = split_word(after)?;
        if !to.eq_ignore_ascii_case("to") {
            return None;
        }
        v
    };
    let value = unquote(value.trim())?;
    Some(SessionStatement::Set {
        name: name.to_string(),
        value,
    })
}

/// `[catalog.]schema` of a `USE`: plain or double-quoted names, folded to
/// lowercase unless quoted, as Trino does.
fn parse_use(target: &str) -> Option<SessionStatement> {
    let mut names = Vec::new();
    let mut rest = target;
    loop {
        let (name, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"')?;
            (quoted[..end].to_string(), &quoted[end + 1..])
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (rest[..end].to_lowercase(), &rest[end..])
        };
        if name.is_empty() {
            return None;
        }
        names.push(name);
        match after.strip_prefix('.') {
            Some(next) => rest = next,
            None if after.trim().is_empty() => break,
            None => return None,
        }
    }
    match names.as_slice() {
        [schema] => Some(SessionStatement::Use {
            catalog: None,
            schema: schema.clone(),
        }),
        [catalog, schema] => Some(SessionStatement::Use {
            catalog: Some(catalog.clone()),
            schema: schema.clone(),
        }),
        _ => None,
    }
}

/// What a session statement answers without running anything: Trino's
/// `updateType` and the change the client makes to its session. A `SET` is
/// checked against `config` first, so an unknown setting or a bad value fails
/// here (as a `Configuration` error) rather than in the client's next query.
pub fn answer_session_statement(
    config: &SessionConfig,
    statement: SessionStatement,
) -> Result<(&'static str, SessionUpdate), DataFusionError> {
    match statement {
        SessionStatement::Set { name, value } => {
            // Trino's own properties are checked as the settings they are
            // read as (`squall_planner::trino_session`), and kept as named.
            if let Some((key, setting)) = squall_planner::trino_session::as_setting(&name, &value)?
            {
                squall_planner::limits::check_session_setting(&key)?;
                let mut config = config.clone();
                config.options_mut().set(&key, &setting).map_err(|e| {
                    DataFusionError::Configuration(format!("{name} = {value}: {e}"))
                })?;
            }
            let update = SessionUpdate {
                set: vec![(name, value)],
                ..SessionUpdate::default()
            };
            Ok(("SET SESSION", update))
        }
        SessionStatement::Reset { name } => {
            let update = SessionUpdate {
                clear: vec![name],
                ..SessionUpdate::default()
            };
            Ok(("RESET SESSION", update))
        }
        // The client keeps the statement; it must be one statement that
        // parses (a syntax error is the PREPARE's, as in Trino).
        SessionStatement::Prepare { statement } => {
            let statements = squall_planner::trino_sql::parse(&statement)?;
            if statements.len() != 1 {
                return Err(DataFusionError::Plan(format!(
                    "PREPARE: a prepared statement is one statement, not {}",
                    statements.len()
                )));
            }
            Ok(("PREPARE", SessionUpdate::default()))
        }
        SessionStatement::Deallocate => Ok(("DEALLOCATE", SessionUpdate::default())),
        // squall's sessions are in UTC: that one is taken, another refused
        // rather than ignored.
        SessionStatement::TimeZone { zone } => {
            let utc = matches!(
                unquote(&zone)
                    .as_deref()
                    .map(str::to_ascii_uppercase)
                    .as_deref(),
                Some("UTC" | "Z" | "+00:00" | "GMT" | "ETC/UTC" | "LOCAL")
            );
            match utc {
                true => Ok(("SET TIME ZONE", SessionUpdate::default())),
                false => Err(DataFusionError::NotImplemented(format!(
                    "SET TIME ZONE {zone}: squall's sessions are in UTC (a timestamp without \
                     a zone is UTC, current_timezone() is UTC); write AT TIME ZONE {zone} \
                     where a timestamp is wanted in that zone"
                ))),
            }
        }
        // squall serves one catalog, and reads any schema name as its own
        // (`planner/src/any_name.rs`): the client's names change, the
        // tables a query finds do not.
        SessionStatement::Use { catalog, schema } => {
            let update = SessionUpdate {
                catalog,
                schema: Some(schema),
                ..SessionUpdate::default()
            };
            Ok(("USE", update))
        }
    }
}

/// The result of a session statement, as Trino sends it: one row, `result = true`.
pub fn session_statement_result() -> Result<RecordBatch, DataFusionError> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "result",
        DataType::Boolean,
        false,
    )]));
    Ok(RecordBatch::try_new(
        schema,
        vec![Arc::new(BooleanArray::from(vec![true]))],
    )?)
}

fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let end = text.find(char::is_whitespace)?;
    Some((&text[..end], &text[end..]))
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !name.starts_with('.')
        && !name.ends_with('.')
}

fn unquote(value: &str) -> Option<String> {
    for q in ['\'', '"'] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            let doubled = format!("{q}{q}");
            let single = inner.replace(&doubled, "");
            return (!single.contains(q)).then(|| inner.replace(&doubled, &q.to_string()));
        }
    }
    let plain = !value.is_empty()
        && !value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"' || c == ';');
    plain.then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn the_session_zone_is_utc() {
        let config = SessionConfig::new();
        for zone in ["'UTC'", "LOCAL", "'Etc/UTC'"] {
            let statement = parse_session_statement(&format!("SET TIME ZONE {zone}")).unwrap();
            let (update_type, _) = answer_session_statement(&config, statement).unwrap();
            assert_eq!(update_type, "SET TIME ZONE");
        }
        let statement = parse_session_statement("set time zone 'America/New_York';").unwrap();
        let e = answer_session_statement(&config, statement)
            .unwrap_err()
            .to_string();
        assert!(e.contains("squall's sessions are in UTC"), "{e}");
    }

    fn set(name: &str, value: &str) -> Option<SessionStatement> {
        Some(SessionStatement::Set {
            name: name.into(),
            value: value.into(),
        })
    }

    #[test]
    fn session_statements() {
        assert_eq!(
            parse_session_statement("SET SESSION squall.shuffle.partitions = 4"),
            set("squall.shuffle.partitions", "4")
        );
        assert_eq!(
            parse_session_statement("set session a.b='x y';"),
            set("a.b", "x y")
        );
        assert_eq!(
            parse_session_statement("SET datafusion.x TO 'it''s'"),
            set("datafusion.x", "it's")
        );
        assert_eq!(parse_session_statement("set a = \"q\""), set("a", "q"));
        assert_eq!(
            parse_session_statement("reset session squall.x"),
            Some(SessionStatement::Reset {
                name: "squall.x".into()
            })
        );
        assert_eq!(parse_session_statement("select 1"), None);
        assert_eq!(
            parse_session_statement("SET TIME ZONE 'UTC'"),
            Some(SessionStatement::TimeZone {
                zone: "'UTC'".into()
            })
        );
        assert_eq!(parse_session_statement("set a = 1; select 2"), None);
        assert_eq!(parse_session_statement("set a = 'x"), None);
        assert_eq!(parse_session_statement("setx a = 1"), None);
        let used = |catalog: Option<&str>, schema: &str| {
            Some(SessionStatement::Use {
                catalog: catalog.map(str::to_string),
                schema: schema.to_string(),
            })
        };
        assert_eq!(
            parse_session_statement("USE Analytics;"),
            used(None, "analytics")
        );
        assert_eq!(
            parse_session_statement("use squall.\"My Schema\""),
            used(Some("squall"), "My Schema")
        );
        assert_eq!(parse_session_statement("use a.b.c"), None);
        assert_eq!(parse_session_statement("use a b"), None);
        assert_eq!(parse_session_statement("user_table"), None);
    }

    #[test]
    fn headers() {
        let mut h = HeaderMap::new();
        h.insert("X-Trino-User", HeaderValue::from_static("alice"));
        h.insert("X-Presto-Catalog", HeaderValue::from_static("squall"));
        h.insert("X-Trino-Schema", HeaderValue::from_static("tpch"));
        h.append("X-Trino-Session", HeaderValue::from_static("a=1, b=x%20y"));
        h.append("X-Trino-Session", HeaderValue::from_static("c=%27q%27"));
        let s = session_from_headers(&h).unwrap();
        assert_eq!(s.user, "alice");
        assert_eq!(s.catalog.as_deref(), Some("squall"));
        assert_eq!(s.schema.as_deref(), Some("tpch"));
        assert_eq!(
            s.properties,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "'q'".into())
            ]
        );
        let mut bad = HeaderMap::new();
        bad.insert("X-Trino-Session", HeaderValue::from_static("novalue"));
        assert!(matches!(
            session_from_headers(&bad),
            Err(ServerError::BadRequest { .. })
        ));
        assert_eq!(set_session_header("k", "a b,c"), "k=a%20b%2Cc");
    }
}
