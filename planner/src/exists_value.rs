//! `EXISTS (subquery)` as a value (`SELECT c, EXISTS (...) AS has_orders`,
//! `CASE WHEN EXISTS (...) THEN ... END`): an analyzer rule.
//!
//! DataFusion 55 plans `EXISTS` in a WHERE clause (as a semi, anti or mark
//! join) but not in a select list, where it fails with "Physical plan does
//! not support logical expression Exists". This rule writes an `EXISTS`
//! in a projection as the equal `(SELECT count(*) FROM (subquery)) > 0`
//! (`NOT EXISTS`: `= 0`), a scalar subquery DataFusion decorrelates into a
//! join with an aggregation (a count is 0, not NULL, for an outer row with
//! no match), under the name the projection gave the expression. An
//! `EXISTS` inside an aggregation (`sum(CASE WHEN EXISTS (...) THEN 1
//! END)`) becomes such a value in a projection below it. A subquery's
//! top `ORDER BY` and `LIMIT n` (n >= 1) go: they do not change whether it
//! has a row, and DataFusion cannot decorrelate them.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::functions_aggregate::count::count_all;
use datafusion::logical_expr::expr::Exists;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Aggregate, Expr, FetchType, LogicalPlan, LogicalPlanBuilder, Projection, SkipType, Subquery,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::lit;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct ExistsAsValues;

impl AnalyzerRule for ExistsAsValues {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            if let LogicalPlan::Aggregate(aggregate) = &node
                && aggregate
                    .group_expr
                    .iter()
                    .chain(&aggregate.aggr_expr)
                    .any(has_exists)
            {
                return exists_below_aggregate(node).map(Transformed::yes);
            }
            if !matches!(node, LogicalPlan::Projection(_)) {
                return Ok(Transformed::no(node));
            }
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                let out = e.transform_up(|e| match e {
                    Expr::Exists(Exists { subquery, negated }) => {
                        Ok(Transformed::yes(counted(subquery, negated)?))
                    }
                    e => Ok(Transformed::no(e)),
                })?;
                Ok(out.update_data(|e| name.restore(e)))
            })?;
            match rewritten.transformed {
                true => rewritten.data.recompute_schema().map(Transformed::yes),
                false => Ok(rewritten),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_exists_as_values"
    }
}

fn has_exists(e: &Expr) -> bool {
    e.exists(|e| Ok(matches!(e, Expr::Exists(_))))
        .unwrap_or(false)
}

/// An aggregation whose arguments or keys hold `EXISTS`
/// (`sum(CASE WHEN EXISTS (...) THEN 1 END)`): each `EXISTS` is computed
/// as a column of a projection below it (where it is a value, above), and
/// the aggregation reads the column; its outputs keep their names.
fn exists_below_aggregate(node: LogicalPlan) -> Result<LogicalPlan> {
    let names = NamePreserver::new(&node);
    let LogicalPlan::Aggregate(aggregate) = node else {
        unreachable!("called on an aggregation")
    };
    let mut values = Vec::new();
    let mut lift = |e: Expr| -> Result<Expr> {
        let name = names.save(&e);
        let out = e.transform_up(|e| match e {
            Expr::Exists(Exists { subquery, negated }) => {
                let column = format!("__squall_exists_{}", values.len());
                values.push(counted(subquery, negated)?.alias(&column));
                Ok(Transformed::yes(Expr::Column(Column::from_name(column))))
            }
            e => Ok(Transformed::no(e)),
        })?;
        Ok(name.restore(out.data))
    };
    let group: Vec<Expr> = aggregate
        .group_expr
        .into_iter()
        .map(&mut lift)
        .collect::<Result<_>>()?;
    let aggr: Vec<Expr> = aggregate
        .aggr_expr
        .into_iter()
        .map(&mut lift)
        .collect::<Result<_>>()?;
    let input = aggregate.input;
    let columns = input
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .chain(values);
    let below = LogicalPlanBuilder::from(Arc::unwrap_or_clone(input))
        .project(columns)?
        .build()?;
    Ok(LogicalPlan::Aggregate(Aggregate::try_new(
        Arc::new(below),
        group,
        aggr,
    )?))
}

/// `(SELECT count(*) FROM (sq)) > 0`, or `= 0` when `negated`.
fn counted(sq: Subquery, negated: bool) -> Result<Expr> {
    let plan = without_order_or_limit(Arc::unwrap_or_clone(sq.subquery))?;
    let rows = LogicalPlanBuilder::from(plan)
        .aggregate(Vec::<Expr>::new(), vec![count_all()])?
        .build()?;
    let count = Expr::ScalarSubquery(Subquery {
        subquery: Arc::new(rows),
        outer_ref_columns: sq.outer_ref_columns,
        spans: sq.spans,
    });
    Ok(match negated {
        true => count.eq(lit(0i64)),
        false => count.gt(lit(0i64)),
    })
}

/// `plan` without the sorts and `LIMIT n` (n >= 1, no offset) at its top
/// or under its top projection, which do not change whether it has a row
/// and which DataFusion cannot decorrelate.
fn without_order_or_limit(plan: LogicalPlan) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Sort(sort) => without_order_or_limit(Arc::unwrap_or_clone(sort.input)),
        LogicalPlan::Limit(limit)
            if matches!(limit.get_skip_type()?, SkipType::Literal(0))
                && matches!(limit.get_fetch_type()?, FetchType::Literal(Some(n)) if n >= 1) =>
        {
            without_order_or_limit(Arc::unwrap_or_clone(limit.input))
        }
        LogicalPlan::Projection(p)
            if matches!(
                p.input.as_ref(),
                LogicalPlan::Sort(_) | LogicalPlan::Limit(_)
            ) =>
        {
            let input = without_order_or_limit(Arc::unwrap_or_clone(p.input))?;
            Ok(LogicalPlan::Projection(Projection::try_new(
                p.expr,
                Arc::new(input),
            )?))
        }
        plan => Ok(plan),
    }
}
