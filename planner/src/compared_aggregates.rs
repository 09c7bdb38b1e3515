//! A correlated aggregate whose `WHERE` compares with outer columns by
//! other than equality: `(SELECT count(*) FROM orders o WHERE o.o_custkey
//! = c.c_custkey AND o.o_totalprice > c.c_acctbal * 20)`. DataFusion
//! decorrelates an aggregate by grouping it by the inner sides of
//! equalities, which a comparison does not give, and refused it. An
//! analyzer rule computes it for each distinct value of the outer columns
//! the subquery names, as Trino and DuckDB decorrelate:
//!
//! ```text
//! SELECT d0, d1, <the subquery's value> FROM
//!   (SELECT DISTINCT c_custkey AS d0, c_acctbal AS d1 FROM <the outer input>)
//!   LEFT JOIN (SELECT *, true AS found FROM orders o)
//!     ON o.o_custkey = d0 AND o.o_totalprice > d1 * 20
//! GROUP BY d0, d1
//! ```
//!
//! each aggregate counting only rows found (`count(*)` of none is 0, `sum`
//! NULL, as the subquery's), then joined to the outer input on those
//! columns (a NULL equal to a NULL) and read in place of the subquery: a
//! hash join on the equalities with the comparison beside it, one row per
//! distinct outer value, whatever the outer rows repeat. The same holds of
//! an aggregate naming outer columns in its argument (`max(o_totalprice -
//! c.c_acctbal)`), which reads them from the distinct values. Rewritten
//! for a subquery in a select list or a filter of one ungrouped aggregate
//! whose value names no outer column (`crate::outer_in_select` moves those
//! out first); equalities alone are left to DataFusion.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema, ExprSchema};
use datafusion::error::Result;
use datafusion::functions::expr_fn::coalesce;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    Expr, ExprSchemable, JoinType, LogicalPlan, LogicalPlanBuilder, Subquery, lit,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct ComparedAggregates;

