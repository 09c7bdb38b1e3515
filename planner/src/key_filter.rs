//! Placing join-key filters ("Bloom filters") in a staged plan.
//!
//! For a partitioned hash join whose two sides come from two other stages,
//! the side estimated much smaller can publish the distinct hashes of its join
//! keys; the other side's stage then starts after it and drops, just below
//! its shuffle writer, every row whose key cannot match.
//!
//! ```text
//!  before                                   after
//!  s6 [hash]  writer(hash o_orderkey)       s6 [hash]  writer(hash o_orderkey), publishes key filter on [o_orderkey]
//!  s7 [scan]  writer(hash l_orderkey)       s7 [scan]  writer(hash l_orderkey)          (starts after s6)
//!               scan lineitem                            KeyFilterExec [l_orderkey] in filter of s6
//!  s8 [hash]  join s6.o_orderkey = s7.l_orderkey           scan lineitem
//! ```
//!
//! Which side may be filtered depends on the join type: a side may lose its
//! rows without a match only when such rows never reach the output. So the
//! right side of inner, left, left semi, left anti and right semi joins, and
//! the left side of inner, right, right semi, right anti and left semi joins.
//! Never for joins where NULL equals NULL or null-aware anti joins (`NOT IN`),
//! whose unmatched NULL keys change the answer. NULL keys never match an
//! equi-join otherwise, so both the build and the probe side drop them.
//!
//! The filter then moves as far upstream as its keys can be followed: through
//! projections, filters, full sorts and aggregations grouped by the keys
//! (dropping every row of a key drops exactly that key's group) and inner
//! joins (to the side the keys come from), down to just above the scan — and
//! into the stage that writes what it reads (TPC-H Q17: lineitem rows of
//! other parts are dropped before the partial aggregation, not after the
//! final one; Q7: supplier rows of other nations in the supplier scan, not
//! after the shuffle of their join with lineitem).
//!
//! The publishing side need not be one stage's output: where it is built
//! in the join's stage from other stages' outputs (an inner join of two,
//! an aggregation grouped by the keys), the smallest stage its keys can be
//! followed to publishes, since every key of the side is one of that
//! stage's keys (TPC-H Q17 at scale: parts and their line items are joined
//! in the stage that finishes the average quantity per part, and the parts'
//! stage publishes for that join too). A stage already publishing the same
//! keys for another join publishes them once for both; a target the
//! source itself waits for (through reads or filters) is left unfiltered.
//!
//! A filter is placed when the publishing side is estimated at most
//! `1 / squall.bloom.min_size_ratio` of the other side, and at most
//! `squall.bloom.max_source_fraction` of the largest table it derives from (a
//! whole dimension table would hold every key and filter nothing).
//!
//! A stage publishes at most one key set and applies at most one filter. A
//! filter is applied only in stages with one reader (a stage run once for
//! two identical ones has two, `crate::stages::reuse_stages`), each of them
//! on the path to the join alone, so the rows it drops reach nothing else,
//! and the build side, read by the join too, cannot wait for them: the
//! added start-after edges never form a cycle.

use crate::error::PlannerError;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::{JoinType, NullEquality};
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext};
use serde::Serialize;
use squall_core::config::BloomOptions;
use squall_core::exec::{ReadMode, ShuffleReadExec, ShuffleWriteExec};
use squall_core::scan::{Leaf, leaves};

use crate::stages::StagedPlan;

mod follow;
use follow::{follow_targets, follow_to_read, sink_filter};

/// One filter placed: `source` publishes keys, `target` applies them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilterPlacement {
    pub source: u32,
    pub target: u32,
    /// The stage holding the join.
    pub join_stage: u32,
    pub join_type: String,
    pub source_est_rows: Option<usize>,
    pub target_est_rows: Option<usize>,
}

type Keys = Vec<Arc<dyn PhysicalExpr>>;

struct Candidate {
    placement: FilterPlacement,
    source_keys: Keys,
    /// Every stage that may apply the filter, with the keys as columns of
    /// what it writes (both inputs of an inner join the keys pass through).
    targets: Vec<(u32, Keys)>,
}

