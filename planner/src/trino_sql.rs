//! Trino's clauses that squall's SQL parser does not know and that change
//! nothing squall does, taken out of the text before it is parsed:
//! `CREATE [OR REPLACE] VIEW v SECURITY DEFINER|INVOKER AS ...`, which
//! dbt-trino writes for every view (squall runs a view's query with the
//! caller's rights either way: it has no users' grants).

use std::borrow::Cow;
use std::collections::VecDeque;

use datafusion::error::Result;
use datafusion::sql::parser::Statement;

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// The statements of `sql`, as squall's parser reads them after
/// [`prepare`]: what every entry point (a query, the API's checks) parses.
/// Text whose expressions would nest too deep is refused before it is
/// parsed ([`crate::nesting`]).
pub fn parse(sql: &str) -> Result<VecDeque<Statement>> {
    crate::nesting::check(sql)?;
    match crate::time_travel::rewrite(sql)? {
        Some(travelled) => statements(&prepare(&travelled)),
        None => statements(&prepare(sql)),
    }
}

/// How deep the SQL parser may recurse: subqueries nested 100 deep and
/// more (generated SQL nests them; the parser's default of 50 refused
/// about 25). The parser and DataFusion's planner grow their stacks where
/// they recurse (the `recursive` crate), and expressions' own depth is
/// [`crate::nesting`]'s to bound.
pub const RECURSION_LIMIT: usize = 512;

/// The statements of text squall's parser reads as it is (no [`prepare`]).
pub fn statements(sql: &str) -> Result<VecDeque<Statement>> {
    datafusion::sql::parser::DFParserBuilder::new(sql)
        .with_dialect(&crate::trino_dialect::TrinoDialect)
        .with_recursion_limit(RECURSION_LIMIT)
        .build()?
        .parse_statements()
}

/// `token` as SQL text that reads back as the same token. sqlparser's
/// `Display` writes a string's value between quotes as it is, so a string
/// holding a quote (`'it''s'`, read as `it's`) came back unterminated, and
/// a statement squall rewrote token by token failed ("Unterminated string
/// literal") if it held one.
pub fn token_text(token: &Token) -> String {
    let quoted = |s: &str| format!("'{}'", s.replace('\'', "''"));
    match token {
        // E'...' and U&'...' hold their value, escapes already read.
        Token::SingleQuotedString(s)
        | Token::EscapedStringLiteral(s)
        | Token::UnicodeStringLiteral(s) => quoted(s),
        Token::NationalStringLiteral(s) => format!("N{}", quoted(s)),
        Token::DoubleQuotedString(s) => format!("\"{}\"", s.replace('"', "\"\"")),
        Token::Word(w) if w.quote_style == Some('"') => {
            format!("\"{}\"", w.value.replace('"', "\"\""))
        }
        other => other.to_string(),
    }
}

/// `statement` (or the statement an EXPLAIN explains) walked by a rewriter
/// of its syntax tree; DataFusion's own statements (`COPY`, `CREATE
/// EXTERNAL TABLE`) as they are.
pub fn rewritten<V>(statement: Statement, rewriter: &mut V) -> Result<Statement>
where
    V: datafusion::sql::sqlparser::ast::VisitorMut<Break = datafusion::error::DataFusionError>,
{
    use datafusion::sql::sqlparser::ast::VisitMut;
    match statement {
        Statement::Statement(mut sql) => {
            if let std::ops::ControlFlow::Break(e) = sql.visit(rewriter) {
                return Err(e);
            }
            Ok(Statement::Statement(sql))
        }
        Statement::Explain(mut explain) => {
            explain.statement = Box::new(rewritten(*explain.statement, rewriter)?);
            Ok(Statement::Explain(explain))
        }
        other => Ok(other),
    }
}

/// The text of `sql`'s first statement after `rewrite` (the rewriters'
/// unit tests).
#[cfg(test)]
pub(crate) fn rewritten_text(sql: &str, rewrite: fn(Statement) -> Result<Statement>) -> String {
    let statement = parse(sql).unwrap().pop_front().unwrap();
    rewrite(statement).unwrap().to_string()
}

