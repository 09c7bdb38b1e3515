//! Isolating a filtered aggregation finished in a join's stage, so its keys
//! can be published as a key filter (see [`isolate_filtered_aggregations`]).

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use crate::plan_check::unmet_requirements;

/// A partitioned join, one of whose sides is an aggregation finished in the
/// join's own stage and then filtered (`k IN (SELECT k ... GROUP BY k
/// HAVING ...)`, TPC-H Q18 at scale), with that side re-shuffled on its join
/// keys into the same partitions: a stage boundary of a few rows, after
/// which the filtered keys are a stage's output and can be published as a
/// key filter to the other side's scans (`crate::key_filter`), which then
/// shuffle only the rows of those keys instead of every row. `None` where
/// there is no such side, where the other side could not be filtered by
/// it (or the key filters would take the other side as the source first),
/// or where the join would not keep the properties it was planned with.
pub(super) fn isolate_filtered_aggregations(
    join: &HashJoinExec,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if *join.partition_mode() != PartitionMode::Partitioned {
        return Ok(None);
    }
    let jt = *join.join_type();
    let (left_keys, right_keys): (Vec<_>, Vec<_>) = join
        .on()
        .iter()
        .map(|(l, r)| (Arc::clone(l), Arc::clone(r)))
        .unzip();
    let mut children = vec![Arc::clone(join.left()), Arc::clone(join.right())];
    // The key filters try the left side as the source first: a right side
    // is isolated only where the left could not publish to it.
    let (filters_right, filters_left) = (
        crate::key_filter::right_side_filterable(jt),
        crate::key_filter::left_side_filterable(jt),
    );
    let sides = [
        (0, left_keys, filters_right),
        (1, right_keys, filters_left && !filters_right),
    ];
    let mut changed = false;
    for (i, keys, other_filterable) in sides {
        if !other_filterable || !filtered_aggregation(&children[i]) {
            continue;
        }
        let n = children[i].output_partitioning().partition_count();
        children[i] = Arc::new(RepartitionExec::try_new(
            Arc::clone(&children[i]),
            Partitioning::Hash(keys, n),
        )?);
        changed = true;
    }
    if !changed {
        return Ok(None);
    }
    let rebuilt = join
        .builder()
        .with_new_children(children)?
        .recompute_properties()
        .build_exec()?;
    let (old, new) = (join.properties(), rebuilt.properties());
    // Compared as shown: a join that outputs no column partitions by
    // unknown columns, which never compare equal.
    let kept = old.output_partitioning().to_string() == new.output_partitioning().to_string()
        && old.output_ordering() == new.output_ordering()
        && unmet_requirements(&rebuilt)?.is_empty();
    Ok(kept.then_some(rebuilt))
}

/// Whether `plan` is an aggregation finished here (its final phase over a
/// hash repartition) whose groups a filter then thins, seen through
/// projections and batch coalescing.
fn filtered_aggregation(plan: &Arc<dyn ExecutionPlan>) -> bool {
    use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
    use datafusion::physical_plan::filter::FilterExec;
    use datafusion::physical_plan::projection::ProjectionExec;
    let mut node = Arc::clone(plan);
    let mut filtered = false;
    loop {
        if let Some(a) = node.downcast_ref::<AggregateExec>() {
            return filtered
                && matches!(a.mode(), AggregateMode::FinalPartitioned)
                && a.input().is::<RepartitionExec>();
        }
        if node.is::<FilterExec>() {
            filtered = true;
        } else if !node.is::<ProjectionExec>() && node.name() != "CoalesceBatchesExec" {
            return false;
        }
        let next = match node.children().as_slice() {
            [c] => Arc::clone(c),
            _ => return false,
        };
        node = next;
    }
}
