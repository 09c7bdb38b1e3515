//! `EXECUTE IMMEDIATE '<sql>' USING v1, v2, ...`: how Trino clients send a
//! parameterized query (the Python client's `cursor.execute(sql, params)`,
//! JDBC's prepared statements). The client writes each parameter as a SQL
//! literal (`1`, `'F'`, `DATE '1993-01-01'`, `DECIMAL '0.05'`, `NULL`); the
//! statement run is `<sql>` with its `?` placeholders, in order, replaced by
//! those literals. A `?` inside a string literal, a quoted identifier or a
//! comment is not a placeholder.

use crate::error::ServerError;

/// The statement `sql` stands for when it is an `EXECUTE IMMEDIATE`; `None`
/// when it is not one.
pub fn expand(sql: &str) -> Result<Option<String>, ServerError> {
    let bad = |message: String| ServerError::BadRequest { message };
    let trimmed = sql.trim_start();
    let Some(rest) =
        strip_keyword(trimmed, "EXECUTE").and_then(|r| strip_keyword(r.trim_start(), "IMMEDIATE"))
    else {
        return Ok(None);
    };
    let rest = rest.trim_start();
    let (statement, rest) = string_literal(rest).ok_or_else(|| {
        bad("EXECUTE IMMEDIATE: expected the statement as a string literal".into())
    })?;
    let rest = rest.trim();
    let rest = rest.strip_suffix(';').unwrap_or(rest).trim_end();
    let values = if rest.is_empty() {
        Vec::new()
    } else {
        let list = strip_keyword(rest, "USING")
            .ok_or_else(|| bad(format!("EXECUTE IMMEDIATE: expected USING, found {rest:?}")))?;
        split_top_level(list.trim())
    };
    substitute(&statement, &values, "EXECUTE IMMEDIATE").map(Some)
}

/// `statement` with its `?` placeholders, in order, replaced by `values`
/// (SQL literals, each parenthesized); `what` names the statement in an
/// error.
pub(crate) fn substitute(
    statement: &str,
    values: &[String],
    what: &str,
) -> Result<String, ServerError> {
    let bad = |message: String| ServerError::BadRequest { message };
    let mut out = String::with_capacity(statement.len() + 16 * values.len());
    let mut used = 0;
    for piece in scan(statement) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Placeholder => {
                let value = values.get(used).ok_or_else(|| {
                    bad(format!(
                        "{what}: the statement has more parameters than the {} values given",
                        values.len()
                    ))
                })?;
                out.push('(');
                out.push_str(value);
                out.push(')');
                used += 1;
            }
        }
    }
    if used != values.len() {
        return Err(bad(format!(
            "{what}: {} values given for {used} parameters",
            values.len()
        )));
    }
    Ok(out)
}

/// `statement` with its `?` placeholders written `$1`, `$2`, ... in order.
pub(crate) fn numbered(statement: &str) -> String {
    let mut out = String::with_capacity(statement.len());
    let mut n = 0;
    for piece in scan(statement) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Placeholder => {
                n += 1;
                out.push_str(&format!("${n}"));
            }
        }
    }
    out
}

/// `s` after `keyword` (any case) and a word boundary.
pub(crate) fn strip_keyword<'a>(s: &'a str, keyword: &str) -> Option<&'a str> {
    let head = s.get(..keyword.len())?;
    let rest = &s[keyword.len()..];
    (head.eq_ignore_ascii_case(keyword)
        && rest
            .chars()
            .next()
            .is_none_or(|c| !c.is_alphanumeric() && c != '_'))
    .then_some(rest)
}

/// A `'...'` literal at the start of `s` (`''` is a quote): its text and
/// what follows it.
fn string_literal(s: &str) -> Option<(String, &str)> {
    let mut chars = s.char_indices();
    if chars.next()?.1 != '\'' {
        return None;
    }
    let mut text = String::new();
    let mut chars = chars.peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\'' {
            if chars.peek().map(|(_, c)| *c) == Some('\'') {
                chars.next();
                text.push('\'');
            } else {
                return Some((text, &s[i + 1..]));
            }
        } else {
            text.push(c);
        }
    }
    None
}

/// `list` split at its commas outside quotes, brackets and parentheses.
pub(crate) fn split_top_level(list: &str) -> Vec<String> {
    let (mut out, mut current, mut depth) = (Vec::new(), String::new(), 0i32);
    let mut quote: Option<char> = None;
    for c in list.chars() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    current.push(c);
                }
                '(' | '[' => {
                    depth += 1;
                    current.push(c);
                }
                ')' | ']' => {
                    depth -= 1;
                    current.push(c);
                }
                ',' if depth == 0 => {
                    out.push(current.trim().to_string());
                    current.clear();
                }
                _ => current.push(c),
            },
        }
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

enum Piece<'a> {
    Text(&'a str),
    Placeholder,
}

/// `sql` as text and `?` placeholders: a `?` in a string literal, a quoted
/// identifier or a comment is text.
fn scan(sql: &str) -> Vec<Piece<'_>> {
    let bytes = sql.as_bytes();
    let (mut pieces, mut start, mut i) = (Vec::new(), 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'?' => {
                pieces.push(Piece::Text(&sql[start..i]));
                pieces.push(Piece::Placeholder);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    pieces.push(Piece::Text(&sql[start.min(sql.len())..]));
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_the_values_in_order() {
        let sql = "EXECUTE IMMEDIATE 'select * from t where a = ? and b < ? and c = ''?''' \
                   USING 1, DATE '1993-01-01'";
        assert_eq!(
            expand(sql).unwrap().unwrap(),
            "select * from t where a = (1) and b < (DATE '1993-01-01') and c = '?'"
        );
        let sql =
            "execute immediate 'select ?, ? /* ? */, \"?\" -- ?\n' using 'it''s, ok', ARRAY[1, 2]";
        assert_eq!(
            expand(sql).unwrap().unwrap(),
            "select ('it''s, ok'), (ARRAY[1, 2]) /* ? */, \"?\" -- ?\n"
        );
        assert_eq!(
            expand("execute immediate 'select 1'").unwrap().unwrap(),
            "select 1"
        );
    }

    #[test]
    fn other_statements_and_bad_forms() {
        assert!(expand("select 1").unwrap().is_none());
        assert!(expand("execute immediately").unwrap().is_none());
        assert!(expand("EXECUTE IMMEDIATE 'select ?' USING 1, 2").is_err());
        assert!(expand("EXECUTE IMMEDIATE 'select ?, ?' USING 1").is_err());
        assert!(expand("EXECUTE IMMEDIATE select 1").is_err());
        assert!(expand("EXECUTE IMMEDIATE 'select 1' WITH 2").is_err());
    }
}
