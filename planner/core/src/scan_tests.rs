//! Tests of binding a task's scans: row groups and byte ranges into file groups.

use super::*;

fn f(path: &str, count: usize, rgs: &[usize]) -> FileRowGroups {
    FileRowGroups {
        path: path.into(),
        size: 100,
        last_modified_ns: 0,
        row_group_count: count,
        row_groups: rgs.to_vec(),
        partition_values: vec![],
        deleted: vec![],
        chunk_bytes: 0,
    }
}

#[test]
fn files_keep_their_listed_modification_time() {
    // With the size, it keys the worker's cache of footers: a file
    // rewritten in place must not be read with its old footer.
    let mut file = f("a", 2, &[0, 1]);
    file.last_modified_ns = 1_700_000_000_123_456_789;
    let groups = file_groups(&[file], 1, &[], row_group_piece).unwrap();
    let meta = &groups[0].files()[0].object_meta;
    assert_eq!(
        meta.last_modified.timestamp_nanos_opt(),
        Some(1_700_000_000_123_456_789)
    );
}

#[test]
fn groups_are_contiguous_and_cover_everything() {
    let files = vec![f("a", 4, &[0, 2, 3]), f("b", 2, &[1])];
    let groups = file_groups(&files, 2, &[], row_group_piece).unwrap();
    assert_eq!(groups.len(), 2);
    let paths: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            g.files()
                .iter()
                .map(|p| p.object_meta.location.to_string())
                .collect()
        })
        .collect();
    assert_eq!(
        paths,
        vec![
            vec!["a".to_string()],
            vec!["a".to_string(), "b".to_string()]
        ]
    );
    let plan = groups[0].files()[0]
        .extensions
        .get::<ParquetAccessPlan>()
        .unwrap();
    assert_eq!(plan.row_group_indexes(), vec![0, 2]);
}

#[test]
fn files_carry_their_partition_values_typed() {
    let mut file = f("t/year=1995/region=EU/a", 1, &[0]);
    file.partition_values = vec![Some("1995".into()), None];
    let groups = file_groups(
        &[file.clone()],
        1,
        &[&DataType::Int32, &DataType::Utf8],
        row_group_piece,
    )
    .unwrap();
    assert_eq!(
        groups[0].files()[0].partition_values,
        vec![ScalarValue::Int32(Some(1995)), ScalarValue::Utf8(None)]
    );
    file.partition_values = vec![Some("x".into()), None];
    let e = file_groups(
        &[file],
        1,
        &[&DataType::Int32, &DataType::Utf8],
        row_group_piece,
    )
    .unwrap_err();
    assert!(e.to_string().contains("partition value \"x\""), "{e}");
}

#[test]
fn empty_assignment_is_one_empty_group() {
    let groups = file_groups(&[], 4, &[], row_group_piece).unwrap();
    assert_eq!(groups.len(), 1);
    assert!(groups[0].files().is_empty());
}

/// A text file of 1,000 bytes in chunks of 300: chunks 0-3.
fn chunked(rgs: &[usize]) -> FileRowGroups {
    let mut file = f("t/a.jsonl", 4, rgs);
    file.size = 1000;
    file.chunk_bytes = 300;
    file
}

fn ranges(groups: &[FileGroup]) -> Vec<Vec<Option<(i64, i64)>>> {
    groups
        .iter()
        .map(|g| {
            g.files()
                .iter()
                .map(|p| p.range.as_ref().map(|r| (r.start, r.end)))
                .collect()
        })
        .collect()
}

#[test]
fn a_text_files_chunks_are_read_as_the_byte_ranges_they_cover() {
    // Two partitions: each reads one range of consecutive chunks; the
    // last chunk ends at the file's end.
    let groups = file_groups(&[chunked(&[1, 2, 3])], 2, &[], byte_range_piece).unwrap();
    assert_eq!(
        ranges(&groups),
        vec![vec![Some((300, 900))], vec![Some((900, 1000))]]
    );
    // All chunks in one partition: the whole file, no range.
    let groups = file_groups(&[chunked(&[0, 1, 2, 3])], 1, &[], byte_range_piece).unwrap();
    assert_eq!(ranges(&groups), vec![vec![None]]);
    // A file read whole: one part, no range.
    let groups = file_groups(&[f("t/a.csv", 1, &[0])], 3, &[], byte_range_piece).unwrap();
    assert_eq!(ranges(&groups), vec![vec![None]]);
}

#[test]
fn chunks_no_planner_makes_are_refused_naming_the_file() {
    for (file, why) in [
        (chunked(&[0, 2]), "not consecutive"),
        (chunked(&[4]), "row group 4"),
    ] {
        let e = check_row_groups(&file)
            .and_then(|()| file_groups(&[file], 1, &[], byte_range_piece))
            .unwrap_err()
            .to_string();
        assert!(e.contains("t/a.jsonl") && e.contains(why), "{e}");
    }
}
