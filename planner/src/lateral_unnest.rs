//! `FROM t CROSS JOIN UNNEST(t.tags) AS u(tag)`: Trino's (and Athena's)
//! way to read an array column as rows, the idiom of every table with
//! arrays in it. DataFusion plans the UNNEST as a subquery over one empty
//! row that refers to the outer table's columns, and cannot run it
//! ("Physical plan does not support logical expression
//! OuterReferenceColumn"). This rule plans it as the unnest of the outer
//! rows themselves: the subquery's projections and unnest applied to the
//! left side, its columns carried through, then the join's output columns
//! in the join's order and names (`t.*`, `u.tag`).
//!
//! ```text
//! Cross Join                                 Projection: t.*, u.tag
//!   t                                          Projection: t.*, x AS __squall_unnest_0
//!   SubqueryAlias: u                ──▶          Unnest: lists[p]
//!     Subquery                                     Projection: t.*, t.tags AS p
//!       Projection: x AS tag                         t
//!         Unnest: lists[p]
//!           Projection: outer_ref(t.tags) AS p
//!             EmptyRelation: rows=1
//! ```
//!
//! `LEFT JOIN UNNEST(...) AS u(x) ON true` keeps the rows whose array is
//! NULL or empty, with NULLs (Trino's); `CROSS JOIN` and the comma drop
//! them. `WITH ORDINALITY` is written before planning, in [`rewrite`], as
//! one more array to unnest beside the others (the positions `1..n` of the
//! longest), and so is the UNNEST of a map or an array of rows into
//! several columns (`AS u(k, v)`), as its parts side by side.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, NullHandling};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    Expr, JoinType, LogicalPlan, Projection, Unnest, logical_plan::builder::unnest_with_options,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::lit;
use datafusion::sql::parser::Statement;
use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, TableFactor, VisitMut, VisitorMut};

#[derive(Debug, Default)]
pub struct LateralUnnest;

impl AnalyzerRule for LateralUnnest {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let LogicalPlan::Join(join) = &node else {
                return Ok(Transformed::no(node));
            };
            let null_handling = match (join.join_type, &join.filter) {
                _ if !join.on.is_empty() => return Ok(Transformed::no(node)),
                (JoinType::Inner, None) => None,
                (JoinType::Left, None) => Some(NullHandling::PreserveAndExpandEmpty),
                (JoinType::Left, Some(f)) if *f == lit(true) => {
                    Some(NullHandling::PreserveAndExpandEmpty)
                }
                _ => return Ok(Transformed::no(node)),
            };
            let right = join.right.as_ref();
            let subquery = match right {
                LogicalPlan::SubqueryAlias(alias) => alias.input.as_ref(),
                other => other,
            };
            let LogicalPlan::Subquery(subquery) = subquery else {
                return Ok(Transformed::no(node));
            };
            if !is_unnest_of_one_row(&subquery.subquery) {
                return Ok(Transformed::no(node));
            }
            let left = join.left.as_ref();
            let carried: Vec<Expr> = left
                .schema()
                .iter()
                .map(|(q, f)| Expr::Column(Column::new(q.cloned(), f.name())))
                .collect();
            let unnested = over_rows(&subquery.subquery, left, &carried, null_handling, true)?;
            let mut out = carried;
            for (i, (qualifier, field)) in right.schema().iter().enumerate() {
                out.push(
                    Expr::Column(Column::new_unqualified(internal_name(i)))
                        .alias_qualified(qualifier.cloned(), field.name()),
                );
            }
            Projection::try_new(out, Arc::new(unnested))
                .map(|p| Transformed::yes(LogicalPlan::Projection(p)))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "squall_lateral_unnest"
    }
}

/// The name the unnest's `i`th output column carries up to the join's
/// projection (unqualified names beside the left side's could be ambiguous).
fn internal_name(i: usize) -> String {
    format!("__squall_unnest_{i}")
}

/// Whether `plan` is projections and unnests over one empty row: the
/// UNNEST of a FROM clause.
fn is_unnest_of_one_row(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Projection(p) => is_unnest_of_one_row(&p.input),
        LogicalPlan::Unnest(u) => is_unnest_of_one_row(&u.input),
        LogicalPlan::EmptyRelation(e) => e.produce_one_row,
        _ => false,
    }
}

