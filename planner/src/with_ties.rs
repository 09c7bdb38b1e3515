//! `FETCH FIRST n ROWS WITH TIES` (the SQL standard's and Trino's): the
//! first `n` rows in the query's order, and every further row that ties
//! with the last of them on all the ORDER BY keys. DataFusion has no such
//! limit. The statement's `FETCH ... WITH TIES` is read as `LIMIT
//! squall_with_ties(n)` (`standard_sql.rs`), and this analyzer rule makes
//! that limit a filter below the query's sort, by the rows' rank in the
//! sort's own order: `rank() <= n`; after `OFFSET m`, `row_number() > m
//! AND rank() <= m + n` (a row tied with the last row kept has a rank of
//! at most m + n, and a row after it not tied with it a greater one).
//! Every row is ranked, as a sort without a limit sorts every row.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_window::expr_fn::{rank, row_number};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprFunctionExt, Limit, LogicalPlan, LogicalPlanBuilder, Projection,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Sort, Volatility, cast, col,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::prelude::SessionContext;

/// The function marking a limit as `WITH TIES`.
pub const WITH_TIES: &str = "squall_with_ties";
const RANK: &str = "__squall_tie_rank";
const ROW: &str = "__squall_tie_row";

pub fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(Marker {
        signature: Signature::any(1, Volatility::Immutable),
    }));
    ctx.add_analyzer_rule(Arc::new(WithTies));
}

/// `squall_with_ties(n)`: the count of a `WITH TIES` limit, read by the
/// analyzer rule and never computed.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Marker {
    signature: Signature,
}

impl ScalarUDFImpl for Marker {
    fn name(&self) -> &str {
        WITH_TIES
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(DataFusionError::Plan(
            "FETCH FIRST n ROWS WITH TIES is written in a statement's FETCH clause only".into(),
        ))
    }
}

/// The analyzer rule; see the module docs.
#[derive(Debug, Default)]
pub struct WithTies;

impl AnalyzerRule for WithTies {
    fn name(&self) -> &str {
        "squall_with_ties"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let mut found = false;
        plan.apply_with_subqueries(|node| {
            found |= matches!(node, LogicalPlan::Limit(l) if count(l).is_some());
            Ok(if found {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        })?;
        if !found {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| match node {
            LogicalPlan::Limit(limit) => match count(&limit) {
                Some(n) => {
                    let skip = limit.skip.map(|s| *s);
                    let input = Arc::unwrap_or_clone(limit.input);
                    keep_ties(input, &n, skip.as_ref()).map(Transformed::yes)
                }
                None => Ok(Transformed::no(LogicalPlan::Limit(limit))),
            },
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
    }
}

/// The `n` of a limit `squall_with_ties(n)` (under the cast type coercion
/// may have put around it).
fn count(limit: &Limit) -> Option<Expr> {
    let mut e = limit.fetch.as_deref()?;
    while let Expr::Cast(c) = e {
        e = &c.expr;
    }
    match e {
        Expr::ScalarFunction(f) if f.func.name() == WITH_TIES => f.args.first().cloned(),
        _ => None,
    }
}

/// `plan`, the query under the limit (its sort, under the projections that
/// drop sort keys the select list left out), with the rows the limit keeps
/// filtered below the sort.
fn keep_ties(plan: LogicalPlan, n: &Expr, skip: Option<&Expr>) -> Result<LogicalPlan> {
    match plan {
        LogicalPlan::Projection(p) => {
            let input = keep_ties(Arc::unwrap_or_clone(p.input), n, skip)?;
            Projection::try_new(p.expr, Arc::new(input)).map(LogicalPlan::Projection)
        }
        LogicalPlan::Sort(sort) if sort.fetch.is_none() => {
            let input = Arc::unwrap_or_clone(sort.input);
            let columns: Vec<Expr> = input
                .schema()
                .columns()
                .into_iter()
                .map(Expr::Column)
                .collect();
            let ranked = |f: Expr, name: &str| -> Result<Expr> {
                Ok(f.order_by(sort.expr.clone()).build()?.alias(name))
            };
            let int = |e: Expr| cast(e, DataType::Int64);
            let n = int(n.clone());
            let kept = match skip {
                None => int(col(RANK)).lt_eq(n),
                Some(m) => int(col(ROW))
                    .gt(int(m.clone()))
                    .and(int(col(RANK)).lt_eq(int(m.clone()) + n)),
            };
            let kept = LogicalPlanBuilder::from(input)
                .window(vec![ranked(rank(), RANK)?, ranked(row_number(), ROW)?])?
                .filter(kept)?
                .project(columns)?
                .build()?;
            Ok(LogicalPlan::Sort(Sort {
                expr: sort.expr,
                input: Arc::new(kept),
                fetch: None,
            }))
        }
        other => Err(DataFusionError::Plan(format!(
            "FETCH FIRST n ROWS WITH TIES needs the query's ORDER BY right under it, found {}",
            other.display()
        ))),
    }
}
