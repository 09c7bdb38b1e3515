//! A select list that names two columns alike: `SELECT a, a`, `SELECT
//! count(*), count(*)`, `SELECT 1, 1`. Trino, DuckDB and PostgreSQL answer
//! (BI tools write such lists); DataFusion refuses ("Projections require
//! unique expression names"). Each later unnamed item that repeats an
//! earlier one's name is given its name with `_2`, `_3`, ... (not taken by
//! another item), so the statement plans and every column keeps a readable
//! name. A scalar subquery's one unnamed item is named apart from the
//! query around it ([`name_scalar_value`]).

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr, VisitorMut};

/// `statement` with repeated select-list names made distinct.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Distinct { every: false })
}

/// `statement` with every unnamed select item that is not a column named
/// by its own text (repeated texts numbered): for a statement whose items
/// DataFusion names alike though their text differs (`crate::replan`).
pub fn name_every_item(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Distinct { every: true })
}

/// Names repeated select-list items, or with `every` every unnamed item
/// that is not a column.
struct Distinct {
    every: bool,
}

impl VisitorMut for Distinct {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        // An item holding a scalar subquery keeps its text as its name,
        // whatever the subquery's own item is named below.
        name_by_text(&mut query.body, holds_subquery);
        distinct_names(&mut query.body, self.every);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Expr::Subquery(query) = expr {
            name_scalar_value(&mut query.body);
        }
        ControlFlow::Continue(())
    }
}

/// Every unnamed item of a select list that `rewritten` picks, named by its
/// text as written: a rewrite of it keeps its name.
pub fn name_by_text(body: &mut SetExpr, rewritten: impl Fn(&Expr) -> bool) {
    let SetExpr::Select(select) = body else {
        return;
    };
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(e) = item
            && rewritten(e)
        {
            let alias = Ident::with_quote('"', e.to_string());
            *item = SelectItem::ExprWithAlias {
                expr: e.clone(),
                alias,
            };
        }
    }
}

/// Whether `e` is or holds a scalar subquery.
fn holds_subquery(e: &Expr) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(e, |x| match x {
        Expr::Subquery(_) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The value of a scalar subquery named apart from the query around it.
/// DataFusion joins the subquery in, and its column named like one of the
/// outer query's (`HAVING avg(x) > (SELECT avg(x) FROM t)`) stopped the
/// join's planning ("qualified field name ... would be ambiguous").
fn name_scalar_value(body: &mut SetExpr) {
    if let SetExpr::Select(select) = body
        && let [item @ SelectItem::UnnamedExpr(_)] = select.projection.as_mut_slice()
        && let SelectItem::UnnamedExpr(value) = item
    {
        *item = SelectItem::ExprWithAlias {
            expr: value.clone(),
            alias: Ident::new("__squall_value"),
        };
    }
}

fn distinct_names(body: &mut SetExpr, every: bool) {
    let select = match body {
        SetExpr::Select(select) => select,
        SetExpr::SetOperation { left, right, .. } => {
            distinct_names(left, every);
            distinct_names(right, every);
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
        if let Some(field) = field_of(&expr)
            && !taken.contains(&field.to_lowercase())
            && seen.insert(field.to_lowercase())
        {
            taken.insert(field.to_lowercase());
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::with_quote('"', field),
            };
            continue;
        }
        let name = name_of(&expr);
        let column = matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
        if seen.insert(name.clone()) && (column || !every) {
            taken.insert(name);
            continue;
        }
        if every && !column && !taken.contains(&expr.to_string().to_lowercase()) {
            let alias = expr.to_string();
            taken.insert(alias.to_lowercase());
            *item = SelectItem::ExprWithAlias {
                expr,
                alias: Ident::with_quote('"', alias),
            };
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

/// A row's field named after an expression (`(CAST(... AS ROW(k
/// BIGINT))).k`, `items[1].name`) is named by its field, as Trino names it
/// (DataFusion's name would be the whole expression's text).
fn field_of(e: &Expr) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{AccessExpr, Value};
    let Expr::CompoundFieldAccess { access_chain, .. } = e else {
        return None;
    };
    match access_chain.last()? {
        AccessExpr::Dot(Expr::Identifier(name)) => Some(name.value.clone()),
        AccessExpr::Dot(Expr::Value(v)) => match &v.value {
            Value::SingleQuotedString(name) => Some(name.clone()),
            _ => None,
        },
        _ => None,
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

    #[tokio::test]
    async fn items_datafusion_would_name_alike_are_named_by_their_text() {
        let state = datafusion::prelude::SessionContext::new().state();
        let sql = "select 7 / 2, cast(7 as double) / 2, 7 / 2 as x, strpos('ab', 'b'), position('b' in 'ab')";
        let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
        let plan = crate::replan::plan(&state, rewrite(statement).unwrap())
            .await
            .unwrap();
        let names: Vec<_> = plan
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(
            names,
            [
                "7 / 2",
                "CAST(7 AS DOUBLE) / 2",
                "x",
                "strpos('ab', 'b')",
                "POSITION('b' IN 'ab')"
            ]
        );
        // A statement that plans keeps DataFusion's names.
        let statement = crate::trino_sql::parse("select 7 / 2")
            .unwrap()
            .pop_front()
            .unwrap();
        let plan = crate::replan::plan(&state, statement).await.unwrap();
        assert_eq!(plan.schema().field(0).name(), "Int64(7) / Int64(2)");
    }
}
