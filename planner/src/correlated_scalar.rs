//! A scalar subquery that is not an aggregate, as an aggregate DataFusion
//! plans when it is correlated (see `crate::replan`): `(SELECT e FROM ...
//! WHERE ...)` is `(SELECT squall_scalar_subquery(e) FROM ... WHERE ...)`,
//! one value or NULL, failing with a second row as SQL requires; `(SELECT e
//! FROM ... ORDER BY o LIMIT 1)` is `(SELECT first_value(e ORDER BY o) FROM
//! ...)`. A subquery with GROUP BY, HAVING, DISTINCT, an OFFSET, a LIMIT
//! other than 1, a set operation or an aggregate or window function in its
//! item is left as written.

use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Value, Visit, Visitor,
    VisitorMut,
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
            None => false,
            Some(LimitClause::LimitOffset {
                limit: Some(limit),
                offset: None,
                limit_by,
            }) if limit_by.is_empty() && is_one(limit) => true,
            Some(_) => return Ok(()),
        };
        if query.fetch.is_some() || query.with.is_some() {
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
        if grouped
            || select.having.is_some()
            || select.distinct.is_some()
            || select.projection.len() != 1
        {
            return Ok(());
        }
        let item = match &mut select.projection[0] {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return Ok(()),
        };
        if self.mentions_aggregate(item) {
            return Ok(());
        }
        let text = if first_only {
            match order.is_empty() {
                true => format!("first_value({item})"),
                false => {
                    let order: Vec<String> = order.iter().map(|o| o.to_string()).collect();
                    format!("first_value({item} ORDER BY {})", order.join(", "))
                }
            }
        } else {
            format!("{}({item})", squall_core::scalar_subquery::NAME)
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
            "SELECT (SELECT first_value(o_orderkey ORDER BY o_totalprice DESC, 1) FROM orders WHERE o_custkey = c_custkey) FROM customer"
        );
        for kept in [
            "SELECT (SELECT max(x) FROM t WHERE t.k = u.k) FROM u",
            "SELECT (SELECT x FROM t WHERE t.k = u.k LIMIT 2) FROM u",
            "SELECT (SELECT x FROM t WHERE t.k = u.k GROUP BY x) FROM u",
            "SELECT (SELECT DISTINCT x FROM t WHERE t.k = u.k) FROM u",
            "SELECT (SELECT count(*) + 1 FROM t WHERE t.k = u.k) FROM u",
        ] {
            assert_eq!(rewritten(kept), kept);
        }
    }
}
