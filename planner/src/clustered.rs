//! Aggregations grouped by a column the scanned table is clustered on,
//! finished where the table is scanned, with no exchange.
//!
//! DataFusion plans an aggregation over a scan as partial groups in the
//! scan's partitions, a hash repartition on the grouping columns, and the
//! final groups; squall cuts at the repartition: a scan stage writes the
//! partial groups hashed into `squall.shuffle.partitions`, a reduce stage
//! reads and finishes them. At SF1000 that is every scan task's PUT, a GET
//! per scan task and reduce task, and the partial groups' bytes written and
//! read again: for `GROUP BY l_orderkey` over line items, about as many
//! partial groups as orders, 1.5 billion rows.
//!
//! When one of the hashed columns comes unchanged from a Parquet column
//! whose row groups follow one another in its order
//! ([`crate::split::clustered_order`]: a table written sorted or clustered
//! by it), scan tasks that take runs of row groups in that order, cut only
//! where no value spans the cut, each hold all rows of every group they
//! see. The two stages then become one: the scan stage's plan, hash
//! repartitioned inside the task for its threads, under the reduce stage's
//! plan. Any stage the reduce stage wrote to reads the merged one as
//! before. Only where the reduce stage reads nothing but that scan stage,
//! nothing else reads the scan stage or waits for a key filter of it, the
//! column passes unchanged through projections, filters, broadcast joins'
//! probe sides and the partial aggregation (one grouping set: a rolled-up
//! set's NULL group would span tasks), and the rebuilt plan keeps every
//! requirement its operators were planned with. EXPLAIN says `clustered on
//! <column>` on such a stage.

use std::sync::Arc;

use datafusion::common::JoinType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::physical_plan::FileSource;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, Partitioning};
use squall_core::exec::{ReadMode, ShuffleReadExec, ShuffleWriteExec};
use squall_core::scan::{Leaf, as_parquet_scan, leaves};

use std::collections::HashMap;

use datafusion::execution::runtime_env::RuntimeEnv;
use squall_core::config::SquallConfig;
use squall_core::task::ScanAssignment;

use crate::plan_check::unmet_requirements;
use crate::split::{
    FooterCache, ScanUnits, Spread, assign_in_order, assign_tasks, clustered_order,
};
use crate::stages::{StagedPlan, TaskLayout};

/// A scan stage whose exchange to the one stage reading it could go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The scan stage (its id).
    pub source: u32,
    /// The stage that reads it, hashed.
    pub reader: u32,
    /// The Parquet column (of the scan stage's one Parquet scan) one of
    /// the exchange's hash keys comes from unchanged.
    pub column: String,
}

/// Scan stages of `staged` hashed, by a column of their one Parquet scan,
/// to a reduce stage that reads nothing else.
pub fn candidates(staged: &StagedPlan) -> Vec<Candidate> {
    let mut out = Vec::new();
    for reader in &staged.stages {
        if !matches!(reader.layout, TaskLayout::Hash { .. }) {
            continue;
        }
        let reader_leaves = leaves(&reader.plan);
        let [Leaf::ShuffleRead(read)] = reader_leaves.as_slice() else {
            continue;
        };
        let Some(source) = staged.stage(read.stage()) else {
            continue;
        };
        if read.mode() != ReadMode::Hash
            || source.layout != TaskLayout::Scan
            || staged.stages.iter().any(|s| {
                s.id != reader.id && s.inputs.contains(&source.id)
                    || s.filter_inputs.contains(&source.id)
            })
        {
            continue;
        }
        let Some(writer) = source.plan.downcast_ref::<ShuffleWriteExec>() else {
            continue;
        };
        let Some(Partitioning::Hash(keys, _)) = writer.partitioning() else {
            continue;
        };
        if writer.published_keys().is_some() {
            continue;
        }
        let scans: Vec<&DataSourceExec> = leaves(&source.plan)
            .into_iter()
            .filter_map(|l| match l {
                Leaf::ParquetScan(s) => Some(s),
                _ => None,
            })
            .collect();
        let [scan] = scans.as_slice() else {
            continue;
        };
        let column = keys.iter().find_map(|key| {
            let key = key.downcast_ref::<Column>()?;
            let (found, name) = source_column(writer.input(), key.index())?;
            std::ptr::eq(found, *scan).then_some(name)
        });
        if let Some(column) = column {
            out.push(Candidate {
                source: source.id,
                reader: reader.id,
                column,
            });
        }
    }
    out
}

