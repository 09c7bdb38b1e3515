//! A scalar subquery that is not an aggregate, as an aggregate DataFusion
//! plans when it is correlated (see `crate::replan`): `(SELECT e FROM ...
//! WHERE ...)` is `(SELECT squall_scalar_subquery(e) FROM ... WHERE ...)`,
//! one value or NULL, failing with a second row as SQL requires; `(SELECT e
//! FROM ... ORDER BY o LIMIT 1)` is `(SELECT first_value(e ORDER BY o) FROM
//! ...)`. One with GROUP BY, HAVING, DISTINCT, an OFFSET or a LIMIT other
//! than 1 is checked over its rows, `(SELECT squall_scalar_subquery(
//! __squall_value) FROM (SELECT e AS __squall_value ...))` (a limit there
//! is ranked by `crate::correlated_limit`). One with a set operation or
//! WITH, and an aggregate of all its rows, are left as written.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Value, Visit,
    Visitor, VisitorMut,
};

/// `statement` with its non-aggregate scalar subqueries as aggregates;
/// `is_aggregate` tells the names of aggregate and window functions.
/// `None` when it has none.
pub fn rewrite(
    statement: Statement,
    is_aggregate: &dyn Fn(&str) -> bool,
) -> Result<Option<Statement>> {
    let mut scalars = Scalars {
        is_aggregate,
        changed: false,
    };
    let statement = crate::trino_sql::rewritten(statement, &mut scalars)?;
    Ok(scalars.changed.then_some(statement))
}

struct Scalars<'a> {
    is_aggregate: &'a dyn Fn(&str) -> bool,
    changed: bool,
}

impl VisitorMut for Scalars<'_> {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<DataFusionError> {
        if let Expr::Subquery(query) = expr
            && let Err(e) = self.aggregated(query)
        {
            return ControlFlow::Break(e);
        }
        ControlFlow::Continue(())
    }
}

impl Scalars<'_> {
    fn aggregated(&mut self, query: &mut Query) -> Result<()> {
        let first_only = match &query.limit_clause {
            None => Some(false),
            Some(LimitClause::LimitOffset {
                limit: Some(limit),
                offset: None,
                limit_by,
            }) if limit_by.is_empty() && is_one(limit) => Some(true),
            Some(_) => None,
        };
        if query.with.is_some() {
            return Ok(());
        }
        let order = match &query.order_by {
            None => Vec::new(),
            Some(order) => match &order.kind {
                OrderByKind::Expressions(exprs) => exprs.clone(),
                OrderByKind::All(_) => return Ok(()),
            },
        };
        let SetExpr::Select(select) = query.body.as_mut() else {
            return Ok(());
        };
        let grouped = !matches!(&select.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
        let plain = !grouped && select.having.is_none() && select.distinct.is_none();
        let item = match select.projection.as_mut_slice() {
            [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] => e,
            _ => return Ok(()),
        };
        let aggregate = self.mentions_aggregate(item);
        let text = match first_only {
            // One row of a plain select: its first value, or its only one.
            Some(first_only) if plain && !aggregate && query.fetch.is_none() => {
                match (first_only, order.is_empty()) {
                    (false, _) => format!("{}({item})", squall_core::scalar_subquery::NAME),
                    (true, true) => format!("first_value({item})"),
                    (true, false) => {
                        let order: Vec<String> = order
                            .iter()
                            .map(|o| match is_one(&o.expr) {
                                // ORDER BY 1: the item.
                                true => format!("{item}{}", &o.to_string()[1..]),
                                false => o.to_string(),
                            })
                            .collect();
                        format!("first_value({item} ORDER BY {})", order.join(", "))
                    }
                }
            }
            // An aggregate of all the subquery's rows is one value already.
            Some(false) if plain && aggregate && query.fetch.is_none() => return Ok(()),
            // Otherwise (GROUP BY, DISTINCT, LIMIT n, OFFSET): the
            // subquery's rows checked to be at most one, over it.
            _ => {
                // The item named __squall_value, and ORDER BY its old name
                // too (DataFusion decorrelates through an alias, not
                // through the renaming of `AS t(c)`).
                let value = Ident::new("__squall_value");
                let expr = item.clone();
                let named = match &select.projection[0] {
                    SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
                    _ => None,
                };
                select.projection[0] = SelectItem::ExprWithAlias {
                    expr,
                    alias: value.clone(),
                };
                if let (Some(named), Some(order)) = (named, query.order_by.as_mut())
                    && let OrderByKind::Expressions(exprs) = &mut order.kind
                {
                    for o in exprs {
                        if matches!(&o.expr, Expr::Identifier(i) if i.value == named.value) {
                            o.expr = Expr::Identifier(value.clone());
                        }
                    }
                }
                let text = format!(
                    "(SELECT {}(__squall_value) FROM ({query}))",
                    squall_core::scalar_subquery::NAME
                );
                let Expr::Subquery(wrapped) =
                    crate::trino_sql::expression(&text, "a correlated scalar subquery")?
                else {
                    unreachable!("a parenthesized query parses as a subquery")
                };
                *query = *wrapped;
                self.changed = true;
                return Ok(());
            }
        };
        *item = crate::trino_sql::expression(&text, "a correlated scalar subquery's value")?;
        query.order_by = None;
        query.limit_clause = None;
        self.changed = true;
        Ok(())
    }

    fn mentions_aggregate(&self, item: &Expr) -> bool {
        struct Finds<'a>(&'a dyn Fn(&str) -> bool);
        impl Visitor for Finds<'_> {
            type Break = ();
            fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                match e {
                    Expr::Function(f) if f.over.is_some() => ControlFlow::Break(()),
                    Expr::Function(f) => {
                        let name = f.name.to_string().to_lowercase();
                        match (self.0)(&name) {
                            true => ControlFlow::Break(()),
                            false => ControlFlow::Continue(()),
                        }
                    }
                    // A nested subquery's aggregates are its own.
                    _ => ControlFlow::Continue(()),
                }
            }
        }
        item.visit(&mut Finds(self.is_aggregate)).is_break()
    }
}

