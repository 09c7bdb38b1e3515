//! Delta tables whose rows were deleted in place (deletion vectors, what
//! Databricks writes on DELETE, UPDATE and MERGE): the deleted rows are
//! not read, staged over many tasks and as one task.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use roaring::RoaringTreemap;

use crate::common::*;

/// Spark's and Databricks' tables (`planner/tests/data/delta/README.md`):
/// vectors in files shared by several data files, before and after a
/// checkpoint, in a partitioned table, with and without column mapping;
/// the live rows as Spark reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spark_deletion_vectors_are_applied() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/delta");
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [
        ("table-with-dv-small", "small"),
        ("with-short-dv", "short"),
        ("dv-partitioned-with-checkpoint", "parted"),
        ("dv-partitioned-with-checkpoint-expected", "parted_expected"),
        ("dv-with-columnmapping", "mapped"),
        ("dv-with-columnmapping-expected", "mapped_expected"),
        ("table-with-columnmapping-mode-name", "by_name"),
        (
            "table-with-columnmapping-mode-name-expected",
            "by_name_expected",
        ),
        ("table-with-columnmapping-mode-id", "by_id"),
        (
            "table-with-columnmapping-mode-id-expected",
            "by_id_expected",
        ),
    ] {
        copy_dir(&fixture.join(from), &dir.path().join(to));
    }
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select * from small order by 1",
                "value\n1\n2\n3\n4\n5\n6\n7\n8\n",
            ),
            ("select count(*) as n from small", "n\n8\n"),
            (
                "select id, value from short order by id",
                "id,value\n3,3\n4,4\n5,5\n6,6\n7,7\n8,8\n9,9\n",
            ),
            (
                "select count(*) as n, sum(id) as s from short where id < 5",
                "n,s\n2,7\n",
            ),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
        // SHOW STATS counts the table's rows without the deleted.
        let stats = squall_csv(&engine, "show stats for small").await;
        assert_eq!(stats.lines().last(), Some(",,,,8.0,,"), "{stats}");
        // `mapped`'s files name its columns by physical names (column
        // mapping): read by them, its partition values and statistics too.
        // Nested fields (structs in structs, arrays and maps of structs)
        // the files name by physical name or field id.
        for table in ["by_name", "by_id"] {
            for sql in [
                "select * from {} order by bytetype",
                "select bytetype, nested_struct.ac.aca as aca, array_of_structs[1].ab as ab \
                 from {} where nested_struct.aa >= 2 order by 1",
            ] {
                let got = squall_csv(&engine, &sql.replace("{}", table)).await;
                let want =
                    squall_csv(&engine, &sql.replace("{}", &format!("{table}_expected"))).await;
                assert_eq!(got, want, "{sql} {table} {pairs:?}");
                assert!(got.lines().count() > 3, "{got}");
            }
        }
        for sql in [
            "select part, col1, col2 from {} order by col1",
            "select count(*) as n, sum(col1) as s from {} where col1 >= 45",
            "select count(*) as n from {} where part = 3 and col2 = 'foo3'",
        ] {
            assert_eq!(
                squall_csv(&engine, &sql.replace("{}", "mapped")).await,
                squall_csv(&engine, &sql.replace("{}", "mapped_expected")).await,
                "{sql} {pairs:?}"
            );
        }
        for sql in [
            "select part, col1, col2 from {} order by col1",
            "select part, count(*) as n, sum(col1) as s from {} group by part order by part",
            "select count(*) as n from {}",
        ] {
            assert_eq!(
                squall_csv(&engine, &sql.replace("{}", "parted")).await,
                squall_csv(&engine, &sql.replace("{}", "parted_expected")).await,
                "{sql} {pairs:?}"
            );
        }
    }
}

/// A table whose checkpoints are V2 checkpoints (a JSON manifest naming
/// sidecar Parquet files), its commits before the last checkpoint gone as
/// a log cleanup leaves them: read from the checkpoint and its sidecars.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_checkpoints_and_their_sidecars_are_read() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/delta/v2-checkpoints-json-with-sidecars");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("v2");
    copy_dir(&fixture, &root);
    for version in 0..6 {
        std::fs::remove_file(root.join(format!("_delta_log/{version:020}.json"))).unwrap();
    }
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for (sql, want) in [
            (
                "select count(*) as n, sum(id) as s from v2",
                "n,s\n1233,509835\n",
            ),
            ("select count(*) as n from v2 where id >= 100", "n\n900\n"),
        ] {
            assert_eq!(squall_csv(&engine, sql).await, want, "{sql} {pairs:?}");
        }
    }
}

