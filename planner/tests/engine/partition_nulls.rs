//! NULL partition values of Hive-style tables: Hive's and Spark's folder
//! for NULL (`__HIVE_DEFAULT_PARTITION__`, and DataFusion's empty `p=`)
//! reads as NULL in answers and in every partition filter; a partition
//! filter that is NULL for a partition reads nothing of it; `COPY ...
//! PARTITIONED BY` writes NULL values as Hive does and reads them back.
//! Against single-node DataFusion over one file holding the same rows as
//! columns, staged and as one task.

use std::path::Path;

use crate::common::{single_node_csv, write_parquet};

/// Each of `queries` over the folder catalog `catalog`, staged over scan
/// tasks of one file and as one task, answers as `reference` does.
async fn answers_like_single_node(
    catalog: &Path,
    queries: &[impl AsRef<str>],
    reference: &datafusion::prelude::SessionContext,
) {
    for single in ["0", "1000000000000"] {
        let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
            catalog: Some(catalog.display().to_string()),
            settings: crate::common::settings(&[
                ("squall.query.single_task_bytes", single),
                ("squall.scan.target_task_bytes", "1"),
            ]),
        })
        .await
        .unwrap();
        for sql in queries {
            let sql = sql.as_ref();
            assert_eq!(
                crate::common::squall_csv(&engine, sql).await,
                single_node_csv(reference, sql).await,
                "{sql} (single_task_bytes={single})"
            );
        }
    }
}

/// Hive's and Spark's folder for a null partition value
/// (`region=__HIVE_DEFAULT_PARTITION__`) reads as NULL, as Hive, Spark,
/// Trino and Athena read it, in the answer and in every partition filter
/// (`IS NULL` keeps the folder, `<> 'EU'` and `= '__HIVE_DEFAULT_PARTITION__'`
/// do not), in a text column and in an integer one (which stays BIGINT).
/// Answers against single-node DataFusion reading the same rows from one
/// file whose `region` and `year` columns hold the nulls; staged and one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn null_partition_folders_read_as_null() {
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // region: text; year: integers, and NULL in a third of the rows.
    let regions = [Some("EU"), Some("US"), None];
    let years = [Some(2020i64), None, Some(2021), Some(2022)];
    let region_of = |i: i64| regions[(i % 3) as usize];
    let year_of = |i: i64| years[(i % 4) as usize];
    let ids: Vec<i64> = (0..120).collect();
    for region in regions {
        for year in years {
            let these: Vec<i64> = ids
                .iter()
                .copied()
                .filter(|i| region_of(*i) == region && year_of(*i) == year)
                .collect();
            let batch = RecordBatch::try_from_iter([
                ("id", Arc::new(Int64Array::from(these.clone())) as ArrayRef),
                (
                    "v",
                    Arc::new(Int64Array::from_iter_values(these.iter().map(|i| i * 10)))
                        as ArrayRef,
                ),
            ])
            .unwrap();
            let null = "__HIVE_DEFAULT_PARTITION__".to_string();
            let (r, y) = (
                region.map_or(null.clone(), str::to_string),
                year.map_or(null, |y| y.to_string()),
            );
            write_parquet(
                dir.path()
                    .join(format!("catalog/events/region={r}/year={y}/part-0.parquet")),
                batch,
            );
        }
    }
    let flat = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        (
            "v",
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|i| i * 10))) as ArrayRef,
        ),
        (
            "region",
            Arc::new(StringArray::from_iter(ids.iter().map(|i| region_of(*i)))) as ArrayRef,
        ),
        (
            "year",
            Arc::new(Int64Array::from_iter(ids.iter().map(|i| year_of(*i)))) as ArrayRef,
        ),
    ])
    .unwrap();
    let flat_file = dir.path().join("flat/events.parquet");
    write_parquet(flat_file.clone(), flat);
    let reference = datafusion::prelude::SessionContext::new();
    reference
        .register_parquet("events", flat_file.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    let queries = [
        "select region, count(*) as n, sum(v) as v from events group by region order by region nulls first",
        "select count(*) as n from events where region is null",
        "select count(*) as n from events where region is not null",
        "select count(*) as n from events where region <> 'EU'",
        "select count(*) as n from events where region = 'EU'",
        "select count(*) as n from events where region = '__HIVE_DEFAULT_PARTITION__'",
        "select count(*) as n from events where region in ('EU') or region is null",
        "select count(*) as n from events where coalesce(region, 'none') = 'none'",
        "select max(region) as hi, min(region) as lo, count(region) as n, count(distinct region) as d from events",
        "select id, region from events where region is null or id < 3 order by id limit 5",
        "select a.region, count(*) as n from events a join events b on a.id = b.id \
         where b.region is null or b.region = 'US' group by 1 order by 1 nulls first",
        "select year, count(*) as n, sum(v) as v from events group by year order by year nulls first",
        "select count(*) as n from events where year > 2020",
        "select count(*) as n from events where year is null and region is not null",
        "select count(*) as n from events where year <> 2021",
        "select count(*) as n from events where year = 2022 or year is null",
        "select min(year) as lo, max(year) as hi, count(year) as n, sum(year) as s from events",
    ];
    answers_like_single_node(&dir.path().join("catalog"), &queries, &reference).await;
}

