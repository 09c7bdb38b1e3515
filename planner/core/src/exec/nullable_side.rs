//! [`NullableSideExec`]: the input of an outer join's null-padded side,
//! reporting its input's properties without their constants.
//!
//! DataFusion 55 carries the constants of both inputs into an outer join's
//! output (`EquivalenceGroup::join` keeps every class of both sides for
//! LEFT, RIGHT and FULL joins). A constant of the null-padded side does not
//! hold there: `f LEFT JOIN d ON f.k = d.k AND d.cat = 'red'` outputs
//! `cat = 'red'` for the rows that matched and NULL for the others, yet the
//! join reports `cat` constant. Operators above are planned on that: a sort
//! on `cat` is left out (NULLs come out wherever they fall), an aggregation
//! grouping by `cat` streams as if its input were sorted and emits a group
//! each time the value changes. Staged, where a final aggregation reads
//! many partial outputs in turn, that returns the same group several times.
//!
//! So every outer join gets this node on top of each side it pads with
//! NULLs ([`GuardNullableSides`], a physical optimizer rule that runs
//! first, so the join and everything above it are planned again on what
//! holds). The node passes rows, statistics, projections and filters
//! through untouched; it only keeps its input's constants to itself. Its
//! orderings, equivalence classes and constraints are its input's: they
//! hold of its rows, and the join decides what survives the padding.
//!
//! An aggregation by grouping sets (`ROLLUP`, `CUBE`, `GROUPING SETS`)
//! pads its own output the same way, and DataFusion 55 reports its input's
//! properties for its output by the grouping columns as if it did not: in
//! `where name = 'x' group by rollup (k, name)` the output's `name` is 'x'
//! or NULL, yet it is reported constant, and the final aggregation above
//! the partial ones emitted the grand total once per run of input (a
//! grand total of 84 came out as 25 and 59 staged; single-node
//! DataFusion as well with small batches). An ordering (`name` NULLs
//! mixed in), an equivalence (`a = b` where a set keeps `b` only), a
//! uniqueness (the grand total's NULL beside a NULL group) and a hash
//! partitioning (the NULL-padded rows of every input partition) fail
//! alike. So the output of such an aggregation gets this node reporting
//! nothing at all ([`NullableSideExec::forgetting_all`]): no ordering,
//! equivalence, constant or constraint, and partitions of unknown keys.
//! The aggregation's own input keeps its properties: an ordered aggregate
//! (`array_agg(x ORDER BY x)`) needs its input sorted, and DataFusion
//! decides on its own which grouping columns the sets leave unpadded.

use std::fmt;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinType, Statistics};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateInputMode};
use datafusion::physical_plan::execution_plan::{
    CardinalityEffect, ChildrenPropertiesMode, ReplaceChildrenOptions,
};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterDescription, FilterPushdownPhase, FilterPushdownPropagation,
};
use datafusion::physical_plan::joins::{
    HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec, SymmetricHashJoinExec,
};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::statistics::ChildStats;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties, SendableRecordBatchStream, StatisticsArgs,
};

use super::{BoundaryProperties, Keeps};

/// See the module docs.
#[derive(Debug)]
pub struct NullableSideExec {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    /// Whether it reports no ordering, no equivalence and no partitioning
    /// keys either (a grouping-set aggregation's output).
    forgets_all: bool,
}

impl NullableSideExec {
    pub fn try_new(input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        Self::new_forgetting(input, false)
    }

    /// The node above an aggregation by grouping sets: none of its input's
    /// orderings, equivalences, constants or constraints, and partitions of
    /// unknown keys.
    pub fn forgetting_all(input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        Self::new_forgetting(input, true)
    }

    pub fn forgets_all(&self) -> bool {
        self.forgets_all
    }

    fn new_forgetting(input: Arc<dyn ExecutionPlan>, forgets_all: bool) -> Result<Self> {
        if forgets_all {
            let properties = PlanProperties::new(
                EquivalenceProperties::new(input.schema()),
                Partitioning::UnknownPartitioning(input.output_partitioning().partition_count()),
                input.pipeline_behavior(),
                input.boundedness(),
            );
            return Ok(Self {
                input,
                properties: Arc::new(properties),
                forgets_all,
            });
        }
        let mut carried = BoundaryProperties::capture(
            input.equivalence_properties(),
            Keeps {
                orderings: true,
                partition_constants: true,
            },
        );
        // A constant is a class's flag, or a literal among its members.
        carried.constants.clear();
        for class in &mut carried.classes {
            class.retain(|e| e.downcast_ref::<Literal>().is_none());
        }
        carried.classes.retain(|class| class.len() > 1);
        let eq = carried.equivalence_properties(&input.schema())?;
        let properties = PlanProperties::new(
            eq,
            input.output_partitioning().clone(),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        Ok(Self {
            input,
            properties: Arc::new(properties),
            forgets_all,
        })
    }

    pub fn input(&self) -> &Arc<dyn ExecutionPlan> {
        &self.input
    }
}

impl DisplayAs for NullableSideExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match self.forgets_all {
            true => write!(f, "NullableSideExec: forgets_all"),
            false => write!(f, "NullableSideExec"),
        }
    }
}

