//! Folders holding Delta Lake tables: read as their log says.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use crate::common::*;

/// A Delta table written by hand: Parquet files and a `_delta_log/`.
struct Delta<'a> {
    dir: &'a Path,
}

impl Delta<'_> {
    /// A Parquet file of (id, v) rows at `path`; its size.
    fn file(&self, path: &str, ids: &[i64]) -> u64 {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("V", DataType::Utf8, true),
        ]));
        let names: Vec<String> = ids.iter().map(|i| format!("v{i}")).collect();
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap();
        let path = self.dir.join(path);
        write_parquet(&path, batch);
        std::fs::metadata(path).unwrap().len()
    }

    /// Commit `version` of these actions, one per line.
    fn commit(&self, version: u64, actions: &[String]) {
        let log = self.dir.join("_delta_log");
        std::fs::create_dir_all(&log).unwrap();
        std::fs::write(log.join(format!("{version:020}.json")), actions.join("\n")).unwrap();
    }

    /// An `add` of a file (named in the log as `logged`, percent-encoded)
    /// of `ids` in partition `region`.
    fn add(&self, logged: &str, on_disk: &str, region: Option<&str>, ids: &[i64]) -> String {
        let size = self.file(on_disk, ids);
        let region = match region {
            Some(r) => format!("\"{r}\""),
            None => "null".into(),
        };
        format!(
            r#"{{"add":{{"path":"{logged}","partitionValues":{{"Region":{region}}},"size":{size},"modificationTime":1700000000000,"dataChange":true,"stats":"{{\"numRecords\":{}}}"}}}}"#,
            ids.len()
        )
    }
}

fn remove(path: &str) -> String {
    format!(
        r#"{{"remove":{{"path":"{path}","deletionTimestamp":1700000000001,"dataChange":true}}}}"#
    )
}

fn metadata(configuration: &str) -> String {
    let schema = r#"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"Region\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}},{\"name\":\"V\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}"#;
    format!(
        r#"{{"metaData":{{"id":"t","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{schema}","partitionColumns":["Region"],"configuration":{{{configuration}}},"createdTime":1700000000000}}}}"#
    )
}

const PROTOCOL: &str = r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#;

/// A checkpoint of `actions` (add, metaData, protocol: one per row), as
/// Parquet, at `version`.
fn checkpoint(dir: &Path, version: u64, actions: &[String]) {
    let map = |name: &str| {
        let entries = Field::new(
            "key_value",
            DataType::Struct(
                vec![
                    Field::new("key", DataType::Utf8, false),
                    Field::new("value", DataType::Utf8, true),
                ]
                .into(),
            ),
            false,
        );
        Field::new(name, DataType::Map(Arc::new(entries), false), true)
    };
    let add = DataType::Struct(
        vec![
            Field::new("path", DataType::Utf8, true),
            map("partitionValues"),
            Field::new("size", DataType::Int64, true),
            Field::new("modificationTime", DataType::Int64, true),
            Field::new("dataChange", DataType::Boolean, true),
            Field::new("stats", DataType::Utf8, true),
        ]
        .into(),
    );
    let meta = DataType::Struct(
        vec![
            Field::new("id", DataType::Utf8, true),
            Field::new(
                "format",
                DataType::Struct(vec![Field::new("provider", DataType::Utf8, true)].into()),
                true,
            ),
            Field::new("schemaString", DataType::Utf8, true),
            Field::new(
                "partitionColumns",
                DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))),
                true,
            ),
            map("configuration"),
        ]
        .into(),
    );
    let protocol = DataType::Struct(
        vec![
            Field::new("minReaderVersion", DataType::Int32, true),
            Field::new("minWriterVersion", DataType::Int32, true),
        ]
        .into(),
    );
    let schema = Arc::new(Schema::new(vec![
        Field::new("add", add, true),
        Field::new("metaData", meta, true),
        Field::new("protocol", protocol, true),
    ]));
    let text = actions.join("\n");
    let mut reader = arrow::json::ReaderBuilder::new(schema)
        .build(std::io::Cursor::new(text))
        .unwrap();
    let batch = reader.next().unwrap().unwrap();
    write_parquet(
        dir.join(format!("_delta_log/{version:020}.checkpoint.parquet")),
        batch,
    );
}

