//! The catalog as users' data makes it: unreadable tables set aside by
//! name, tables of many files, files added later, tables named by their
//! folders (files' schemas that disagree are `file_schemas`; what clients
//! browse the catalog with is `browsing`).

use crate::common::*;

/// One Parquet file of the SF 0.01 nation table (25 rows).
fn a_nation_file() -> std::path::PathBuf {
    std::fs::read_dir(sf001_small_groups().path.join("nation"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap()
}

/// A catalog table with a file that is not Parquet (truncated, or a footer
/// that is garbage: the Parquet reader panics on some) is set aside: a
/// query naming it fails with an error that names the table and the file,
/// never a crash, and the catalog's other tables answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_parquet_files_are_named() {
    let good = std::fs::read(a_nation_file()).unwrap();
    for (what, bytes) in [
        ("truncated", good[..300].to_vec()),
        ("garbage footer", b"PAR1garbagePAR1".to_vec()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t");
        std::fs::create_dir_all(&table).unwrap();
        std::fs::write(table.join("a.parquet"), &good).unwrap();
        std::fs::write(table.join("b.parquet"), &bytes).unwrap();
        let other = dir.path().join("nation");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("a.parquet"), &good).unwrap();
        let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
            catalog: Some(dir.path().to_string_lossy().to_string()),
            settings: settings(&[]),
        })
        .await
        .unwrap_or_else(|e| panic!("{what}: one bad table failed the catalog: {e}"));
        for sql in ["select count(*) from t", "select n_name from t, nation"] {
            let err = engine.sql(sql).await.unwrap_err().to_string();
            assert!(
                err.contains("table t") && err.contains("b.parquet"),
                "{what}: {sql}: {err}"
            );
        }
        let answer = squall_csv(&engine, "select count(*) from nation").await;
        assert_eq!(answer, "count(*)\n25\n", "{what}");
    }
}

/// A folder's files are its `*.parquet` files; a folder with none whose
/// files are Parquet under other names (Hive's `000000_0`, Athena's CTAS
/// output, named without an extension) is read whole, as Hive and Athena
/// read it, flat or partitioned, bookkeeping files (`_SUCCESS`, `.x.crc`)
/// left out. A folder with no Parquet file at all is no table, and a query
/// naming it says why (empty; files that are not Parquet, naming one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_read_their_parquet_files_whatever_their_names() {
    let good = std::fs::read(a_nation_file()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let put = |path: &str, bytes: &[u8]| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    put("hive/000000_0", &good);
    put("hive/000001_0", &good);
    put("hive/_SUCCESS", b"");
    put("hive/.000000_0.crc", b"crc");
    put("athena/dt=2026-01-01/20261204_101010_00001_abcde_1", &good);
    put("athena/dt=2026-01-02/20261204_101010_00001_abcde_2", &good);
    put("athena/dt=2026-01-02/20261204_101010_00001_abcde_3", &good);
    put("athena/dt=2026-01-02/_temporary/x", b"not data");
    put("junk/000000_0", b"id,name\n1,a\n");
    put("spark/part-00000-x.snappy.parquet", &good);
    put("spark/_SUCCESS", b"");
    put("spark/.part-00000-x.snappy.parquet.crc", b"crc");
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: Some(dir.path().to_string_lossy().to_string()),
        settings: settings(&[]),
    })
    .await
    .unwrap();
    for (sql, want) in [
        (
            "select count(*), sum(n_nationkey) from hive where n_name <> 'x'",
            "count(*),sum(hive.n_nationkey)\n50,600\n",
        ),
        (
            "select dt, count(*), max(n_name) from athena group by dt order by dt",
            "dt,count(*),max(athena.n_name)\n2026-01-01,25,VIETNAM\n2026-01-02,50,VIETNAM\n",
        ),
        (
            "select count(*) from athena where dt = date '2026-01-02' and n_regionkey = 1",
            "count(*)\n10\n",
        ),
        ("select count(*) from spark", "count(*)\n25\n"),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
    let err = engine
        .sql("select * from empty")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table empty") && err.contains("no Parquet file"),
        "{err}"
    );
    let err = engine
        .sql("select * from junk")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table junk")
            && err.contains("000000_0")
            && err.contains("not begin with PAR1"),
        "{err}"
    );
}

