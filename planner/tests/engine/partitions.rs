//! Hive-style partitioned tables: TPC-H orders written by order year and
//! priority (`o_year=1995/o_orderpriority=1-URGENT/...`) beside a flat
//! lineitem, as a folder catalog and through `CREATE EXTERNAL TABLE ...
//! PARTITIONED BY`. Answers with and without partition predicates equal
//! single-node DataFusion's on the same folders and the unpartitioned
//! table's; EXPLAIN and the profile count the partitions pruned, and the
//! row groups read are exactly those of the partitions kept.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::common::{
    assert_same, engine, sf001_small_groups, single_node, single_node_csv, squall_csv,
    write_parquet,
};

struct Partitioned {
    catalog: PathBuf,
}

/// `catalog/orders_p` (by o_year, o_orderpriority; row groups of 500 rows)
/// and `catalog/lineitem`, written by DataFusion from the SF 0.01 tables.
async fn make() -> Partitioned {
    let dir = squall_tpch::scratch::process_dir("squall-partitioned-").unwrap();
    let catalog = dir.join("catalog");
    let source = single_node(&sf001_small_groups().path).await;
    for sql in [
        format!(
            "copy (select *, cast(date_part('year', o_orderdate) as int) as o_year from orders) \
             to '{}/orders_p/' stored as parquet partitioned by (o_year, o_orderpriority) \
             options ('format.max_row_group_size' '500')",
            catalog.display()
        ),
        format!(
            "copy (select * from lineitem) to '{}/lineitem/' stored as parquet",
            catalog.display()
        ),
    ] {
        source.sql(&sql).await.unwrap().collect().await.unwrap();
    }
    Partitioned { catalog }
}

async fn data() -> &'static Partitioned {
    static D: OnceLock<Partitioned> = OnceLock::new();
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _g = LOCK.lock().await;
    if D.get().is_none() {
        let _ = D.set(make().await);
    }
    D.get().unwrap()
}

fn sub_folders(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Row groups of the Parquet files under `dir`, from their footers.
fn row_groups_under(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let p = entry.path();
        if p.is_dir() {
            n += row_groups_under(&p);
        } else if p.extension().is_some_and(|e| e == "parquet") {
            let file = std::fs::File::open(&p).unwrap();
            n += SerializedFileReader::new(file)
                .unwrap()
                .metadata()
                .num_row_groups();
        }
    }
    n
}

