//! Join-key filters: the same answers with the filter on and off, semantics
//! of semi, anti (with NULL keys on both sides), multi-key and empty-build-side
//! joins, and filters that survive retried build tasks.
//!
//! Small data plans small joins as broadcasts; these tests force partitioned
//! joins and filters on every join that may take one, so the filters run
//! (and both the exact-set and the Bloom form, inline and as an object).

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::common::*;

/// Partitioned joins everywhere, and a filter wherever one is allowed.
const FORCE: &[(&str, &str)] = &[
    (
        "datafusion.optimizer.hash_join_single_partition_threshold",
        "0",
    ),
    (
        "datafusion.optimizer.hash_join_single_partition_threshold_rows",
        "0",
    ),
    ("squall.bloom.min_size_ratio", "0"),
    ("squall.bloom.max_source_fraction", "1.0"),
    ("squall.bloom.min_drop_ratio", "0"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    FORCE.iter().chain(extra.iter()).copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_same_answers_with_filters_on_and_off() {
    let data = sf01();
    // Bloom form (exact sets up to 64 keys), objects above 4 KB.
    let on = engine(
        &data.path,
        &with(&[
            ("squall.bloom.exact_max_keys", "64"),
            ("squall.bloom.inline_max_bytes", "4096"),
        ]),
    )
    .await;
    let off = engine(&data.path, &with(&[("squall.bloom.enabled", "false")])).await;
    // Broadcast joins as planned by default, filters wherever allowed: build
    // sides read by broadcast publish too, and filters pass through inner joins.
    let broadcast = engine(&data.path, &FORCE[2..]).await;
    let reference = single_node(&data.path).await;
    let mut failures = Vec::new();
    let (mut filtered_queries, mut dropped, mut kinds) =
        (0, 0u64, std::collections::BTreeSet::new());
    let mut broadcast_filtered = 0;
    for q in 1..=22 {
        let sql = squall_tpch::query(q).unwrap();
        let r_on = on
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q} with filters: {e}"));
        let r_off = off
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q} without filters: {e}"));
        let r_broadcast = broadcast
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q} with broadcast joins and filters: {e}"));
        if !r_broadcast.profile.as_ref().unwrap().filters.is_empty() {
            broadcast_filtered += 1;
        }
        let p_on = r_on.profile.clone().unwrap();
        let p_off = r_off.profile.clone().unwrap();
        assert!(
            p_off.filters.is_empty() && p_off.bloom_rows_checked == 0,
            "q{q}: filters while disabled"
        );
        if !p_on.filters.is_empty() {
            filtered_queries += 1;
        }
        dropped += p_on.bloom_rows_dropped;
        kinds.extend(p_on.filters.iter().map(|f| f.kind.clone()));
        let answer = squall_tpch::expected_answer(0.1, q).unwrap();
        let df = single_node_csv(&reference, sql).await;
        for (name, r) in [
            ("on", &r_on),
            ("off", &r_off),
            ("on, broadcast joins", &r_broadcast),
        ] {
            let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
            for (oracle, expected) in [("answers", answer), ("DataFusion", df.as_str())] {
                let c = squall_tpch::compare::compare_csv(expected, &actual, Some(sql)).unwrap();
                if !c.ok {
                    failures.push(format!("q{q:02} filters {name} vs {oracle}: {}", c.message));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        filtered_queries >= 10,
        "filters placed in only {filtered_queries} queries"
    );
    assert!(dropped > 0, "no row was ever dropped by a filter");
    assert!(
        broadcast_filtered >= 5,
        "filters placed in only {broadcast_filtered} queries with broadcast joins"
    );
    assert!(
        kinds.contains("bloom") && kinds.contains("exact"),
        "filter kinds used: {kinds:?}"
    );
    assert_eq!(
        count_files(on.exchange_root()),
        0,
        "exchange objects (or filter objects) left behind"
    );
}

/// Two small tables with NULL keys on both sides, several row groups each.
fn write_table(dir: &Path, name: &str, k1: &[Option<i64>], k2: &[Option<&str>], v: &[i64]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k1", DataType::Int64, true),
        Field::new("k2", DataType::Utf8, true),
        Field::new("v", DataType::Int64, false),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(k1.to_vec())),
        Arc::new(StringArray::from(k2.to_vec())),
        Arc::new(Int64Array::from(v.to_vec())),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), cols).unwrap();
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    // Four files, so scans are planned over several partitions and cut into stages.
    let files = 4;
    let per_file = batch.num_rows().div_ceil(files);
    for f in 0..files {
        let start = (f * per_file).min(batch.num_rows());
        let len = per_file.min(batch.num_rows() - start);
        let file = std::fs::File::create(folder.join(format!("part-{f}.parquet"))).unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(25))
            .build();
        let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).unwrap();
        w.write(&batch.slice(start, len)).unwrap();
        w.close().unwrap();
    }
}

