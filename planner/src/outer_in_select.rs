//! A correlated scalar subquery whose select list names an outer column
//! beside its aggregates: `(SELECT sum(o_totalprice) / c.c_acctbal FROM
//! orders o WHERE o.o_custkey = c.c_custkey)`. DataFusion decorrelates a
//! subquery whose outer columns are in its `WHERE` only, and refused this
//! one. An aggregate of all the subquery's rows is one row whatever the
//! outer row, so the expression is computed outside: `(SELECT
//! sum(o_totalprice) FROM orders o WHERE o.o_custkey = c.c_custkey) /
//! c.c_acctbal`, one subquery per aggregate the expression names (each a
//! join DataFusion plans as for any correlated aggregate). A condition of
//! the subquery's `WHERE` on outer columns only (`... AND n.n_regionkey >
//! 0`), which DataFusion did not decorrelate past the aggregate either,
//! chooses between the subquery without it and the aggregate of no rows:
//! `CASE WHEN n.n_regionkey > 0 THEN (SELECT count(*) ... WHERE
//! c.c_nationkey = n.n_nationkey) ELSE (SELECT count(*) ... WHERE false)
//! END` (a NULL condition keeps no row, as the `ELSE`). An analyzer rule;
//! an outer column inside an aggregate's argument, or a subquery that is
//! not one ungrouped aggregate, is left as written. A LATERAL's select
//! list naming outer columns is [`OuterInLateralSelect`].

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    Aggregate, Expr, Filter, Join, JoinType, LogicalPlan, LogicalPlanBuilder, Projection, Subquery,
    SubqueryAlias, lit, when,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct OuterInSelect;

