//! Tests of the two-level exchange's request model (the grid choice) and of
//! placing combine stages in a staged plan.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::physical_expr::expressions::col;
use datafusion::physical_plan::Partitioning;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::prelude::SessionContext;
use squall_core::exec::BoundaryProperties;

use super::*;
use crate::plan_check::encode_checked;

fn inputs(m: usize, partitions: usize, n: usize, k: usize) -> GridInputs {
    GridInputs {
        map_objects: m,
        partitions,
        reduce_tasks: n,
        min_cells: k,
    }
}

/// The cheapest grid with at least `k` cells, by trying every one.
fn brute_force(x: GridInputs) -> f64 {
    let mut best = f64::INFINITY;
    for a in 1..=x.map_objects {
        for b in 1..=x.partitions {
            if a * b >= x.min_cells {
                let shape = GridShape {
                    map_groups: a,
                    partition_ranges: b,
                };
                best = best.min(two_level_requests(x.map_objects, x.reduce_tasks, shape));
            }
        }
    }
    best
}

#[test]
fn a_combine_task_costs_its_put_invocation_and_message_in_gets() {
    // $0.005 / 1,000 PUT + $0.20 / 1M invocations + $0.40 / 1M SQS, over $0.0004 / 1,000 GETs.
    assert!((task_weight() - 14.0).abs() < 1e-9, "{}", task_weight());
}

#[test]
fn at_sf1000_scale_a_grid_saves_nine_tenths() {
    // 1,000 map tasks, 1,000 reduce tasks, 100 GB over 64 MiB combine tasks.
    let sizing = Sizing {
        target_bytes: 64 << 20,
        min_tasks: 1,
        min_task_bytes: 0,
        max_tasks: 0,
    };
    let k = min_cells(100_000_000_000, sizing);
    assert_eq!(k, 1491);
    let c = choose_grid(inputs(1000, 1000, 1000, k));
    assert!(c.shape.cells() >= k, "{c:?}");
    // Near sqrt(K) = 39 each way.
    assert!((30..=50).contains(&c.shape.map_groups), "{c:?}");
    assert!((30..=50).contains(&c.shape.partition_ranges), "{c:?}");
    assert_eq!(c.direct, 1_000_000.0);
    assert!(c.two_level < 101_000.0, "{c:?}");
    assert!(c.pays());
    assert_eq!(c.two_level, brute_force(inputs(1000, 1000, 1000, k)));
}

#[test]
fn the_choice_is_the_cheapest_grid_with_enough_cells() {
    for m in [1, 2, 7, 30, 100] {
        for partitions in [1, 3, 16, 64] {
            for n in [1, 2, 8, 40] {
                for k in [1, 2, 5, 17, 90] {
                    let x = inputs(m, partitions, n, k);
                    let c = choose_grid(x);
                    if m * partitions >= k {
                        assert!(c.shape.cells() >= k, "{x:?} -> {c:?}");
                        assert_eq!(c.two_level, brute_force(x), "{x:?} -> {c:?}");
                    } else {
                        // Unreachable: the biggest grid there is.
                        assert_eq!(c.shape.cells(), m * partitions, "{x:?} -> {c:?}");
                    }
                    assert!(c.shape.map_groups <= m && c.shape.partition_ranges <= partitions);
                }
            }
        }
    }
}

#[test]
fn small_exchanges_take_one_cell_and_one_reader_never_pays() {
    // 100 map objects read by 8 tasks: one combine task, 100 + 8 GETs + its PUT.
    let c = choose_grid(inputs(100, 64, 8, 1));
    assert_eq!(
        c.shape,
        GridShape {
            map_groups: 1,
            partition_ranges: 1
        }
    );
    assert_eq!(c.two_level, 100.0 + 8.0 + 14.0);
    assert!(c.pays());
    // One reduce task already makes one GET per map object.
    assert!(!choose_grid(inputs(100, 64, 1, 1)).pays());
    // Two map objects: nothing to combine.
    assert!(!choose_grid(inputs(2, 64, 40, 1)).pays());
}

