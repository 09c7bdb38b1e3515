//! A subquery in `ORDER BY` (`ORDER BY (SELECT count(*) FROM orders o
//! WHERE o.o_custkey = c.c_custkey)`): an analyzer rule. DataFusion
//! decorrelates a scalar subquery in a projection, a filter or an
//! aggregation, not in a sort ("Correlated scalar subquery can only be
//! used in Projection, Filter, Aggregate plan nodes"). The rule computes
//! each sort key that holds a subquery as a column of a projection below
//! the sort, sorts by that column, and projects it away above. Where the
//! subquery names a column the select list left out (`ORDER BY (SELECT
//! r_name FROM region WHERE r_regionkey = n_regionkey)` of a query
//! selecting `n_name`), the key is computed below the select list and
//! carried through it.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, Sort, SortExpr};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct OrderedSubqueries;

/// The outer columns the subqueries of `expr` name.
fn outer_columns(expr: &Expr) -> Vec<Column> {
    let mut columns = Vec::new();
    let _ = expr.apply(|e| {
        let subquery = match e {
            Expr::ScalarSubquery(s) => s,
            Expr::Exists(e) => &e.subquery,
            Expr::InSubquery(i) => &i.subquery,
            _ => return Ok(TreeNodeRecursion::Continue),
        };
        for outer in &subquery.outer_ref_columns {
            let _ = outer.apply(|o| {
                if let Expr::OuterReferenceColumn(_, c) = o {
                    columns.push(c.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            });
        }
        Ok(TreeNodeRecursion::Continue)
    });
    columns
}

/// The columns of `plan`'s output, as expressions.
fn columns_of(plan: &LogicalPlan) -> Vec<Expr> {
    plan.schema()
        .iter()
        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
        .collect()
}

/// Whether `expr` holds a subquery of any kind.
fn has_subquery(expr: &Expr) -> bool {
    let mut found = false;
    let _ = expr.apply(|e| {
        found = matches!(
            e,
            Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
        );
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

impl AnalyzerRule for OrderedSubqueries {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::Sort(sort) = &node else {
                return Ok(Transformed::no(node));
            };
            if !sort.expr.iter().any(|s| has_subquery(&s.expr)) {
                return Ok(Transformed::no(node));
            }
            let Sort { expr, input, fetch } = sort.clone();
            let kept = columns_of(&input);
            // Below the select list when it left out a column a subquery names.
            let below = match input.as_ref() {
                LogicalPlan::Projection(p)
                    if expr
                        .iter()
                        .flat_map(|k| outer_columns(&k.expr))
                        .any(|c| !input.schema().has_column(&c)) =>
                {
                    Some(p.clone())
                }
                _ => None,
            };
            let base = match &below {
                Some(p) => Arc::clone(&p.input),
                None => Arc::clone(&input),
            };
            let mut computed = columns_of(&base);
            let mut carried = Vec::new();
            let mut keys = Vec::with_capacity(expr.len());
            for (i, key) in expr.into_iter().enumerate() {
                if has_subquery(&key.expr) {
                    let name = format!("__squall_order_key{i}");
                    computed.push(key.expr.alias(&name));
                    carried.push(Expr::Column(Column::from_name(&name)));
                    keys.push(SortExpr {
                        expr: Expr::Column(Column::from_name(name)),
                        ..key
                    });
                } else {
                    keys.push(key);
                }
            }
            let mut builder =
                LogicalPlanBuilder::from(Arc::unwrap_or_clone(base)).project(computed)?;
            if let Some(p) = below {
                builder = builder.project(p.expr.iter().cloned().chain(carried))?;
            }
            let plan = builder
                .sort_with_limit(keys, fetch)?
                .project(kept)?
                .build()?;
            Ok(Transformed::yes(plan))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_ordered_subqueries"
    }
}