/// Place key filters on `staged` (in place) as `options` allow, from build
/// sides estimated at most `max_build_rows` rows; returns what was placed.
pub fn place_key_filters(
    staged: &mut StagedPlan,
    options: &BloomOptions,
    max_build_rows: usize,
) -> Result<Vec<FilterPlacement>> {
    if !options.enabled {
        return Ok(vec![]);
    }
    let mut base = HashMap::new();
    for stage in &staged.stages {
        let rows = base_rows(staged, stage.id, &base);
        base.insert(stage.id, rows);
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for stage in &staged.stages {
        let mut joins = Vec::new();
        collect_joins(&stage.plan, &mut joins);
        for join in joins {
            if let Some(mut c) = candidate(staged, stage.id, join, options, max_build_rows, &base) {
                // A stage publishes one key set and applies one filter.
                let busy = |candidates: &[Candidate], id: u32| {
                    candidates.iter().any(|o| {
                        o.placement.source == id || o.targets.iter().any(|(t, _)| *t == id)
                    })
                };
                // Waiting for the source must not close a cycle: a target
                // the source itself waits for (through reads or filters).
                c.targets.retain(|(t, _)| {
                    !busy(&candidates, *t)
                        && !waits_for(staged, &candidates, c.placement.source, *t)
                });
                // The source already publishes these very keys for another
                // join: its key set serves this one's targets too.
                if let Some(same) = candidates.iter_mut().find(|o| {
                    o.placement.source == c.placement.source && o.source_keys == c.source_keys
                }) {
                    same.targets.append(&mut c.targets);
                    continue;
                }
                if busy(&candidates, c.placement.source) {
                    continue;
                }
                if let Some((first, _)) = c.targets.first() {
                    c.placement.target = *first;
                    candidates.push(c);
                }
            }
        }
    }
    let mut placed = Vec::with_capacity(candidates.len());
    for c in candidates {
        let source = index_of(staged, c.placement.source)?;
        let writer = writer_of(&staged.stages[source].plan)?;
        staged.stages[source].plan = Arc::new(
            writer
                .with_input(Arc::clone(writer.input()))
                .with_published_keys(Some(c.source_keys)),
        );
        for (target_id, keys) in c.targets {
            let target = index_of(staged, target_id)?;
            let mut placement = c.placement.clone();
            placement.target_est_rows = staged.stages[target].est_rows;
            placed.push(apply_filter(staged, target, keys, placement)?);
        }
    }
    Ok(placed)
}

/// Apply the filter of `placement.source` in stage index `target` (keys over
/// what it writes), moved as far upstream as the keys can be followed:
/// through projections, filters, sorts and aggregations grouped by the keys,
/// and through inner joins into the stage feeding the side of the join the
/// keys come from.
fn apply_filter(
    staged: &mut StagedPlan,
    target: usize,
    keys: Keys,
    mut placement: FilterPlacement,
) -> Result<FilterPlacement> {
    let (mut target, mut keys) = (target, keys);
    {
        loop {
            let writer = writer_of(&staged.stages[target].plan)?;
            let Some((upstream, upstream_keys)) = follow_to_read(writer.input(), &keys) else {
                break;
            };
            let Ok(u) = index_of(staged, upstream) else {
                break;
            };
            // With one reader, the rows of `u` reach only this read, so
            // filtering them before `u` writes drops the same rows.
            if !staged.stages[target].inputs.contains(&upstream)
                || staged.reads_of(upstream) > 1
                || !staged.stages[u].filter_inputs.is_empty()
                || staged.stages[u].publishes_filter()
            {
                break;
            }
            target = u;
            keys = upstream_keys;
        }
    }
    let writer = writer_of(&staged.stages[target].plan)?;
    let filtered = sink_filter(writer.input(), &keys, placement.source)?;
    staged.stages[target].plan = Arc::new(writer.with_input(filtered));
    staged.stages[target].filter_inputs.push(placement.source);
    placement.target = staged.stages[target].id;
    Ok(placement)
}

fn candidate(
    staged: &StagedPlan,
    join_stage: u32,
    join: &HashJoinExec,
    o: &BloomOptions,
    max_build_rows: usize,
    base: &HashMap<u32, Option<usize>>,
) -> Option<Candidate> {
    if join.null_equality() != NullEquality::NullEqualsNothing || join.null_aware {
        return None;
    }
    let est = |id: u32| staged.stage(id).and_then(|s| s.est_rows);
    let (left_keys, right_keys): (Keys, Keys) = join
        .on()
        .iter()
        .map(|(l, r)| (Arc::clone(l), Arc::clone(r)))
        .unzip();
    // A side that is most of the tables it comes from (an unfiltered
    // dimension) holds nearly every key the other side has: its filter would
    // drop nothing and only delay the other side.
    let reduced = |id: u32, rows: usize| match base.get(&id).copied().flatten() {
        Some(b) if b > 0 => rows as f64 <= o.max_source_fraction * b as f64,
        _ => true,
    };
    let worth = |source: u32, source_rows: Option<usize>, target_rows: Option<usize>| match (
        source_rows,
        target_rows,
    ) {
        (Some(s), Some(t)) => {
            s <= max_build_rows
                && t as f64 >= o.min_size_ratio * s.max(1) as f64
                && reduced(source, s)
        }
        _ => false,
    };
    let jt = *join.join_type();
    // One side publishes (a whole stage's output, read hashed or broadcast,
    // or the stage it is built from that `publisher` picks); the other
    // side's keys are followed to the stages feeding it.
    let orient = |source_side: &Arc<dyn ExecutionPlan>,
                  source_keys: &Keys,
                  target_side: &Arc<dyn ExecutionPlan>,
                  target_keys: &Keys|
     -> Option<Candidate> {
        // A stage read twice (`crate::stages::reuse_stages`) keeps its rows:
        // its other reader may need those this join drops.
        let targets: Vec<(u32, Keys)> = follow_targets(target_side, target_keys)
            .into_iter()
            .filter(|(t, _)| staged.reads_of(*t) == 1)
            .collect();
        let target_rows = targets.iter().filter_map(|(t, _)| est(*t)).max();
        let (source, source_keys) = publisher(source_side, source_keys, &|id| {
            worth(id, est(id), target_rows).then(|| est(id).unwrap_or(usize::MAX))
        })?;
        let targets: Vec<(u32, Keys)> = targets.into_iter().filter(|(t, _)| *t != source).collect();
        let source_rows = est(source);
        if targets.is_empty() || !worth(source, source_rows, target_rows) {
            return None;
        }
        Some(Candidate {
            placement: FilterPlacement {
                source,
                target: targets[0].0,
                join_stage,
                join_type: jt.to_string(),
                source_est_rows: source_rows,
                target_est_rows: target_rows,
            },
            source_keys,
            targets,
        })
    };
    let left_first = right_side_filterable(jt)
        .then(|| orient(join.left(), &left_keys, join.right(), &right_keys))
        .flatten();
    left_first.or_else(|| {
        left_side_filterable(jt)
            .then(|| orient(join.right(), &right_keys, join.left(), &left_keys))
            .flatten()
    })
}

/// The rows of the largest table a stage's output derives from: the most of
/// its scans' row counts and its upstream stages' own base rows.
fn base_rows(staged: &StagedPlan, id: u32, known: &HashMap<u32, Option<usize>>) -> Option<usize> {
    let stage = staged.stage(id)?;
    let mut most: Option<usize> = None;
    for leaf in leaves(&stage.plan) {
        let rows = match leaf {
            Leaf::ParquetScan(scan) => StatisticsContext::new()
                .compute(scan, &StatisticsArgs::new())
                .ok()
                .and_then(|s| s.num_rows.get_value().copied()),
            Leaf::ShuffleRead(r) => known.get(&r.stage()).copied().flatten(),
            Leaf::TextScan(_) | Leaf::Other(_) => None,
        };
        if let Some(r) = rows {
            most = Some(most.map_or(r, |m| m.max(r)));
        }
    }
    most
}

/// Rows of the right side that match nothing never reach the output.
pub(crate) fn right_side_filterable(t: JoinType) -> bool {
    matches!(
        t,
        JoinType::Inner
            | JoinType::Left
            | JoinType::LeftSemi
            | JoinType::LeftAnti
            | JoinType::RightSemi
    )
}

/// Rows of the left side that match nothing never reach the output.
pub(crate) fn left_side_filterable(t: JoinType) -> bool {
    matches!(
        t,
        JoinType::Inner
            | JoinType::Right
            | JoinType::RightSemi
            | JoinType::RightAnti
            | JoinType::LeftSemi
    )
}

/// The stage that publishes the keys of a join's side `side` (`keys` over
/// its output), and the keys as columns of what that stage writes: the
/// stage whose output the side is, or else, where the side is built from
/// other stages' outputs (an inner join of two, TPC-H Q17's parts joined
/// with their line items at scale), the one of the stages its keys can be
/// followed to that `rank` ranks smallest (`None`: not eligible). Every key
/// of such a side is a key of that stage's output too (projections,
/// filters, aggregations grouped by the keys and inner joins only drop or
/// rename keys), so its key set holds every key the side can match with.
fn publisher(
    side: &Arc<dyn ExecutionPlan>,
    keys: &Keys,
    rank: &dyn Fn(u32) -> Option<usize>,
) -> Option<(u32, Keys)> {
    if let Some(id) = stage_read(side) {
        return Some((id, keys.clone()));
    }
    follow_targets(side, keys)
        .into_iter()
        .filter_map(|(id, k)| rank(id).map(|r| (r, id, k)))
        .min_by_key(|(r, id, _)| (*r, *id))
        .map(|(_, id, k)| (id, k))
}

/// Whether stage `from` waits for stage `to`: reads it, applies its filter,
/// or waits for a stage that does, counting the filters `candidates` will
/// place (their targets wait for their sources).
fn waits_for(staged: &StagedPlan, candidates: &[Candidate], from: u32, to: u32) -> bool {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![from];
    while let Some(id) = stack.pop() {
        if id == to {
            return true;
        }
        if !seen.insert(id) {
            continue;
        }
        if let Some(stage) = staged.stage(id) {
            stack.extend(stage.inputs.iter().chain(&stage.filter_inputs).copied());
        }
        for c in candidates {
            if c.targets.iter().any(|(t, _)| *t == id) {
                stack.push(c.placement.source);
            }
        }
    }
    false
}

/// The upstream stage of a join input that is a whole stage's output (a
/// hash or broadcast shuffle read), or a full sort of one (same rows, same
/// schema: the join keys mean the same).
fn stage_read(plan: &Arc<dyn ExecutionPlan>) -> Option<u32> {
    if let Some(sort) = plan.downcast_ref::<SortExec>()
        && sort.fetch().is_none()
        && sort.input().schema() == plan.schema()
    {
        return stage_read(sort.input());
    }
    plan.downcast_ref::<ShuffleReadExec>()
        .filter(|r| matches!(r.mode(), ReadMode::Hash | ReadMode::Broadcast))
        .map(|r| r.stage())
}

fn collect_joins<'a>(plan: &'a Arc<dyn ExecutionPlan>, out: &mut Vec<&'a HashJoinExec>) {
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        out.push(j);
    }
    for c in plan.children() {
        collect_joins(c, out);
    }
}