/// Whether `e` or any expression within it is one `found` picks.
pub fn holds(
    e: &datafusion::sql::sqlparser::ast::Expr,
    found: impl Fn(&datafusion::sql::sqlparser::ast::Expr) -> bool,
) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(e, |x| {
        if found(x) {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// An SQL expression squall wrote (`what` names the rewrite, for the
/// internal error a mistake of squall's would be).
pub fn expression(sql: &str, what: &str) -> Result<datafusion::sql::sqlparser::ast::Expr> {
    use datafusion::sql::sqlparser::parser::Parser;
    Parser::new(&crate::trino_dialect::TrinoDialect)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| datafusion::error::DataFusionError::Internal(format!("{what}: {e}: {sql}")))
}

/// `sql` as squall's parser reads it: without Trino's view `SECURITY`
/// clause, with Trino's types in casts written as the parser's
/// ([`trino_types`]), hexadecimal integers in decimal
/// ([`crate::hex_literals`]), the bare items of `VALUES 1, 2` as rows
/// ([`crate::bare_values`]) and `SHOW SESSION` as its query
/// ([`crate::show_session`]); as it is when it has none of them (or does
/// not tokenize: the parser then says why).
pub fn prepare(sql: &str) -> Cow<'_, str> {
    let sql = match without_security(sql) {
        Cow::Borrowed(sql) => trino_types(sql).map_or(Cow::Borrowed(sql), Cow::Owned),
        Cow::Owned(sql) => Cow::Owned(trino_types(&sql).unwrap_or(sql)),
    };
    let sql = match without_explain_options(&sql) {
        Some(plain) => Cow::Owned(plain),
        None => sql,
    };
    let sql = match without_session_keyword(&sql) {
        Some(plain) => Cow::Owned(plain),
        None => sql,
    };
    let sql = match crate::hex_literals::in_decimal(&sql) {
        Some(decimal) => Cow::Owned(decimal),
        None => sql,
    };
    let sql = match crate::bare_values::rows_in_parentheses(&sql) {
        Some(rows) => Cow::Owned(rows),
        None => sql,
    };
    match crate::show_session::rewrite(&sql) {
        Some(query) => Cow::Owned(query),
        None => sql,
    }
}

/// `EXPLAIN (TYPE DISTRIBUTED) ...` and Trino's other EXPLAIN options that
/// squall's EXPLAIN answers anyway (`TYPE LOGICAL`, `TYPE DISTRIBUTED`,
/// `TYPE IO`, `FORMAT TEXT`: it shows the staged plan, as text), without
/// them; `None` when there are none (or others, which DataFusion names).
fn without_explain_options(sql: &str) -> Option<String> {
    let trimmed = sql.trim_start();
    if !trimmed.get(..7)?.eq_ignore_ascii_case("explain") {
        return None;
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let explain = solid(&tokens, 0)?;
    let mut open = solid(&tokens, explain + 1)?;
    if matches!(&tokens[open], Token::Word(w) if w.keyword == Keyword::ANALYZE) {
        open = solid(&tokens, open + 1)?;
    }
    if tokens[open] != Token::LParen {
        return None;
    }
    let close = open + tokens[open..].iter().position(|t| *t == Token::RParen)?;
    let words: Vec<String> = tokens[open + 1..close]
        .iter()
        .filter_map(|t| match t {
            Token::Word(w) => Some(w.value.to_ascii_uppercase()),
            _ => None,
        })
        .collect();
    let known = words.chunks(2).all(|option| {
        matches!(
            option,
            [t, v] if (t == "TYPE" && matches!(v.as_str(), "LOGICAL" | "DISTRIBUTED" | "IO"))
                || (t == "FORMAT" && v == "TEXT")
        )
    });
    if words.is_empty() || !known {
        return None;
    }
    Some(
        tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < open || *i > close)
            .map(|(_, t)| token_text(t))
            .collect(),
    )
}

/// What a parenthesis the type pass follows is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Paren {
    Other,
    /// `CAST(` or `TRY_CAST(`: `typed` once its `AS` is seen, `json` when
    /// its type is JSON, `nested` when its type is an array, map or row
    /// (written as `squall_json_cast`).
    Cast {
        typed: bool,
        json: bool,
        nested: bool,
    },
}