impl ExecutionPlan for NullableSideExec {
    fn name(&self) -> &str {
        "NullableSideExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        // Forgetting all, an ordering above is not one below: a sort is
        // not pushed through.
        vec![!self.forgets_all]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return Err(DataFusionError::Internal(
                "NullableSideExec takes one child".into(),
            ));
        }
        Ok(Arc::new(Self::new_forgetting(
            children.remove(0),
            self.forgets_all,
        )?))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        Ok(Arc::clone(&input_stats[0]))
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        CardinalityEffect::Equal
    }

    fn try_swapping_with_projection(
        &self,
        projection: &ProjectionExec,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        // Only a projection that narrows the rows goes below, as past
        // DataFusion's own pass-through nodes: one that adds columns (`true
        // AS found`) would be swapped back and forth for ever.
        if projection.expr().len() >= projection.input().schema().fields().len() {
            return Ok(None);
        }
        // Below the projection: the projection then sits on the input, and
        // this node on top of it.
        match self.input.try_swapping_with_projection(projection)? {
            Some(projected) => Ok(Some(Arc::new(Self::new_forgetting(
                projected,
                self.forgets_all,
            )?))),
            None => {
                let projected = Arc::new(ProjectionExec::try_new(
                    projection.expr().iter().cloned(),
                    Arc::clone(&self.input),
                )?);
                Ok(Some(Arc::new(Self::new_forgetting(
                    projected,
                    self.forgets_all,
                )?)))
            }
        }
    }

    fn gather_filters_for_pushdown(
        &self,
        _phase: FilterPushdownPhase,
        parent_filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterDescription> {
        FilterDescription::from_children(parent_filters, &self.children())
    }

    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        Ok(FilterPushdownPropagation::if_all(child_pushdown_result))
    }
}

/// Which sides of a join of `join_type` it pads with NULLs: (left, right).
fn padded_sides(join_type: JoinType) -> (bool, bool) {
    match join_type {
        JoinType::Left => (false, true),
        JoinType::Right => (true, false),
        JoinType::Full => (true, true),
        _ => (false, false),
    }
}

fn join_type_of(plan: &dyn ExecutionPlan) -> Option<JoinType> {
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        return Some(*j.join_type());
    }
    if let Some(j) = plan.downcast_ref::<NestedLoopJoinExec>() {
        return Some(*j.join_type());
    }
    if let Some(j) = plan.downcast_ref::<SortMergeJoinExec>() {
        return Some(j.join_type());
    }
    if let Some(j) = plan.downcast_ref::<SymmetricHashJoinExec>() {
        return Some(*j.join_type());
    }
    None
}

/// Whether `plan` aggregates its input rows by grouping sets (the partial
/// or only aggregation of a `ROLLUP`, `CUBE` or `GROUPING SETS`).
fn aggregates_grouping_sets(plan: &dyn ExecutionPlan) -> bool {
    plan.downcast_ref::<AggregateExec>().is_some_and(|a| {
        matches!(a.mode().input_mode(), AggregateInputMode::Raw)
            && a.group_expr().has_grouping_set()
    })
}

/// The physical optimizer rule putting a [`NullableSideExec`] on each side
/// an outer join pads with NULLs, and one forgetting all above each
/// aggregation by grouping sets; see the module docs.
#[derive(Debug, Default)]
pub struct GuardNullableSides;

impl PhysicalOptimizerRule for GuardNullableSides {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // A grouping-set aggregation is guarded from its parent (so the
        // rule can run again: a guarded one has the guard for parent), or
        // at the root.
        let plan = plan
            .transform_up(|node| {
                if node
                    .downcast_ref::<NullableSideExec>()
                    .is_some_and(|n| n.forgets_all)
                {
                    return Ok(Transformed::no(node));
                }
                let children = node.children();
                if !children
                    .iter()
                    .any(|c| aggregates_grouping_sets(c.as_ref()))
                {
                    return Ok(Transformed::no(node));
                }
                let guarded = children
                    .into_iter()
                    .map(|c| match aggregates_grouping_sets(c.as_ref()) {
                        true => Ok(Arc::new(NullableSideExec::forgetting_all(Arc::clone(c))?) as _),
                        false => Ok(Arc::clone(c)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Transformed::yes(node.replace_children(
                    guarded,
                    ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
                )?))
            })
            .data()?;
        let plan = match aggregates_grouping_sets(plan.as_ref()) {
            true => Arc::new(NullableSideExec::forgetting_all(plan)?) as _,
            false => plan,
        };
        plan.transform_up(|node| {
            let Some(join_type) = join_type_of(node.as_ref()) else {
                return Ok(Transformed::no(node));
            };
            let padded = padded_sides(join_type);
            let children = node.children();
            if children.len() != 2 || padded == (false, false) {
                return Ok(Transformed::no(node));
            }
            let guard = |child: &Arc<dyn ExecutionPlan>, pads: bool| -> Result<_> {
                Ok(
                    if pads && child.downcast_ref::<NullableSideExec>().is_none() {
                        Arc::new(NullableSideExec::try_new(Arc::clone(child))?) as _
                    } else {
                        Arc::clone(child)
                    },
                )
            };
            let new_children = vec![guard(children[0], padded.0)?, guard(children[1], padded.1)?];
            if new_children
                .iter()
                .zip(&children)
                .all(|(n, c)| Arc::ptr_eq(n, c))
            {
                return Ok(Transformed::no(node));
            }
            Ok(Transformed::yes(node.replace_children(
                new_children,
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            )?))
        })
        .data()
    }

    fn name(&self) -> &str {
        "squall_guard_nullable_sides"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[cfg(test)]
#[path = "nullable_side/tests.rs"]
mod tests;