fn index_of(staged: &StagedPlan, id: u32) -> Result<usize> {
    staged.index(id).ok_or_else(|| {
        PlannerError::Internal(format!("key filter names unknown stage s{id}")).into()
    })
}

fn writer_of(plan: &Arc<dyn ExecutionPlan>) -> Result<&ShuffleWriteExec> {
    plan.downcast_ref::<ShuffleWriteExec>().ok_or_else(|| {
        PlannerError::Internal(format!(
            "stage root is {}, not ShuffleWriteExec",
            plan.name()
        ))
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::{Stage, TaskLayout};
    use arrow::datatypes::Schema;
    use datafusion::physical_plan::empty::EmptyExec;

    fn stage(id: u32, inputs: &[u32], filter_inputs: &[u32]) -> Stage {
        let empty = Arc::new(EmptyExec::new(Arc::new(Schema::empty())));
        Stage {
            id,
            plan: Arc::new(ShuffleWriteExec::new(empty, None)),
            inputs: inputs.to_vec(),
            layout: TaskLayout::Scan,
            est_rows: None,
            filter_inputs: filter_inputs.to_vec(),
            clustered_on: None,
        }
    }

    fn candidate(source: u32, targets: &[u32]) -> Candidate {
        Candidate {
            placement: FilterPlacement {
                source,
                target: targets[0],
                join_stage: 0,
                join_type: "Inner".into(),
                source_est_rows: None,
                target_est_rows: None,
            },
            source_keys: vec![],
            targets: targets.iter().map(|t| (*t, vec![])).collect(),
        }
    }

    #[test]
    fn waits_follow_reads_filters_and_the_filters_to_be_placed() {
        // s2 reads s1, s3 reads s2, s5 applies s4's filter; s6 alone.
        let staged = StagedPlan {
            stages: vec![
                stage(1, &[], &[]),
                stage(2, &[1], &[]),
                stage(3, &[2], &[]),
                stage(4, &[], &[]),
                stage(5, &[], &[4]),
                stage(6, &[], &[]),
            ],
        };
        assert!(waits_for(&staged, &[], 3, 1));
        assert!(!waits_for(&staged, &[], 1, 3));
        assert!(waits_for(&staged, &[], 5, 4));
        assert!(!waits_for(&staged, &[], 6, 1));
        // A filter to be placed from s3 on s6: s6 then waits for s1 too,
        // so s1 may not wait for s6 (a filter from s6 on s1 would close a
        // cycle).
        let placed = [candidate(3, &[6])];
        assert!(waits_for(&staged, &placed, 6, 1));
        assert!(!waits_for(&staged, &placed, 1, 6));
    }

    #[test]
    fn filterable_sides_by_join_type() {
        // A side may be filtered only when its unmatched rows are not output.
        for t in [JoinType::Inner, JoinType::LeftSemi, JoinType::RightSemi] {
            assert!(right_side_filterable(t) && left_side_filterable(t), "{t}");
        }
        assert!(right_side_filterable(JoinType::Left) && !left_side_filterable(JoinType::Left));
        assert!(left_side_filterable(JoinType::Right) && !right_side_filterable(JoinType::Right));
        assert!(
            right_side_filterable(JoinType::LeftAnti) && !left_side_filterable(JoinType::LeftAnti)
        );
        assert!(
            left_side_filterable(JoinType::RightAnti)
                && !right_side_filterable(JoinType::RightAnti)
        );
        for t in [JoinType::Full, JoinType::LeftMark, JoinType::RightMark] {
            assert!(!right_side_filterable(t) && !left_side_filterable(t), "{t}");
        }
    }
}