/// Trino's casts to types squall's parser does not have, and Trino's JSON
/// literal, written as squall's functions: `CAST(x AS ARRAY(T))`, `MAP(K,
/// V)` and `ROW(a T, ...)` (also nested) as `squall_json_cast(x, 'type',
/// try)` (JSON text decoded, anything else cast;
/// `squall_core::trino_udfs::json_cast`), `CAST(x AS JSON)` as
/// `squall_to_json(x)`, `JSON '...'` as `json_parse('...')`. `None` when
/// there is nothing to write.
fn trino_types(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    if !lower.contains("cast") && !lower.contains("json") {
        return None;
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    let next_solid = |i: usize| solid(&tokens, i + 1);
    let mut out: Vec<String> = Vec::with_capacity(tokens.len());
    // Open parentheses: what each is, and for a cast where its `CAST` word
    // and its `AS` are in `out`.
    let mut open: Vec<(Paren, usize, usize)> = Vec::new();
    let mut changed = false;
    let mut skip_to = 0;
    for (i, token) in tokens.iter().enumerate() {
        if i < skip_to {
            continue;
        }
        let w = word(token);
        let next = next_solid(i);
        let next_is = |t: &Token| next.is_some_and(|n| &tokens[n] == t);
        let cast = Paren::Cast {
            typed: false,
            json: false,
            nested: false,
        };
        match (w.as_deref(), token) {
            (Some("CAST" | "TRY_CAST"), _) if next_is(&Token::LParen) => {
                let at = out.len();
                out.push(token_text(token));
                let n = next.unwrap_or(i);
                for t in &tokens[i + 1..=n] {
                    out.push(token_text(t));
                }
                open.push((cast, at, 0));
                skip_to = n + 1;
            }
            (Some("AS"), _)
                if matches!(open.last(), Some((Paren::Cast { typed: false, .. }, ..))) =>
            {
                let lenient = open
                    .last()
                    .is_some_and(|(_, at, _)| out[*at].eq_ignore_ascii_case("try_cast"));
                let mut end = next.unwrap_or(i);
                let nested = matches!(word(&tokens[end]).as_deref(), Some("ARRAY" | "MAP" | "ROW"));
                let typed = if nested {
                    trino_type(&tokens, &mut end)
                } else {
                    None
                };
                let closes = solid(&tokens, end).is_some_and(|n| tokens[n] == Token::RParen);
                if let (Some(data_type), true) = (typed, closes) {
                    let name = data_type.to_string().replace('\'', "''");
                    out.push(format!(", '{name}', {lenient}"));
                    if let Some((p, ..)) = open.last_mut() {
                        *p = Paren::Cast {
                            typed: true,
                            json: false,
                            nested: true,
                        };
                    }
                    skip_to = end;
                } else {
                    if let Some((Paren::Cast { typed, .. }, _, as_at)) = open.last_mut() {
                        *typed = true;
                        *as_at = out.len();
                    }
                    out.push(token_text(token));
                }
            }
            (Some("JSON"), _)
                if matches!(open.last(), Some((Paren::Cast { typed: true, .. }, ..)))
                    && next_is(&Token::RParen) =>
            {
                if let Some((Paren::Cast { json, .. }, ..)) = open.last_mut() {
                    *json = true;
                }
                out.push(token_text(token));
            }
            (Some("JSON"), _)
                if next.is_some_and(|n| matches!(tokens[n], Token::SingleQuotedString(_))) =>
            {
                let n = next.unwrap_or(i);
                out.push(format!("json_parse({})", tokens[n]));
                changed = true;
                skip_to = n + 1;
            }
            (_, Token::LParen) => {
                open.push((Paren::Other, 0, 0));
                out.push(token_text(token));
            }
            (_, Token::RParen) => {
                match open.pop() {
                    Some((Paren::Cast { json: true, .. }, cast_at, as_at)) => {
                        out.truncate(as_at);
                        out[cast_at] = "squall_to_json".to_string();
                        changed = true;
                    }
                    Some((Paren::Cast { nested: true, .. }, cast_at, _)) => {
                        out[cast_at] = "squall_json_cast".to_string();
                        changed = true;
                    }
                    _ => {}
                }
                out.push(token_text(token));
            }
            _ => out.push(token_text(token)),
        }
    }
    changed.then(|| out.concat())
}

/// The index of the first token at or after `i` that is not white space.
fn solid(tokens: &[Token], i: usize) -> Option<usize> {
    tokens
        .get(i..)?
        .iter()
        .position(|t| !matches!(t, Token::Whitespace(_)))
        .map(|k| i + k)
}

/// The Arrow type of the Trino type whose first token is `tokens[*at]`,
/// `*at` then past it; `None` for a type squall does not write this way.
fn trino_type(tokens: &[Token], at: &mut usize) -> Option<arrow::datatypes::DataType> {
    use arrow::datatypes::{DataType, Field, Fields};
    let expect = |t: Token, at: &mut usize| -> Option<()> {
        let n = solid(tokens, *at)?;
        (tokens[n] == t).then(|| *at = n + 1)
    };
    let first = solid(tokens, *at)?;
    let Token::Word(w) = &tokens[first] else {
        return None;
    };
    *at = first + 1;
    let name = w.value.to_ascii_uppercase();
    // A type's parameters in parentheses, if any (`VARCHAR(10)`,
    // `DECIMAL(10, 2)`, `TIMESTAMP(3)`): their numbers.
    let numbers = |at: &mut usize| -> Option<Vec<u64>> {
        let Some(n) = solid(tokens, *at).filter(|n| tokens[*n] == Token::LParen) else {
            return Some(Vec::new());
        };
        let close = n + tokens[n..].iter().position(|t| *t == Token::RParen)?;
        let found = tokens[n + 1..close]
            .iter()
            .filter_map(|t| match t {
                Token::Number(v, _) => v.parse().ok(),
                _ => None,
            })
            .collect();
        *at = close + 1;
        Some(found)
    };
    Some(match name.as_str() {
        "ARRAY" => {
            expect(Token::LParen, at)?;
            let item = trino_type(tokens, at)?;
            expect(Token::RParen, at)?;
            DataType::List(std::sync::Arc::new(Field::new("item", item, true)))
        }
        "MAP" => {
            expect(Token::LParen, at)?;
            let key = trino_type(tokens, at)?;
            expect(Token::Comma, at)?;
            let value = trino_type(tokens, at)?;
            expect(Token::RParen, at)?;
            let entries = Fields::from(vec![
                Field::new("key", key, false),
                Field::new("value", value, true),
            ]);
            DataType::Map(
                std::sync::Arc::new(Field::new("entries", DataType::Struct(entries), false)),
                false,
            )
        }
        "ROW" => {
            expect(Token::LParen, at)?;
            let mut fields = Vec::new();
            loop {
                let n = solid(tokens, *at)?;
                let Token::Word(field) = &tokens[n] else {
                    return None;
                };
                *at = n + 1;
                let field_name = match field.quote_style {
                    Some(_) => field.value.clone(),
                    None => field.value.to_ascii_lowercase(),
                };
                fields.push(Field::new(field_name, trino_type(tokens, at)?, true));
                let n = solid(tokens, *at)?;
                *at = n + 1;
                match tokens[n] {
                    Token::Comma => continue,
                    Token::RParen => break,
                    _ => return None,
                }
            }
            DataType::Struct(Fields::from(fields))
        }
        "VARCHAR" | "CHAR" => {
            numbers(at)?;
            DataType::Utf8
        }
        // JSON inside an array, map or row: its text, marked apart from
        // VARCHAR's (`squall_core::trino_udfs::json_cast`).
        "JSON" => DataType::LargeUtf8,
        "VARBINARY" => DataType::Binary,
        "BIGINT" => DataType::Int64,
        "INTEGER" | "INT" => DataType::Int32,
        "SMALLINT" => DataType::Int16,
        "TINYINT" => DataType::Int8,
        "DOUBLE" => DataType::Float64,
        "REAL" => DataType::Float32,
        "BOOLEAN" => DataType::Boolean,
        "DATE" => DataType::Date32,
        "TIMESTAMP" => {
            numbers(at)?;
            DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, None)
        }
        "DECIMAL" => match numbers(at)?.as_slice() {
            [p] => DataType::Decimal128(u8::try_from(*p).ok()?, 0),
            [p, s] => DataType::Decimal128(u8::try_from(*p).ok()?, i8::try_from(*s).ok()?),
            _ => return None,
        },
        _ => return None,
    })
}

