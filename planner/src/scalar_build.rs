//! [`ScalarSideBuilds`]: a nested-loop join whose right side is at most one
//! row (a scalar subquery's aggregate: `WHERE x > (SELECT avg(x) ...)`)
//! builds that row and streams its other side, instead of collecting the
//! other side whole.
//!
//! DataFusion's join selection swaps a nested-loop join's sides only when
//! both have statistics, and the output of a join or a filter on a string
//! often has none. Its nested-loop join then collects its left side into
//! one partition: embedded, a whole filtered table in memory; staged, a
//! gather of every row into one task (at scale a single Lambda reading
//! gigabytes while the others wait) before the one-row side is even read.
//! With the sides swapped the one row is broadcast and the big side keeps
//! its partitions.

use std::sync::Arc;

use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_optimizer::optimizer::PhysicalOptimizer;
use datafusion::physical_plan::joins::NestedLoopJoinExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};

/// The rule; see the module docs.
#[derive(Debug, Default)]
pub struct ScalarSideBuilds;

/// Whether `plan` is known to produce at most one row.
fn at_most_one_row(plan: &Arc<dyn ExecutionPlan>) -> bool {
    StatisticsContext::new()
        .compute(plan.as_ref(), &StatisticsArgs::new())
        .is_ok_and(|s| matches!(s.num_rows, Precision::Exact(n) if n <= 1))
}

impl PhysicalOptimizerRule for ScalarSideBuilds {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !config.optimizer.join_reordering {
            return Ok(plan);
        }
        plan.transform_up(|node| {
            let Some(join) = node.downcast_ref::<NestedLoopJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            if join.join_type().supports_swap()
                && at_most_one_row(join.right())
                && !at_most_one_row(join.left())
            {
                Ok(Transformed::yes(join.swap_inputs()?))
            } else {
                Ok(Transformed::no(node))
            }
        })
        .data()
    }

    fn name(&self) -> &str {
        "squall_scalar_side_builds"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// DataFusion's physical optimizer rules with [`ScalarSideBuilds`] right
/// after its join selection (before distribution is enforced, so the
/// swapped join gets the partitioning its new sides need),
/// `GuardNullableSides` before them all, and `DeepTopKAsSort` and
/// `SortWhereUnmet` last but for DataFusion's sanity check.
pub fn physical_optimizer_rules() -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    // Answering aggregates from statistics is a shortcut: where DataFusion
    // fails to build it, the plan goes on without it.
    let mut rules = crate::shortcuts::physical(PhysicalOptimizer::new().rules);
    let at = rules
        .iter()
        .position(|r| r.name() == "join_selection")
        .map_or(0, |i| i + 1);
    rules.insert(at, Arc::new(ScalarSideBuilds));
    // First: every rule after it plans on what an outer join's output
    // really holds (squall_core::exec::NullableSideExec).
    rules.insert(0, Arc::new(squall_core::exec::GuardNullableSides));
    // Before the sanity check, after the limits are pushed into sorts.
    let at = rules
        .iter()
        .position(|r| r.name() == "SanityCheckPlan")
        .unwrap_or(rules.len());
    rules.insert(at, Arc::new(crate::deep_topk::DeepTopKAsSort));
    // Last before the sanity check: a sort where a required order went
    // unreported (crate::unmet_orders).
    rules.insert(at + 1, Arc::new(crate::unmet_orders::SortWhereUnmet));
    rules
}

#[cfg(test)]
mod tests;
