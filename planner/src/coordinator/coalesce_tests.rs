use super::*;
use squall_core::task::PartitionRange;

fn sizing(target: u64, min: usize, max: usize) -> Sizing {
    Sizing {
        target_bytes: target,
        min_tasks: min,
        min_task_bytes: 0,
        max_tasks: max,
    }
}

fn covers(ranges: &[Range<usize>], n: usize) {
    assert_eq!(ranges.first().map(|r| r.start), Some(0));
    assert_eq!(ranges.last().map(|r| r.end), Some(n));
    for w in ranges.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{ranges:?}");
    }
}

#[test]
fn small_shuffle_is_one_task_per_min() {
    let sizes = vec![10u64; 1000];
    let r = coalesce(&sizes, sizing(64 << 20, 1, 0));
    assert_eq!(r, vec![0..1000]);
    let r = coalesce(&sizes, sizing(64 << 20, 2, 0));
    assert_eq!(r, vec![0..500, 500..1000]);
}

#[test]
fn tasks_follow_bytes_and_caps() {
    let sizes = vec![1u64 << 20; 1000]; // 1000 MiB over 1000 partitions
    let r = coalesce(&sizes, sizing(100 << 20, 1, 0));
    assert_eq!(r.len(), 10);
    covers(&r, 1000);
    assert!(r.iter().all(|g| g.len() == 100));
    // capped
    assert_eq!(coalesce(&sizes, sizing(100 << 20, 1, 4)).len(), 4);
    // never more tasks than partitions
    assert_eq!(coalesce(&sizes[..3], sizing(1, 1, 0)).len(), 3);
}

#[test]
fn min_tasks_hold_while_tasks_read_min_task_bytes() {
    let spread = |min_tasks, min_task_bytes| Sizing {
        target_bytes: 64 << 20,
        min_tasks,
        min_task_bytes,
        max_tasks: 0,
    };
    // 1 GiB: 16 tasks by the target, 64 when each still reads 16 MiB.
    assert_eq!(spread(64, 16 << 20).tasks(1 << 30, 1000), 64);
    // 256 MiB: 16 tasks of 16 MiB, not 64 of 4 MiB.
    assert_eq!(spread(64, 16 << 20).tasks(256 << 20, 1000), 16);
    // A tiny stage stays one task; without the bytes, min_tasks holds.
    assert_eq!(spread(64, 16 << 20).tasks(10_000, 1000), 1);
    assert_eq!(spread(64, 0).tasks(10_000, 1000), 64);
    // The target still wins for big stages, and partitions cap it all.
    assert_eq!(spread(64, 16 << 20).tasks(64 << 30, 1000), 1000);
    assert_eq!(spread(64, 16 << 20).tasks(1 << 30, 20), 20);
    let r = coalesce(&vec![1u64 << 20; 1000], spread(64, 16 << 20));
    assert_eq!(r.len(), 63, "1000 MiB in ranges of at least 16 MiB: {r:?}");
    covers(&r, 1000);
}

#[test]
fn balanced_around_a_big_partition() {
    // one partition holds most bytes: it gets a task of its own, the rest split evenly
    let mut sizes = vec![1u64; 9];
    sizes.insert(4, 100);
    let r = coalesce(&sizes, sizing(30, 1, 0));
    covers(&r, 10);
    assert!(r.contains(&(4..5)), "{r:?}");
}

#[test]
fn empty_partitions_join_a_neighbour_and_all_empty_is_one_task() {
    let sizes = vec![0, 5, 0, 0, 5, 0];
    let r = coalesce(&sizes, sizing(5, 2, 0));
    assert_eq!(r, vec![0..4, 4..6]);
    assert_eq!(coalesce(&[0, 0, 0], sizing(5, 2, 0)), vec![0..3]);
}

#[test]
fn no_target_keeps_one_task_per_partition() {
    assert_eq!(
        coalesce(&[3, 0, 4], sizing(0, 1, 0)),
        vec![0..1, 1..2, 2..3]
    );
}

fn output(lens: &[u64]) -> MapOutput {
    let mut offset = 0;
    let partitions = lens
        .iter()
        .map(|&len| {
            let r = PartitionRange {
                offset,
                len,
                rows: len * 2,
            };
            offset += len;
            r
        })
        .collect();
    MapOutput {
        key: "q/s1/t0/a0".into(),
        partitions,
        keys: None,
    }
}

#[test]
fn span_is_one_range_over_adjacent_partitions() {
    let out = output(&[4, 0, 6, 3, 0]);
    let r = span(&out, &(1..4)).unwrap();
    assert_eq!((r.offset, r.len, r.rows), (4, 9, 18));
    assert!(span(&out, &(4..5)).is_none());
    assert!(span(&out, &(9..12)).is_none());
    let mut sizes = vec![];
    add_sizes(&mut sizes, &[&out, &out], 5);
    assert_eq!(sizes, vec![8, 0, 12, 6, 0]);
}