/// Trino's `SET SESSION name = value` as the engine's `SET name = value`
/// (a statement the server answers itself; `squall query` runs it): each
/// statement starting `SET SESSION` loses the `SESSION`. `None` when none
/// does.
fn without_session_keyword(sql: &str) -> Option<String> {
    if !sql.to_ascii_lowercase().contains("session") {
        return None;
    }
    let mut tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    let solid: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize| match &tokens[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let session: Vec<usize> = solid
        .windows(2)
        .enumerate()
        .filter(|(k, w)| {
            let starts = *k == 0 || tokens[solid[k - 1]] == Token::SemiColon;
            starts && keyword(w[0]) == Some(Keyword::SET) && keyword(w[1]) == Some(Keyword::SESSION)
        })
        .map(|(_, w)| w[1])
        .collect();
    if session.is_empty() {
        return None;
    }
    for i in session.into_iter().rev() {
        tokens.remove(i);
    }
    Some(tokens.iter().map(token_text).collect())
}

/// `sql` without Trino's view `SECURITY` clause.
fn without_security(sql: &str) -> Cow<'_, str> {
    if !sql.to_ascii_lowercase().contains("security") {
        return Cow::Borrowed(sql);
    }
    let Ok(tokens) = Tokenizer::new(&GenericDialect {}, sql).tokenize() else {
        return Cow::Borrowed(sql);
    };
    let words: Vec<(usize, Option<Keyword>)> = tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| !matches!(t, Token::Whitespace(_)))
        .map(|(i, t)| match t {
            Token::Word(w) if w.quote_style.is_none() => (i, Some(w.keyword)),
            _ => (i, None),
        })
        .collect();
    let mut drop = Vec::new();
    let mut in_create_view = false;
    for (k, (_, keyword)) in words.iter().enumerate() {
        match keyword {
            Some(Keyword::CREATE) => in_create_view = false,
            Some(Keyword::VIEW) if k > 0 => {
                in_create_view = words[..k]
                    .iter()
                    .rev()
                    .find(|(_, w)| !matches!(w, Some(Keyword::OR | Keyword::REPLACE)))
                    .is_some_and(|(_, w)| *w == Some(Keyword::CREATE));
            }
            Some(Keyword::SECURITY)
                if in_create_view
                    && matches!(
                        words.get(k + 1),
                        Some((_, Some(Keyword::DEFINER | Keyword::INVOKER)))
                    )
                    && matches!(words.get(k + 2), Some((_, Some(Keyword::AS)))) =>
            {
                drop.push(words[k].0);
                drop.push(words[k + 1].0);
                in_create_view = false;
            }
            _ => {}
        }
        if tokens[words[k].0] == Token::SemiColon {
            in_create_view = false;
        }
    }
    if drop.is_empty() {
        return Cow::Borrowed(sql);
    }
    Cow::Owned(
        tokens
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, t)| token_text(t))
            .collect(),
    )
}

#[cfg(test)]
#[path = "trino_sql_tests.rs"]
mod tests;
