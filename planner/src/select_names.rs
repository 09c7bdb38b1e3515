//! A select list that names two columns alike: `SELECT a, a`, `SELECT
//! count(*), count(*)`, `SELECT 1, 1`. Trino, DuckDB and PostgreSQL answer
//! (BI tools write such lists); DataFusion refuses ("Projections require
//! unique expression names"). Each later unnamed item that repeats an
//! earlier one's name is given its name with `_2`, `_3`, ... (not taken by
//! another item), so the statement plans and every column keeps a readable
//! name.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, VisitorMut};

/// `statement` with repeated select-list names made distinct.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Distinct)
}

struct Distinct;

impl VisitorMut for Distinct {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        distinct_names(&mut query.body);
        ControlFlow::Continue(())
    }
}

fn distinct_names(body: &mut SetExpr) {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, right, .. } => {
            distinct_names(left);
            distinct_names(right);
            return;
        }
        _ => return,
    };
    let named: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
            _ => None,
        })
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut taken = named.clone();
    for item in &mut select.projection {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        let expr = expr.clone();
        let name = name_of(&expr);
        if seen.insert(name.clone()) {
            taken.insert(name);
            continue;
        }
        let base = match &expr {
            Expr::Identifier(i) => i.value.clone(),
            Expr::CompoundIdentifier(parts) => {
                parts.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            e => e.to_string(),
        };
        let alias = (2..)
            .map(|k| format!("{base}_{k}"))
            .find(|a| !taken.contains(&a.to_lowercase()))
            .unwrap_or_default();
        taken.insert(alias.to_lowercase());
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', alias),
        };
    }
}

/// The name DataFusion gives an unnamed select item, as far as text tells:
/// a column's own name, a cast's or a parenthesis' inner expression's.
fn name_of(e: &Expr) -> String {
    match e {
        Expr::Identifier(i) => i.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .map(|i| i.value.to_lowercase())
            .unwrap_or_default(),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => name_of(expr),
        e => e.to_string().to_lowercase().replace(' ', ""),
    }
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn rewritten(sql: &str) -> String {
        crate::trino_sql::rewritten_text(sql, rewrite)
    }

    #[test]
    fn repeated_names_get_a_number() {
        assert_eq!(
            rewritten("select a, t.a, count(*), COUNT(*), 1, 1, a as a_2 from t"),
            "SELECT a, t.a AS \"a_3\", count(*), COUNT(*) AS \"COUNT(*)_2\", 1, 1 AS \"1_2\", a AS a_2 FROM t"
        );
        assert_eq!(
            rewritten("select cast(1 as tinyint), cast(1 as smallint), (b), b from t"),
            "SELECT CAST(1 AS TINYINT), CAST(1 AS SMALLINT) AS \"CAST(1 AS SMALLINT)_2\", (b), b AS \"b_2\" FROM t"
        );
        let kept = "SELECT a, b, c AS a FROM t UNION ALL SELECT x, y, z FROM u";
        assert_eq!(rewritten(kept), kept);
    }
}
