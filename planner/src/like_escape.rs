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

impl VisitorMut for Escapes {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
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
