//! `x LIKE 'pattern' ESCAPE 'c'` with any escape character, as Trino takes
//! it (`'100!%' ESCAPE '!'`): DataFusion takes only the backslash and
//! failed with an internal error. A literal pattern is rewritten to escape
//! with the backslash: `c` followed by a character becomes `\` and that
//! character, and a backslash the pattern matches literally is doubled.
//! A pattern that is not a literal keeps its escape, and DataFusion's
//! refusal names it; an escape of more than one character is refused.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Value, ValueWithSpan, VisitorMut};

/// `statement` with its LIKE patterns escaped by a backslash.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Escapes)
}

struct Escapes;

/// `pattern` escaped by `escape` as the same pattern escaped by `\`.
fn with_backslash(pattern: &str, escape: char) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == escape {
            let Some(next) = chars.next() else {
                return Err(DataFusionError::Plan(format!(
                    "LIKE pattern '{pattern}' ends with its escape character '{escape}'"
                )));
            };
            out.push('\\');
            out.push(next);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// The regular expression, matched anywhere as DataFusion matches one, of
/// SQL's `SIMILAR TO pattern [ESCAPE escape]`, which matches the whole
/// text: `%` any text, `_` any character, `|` `*` `+` `?` `{m,n}` `( )`
/// and `[...]` as in regular expressions, any other character (`.`, `^`,
/// `$` too) itself, and a character after the escape itself (the
/// backslash when none is given, as in PostgreSQL).
fn similar_regex(pattern: &str, escape: Option<char>) -> Result<String> {
    let escape = escape.unwrap_or('\\');
    let mut out = String::with_capacity(pattern.len() + 12);
    out.push_str("(?s)^(?:");
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if c == escape {
            let Some(next) = chars.next() else {
                return Err(DataFusionError::Plan(format!(
                    "SIMILAR TO pattern '{pattern}' ends with its escape character '{escape}'"
                )));
            };
            out.push_str(&regex::escape(&next.to_string()));
        } else if in_class {
            in_class = c != ']';
            match c {
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        } else {
            match c {
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '[' => {
                    in_class = true;
                    out.push('[');
                }
                '|' | '*' | '+' | '?' | '{' | '}' | '(' | ')' => out.push(c),
                c => out.push_str(&regex::escape(&c.to_string())),
            }
        }
    }
    out.push_str(")$");
    Ok(out)
}

/// `x [NOT] SIMILAR TO 'pattern' [ESCAPE 'c']` as the SQL standard (and
/// PostgreSQL, Redshift, DuckDB) reads it: DataFusion read the pattern as
/// a regular expression found anywhere in the text (`'%(a|b)%'` matched
/// nothing, `'ab'` matched `'xaby'`), silently. The literal pattern
/// becomes the regular expression that means it, anchored; a pattern
/// that is not a literal is refused.
fn similar_to(expr: &mut Expr) -> ControlFlow<DataFusionError> {
    let Expr::SimilarTo {
        pattern,
        escape_char,
        ..
    } = expr
    else {
        return ControlFlow::Continue(());
    };
    let escape = match escape_char.as_ref().map(|e| &e.value) {
        None => None,
        Some(Value::SingleQuotedString(e)) => {
            let mut chars = e.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Some(c),
                _ => {
                    return ControlFlow::Break(DataFusionError::Plan(format!(
                        "SIMILAR TO's escape must be one character, not '{e}'"
                    )));
                }
            }
        }
        Some(other) => {
            return ControlFlow::Break(DataFusionError::Plan(format!(
                "SIMILAR TO's escape must be a character, not {other}"
            )));
        }
    };
    let Expr::Value(ValueWithSpan {
        value: Value::SingleQuotedString(p),
        ..
    }) = pattern.as_mut()
    else {
        return ControlFlow::Break(DataFusionError::Plan(format!(
            "SIMILAR TO takes a literal pattern, not {pattern}"
        )));
    };
    match similar_regex(p, escape) {
        Ok(regex) => {
            *p = regex;
            *escape_char = None;
            ControlFlow::Continue(())
        }
        Err(e) => ControlFlow::Break(e),
    }
}

impl VisitorMut for Escapes {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if matches!(expr, Expr::SimilarTo { .. }) {
            return similar_to(expr);
        }
        let (Expr::Like {
            pattern,
            escape_char: Some(escape),
            ..
        }
        | Expr::ILike {
            pattern,
            escape_char: Some(escape),
            ..
        }) = expr
        else {
            return ControlFlow::Continue(());
        };
        let Value::SingleQuotedString(e) = &escape.value else {
            return ControlFlow::Continue(());
        };
        let mut chars = e.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return ControlFlow::Break(DataFusionError::Plan(format!(
                "LIKE's escape must be one character, not '{e}'"
            )));
        };
        if c == '\\' {
            return ControlFlow::Continue(());
        }
        let Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(p),
            ..
        }) = pattern.as_mut()
        else {
            return ControlFlow::Continue(());
        };
        match with_backslash(p, c) {
            Ok(escaped) => {
                *p = escaped;
                escape.value = Value::SingleQuotedString("\\".into());
                ControlFlow::Continue(())
            }
            Err(e) => ControlFlow::Break(e),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn similar_to_patterns_become_anchored_regular_expressions() {
        let matches = |text: &str, pattern: &str, escape: Option<char>| {
            let regex = super::similar_regex(pattern, escape).unwrap();
            regex::Regex::new(&regex).unwrap().is_match(text)
        };
        assert!(matches("abc", "abc", None));
        assert!(matches("abc", "_b_", None));
        assert!(!matches("abc", "_B_", None));
        assert!(matches("abc", "%(b|d)%", None));
        assert!(!matches("abc", "(b|c)%", None));
        assert!(!matches("xaby", "ab", None));
        assert!(matches("a.c", "a.c", None));
        assert!(!matches("abc", "a.c", None));
        assert!(matches("line\nbreak", "line%", None));
        assert!(matches("50%", "50!%", Some('!')));
        assert!(!matches("500", "50!%", Some('!')));
        assert!(matches("a1", "[a-c][0-9]", None));
        assert!(matches("aaa", "a{2,3}", None));
        assert!(matches("$5^", "$5^", None));
        assert!(super::similar_regex("ab!", Some('!')).is_err());
    }

    #[test]
    fn escapes_become_backslashes() {
        let cases = [
            ("100!%", '!', "100\\%"),
            ("a!_b%", '!', "a\\_b%"),
            ("!!", '!', "\\!"),
            ("c:\\dir#%", '#', "c:\\\\dir\\%"),
        ];
        for (pattern, escape, want) in cases {
            assert_eq!(
                super::with_backslash(pattern, escape).unwrap(),
                want,
                "{pattern}"
            );
        }
        assert!(super::with_backslash("ab!", '!').is_err());
    }
}