impl AnalyzerRule for ComparedAggregates {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut names = 0usize;
        plan.transform_up_with_subqueries(|node| {
            if !matches!(node, LogicalPlan::Projection(_) | LogicalPlan::Filter(_)) {
                return Ok(Transformed::no(node));
            }
            let input = Arc::new(node.inputs()[0].clone());
            let mut joined = (*input).clone();
            let mut changed = false;
            let saver = NamePreserver::new(&node);
            let node = node.map_expressions(|e| {
                let name = saver.save(&e);
                let t = e.transform_up(|e| match e {
                    Expr::ScalarSubquery(s) => match domain_join(&s, &input, &joined, names)? {
                        Some((plan, value)) => {
                            names += 1;
                            joined = plan;
                            changed = true;
                            Ok(Transformed::yes(value))
                        }
                        None => Ok(Transformed::no(Expr::ScalarSubquery(s))),
                    },
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(t.update_data(|e| name.restore(e)))
            })?;
            if !changed {
                return Ok(node);
            }
            let kept: Vec<Expr> = columns_of(input.schema());
            let node = match node.data {
                LogicalPlan::Projection(p) => {
                    LogicalPlanBuilder::from(joined).project(p.expr)?.build()?
                }
                LogicalPlan::Filter(f) => LogicalPlanBuilder::from(joined)
                    .filter(f.predicate)?
                    .project(kept)?
                    .build()?,
                other => other,
            };
            Ok(Transformed::new(node, true, TreeNodeRecursion::Continue))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_compared_aggregates"
    }
}

fn columns_of(schema: &DFSchema) -> Vec<Expr> {
    schema
        .iter()
        .map(|(q, f)| Expr::Column(Column::from((q, f))))
        .collect()
}

/// `joined` (the node's input with the values of earlier subqueries
/// joined) with the value of `subquery` joined too, and that value; `None`
/// where the subquery is not of the shape the module docs describe.
fn domain_join(
    subquery: &Subquery,
    input: &LogicalPlan,
    joined: &LogicalPlan,
    n: usize,
) -> Result<Option<(LogicalPlan, Expr)>> {
    let LogicalPlan::Projection(projection) = subquery.subquery.as_ref() else {
        return Ok(None);
    };
    let LogicalPlan::Aggregate(aggregate) = projection.input.as_ref() else {
        return Ok(None);
    };
    // The rows aggregated and the subquery's conditions (none: all rows).
    let (rows, predicate) = match aggregate.input.as_ref() {
        LogicalPlan::Filter(filter) => (&filter.input, Some(&filter.predicate)),
        _ => (&aggregate.input, None),
    };
    let [value] = projection.expr.as_slice() else {
        return Ok(None);
    };
    let shaped = aggregate.group_expr.is_empty()
        && !value.contains_outer()
        && !crate::correlated_limit::names_outer_columns(rows, true);
    if !shaped {
        return Ok(None);
    }
    // A subquery in the conditions would sit in the join's condition,
    // where DataFusion plans none.
    if predicate.is_some_and(crate::outer_in_select::holds_subquery) {
        return Ok(None);
    }
    // Only where a conjunct is more than `inner = outer`, or an aggregate
    // names an outer column.
    let conjuncts = predicate.map(split_conjunction).unwrap_or_default();
    let compared = conjuncts
        .iter()
        .any(|c| c.contains_outer() && crate::correlated_limit::correlated_equality(c).is_none())
        || aggregate.aggr_expr.iter().any(|a| a.contains_outer());
    if !compared {
        return Ok(None);
    }
    // The outer columns named, which must be the node's input's.
    let mut outer: Vec<Column> = Vec::new();
    for e in conjuncts.iter().copied().chain(&aggregate.aggr_expr) {
        let _ = e.apply(|e| {
            if let Expr::OuterReferenceColumn(_, col) = e
                && !outer.contains(col)
            {
                outer.push(col.clone());
            }
            Ok(TreeNodeRecursion::Continue)
        });
    }
    if outer.iter().any(|c| !input.schema().has_column(c)) {
        return Ok(None);
    }
    let d = |i: usize| format!("__squall_domain{n}_{i}");
    let found = format!("__squall_found{n}");
    let value_name = format!("__squall_value{n}");
    // The distinct outer values.
    let domain = LogicalPlanBuilder::from(input.clone())
        .project(
            outer
                .iter()
                .enumerate()
                .map(|(i, c)| Expr::Column(c.clone()).alias(d(i))),
        )?
        .distinct()?
        .build()?;
    // The inner rows, marked.
    let inner = LogicalPlanBuilder::from(Arc::clone(rows))
        .project(
            columns_of(rows.schema())
                .into_iter()
                .chain([lit(true).alias(&found)]),
        )?
        .build()?;
    let domain_column = |e: Expr| {
        e.transform_up(|e| match e {
            Expr::OuterReferenceColumn(_, c) => {
                let i = outer.iter().position(|o| *o == c).unwrap_or_default();
                Ok(Transformed::yes(Expr::Column(Column::from_name(d(i)))))
            }
            e => Ok(Transformed::no(e)),
        })
        .map(|t| t.data)
    };
    let on = match predicate {
        Some(p) => domain_column(p.clone())?,
        None => lit(true),
    };
    let counted = Expr::Column(Column::from_name(&found)).is_not_null();
    let aggregates: Vec<Expr> = aggregate
        .aggr_expr
        .iter()
        .map(|a| only_found(&domain_column(a.clone())?, &counted, a))
        .collect::<Result<_>>()?;
    let groups: Vec<Expr> = (0..outer.len())
        .map(|i| Expr::Column(Column::from_name(d(i))))
        .collect();
    let values = LogicalPlanBuilder::from(domain)
        .join_on(inner, JoinType::Left, [on])?
        .aggregate(groups.clone(), aggregates)?
        .project(groups.into_iter().chain([value.clone().alias(&value_name)]))?
        .build()?;
    // Joined to the outer rows on the outer columns, a NULL equal to a NULL.
    let mut keys = Vec::with_capacity(outer.len() * 2);
    for (i, c) in outer.iter().enumerate() {
        let (left, right) = (
            Expr::Column(c.clone()),
            Expr::Column(Column::from_name(d(i))),
        );
        let (field_type, nullable) = {
            let field = input.schema().field_from_column(c)?;
            (field.data_type().clone(), field.is_nullable())
        };
        if !nullable {
            keys.push(left.eq(right));
            continue;
        }
        let default = lit(ScalarValue::new_default(&field_type)?);
        keys.push(
            coalesce(vec![left.clone(), default.clone()])
                .eq(coalesce(vec![right.clone(), default])),
        );
        keys.push(left.is_null().eq(right.is_null()));
    }
    let plan = LogicalPlanBuilder::from(joined.clone())
        .join_on(values, JoinType::Left, keys)?
        .build()?;
    let value = Expr::Column(Column::from_name(value_name));
    // Typed as the subquery was.
    let typed = value.clone().cast_to(
        &subquery.subquery.schema().field(0).data_type().clone(),
        plan.schema(),
    )?;
    Ok(Some((plan, typed)))
}

/// `aggregate` counting only the rows `counted` keeps, under the name of
/// `named` (the aggregate as the subquery wrote it).
fn only_found(aggregate: &Expr, counted: &Expr, named: &Expr) -> Result<Expr> {
    let name = named.schema_name().to_string();
    let mut inner = aggregate.clone();
    let mut alias = None;
    if let Expr::Alias(a) = inner {
        alias = Some(a.name.clone());
        inner = *a.expr;
    }
    let Expr::AggregateFunction(AggregateFunction { func, mut params }) = inner else {
        return Ok(aggregate.clone());
    };
    params.filter = Some(Box::new(match params.filter.take() {
        Some(f) => f.as_ref().clone().and(counted.clone()),
        None => counted.clone(),
    }));
    Ok(Expr::AggregateFunction(AggregateFunction { func, params }).alias(alias.unwrap_or(name)))
}