const QUERIES: &[&str] = &[
    "select o_year, o_orderpriority, count(*), sum(o_totalprice) from orders_p group by 1, 2 order by 1, 2",
    "select count(*), sum(o_totalprice) from orders_p where o_year = 1995",
    "select o_orderpriority, count(*) from orders_p where o_year between 1993 and 1994 and o_orderpriority = '1-URGENT' group by 1",
    "select o_year, sum(l_extendedprice) from orders_p join lineitem on l_orderkey = o_orderkey where o_year >= 1997 group by 1 order by 1",
    "select count(*) from orders_p where o_year = 2099",
    "select * from orders_p where o_orderkey < 200 order by o_orderkey",
    "select o_orderpriority, max(o_year) from orders_p where o_orderpriority like '%LOW%' or o_year < 1993 group by 1 order by 1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_equal_single_node_datafusion_with_and_without_partition_predicates() {
    let d = data().await;
    let squall = engine(&d.catalog, &[("squall.scan.target_task_bytes", "20000")]).await;
    let reference = single_node(&d.catalog).await;
    for sql in QUERIES {
        let expected = single_node_csv(&reference, sql).await;
        let actual = squall_csv(&squall, sql).await;
        assert_same("partitioned orders", &expected, &actual, sql);
    }
    // And the same rows as the table they were written from.
    let flat = single_node(&sf001_small_groups().path).await;
    let expected = single_node_csv(
        &flat,
        "select count(*), sum(o_totalprice) from orders where date_part('year', o_orderdate) = 1995",
    )
    .await;
    let actual = squall_csv(&squall, QUERIES[1]).await;
    assert_same("partitioned vs flat orders", &expected, &actual, QUERIES[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruned_partitions_are_counted_and_never_read() {
    let d = data().await;
    let table = d.catalog.join("orders_p");
    let years = sub_folders(&table);
    let total: usize = years.iter().map(|y| sub_folders(y).len()).sum();
    let y1995 = table.join("o_year=1995");
    let kept = sub_folders(&y1995).len();
    assert!(years.len() >= 6 && kept >= 5, "{years:?}");

    let squall = engine(&d.catalog, &[]).await;
    let sql = "select sum(o_totalprice) from orders_p where o_year = 1995";
    let r = squall.sql(&format!("explain {sql}")).await.unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let line = format!("{kept} of {total} partitions ({} pruned)", total - kept);
    assert!(text.contains(&line), "EXPLAIN must say {line:?}:\n{text}");

    let r = squall.sql(&format!("explain analyze {sql}")).await.unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    let line = format!("partitions: {kept} read, {} pruned", total - kept);
    assert!(
        text.contains(&line),
        "EXPLAIN ANALYZE must say {line:?}:\n{text}"
    );

    let profile = squall.sql(sql).await.unwrap().profile.unwrap();
    assert_eq!(profile.partitions_read, kept as u64);
    assert_eq!(profile.partitions_pruned, (total - kept) as u64);
    assert_eq!(
        profile.row_groups_scanned + profile.row_groups_pruned,
        row_groups_under(&y1995) as u64,
        "only the row groups of the kept partitions are planned"
    );

    let all = squall
        .sql("select sum(o_totalprice) from orders_p")
        .await
        .unwrap()
        .profile
        .unwrap();
    assert_eq!(
        (all.partitions_read, all.partitions_pruned),
        (total as u64, 0)
    );
    assert_eq!(all.row_groups_scanned, row_groups_under(&table) as u64);
    assert!(profile.row_groups_scanned < all.row_groups_scanned);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_external_table_partitioned_by() {
    let d = data().await;
    let root = d.catalog.display().to_string();
    let squall = engine(
        &sf001_small_groups().path,
        &[("squall.catalog.allowed_roots", &root)],
    )
    .await;
    squall
        .sql(&format!(
            "create external table ext_orders stored as parquet \
             partitioned by (o_year, o_orderpriority) location '{root}/orders_p/'"
        ))
        .await
        .unwrap();
    let sql = "select o_orderpriority, count(*) from ext_orders where o_year = '1996' group by 1 order by 1";
    let reference = single_node(&sf001_small_groups().path).await;
    let expected = single_node_csv(
        &reference,
        "select o_orderpriority, count(*) from orders where date_part('year', o_orderdate) = 1996 group by 1 order by 1",
    )
    .await;
    assert_same(
        "external partitioned table",
        &expected,
        &squall_csv(&squall, sql).await,
        sql,
    );
    let r = squall.sql(&format!("explain {sql}")).await.unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(text.contains(" pruned), "), "{text}");
}

/// Files partitioned two ways in one table, a Parquet file loose beside
/// the partition folders, or files in folders that are not key=value, set
/// the table aside: a query naming it fails naming the table and the files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inconsistent_partition_folders_are_refused_by_name() {
    let d = data().await;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("mixed");
    std::fs::create_dir_all(table.join("a=1")).unwrap();
    std::fs::create_dir_all(table.join("b=2")).unwrap();
    let some_file = sub_folders(&sub_folders(&d.catalog.join("orders_p"))[0])[0]
        .read_dir()
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::copy(&some_file, table.join("a=1/x.parquet")).unwrap();
    std::fs::copy(&some_file, table.join("b=2/y.parquet")).unwrap();
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(dir.path().display().to_string()),
        settings: vec![],
    })
    .await
    .expect("the catalog, without the table partitioned two ways");
    let err = match engine.sql("select count(*) from mixed").await {
        Ok(_) => panic!("a table partitioned two ways answered"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("mixed") && err.contains("partitioned differently") && err.contains("(a)"),
        "{err}"
    );
    // Files in folders that are not key=value beside folders that are:
    // the table is set aside, the answer naming the folder.
    let nested = dir.path().join("nested/2024/01");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(&some_file, nested.join("z.parquet")).unwrap();
    std::fs::create_dir_all(dir.path().join("nested/k=1")).unwrap();
    std::fs::copy(&some_file, dir.path().join("nested/k=1/z.parquet")).unwrap();
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(dir.path().display().to_string()),
        settings: vec![],
    })
    .await
    .unwrap();
    let err = match engine.sql("select count(*) from nested").await {
        Ok(_) => panic!("a table in plain and key=value sub-folders answered"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("partitioned differently") && err.contains("2024/01/z.parquet by ()"),
        "{err}"
    );
}

/// Hive-style folders as Hive and Spark write them: a value with a ':' or
/// a space escaped (`ts=10%3A00`, `region=US%20West`), zero-padded
/// integers (`month=01`: an equality keeps its folders), and files that hold
/// a column named like a partition folder (the folder's value is read, as
/// Hive, Spark and Trino read it). Staged and one task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_partition_values_and_file_columns_named_like_partitions() {
    use arrow::array::{Int64Array, RecordBatch};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let write = |folder: &str, columns: Vec<(&str, i64)>| {
        let path = dir.path().join(folder);
        std::fs::create_dir_all(&path).unwrap();
        let batch = RecordBatch::try_from_iter(columns.into_iter().map(|(n, v)| {
            (
                n,
                Arc::new(Int64Array::from(vec![v])) as arrow::array::ArrayRef,
            )
        }))
        .unwrap();
        let file = std::fs::File::create(path.join("part-0.parquet")).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    };
    write("events/ts=10%3A00/region=US%20West", vec![("x", 1)]);
    write("events/ts=10%3A00/region=EU", vec![("x", 2)]);
    write("events/ts=11%3A30/region=US%20West", vec![("x", 4)]);
    write("dup/p=1", vec![("p", 9), ("y", 1)]);
    write("dup/p=2", vec![("p", 9), ("y", 5)]);
    // Zero-padded integers (Hive's and Spark's month=01, hour=09): BIGINT
    // 1 and 9, whose prefixes DataFusion spells month=1/ (no such folder).
    write("padded/year=2024/month=01/day=05", vec![("x", 1)]);
    write("padded/year=2024/month=01/day=17", vec![("x", 2)]);
    write("padded/year=2024/month=12/day=05", vec![("x", 4)]);
    for single in ["0", "1000000000000"] {
        let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
            catalog: Some(dir.path().display().to_string()),
            settings: crate::common::settings(&[
                ("squall.query.single_task_bytes", single),
                ("squall.scan.target_task_bytes", "1"),
            ]),
        })
        .await
        .unwrap();
        let events = crate::common::squall_csv(
            &engine,
            "select ts, region, sum(x) as x from events group by 1, 2 order by 1, 2",
        )
        .await;
        assert_eq!(
            events, "ts,region,x\n10:00,EU,2\n10:00,US West,1\n11:30,US West,4\n",
            "single_task_bytes={single}"
        );
        let pruned = crate::common::squall_csv(
            &engine,
            "select sum(x) as x from events where region = 'US West' and ts = '11:30'",
        )
        .await;
        assert_eq!(pruned, "x\n4\n", "single_task_bytes={single}");
        let dup = crate::common::squall_csv(&engine, "select p, y from dup order by p").await;
        assert_eq!(dup, "p,y\n1,1\n2,5\n", "single_task_bytes={single}");
        for (sql, want) in [
            ("select sum(x) as x from padded where month = 1", "x\n3\n"),
            (
                "select sum(x) as x from padded where year = 2024 and month = 1 and day = 5",
                "x\n1\n",
            ),
            (
                "select sum(x) as x from padded where year = 2024 and month = 12",
                "x\n4\n",
            ),
            (
                "select month, typeof(month) as t from padded where day = 17",
                "month,t\n1,bigint\n",
            ),
        ] {
            let got = crate::common::squall_csv(&engine, sql).await;
            assert_eq!(got, want, "{sql}, single_task_bytes={single}");
        }
    }
}