/// A partition filter that is NULL for a partition does not read it:
/// `day NOT IN (..., NULL)` is never true, and `day IN (a, b, c, NULL)`
/// keeps `a`'s rows only. DataFusion 55.2's listing table kept a partition
/// whose filter was NULL (it read the answer's value bit alone), so `NOT IN`
/// a list of four dates holding a NULL read every folder (the vendored
/// `datafusion-catalog-listing`). DATE, BIGINT and VARCHAR folders, against
/// single-node DataFusion over one file holding the same rows as columns,
/// staged and one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_filters_that_are_null_read_no_partition() {
    use arrow::array::{ArrayRef, Date32Array, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    // Days since 1970-01-01: 2020-01-01, 2020-01-02, 2020-06-01.
    let days = [
        ("2020-01-01", 18262),
        ("2020-01-02", 18263),
        ("2020-06-01", 18414),
    ];
    let (mut ids, mut day_col, mut n_col, mut s_col) = (vec![], vec![], vec![], vec![]);
    for (d, (day, since)) in days.iter().enumerate() {
        for n in [7i64, 9] {
            let s = ["a", "b"][n as usize % 2];
            let these: Vec<i64> = (0..3).map(|i| (d as i64 * 100) + n * 10 + i).collect();
            write_parquet(
                dir.path()
                    .join(format!("catalog/e/day={day}/n={n}/s={s}/part-0.parquet")),
                RecordBatch::try_from_iter([(
                    "id",
                    Arc::new(Int64Array::from(these.clone())) as ArrayRef,
                )])
                .unwrap(),
            );
            for id in these {
                ids.push(id);
                day_col.push(*since);
                n_col.push(n);
                s_col.push(s);
            }
        }
    }
    let flat_file = dir.path().join("flat/e.parquet");
    write_parquet(
        flat_file.clone(),
        RecordBatch::try_from_iter([
            ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
            ("day", Arc::new(Date32Array::from(day_col)) as ArrayRef),
            ("n", Arc::new(Int64Array::from(n_col)) as ArrayRef),
            ("s", Arc::new(StringArray::from(s_col)) as ArrayRef),
        ])
        .unwrap(),
    );
    let reference = datafusion::prelude::SessionContext::new();
    reference
        .register_parquet("e", flat_file.to_str().unwrap(), Default::default())
        .await
        .unwrap();
    let dates = "date '2019-12-31', date '2021-01-15', date '2021-01-16'";
    let queries = [
        format!("select count(*) as c from e where day not in ({dates}, null)"),
        format!("select sum(id) as c from e where day not in ({dates}, null)"),
        format!("select count(*) as c from e where not (day in ({dates}, null))"),
        format!("select count(*) as c from e where day in ({dates}, date '2020-01-02', null)"),
        format!("select count(*) as c from e where (day not in ({dates}, null)) is null"),
        format!("select count(*) as c from e where coalesce(day not in ({dates}, null), true)"),
        "select count(*) as c from e where n not in (1, 2, 3, null)".to_string(),
        "select count(*) as c from e where n in (1, 2, 9, null)".to_string(),
        "select count(*) as c from e where s not in ('x', 'y', 'z', null)".to_string(),
        "select count(*) as c from e where s in ('x', 'y', 'a', null) and n not in (8, null)"
            .to_string(),
    ];
    answers_like_single_node(&dir.path().join("catalog"), &queries, &reference).await;
    // Never true: no row, whatever the engine.
    assert_eq!(single_node_csv(&reference, &queries[0]).await, "c\n0\n");
}