impl AnalyzerRule for OuterInSelect {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let names = NamePreserver::new(&node);
            node.map_expressions(|e| {
                let name = names.save(&e);
                let t = e.transform_up(|e| match e {
                    Expr::ScalarSubquery(s) => match outer_only_split(&s)? {
                        Some((condition, with, without)) => {
                            let (with, without) = (outside(with)?.data, outside(without)?.data);
                            Ok(Transformed::yes(when(condition, with).otherwise(without)?))
                        }
                        None => outside(s),
                    },
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(t.update_data(|e| name.restore(e)))
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_outer_in_select"
    }
}

fn has_outer(e: &Expr) -> bool {
    e.contains_outer()
}

/// The expression of `subquery` computed outside it, or the subquery.
fn outside(subquery: Subquery) -> Result<Transformed<Expr>> {
    let LogicalPlan::Projection(projection) = subquery.subquery.as_ref() else {
        return Ok(Transformed::no(Expr::ScalarSubquery(subquery)));
    };
    let one_row = matches!(
        projection.input.as_ref(),
        LogicalPlan::Aggregate(a) if a.group_expr.is_empty() && !a.aggr_expr.iter().any(has_outer)
    );
    let [item] = projection.expr.as_slice() else {
        return Ok(Transformed::no(Expr::ScalarSubquery(subquery)));
    };
    if !one_row || !has_outer(item) || holds_subquery(item) {
        return Ok(Transformed::no(Expr::ScalarSubquery(subquery)));
    }
    let mut item = item.clone();
    while let Expr::Alias(a) = item {
        item = *a.expr;
    }
    let input = Arc::clone(&projection.input);
    let spans = subquery.spans.clone();
    let rewritten = item.transform_up(|e| match e {
        Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
        Expr::Column(c) => {
            let plan = LogicalPlanBuilder::from(Arc::clone(&input))
                .project(vec![Expr::Column(c)])?
                .build()?;
            let outer_ref_columns = outer_references(&plan);
            Ok(Transformed::new(
                Expr::ScalarSubquery(Subquery {
                    subquery: Arc::new(plan),
                    outer_ref_columns,
                    spans: spans.clone(),
                }),
                true,
                TreeNodeRecursion::Continue,
            ))
        }
        e => Ok(Transformed::no(e)),
    })?;
    Ok(Transformed::yes(rewritten.data))
}

/// The outer columns `plan`'s own nodes name.
fn outer_references(plan: &LogicalPlan) -> Vec<Expr> {
    let mut found: Vec<Expr> = Vec::new();
    let _ = plan.apply(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if matches!(e, Expr::OuterReferenceColumn(..)) && !found.contains(e) {
                    found.push(e.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    found
}

/// `(condition, subquery without it, subquery of no rows)` where
/// `subquery` is one ungrouped aggregate over a filter with conjuncts on
/// outer columns only; outer columns of `condition` as the node's own.
fn outer_only_split(subquery: &Subquery) -> Result<Option<(Expr, Subquery, Subquery)>> {
    let LogicalPlan::Projection(projection) = subquery.subquery.as_ref() else {
        return Ok(None);
    };
    let LogicalPlan::Aggregate(aggregate) = projection.input.as_ref() else {
        return Ok(None);
    };
    let LogicalPlan::Filter(filter) = aggregate.input.as_ref() else {
        return Ok(None);
    };
    if !aggregate.group_expr.is_empty() {
        return Ok(None);
    }
    let (outer_only, rest): (Vec<&Expr>, Vec<&Expr>) = split_conjunction(&filter.predicate)
        .into_iter()
        .partition(|c| c.contains_outer() && c.column_refs().is_empty());
    let Some(condition) = conjunction(outer_only.into_iter().cloned()) else {
        return Ok(None);
    };
    let condition = condition
        .transform_up(|e| match e {
            Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
            e => Ok(Transformed::no(e)),
        })?
        .data;
    let rebuilt = |predicate: Option<Expr>| -> Result<Subquery> {
        let input = match predicate {
            Some(p) => LogicalPlan::Filter(Filter::try_new(p, Arc::clone(&filter.input))?),
            None => filter.input.as_ref().clone(),
        };
        let aggregate = LogicalPlan::Aggregate(Aggregate::try_new(
            Arc::new(input),
            aggregate.group_expr.clone(),
            aggregate.aggr_expr.clone(),
        )?);
        let plan = LogicalPlan::Projection(Projection::try_new(
            projection.expr.clone(),
            Arc::new(aggregate),
        )?);
        Ok(Subquery {
            outer_ref_columns: outer_references(&plan),
            subquery: Arc::new(plan),
            spans: subquery.spans.clone(),
        })
    };
    let with = rebuilt(conjunction(rest.into_iter().cloned()))?;
    let without = rebuilt(Some(lit(false)))?;
    Ok(Some((condition, with, without)))
}

/// The analyzer rule for a LATERAL whose select list names outer columns:
/// `CROSS JOIN LATERAL (SELECT o_totalprice - c.c_acctbal AS d FROM orders
/// o WHERE o.o_custkey = c.c_custkey) x`. Each row of the LATERAL is made
/// for one outer row, so an item naming outer columns is computed above
/// the join, from the inner columns it names (which the LATERAL selects
/// instead) and the outer row's; of a LEFT JOIN LATERAL, NULL where the
/// LATERAL had no row. DataFusion refused it ("Physical plan does not
/// support logical expression OuterReferenceColumn").
#[derive(Debug, Default)]
pub struct OuterInLateralSelect;

impl AnalyzerRule for OuterInLateralSelect {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Join(join) => lateral_items_above(join),
            node => Ok(Transformed::no(node)),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_outer_in_lateral_select"
    }
}

/// Marks the rows a LEFT JOIN LATERAL found.
const FOUND: &str = "__squall_lateral_row";

fn lateral_items_above(join: Join) -> Result<Transformed<LogicalPlan>> {
    let unchanged = |join: Join| Ok(Transformed::no(LogicalPlan::Join(join)));
    if !matches!(join.join_type, JoinType::Inner | JoinType::Left) {
        return unchanged(join);
    }
    let LogicalPlan::SubqueryAlias(alias) = join.right.as_ref() else {
        return unchanged(join);
    };
    let LogicalPlan::Subquery(subquery) = alias.input.as_ref() else {
        return unchanged(join);
    };
    let LogicalPlan::Projection(projection) = subquery.subquery.as_ref() else {
        return unchanged(join);
    };
    // An item with a subquery of its own stays (its outer columns are the
    // LATERAL's rows').
    if !projection.expr.iter().any(has_outer) || projection.expr.iter().any(holds_subquery) {
        return unchanged(join);
    }
    // The join's own condition must not name an item computed above it.
    let moved: Vec<bool> = projection.expr.iter().map(has_outer).collect();
    let right_schema = join.right.schema();
    let condition_names_moved = join.filter.as_ref().is_some_and(|f| {
        f.column_refs().iter().any(|c| {
            right_schema
                .index_of_column(c)
                .is_ok_and(|i| moved.get(i).copied().unwrap_or(false))
        })
    });
    if condition_names_moved {
        return unchanged(join);
    }
    let name = &alias.alias;
    let left = join.join_type == JoinType::Left;
    // Inside: the kept items, the inner columns the moved ones name, and
    // for a LEFT JOIN a mark of a row found.
    let mut inner: Vec<Expr> = Vec::new();
    let mut carried: Vec<Column> = Vec::new();
    for (expr, moved) in projection.expr.iter().zip(&moved) {
        if !moved {
            inner.push(expr.clone());
            continue;
        }
        for c in expr.column_refs() {
            if !carried.contains(c) {
                carried.push(c.clone());
            }
        }
    }
    let carried_name = |i: usize| format!("__squall_lateral_column{i}");
    for (i, c) in carried.iter().enumerate() {
        inner.push(Expr::Column(c.clone()).alias(carried_name(i)));
    }
    if left {
        inner.push(lit(true).alias(FOUND));
    }
    let inner_plan = LogicalPlanBuilder::from(Arc::clone(&projection.input))
        .project(inner)?
        .build()?;
    let right = LogicalPlan::SubqueryAlias(SubqueryAlias::try_new(
        Arc::new(LogicalPlan::Subquery(Subquery {
            outer_ref_columns: outer_references(&inner_plan),
            subquery: Arc::new(inner_plan),
            spans: subquery.spans.clone(),
        })),
        name.clone(),
    )?);
    let original = Arc::clone(join.right.schema());
    let left_fields = join.left.schema().fields().len();
    let joined = LogicalPlan::Join(Join::try_new(
        join.left,
        Arc::new(right),
        join.on,
        join.filter,
        join.join_type,
        join.join_constraint,
        join.null_equality,
        join.null_aware,
    )?);
    // Above: the outer row's columns, then the LATERAL's as it named them.
    let mut above: Vec<Expr> = joined
        .schema()
        .iter()
        .take(left_fields)
        .map(|(q, f)| Expr::Column(Column::from((q, f))))
        .collect();
    for (i, expr) in projection.expr.iter().enumerate() {
        let (qualifier, field) = original.qualified_field(i);
        let as_named = Column::new(qualifier.cloned(), field.name());
        if !moved[i] {
            above.push(Expr::Column(as_named));
            continue;
        }
        let mut value = expr.clone();
        while let Expr::Alias(a) = value {
            value = *a.expr;
        }
        let value = value
            .transform_up(|e| match e {
                Expr::OuterReferenceColumn(_, c) => Ok(Transformed::yes(Expr::Column(c))),
                Expr::Column(c) => {
                    let i = carried.iter().position(|k| *k == c).unwrap_or_default();
                    let inside = Column::new(Some(name.clone()), carried_name(i));
                    Ok(Transformed::yes(Expr::Column(inside)))
                }
                e => Ok(Transformed::no(e)),
            })?
            .data;
        let value = match left {
            true => when(
                Expr::Column(Column::new(Some(name.clone()), FOUND)).is_null(),
                lit(ScalarValue::try_from(field.data_type())?),
            )
            .otherwise(value)?,
            false => value,
        };
        above.push(value.alias_qualified(qualifier.cloned(), field.name()));
    }
    let plan = LogicalPlanBuilder::from(joined).project(above)?.build()?;
    Ok(Transformed::yes(plan))
}

/// Whether `e` holds a subquery, whose own outer columns are those of the
/// plan `e` is in.
pub(crate) fn holds_subquery(e: &Expr) -> bool {
    e.exists(|e| {
        Ok(matches!(
            e,
            Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
        ))
    })
    .unwrap_or(true)
}
