//! A SELECT with no select list (`SELECT FROM t`), which Trino's grammar
//! does not have and DataFusion's does: used as a value (`NOT (SELECT FROM
//! t)`, `x IN (SELECT FROM t)`) it stopped DataFusion's planner with an
//! index out of bounds. Refused as the syntax error it is in Trino's SQL,
//! at the SELECT's line and column, before anything is planned.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Query, SetExpr, VisitorMut};
use datafusion::sql::sqlparser::parser::ParserError;

/// `statement` unchanged, or the syntax error of its first empty select list.
pub fn check(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut EmptySelect)
}

struct EmptySelect;

impl VisitorMut for EmptySelect {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        match first_empty(&query.body) {
            Some(e) => ControlFlow::Break(e),
            None => ControlFlow::Continue(()),
        }
    }
}

/// The error of the first SELECT of `body` (a set operation's sides
/// included; nested queries are visited on their own) without a select list.
fn first_empty(body: &SetExpr) -> Option<DataFusionError> {
    match body {
        SetExpr::Select(select) if select.projection.is_empty() => {
            let at = select.select_token.0.span.start;
            Some(DataFusionError::SQL(
                Box::new(ParserError::ParserError(format!(
                    "Expected: a select list (a column, an expression or *) after SELECT, \
                     found none at Line: {}, Column: {}",
                    at.line, at.column
                ))),
                None,
            ))
        }
        SetExpr::SetOperation { left, right, .. } => {
            first_empty(left).or_else(|| first_empty(right))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trino_sql::parse;

    fn checked(sql: &str) -> Result<Statement> {
        check(parse(sql).unwrap().pop_front().unwrap())
    }

    #[test]
    fn empty_select_lists_are_syntax_errors_where_they_are() {
        for (sql, line, column) in [
            ("select from t", 1, 1),
            ("select a from t where not (\n  select from u)", 2, 3),
            ("select a from t where a in (select from u)", 1, 29),
            ("select a from t union all select from u", 1, 27),
        ] {
            let e = checked(sql).unwrap_err().to_string();
            assert!(
                e.contains("a select list")
                    && e.contains(&format!("Line: {line}, Column: {column}")),
                "{sql}: {e}"
            );
        }
        for sql in ["select 1", "select * from t where exists (select 1 from u)"] {
            assert!(checked(sql).is_ok(), "{sql}");
        }
    }
}