/// `COPY ... PARTITIONED BY` writes a NULL partition value as Hive does
/// (`p=__HIVE_DEFAULT_PARTITION__`; DataFusion alone writes `p=`, and `y=0`
/// for a NULL integer or DOUBLE), and squall reads it back as NULL, the
/// integer column as BIGINT; an empty folder value (`p=`) reads as NULL
/// too; DOUBLE, DECIMAL and BOOLEAN partitions are written (read back as
/// text: a folder's name holds no type).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_partitioned_by_round_trips_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let writer = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: None,
        settings: crate::common::settings(&[("squall.catalog.allowed_roots", &root)]),
    })
    .await
    .unwrap();
    writer
        .sql(&format!(
            "copy (select * from (values (1, 'a', 10), (2, null, 20), (3, 'b', null), (4, null, null)) \
             t(x, p, y)) to '{root}/catalog/t/' stored as parquet partitioned by (p, y)"
        ))
        .await
        .unwrap();
    // DOUBLE, DECIMAL and BOOLEAN partitions: a NULL DOUBLE was written
    // `f=0`, and DataFusion refused DECIMAL partitions outright.
    writer
        .sql(&format!(
            "copy (select * from (values (1, cast(null as double), cast(null as decimal(10,2)), \
             cast(null as boolean)), (2, 1.5, cast(2.25 as decimal(10,2)), true)) v(x, f, d, b)) \
             to '{root}/catalog/typed/' stored as parquet partitioned by (f, d, b)"
        ))
        .await
        .unwrap();
    let reader = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(format!("{root}/catalog")),
        settings: crate::common::settings(&[("squall.catalog.allowed_roots", &root)]),
    })
    .await
    .unwrap();
    assert_eq!(
        crate::common::squall_csv(&reader, "select x, p, y from t order by x").await,
        "x,p,y\n1,a,10\n2,,20\n3,b,\n4,,\n"
    );
    assert_eq!(
        crate::common::squall_csv(
            &reader,
            "select x, f, d, b, f is null and d is null and b is null as nulls from typed order by x"
        )
        .await,
        "x,f,d,b,nulls\n1,,,,true\n2,1.5,2.25,true,false\n"
    );
    // INSERT INTO the partitioned table writes its folders the same way.
    reader
        .sql("insert into t values (5, 'c', 30), (6, null, 40), (7, 'a', null)")
        .await
        .unwrap();
    assert_eq!(
        crate::common::squall_csv(&reader, "select x, p, y from t where x > 4 order by x").await,
        "x,p,y\n5,c,30\n6,,40\n7,a,\n"
    );
    for folder in [
        "p=c",
        "p=__HIVE_DEFAULT_PARTITION__/y=40",
        "p=a/y=__HIVE_DEFAULT_PARTITION__",
    ] {
        assert!(
            std::path::Path::new(&format!("{root}/catalog/t/{folder}")).is_dir(),
            "{folder}"
        );
        std::fs::remove_dir_all(format!("{root}/catalog/t/{folder}")).unwrap();
    }
    assert_eq!(
        crate::common::squall_csv(
            &reader,
            "select count(*) as n, sum(y) as s from t where p is null or y > 15"
        )
        .await,
        "n,s\n2,20\n"
    );
    let folders: Vec<String> = std::fs::read_dir(format!("{root}/catalog/t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        folders.contains(&"p=__HIVE_DEFAULT_PARTITION__".to_string()),
        "{folders:?}"
    );
    // A folder DataFusion itself wrote for a NULL string.
    std::fs::rename(
        format!("{root}/catalog/t/p=__HIVE_DEFAULT_PARTITION__"),
        format!("{root}/catalog/t/p="),
    )
    .unwrap();
    let again = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(format!("{root}/catalog")),
        settings: crate::common::settings(&[]),
    })
    .await
    .unwrap();
    assert_eq!(
        crate::common::squall_csv(&again, "select count(*) as n from t where p is null").await,
        "n\n2\n"
    );
}
