//! [`sort_unordered_windows`]: a window in Sorted mode whose input, in the
//! task, no longer reports its partition keys ordered gets a sort by them.
//!
//! DataFusion plans a window in Sorted mode, with a sort on its ORDER BY
//! keys only, where its PARTITION BY keys are constant, and it takes a
//! column for constant from the statistics too: under `WHERE k1 <= 0`
//! over files whose least `k1` is 0. A task runs the stage's plan over its
//! own scans, whose statistics are its task's, and there the filter may
//! not report `k1` constant; the window then refused to run ("Expects
//! PARTITION BY expression to be ordered"). Such a window now sorts its
//! input by its partition keys and its order: rows whose keys are in fact
//! one value keep their order, and the window gets the order it needs.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::windows::BoundedWindowAggExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, InputOrderMode};

/// `plan` with a sort below every Sorted-mode window whose input does not
/// report its partition keys ordered.
pub fn sort_unordered_windows(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(window) = node.downcast_ref::<BoundedWindowAggExec>() else {
            return Ok(Transformed::no(node));
        };
        let Some(first) = window.window_expr().first() else {
            return Ok(Transformed::no(node));
        };
        let partition_by = first.partition_by();
        if window.input_order_mode != InputOrderMode::Sorted || partition_by.is_empty() {
            return Ok(Transformed::no(node));
        }
        let input = window.input();
        let (_, ordered) = input
            .equivalence_properties()
            .find_longest_permutation(partition_by)?;
        if ordered.len() == partition_by.len() {
            return Ok(Transformed::no(node));
        }
        let keys: Vec<PhysicalSortExpr> = partition_by
            .iter()
            .map(|e| PhysicalSortExpr::new_default(Arc::clone(e)))
            .chain(first.order_by().iter().cloned())
            .collect();
        let Some(ordering) = LexOrdering::new(keys) else {
            return Ok(Transformed::no(node));
        };
        let sort = SortExec::new(ordering, Arc::clone(input)).with_preserve_partitioning(true);
        let sorted = Arc::clone(&node).replace_children(
            vec![Arc::new(sort)],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )?;
        Ok(Transformed::yes(sorted))
    })
    .data()
}