#[test]
fn cells_follow_bytes_and_the_minimum_task_count() {
    let sizing = |target, min| Sizing {
        target_bytes: target,
        min_tasks: min,
        min_task_bytes: 0,
        max_tasks: 0,
    };
    assert_eq!(min_cells(1000, sizing(100, 1)), 10);
    // With min_task_bytes the minimum holds only while cells move that much.
    let spread = Sizing {
        target_bytes: 64 << 20,
        min_tasks: 64,
        min_task_bytes: 16 << 20,
        max_tasks: 0,
    };
    assert_eq!(min_cells(100 << 20, spread), 7);
    assert_eq!(min_cells(10 << 30, spread), 160);
    assert_eq!(min_cells(1001, sizing(100, 1)), 11);
    assert_eq!(min_cells(1000, sizing(100, 20)), 20);
    assert_eq!(min_cells(1000, sizing(0, 3)), 3);
    assert_eq!(min_cells(0, sizing(100, 0)), 1);
}

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]))
}

fn hash(n: usize) -> Partitioning {
    Partitioning::Hash(vec![col("k", &schema()).unwrap()], n)
}

/// s1 scans and hash-writes 8 partitions (with a published key set); s2
/// hash-reads them.
fn two_stages() -> StagedPlan {
    let scan: Arc<dyn ExecutionPlan> = Arc::new(EmptyExec::new(schema()));
    let writer = ShuffleWriteExec::new(scan, Some(hash(8)))
        .with_published_keys(Some(vec![col("k", &schema()).unwrap()]));
    let read: Arc<dyn ExecutionPlan> = Arc::new(
        ShuffleReadExec::try_new(
            1,
            ReadMode::Hash,
            schema(),
            hash(8),
            BoundaryProperties::default(),
        )
        .unwrap(),
    );
    StagedPlan {
        stages: vec![
            Stage {
                id: 1,
                plan: Arc::new(writer),
                inputs: vec![],
                layout: TaskLayout::Scan,
                est_rows: Some(1_000_000),
                filter_inputs: vec![],
                clustered_on: None,
            },
            Stage {
                id: 2,
                plan: Arc::new(ShuffleWriteExec::new(read, None)),
                inputs: vec![1],
                layout: TaskLayout::Hash { partitions: 8 },
                est_rows: None,
                filter_inputs: vec![],
                clustered_on: None,
            },
        ],
    }
}

fn config(min_requests: u64) -> SquallConfig {
    let mut c = SquallConfig::default();
    c.shuffle.two_level_min_requests = min_requests;
    c.shuffle.min_tasks = 1;
    // 1,000,000 rows x 32 bytes = 32 MB: 4 reduce tasks of 8 MB.
    c.shuffle.target_task_bytes = 8_000_000;
    c
}

#[test]
fn a_big_hash_read_gets_a_combine_stage_between_its_two_sides() {
    let mut staged = two_stages();
    let placed = place_combine_stages(&mut staged, &[100, 0], &config(400)).unwrap();
    assert_eq!(
        placed,
        vec![CombinePlacement {
            combine: 3,
            index: 1,
            source: 1,
            reader: 2
        }]
    );
    let ids: Vec<u32> = staged.stages.iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![1, 3, 2], "upstream stages first");
    let combine = &staged.stages[1];
    assert_eq!(
        combine.layout,
        TaskLayout::Combine {
            source: 1,
            partitions: 8,
            map_tasks: 100,
            reduce_tasks: 4
        }
    );
    assert_eq!(combine.inputs, vec![1]);
    // It rewrites with the map stage's partitioning, and publishes nothing:
    // the key filter stays the map stage's.
    let writer = combine.plan.downcast_ref::<ShuffleWriteExec>().unwrap();
    assert_eq!(writer.partitioning(), Some(&hash(8)));
    assert!(!combine.publishes_filter() && staged.stages[0].publishes_filter());
    let reads: Vec<(u32, ReadMode)> = leaves(&combine.plan)
        .iter()
        .filter_map(|l| match l {
            Leaf::ShuffleRead(r) => Some((r.stage(), r.mode())),
            _ => None,
        })
        .collect();
    assert_eq!(reads, vec![(1, ReadMode::Hash)]);
    // The reader reads the combine stage instead, with the same partitioning.
    let reader = &staged.stages[2];
    assert_eq!(reader.inputs, vec![3]);
    let Leaf::ShuffleRead(r) = &leaves(&reader.plan)[0] else {
        panic!("the reader's leaf is a read");
    };
    assert_eq!((r.stage(), r.planned_partitioning()), (3, &hash(8)));
    // The stage plans still round-trip through the task codec.
    encode_checked(&staged, &SessionContext::new().task_ctx()).unwrap();
}

