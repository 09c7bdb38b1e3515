//! Tests of the plan checks: what a rebuilt node lost, and what a decoded
//! stage plan differs in.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_expr::{ConstExpr, LexOrdering, PhysicalSortExpr};
use datafusion::physical_plan::ExecutionPlanProperties;
use datafusion::physical_plan::Partitioning;
use datafusion::physical_plan::PlanProperties;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, PhysicalGroupBy};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::prelude::SessionContext;
use squall_core::codec::decode_plan;
use squall_core::exec::{BoundaryProperties, ReadMode, ShuffleReadExec, ShuffleWriteExec};

use super::*;
use crate::stages::{Stage, TaskLayout};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Int64, true),
        Field::new("c", DataType::Utf8, true),
    ]))
}

/// `a = b`, `c` the constant 'FRANCE' everywhere, sorted by `a`.
fn rich() -> BoundaryProperties {
    let s = schema();
    BoundaryProperties {
        orderings: vec![
            LexOrdering::new([PhysicalSortExpr::new_default(col("a", &s).unwrap())]).unwrap(),
        ],
        classes: vec![vec![col("a", &s).unwrap(), col("b", &s).unwrap()]],
        constants: vec![ConstExpr::new(
            col("c", &s).unwrap(),
            AcrossPartitions::Uniform(Some(ScalarValue::from("FRANCE"))),
        )],
        constraints: Default::default(),
    }
}

fn props(carried: &BoundaryProperties, partitioning: Partitioning) -> PlanProperties {
    PlanProperties::new(
        carried.equivalence_properties(&schema()).unwrap(),
        partitioning,
        EmissionType::Incremental,
        Boundedness::Bounded,
    )
}

fn hash(column: &str) -> Partitioning {
    Partitioning::Hash(vec![col(column, &schema()).unwrap()], 2)
}

#[test]
fn a_node_that_lost_properties_says_which() {
    let old = props(&rich(), hash("a"));
    let new = props(&BoundaryProperties::default(), hash("a"));
    let lost = lost_properties(&old, &new).unwrap().join("; ");
    for what in [
        "ordering [a@0 ASC]",
        "equivalence a@0 = b@1",
        "constant c@2",
    ] {
        assert!(lost.contains(what), "{what} not in: {lost}");
    }
    // A constant of one partition only is less than one across partitions.
    let mut per_partition = rich();
    per_partition.constants[0].across_partitions = AcrossPartitions::Heterogeneous;
    let lost = lost_properties(&old, &props(&per_partition, hash("a"))).unwrap();
    assert_eq!(lost, vec!["constant c@2 across partitions".to_string()]);
}

#[test]
fn the_same_or_more_is_not_a_loss() {
    let old = props(&rich(), hash("a"));
    assert!(
        lost_properties(&old, &props(&rich(), hash("b")))
            .unwrap()
            .is_empty()
    );
    let plain = props(&BoundaryProperties::default(), hash("a"));
    assert!(lost_properties(&plain, &old).unwrap().is_empty());
}

#[test]
fn a_parent_whose_input_no_longer_serves_it_says_how() {
    let s = schema();
    let by_a = LexOrdering::new([PhysicalSortExpr::new_default(col("a", &s).unwrap())]).unwrap();
    // A merge of sorted partitions over a read that keeps the order, and one that does not.
    let merge = |carried| -> Arc<dyn ExecutionPlan> {
        Arc::new(SortPreservingMergeExec::new(
            by_a.clone(),
            read(carried, ReadMode::Gather),
        ))
    };
    assert!(unmet_requirements(&merge(rich())).unwrap().is_empty());
    let unmet = unmet_requirements(&merge(BoundaryProperties::default())).unwrap();
    assert_eq!(unmet.len(), 1, "{unmet:?}");
    assert!(
        unmet[0].contains("input 0 (ShuffleReadExec) is not ordered by [a@0 ASC]"),
        "{unmet:?}"
    );
    // A final aggregate needs its input hashed on its keys.
    let group = PhysicalGroupBy::new_single(vec![(col("c", &s).unwrap(), "c".to_string())]);
    let over = |partitioning: Partitioning| -> Arc<dyn ExecutionPlan> {
        let input = Arc::new(
            ShuffleReadExec::try_new(1, ReadMode::Hash, schema(), partitioning, rich()).unwrap(),
        );
        Arc::new(
            AggregateExec::try_new(
                AggregateMode::FinalPartitioned,
                group.clone(),
                vec![],
                vec![],
                input,
                schema(),
            )
            .unwrap(),
        )
    };
    assert!(unmet_requirements(&over(hash("c"))).unwrap().is_empty());
    let unmet = unmet_requirements(&over(hash("a"))).unwrap();
    assert!(
        unmet[0].contains("is partitioned Hash([a@0], 2)"),
        "{unmet:?}"
    );
}

fn read(carried: BoundaryProperties, mode: ReadMode) -> Arc<dyn ExecutionPlan> {
    Arc::new(ShuffleReadExec::try_new(1, mode, schema(), hash("a"), carried).unwrap())
}

/// A stage writing a sort (by `b`, `c`) of what it reads.
fn stage_over(read: Arc<dyn ExecutionPlan>) -> Stage {
    let s = schema();
    let sort = LexOrdering::new([
        PhysicalSortExpr::new_default(col("b", &s).unwrap()),
        PhysicalSortExpr::new_default(col("c", &s).unwrap()),
    ])
    .unwrap();
    let sorted = Arc::new(SortExec::new(sort, read).with_preserve_partitioning(true));
    Stage {
        id: 2,
        plan: Arc::new(ShuffleWriteExec::new(sorted, None)),
        inputs: vec![1],
        layout: TaskLayout::Hash { partitions: 2 },
        est_rows: None,
        filter_inputs: vec![],
        clustered_on: None,
    }
}

#[test]
fn reads_keep_every_property_through_the_codec() {
    let ctx = SessionContext::new().task_ctx();
    for mode in [ReadMode::Hash, ReadMode::Gather, ReadMode::Broadcast] {
        let staged = StagedPlan {
            stages: vec![stage_over(read(rich(), mode))],
        };
        let plans = encode_checked(&staged, &ctx).unwrap();
        let decoded = decode_plan(&plans[0], &ctx).unwrap();
        let leaf = &decoded.children()[0].children()[0];
        let r = leaf.downcast_ref::<ShuffleReadExec>().unwrap();
        assert_eq!(r.carried().to_string(), rich().to_string(), "{mode:?}");
        assert_eq!(
            leaf.equivalence_properties().to_string(),
            read(rich(), mode).equivalence_properties().to_string()
        );
    }
}

#[test]
fn a_decoded_plan_that_differs_is_named_by_node() {
    let planned = stage_over(read(rich(), ReadMode::Hash)).plan;
    let decoded = stage_over(read(BoundaryProperties::default(), ReadMode::Hash)).plan;
    let diff = first_difference(&planned, &decoded, &mut Vec::new()).unwrap();
    assert!(
        diff.contains("at ShuffleWriteExec > SortExec:") && diff.contains("in the worker"),
        "{diff}"
    );
    assert!(first_difference(&planned, &planned, &mut Vec::new()).is_none());
}
