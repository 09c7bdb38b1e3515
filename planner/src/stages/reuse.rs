//! One run of a stage the plan holds more than once.
//!
//! DataFusion plans a view, CTE or subquery that a query names twice as two
//! copies of its plan, and the cut makes each copy its own stages. TPC-H
//! Q15 reads its `revenue0` view twice (the suppliers' revenues, and their
//! maximum): two stages scan the quarter's lineitem rows and aggregate them
//! by supplier, identically. At SF1000 the second is about 49,000 GETs and
//! 40 GB read again for the same hash partitions.
//!
//! A stage whose plan is the same as an earlier stage's (the same operators,
//! expressions, files and partitioning, reading the same stages; a copy
//! whose common subexpressions DataFusion named apart, `__common_expr_1`
//! and `_2`, is not the same) is dropped
//! and its reader reads the earlier stage's outputs, as Spark reuses an
//! exchange. The earlier stage then has several readers; EXPLAIN shows them
//! (`read by s2, s6`). Stages are compared by their encoded plans (what the
//! workers decode), bottom-up, the reads inside a stage renumbered to the
//! stages kept before it is compared; the stages kept are numbered 1, 2, ...
//! again.
//!
//! ```text
//!  before                                        after
//!  s1 [scan] agg(lineitem) -> hash(l_suppkey)    s1 [scan] agg(lineitem) -> hash(l_suppkey)
//!  s2 [hash] max(...) <- s1                      s2 [hash] max(...) <- s1
//!  s3 [scan] agg(lineitem) -> hash(l_suppkey)    s3 [hash] join <- s1
//!  s4 [hash] join <- s3
//! ```
//!
//! Not in a query that calls a volatile function (`random()`, `uuid()`):
//! two calls draw two values, and one run of both copies would make them
//! one. Runs before key filters are placed: a stage with several readers
//! applies no key filter (`crate::key_filter`), as the filter would drop
//! rows only one of them may lose.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::physical_plan::FileScanConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::Result;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use squall_core::codec::encode_plan;
use squall_core::exec::ShuffleReadExec;

use super::StagedPlan;

/// Drop every stage identical to an earlier one (see the module docs);
/// returns how many were dropped.
pub fn reuse_stages(staged: &mut StagedPlan) -> Result<usize> {
    let stages = std::mem::take(&mut staged.stages);
    let total = stages.len();
    // Old stage id -> the id of the stage kept for it.
    let mut kept_as: HashMap<u32, u32> = HashMap::with_capacity(total);
    // Encoded plan of a kept stage -> its id.
    let mut seen: HashMap<Bytes, u32> = HashMap::with_capacity(total);
    let mut kept = Vec::with_capacity(total);
    for (i, mut stage) in stages.into_iter().enumerate() {
        stage.plan = renumber_reads(Arc::clone(&stage.plan), &kept_as)?;
        for input in &mut stage.inputs {
            *input = kept_as.get(input).copied().unwrap_or(*input);
        }
        stage.inputs.sort_unstable();
        stage.inputs.dedup();
        // The final stage is never dropped: it is what the query returns.
        // A plan that cannot be encoded is compared with nothing (encoding
        // it for the workers later fails the query, naming the stage).
        let key = match i + 1 < total {
            true => encode_plan(Arc::clone(&stage.plan)).ok(),
            false => None,
        };
        if let Some(earlier) = key.as_ref().and_then(|k| seen.get(k))
            && let Some(twin) = kept.iter().find(|s: &&super::Stage| s.id == *earlier)
            && twin.layout == stage.layout
        {
            kept_as.insert(stage.id, *earlier);
            continue;
        }
        let id = kept.len() as u32 + 1;
        kept_as.insert(stage.id, id);
        stage.id = id;
        if let Some(key) = key {
            seen.insert(key, id);
        }
        kept.push(stage);
    }
    let dropped = total - kept.len();
    staged.stages = kept;
    Ok(dropped)
}

/// `plan` with each read of stage `s` reading `ids[s]`.
fn renumber_reads(
    plan: Arc<dyn ExecutionPlan>,
    ids: &HashMap<u32, u32>,
) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let Some(read) = node.downcast_ref::<ShuffleReadExec>() else {
            return Ok(Transformed::no(node));
        };
        match ids.get(&read.stage()) {
            Some(&id) if id != read.stage() => {
                Ok(Transformed::yes(Arc::new(ShuffleReadExec::try_new(
                    id,
                    read.mode(),
                    read.schema(),
                    read.planned_partitioning().clone(),
                    read.carried().clone(),
                )?)
                    as Arc<dyn ExecutionPlan>))
            }
            _ => Ok(Transformed::no(node)),
        }
    })
    .map(|t| t.data)
}

/// Whether `plan` (its subqueries included) calls a volatile function.
pub fn calls_volatile(plan: &LogicalPlan) -> bool {
    let mut volatile = false;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            volatile |= e.is_volatile();
            Ok(match volatile {
                true => TreeNodeRecursion::Stop,
                false => TreeNodeRecursion::Continue,
            })
        })?;
        Ok(match volatile {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    volatile
}

/// Whether the stages run once for their copies would have read at least
/// a quarter of the files' bytes the query reads (counting the copies):
/// then a query is worth staging even in one process, where it would
/// otherwise run as one task of DataFusion's whole plan and read every
/// copy. Measured at TPC-H SF1 on two cores: Q15, whose copies scan half
/// its line items, 312 ms as one task, 173-199 ms staged; Q02 and Q11,
/// whose copies scan a few small dimension tables, 114-126 / 87-100 ms as
/// one task, 150-170 / 104-114 ms staged.
pub fn reuse_saves_scans(staged: &StagedPlan) -> bool {
    let bytes: HashMap<u32, u64> = staged
        .stages
        .iter()
        .map(|s| (s.id, file_bytes(&s.plan)))
        .collect();
    let read: u64 = bytes.values().sum();
    let saved: u64 = staged
        .stages
        .iter()
        .map(|s| {
            let copies = staged.reads_of(s.id).saturating_sub(1) as u64;
            upstream_bytes(staged, s.id, &bytes).saturating_mul(copies)
        })
        .sum();
    saved > 0 && saved.saturating_mul(4) >= read.saturating_add(saved)
}

/// The files' bytes stage `id` and the stages it reads from scan.
fn upstream_bytes(staged: &StagedPlan, id: u32, bytes: &HashMap<u32, u64>) -> u64 {
    let Some(stage) = staged.stage(id) else {
        return 0;
    };
    stage
        .inputs
        .iter()
        .map(|i| upstream_bytes(staged, *i, bytes))
        .fold(bytes.get(&id).copied().unwrap_or(0), u64::saturating_add)
}

/// The bytes of the files (or their ranges) a plan's file scans read.
fn file_bytes(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    let own = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|s| s.data_source().downcast_ref::<FileScanConfig>())
        .map(crate::split::listed_bytes)
        .unwrap_or(0);
    plan.children()
        .into_iter()
        .map(file_bytes)
        .fold(own, u64::saturating_add)
}
