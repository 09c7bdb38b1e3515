//! `EXISTS (subquery)` and `x IN (subquery)` as values (`SELECT c, EXISTS
//! (...) AS has_orders`, `CASE WHEN x IN (...) THEN ... END`): an analyzer
//! rule.
//!
//! DataFusion 55 plans both in a WHERE clause (as semi, anti or mark
//! joins) but not in a select list, where it fails with "Physical plan
//! does not support logical expression Exists". This rule writes an `EXISTS`
//! in a projection as the equal `(SELECT count(*) FROM (subquery)) > 0`
//! (`NOT EXISTS`: `= 0`), a scalar subquery DataFusion decorrelates into a
//! join with an aggregation (a count is 0, not NULL, for an outer row with
//! no match), under the name the projection gave the expression; an `IN`
//! as the counts of the rows equal to `x`, of all rows and of NULL rows,
//! which give SQL's three values (see [`in_as_value`]). An `EXISTS` or
//! `IN` inside an aggregation (`sum(CASE WHEN EXISTS (...) THEN 1
//! END)`) becomes such a value in a projection below it. A subquery's
//! top `ORDER BY` and `LIMIT n` (n >= 1) go: they do not change whether it
//! has a row, and DataFusion cannot decorrelate them.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ExprSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::functions_aggregate::count::count_all;
use datafusion::logical_expr::expr::{Exists, InSubquery};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Aggregate, Expr, FetchType, LogicalPlan, LogicalPlanBuilder, Projection, SkipType, Subquery,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::{lit, when};

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
            let LogicalPlan::Projection(projection) = &node else {
                return Ok(Transformed::no(node));
            };
            let outer = Arc::clone(projection.input.schema());
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|e| {
                let name = names.save(&e);
                let out = e.transform_up(|e| as_value(e, &outer))?;
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
    e.exists(|e| Ok(matches!(e, Expr::Exists(_) | Expr::InSubquery(_))))
        .unwrap_or(false)
}

/// `e` as a value DataFusion plans, when it is an `EXISTS` or an `IN`
/// subquery; `outer` is the schema of the rows it is evaluated on.
fn as_value(e: Expr, outer: &DFSchema) -> Result<Transformed<Expr>> {
    match e {
        Expr::Exists(Exists { subquery, negated }) => {
            Ok(Transformed::yes(counted(subquery, negated)?))
        }
        Expr::InSubquery(InSubquery {
            expr,
            subquery,
            negated,
        }) => Ok(Transformed::yes(in_as_value(
            *expr, subquery, negated, outer,
        )?)),
        e => Ok(Transformed::no(e)),
    }
}

/// `x IN (subquery)` with SQL's three values, as counts of the subquery's
/// rows: NULL when `x` is NULL and the subquery has a row, or when no row
/// equals `x` and one is NULL; true when one equals `x`; false otherwise.
/// `NOT IN` is its negation.
fn in_as_value(x: Expr, sq: Subquery, negated: bool, outer: &DFSchema) -> Result<Expr> {
    let plan = without_order_or_limit(Arc::unwrap_or_clone(sq.subquery))?;
    let (qualifier, field) = plan.schema().qualified_field(0);
    let column = Expr::Column(Column::new(qualifier.cloned(), field.name()));
    // `x` as the subquery sees it: outer references.
    let mut x_refs = sq.outer_ref_columns.clone();
    let x_inside = x
        .clone()
        .transform(|e| match e {
            Expr::Column(c) => {
                let field = Arc::clone(outer.field_from_column(&c)?);
                let outer_ref = Expr::OuterReferenceColumn(field, c);
                x_refs.push(outer_ref.clone());
                Ok(Transformed::yes(outer_ref))
            }
            e => Ok(Transformed::no(e)),
        })?
        .data;
    let rows = |predicate: Option<Expr>, refs: Vec<Expr>| -> Result<Expr> {
        let mut builder = LogicalPlanBuilder::from(plan.clone());
        if let Some(p) = predicate {
            builder = builder.filter(p)?;
        }
        let counted = builder
            .aggregate(Vec::<Expr>::new(), vec![count_all()])?
            .build()?;
        Ok(Expr::ScalarSubquery(Subquery {
            subquery: Arc::new(counted),
            outer_ref_columns: refs,
            spans: sq.spans.clone(),
        }))
    };
    let any = rows(None, sq.outer_ref_columns.clone())?.gt(lit(0i64));
    let equal = rows(Some(column.clone().eq(x_inside)), x_refs)?.gt(lit(0i64));
    let nulls = rows(Some(column.is_null()), sq.outer_ref_columns.clone())?.gt(lit(0i64));
    let unknown = Expr::Literal(ScalarValue::Boolean(None), None);
    let value = when(
        x.is_null(),
        when(any, unknown.clone()).otherwise(lit(false))?,
    )
    .when(equal, lit(true))
    .when(nulls, unknown)
    .otherwise(lit(false))?;
    Ok(match negated {
        true => Expr::Not(Box::new(value)),
        false => value,
    })
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
    let outer = Arc::clone(aggregate.input.schema());
    let mut values = Vec::new();
    let mut lift = |e: Expr| -> Result<Expr> {
        let name = names.save(&e);
        let out = e.transform_up(|e| {
            let value = as_value(e, &outer)?;
            if !value.transformed {
                return Ok(value);
            }
            let column = format!("__squall_exists_{}", values.len());
            values.push(value.data.alias(&column));
            Ok(Transformed::yes(Expr::Column(Column::from_name(column))))
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
