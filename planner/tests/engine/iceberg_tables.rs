//! Folders holding Iceberg tables: read as their metadata says. The tables
//! are pyiceberg's (`planner/tests/data/iceberg/make.py`), their metadata
//! naming absolute paths of the folder they were written in; the tests
//! read them from another, as a table moved with its folder.

use std::path::Path;

use crate::common::*;

/// The metadata files of a table's `metadata` folder, oldest first.
fn metadata_files(metadata: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(metadata)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".metadata.json"))
        .collect();
    files.sort();
    files
}

/// The tables written by pyiceberg, in a fresh catalog folder.
fn catalog() -> tempfile::TempDir {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/iceberg");
    let dir = tempfile::tempdir().unwrap();
    for table in ["sales", "renamed", "merged"] {
        copy_dir(&fixture.join(table), &dir.path().join(table));
    }
    dir
}

/// An Iceberg table's folder keeps the files its DELETE and overwrite
/// replaced (10 data files for 7 live rows); squall reads the live ones,
/// from its latest metadata's snapshot, its manifest list and manifests
/// (Avro, deflate), staged and with the engine's defaults, skipping files
/// by the manifests' column bounds; a newer
/// metadata file landing after the table was read is seen by the same
/// engine's next statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_are_read_as_their_metadata_says() {
    let dir = catalog();
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select id, region, amount, ts from sales order by id",
                "id,region,amount,ts\n20,us east,2.05,2024-01-03T00:00:00Z\n\
                 22,us east,2.25,2024-01-03T02:00:00Z\n24,us east,2.45,2024-01-03T04:00:00Z\n\
                 30,us east,3.05,2024-01-04T00:00:00Z\n32,us east,3.25,2024-01-04T02:00:00Z\n\
                 34,us east,3.45,2024-01-04T04:00:00Z\n1000,eu,1.00,2025-01-01T00:00:00Z\n",
            ),
            (
                "select region, count(*) as n, sum(amount) as s from sales group by 1 order by 1",
                "region,n,s\neu,1,1.00\nus east,6,16.50\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
    // The manifests' column bounds skip files before planning reads them:
    // of the 3 live files, one holds ids of 1000 and more.
    let bounded = engine(dir.path(), &[]).await;
    let sql = "select count(*) as n, sum(id) as s from sales where id >= 1000";
    assert_eq!(squall_csv(&bounded, sql).await, "n,s\n1,1000\n");
    let plan = squall_csv(&bounded, &format!("explain {sql}")).await;
    let files: std::collections::HashSet<&str> = plan
        .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | ',' | '"'))
        .filter(|w| w.contains(".parquet"))
        .map(|w| w.split(':').next().unwrap_or(w))
        .collect();
    assert_eq!(files.len(), 1, "{plan}");
    let sql = "select count(*) as n from sales where ts < timestamp '2024-01-03 00:00:00+00:00'";
    assert_eq!(squall_csv(&bounded, sql).await, "n\n0\n");
    // The table before its last commit (the overwrite), then after (a
    // copy of its own: this process remembers the tables it has read).
    let dir = catalog();
    let metadata = dir.path().join("sales/metadata");
    let last = metadata_files(&metadata).pop().unwrap();
    let aside = dir.path().join("last.metadata.json");
    std::fs::rename(&last, &aside).unwrap();
    let engine = engine(dir.path(), &[]).await;
    let count = "select count(*) as n, sum(id) as s from sales";
    assert_eq!(squall_csv(&engine, count).await, "n,s\n13,345\n");
    std::fs::rename(&aside, &last).unwrap();
    assert_eq!(squall_csv(&engine, count).await, "n,s\n7,1162\n");
}

