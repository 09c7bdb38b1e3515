//! Trino's `VALUES 1, 2, 3`: rows of one value written without
//! parentheses (`SELECT * FROM (VALUES 1, 2) AS t(x)`, `x IN (SELECT *
//! FROM (VALUES 'a', 'b'))`), which squall's parser refuses ("Expected:
//! ("). Each item of such a list that is not one parenthesised group is
//! put in parentheses before the text is parsed: `VALUES (1), (2), (3)`.

use std::collections::HashSet;

use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};

/// `sql` with every bare item of its VALUES lists in parentheses; `None`
/// when it has none (or does not tokenize: the parser then says why).
pub fn rows_in_parentheses(sql: &str) -> Option<String> {
    if !sql
        .as_bytes()
        .windows(6)
        .any(|w| w.eq_ignore_ascii_case(b"values"))
    {
        return None;
    }
    let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
    // Where to add "(" (before a token) and ")" (after one).
    let mut open_at = HashSet::new();
    let mut close_after = HashSet::new();
    for (i, token) in tokens.iter().enumerate() {
        if matches!(token, Token::Word(w) if w.keyword == Keyword::VALUES && w.quote_style.is_none())
        {
            for (first, last) in items(&tokens, i + 1) {
                if !one_group(&tokens, first, last) {
                    open_at.insert(first);
                    close_after.insert(last);
                }
            }
        }
    }
    if open_at.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 2 * open_at.len());
    for (i, token) in tokens.iter().enumerate() {
        if open_at.contains(&i) {
            out.push('(');
        }
        out.push_str(&crate::trino_sql::token_text(token));
        if close_after.contains(&i) {
            out.push(')');
        }
    }
    Some(out)
}

/// The items (first and last solid token) of the list starting at
/// `tokens[start]`: split by commas outside parentheses, ended by a
/// parenthesis closing around the list, a `;`, the end, or a clause that
/// follows a query body (`ORDER BY`, `LIMIT`, `UNION`, ...).
fn items(tokens: &[Token], start: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut first: Option<usize> = None;
    let mut last = start;
    for (i, token) in tokens.iter().enumerate().skip(start) {
        let ends = depth == 0
            && match token {
                Token::RParen | Token::SemiColon | Token::EOF => true,
                Token::Word(w) => matches!(
                    w.keyword,
                    Keyword::ORDER
                        | Keyword::LIMIT
                        | Keyword::OFFSET
                        | Keyword::FETCH
                        | Keyword::UNION
                        | Keyword::EXCEPT
                        | Keyword::INTERSECT
                ),
                _ => false,
            };
        if ends || (depth == 0 && *token == Token::Comma) {
            if let Some(f) = first.take() {
                out.push((f, last));
            }
            if ends {
                return out;
            }
            continue;
        }
        match token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        if !matches!(token, Token::Whitespace(_)) {
            first.get_or_insert(i);
            last = i;
        }
    }
    if let Some(f) = first {
        out.push((f, last));
    }
    out
}

/// Whether `tokens[first..=last]` is one parenthesised group: a row.
fn one_group(tokens: &[Token], first: usize, last: usize) -> bool {
    if tokens[first] != Token::LParen || tokens[last] != Token::RParen {
        return false;
    }
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().take(last + 1).skip(first) {
        match token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 && i != last {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::rows_in_parentheses;

    #[test]
    fn bare_items_become_rows() {
        let cases = [
            (
                "select * from (values 1, 2, 3) as t(x)",
                Some("select * from (values (1), (2), (3)) as t(x)"),
            ),
            ("values 1, 'a'", Some("values (1), ('a')")),
            ("values (1, 'a'), (2, 'b')", None),
            ("values (1) + 2, (3)", Some("values ((1) + 2), (3)")),
            (
                "select * from (values 1, f(2, 3)) t(x) union all values 4 order by 1",
                Some("select * from (values (1), (f(2, 3))) t(x) union all values (4) order by 1"),
            ),
            ("insert into t values (1, 2)", None),
            ("select 'values 1, 2'", None),
            ("select \"values\" from t", None),
        ];
        for (sql, expected) in cases {
            assert_eq!(rows_in_parentheses(sql).as_deref(), expected, "{sql}");
        }
    }
}
