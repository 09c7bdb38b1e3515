//! Uncorrelated scalar subqueries that may return more than one row are
//! checked to return at most one (an analyzer rule).
//!
//! squall plans a scalar subquery as a join (DataFusion's
//! `ScalarSubqueryToJoin`, with `enable_physical_uncorrelated_scalar_subquery`
//! off: see `engine.rs`), and a join repeats each outer row once per
//! subquery row instead of failing as SQL requires. This rule wraps the
//! plan of every uncorrelated scalar subquery that DataFusion cannot prove
//! to return at most one row (`LogicalPlan::max_rows`: an aggregate without
//! grouping, a `LIMIT 1`, ...) in an aggregate of
//! [`squall_core::scalar_subquery`], which yields the one value (NULL for
//! none) and fails the query on a second row with DataFusion's message.
//! Subqueries that are already one row (TPC-H's q11, q15, q22) are left as
//! they are, so their plans do not change; so are those of at most one row
//! whose value DataFusion knows may be NULL ([`nullable_or_one_row`]).

use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, Subquery};
use datafusion::optimizer::AnalyzerRule;

/// The analyzer rule.
#[derive(Debug, Default)]
pub struct OneRowSubqueries;

impl AnalyzerRule for OneRowSubqueries {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            node.map_expressions(|e| {
                e.transform_up(|e| match e {
                    Expr::ScalarSubquery(sq)
                        if sq.outer_ref_columns.is_empty()
                            && (sq.subquery.max_rows().is_none_or(|rows| rows > 1)
                                || !nullable_or_one_row(&sq.subquery)) =>
                    {
                        Ok(Transformed::yes(Expr::ScalarSubquery(checked(sq)?)))
                    }
                    e => Ok(Transformed::no(e)),
                })
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_one_row_subqueries"
    }
}

/// Whether the value of a subquery planned as `plan` is NULL when it has no
/// row as DataFusion reads it (its column nullable), or it always has a
/// row (an aggregate without grouping, a constant). DataFusion takes a
/// scalar subquery to be NULL only where its column may be, and simplified
/// `coalesce((SELECT k FROM t ORDER BY k LIMIT 1), 0)` to its subquery and
/// `(SELECT 5 WHERE false) IS NULL` to false: such a subquery is wrapped as
/// one that may have more rows, whose value is nullable.
fn nullable_or_one_row(plan: &LogicalPlan) -> bool {
    plan.schema().field(0).is_nullable() || at_least_one_row(plan)
}

fn at_least_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate(a) => a.group_expr.is_empty(),
        LogicalPlan::EmptyRelation(e) => e.produce_one_row,
        LogicalPlan::Values(v) => !v.values.is_empty(),
        LogicalPlan::Projection(p) => at_least_one_row(&p.input),
        LogicalPlan::SubqueryAlias(a) => at_least_one_row(&a.input),
        LogicalPlan::Sort(s) => at_least_one_row(&s.input),
        _ => false,
    }
}

/// `sq` with its plan wrapped in the one-row check, its column's name kept.
fn checked(sq: Subquery) -> Result<Subquery> {
    let plan = Arc::unwrap_or_clone(sq.subquery);
    let (qualifier, field) = plan.schema().qualified_field(0);
    let name = field.name().clone();
    let column = Expr::Column(Column::new(qualifier.cloned(), name.clone()));
    let value = squall_core::scalar_subquery::udaf()
        .call(vec![column])
        .alias(name);
    let wrapped = LogicalPlanBuilder::from(plan)
        .aggregate(Vec::<Expr>::new(), vec![value])?
        .build()?;
    Ok(Subquery {
        subquery: Arc::new(wrapped),
        ..sq
    })
}