/// Merge-on-read deletes (position delete files, as Athena's, Trino's and
/// Spark's DELETE write them): the deleted rows are not read, staged and
/// as one task; each delete file deletes from the files no newer than
/// itself; the table as of its first delete commit, then its latest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_position_deletes_are_applied() {
    let dir = catalog();
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select region, count(*) as n, sum(id) as s, min(id) as lo, max(id) as hi \
                 from merged group by 1 order by 1",
                "region,n,s,lo,hi\neu,12,1224,0,204\nus,13,1391,5,209\n",
            ),
            ("select count(*) as n from merged", "n\n25\n"),
            (
                "select id from merged where id between 100 and 199 order by id",
                "id\n100\n104\n106\n107\n108\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
    // Its metadata as of the first delete commit (101, 103, 105 and 109
    // deleted; 102 deleted by the next; ids 200 to 209 appended last).
    let dir = catalog();
    let metadata = dir.path().join("merged/metadata");
    let files = metadata_files(&metadata);
    for later in &files[4..] {
        std::fs::rename(later, later.with_extension("aside")).unwrap();
    }
    let engine = engine(dir.path(), &[]).await;
    let sql = "select count(*) as n, sum(id) as s from merged where id >= 100";
    assert_eq!(squall_csv(&engine, sql).await, "n,s\n6,627\n");
}

/// Time travel: the table with merge-on-read deletes as of each of its
/// snapshots (by id, from its snapshot log: 10 rows, 20, 16 after four
/// deletes, 15 after one more, 25), and as of the time of its third; a
/// time before its first snapshot is refused saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_read_as_of_a_snapshot() {
    let dir = catalog();
    let metadata = dir.path().join("merged/metadata");
    let last = metadata_files(&metadata).pop().unwrap();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(last).unwrap()).unwrap();
    let log: Vec<(i64, i64)> = doc["snapshot-log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["snapshot-id"].as_i64().unwrap(),
                e["timestamp-ms"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(log.len(), 5);
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for ((id, _), rows) in log.iter().zip([10, 20, 16, 15, 25]) {
            let sql = format!("select count(*) as n from merged for version as of {id}");
            assert_eq!(
                squall_csv(&engine, &sql).await,
                format!("n\n{rows}\n"),
                "{sql}"
            );
        }
    }
    let engine = engine(dir.path(), &[]).await;
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S%.3f")
            .to_string()
    };
    let sql = format!(
        "select count(*) as n from merged for timestamp as of timestamp '{} UTC'",
        at(log[2].1)
    );
    assert_eq!(squall_csv(&engine, &sql).await, "n\n16\n", "{sql}");
    let sql = format!(
        "select count(*) from merged for timestamp as of timestamp '{} UTC'",
        at(log[0].1 - 1)
    );
    let err = engine.sql(&sql).await.unwrap_err().to_string();
    assert!(
        err.contains("merged") && err.contains("no snapshot at or before"),
        "{err}"
    );
}

/// A table whose history renamed a column and gave its old name to a new
/// one, and renamed a struct's field, reads each column and field by its
/// field id, as Iceberg does (the first file's `v` is the column now named
/// `w`; the third's `s.x` is `s.z`), staged and one task, its
/// filters and statistics too; an INSERT into one says squall does not
/// write Iceberg tables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_columns_are_read_by_field_id() {
    let dir = catalog();
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select k, w, v from renamed order by k",
                "k,w,v\n1,a,\n2,b,x\n3,c,y\n4,d,w\n",
            ),
            // A struct's field renamed (s.x to s.z) between two appends.
            (
                "select k, s.z as z from renamed order by k",
                "k,z\n1,\n2,\n3,5\n4,6\n",
            ),
            ("select k from renamed where s.z = 5", "k\n3\n"),
            ("select k from renamed where w = 'a'", "k\n1\n"),
            ("select k from renamed where v = 'x'", "k\n2\n"),
            ("select k from renamed where v is null", "k\n1\n"),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
    let engine = engine(dir.path(), &[]).await;
    // Written by its own writers, not by squall.
    let err = engine
        .sql("insert into sales select * from sales")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table sales")
            && err.contains("an Iceberg table, which squall reads but does not write"),
        "{err}"
    );
}