/// The Parquet scan and file column that output column `index` of `plan`
/// holds unchanged, through the nodes that pass a column's values on.
fn source_column(plan: &Arc<dyn ExecutionPlan>, index: usize) -> Option<(&DataSourceExec, String)> {
    if let Some(scan) = as_parquet_scan(plan) {
        // The scan's own projection may compute a column (DataFusion
        // pushes projections into scans) under a file column's name:
        // `k % 3 AS k` holds none of `k`'s order.
        let (config, source) =
            scan.downcast_to_file_source::<datafusion::datasource::physical_plan::ParquetSource>()?;
        let file = config.file_schema();
        let name = match source.projection() {
            Some(projection) => {
                let column = projection
                    .iter()
                    .nth(index)?
                    .expr
                    .downcast_ref::<Column>()?;
                let field = file.fields().get(column.index())?;
                (field.name() == column.name()).then(|| field.name().clone())?
            }
            None => plan.schema().fields().get(index)?.name().clone(),
        };
        file.field_with_name(&name).ok()?;
        return Some((scan, name));
    }
    let children = plan.children();
    if let Some(projection) = plan.downcast_ref::<ProjectionExec>() {
        let column = projection
            .expr()
            .get(index)?
            .expr
            .downcast_ref::<Column>()?;
        return source_column(children.first()?, column.index());
    }
    if let Some(filter) = plan.downcast_ref::<FilterExec>() {
        let index = match filter.projection() {
            Some(p) => *p.get(index)?,
            None => index,
        };
        return source_column(children.first()?, index);
    }
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        let groups = aggregate.group_expr();
        if *aggregate.mode() != AggregateMode::Partial || !groups.is_single() {
            return None;
        }
        let column = groups.expr().get(index)?.0.downcast_ref::<Column>()?;
        return source_column(children.first()?, column.index());
    }
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        // The probe side of a broadcast join passes its rows' values on.
        if *join.partition_mode() != PartitionMode::CollectLeft {
            return None;
        }
        let index = match &join.projection {
            Some(p) => *p.get(index)?,
            None => index,
        };
        let left = join.left().schema().fields().len();
        let right_index = match join.join_type() {
            JoinType::Inner | JoinType::Right => index.checked_sub(left)?,
            JoinType::RightSemi | JoinType::RightAnti => index,
            _ => return None,
        };
        return source_column(children.get(1)?, right_index);
    }
    const PASS_ROWS_ON: [&str; 8] = [
        "CoalesceBatchesExec",
        "CooperativeExec",
        "RepartitionExec",
        "SortExec",
        "KeyFilterExec",
        "DynamicFilterExec",
        "PaceExec",
        "CountRowsExec",
    ];
    let [child] = children.as_slice() else {
        return None;
    };
    if PASS_ROWS_ON.contains(&plan.name()) && plan.schema().fields() == child.schema().fields() {
        return source_column(child, index);
    }
    None
}