/// A Delta table's folder keeps the files its commits removed (until a
/// vacuum); squall reads the live ones only, as the log says: from its
/// latest checkpoint (the commits before it deleted, as log cleanup does)
/// and the commits after, with each file's partition values from the log
/// (percent-encoded paths, a NULL partition), its columns in its schema's
/// order, staged and with the engine's defaults; an engine built again
/// reads no log (the process's snapshot, brought up to date). A
/// commit landing after the table was first read is seen by the next
/// statement of the same engine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_tables_are_read_as_their_logs_say() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sales");
    let t = Delta { dir: &root };
    let a = t.add(
        "Region=eu/a.parquet",
        "Region=eu/a.parquet",
        Some("eu"),
        &[1, 2, 3],
    );
    let b = t.add(
        "Region=us%20east/b.parquet",
        "Region=us east/b.parquet",
        Some("us east"),
        &[4, 5],
    );
    t.commit(0, &[PROTOCOL.into(), metadata(""), a.clone(), b.clone()]);
    // An overwrite of eu: a.parquet stays on disk, removed from the table.
    let c = t.add(
        "Region=eu/c.parquet",
        "Region=eu/c.parquet",
        Some("eu"),
        &[10, 11],
    );
    t.commit(1, &[remove("Region=eu/a.parquet"), c.clone()]);
    checkpoint(&root, 1, &[PROTOCOL.into(), metadata(""), b, c]);
    std::fs::remove_file(root.join(format!("_delta_log/{:020}.json", 0))).unwrap();
    let d = t.add(
        "Region=__HIVE_DEFAULT_PARTITION__/d.parquet",
        "Region=__HIVE_DEFAULT_PARTITION__/d.parquet",
        None,
        &[20],
    );
    t.commit(2, &[d]);
    // A file no commit names.
    t.file("Region=eu/stray.parquet", &[99]);
    let staged = [
        ("squall.query.single_task_bytes", "0"),
        ("squall.scan.target_task_bytes", "16"),
    ];
    for pairs in [&staged[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select region, count(*) as n, sum(id) as s, min(v) as v from sales group by 1 order by 1",
                "region,n,s,v\neu,2,21,v10\nus east,2,9,v4\n,1,20,v20\n",
            ),
            (
                "select id from sales where region = 'us east' order by id",
                "id\n4\n5\n",
            ),
            (
                "select count(*) as n from sales where region is null",
                "n\n1\n",
            ),
            // The columns in the schema's order, the partition column's
            // too (DataFusion's scan puts partition columns last).
            (
                "select * from sales where id >= 10 order by id",
                "id,region,v\n10,eu,v10\n11,eu,v11\n20,,v20\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
        if !pairs.is_empty() {
            let r = engine
                .sql("select region, count(*) from sales group by 1")
                .await
                .unwrap();
            assert!(r.profile.is_some_and(|p| p.stages > 1), "runs staged");
        }
    }
    // An engine built again (the aws backend's per request) reads no log:
    // the process's snapshot of the table, brought up to date by one
    // listing (its checkpoint and commits were read by the first engine).
    let staged_engine = || async { engine(dir.path(), &staged).await.for_one_request() };
    let planning = |engine: squall_planner::Engine| async move {
        let sql = "select count(*), sum(id) from sales where v <> 'x'";
        let r = engine.sql(sql).await.unwrap();
        r.profile.expect("staged").requests.planning
    };
    let again = planning(staged_engine().await).await;
    assert_eq!(again.get, 0, "nothing read again: {again:?}");
    assert_eq!(again.list, 2, "the table's folder and its log: {again:?}");
    // `STORED AS DELTA`, and `STORED AS PARQUET` of the Delta folder, read
    // the log; `STORED AS PARQUET` of one file reads the file.
    let file = root.join("Region=eu/c.parquet");
    let external = engine(dir.path(), &[("squall.catalog.allowed_roots", "*")]).await;
    for (sql, want) in [
        (
            format!(
                "create external table d stored as delta location '{}/'",
                root.display()
            ),
            None,
        ),
        ("select count(*) as n from d".into(), Some("n\n5\n")),
        (
            format!(
                "create external table p stored as parquet location '{}/'",
                root.display()
            ),
            None,
        ),
        ("select count(*) as n from p".into(), Some("n\n5\n")),
        (
            format!(
                "create external table f stored as parquet location '{}'",
                file.display()
            ),
            None,
        ),
        ("select sum(id) as s from f".into(), Some("s\n21\n")),
    ] {
        let got = squall_csv(&external, &sql).await;
        if let Some(want) = want {
            assert_eq!(got, want, "{sql}");
        }
    }
    // A commit after the table was read: the same engine's next statement sees it.
    let engine = engine(dir.path(), &[]).await;
    let count = "select count(*) as n, sum(id) as s from sales";
    assert_eq!(squall_csv(&engine, count).await, "n,s\n5,50\n");
    let e = t.add(
        "Region=eu/e.parquet",
        "Region=eu/e.parquet",
        Some("eu"),
        &[30],
    );
    t.commit(3, &[remove("Region=us%20east/b.parquet"), e]);
    assert_eq!(squall_csv(&engine, count).await, "n,s\n4,71\n");
}