/// A table of more files than planning reads footers of at once (64 first,
/// then a window of 128), each of its own number of row groups: every file
/// is planned with its own footer (a footer paired with another file would
/// name row groups it does not have), and the answers equal DataFusion's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_of_hundreds_of_files_are_planned_file_by_file() {
    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t");
    std::fs::create_dir_all(&table).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Int64, false),
    ]));
    let (files, mut row_groups) = (230usize, 0usize);
    for f in 0..files {
        // 1 to 5 row groups of 10 rows, a different count file to file.
        let groups = f % 5 + 1;
        row_groups += groups;
        let n = groups as i64 * 10;
        let base = f as i64 * 100;
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(base..base + n)),
                Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 7))),
            ],
        )
        .unwrap();
        let file = std::fs::File::create(table.join(format!("part-{f:04}.parquet"))).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(10))
            .build();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
    }
    let engine = engine(dir.path(), &[]).await;
    let reference = single_node(dir.path()).await;
    let r = engine
        .sql("explain select v, count(*), sum(k) from t group by v")
        .await
        .unwrap();
    let text = squall_tpch::run::to_csv(&r.schema, &r.batches).unwrap();
    assert!(
        text.contains(&format!("scans: {row_groups} of {row_groups} row groups")),
        "{row_groups} row groups in {files} files: {text}"
    );
    for sql in [
        "select v, count(*), sum(k) from t group by v order by v",
        "select count(*), sum(k), min(k), max(k) from t where k % 100 >= 20",
    ] {
        let expected = single_node_csv(&reference, sql).await;
        assert_same(sql, &expected, &squall_csv(&engine, sql).await, sql);
    }
}

/// Files and partitions written (or removed) by other jobs after the
/// catalog was read are read (or not) by the next query of the same
/// engine, as a long-running `squall serve` needs: DataFusion 55 would
/// keep each table's first listing for the process's life.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_added_and_removed_later_are_seen_by_the_next_query() {
    let nation = a_nation_file();
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("flat");
    let parted = dir.path().join("parted");
    std::fs::create_dir_all(&flat).unwrap();
    std::fs::create_dir_all(parted.join("k=1")).unwrap();
    std::fs::copy(&nation, flat.join("a.parquet")).unwrap();
    std::fs::copy(&nation, parted.join("k=1/a.parquet")).unwrap();
    for single in ["0", "1000000000000"] {
        let engine = engine(dir.path(), &[("squall.query.single_task_bytes", single)]).await;
        let count = |sql: &'static str| {
            let engine = &engine;
            async move { squall_csv(engine, sql).await }
        };
        assert_eq!(count("select count(*) as n from flat").await, "n\n25\n");
        assert_eq!(count("select count(*) as n from parted").await, "n\n25\n");
        std::fs::copy(&nation, flat.join("b.parquet")).unwrap();
        std::fs::create_dir_all(parted.join("k=2")).unwrap();
        std::fs::copy(&nation, parted.join("k=2/a.parquet")).unwrap();
        assert_eq!(count("select count(*) as n from flat").await, "n\n50\n");
        assert_eq!(
            count("select k, count(*) as n from parted group by k order by k").await,
            "k,n\n1,25\n2,25\n"
        );
        std::fs::remove_file(flat.join("b.parquet")).unwrap();
        std::fs::remove_dir_all(parted.join("k=2")).unwrap();
        assert_eq!(count("select count(*) as n from flat").await, "n\n25\n");
        assert_eq!(count("select count(*) as n from parted").await, "n\n25\n");
    }
}

