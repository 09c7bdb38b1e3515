//! Chained `JOIN ... USING`: DataFusion 55 finds an unqualified reference
//! to a column two USING joins share ambiguous.
//!
//! `FROM a JOIN b USING (x) JOIN c USING (x)` has one column `x` (SQL merges
//! a USING join's columns), which `SELECT x` and `WHERE x = 1` name. DataFusion
//! keeps one set of merged columns per join, {a.x, b.x} and {a.x, c.x}, and
//! an unqualified `x` that more than one set holds is "Ambiguous reference
//! to unqualified field x", so the query fails (dbt-trino's `dbt docs
//! generate` joins three relations so). DuckDB, Trino and PostgreSQL answer.
//!
//! Where every such join is an inner or left join whose chain starts at the
//! first relation of the FROM item, the merged column is that relation's
//! (the joins keep only rows equal to it, or all of its rows): an
//! unqualified reference to it in the SELECT's list, WHERE, GROUP BY and
//! HAVING is written qualified by that relation (`a.x`), keeping its
//! name. Subqueries have scopes of their own and are left alone here (the
//! walk rewrites each SELECT of the statement in its own scope). Right and
//! full joins, whose merged column is a COALESCE, are left as DataFusion
//! plans them.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::error::{DataFusionError, Result};
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator, Query, Select, SelectItem, SetExpr,
    TableFactor, VisitMut, VisitorMut,
};

/// `statement` with unqualified references to chained USING columns
/// qualified, as the module says.
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Selects)
}

struct Selects;

impl VisitorMut for Selects {
    type Break = DataFusionError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<DataFusionError> {
        if let SetExpr::Select(select) = query.body.as_mut() {
            qualify_shared_using_columns(select);
        }
        ControlFlow::Continue(())
    }
}

/// The columns two or more inner/left USING joins of `select`'s first FROM
/// item share, each with the qualifier of the item's first relation.
fn shared_using_columns(select: &Select) -> Option<(Ident, Vec<String>)> {
    let [from] = select.from.as_slice() else {
        return None;
    };
    let qualifier = match &from.relation {
        TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => {
            a.name.clone()
        }
        TableFactor::Table {
            name, alias: None, ..
        } => name.0.last()?.as_ident()?.clone(),
        _ => return None,
    };
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, join) in from.joins.iter().enumerate() {
        let (constraint, keeps_left) = match &join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, true),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, true),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) | JoinOperator::FullOuter(c) => {
                (c, false)
            }
            _ => continue,
        };
        let JoinConstraint::Using(columns) = constraint else {
            continue;
        };
        for column in columns {
            let Some(name) = column.0.last().and_then(|p| p.as_ident()) else {
                continue;
            };
            let key = name.value.to_lowercase();
            if !keeps_left || (index > 0 && !seen.contains_key(&key)) {
                // The merged column is not (or may not be) the first
                // relation's: a right or full join, or a chain that starts
                // at a join of the first relation with another.
                seen.insert(key, usize::MAX);
                continue;
            }
            let count = seen.entry(key).or_insert(0);
            if *count != usize::MAX {
                *count += 1;
            }
        }
    }
    let shared: Vec<String> = seen
        .into_iter()
        .filter(|(_, n)| *n >= 2 && *n != usize::MAX)
        .map(|(k, _)| k)
        .collect();
    (!shared.is_empty()).then_some((qualifier, shared))
}

fn qualify_shared_using_columns(select: &mut Select) {
    let Some((qualifier, columns)) = shared_using_columns(select) else {
        return;
    };
    let mut qualify = Qualify {
        qualifier,
        columns,
        depth: 0,
    };
    for item in &mut select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                // Keep the name the column is written with.
                if let Expr::Identifier(ident) = expr
                    && qualify.applies(ident)
                {
                    let alias = ident.clone();
                    let _ = expr.visit(&mut qualify);
                    *item = SelectItem::ExprWithAlias {
                        expr: expr.clone(),
                        alias,
                    };
                    continue;
                }
                let _ = expr.visit(&mut qualify);
            }
            SelectItem::ExprWithAlias { expr, .. } => {
                let _ = expr.visit(&mut qualify);
            }
            _ => {}
        }
    }
    if let Some(selection) = &mut select.selection {
        let _ = selection.visit(&mut qualify);
    }
    if let GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        for expr in exprs {
            let _ = expr.visit(&mut qualify);
        }
    }
    if let Some(having) = &mut select.having {
        let _ = having.visit(&mut qualify);
    }
}

/// Qualifies the shared columns in one scope (not inside subqueries).
struct Qualify {
    qualifier: Ident,
    columns: Vec<String>,
    depth: usize,
}

impl Qualify {
    fn applies(&self, ident: &Ident) -> bool {
        self.depth == 0 && self.columns.contains(&ident.value.to_lowercase())
    }
}

impl VisitorMut for Qualify {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(ident) = expr
            && self.applies(ident)
        {
            *expr = Expr::CompoundIdentifier(vec![self.qualifier.clone(), ident.clone()]);
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        crate::trino_sql::rewritten_text(sql, rewrite)
    }

    #[test]
    fn shared_using_columns_are_qualified_by_the_first_relation() {
        let out = rewritten(
            "select x, y, count(*) from t1 a join t2 b using (x) left join t3 c using (x, y) \
             where x > 1 and exists (select x from t4) group by x, y having max(x) > 0",
        );
        assert!(
            out.contains("SELECT a.x AS x, y, count(*)")
                && out.contains("WHERE a.x > 1 AND EXISTS (SELECT x FROM t4)")
                && out.contains("GROUP BY a.x, y HAVING max(a.x) > 0"),
            "{out}"
        );
        // One USING join, a right join, or a chain not starting at the
        // first relation: left as they are.
        for sql in [
            "select x from a join b using (x)",
            "select x from a join b using (x) right join c using (x)",
            "select x from a join b on a.k = b.k join c using (x) join d using (x)",
        ] {
            assert!(!rewritten(sql).contains("a.x"), "{sql}");
        }
    }
}