/// Files in folders below a table's own that are no partitions
/// (`2024/05/a.parquet`, as Firehose and many exports write them) are the
/// table's rows, as Athena reads them (they were refused); hidden and
/// bookkeeping folders are not read; a column only later folders' files
/// hold is the table's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_in_folders_that_are_no_partitions_are_rows() {
    use arrow::array::{Int64Array, RecordBatch, StringArray};
    let dir = tempfile::tempdir().unwrap();
    let ints = |v: Vec<i64>| {
        RecordBatch::try_from_iter([("y", std::sync::Arc::new(Int64Array::from(v)) as _)]).unwrap()
    };
    let root = dir.path().join("events");
    write_parquet(root.join("top.parquet"), ints(vec![1]));
    write_parquet(root.join("2024/05/01/a.parquet"), ints(vec![2, 3]));
    write_parquet(root.join("2024/05/02/b.parquet"), ints(vec![4]));
    write_parquet(
        root.join("2024/06/01/c.parquet"),
        RecordBatch::try_from_iter([
            ("y", std::sync::Arc::new(Int64Array::from(vec![5])) as _),
            (
                "z",
                std::sync::Arc::new(StringArray::from(vec!["new"])) as _,
            ),
        ])
        .unwrap(),
    );
    write_parquet(root.join("_temporary/0/d.parquet"), ints(vec![100]));
    write_parquet(root.join("2024/.staging/e.parquet"), ints(vec![1000]));
    let csv = dir.path().join("logs");
    for (folder, text) in [("2024/01", "a,b\n1,x\n"), ("2024/02", "a,b\n2,y\n3,z\n")] {
        std::fs::create_dir_all(csv.join(folder)).unwrap();
        std::fs::write(csv.join(folder).join("l.csv"), text).unwrap();
    }
    for single in ["0", "1000000000000"] {
        let engine = engine(dir.path(), &[("squall.query.single_task_bytes", single)]).await;
        for (sql, expected) in [
            (
                "select count(*) as n, sum(y) as s, count(z) as z from events",
                "n,s,z\n5,15,1\n",
            ),
            ("select a, b from logs order by a", "a,b\n1,x\n2,y\n3,z\n"),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, expected, "{sql} ({single})");
        }
    }
}
