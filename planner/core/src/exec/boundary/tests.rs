//! Tests of what each read mode keeps of its input's properties.

use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::expressions::col;
use datafusion::physical_expr::{AcrossPartitions, PhysicalSortExpr};

use super::*;
use crate::exec::ReadMode;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Int64, true),
        Field::new("c", DataType::Int64, true),
        Field::new("d", DataType::Int64, true),
    ]))
}

/// Sorted by `a`; `a = b`; `c` is 7 everywhere; `d` is constant in each partition.
fn input() -> EquivalenceProperties {
    let s = schema();
    let mut eq = EquivalenceProperties::new(Arc::clone(&s));
    eq.add_equal_conditions(col("a", &s).unwrap(), col("b", &s).unwrap())
        .unwrap();
    eq.add_constants([
        ConstExpr::new(
            col("c", &s).unwrap(),
            AcrossPartitions::Uniform(Some(ScalarValue::Int64(Some(7)))),
        ),
        ConstExpr::new(col("d", &s).unwrap(), AcrossPartitions::Heterogeneous),
    ])
    .unwrap();
    eq.add_ordering([PhysicalSortExpr::new_default(col("a", &s).unwrap())]);
    eq
}

fn rebuilt(mode: ReadMode, input_partitions: usize) -> EquivalenceProperties {
    BoundaryProperties::capture(&input(), mode.keeps(input_partitions))
        .equivalence_properties(&schema())
        .unwrap()
}

#[test]
fn every_mode_keeps_equivalences_and_uniform_constants() {
    let s = schema();
    for mode in [ReadMode::Hash, ReadMode::Gather, ReadMode::Broadcast] {
        let eq = rebuilt(mode, 3);
        let (a, b, c, d) = (
            col("a", &s).unwrap(),
            col("b", &s).unwrap(),
            col("c", &s).unwrap(),
            col("d", &s).unwrap(),
        );
        assert!(eq.eq_group().exprs_equal(&a, &b), "{mode:?}: {eq}");
        assert_eq!(
            eq.is_expr_constant(&c),
            Some(AcrossPartitions::Uniform(Some(ScalarValue::Int64(Some(7))))),
            "{mode:?}: {eq}"
        );
        // Several input partitions: a per-partition constant is gone.
        assert_eq!(eq.is_expr_constant(&d), None, "{mode:?}: {eq}");
        // One input partition: it is a constant of every row.
        assert!(rebuilt(mode, 1).is_expr_constant(&d).is_some(), "{mode:?}");
    }
}

#[test]
fn only_a_gather_keeps_the_order() {
    let by_a = [PhysicalSortExpr::new_default(col("a", &schema()).unwrap())];
    assert!(
        rebuilt(ReadMode::Gather, 3)
            .ordering_satisfy(by_a.clone())
            .unwrap()
    );
    for mode in [ReadMode::Hash, ReadMode::Broadcast] {
        assert!(
            !rebuilt(mode, 3).ordering_satisfy(by_a.clone()).unwrap(),
            "{mode:?}"
        );
    }
}

#[test]
fn the_same_properties_build_the_same_equivalences() {
    let carried = BoundaryProperties::capture(&input(), ReadMode::Gather.keeps(1));
    let once = carried.equivalence_properties(&schema()).unwrap();
    let again = carried.clone().equivalence_properties(&schema()).unwrap();
    assert_eq!(once.to_string(), again.to_string());
    assert!(!carried.is_empty());
    assert!(carried.to_string().contains("a@0 = b@1"), "{carried}");
}
