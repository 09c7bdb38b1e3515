//! [`SortWhereUnmet`]: a sort below a node whose required input order its
//! child no longer reports when planning ends.
//!
//! DataFusion 55.2 leaves a sort out where the child's order is implied
//! (a column a filter made constant by its statistics: `WHERE g.w <= 0`
//! over a column whose least value is 0), and a later rule may re-plan the
//! child so that it no longer reports it (the projection above a hash join
//! moved into the join, which then reported no constant). Its own plan
//! check then refused the query: `SELECT array_agg(h.k1 ORDER BY h.k1)
//! FROM h JOIN g ON h.k1 = g.w WHERE g.w <= 0` failed "does not satisfy
//! order requirements", single-node DataFusion alike. This rule, the last
//! before that check, sorts each child whose order a node requires and
//! the child does not report: a sort of rows already in that order, where
//! the order holds though unreported, and the order the node needs where
//! it does not.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

/// See the module docs.
#[derive(Debug, Default)]
pub struct SortWhereUnmet;

impl PhysicalOptimizerRule for SortWhereUnmet {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let children = node.children();
            let mut sorted = Vec::with_capacity(children.len());
            let mut changed = false;
            for (child, required) in children.iter().zip(node.required_input_ordering()) {
                let Some(required) = required.map(|r| r.into_single()) else {
                    sorted.push(Arc::clone(child));
                    continue;
                };
                let ordering =
                    LexOrdering::new(required.iter().cloned().map(PhysicalSortExpr::from));
                match ordering {
                    Some(ordering)
                        if !child
                            .equivalence_properties()
                            .ordering_satisfy_requirement(required)? =>
                    {
                        let partitions = child.output_partitioning().partition_count();
                        let sort = SortExec::new(ordering, Arc::clone(child))
                            .with_preserve_partitioning(partitions > 1);
                        sorted.push(Arc::new(sort) as Arc<dyn ExecutionPlan>);
                        changed = true;
                    }
                    _ => sorted.push(Arc::clone(child)),
                }
            }
            if !changed {
                return Ok(Transformed::no(node));
            }
            Ok(Transformed::yes(node.replace_children(
                sorted,
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            )?))
        })
        .data()
    }

    fn name(&self) -> &str {
        "squall_sort_where_unmet"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
