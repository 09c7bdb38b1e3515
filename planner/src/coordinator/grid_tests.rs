//! Tests of a combine stage's grid: groups and columns cover the map
//! outputs and partitions, each task's binding is restricted to its cell,
//! and every non-empty (map object, partition) is read by exactly one task.

use super::*;
use squall_core::task::PartitionRange;

/// A map output whose partitions hold `sizes` bytes (10 bytes a row).
fn output(key: &str, sizes: &[u64]) -> MapOutput {
    let mut offset = 0;
    let partitions = sizes
        .iter()
        .map(|&len| {
            let r = PartitionRange {
                offset,
                len,
                rows: len / 10,
            };
            offset += len;
            r
        })
        .collect();
    MapOutput {
        key: key.to_string(),
        partitions,
        keys: None,
    }
}

fn sizing(target: u64, min: usize) -> Sizing {
    Sizing {
        target_bytes: target,
        min_tasks: min,
        min_task_bytes: 0,
        max_tasks: 0,
    }
}

fn contiguous(ranges: &[Range<usize>], n: usize) {
    assert_eq!(ranges.first().map(|r| r.start), Some(0), "{ranges:?}");
    assert_eq!(ranges.last().map(|r| r.end), Some(n), "{ranges:?}");
    for w in ranges.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{ranges:?}");
    }
}

/// Every non-empty (object, partition) byte is read by exactly one task,
/// and a task reads only objects of its group and partitions of its column.
fn reads_each_byte_once(grid: &Grid, outputs: &[&MapOutput]) {
    let mut read = vec![vec![0u32; outputs[0].partitions.len()]; outputs.len()];
    for t in 0..grid.tasks() {
        let (g, h) = grid.cells[t];
        for r in grid.cell_ranges(outputs, t) {
            let o = outputs.iter().position(|o| o.key == r.key).unwrap();
            assert!(
                grid.groups[g].contains(&o),
                "task {t} reads {} outside its group",
                r.key
            );
            for (p, part) in outputs[o].partitions.iter().enumerate() {
                let inside = part.offset >= r.offset && part.offset + part.len <= r.offset + r.len;
                if inside && part.len > 0 {
                    assert!(grid.columns[h].contains(&p), "task {t} reads partition {p}");
                    read[o][p] += 1;
                }
            }
            let rows: u64 = outputs[o].partitions[grid.columns[h].clone()]
                .iter()
                .map(|p| p.rows)
                .sum();
            assert_eq!(r.rows, rows, "rows of the column's partitions");
        }
    }
    for (o, out) in outputs.iter().enumerate() {
        for (p, part) in out.partitions.iter().enumerate() {
            assert_eq!(
                read[o][p],
                u32::from(part.len > 0),
                "object {o}, partition {p}"
            );
        }
    }
}

#[test]
fn a_grid_covers_every_object_and_partition_once() {
    let owned: Vec<MapOutput> = (0..100)
        .map(|i| output(&format!("s1/t{i}"), &[100 + i; 32]))
        .collect();
    let outputs: Vec<&MapOutput> = owned.iter().collect();
    // 100 x 32 partitions of 100-199 bytes: 478 KB; 16 KB tasks -> 30
    // cells at least and 30 reduce tasks expected: a 10 x 3 grid.
    let grid = Grid::form(0, &outputs, 32, sizing(16_000, 1));
    assert!(!grid.forwards, "{grid:?}");
    assert_eq!(grid.map_objects, 100);
    contiguous(&grid.groups, 100);
    contiguous(&grid.columns, 32);
    assert_eq!(grid.groups.len(), grid.choice.shape.map_groups);
    assert_eq!(grid.columns.len(), grid.choice.shape.partition_ranges);
    assert!(grid.groups.len() > 1 && grid.columns.len() > 1, "{grid:?}");
    assert_eq!(grid.tasks(), grid.groups.len() * grid.columns.len());
    assert!(grid.tasks() >= 10);
    reads_each_byte_once(&grid, &outputs);
    // One GET per object of the group: M x b in all.
    let gets: usize = (0..grid.tasks())
        .map(|t| grid.cell_ranges(&outputs, t).len())
        .sum();
    assert_eq!(gets, 100 * grid.columns.len());
    assert!(grid.choice.two_level * 2.0 <= grid.choice.direct);
    let p = grid.profile(7);
    assert_eq!((p.source, p.map_objects, p.forwarded), (7, 100, false));
    assert_eq!(
        (p.map_groups, p.partition_ranges),
        (grid.groups.len(), grid.columns.len())
    );
}