/// Time travel: Spark's partitioned table (50 rows written, then one
/// row deleted per commit as a deletion vector, a checkpoint at 10) as of
/// each version reads the rows its log says (50 less one per DELETE),
/// before, at and after its checkpoint, staged and as one task; as of a
/// time after its last commit, the latest; a version past the latest, or a
/// table that is no Delta or Iceberg table, is refused naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_tables_read_as_of_a_version() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/delta");
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &fixture.join("dv-partitioned-with-checkpoint"),
        &dir.path().join("parted"),
    );
    copy_dir(
        &fixture.join("dv-partitioned-with-checkpoint-expected"),
        &dir.path().join("plain"),
    );
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        for version in [0, 5, 10, 11, 15] {
            let sql = format!("select count(*) as n from parted for version as of {version}");
            assert_eq!(
                squall_csv(&engine, &sql).await,
                format!("n\n{}\n", 50 - version),
                "{sql} {pairs:?}"
            );
        }
        // Two versions of one table in one query.
        let sql = "select (select count(*) from parted for version as of 2) - count(*) as gone \
                   from Parted FOR VERSION AS OF 12";
        assert_eq!(squall_csv(&engine, sql).await, "gone\n10\n", "{pairs:?}");
    }
    let engine = engine(dir.path(), &[]).await;
    let sql =
        "select count(*) as n from parted for timestamp as of timestamp '2999-01-01 00:00:00 UTC'";
    assert_eq!(squall_csv(&engine, sql).await, "n\n35\n");
    for (sql, says) in [
        (
            "select count(*) from parted for version as of 16",
            "it has no version 16 (its latest is 15)",
        ),
        (
            "select count(*) from plain for version as of 1",
            "table plain has no history to read",
        ),
    ] {
        let err = engine.sql(sql).await.unwrap_err().to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
}

/// A deletion vector as Delta frames it in its file: size, magic, bitmap,
/// CRC-32.
fn framed(positions: &RoaringTreemap) -> Vec<u8> {
    let mut body = 1_681_511_377u32.to_le_bytes().to_vec();
    positions.serialize_into(&mut body).unwrap();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    out
}

fn descriptor(storage: &str, path: &str, offset: Option<usize>, size: usize, n: u64) -> String {
    let offset = offset
        .map(|o| format!(r#","offset":{o}"#))
        .unwrap_or_default();
    format!(
        r#""deletionVector":{{"storageType":"{storage}","pathOrInlineDv":"{path}"{offset},"sizeInBytes":{size},"cardinality":{n}}}"#
    )
}

/// `ids` as a Parquet file of 100-row row groups at `path`; its size.
fn ids_file(path: &Path, ids: std::ops::Range<i64>) -> u64 {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(Int64Array::from_iter_values(ids))],
    )
    .unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(100))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// A file of ten row groups whose deletion vector deletes scattered rows of