fn is_one(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1"))
}

#[cfg(test)]
mod tests {
    fn rewritten(sql: &str) -> String {
        let statement = crate::trino_sql::parse(sql).unwrap().pop_front().unwrap();
        match super::rewrite(statement, &|name| matches!(name, "max" | "count")).unwrap() {
            Some(rewritten) => rewritten.to_string(),
            None => sql.to_string(),
        }
    }

    #[test]
    fn non_aggregate_scalar_subqueries_become_aggregates() {
        assert_eq!(
            rewritten(
                "select (select r_name from region where r_regionkey = n_regionkey) as r from nation"
            ),
            "SELECT (SELECT squall_scalar_subquery(r_name) FROM region WHERE r_regionkey = n_regionkey) AS r FROM nation"
        );
        assert_eq!(
            rewritten(
                "select (select o_orderkey from orders where o_custkey = c_custkey order by o_totalprice desc, 1 limit 1) from customer"
            ),
            "SELECT (SELECT first_value(o_orderkey ORDER BY o_totalprice DESC, o_orderkey) FROM orders WHERE o_custkey = c_custkey) FROM customer"
        );
        // Any other shape is checked over the subquery's rows.
        for (shape, named) in [
            (
                "SELECT x FROM t WHERE t.k = u.k LIMIT 2",
                "SELECT x AS __squall_value FROM t WHERE t.k = u.k LIMIT 2",
            ),
            (
                "SELECT x FROM t WHERE t.k = u.k ORDER BY x LIMIT 1 OFFSET 1",
                "SELECT x AS __squall_value FROM t WHERE t.k = u.k ORDER BY x LIMIT 1 OFFSET 1",
            ),
            (
                "SELECT x + 1 AS y FROM t WHERE t.k = u.k ORDER BY y DESC, 1 LIMIT 1 OFFSET 1",
                "SELECT x + 1 AS __squall_value FROM t WHERE t.k = u.k \
                 ORDER BY __squall_value DESC, 1 LIMIT 1 OFFSET 1",
            ),
            (
                "SELECT x FROM t WHERE t.k = u.k GROUP BY x",
                "SELECT x AS __squall_value FROM t WHERE t.k = u.k GROUP BY x",
            ),
            (
                "SELECT DISTINCT x AS y FROM t WHERE t.k = u.k",
                "SELECT DISTINCT x AS __squall_value FROM t WHERE t.k = u.k",
            ),
        ] {
            assert_eq!(
                rewritten(&format!("SELECT ({shape}) FROM u")),
                format!(
                    "SELECT (SELECT squall_scalar_subquery(__squall_value) FROM ({named})) FROM u"
                )
            );
        }
        for kept in [
            "SELECT (SELECT max(x) FROM t WHERE t.k = u.k) FROM u",
            "SELECT (SELECT count(*) + 1 FROM t WHERE t.k = u.k) FROM u",
            "SELECT (SELECT x FROM t WHERE t.k = u.k UNION SELECT 1) FROM u",
        ] {
            assert_eq!(rewritten(kept), kept);
        }
    }
}
