use super::*;

fn units(sizes: &[(&str, u64)]) -> ScanUnits {
    let mut s = ScanUnits::default();
    for (i, (p, b)) in sizes.iter().enumerate() {
        s.units.push(RowGroupUnit {
            path: p.to_string(),
            file_size: 1000,
            last_modified_ns: 0,
            row_group_count: 10,
            row_group: i,
            bytes: *b,
            rows: 10,
            partition_values: vec![],
            deleted: None,
            chunk_bytes: 0,
        });
    }
    s
}

fn count(tasks: &[Vec<ScanAssignment>]) -> Vec<usize> {
    tasks
        .iter()
        .map(|t| {
            t.iter()
                .flat_map(|a| &a.files)
                .map(|f| f.row_groups.len())
                .sum()
        })
        .collect()
}

#[test]
fn sized_by_bytes_never_splitting_a_row_group() {
    let s = units(&[
        ("a", 10),
        ("a", 10),
        ("a", 10),
        ("b", 10),
        ("b", 10),
        ("b", 10),
    ]);
    let t = assign_tasks(std::slice::from_ref(&s), 20, Spread::at_least(1), false);
    assert_eq!(count(&t), vec![2, 2, 2]);
    assert_eq!(
        t[1][0].files.len(),
        2,
        "a task spanning two files lists both"
    );
}

#[test]
fn min_tasks_and_single() {
    let s = units(&[("a", 100), ("a", 100), ("a", 100)]);
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread::at_least(2),
            false
        ))
        .len(),
        2
    );
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread::at_least(8),
            false
        )),
        vec![1, 1, 1]
    );
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1,
            Spread::at_least(8),
            true
        )),
        vec![3]
    );
}

#[test]
fn min_tasks_only_while_each_task_reads_min_task_bytes() {
    // 12 row groups of 100 bytes, a target far above them all.
    let s = units(&[("a", 100); 12]);
    let deal = |min_tasks, min_task_bytes| {
        count(&assign_tasks(
            std::slice::from_ref(&s),
            1 << 30,
            Spread {
                min_tasks,
                min_task_bytes,
            },
            false,
        ))
    };
    // 1,200 bytes at 300 a task: 4 of the 8 asked for.
    assert_eq!(deal(8, 300), vec![3, 3, 3, 3]);
    // Enough bytes for all 8 (each reads 150).
    assert_eq!(deal(8, 150).len(), 8);
    // 0 = min_tasks whatever the bytes, up to a task per row group.
    assert_eq!(deal(64, 0).len(), 12);
    // Fewer bytes than one task's minimum: one task.
    assert_eq!(deal(8, 5_000), vec![12]);
    // The target still splits what the minimum would not.
    assert_eq!(
        count(&assign_tasks(
            std::slice::from_ref(&s),
            400,
            Spread {
                min_tasks: 2,
                min_task_bytes: 1_000
            },
            false
        )),
        vec![4, 4, 4]
    );
    // The clustered split follows the same rule.
    let order: Vec<(usize, bool)> = (0..12).map(|i| (i, true)).collect();
    assert_eq!(
        count(&assign_in_order(
            &s,
            &order,
            1 << 30,
            Spread {
                min_tasks: 8,
                min_task_bytes: 300
            }
        )),
        vec![3, 3, 3, 3]
    );
}

#[test]
fn nothing_to_read_is_one_empty_task() {
    let t = assign_tasks(
        &[ScanUnits::default(), ScanUnits::default()],
        10,
        Spread::at_least(4),
        false,
    );
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].len(), 2);
    assert!(t[0].iter().all(|a| a.files.is_empty()));
}

#[test]
fn two_scans_share_tasks() {
    let a = units(&[("a", 10), ("a", 10)]);
    let b = units(&[("b", 10), ("b", 10)]);
    let t = assign_tasks(&[a, b], 20, Spread::at_least(1), false);
    assert_eq!(t.len(), 2);
    assert_eq!(t[0][0].files.len(), 1);
    assert!(t[0][1].files.is_empty());
    assert_eq!(t[1][1].files[0].row_groups, vec![0, 1]);
}

/// Tasks in a clustered order end only where the order allows a cut, take
/// their share of the bytes, and list each file once, its row groups
/// ascending, whatever order the row groups came in.
#[test]
fn tasks_in_a_clustered_order_end_only_at_cuts() {
    let s = units(&[
        ("a", 10),
        ("a", 10),
        ("b", 10),
        ("a", 10),
        ("b", 10),
        ("b", 10),
    ]);
    // Key order: a0 a1 a3 b2 b4 b5; cuts after a1, b2 and the last.
    let order = [
        (0, false),
        (1, true),
        (3, false),
        (2, true),
        (4, false),
        (5, true),
    ];
    let t = assign_in_order(&s, &order, 10, Spread::at_least(1));
    assert_eq!(count(&t), vec![2, 2, 2]);
    let files: Vec<(String, Vec<usize>)> = t[1][0]
        .files
        .iter()
        .map(|f| (f.path.clone(), f.row_groups.clone()))
        .collect();
    assert_eq!(files, vec![("a".into(), vec![3]), ("b".into(), vec![2])]);
    // Without cuts, one task whatever the target.
    let uncut: Vec<(usize, bool)> = (0..6).map(|i| (i, i == 5)).collect();
    let t = assign_in_order(&s, &uncut, 10, Spread::at_least(4));
    assert_eq!(count(&t), vec![6]);
    assert_eq!(t[0][0].files[0].row_groups, vec![0, 1, 3]);
    // A big target: one task; min_tasks splits at the cuts it can.
    assert_eq!(
        count(&assign_in_order(&s, &order, 1 << 30, Spread::at_least(1))),
        vec![6]
    );
    assert_eq!(
        count(&assign_in_order(&s, &order, 1 << 30, Spread::at_least(2))),
        vec![4, 2]
    );
}
