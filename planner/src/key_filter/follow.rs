//! Following join keys through a plan: down a join's side to the stages
//! whose rows a key filter may drop ([`follow_targets`],
//! [`follow_to_read`]), and the filter placed as deep as they go
//! ([`sink_filter`]).

use std::sync::Arc;

use datafusion::common::{JoinType, NullEquality};
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::{ChildrenPropertiesMode, ExecutionPlan, ReplaceChildrenOptions};
use squall_core::exec::{NullableSideExec, ReadMode, ShuffleReadExec};
use squall_core::key_filter::KeyFilterExec;

use super::Keys;

/// The stages feeding `plan` whose rows may be filtered by `keys` (over
/// `plan`'s output), with the keys as columns of what each writes: hash
/// shuffle reads reached through [`map_through`] and through both inputs
/// of inner joins the keys pass through.
pub(super) fn follow_targets(plan: &Arc<dyn ExecutionPlan>, keys: &Keys) -> Vec<(u32, Keys)> {
    if let Some(r) = plan.downcast_ref::<ShuffleReadExec>() {
        return if r.mode() == ReadMode::Hash {
            vec![(r.stage(), keys.clone())]
        } else {
            vec![]
        };
    }
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        let (left, right) = through_inner_join(join, keys);
        let mut out = Vec::new();
        if let Some(k) = left {
            out.extend(follow_targets(join.left(), &k));
        }
        if let Some(k) = right {
            out.extend(follow_targets(join.right(), &k));
        }
        return out;
    }
    match map_through(plan, keys) {
        Some((child, child_keys)) => follow_targets(&child, &child_keys),
        None => vec![],
    }
}

/// `keys` (over an inner join's output) as columns of its left and of its
/// right input, where they can be: a key that is a column of one input is
/// also, through the join condition, the paired column of the other. For
/// other joins (whose output keeps unmatched rows, or only one side) nothing.
fn through_inner_join(join: &HashJoinExec, keys: &Keys) -> (Option<Keys>, Option<Keys>) {
    // (A residual filter only removes more output rows: it does not matter.)
    if *join.join_type() != JoinType::Inner
        || join.null_equality() != NullEquality::NullEqualsNothing
    {
        return (None, None);
    }
    let left_len = join.left().schema().fields().len();
    let col = |e: &Arc<dyn PhysicalExpr>| e.downcast_ref::<Column>().map(|c| c.index());
    let mut left_keys = Some(Keys::new());
    let mut right_keys = Some(Keys::new());
    for k in keys {
        let Some(out) = col(k) else {
            return (None, None);
        };
        // Output column -> column of left ++ right.
        let joined = match join.projection.as_ref() {
            Some(p) => match p.get(out) {
                Some(i) => *i,
                None => return (None, None),
            },
            None => out,
        };
        let (own_left, own_right) = if joined < left_len {
            let c = Arc::new(Column::new(
                join.left().schema().field(joined).name(),
                joined,
            )) as Arc<dyn PhysicalExpr>;
            let paired = join
                .on()
                .iter()
                .find(|(l, _)| col(l) == Some(joined))
                .map(|(_, r)| Arc::clone(r));
            (Some(c), paired)
        } else {
            let i = joined - left_len;
            let c = Arc::new(Column::new(join.right().schema().field(i).name(), i))
                as Arc<dyn PhysicalExpr>;
            let paired = join
                .on()
                .iter()
                .find(|(_, r)| col(r) == Some(i))
                .map(|(l, _)| Arc::clone(l));
            (paired, Some(c))
        };
        match (own_left, left_keys.as_mut()) {
            (Some(c), Some(v)) => v.push(c),
            _ => left_keys = None,
        }
        match (own_right, right_keys.as_mut()) {
            (Some(c), Some(v)) => v.push(c),
            _ => right_keys = None,
        }
    }
    (left_keys, right_keys)
}