#[test]
fn small_hash_reads_and_zero_get_none() {
    for (min_requests, scan_tasks) in [(401, 100), (0, 100), (1, 1)] {
        let mut staged = two_stages();
        let placed =
            place_combine_stages(&mut staged, &[scan_tasks, 0], &config(min_requests)).unwrap();
        assert!(placed.is_empty(), "{min_requests} {scan_tasks}");
        assert_eq!(staged.stages.len(), 2);
    }
}

#[test]
fn explain_estimates_come_from_the_layout() {
    let mut staged = two_stages();
    place_combine_stages(&mut staged, &[100, 0], &config(1)).unwrap();
    let sizing = Sizing::from_config(&config(1));
    let bytes = read_bytes(&staged, &staged.stages[1]);
    assert_eq!(bytes, Some(32_000_000));
    let c = planned_choice(&staged.stages[1].layout, bytes, sizing).unwrap();
    // 100 x 4 direct; 4 cells at least (32 MB over 8 MB).
    assert_eq!(c.direct, 400.0);
    assert!(c.shape.cells() >= 4 && c.pays(), "{c:?}");
    assert!(planned_choice(&staged.stages[0].layout, bytes, sizing).is_none());
}

/// s1 and s2 scan and hash-write 8 partitions each; s3 hash-reads both.
fn two_inputs() -> StagedPlan {
    let scan = |_| -> Arc<dyn ExecutionPlan> { Arc::new(EmptyExec::new(schema())) };
    let read = |stage: u32| -> Arc<dyn ExecutionPlan> {
        Arc::new(
            ShuffleReadExec::try_new(
                stage,
                ReadMode::Hash,
                schema(),
                hash(8),
                BoundaryProperties::default(),
            )
            .unwrap(),
        )
    };
    let map = |id: u32| Stage {
        id,
        plan: Arc::new(ShuffleWriteExec::new(scan(id), Some(hash(8)))),
        inputs: vec![],
        layout: TaskLayout::Scan,
        est_rows: Some(1_000_000),
        filter_inputs: vec![],
        clustered_on: None,
    };
    let both =
        datafusion::physical_plan::union::UnionExec::try_new(vec![read(1), read(2)]).unwrap();
    StagedPlan {
        stages: vec![
            map(1),
            map(2),
            Stage {
                id: 3,
                plan: Arc::new(ShuffleWriteExec::new(both, None)),
                inputs: vec![1, 2],
                layout: TaskLayout::Hash { partitions: 8 },
                est_rows: None,
                filter_inputs: vec![],
                clustered_on: None,
            },
        ],
    }
}

#[test]
fn the_threshold_counts_a_stages_gets_over_all_its_inputs() {
    // 30 map tasks each, 8 reduce tasks (64 MB at 8 MB): 240 GETs per
    // input, 480 for the stage. At 400 neither input alone reaches it, but
    // every reduce task makes all 60 GETs: both get a combine stage.
    let mut staged = two_inputs();
    let placed = place_combine_stages(&mut staged, &[30, 30, 0], &config(400)).unwrap();
    let sources: Vec<(u32, u32)> = placed.iter().map(|p| (p.source, p.reader)).collect();
    assert_eq!(sources, vec![(1, 3), (2, 3)]);
    let reader = staged.stage(3).unwrap();
    assert!(
        !reader.inputs.contains(&1) && !reader.inputs.contains(&2),
        "{:?}",
        reader.inputs
    );
    encode_checked(&staged, &SessionContext::new().task_ctx()).unwrap();
    // Below the stage's total, none.
    let mut staged = two_inputs();
    let placed = place_combine_stages(&mut staged, &[30, 30, 0], &config(481)).unwrap();
    assert!(placed.is_empty());
}
