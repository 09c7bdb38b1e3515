//! A correlated subquery with `LIMIT` (`CROSS JOIN LATERAL (SELECT ...
//! FROM orders o WHERE o.o_custkey = c.c_custkey ORDER BY o_totalprice
//! DESC LIMIT 3)`, the first rows of each group): an analyzer rule.
//! DataFusion decorrelates a subquery by pulling its correlated
//! conditions above it and joining, which a `LIMIT` blocks: it would
//! limit all groups' rows together, so DataFusion refuses ("Physical plan
//! does not support logical expression OuterReferenceColumn"). Trino and
//! DuckDB answer it. The rule ranks the rows of each group instead, as one
//! would write by hand: below the limit, `row_number() OVER (PARTITION BY
//! <the correlated keys> ORDER BY <the subquery's order>)`, kept where it
//! is in the limit's range, and the correlated equalities above that,
//! where DataFusion pulls them up as for any subquery.
//!
//! Rewritten only where every outer reference below the limit is an
//! equality of an inner expression with outer columns in a filter
//! (`WHERE`), and what lies between the filter and the limit is
//! projections, aliases, filters, sorts, `DISTINCT` or a grouped
//! aggregation (whose groups take the keys too). Anything else (a
//! correlated comparison other than `=`, an outer column in the select
//! list, a window below the limit) is left as written, to be refused with
//! squall's message. An `EXISTS` subquery is left to DataFusion, which
//! drops its limit.

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::expr::InSubquery;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    Aggregate, BinaryExpr, Distinct, Expr, ExprFunctionExt, FetchType, Limit, LogicalPlan,
    LogicalPlanBuilder, Operator, SkipType, Sort, Subquery, SubqueryAlias, lit,
};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct CorrelatedLimits;

impl AnalyzerRule for CorrelatedLimits {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut names = Names::default();
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Subquery(subquery) => {
                Ok(ranked_subquery(subquery, &mut names)?.update_data(LogicalPlan::Subquery))
            }
            node => node.map_expressions(|e| {
                e.transform_up(|e| match e {
                    Expr::ScalarSubquery(s) => {
                        Ok(ranked_subquery(s, &mut names)?.update_data(Expr::ScalarSubquery))
                    }
                    Expr::InSubquery(InSubquery {
                        expr,
                        subquery,
                        negated,
                    }) => Ok(
                        ranked_subquery(subquery, &mut names)?.update_data(|subquery| {
                            Expr::InSubquery(InSubquery {
                                expr,
                                subquery,
                                negated,
                            })
                        }),
                    ),
                    e => Ok(Transformed::no(e)),
                })
            }),
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_correlated_limits"
    }
}

/// Fresh column names for one statement.
#[derive(Default)]
struct Names(usize);

impl Names {
    fn next(&mut self, what: &str) -> String {
        self.0 += 1;
        format!("__squall_{what}{}", self.0)
    }
}

fn ranked_subquery(subquery: Subquery, names: &mut Names) -> Result<Transformed<Subquery>> {
    let Subquery {
        subquery: plan,
        outer_ref_columns,
        spans,
    } = subquery;
    let ranked = Arc::unwrap_or_clone(plan).transform_up(|node| match node {
        LogicalPlan::Limit(limit) if has_outer_reference(&limit.input) => {
            match ranked(&limit, names)? {
                Some(plan) => Ok(Transformed::yes(plan)),
                None => Ok(Transformed::no(LogicalPlan::Limit(limit))),
            }
        }
        node => Ok(Transformed::no(node)),
    })?;
    Ok(ranked.update_data(|plan| Subquery {
        subquery: Arc::new(plan),
        outer_ref_columns,
        spans,
    }))
}

fn has_outer_reference(plan: &LogicalPlan) -> bool {
    names_outer_columns(plan, false)
}

/// Whether a node of `plan` (and with `nested` of the subqueries inside
/// it) names an outer column.
pub(crate) fn names_outer_columns(plan: &LogicalPlan, nested: bool) -> bool {
    let mut found = false;
    let mut visit = |p: &LogicalPlan| {
        found = p.contains_outer_reference();
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    };
    let _ = match nested {
        true => plan.apply_with_subqueries(&mut visit),
        false => plan.apply(&mut visit),
    };
    found
}