/// `keys` (over `plan`'s output) as columns of `plan`'s single child, when a
/// row of the child whose keys cannot match yields no output row of `plan`
/// that could (so the filter may run below `plan`).
fn map_through(
    plan: &Arc<dyn ExecutionPlan>,
    keys: &Keys,
) -> Option<(Arc<dyn ExecutionPlan>, Keys)> {
    let column = |k: &Arc<dyn PhysicalExpr>| k.downcast_ref::<Column>().map(|c| c.index());
    let remap = |input: &Arc<dyn ExecutionPlan>,
                 f: &dyn Fn(usize) -> Option<Arc<dyn PhysicalExpr>>| {
        let mapped = keys
            .iter()
            .map(|k| column(k).and_then(f))
            .collect::<Option<Keys>>()?;
        Some((Arc::clone(input), mapped))
    };
    if let Some(p) = plan.downcast_ref::<ProjectionExec>() {
        return remap(p.input(), &|i| {
            let e = &p.expr().get(i)?.expr;
            e.downcast_ref::<Column>().map(|_| Arc::clone(e))
        });
    }
    if let Some(a) = plan.downcast_ref::<AggregateExec>() {
        // Groups are per key value: dropping every row of a key drops its group.
        if !a.group_expr().is_single() {
            return None;
        }
        let groups = a.group_expr().expr();
        return remap(a.input(), &|i| {
            let (e, _) = groups.get(i)?;
            e.downcast_ref::<Column>().map(|_| Arc::clone(e))
        });
    }
    if let Some(f) = plan.downcast_ref::<FilterExec>() {
        let input_schema = f.input().schema();
        return remap(f.input(), &|i| {
            let src = match f.projection() {
                Some(p) => *p.get(i)?,
                None => i,
            };
            let field = input_schema.fields().get(src)?;
            Some(Arc::new(Column::new(field.name(), src)) as Arc<dyn PhysicalExpr>)
        });
    }
    if let Some(sort) = plan.downcast_ref::<SortExec>()
        && sort.fetch().is_none()
    {
        return Some((Arc::clone(sort.input()), keys.clone()));
    }
    if let Some(side) = plan.downcast_ref::<NullableSideExec>() {
        return Some((Arc::clone(side.input()), keys.clone()));
    }
    None
}

/// Follow `keys` down from `plan` to a hash shuffle read: its stage and the
/// keys as columns of what that stage writes. Through inner joins too, on
/// the side [`sink_filter`] would filter (the probe side when the keys
/// reach it, else the build side): a row dropped in the stage that writes
/// that side is one the join would never have matched, and it is not
/// shuffled (TPC-H Q7: the supplier rows of other nations leave the
/// supplier scan's stage, not the join with lineitem after its shuffle).
pub(super) fn follow_to_read(plan: &Arc<dyn ExecutionPlan>, keys: &Keys) -> Option<(u32, Keys)> {
    if let Some(r) = plan.downcast_ref::<ShuffleReadExec>() {
        return (r.mode() == ReadMode::Hash).then(|| (r.stage(), keys.clone()));
    }
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        return match through_inner_join(join, keys) {
            (_, Some(k)) => follow_to_read(join.right(), &k),
            (Some(k), None) => follow_to_read(join.left(), &k),
            (None, None) => None,
        };
    }
    let (child, child_keys) = map_through(plan, keys)?;
    follow_to_read(&child, &child_keys)
}

/// `plan` with a [`KeyFilterExec`] as deep as the keys can be followed.
pub(super) fn sink_filter(
    plan: &Arc<dyn ExecutionPlan>,
    keys: &Keys,
    source: u32,
) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some((child, child_keys)) = map_through(plan, keys) {
        let sunk = sink_filter(&child, &child_keys, source)?;
        return Arc::clone(plan).replace_children(
            vec![sunk],
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        );
    }
    // Below an inner join, on its probe (right) side when the keys reach it,
    // else on its build side: rows dropped there never meet the other side.
    if let Some(join) = plan.downcast_ref::<HashJoinExec>() {
        let (left, right) = through_inner_join(join, keys);
        let children = match (left, right) {
            (_, Some(k)) => Some(vec![
                Arc::clone(join.left()),
                sink_filter(join.right(), &k, source)?,
            ]),
            (Some(k), None) => Some(vec![
                sink_filter(join.left(), &k, source)?,
                Arc::clone(join.right()),
            ]),
            (None, None) => None,
        };
        if let Some(children) = children {
            return Arc::clone(plan).replace_children(
                children,
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            );
        }
    }
    Ok(Arc::new(KeyFilterExec::new(
        Arc::clone(plan),
        source,
        keys.clone(),
    )))
}