/// Tables are named by their folders (or files) in lowercase, as Trino,
/// Hive and Athena present them, whatever the folder holds: a dot
/// (`events.v2` was the table `v2` of a schema `events`), spaces and
/// dashes, capitals. Two folders that differ only by case keep their names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_are_named_by_their_folders_in_lowercase() {
    let nation = a_nation_file();
    let dir = tempfile::tempdir().unwrap();
    for folder in ["events.v2", "My Events-2024", "Orders", "orders", "Ünï"] {
        let table = dir.path().join(folder);
        std::fs::create_dir_all(&table).unwrap();
        std::fs::copy(&nation, table.join("a.parquet")).unwrap();
    }
    std::fs::copy(&nation, dir.path().join("Orders").join("b.parquet")).unwrap();
    std::fs::copy(&nation, dir.path().join("Single File.parquet")).unwrap();
    let engine = engine(dir.path(), &[]).await;
    assert_eq!(
        squall_csv(&engine, "show tables").await,
        "Table\nOrders\nevents.v2\nmy events-2024\norders\nsingle file\nünï\n"
    );
    for (sql, rows) in [
        ("select count(*) from \"events.v2\"", 25),
        ("select count(*) from \"My Events-2024\"", 25),
        ("select count(*) from \"my events-2024\"", 25),
        ("select count(*) from squall.public.\"MY EVENTS-2024\"", 25),
        ("select count(*) from \"Single File\"", 25),
        ("select count(*) from ünï", 25),
        ("select count(*) from orders", 25),
        ("select count(*) from \"Orders\"", 50),
    ] {
        assert_eq!(
            squall_csv(&engine, sql).await,
            format!("count(*)\n{rows}\n"),
            "{sql}"
        );
    }
}

/// A table another catalog registers (Glue's, in the aws crate) is
/// registered when a statement first names it, once: the catalog's other
/// tables are not read; one that cannot be registered fails the statements
/// naming it with why and is left out of `SHOW TABLES`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_tables_are_registered_when_first_named() {
    use squall_planner::catalog::DeferredTable;
    use squall_planner::partitions::PartitionRegistry;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug)]
    struct Counted {
        file: Option<std::path::PathBuf>,
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl DeferredTable for Counted {
        async fn register(
            &self,
            ctx: &datafusion::prelude::SessionContext,
            name: &str,
            _registry: &PartitionRegistry,
        ) -> datafusion::error::Result<()> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let Some(file) = &self.file else {
                return Err(datafusion::error::DataFusionError::Plan(format!(
                    "table {name}: its partitions cannot be listed"
                )));
            };
            ctx.register_parquet(
                squall_planner::catalog::bare(name),
                file.to_string_lossy().as_ref(),
                Default::default(),
            )
            .await
        }
    }

    let file = Some(a_nation_file());
    let tables: Vec<Arc<Counted>> = [file.clone(), file, None]
        .into_iter()
        .map(|file| {
            Arc::new(Counted {
                file,
                calls: AtomicUsize::new(0),
            })
        })
        .collect();
    let engine = squall_planner::Engine::local(squall_planner::EngineOptions {
        catalog: None,
        settings: settings(&[]),
    })
    .await
    .unwrap();
    let deferred: Vec<(String, Arc<dyn DeferredTable>)> = ["a", "b", "broken"]
        .into_iter()
        .zip(&tables)
        .map(|(n, t)| (n.to_string(), Arc::clone(t) as Arc<dyn DeferredTable>))
        .collect();
    engine.register_deferred(deferred).unwrap();
    let calls = || {
        tables
            .iter()
            .map(|t| t.calls.load(Ordering::SeqCst))
            .collect::<Vec<_>>()
    };
    let sql = "select count(*) as n from a where n_name <> 'x'";
    assert_eq!(squall_csv(&engine, sql).await, "n\n25\n");
    assert_eq!(squall_csv(&engine, sql).await, "n\n25\n");
    assert_eq!(calls(), [1, 0, 0], "only the table named, once");
    let err = engine
        .sql("select * from broken")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("partitions cannot be listed"), "{err}");
    let listed = squall_csv(&engine, "show tables").await;
    assert_eq!(listed, "Table\na\nb\n", "broken left out");
    assert_eq!(calls(), [1, 1, 1], "each registered once");
}

/// An `s3://` location the embedded engine was not given S3 for is refused
/// saying how to read it (DataFusion's answer was an internal error
/// calling itself a bug).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_locations_the_embedded_engine_cannot_read_say_why() {
    let data = sf001_small_groups();
    let engine = engine(&data.path, &[("squall.catalog.allowed_roots", "*")]).await;
    let err = engine
        .sql("create external table e stored as parquet location 's3://bucket/t/'")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("cannot read s3://bucket/") && err.contains("--backend aws"),
        "{err}"
    );
    assert!(!err.contains("bug"), "{err}");
}