#[test]
fn cells_without_rows_get_no_task() {
    // The first 50 objects hold rows only in partitions 0..16, the others
    // only in 16..32 (4 KB each, 400 KB in all; 20 KB tasks -> 20 cells and
    // 20 reduce tasks): a 10 x 2 grid whose off-diagonal cells are empty.
    let mut owned = Vec::new();
    for i in 0..100 {
        let sizes: Vec<u64> = (0..32)
            .map(|p| if (p < 16) == (i < 50) { 250 } else { 0 })
            .collect();
        owned.push(output(&format!("t{i}"), &sizes));
    }
    let outputs: Vec<&MapOutput> = owned.iter().collect();
    let grid = Grid::form(0, &outputs, 32, sizing(20_000, 1));
    assert!(!grid.forwards, "{grid:?}");
    assert_eq!(grid.groups.len(), 10, "{grid:?}");
    assert_eq!(grid.columns, vec![0..16, 16..32], "{grid:?}");
    let cells: Vec<(usize, usize)> = (0..5)
        .map(|g| (g, 0))
        .chain((5..10).map(|g| (g, 1)))
        .collect();
    assert_eq!(grid.cells, cells);
    reads_each_byte_once(&grid, &outputs);
}

#[test]
fn empty_objects_and_partitions_are_skipped() {
    let mut owned: Vec<MapOutput> = (0..100)
        .map(|i| output(&format!("t{i}"), &[0, 500, 0, 500, 500, 0]))
        .collect();
    owned[3] = output("t3", &[0; 6]);
    owned[17] = output("t17", &[0; 6]);
    let outputs: Vec<&MapOutput> = owned.iter().collect();
    let grid = Grid::form(0, &outputs, 6, sizing(40_000, 2));
    assert!(!grid.forwards, "{grid:?}");
    assert_eq!(grid.map_objects, 98);
    reads_each_byte_once(&grid, &outputs);
    for t in 0..grid.tasks() {
        assert!(
            grid.cell_ranges(&outputs, t)
                .iter()
                .all(|r| r.key != "t3" && r.key != "t17" && r.len > 0)
        );
    }
}

#[test]
fn a_grid_that_does_not_halve_the_requests_forwards() {
    let owned: Vec<MapOutput> = (0..10)
        .map(|i| output(&format!("t{i}"), &[10; 8]))
        .collect();
    let outputs: Vec<&MapOutput> = owned.iter().collect();
    // Everything fits one reduce task: 10 GETs directly, nothing to save.
    let grid = Grid::form(3, &outputs, 8, sizing(64 << 20, 1));
    assert!(grid.forwards && grid.tasks() == 0, "{grid:?}");
    assert_eq!(grid.source, 3);
    assert!(grid.cell_ranges(&outputs, 0).is_empty());
    let p = grid.profile(1);
    assert!(p.forwarded && p.map_groups >= 1 && p.direct_requests == 10);
}

#[test]
fn a_map_stage_without_rows_forwards() {
    let owned: Vec<MapOutput> = (0..10).map(|i| output(&format!("t{i}"), &[0; 8])).collect();
    let outputs: Vec<&MapOutput> = owned.iter().collect();
    let grid = Grid::form(0, &outputs, 8, sizing(1, 4));
    assert!(grid.forwards, "{grid:?}");
}