/// What squall does not read of a Delta table fails the queries naming it,
/// saying what and where, never read wrongly: a deletion vector whose file
/// is gone or kept at an absolute path, an unknown reader feature, a log whose first
/// commits are gone with no checkpoint; and Hudi tables, whose folders
/// hold deleted rows' files too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_tables_squall_cannot_read_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let table = |name: &str| Delta {
        dir: &*Box::leak(dir.path().join(name).into_boxed_path()),
    };
    let t = table("vectors");
    let a = t.add("a.parquet", "a.parquet", Some("eu"), &[1]).replace(
        r#""dataChange":true"#,
        r#""dataChange":true,"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2}"#,
    );
    let protocol3 = |features: &str| {
        format!(
            r#"{{"protocol":{{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":[{features}],"writerFeatures":[]}}}}"#
        )
    };
    t.commit(0, &[protocol3(r#""deletionVectors""#), metadata(""), a]);
    let t = table("absolute");
    let a = t.add("a.parquet", "a.parquet", Some("eu"), &[1]).replace(
        r#""dataChange":true"#,
        r#""dataChange":true,"deletionVector":{"storageType":"p","pathOrInlineDv":"s3://elsewhere/dv.bin","offset":1,"sizeInBytes":36,"cardinality":2}"#,
    );
    t.commit(0, &[protocol3(r#""deletionVectors""#), metadata(""), a]);
    let t = table("future");
    let a = t.add("a.parquet", "a.parquet", Some("eu"), &[1]);
    t.commit(0, &[protocol3(r#""someFeature""#), metadata(""), a]);
    let t = table("cleaned");
    let a = t.add("a.parquet", "a.parquet", Some("eu"), &[1]);
    t.commit(5, &[a]);
    // Hudi's folders: its metadata says which files hold the table.
    table("hudi").file("p/a.parquet", &[1]);
    std::fs::create_dir_all(dir.path().join("hudi/.hoodie")).unwrap();
    std::fs::write(dir.path().join("hudi/.hoodie/hoodie.properties"), "").unwrap();
    let engine = engine(dir.path(), &[]).await;
    for (table, says) in [
        ("hudi", "a Hudi table"),
        ("vectors", "cannot read the deletion vector in "),
        (
            "absolute",
            "deletion vector is kept at an absolute path (s3://",
        ),
        ("future", "reader feature someFeature"),
        ("cleaned", "lacks commits before version 5"),
    ] {
        let err = engine
            .sql(&format!("select count(*) from {table}"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains(table) && err.contains(says), "{table}: {err}");
    }
}

/// The log's statistics of each file (`minValues`, `maxValues`,
/// `nullCount`) skip files before planning reads their footers, only where
/// the bounds hold: a file without statistics is read; a timestamp's
/// bounds, written to the millisecond, keep a file whose rows lie within
/// the millisecond past its written maximum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_statistics_skip_files_only_where_their_bounds_hold() {
    use arrow::array::TimestampMicrosecondArray;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("events");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new(
            "ts",
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
    ]));
    // 2024-01-01 12:00:00 UTC, in microseconds.
    let noon: i64 = 1_704_110_400_000_000;
    let add = |name: &str, ids: &[i64], micros: i64, stats: Option<&str>| {
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from(ids.to_vec())),
                Arc::new(
                    TimestampMicrosecondArray::from(vec![noon + micros; ids.len()])
                        .with_timezone("UTC"),
                ),
            ],
        )
        .unwrap();
        let path = root.join(name);
        write_parquet(&path, batch);
        let size = std::fs::metadata(path).unwrap().len();
        let stats = match stats {
            Some(s) => format!(r#","stats":"{}""#, s.replace('"', "\\\"")),
            None => String::new(),
        };
        format!(
            r#"{{"add":{{"path":"{name}","partitionValues":{{}},"size":{size},"modificationTime":1700000000000,"dataChange":true{stats}}}}}"#
        )
    };
    let bounds = |lo: i64, hi: i64, ts: &str| {
        format!(
            r#"{{"numRecords":3,"minValues":{{"id":{lo},"ts":"{ts}"}},"maxValues":{{"id":{hi},"ts":"{ts}"}},"nullCount":{{"id":0,"ts":0}}}}"#
        )
    };
    let a = add(
        "a.parquet",
        &[1, 2, 3],
        0,
        Some(&bounds(1, 3, "2024-01-01T12:00:00.000Z")),
    );
    let b = add(
        "b.parquet",
        &[10, 11, 12],
        0,
        Some(&bounds(10, 12, "2024-01-01T12:00:00.000Z")),
    );
    let c = add("c.parquet", &[20, 21], 0, None);
    // Its rows half a millisecond past noon; the log writes noon.
    let d = add(
        "d.parquet",
        &[30],
        500,
        Some(&bounds(30, 30, "2024-01-01T12:00:00.000Z")),
    );
    let delta_schema = r#"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"ts\",\"type\":\"timestamp\",\"nullable\":true,\"metadata\":{}}]}"#;
    let meta = format!(
        r#"{{"metaData":{{"id":"e","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{delta_schema}","partitionColumns":[],"configuration":{{}},"createdTime":1700000000000}}}}"#
    );
    Delta { dir: &root }.commit(0, &[PROTOCOL.into(), meta, a, b, c, d]);
    let engine = engine(dir.path(), &[]).await;
    let sql = "select count(*) as n, sum(id) as s from events where id >= 10 and id < 25";
    assert_eq!(squall_csv(&engine, sql).await, "n,s\n5,74\n");
    let plan = squall_csv(&engine, &format!("explain {sql}")).await;
    let planned = |f: &str| plan.contains(&format!("events/{f}"));
    assert!(
        planned("b.parquet")
            && planned("c.parquet")
            && !planned("a.parquet")
            && !planned("d.parquet"),
        "{plan}"
    );
    for (sql, want) in [
        (
            "select id from events where ts > timestamp '2024-01-01 12:00:00.000100'",
            "id\n30\n",
        ),
        ("select count(*) as n from events where id > 100", "n\n0\n"),
        (
            "select count(*) as n from events where id is null",
            "n\n0\n",
        ),
    ] {
        assert_eq!(squall_csv(&engine, sql).await, want, "{sql}");
    }
}

/// Time travel by time over a table writing in-commit timestamps (as
/// Databricks does by default): each commit's `inCommitTimestamp`, not its
/// file's modification time (all alike here, as in a copied table),
/// decides which version was current; the commits before they were
/// enabled go by their files' times. The time may be any expression of
/// constants, a zone given by its name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_time_travel_follows_in_commit_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ict");
    let t = Delta { dir: &root };
    let info =
        |ms: i64| format!(r#"{{"commitInfo":{{"inCommitTimestamp":{ms},"operation":"WRITE"}}}}"#);
    // Version 0 without one (before enablement), then 1,000,000 ms apart.
    t.commit(
        0,
        &[
            PROTOCOL.into(),
            metadata(""),
            t.add("a.parquet", "a.parquet", Some("eu"), &[1]),
        ],
    );
    for (version, ms) in [(1u64, 1_000_000i64), (2, 2_000_000), (3, 3_000_000)] {
        let file = format!("{version}.parquet");
        let add = t.add(&file, &file, Some("eu"), &[version as i64 + 1]);
        t.commit(version, &[info(ms), add]);
    }
    let engine = engine(dir.path(), &[]).await;
    for (at, want) in [
        ("timestamp '1970-01-01 00:25:00 UTC'", "n\n2\n"),
        ("timestamp '1970-01-01 00:33:20 UTC'", "n\n3\n"),
        ("timestamp '1970-01-01 00:50:00 UTC'", "n\n4\n"),
        // A zone by its name (Berlin was an hour ahead of UTC in 1970).
        ("timestamp '1970-01-01 01:33:20 Europe/Berlin'", "n\n3\n"),
        // Expressions of constants, evaluated as the query is read.
        (
            "timestamp '1970-01-01 00:00:00' + interval '25' minute",
            "n\n2\n",
        ),
        (
            "date_add('second', 2000, timestamp '1970-01-01 00:00:00')",
            "n\n3\n",
        ),
        ("current_timestamp - interval '1' day", "n\n4\n"),
    ] {
        let sql = format!("select count(*) as n from ict for timestamp as of {at} where true");
        assert_eq!(squall_csv(&engine, &sql).await, want, "{sql}");
    }
    let sql = "select count(*) from ict for timestamp as of n";
    let err = engine.sql(sql).await.unwrap_err().to_string();
    assert!(err.contains("not a time of constants"), "{err}");
}