/// one, all of another, a run across two and the file's last row; the
/// vector kept in a file (below a prefix folder, after another vector)
/// and replaced by a later commit whose `add` comes before its `remove`;
/// a second file's vector kept in the log. Staged (a task a row group)
/// and as one task, as counted, summed and filtered; a vector whose bytes
/// do not match its checksum fails the query naming its file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_rows_are_skipped_across_row_groups_and_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("events");
    let size_a = ids_file(&root.join("a.parquet"), 0..1000);
    let size_b = ids_file(&root.join("b.parquet"), 1000..1050);

    let old: RoaringTreemap = [5u64].into_iter().collect();
    let mut deleted = RoaringTreemap::new();
    deleted.extend((0..100).step_by(3));
    deleted.insert_range(200..300);
    deleted.insert_range(450..550);
    deleted.insert(999);
    let (old_bytes, new_bytes) = (framed(&old), framed(&deleted));
    let mut file = vec![1u8];
    file.extend_from_slice(&old_bytes);
    let new_offset = file.len();
    file.extend_from_slice(&new_bytes);
    let uuid = uuid::Uuid::from_u128(0x61d1_6c75_6994_46b7_a15b_8b53_8852_e50e);
    let dv_path = root.join(format!("q7/deletion_vector_{uuid}.bin"));
    std::fs::create_dir_all(dv_path.parent().unwrap()).unwrap();
    std::fs::write(&dv_path, &file).unwrap();
    let stored = format!("q7{}", z85::encode(uuid.as_bytes()));
    let old_dv = descriptor("u", &stored, Some(1), old_bytes.len() - 8, 1);
    let new_dv = descriptor(
        "u",
        &stored,
        Some(new_offset),
        new_bytes.len() - 8,
        deleted.len(),
    );
    let inline: RoaringTreemap = [0u64, 49].into_iter().collect();
    let mut inline_body = 1_681_511_377u32.to_le_bytes().to_vec();
    inline.serialize_into(&mut inline_body).unwrap();
    while !inline_body.len().is_multiple_of(4) {
        inline_body.push(0);
    }
    let inline_dv = descriptor("i", &z85::encode(&inline_body), None, inline_body.len(), 2);

    let add = |name: &str, size: u64, rows: u64, dv: &str| {
        format!(
            r#"{{"add":{{"path":"{name}","partitionValues":{{}},"size":{size},"modificationTime":1700000000000,"dataChange":true,"stats":"{{\"numRecords\":{rows}}}",{dv}}}}}"#
        )
    };
    let schema = r#"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}"#;
    let protocol = r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}"#;
    let meta = format!(
        r#"{{"metaData":{{"id":"e","format":{{"provider":"parquet","options":{{}}}},"schemaString":"{schema}","partitionColumns":[],"configuration":{{}},"createdTime":1700000000000}}}}"#
    );
    let log = root.join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    let commit = |version: u64, actions: &[String]| {
        std::fs::write(log.join(format!("{version:020}.json")), actions.join("\n")).unwrap();
    };
    commit(
        0,
        &[
            protocol.to_string(),
            meta,
            add("a.parquet", size_a, 1000, &old_dv),
        ],
    );
    // The vector replaced: the file's new add, then the remove of it with
    // its old vector (a commit's actions are a set).
    let remove_old = format!(
        r#"{{"remove":{{"path":"a.parquet","deletionTimestamp":1700000000001,"dataChange":true,{old_dv}}}}}"#
    );
    commit(
        1,
        &[
            add("a.parquet", size_a, 1000, &new_dv),
            remove_old,
            add("b.parquet", size_b, 50, &inline_dv),
        ],
    );

    let live: Vec<i64> = (0..1000i64)
        .filter(|&i| !deleted.contains(i as u64))
        .chain(1001..1049)
        .collect();
    let count_sum = |ids: &[i64]| format!("n,s\n{},{}\n", ids.len(), ids.iter().sum::<i64>());
    let between: Vec<i64> = live
        .iter()
        .copied()
        .filter(|&i| (250..=460).contains(&i))
        .collect();
    for pairs in [&STAGED[..], &[]] {
        let engine = engine(dir.path(), pairs).await;
        let sql = "select count(*) as n, sum(id) as s from events";
        assert_eq!(
            squall_csv(&engine, sql).await,
            count_sum(&live),
            "{pairs:?}"
        );
        let sql = "select count(*) as n, sum(id) as s from events where id between 250 and 460";
        assert_eq!(
            squall_csv(&engine, sql).await,
            count_sum(&between),
            "{pairs:?}"
        );
        let sql = "select id from events where id in (5, 6, 99, 250, 449, 450, 549, 550, 998, 999, 1000, 1001) order by id";
        assert_eq!(
            squall_csv(&engine, sql).await,
            "id\n5\n449\n550\n998\n1001\n",
            "{pairs:?}"
        );
        // The table's row count, from the log less the vectors' rows.
        assert_eq!(
            squall_csv(&engine, "select count(*) as n from events").await,
            format!("n\n{}\n", live.len())
        );
        if !pairs.is_empty() {
            // A task a row group: 9 of a.parquet's 10 (one wholly deleted)
            // and b.parquet's one.
            let r = engine.sql("select max(id) from events").await.unwrap();
            let p = r.profile.expect("staged");
            assert_eq!(p.row_groups_scanned, 10, "{p:?}");
            assert!(p.tasks > 10, "{p:?}");
        }
    }

    // A vector's bytes damaged in its file (a copy of the table, whose
    // vectors the process has not read): the query names the file.
    let copy = dir.path().join("damaged");
    copy_dir(&root, &copy);
    let mut damaged = file.clone();
    damaged[new_offset + 12] ^= 0x55;
    std::fs::write(
        copy.join(format!("q7/deletion_vector_{uuid}.bin")),
        &damaged,
    )
    .unwrap();
    let engine = engine(dir.path(), &[]).await;
    let err = engine
        .sql("select count(*) from damaged where id >= 0")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("damaged")
            && err.contains(&format!("deletion_vector_{uuid}.bin"))
            && err.contains("checksum"),
        "{err}"
    );
}