/// `staged` with stage `c.source` merged into `c.reader`: the reader's
/// read of it replaced by the source's plan, hash repartitioned as its
/// writer was into `partitions` (the task's threads). The merged stage
/// keeps the reader's id and is a scan stage; false (nothing changed) when
/// the rebuilt plan would not meet its operators' requirements.
pub fn merge(staged: &mut StagedPlan, c: &Candidate, partitions: usize) -> Result<bool> {
    let (Some(si), Some(ri)) = (staged.index(c.source), staged.index(c.reader)) else {
        return Ok(false);
    };
    let source = &staged.stages[si];
    let Some(writer) = source.plan.downcast_ref::<ShuffleWriteExec>() else {
        return Ok(false);
    };
    let Some(Partitioning::Hash(keys, _)) = writer.partitioning() else {
        return Ok(false);
    };
    let repartitioned: Arc<dyn ExecutionPlan> = Arc::new(RepartitionExec::try_new(
        Arc::clone(writer.input()),
        Partitioning::Hash(keys.clone(), partitions.max(1)),
    )?);
    let plan = Arc::clone(&staged.stages[ri].plan)
        .transform_up(|node| {
            match node
                .downcast_ref::<ShuffleReadExec>()
                .is_some_and(|r| r.stage() == c.source)
            {
                true => Ok(Transformed::yes(Arc::clone(&repartitioned))),
                false => Ok(Transformed::no(node)),
            }
        })?
        .data;
    let mut unmet = false;
    plan.apply(|node| {
        unmet |= !unmet_requirements(node)?.is_empty();
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    })?;
    if unmet {
        tracing::debug!(
            stage = c.reader,
            "not merged: the rebuilt plan misses a requirement"
        );
        return Ok(false);
    }
    let source = staged.stages.remove(si);
    let ri = staged.index(c.reader).unwrap_or(ri);
    let reader = &mut staged.stages[ri];
    reader.plan = plan;
    reader.layout = TaskLayout::Scan;
    reader.inputs = source.inputs;
    for f in source.filter_inputs {
        if !reader.filter_inputs.contains(&f) {
            reader.filter_inputs.push(f);
        }
    }
    reader.clustered_on = Some(c.column.clone());
    Ok(true)
}

/// Merges each scan stage whose table is clustered on a column its
/// aggregation groups by into the stage that finishes it
/// (see the module docs), `units` (per stage) kept beside the stages;
/// the merged stages' scan tasks (row groups dealt in that column's
/// order), by stage id.
/// Only where the cuts the order allows give the scan at least half the
/// tasks it would have otherwise: a column of few values (a table
/// sorted by country) allows almost none, and the scan would lose its
/// parallelism to save an exchange of few groups.
pub async fn cluster(
    staged: &mut StagedPlan,
    units: &mut Vec<Vec<ScanUnits>>,
    squall: &SquallConfig,
    spread: Spread,
    runtime: &RuntimeEnv,
    footers: &FooterCache,
) -> Result<HashMap<u32, Vec<Vec<ScanAssignment>>>> {
    let mut dealt = HashMap::new();
    for c in candidates(staged) {
        let Some(si) = staged.index(c.source) else {
            continue;
        };
        let (Some([scan_units]), Some(scan)) = (
            units.get(si).map(Vec::as_slice),
            leaves(&staged.stages[si].plan)
                .into_iter()
                .find_map(|l| match l {
                    Leaf::ParquetScan(s) => Some(s),
                    _ => None,
                }),
        ) else {
            continue;
        };
        let order = clustered_order(scan, scan_units, &c.column, runtime, footers).await?;
        let Some(order) = order else {
            continue;
        };
        let target = squall.scan.target_task_bytes;
        let tasks = assign_tasks(std::slice::from_ref(scan_units), target, spread, false);
        let in_order = assign_in_order(scan_units, &order, target, spread);
        if in_order.len() * 2 < tasks.len() {
            tracing::debug!(
                stage = c.source,
                column = %c.column,
                tasks = tasks.len(),
                in_order = in_order.len(),
                "not clustered: too few places to cut its scan"
            );
            continue;
        }
        if merge(staged, &c, squall.worker_cores())? {
            let moved = units.remove(si);
            if let Some(ri) = staged.index(c.reader) {
                units[ri] = moved;
                dealt.insert(c.reader, in_order);
            }
        }
    }
    Ok(dealt)
}
