//! Checking, at planning time, that every stage plan is the plan its workers
//! will run: the properties DataFusion planned each operator against survive
//! both the stage cut and the trip through the task codec.
//!
//! DataFusion's operators depend on their inputs' properties — partitioning,
//! orderings, equivalence classes, constants, constraints — in ways their
//! output does not always show: a sort left out because the input was
//! already ordered, a window operator that found its `PARTITION BY` keys
//! ordered because one is a constant. A plan whose nodes report less than
//! they were planned with fails in a worker (an internal assertion), or
//! worse, runs and gives wrong rows. Two checks turn that into a planning
//! error naming the stage:
//!
//! ```text
//!  DataFusion plan --cut (stages.rs)--> stage plans --encode--> bytes --decode--> worker's plan
//!        [1] every rebuilt node is still served    [2] every decoded node reports exactly
//!            and gives what the node it replaced         what the planned node reports
//!            gave
//! ```
//!
//! 1. A node rebuilt over a cut must still have its requirements met by its
//!    children ([`unmet_requirements`]: the orderings and distributions
//!    DataFusion's sanity rule checks), and must still give every ordering,
//!    equivalence, constant and constraint of the node DataFusion planned
//!    ([`lost_properties`]; more is fine).
//! 2. [`encode_checked`]: each stage plan is encoded with the task codec and
//!    decoded again as a worker does; the decoded plan must match node for
//!    node (name, partitioning, output ordering, equivalence properties,
//!    constraints, emission and boundedness). The coordinator ships exactly
//!    the bytes it checked. Parquet scans travel without their files
//!    ([`without_scan_files`]: each task's own row groups come in its scan
//!    assignment), so a payload does not grow with the table.
//!
//! What this does not check: the per-task binding a worker does afterwards
//! (row groups, byte ranges), which changes partition counts by design.

/// How a node rebuilt over a cut that lost what it was planned with is
/// described (`crate::stages`); the engine runs such a query's plan whole.
pub const LOST_PROPERTIES: &str = "no longer has what it was planned with";

use std::sync::Arc;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::AcrossPartitions;
use datafusion::physical_expr_common::sort_expr::format_physical_sort_requirement_list;
use datafusion::physical_plan::{
    ChildSatisfactionOptions, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
};
use squall_core::codec::{decode_plan, encode_plan};

use crate::error::PlannerError;
use crate::stages::StagedPlan;

/// What `plan`'s children no longer give of what `plan` requires of them:
/// DataFusion's own sanity rule (the ordering and distribution each child
/// must have), applied to one node.
pub fn unmet_requirements(plan: &Arc<dyn ExecutionPlan>) -> Result<Vec<String>> {
    let mut unmet = Vec::new();
    let distributions = plan.input_distribution_requirements();
    let orderings = plan.required_input_ordering();
    for (i, child) in plan.children().into_iter().enumerate() {
        if let Some(Some(required)) = orderings.get(i) {
            let required = required.clone().into_single();
            if !child
                .equivalence_properties()
                .ordering_satisfy_requirement(required.clone())?
            {
                unmet.push(format!(
                    "its input {i} ({}) is not ordered by {}",
                    child.name(),
                    format_physical_sort_requirement_list(&required)
                ));
            }
        }
        let satisfaction = distributions.child_satisfaction(
            i,
            child.as_ref(),
            ChildSatisfactionOptions::new().with_allow_subset(true),
        )?;
        if !satisfaction.is_satisfied() {
            let required = distributions
                .per_child_distributions()
                .nth(i)
                .map(|d| d.to_string())
                .unwrap_or_default();
            unmet.push(format!(
                "its input {i} ({}) is partitioned {}, not {required}",
                child.name(),
                child.output_partitioning()
            ));
        }
    }
    Ok(unmet)
}