/// `limit` as a ranking of each group's rows, or `None` where its
/// subquery is not of the shape the module docs describe.
fn ranked(limit: &Limit, names: &mut Names) -> Result<Option<LogicalPlan>> {
    let (SkipType::Literal(skip), FetchType::Literal(fetch)) =
        (limit.get_skip_type()?, limit.get_fetch_type()?)
    else {
        return Ok(None);
    };
    // One row, an aggregate of all the subquery's rows: kept or not.
    let mut one_row = limit.input.as_ref();
    while let LogicalPlan::Projection(_) | LogicalPlan::SubqueryAlias(_) = one_row {
        one_row = one_row.inputs()[0];
    }
    if matches!(one_row, LogicalPlan::Aggregate(a) if a.group_expr.is_empty()) {
        return Ok((skip == 0 && fetch != Some(0)).then(|| limit.input.as_ref().clone()));
    }
    // The projections and aliases between the limit and the sort that
    // orders its rows (ORDER BY a column the select list leaves out).
    let mut chain = Vec::new();
    let mut below = limit.input.as_ref();
    while let LogicalPlan::Projection(_) | LogicalPlan::SubqueryAlias(_) = below {
        chain.push(below);
        below = below.inputs()[0];
    }
    let (order, base) = match below {
        LogicalPlan::Sort(Sort {
            expr,
            input,
            fetch: None,
        }) => (expr.clone(), input.as_ref()),
        _ => {
            chain.clear();
            (Vec::new(), limit.input.as_ref())
        }
    };
    let Some(mut keyed) = keyed(base, names)? else {
        return Ok(None);
    };
    let rank = names.next("rank");
    let ranking = row_number()
        .partition_by(keyed.keys.iter().cloned().map(Expr::Column).collect())
        .order_by(order)
        .build()?
        .alias(&rank);
    let mut plan = LogicalPlanBuilder::from(keyed.plan)
        .window(vec![ranking])?
        .build()?;
    // The rank is carried up to the limit as the last key.
    keyed.keys.push(Column::from_name(rank));
    for node in chain.into_iter().rev() {
        (plan, keyed.keys) = carried(node, plan, keyed.keys)?;
    }
    let Some(rank) = keyed.keys.pop().map(Expr::Column) else {
        return Ok(None);
    };
    let mut predicate = rank.clone().gt(lit(skip as u64));
    if let Some(fetch) = fetch {
        predicate = predicate.and(rank.lt_eq(lit(skip.saturating_add(fetch) as u64)));
    }
    for (key, outer) in keyed.keys.into_iter().zip(keyed.outer) {
        predicate = predicate.and(Expr::Column(key).eq(outer));
    }
    let plan = LogicalPlanBuilder::from(plan)
        .filter(predicate)?
        .project(columns_of(&limit.input))?
        .build()?;
    Ok(Some(plan))
}

/// A subquery's plan without its correlated equalities: each equality's
/// inner side is a column of the plan (`keys`), to equal `outer`.
struct Keyed {
    plan: LogicalPlan,
    keys: Vec<Column>,
    outer: Vec<Expr>,
}