fn semantics_data() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // `big`: 400 rows, keys 0..199 twice, every 7th key NULL, k2 in a..e (some NULL).
    let n = 400;
    let k1: Vec<Option<i64>> = (0..n)
        .map(|i| if i % 7 == 3 { None } else { Some(i % 200) })
        .collect();
    let labels = ["a", "b", "c", "d", "e"];
    let k2: Vec<Option<&str>> = (0..n)
        .map(|i| {
            if i % 11 == 5 {
                None
            } else {
                Some(labels[(i % 5) as usize])
            }
        })
        .collect();
    let v: Vec<i64> = (0..n).collect();
    write_table(dir.path(), "big", &k1, &k2, &v);
    // `small`: 60 rows, keys spread over 0..300 (some outside big's), NULLs too.
    let m = 60;
    let k1: Vec<Option<i64>> = (0..m)
        .map(|i| if i % 9 == 4 { None } else { Some(i * 5) })
        .collect();
    let k2: Vec<Option<&str>> = (0..m)
        .map(|i| {
            if i % 13 == 6 {
                None
            } else {
                Some(labels[(i % 5) as usize])
            }
        })
        .collect();
    let v: Vec<i64> = (0..m).collect();
    write_table(dir.path(), "small", &k1, &k2, &v);
    // `empty`: no rows.
    write_table(dir.path(), "empty", &[], &[], &[]);
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_semantics_with_null_keys_multi_keys_and_empty_sides() {
    let data = semantics_data();
    let on = engine(
        data.path(),
        &with(&[
            ("squall.scan.target_task_bytes", "1"),
            ("squall.bloom.exact_max_keys", "16"),
        ]),
    )
    .await;
    // The same with joins broadcast as planned by default (build sides read
    // by broadcast publish, filters pass through inner joins).
    let broadcast = engine(
        data.path(),
        &[
            ("squall.bloom.min_size_ratio", "0"),
            ("squall.bloom.max_source_fraction", "1.0"),
            ("squall.bloom.min_drop_ratio", "0"),
            ("squall.scan.target_task_bytes", "1"),
            ("squall.bloom.exact_max_keys", "16"),
        ],
    )
    .await;
    let reference = single_node(data.path()).await;
    // (SQL, whether a filter must be placed; None where join reordering decides)
    let cases: &[(&str, Option<bool>)] = &[
        (
            "select b.v, s.v from big b join small s on b.k1 = s.k1 order by 1, 2",
            Some(true),
        ),
        (
            "select b.v from big b where b.k1 in (select k1 from small) order by 1",
            Some(true),
        ),
        (
            "select b.v from big b where exists (select 1 from small s where s.k1 = b.k1) order by 1",
            Some(true),
        ),
        (
            "select b.v from big b where not exists (select 1 from small s where s.k1 = b.k1) order by 1",
            Some(true),
        ),
        (
            "select s.v from small s where not exists (select 1 from big b where b.k1 = s.k1) order by 1",
            Some(true),
        ),
        // NOT IN is null-aware: a NULL in the subquery empties the result; never filtered.
        (
            "select b.v from big b where b.k1 not in (select k1 from small) order by 1",
            Some(false),
        ),
        (
            "select b.v from big b where b.k1 not in (select k1 from small where k1 is not null) order by 1",
            Some(false),
        ),
        (
            "select b.v, s.v from big b join small s on b.k1 = s.k1 and b.k2 = s.k2 order by 1, 2",
            Some(true),
        ),
        (
            "select b.v, s.v from big b left join small s on b.k1 = s.k1 order by 1, 2",
            None,
        ),
        (
            "select b.v, s.v from small s left join big b on b.k1 = s.k1 order by 1, 2",
            None,
        ),
        (
            "select b.v, s.v from big b full join small s on b.k1 = s.k1 order by 1, 2",
            Some(false),
        ),
        (
            "select b.v from big b join empty e on b.k1 = e.k1 order by 1",
            Some(true),
        ),
        (
            "select b.v from big b where b.k1 in (select k1 from empty) order by 1",
            Some(true),
        ),
        (
            "select count(*) from big b where not exists (select 1 from empty e where e.k1 = b.k1)",
            Some(true),
        ),
        (
            "select b.k2, count(*) from big b join small s on b.k2 = s.k2 group by 1 order by 1",
            Some(true),
        ),
        // A semi join over an inner join: the subquery's keys filter both inputs.
        (
            "select b.v, s.v from big b join small s on b.k1 = s.k1 \
             where b.k1 in (select k1 from small where v < 20) order by 1, 2",
            Some(true),
        ),
        (
            "select b.v, s.v from big b join small s on b.k1 = s.k1 \
             where s.k1 not in (select k1 from small where v < 20 and k1 is not null) order by 1, 2",
            None,
        ),
    ];
    let mut failures = Vec::new();
    let mut placed_any = 0;

    for (sql, must_filter) in cases {
        let expected = single_node_csv(&reference, sql).await;
        let r = on.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        let c = squall_tpch::compare::compare_csv(&expected, &actual, Some(sql)).unwrap();
        if !c.ok {
            failures.push(format!("{sql}: {}", c.message));
        }
        let b = broadcast
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql} (broadcast joins): {e}"));
        let b_csv = squall_tpch::run::to_csv(&b.schema, &b.batches).unwrap();
        let c = squall_tpch::compare::compare_csv(&expected, &b_csv, Some(sql)).unwrap();
        if !c.ok {
            failures.push(format!("{sql} (broadcast joins): {}", c.message));
        }
        let placed = !r.profile.as_ref().unwrap().filters.is_empty();
        placed_any += usize::from(placed);
        if let Some(must) = must_filter
            && placed != *must
        {
            failures.push(format!("{sql}: filter placed = {placed}, expected {must}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(placed_any >= 10, "filters placed in {placed_any} cases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_survive_crashed_build_and_probe_tasks() {
    let data = sf001_small_groups();
    let crashy = engine(
        &data.path,
        &with(&[
            ("squall.scan.target_task_bytes", "20000"),
            ("squall.fault.task_crash_rate", "0.3"),
            ("squall.fault.seed", "7"),
            ("squall.task.max_attempts", "10"),
        ]),
    )
    .await;
    let reference = single_node(&data.path).await;
    let mut retries = 0;
    for q in [3, 5, 10, 18, 21] {
        let sql = squall_tpch::query(q).unwrap();
        let r = crashy
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("q{q}: {e}"));
        let p = r.profile.clone().unwrap();
        assert!(!p.filters.is_empty(), "q{q}: no filter placed");
        retries += p.retries;
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(
            &format!("q{q}"),
            &single_node_csv(&reference, sql).await,
            &actual,
            sql,
        );
    }
    assert!(retries > 0, "no task was retried");
    assert_eq!(count_files(crashy.exchange_root()), 0);
}

/// The published keys' range prunes the probe scan's row groups: a probe
/// table sorted by its key (80 row groups of 25 rows) joined with a build
/// side whose keys span 60 values; a build side with no keys prunes them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_ranges_prune_probe_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    let n = 2000;
    let k1: Vec<Option<i64>> = (0..n).map(Some).collect();
    let k2: Vec<Option<&str>> = (0..n)
        .map(|i| Some(["a", "b", "c"][(i % 3) as usize]))
        .collect();
    let v: Vec<i64> = (0..n).collect();
    write_table(dir.path(), "sorted", &k1, &k2, &v);
    let k1: Vec<Option<i64>> = (0..60)
        .map(|i| if i % 10 == 7 { None } else { Some(500 + i) })
        .collect();
    let k2: Vec<Option<&str>> = (0..60).map(|_| Some("a")).collect();
    write_table(dir.path(), "narrow", &k1, &k2, &(0..60).collect::<Vec<_>>());
    write_table(dir.path(), "empty", &[], &[], &[]);

    let on = engine(dir.path(), &with(&[("squall.bloom.exact_max_keys", "16")])).await;
    let off = engine(dir.path(), &with(&[("squall.bloom.enabled", "false")])).await;
    let reference = single_node(dir.path()).await;
    let total = 80;
    for (sql, pruned_at_least) in [
        (
            "select b.v, n.v from sorted b join narrow n on b.k1 = n.k1 order by 1, 2",
            total - 8,
        ),
        (
            "select count(*), sum(b.v) from sorted b where b.k1 in (select k1 from narrow)",
            total - 8,
        ),
        (
            "select b.v, n.v from sorted b join narrow n on b.k1 = n.k1 and b.k2 = n.k2 order by 1, 2",
            total - 8,
        ),
        (
            "select count(*) from sorted b join empty e on b.k1 = e.k1",
            total,
        ),
    ] {
        let expected = single_node_csv(&reference, sql).await;
        for (side, e) in [("on", &on), ("off", &off)] {
            let r = e.sql(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
            let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
            let c = squall_tpch::compare::compare_csv(&expected, &actual, Some(sql)).unwrap();
            assert!(c.ok, "{side}: {sql}: {}", c.message);
            let profile = r.profile.as_ref().unwrap();
            if side == "on" {
                assert!(
                    profile.row_groups_pruned >= pruned_at_least,
                    "{sql}: {} row groups pruned, expected at least {pruned_at_least}\n{}",
                    profile.row_groups_pruned,
                    profile.display()
                );
                assert!(profile.filters.iter().any(|f| f.ranges.is_some()), "{sql}");
            } else {
                assert_eq!(profile.row_groups_pruned, 0, "{sql}: nothing to prune by");
            }
        }
    }
    assert_eq!(
        count_files(on.exchange_root()),
        0,
        "exchange objects left behind"
    );
}

/// A key filter known to be skipped before its build stage ends releases its
/// probe stage then (`squall.bloom.early_release`): when the first build task
/// reports more keys than `max_keys`, or when the sections merged so far hold
/// more. Answers stay right, the sections after the release are never read,
/// and without early release the filter is skipped only at the stage's end,
/// with the keys' range still pushed into the probe scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_known_to_be_skipped_release_their_probe_early() {
    let data = sf001_tiny_groups();
    // orders (about 38 row groups of 400 rows) builds, lineitem probes: one
    // row group per scan task, about 240 keys per build task.
    let sql = "select count(*), sum(l_extendedprice) from lineitem join orders \
               on l_orderkey = o_orderkey where o_orderdate < date '1996-01-01'";
    let expected = single_node_csv(&single_node(&data.path).await, sql).await;
    let one_row_group = ("squall.scan.target_task_bytes", "1");
    // (max_keys, early release, what skipped it)
    for (max_keys, early, why) in [
        ("100", "true", "saw more than 100 distinct keys"),
        ("1500", "true", "more than squall.bloom.max_keys = 1500"),
        ("1500", "false", "more than squall.bloom.max_keys = 1500"),
    ] {
        let e = engine(
            &data.path,
            &with(&[
                one_row_group,
                ("squall.bloom.max_keys", max_keys),
                ("squall.bloom.early_release", early),
            ]),
        )
        .await;
        let r = e
            .sql(sql)
            .await
            .unwrap_or_else(|e| panic!("max_keys {max_keys}: {e}"));
        let actual = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
        assert_same(&format!("max_keys {max_keys}"), &expected, &actual, sql);
        let profile = r.profile.unwrap();
        let f = profile
            .filters
            .iter()
            .find(|f| f.tasks > 10)
            .unwrap_or_else(|| panic!("no filter from orders: {}", profile.display()));
        let reason = f.skipped.as_deref().unwrap_or_default();
        assert!(reason.contains(why), "{reason}\n{}", profile.display());
        if early == "true" {
            let after = f.released_after.expect("released before its stage ended");
            assert!(after < f.tasks, "{after} of {} tasks", f.tasks);
            // Sections are read only up to the release (none when a build
            // task's report tells by itself).
            assert!(f.get_requests < f.tasks, "{} GETs", f.get_requests);
            if max_keys == "100" {
                assert_eq!((after, f.get_requests), (1, 0));
            }
            assert!(f.ranges.is_none());
            assert!(profile.display().contains("its probe released after"));
        } else {
            assert_eq!(f.released_after, None);
            // Every build task's section (one read twice if it was still
            // coming when the stage ended).
            assert!(f.get_requests >= f.tasks, "{} GETs", f.get_requests);
            assert!(f.ranges.is_some(), "the range of all the keys");
        }
        assert_eq!(count_files(e.exchange_root()), 0, "objects left behind");
    }
}