/// What `new` no longer gives of what `old` gave: orderings, equivalences,
/// constants (and whether they hold across partitions), constraints. Empty
/// when `new` gives everything (or more). Partitioning is not compared: a
/// node whose partitioning changed is fine if its parent's requirements
/// still hold ([`unmet_requirements`]).
pub fn lost_properties(old: &PlanProperties, new: &PlanProperties) -> Result<Vec<String>> {
    let mut lost = Vec::new();
    let (old_eq, new_eq) = (old.equivalence_properties(), new.equivalence_properties());
    for ordering in old_eq.oeq_class().iter() {
        if !new_eq.ordering_satisfy(ordering.clone())? {
            lost.push(format!("ordering [{ordering}]"));
        }
    }
    for class in old_eq.eq_group().iter() {
        let mut members = class.iter();
        let Some(first) = members.next() else {
            continue;
        };
        for other in members {
            if !new_eq.eq_group().exprs_equal(first, other) {
                lost.push(format!("equivalence {first} = {other}"));
            }
        }
    }
    for constant in old_eq.constants() {
        match (
            &constant.across_partitions,
            new_eq.is_expr_constant(&constant.expr),
        ) {
            (_, None) => lost.push(format!("constant {}", constant.expr)),
            (AcrossPartitions::Uniform(_), Some(AcrossPartitions::Heterogeneous)) => {
                lost.push(format!("constant {} across partitions", constant.expr))
            }
            _ => {}
        }
    }
    for constraint in old_eq.constraints().iter() {
        if !new_eq.constraints().contains(constraint) {
            lost.push(format!("constraint {constraint:?}"));
        }
    }
    Ok(lost)
}

/// Encode every stage plan of `staged` with the task codec, decode each as a
/// worker would (in `ctx`), and check that the decoded plan reports, node for
/// node, what the planned one does. Returns the encoded plans, in stage order.
pub fn encode_checked(staged: &StagedPlan, ctx: &TaskContext) -> Result<Vec<Bytes>> {
    staged
        .stages
        .iter()
        .map(|stage| {
            let shipped = without_scan_files(Arc::clone(&stage.plan))?;
            let bytes = encode_plan(shipped).map_err(|e| {
                stage_plan_error(
                    stage.id,
                    format!("its plan cannot be encoded for the workers: {e}"),
                )
            })?;
            let decoded =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode_plan(&bytes, ctx)))
                    .map_err(|_| {
                        stage_plan_error(
                            stage.id,
                            "decoding its plan as a worker would panicked".into(),
                        )
                    })?
                    .map_err(|e| {
                        stage_plan_error(
                            stage.id,
                            format!("its plan does not decode as a worker would decode it: {e}"),
                        )
                    })?;
            if let Some(diff) = first_difference(&stage.plan, &decoded, &mut Vec::new()) {
                return Err(stage_plan_error(
                    stage.id,
                    format!("the plan a worker decodes is not the planned one: {diff}"),
                ));
            }
            Ok(bytes)
        })
        .collect()
}

/// `plan` with every file scan's file groups emptied (as many groups as
/// planned, so its partitioning is unchanged): a worker replaces them with
/// its task's scan assignment (row groups, text files and byte ranges), so
/// the files of the whole table (a line per row group range: 100 KB at
/// 1,000 row groups) would only make every task's payload larger, and past
/// the inline limit cost it a PUT and a GET.
pub fn without_scan_files(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::datasource::physical_plan::{FileGroup, FileScanConfig, FileScanConfigBuilder};
    use datafusion::datasource::source::DataSourceExec;
    plan.transform_up(|node| {
        if squall_core::scan::as_parquet_scan(&node).is_none()
            && squall_core::scan::as_text_scan(&node).is_none()
        {
            return Ok(Transformed::no(node));
        }
        let Some(exec) = node.downcast_ref::<DataSourceExec>() else {
            return Ok(Transformed::no(node));
        };
        let Some(config) = exec.data_source().downcast_ref::<FileScanConfig>() else {
            return Ok(Transformed::no(node));
        };
        if config.file_groups.iter().all(|g| g.is_empty()) {
            return Ok(Transformed::no(node));
        }
        let groups = config
            .file_groups
            .iter()
            .map(|_| FileGroup::new(vec![]))
            .collect();
        let config = FileScanConfigBuilder::from(config.clone())
            .with_file_groups(groups)
            .build();
        let stripped: Arc<dyn ExecutionPlan> = DataSourceExec::from_data_source(config);
        Ok(Transformed::yes(stripped))
    })
    .map(|t| t.data)
}

