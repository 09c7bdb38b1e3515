//! A subquery inside a subquery that names a column of the query two
//! levels out: `SELECT n_name, (SELECT count(*) FROM customer c WHERE
//! c.c_nationkey = n.n_nationkey AND c.c_acctbal > (SELECT avg(c_acctbal)
//! FROM customer c2 WHERE c2.c_nationkey = n.n_nationkey)) FROM nation n`.
//! DataFusion decorrelates one level at a time, so the innermost subquery
//! is joined into the middle one, where `n.n_nationkey` is not a column
//! ("No field named n.n_nationkey"). Where the middle subquery's `WHERE`
//! makes one of its own columns equal to that outer column
//! (`c.c_nationkey = n.n_nationkey`, a conjunct), the inner subquery in
//! the same `WHERE` or in the select list right above it names that column
//! instead, which is the same value on every row it is asked for: an
//! analyzer rule. Anything else is refused, saying what it is
//! ([`two_levels_out`], read by the engine's error).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ExprSchema};
use datafusion::error::Result;
use datafusion::logical_expr::expr::{Exists, InSubquery};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, Filter, LogicalPlan, Subquery};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct NestedCorrelation;

impl AnalyzerRule for NestedCorrelation {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_down_with_subqueries(|node| {
            node.transform_up(|n| match &n {
                LogicalPlan::Filter(filter) => {
                    let equal = equal_columns(filter);
                    if equal.is_empty() {
                        return Ok(Transformed::no(n));
                    }
                    n.map_expressions(|e| relinked(e, &equal))
                }
                LogicalPlan::Projection(p) => match p.input.as_ref() {
                    LogicalPlan::Filter(filter) => {
                        let equal = equal_columns(filter);
                        if equal.is_empty() {
                            return Ok(Transformed::no(n));
                        }
                        n.map_expressions(|e| relinked(e, &equal))
                    }
                    _ => Ok(Transformed::no(n)),
                },
                _ => Ok(Transformed::no(n)),
            })
            .map(|t| Transformed::new(t.data, t.transformed, TreeNodeRecursion::Continue))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_nested_correlation"
    }
}

/// The filter's conjuncts `column = outer column`: each outer column with
/// the filter's own column equal to it, as an outer reference.
fn equal_columns(filter: &Filter) -> HashMap<Column, Expr> {
    let mut equal = HashMap::new();
    for conjunct in split_conjunction(&filter.predicate) {
        let Some((Expr::Column(own), Expr::OuterReferenceColumn(_, outer))) =
            crate::correlated_limit::correlated_equality(conjunct)
        else {
            continue;
        };
        let Ok(field) = filter.input.schema().field_from_column(&own) else {
            continue;
        };
        equal.insert(outer, Expr::OuterReferenceColumn(Arc::clone(field), own));
    }
    equal
}

/// `expr` with the subqueries in it naming `equal`'s columns instead of
/// the outer columns they equal.
fn relinked(expr: Expr, equal: &HashMap<Column, Expr>) -> Result<Transformed<Expr>> {
    expr.transform_up(|e| match e {
        Expr::ScalarSubquery(s) => {
            Ok(relinked_subquery(s, equal)?.update_data(Expr::ScalarSubquery))
        }
        Expr::Exists(Exists { subquery, negated }) => Ok(relinked_subquery(subquery, equal)?
            .update_data(|subquery| Expr::Exists(Exists { subquery, negated }))),
        Expr::InSubquery(InSubquery {
            expr,
            subquery,
            negated,
        }) => Ok(relinked_subquery(subquery, equal)?.update_data(|subquery| {
            Expr::InSubquery(InSubquery {
                expr,
                subquery,
                negated,
            })
        })),
        e => Ok(Transformed::no(e)),
    })
}

/// `subquery`'s own nodes (not those of subqueries inside it) naming the
/// columns of `equal` in place of the outer columns.
fn relinked_subquery(
    subquery: Subquery,
    equal: &HashMap<Column, Expr>,
) -> Result<Transformed<Subquery>> {
    let swap = |e: Expr| match &e {
        Expr::OuterReferenceColumn(_, c) => match equal.get(c) {
            Some(own) => Ok(Transformed::yes(own.clone())),
            None => Ok(Transformed::no(e)),
        },
        _ => Ok(Transformed::no(e)),
    };
    let plan = Arc::unwrap_or_clone(subquery.subquery)
        .transform_up(|node| node.map_expressions(|e| e.transform_up(swap)))?;
    if !plan.transformed {
        return Ok(Transformed::no(Subquery {
            subquery: Arc::new(plan.data),
            ..subquery
        }));
    }
    let mut outer = Vec::new();
    for e in subquery.outer_ref_columns {
        let e = e.transform_up(swap)?.data;
        if !outer.contains(&e) {
            outer.push(e);
        }
    }
    Ok(Transformed::yes(Subquery {
        subquery: Arc::new(plan.data),
        outer_ref_columns: outer,
        spans: subquery.spans,
    }))
}

/// A column a subquery nested in another subquery names from outside both
/// (`WHERE c.c_acctbal > (SELECT avg(...) FROM customer c2 WHERE
/// c2.c_nationkey = n.n_nationkey)` inside a subquery of `nation n`), which
/// DataFusion decorrelates one level at a time and then cannot find.
pub fn two_levels_out(plan: &LogicalPlan) -> Option<Column> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        for subquery in subqueries_of(node) {
            found = nested_reaching_out(&subquery);
            if found.is_some() {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

/// The subquery plans `node` holds: its expressions' and, for a LATERAL,
/// its own.
fn subqueries_of(node: &LogicalPlan) -> Vec<Arc<LogicalPlan>> {
    let mut plans = Vec::new();
    if let LogicalPlan::Subquery(s) = node {
        plans.push(Arc::clone(&s.subquery));
    }
    let _ = node.apply_expressions(|e| {
        e.apply(|e| {
            match e {
                Expr::ScalarSubquery(s) => plans.push(Arc::clone(&s.subquery)),
                Expr::Exists(x) => plans.push(Arc::clone(&x.subquery.subquery)),
                Expr::InSubquery(i) => plans.push(Arc::clone(&i.subquery.subquery)),
                _ => {}
            }
            Ok(TreeNodeRecursion::Continue)
        })
    });
    plans
}

/// An outer column a subquery nested directly in `subquery` names that no
/// node of `subquery` has.
fn nested_reaching_out(subquery: &LogicalPlan) -> Option<Column> {
    let mut own = Vec::new();
    let _ = subquery.apply(|node| {
        own.push(Arc::clone(node.schema()));
        Ok(TreeNodeRecursion::Continue)
    });
    let mut found = None;
    let _ = subquery.apply(|node| {
        for nested in subqueries_of(node) {
            let _ = nested.apply(|n| {
                n.apply_expressions(|e| {
                    e.apply(|e| {
                        if let Expr::OuterReferenceColumn(_, c) = e
                            && !own.iter().any(|schema| schema.has_column(c))
                        {
                            found = Some(c.clone());
                            return Ok(TreeNodeRecursion::Stop);
                        }
                        Ok(TreeNodeRecursion::Continue)
                    })
                })
            });
        }
        Ok(match found {
            Some(_) => TreeNodeRecursion::Stop,
            None => TreeNodeRecursion::Continue,
        })
    });
    found
}