/// `plan` with its correlated equalities taken out (see [`Keyed`]), or
/// `None` where an outer reference is anywhere else.
fn keyed(plan: &LogicalPlan, names: &mut Names) -> Result<Option<Keyed>> {
    if !has_outer_reference(plan) {
        return Ok(Some(Keyed {
            plan: plan.clone(),
            keys: Vec::new(),
            outer: Vec::new(),
        }));
    }
    match plan {
        LogicalPlan::Filter(filter) => {
            let Some(Keyed {
                plan: input,
                mut keys,
                mut outer,
            }) = keyed(&filter.input, names)?
            else {
                return Ok(None);
            };
            let mut kept = Vec::new();
            let mut inner = Vec::new();
            for conjunct in split_conjunction(&filter.predicate) {
                if !conjunct.contains_outer() {
                    kept.push(conjunct.clone());
                    continue;
                }
                let Some((i, o)) = correlated_equality(conjunct) else {
                    return Ok(None);
                };
                let name = names.next("key");
                inner.push(i.alias(&name));
                keys.push(Column::from_name(name));
                outer.push(o);
            }
            let mut builder = LogicalPlanBuilder::from(input);
            if let Some(predicate) = conjunction(kept) {
                builder = builder.filter(predicate)?;
            }
            let filtered = builder.build()?;
            let projected = columns_of(&filtered).into_iter().chain(inner);
            let plan = LogicalPlanBuilder::from(filtered)
                .project(projected)?
                .build()?;
            Ok(Some(Keyed { plan, keys, outer }))
        }
        LogicalPlan::Projection(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Sort(Sort { fetch: None, .. })
        | LogicalPlan::Distinct(Distinct::All(_)) => carried_keyed(plan, names),
        LogicalPlan::Aggregate(Aggregate { group_expr, .. })
            if !group_expr.is_empty() && !is_grouping_set(group_expr) =>
        {
            carried_keyed(plan, names)
        }
        _ => Ok(None),
    }
}

fn is_grouping_set(group_expr: &[Expr]) -> bool {
    matches!(group_expr, [Expr::GroupingSet(_)])
}

/// [`keyed`] of a node whose own expressions name no outer column.
fn carried_keyed(plan: &LogicalPlan, names: &mut Names) -> Result<Option<Keyed>> {
    if plan.contains_outer_reference() {
        return Ok(None);
    }
    let input = plan.inputs()[0];
    let Some(Keyed {
        plan: input,
        keys,
        outer,
    }) = keyed(input, names)?
    else {
        return Ok(None);
    };
    let (plan, keys) = carried(plan, input, keys)?;
    Ok(Some(Keyed { plan, keys, outer }))
}

/// `node` over `input`, which has `keys` beside `node`'s input's columns,
/// passing the keys through; the keys as `node` names them.
fn carried(
    node: &LogicalPlan,
    input: LogicalPlan,
    keys: Vec<Column>,
) -> Result<(LogicalPlan, Vec<Column>)> {
    match node {
        LogicalPlan::Projection(p) => {
            let exprs = p
                .expr
                .iter()
                .cloned()
                .chain(keys.iter().cloned().map(Expr::Column));
            let plan = LogicalPlanBuilder::from(input).project(exprs)?.build()?;
            Ok((plan, keys))
        }
        LogicalPlan::SubqueryAlias(SubqueryAlias { alias, .. }) => {
            let plan = LogicalPlanBuilder::from(input)
                .alias(alias.clone())?
                .build()?;
            let keys = keys
                .into_iter()
                .map(|k| Column::new(Some(alias.clone()), k.name))
                .collect();
            Ok((plan, keys))
        }
        LogicalPlan::Aggregate(a) => {
            let groups = a
                .group_expr
                .iter()
                .cloned()
                .chain(keys.iter().cloned().map(Expr::Column));
            let plan = LogicalPlanBuilder::from(input)
                .aggregate(groups, a.aggr_expr.clone())?
                .build()?;
            Ok((plan, keys))
        }
        LogicalPlan::Sort(s) => {
            let plan = LogicalPlanBuilder::from(input)
                .sort_with_limit(s.expr.clone(), s.fetch)?
                .build()?;
            Ok((plan, keys))
        }
        LogicalPlan::Distinct(Distinct::All(_)) => {
            let plan = LogicalPlanBuilder::from(input).distinct()?.build()?;
            Ok((plan, keys))
        }
        _ => unreachable!("carried only through the nodes keyed() accepts"),
    }
}

/// `inner = outer` (either way round) where `outer` names only outer
/// columns and `inner` only the subquery's: `(inner, outer)`.
pub(crate) fn correlated_equality(conjunct: &Expr) -> Option<(Expr, Expr)> {
    let Expr::BinaryExpr(BinaryExpr {
        left,
        op: Operator::Eq,
        right,
    }) = conjunct
    else {
        return None;
    };
    let only_outer = |e: &Expr| e.contains_outer() && e.column_refs().is_empty();
    let only_inner = |e: &Expr| !e.contains_outer();
    if only_inner(left) && only_outer(right) {
        Some((left.as_ref().clone(), right.as_ref().clone()))
    } else if only_outer(left) && only_inner(right) {
        Some((right.as_ref().clone(), left.as_ref().clone()))
    } else {
        None
    }
}

/// The columns of `plan`'s output, as expressions.
fn columns_of(plan: &LogicalPlan) -> Vec<Expr> {
    plan.schema()
        .iter()
        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
        .collect()
}