/// The input of `plan` when it is a projection passing every column of its
/// input through, in order, unchanged or cast to its own type.
fn passing_projection_input(plan: &Arc<dyn ExecutionPlan>) -> Option<&Arc<dyn ExecutionPlan>> {
    use datafusion::physical_expr::expressions::{CastExpr, Column};
    use datafusion::physical_plan::projection::ProjectionExec;
    let p = plan.downcast_ref::<ProjectionExec>()?;
    let input = p.input().schema();
    let passes = p.expr().len() == input.fields().len()
        && p.expr().iter().enumerate().all(|(i, e)| {
            let column = e.expr.downcast_ref::<Column>().or_else(|| {
                let cast = e.expr.downcast_ref::<CastExpr>()?;
                (cast.cast_type() == input.field(i).data_type())
                    .then(|| cast.expr().downcast_ref::<Column>())
                    .flatten()
            });
            column.is_some_and(|c| c.index() == i)
        });
    passes.then(|| p.input())
}

/// The first node (depth first) where `decoded` does not report what
/// `planned` does, described with its path from the root.
pub fn first_difference(
    planned: &Arc<dyn ExecutionPlan>,
    decoded: &Arc<dyn ExecutionPlan>,
    path: &mut Vec<String>,
) -> Option<String> {
    // DataFusion's decoding puts a projection that only passes the columns
    // through (a cast where only nullability differs) above a union's input
    // whose schema is not the union's own: the same rows, so the same plan.
    // The input may be a projection itself (a union of an aggregate's
    // projected result): then the plans differ only if they differ without
    // the added one too.
    if let Some(input) = passing_projection_input(decoded) {
        if planned.name() != decoded.name() {
            return first_difference(planned, input, path);
        }
        let diff = same_node(planned, decoded, &mut path.clone())?;
        return first_difference(planned, input, path).map(|_| diff);
    }
    same_node(planned, decoded, path)
}

/// [`first_difference`] of `planned` and `decoded` taken as the same node.
fn same_node(
    planned: &Arc<dyn ExecutionPlan>,
    decoded: &Arc<dyn ExecutionPlan>,
    path: &mut Vec<String>,
) -> Option<String> {
    path.push(planned.name().to_string());
    let at = path.join(" > ");
    if planned.name() != decoded.name() {
        return Some(format!("at {at}: the worker has {}", decoded.name()));
    }
    let (p, d) = (planned.properties(), decoded.properties());
    let facts: [(&str, String, String); 6] = [
        (
            "partitioning",
            p.output_partitioning().to_string(),
            d.output_partitioning().to_string(),
        ),
        ("output ordering", ordering_text(p), ordering_text(d)),
        (
            "equivalence properties",
            p.equivalence_properties().to_string(),
            d.equivalence_properties().to_string(),
        ),
        (
            "constraints",
            p.equivalence_properties().constraints().to_string(),
            d.equivalence_properties().constraints().to_string(),
        ),
        (
            "emission",
            format!("{:?}", p.emission_type),
            format!("{:?}", d.emission_type),
        ),
        (
            "boundedness",
            format!("{:?}", p.boundedness),
            format!("{:?}", d.boundedness),
        ),
    ];
    for (what, planned_text, decoded_text) in facts {
        if planned_text != decoded_text {
            return Some(format!(
                "at {at}: {what} is {decoded_text} in the worker, {planned_text} as planned"
            ));
        }
    }
    // A recursive query's terms are re-projected to its schema when it is
    // built, in the worker as when planned, and the codec carries a cast's
    // nullability less precisely than the planner made it: a term may gain
    // a projection of the same columns. Nothing above the query sees its
    // terms, only the query itself, compared above.
    if planned.is::<datafusion::physical_plan::recursive_query::RecursiveQueryExec>() {
        path.pop();
        return None;
    }
    let (pc, dc) = (planned.children(), decoded.children());
    if pc.len() != dc.len() {
        return Some(format!(
            "at {at}: {} children in the worker, {} as planned",
            dc.len(),
            pc.len()
        ));
    }
    for (p, d) in pc.into_iter().zip(dc) {
        if let Some(diff) = first_difference(p, d, path) {
            return Some(diff);
        }
    }
    path.pop();
    None
}

fn ordering_text(p: &PlanProperties) -> String {
    p.output_ordering()
        .map(|o| format!("[{o}]"))
        .unwrap_or_else(|| "none".to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#[path = "plan_check/tests.rs"]
mod tests;

fn stage_plan_error(stage: u32, message: String) -> DataFusionError {
    PlannerError::StagePlan {
        stage: format!("stage s{stage}"),
        message,
    }
    .into()
}
