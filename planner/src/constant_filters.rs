//! A filter that names no column stays above an aggregation that yields a
//! row from no input.
//!
//! DataFusion 55.2's filter pushdown moves a conjunct below an aggregation
//! when every column it names is a grouping column, and a conjunct naming
//! none passes that test: `SELECT count(*) FROM g HAVING count(*) = 1 AND
//! count(*) = 2`, whose two conjuncts it folds into `false`, went below
//! the aggregation as `false`, and the aggregation of no rows answered one
//! row (0) where there is none. The same with a grouping set `()` (ROLLUP,
//! CUBE): a row per set. An aggregation with grouping keys and no empty
//! set yields no row from no input, so there the move is right.
//!
//! [`ConstantFiltersAbove`] wraps DataFusion's rule: where it moved such a
//! conjunct below an aggregation that yields a row from no input, the
//! conjunct goes back above it (where DataFusion's `eliminate_filter` then
//! makes a `false` one an empty result).

use std::sync::Arc;

use datafusion::common::internal_err;
use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::expr::GroupingSet;
use datafusion::logical_expr::utils::{conjunction, split_conjunction_owned};
use datafusion::logical_expr::{Aggregate, Expr, Filter, LogicalPlan};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The rule this one wraps.
pub const WRAPS: &str = "push_down_filter";

/// See the module docs.
#[derive(Debug)]
pub struct ConstantFiltersAbove(pub Arc<dyn OptimizerRule + Send + Sync>);

impl OptimizerRule for ConstantFiltersAbove {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        self.0.apply_order()
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let guarded = matches!(&plan, LogicalPlan::Filter(f) if yields_a_row_from_none(&f.input));
        let out = self.0.rewrite(plan, config)?;
        if !guarded {
            return Ok(out);
        }
        let transformed = out.transformed;
        let lifted = lift_constants(out.data)?;
        Ok(Transformed::new_transformed(
            lifted.data,
            transformed || lifted.transformed,
        ))
    }
}

/// Whether `plan` is an aggregation that yields a row from no input: no
/// grouping keys, or a grouping set `()`.
fn yields_a_row_from_none(plan: &LogicalPlan) -> bool {
    let LogicalPlan::Aggregate(agg) = plan else {
        return false;
    };
    agg.group_expr.is_empty()
        || agg.group_expr.iter().any(|e| match e {
            Expr::GroupingSet(GroupingSet::Rollup(_) | GroupingSet::Cube(_)) => true,
            Expr::GroupingSet(GroupingSet::GroupingSets(sets)) => sets.iter().any(|s| s.is_empty()),
            _ => false,
        })
}

/// `plan` (what the filter pushdown made of a filter above an aggregation
/// yielding a row from no input: the aggregation, perhaps under what
/// stayed of the filter) with the conjuncts naming no column that went
/// below the aggregation back above it.
fn lift_constants(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let (kept, agg) = match plan {
        LogicalPlan::Filter(f) if matches!(f.input.as_ref(), LogicalPlan::Aggregate(_)) => {
            let LogicalPlan::Aggregate(agg) = Arc::unwrap_or_clone(f.input) else {
                return internal_err!("the filter's input is an aggregation");
            };
            (Some(f.predicate), agg)
        }
        LogicalPlan::Aggregate(agg) => (None, agg),
        other => return Ok(Transformed::no(other)),
    };
    let LogicalPlan::Filter(below) = agg.input.as_ref() else {
        return Ok(Transformed::no(rebuild(kept, agg)?));
    };
    let (constants, rest): (Vec<Expr>, Vec<Expr>) =
        split_conjunction_owned(below.predicate.clone())
            .into_iter()
            .partition(|e| e.column_refs().is_empty());
    if constants.is_empty() {
        return Ok(Transformed::no(rebuild(kept, agg)?));
    }
    let input = match conjunction(rest) {
        Some(predicate) => Arc::new(LogicalPlan::Filter(Filter::try_new(
            predicate,
            Arc::clone(&below.input),
        )?)),
        None => Arc::clone(&below.input),
    };
    let agg = Aggregate::try_new(input, agg.group_expr, agg.aggr_expr)?;
    let Some(above) = conjunction(kept.into_iter().chain(constants)) else {
        return internal_err!("no conjunct to lift above the aggregation");
    };
    Ok(Transformed::yes(LogicalPlan::Filter(Filter::try_new(
        above,
        Arc::new(LogicalPlan::Aggregate(agg)),
    )?)))
}

/// `agg` under a filter of `kept`, if any: the plan as it came.
fn rebuild(kept: Option<Expr>, agg: Aggregate) -> Result<LogicalPlan> {
    let agg = LogicalPlan::Aggregate(agg);
    Ok(match kept {
        Some(predicate) => LogicalPlan::Filter(Filter::try_new(predicate, Arc::new(agg))?),
        None => agg,
    })
}