/// `plan` (projections and unnests over one empty row) over `rows`
/// instead, each projection carrying `carried` through, outer references
/// read as `rows`' columns; the top projection's outputs named
/// [`internal_name`].
fn over_rows(
    plan: &LogicalPlan,
    rows: &LogicalPlan,
    carried: &[Expr],
    null_handling: Option<NullHandling>,
    top: bool,
) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::EmptyRelation(_) => Ok(rows.clone()),
        LogicalPlan::Projection(p) => {
            let input = over_rows(&p.input, rows, carried, null_handling, false)?;
            let mut exprs = carried.to_vec();
            for (i, e) in p.expr.iter().enumerate() {
                let (name, e) = match e.clone() {
                    Expr::Alias(a) => (a.name, *a.expr),
                    e => {
                        let name = e.schema_name().to_string();
                        (name, e)
                    }
                };
                let e = outer_as_columns(e)?;
                exprs.push(e.alias(if top { internal_name(i) } else { name }));
            }
            Projection::try_new(exprs, Arc::new(input)).map(LogicalPlan::Projection)
        }
        LogicalPlan::Unnest(Unnest {
            input,
            exec_columns,
            options,
            ..
        }) => {
            let input = over_rows(input, rows, carried, null_handling, false)?;
            let mut options = options.clone();
            if let Some(n) = null_handling {
                options = options.with_null_handling(n);
            }
            unnest_with_options(input, exec_columns.clone(), options)
        }
        other => Err(DataFusionError::Internal(format!(
            "lateral UNNEST: unexpected {} below the unnest",
            other.display()
        ))),
    }
}

fn outer_as_columns(e: Expr) -> Result<Expr> {
    e.transform_up(|e| match e {
        Expr::OuterReferenceColumn(_, column) => Ok(Transformed::yes(Expr::Column(column))),
        e => Ok(Transformed::no(e)),
    })
    .map(|t| t.data)
}

/// `statement` with Trino's UNNEST forms written as DataFusion's: each
/// `UNNEST(a, ...) WITH ORDINALITY AS u(x, ..., n)` as `UNNEST(a, ...,
/// generate_series(1, n))` over the longest array's length `n` (the
/// positions, as Trino numbers them from 1); and the UNNEST of one map or
/// array of rows into several columns, `UNNEST(m) AS u(k, v)`, as the
/// unnest of its parts side by side
/// (`squall_core::trino_udfs::unnest_part`).
pub fn rewrite(statement: Statement) -> Result<Statement> {
    crate::trino_sql::rewritten(statement, &mut Ordinality)
}

struct Ordinality;

impl VisitorMut for Ordinality {
    type Break = DataFusionError;

    fn pre_visit_table_factor(
        &mut self,
        factor: &mut TableFactor,
    ) -> std::ops::ControlFlow<DataFusionError> {
        let TableFactor::UNNEST {
            array_exprs,
            with_ordinality,
            alias,
            ..
        } = factor
        else {
            return std::ops::ControlFlow::Continue(());
        };
        // `ARRAY[a, b]` of the row's columns: DataFusion's planner resolves
        // them as outer references only in a function call.
        for e in array_exprs.iter_mut() {
            if let std::ops::ControlFlow::Break(err) = e.visit(&mut ArraysAsCalls) {
                return std::ops::ControlFlow::Break(err);
            }
        }
        let columns = alias.as_ref().map_or(0, |a| a.columns.len());
        let wanted = columns.saturating_sub(usize::from(*with_ordinality));
        if let [one] = array_exprs.as_slice()
            && wanted > 1
        {
            let parts: Result<Vec<_>> = (0..wanted)
                .map(|i| {
                    crate::trino_sql::expression(
                        &format!(
                            "{}({one}, {i})",
                            squall_core::trino_udfs::unnest_part::UNNEST_PART
                        ),
                        "UNNEST of a map or of rows",
                    )
                })
                .collect();
            match parts {
                Ok(parts) => *array_exprs = parts,
                Err(e) => return std::ops::ControlFlow::Break(e),
            }
        }
        if !*with_ordinality || array_exprs.is_empty() {
            return std::ops::ControlFlow::Continue(());
        }
        let lengths: Vec<String> = array_exprs
            .iter()
            .map(|a| format!("cardinality({a})"))
            .collect();
        let longest = match lengths.as_slice() {
            [one] => one.clone(),
            many => format!("greatest({})", many.join(", ")),
        };
        match crate::trino_sql::expression(
            &format!("generate_series(1, CAST({longest} AS BIGINT))"),
            "UNNEST WITH ORDINALITY",
        ) {
            Ok(positions) => {
                array_exprs.push(positions);
                *with_ordinality = false;
                std::ops::ControlFlow::Continue(())
            }
            Err(e) => std::ops::ControlFlow::Break(e),
        }
    }
}

/// `ARRAY[a, b, ...]` written as `make_array(a, b, ...)`.
struct ArraysAsCalls;

impl VisitorMut for ArraysAsCalls {
    type Break = DataFusionError;

    fn post_visit_expr(&mut self, expr: &mut SqlExpr) -> std::ops::ControlFlow<DataFusionError> {
        if let SqlExpr::Array(array) = expr {
            let items: Vec<String> = array.elem.iter().map(|e| e.to_string()).collect();
            match crate::trino_sql::expression(
                &format!("make_array({})", items.join(", ")),
                "UNNEST of ARRAY[...]",
            ) {
                Ok(call) => *expr = call,
                Err(e) => return std::ops::ControlFlow::Break(e),
            }
        }
        std::ops::ControlFlow::Continue(())
    }
}
