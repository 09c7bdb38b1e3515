//! Optimizer rules that only shorten a plan, applied where they succeed.
//! DataFusion 55.2 fails some plans with rules whose work is optional, and
//! the query failed with them:
//!
//! - `aggregate_statistics` (physical) answers aggregates from statistics;
//!   an average with a FILTER over a one-row count, grouped, failed ("Input
//!   field name count(h.k2) does not match with the projection expression
//!   ...").
//! - `eliminate_group_by_constant` (logical) drops a grouping expression
//!   that is a function of grouped columns; `GROUP BY CAST(k AS BIGINT), k`
//!   failed ("Projections require unique expression names ...": a cast is
//!   named as the column it casts, and the projection it adds names both
//!   alike).
//! - `single_distinct_aggregation_to_group_by` (logical) runs a grouping's
//!   one DISTINCT aggregate as two groupings; grouped by a cast beside its
//!   column (`GROUP BY CAST(d AS VARCHAR), d ... count(DISTINCT k)`) it
//!   failed the same way (found by `bench/sql_fuzz.py`); the DISTINCT
//!   aggregate then runs as one.
//!
//! Where such a rule fails, the plan goes on as it was.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{Optimizer, OptimizerConfig, OptimizerRule};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;

/// The physical rules that are shortcuts.
const PHYSICAL: &[&str] = &["aggregate_statistics"];
/// The logical rules that are shortcuts.
const LOGICAL: &[&str] = &[
    "eliminate_group_by_constant",
    "single_distinct_aggregation_to_group_by",
];

/// A physical rule applied where it succeeds.
#[derive(Debug)]
struct PhysicalShortcut(Arc<dyn PhysicalOptimizerRule + Send + Sync>);

impl PhysicalOptimizerRule for PhysicalShortcut {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self.0.optimize(Arc::clone(&plan), config).unwrap_or(plan))
    }

    fn name(&self) -> &str {
        self.0.name()
    }

    fn schema_check(&self) -> bool {
        self.0.schema_check()
    }
}

/// A logical rule applied where it succeeds (node by node, as its apply
/// order says).
#[derive(Debug)]
struct LogicalShortcut(Arc<dyn OptimizerRule + Send + Sync>);

impl OptimizerRule for LogicalShortcut {
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
        // A node and the handles of its inputs: a shallow copy.
        let kept = plan.clone();
        Ok(self
            .0
            .rewrite(plan, config)
            .unwrap_or_else(|_| Transformed::no(kept)))
    }
}

/// `rules` with the physical shortcuts among them applied where they
/// succeed.
pub fn physical(
    mut rules: Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>>,
) -> Vec<Arc<dyn PhysicalOptimizerRule + Send + Sync>> {
    for rule in rules.iter_mut() {
        if PHYSICAL.contains(&rule.name()) {
            *rule = Arc::new(PhysicalShortcut(Arc::clone(rule)));
        }
    }
    rules
}

/// DataFusion's logical optimizer rules, the shortcuts among them applied
/// where they succeed.
pub fn logical_optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let mut rules = Optimizer::new().rules;
    for rule in rules.iter_mut() {
        if LOGICAL.contains(&rule.name()) {
            *rule = Arc::new(LogicalShortcut(Arc::clone(rule)));
        }
    }
    rules
}
